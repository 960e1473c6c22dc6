// RUN: fa-opt %s -fa-fuse="chip=sm_90a warp-specialize=1" -fa-tile -fa-online-softmax -fa-bias-tiles -fa-warp-specialize="overlap=0 pingpong=0" | FileCheck %s
// RUN: not fa-opt %s -fa-fuse="chip=sm_90a warp-specialize=1" -fa-tile -fa-online-softmax -fa-bias-tiles -fa-warp-specialize="tma=0" 2>&1 | FileCheck %s --check-prefix=CP

// fa-warp-specialize with fa-bias-tiles' block copy (bf16 bias, D = 64,
// 128 x 64 tiles, two stages): a ring of bias blocks after V's, filled into
// K's stage and signalling K's full barrier (two arrivals: K's copy and the
// block's); the consumers read the block of K's stage and release the stage
// after both S and the read, each warp once its lanes are past their reads
// (per_warp: 8 arrivals, where S alone is released once per warpgroup). A bias kernel keeps a CTA an item (no qEmpty
// barrier, no work loop).
// CHECK-LABEL: gpu.func @fa_forward_0
// CHECK: %[[K:.*]] = fagpu.alloc_shared {offset = 16384 : i64} : !fagpu.shared<2x64x64xbf16, wgmma>
// CHECK-NEXT: %[[V:.*]] = fagpu.alloc_shared {offset = 32768 : i64} : !fagpu.shared<2x64x64xbf16, wgmma>
// CHECK-NEXT: %[[BT:.*]] = fagpu.alloc_shared {offset = 49152 : i64} : !fagpu.shared<2x128x64xbf16, wgmma>
// CHECK-NEXT: %[[QFULL:.*]] = fagpu.alloc_barriers {arrivals = 1 : i64, offset = 81920 : i64} : !fagpu.barriers<1>
// CHECK-NEXT: %[[KFULL:.*]] = fagpu.alloc_barriers {arrivals = 2 : i64, offset = 81928 : i64} : !fagpu.barriers<2>
// CHECK-NEXT: %[[VFULL:.*]] = fagpu.alloc_barriers {arrivals = 1 : i64, offset = 81944 : i64} : !fagpu.barriers<2>
// CHECK-NEXT: %[[KEMPTY:.*]] = fagpu.alloc_barriers {arrivals = 8 : i64, offset = 81960 : i64} : !fagpu.barriers<2>
// CHECK-NEXT: %[[VEMPTY:.*]] = fagpu.alloc_barriers {arrivals = 2 : i64, offset = 81976 : i64} : !fagpu.barriers<2>
// CHECK-NEXT: gpu.barrier
// CHECK-NOT: fagpu.work_slot
// CHECK: fagpu.warp_specialize
// CHECK-SAME: producer_registers = 24
// CHECK: scf.for %[[KEY:.*]] = %begin to %end step %c64 iter_args(%[[STAGE:.*]] = %{{.*}}, %{{.*}} = %{{.*}})
// CHECK-NEXT: arith.constant 1
// CHECK-NEXT: arith.xori
// CHECK-NEXT: fagpu.barrier_wait %[[KEMPTY]][%[[STAGE]]]
// CHECK-NEXT: fagpu.async_copy %arg1[{{.*}}, %[[KEY]]] bound {{.*}} to %[[K]][%[[STAGE]]] signal %[[KFULL]][%[[STAGE]]] {bulk}
// CHECK-NEXT: fagpu.async_copy %arg4[%c0, %{{.*}}, %{{.*}}, %[[KEY]]] bound {{.*}} to %[[BT]][%[[STAGE]]] signal %[[KFULL]][%[[STAGE]]] {bulk} : memref<1x4x?x?xbf16, strided<[?, ?, ?, ?], offset: ?>> to !fagpu.shared<2x128x64xbf16, wgmma>, !fagpu.barriers<2>
// CHECK-NEXT: fagpu.barrier_wait %[[VEMPTY]][%[[STAGE]]]
// CHECK-NEXT: fagpu.async_copy %arg2
// CHECK: } consumers {
// CHECK: scf.for %{{.*}} = %begin to %end step %c64 iter_args({{.*}}, %[[CSTAGE:.*]] = %{{.*}}, %[[CPARITY:.*]] = %{{.*}})
// CHECK-NEXT: fagpu.barrier_wait %[[KFULL]][%[[CSTAGE]]] parity %[[CPARITY]]
// CHECK-NEXT: %[[S:.*]] = fagpu.mma %{{.*}}, %[[K]][%[[CSTAGE]]]
// CHECK-NEXT: %[[B:.*]] = fagpu.load_tile %[[BT]][%[[CSTAGE]]] : !fagpu.shared<2x128x64xbf16, wgmma> -> tensor<128x64xbf16, #fagpu.acc<warps = 8>>
// CHECK-NEXT: fagpu.barrier_arrive %[[KEMPTY]][%[[CSTAGE]]] {per_warp}
// CHECK-NEXT: fagpu.map %[[S]], %[[B]]
// CHECK-NOT: fagpu.work_slot

// Without TMA the block cannot be copied: an error names the option.
// CP: error: 'gpu.func' op fa-warp-specialize: a bias block's copy (fa-bias-tiles) needs TMA: tma=1 and Q, K and V tiles in wgmma's layout
func.func @bf16(%q: tensor<2x4x?x64xbf16>, %b: tensor<1x4x?x?xbf16>) -> tensor<2x4x?x64xbf16> {
  %o = fa.attention %q, %q, %q bias(%b : tensor<1x4x?x?xbf16>) : tensor<2x4x?x64xbf16>, tensor<2x4x?x64xbf16>, tensor<2x4x?x64xbf16> -> tensor<2x4x?x64xbf16>
  return %o : tensor<2x4x?x64xbf16>
}
