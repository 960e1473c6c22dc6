// RUN: fa-opt %s -fa-fuse="chip=sm_90a warp-specialize=1" -fa-tile -fa-online-softmax -fa-bias-tiles -fa-warp-specialize -fa-async-copy -convert-fa-to-nvvm | FileCheck %s

// fa-bias-tiles' block copy and read lowered (bf16 bias, D = 64, 128 x 64
// tiles): the ABI gains the bias's tensor map (boxes of one 128-byte panel,
// 64 bf16 keys, of 128 rows); the producer's thread expects the block's
// 16384 bytes on K's full barrier (after K's 8192) and copies it at (key, row, head, batch,
// 0), a dim the bias broadcasts (its stride 0) at 0; each consumer thread
// loads pairs of adjacent keys from the swizzled panel: the chunk XOR-ed
// with its row's (r0 & 7), 8 rows (1024 bytes) apart; each warp releases K's stage.
// CHECK: llvm.func @fa_forward_0({{.*}}%[[BS0:arg25]]: i64, %[[BS1:arg26]]: i64, %{{.*}}: i64, %{{.*}}: i64, {{.*}}%[[BMAP:arg31]]: !llvm.ptr {llvm.align = 64 : i64, llvm.byval
// CHECK-SAME: tensor_map(q, 64, 128) : tmap, tensor_map(k, 64, 64) : tmap, tensor_map(bias, 64, 128) : tmap, tensor_map(v, 64, 64) : tmap
// The consumers' reads (their branch comes first).
// CHECK: %[[R7:.*]] = arith.andi %[[R0:.*]], %c7_i32
// CHECK: %[[U:.*]] = arith.xori %{{.*}}, %[[R7]] : i32
// CHECK: %[[U16:.*]] = arith.shli %[[U]], %c4_i32
// CHECK: %[[X0:.*]] = arith.xori %[[U16]], %c0_i32
// CHECK: %[[P0:.*]] = llvm.getelementptr %[[ROWBASE:.*]][%[[X0]]] : (!llvm.ptr<3>, i32) -> !llvm.ptr<3>, i8
// CHECK: llvm.load %{{.*}} {alignment = 4 : i64} : !llvm.ptr<3> -> vector<2xbf16>
// CHECK: %[[P8:.*]] = llvm.getelementptr %[[P0]][%c1024_i32] : (!llvm.ptr<3>, i32) -> !llvm.ptr<3>, i8
// CHECK-NEXT: llvm.load %[[P8]] {alignment = 4 : i64} : !llvm.ptr<3> -> vector<2xbf16>
// CHECK: %[[X1:.*]] = arith.xori %[[U16]], %c16_i32
// CHECK-NEXT: llvm.getelementptr %[[ROWBASE]][%[[X1]]] : (!llvm.ptr<3>, i32) -> !llvm.ptr<3>, i8
// K's stage released per warp once its lanes are past their reads.
// CHECK: nvvm.bar.warp.sync %c-1_i32
// CHECK-NEXT: %[[TID:.*]] = nvvm.read.ptx.sreg.tid.x : i32
// CHECK-NEXT: %{{.*}} = arith.constant 31 : i32
// CHECK-NEXT: %[[LANE:.*]] = arith.andi %[[TID]], %{{.*}} : i32
// CHECK: @p mbarrier.arrive.shared.b64 _, [$1];
// The producer's copies.
// CHECK: nvvm.mbarrier.arrive.expect_tx %[[KFULL:.*]], %c8192_i32{{.*}}
// CHECK: nvvm.cp.async.bulk.tensor.shared.cluster.global %{{.*}}, %arg30, %[[KFULL]], box
// CHECK: nvvm.mbarrier.arrive.expect_tx %[[BFULL:.*]], %c16384_i32{{.*}}
// CHECK: %[[BROW:.*]] = arith.index_cast %{{.*}} : index to i32
// CHECK-NEXT: %[[BHEAD:.*]] = arith.index_cast %{{.*}} : index to i32
// CHECK-NEXT: %[[BBATCH:.*]] = arith.index_cast %c0 : index to i32
// CHECK-NEXT: %[[BKEY:.*]] = arith.index_cast %{{.*}} : index to i32
// CHECK: %[[NOB:.*]] = arith.cmpi eq, %[[BS0]], %{{.*}} : i64
// CHECK: %[[B:.*]] = arith.select %[[NOB]], %{{.*}}, %[[BBATCH]] : i32
// CHECK: %[[NOH:.*]] = arith.cmpi eq, %[[BS1]], %{{.*}} : i64
// CHECK: %[[H:.*]] = arith.select %[[NOH]], %{{.*}}, %[[BHEAD]] : i32
// CHECK: nvvm.cp.async.bulk.tensor.shared.cluster.global %{{.*}}, %[[BMAP]], %[[BFULL]], box[%[[BKEY]], %[[BROW]], %[[H]], %[[B]], %{{.*}}]
func.func @bf16(%q: tensor<2x4x?x64xbf16>, %b: tensor<1x4x?x?xbf16>) -> tensor<2x4x?x64xbf16> {
  %o = fa.attention %q, %q, %q bias(%b : tensor<1x4x?x?xbf16>) : tensor<2x4x?x64xbf16>, tensor<2x4x?x64xbf16>, tensor<2x4x?x64xbf16> -> tensor<2x4x?x64xbf16>
  return %o : tensor<2x4x?x64xbf16>
}
