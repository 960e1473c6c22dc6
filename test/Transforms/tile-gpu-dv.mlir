// RUN: fa-opt %s -split-input-file -fa-fuse="chip=sm_90a warp-specialize=1" -fa-tile -fa-online-softmax -fa-warp-specialize -fa-async-copy | FileCheck %s
// RUN: fa-opt %s -split-input-file -fa-fuse=chip=sm_80 -fa-tile -fa-online-softmax -fa-async-copy | FileCheck %s --check-prefix=SM80

// Dk != Dv (DeepSeek's 192 / 128): Q and K tiles have D columns, V's and O
// have Dv. With a producer warpgroup the key tile follows Dv (128 x 128, as
// at D = 128); the two-stage rings are Q 48 KB, K 96 KB and V 64 KB, then
// the barriers (Q's empty one too: the grid is persistent).
// CHECK-LABEL: func.func @dk192_dv128
// CHECK: gpu.launch_func @fa_kernels::@fa_forward_0
// CHECK-SAME: threads in (%c384, %c1, %c1) dynamic_shared_memory_size %c213072_i32
// CHECK-LABEL: gpu.func @fa_forward_0
// CHECK-SAME: fa.block_kv = 128 : i64, fa.block_q = 128 : i64
// CHECK: %[[SQ:[0-9]+]] = fagpu.alloc_shared {offset = 0 : i64} : !fagpu.shared<1x128x192xbf16, wgmma>
// CHECK-NEXT: %[[SK:[0-9]+]] = fagpu.alloc_shared {offset = 49152 : i64} : !fagpu.shared<2x128x192xbf16, wgmma>
// CHECK-NEXT: %[[SV:[0-9]+]] = fagpu.alloc_shared {offset = 147456 : i64} : !fagpu.shared<2x128x128xbf16, wgmma>
// CHECK-NEXT: fagpu.alloc_barriers {arrivals = 1 : i64, offset = 212992 : i64} : !fagpu.barriers<1>
// CHECK: fagpu.async_copy %arg1{{.*}} to %[[SK]][{{.*}}] {bulk} : memref<?x2x?x192xbf16, {{.*}}> to !fagpu.shared<2x128x192xbf16, wgmma>
// CHECK: fagpu.async_copy %arg2{{.*}} to %[[SV]][{{.*}}] {bulk} : memref<?x2x?x128xbf16, {{.*}}> to !fagpu.shared<2x128x128xbf16, wgmma>
// CHECK: fagpu.mma %[[SQ]], %[[SK]][{{.*}}] {async, b_transposed, wgmma} : !fagpu.shared<1x128x192xbf16, wgmma>, !fagpu.shared<2x128x192xbf16, wgmma> -> tensor<128x128xf32, #fagpu.acc<warps = 8>>
// CHECK: fagpu.mma %{{.*}}, %[[SV]][{{.*}}] acc %{{.*}} {async, wgmma} : tensor<128x128xbf16, #fagpu.operand<warps = 8>>, !fagpu.shared<2x128x128xbf16, wgmma> -> tensor<128x128xf32, #fagpu.acc<warps = 8>>
// CHECK: fagpu.store %{{.*}} to %arg3{{.*}} : tensor<128x128xf32, #fagpu.acc<warps = 8>>, memref<?x8x?x128xbf16, {{.*}}>
func.func @dk192_dv128(%q: tensor<?x8x?x192xbf16>, %k: tensor<?x2x?x192xbf16>, %v: tensor<?x2x?x128xbf16>) -> tensor<?x8x?x128xbf16> {
  %o = fa.attention %q, %k, %v : tensor<?x8x?x192xbf16>, tensor<?x2x?x192xbf16>, tensor<?x2x?x128xbf16> -> tensor<?x8x?x128xbf16>
  return %o : tensor<?x8x?x128xbf16>
}

// -----

// Dk = 256 with Dv = 128: two stages of 128-key tiles would need 256 KB, so
// the key tile is 64 rows, as at D = 256.
// CHECK-LABEL: func.func @dk256_dv128
// CHECK: gpu.func @fa_forward_0
// CHECK-SAME: fa.block_kv = 64 : i64, fa.block_q = 128 : i64
// CHECK: fagpu.alloc_shared {offset = 0 : i64} : !fagpu.shared<1x128x256xbf16, wgmma>
// CHECK-NEXT: fagpu.alloc_shared {offset = 65536 : i64} : !fagpu.shared<2x64x256xbf16, wgmma>
// CHECK-NEXT: fagpu.alloc_shared {offset = 131072 : i64} : !fagpu.shared<2x64x128xbf16, wgmma>
func.func @dk256_dv128(%q: tensor<?x8x?x256xbf16>, %k: tensor<?x2x?x256xbf16>, %v: tensor<?x2x?x128xbf16>) -> tensor<?x8x?x128xbf16> {
  %o = fa.attention %q, %k, %v : tensor<?x8x?x256xbf16>, tensor<?x2x?x256xbf16>, tensor<?x2x?x128xbf16> -> tensor<?x8x?x128xbf16>
  return %o : tensor<?x8x?x128xbf16>
}

// -----

// mma.sync (sm_80) at D = 96, Dv = 64: Q's fragments in registers, S = Q
// K^T over 96 columns, P V into 64; one stage of 32 KB.
// SM80-LABEL: func.func @dk96_dv64
// SM80: gpu.launch_func @fa_kernels::@fa_forward_0
// SM80-SAME: threads in (%c128, %c1, %c1) dynamic_shared_memory_size %c32768_i32
// SM80: %[[SQ:[0-9]+]] = fagpu.alloc_shared {offset = 0 : i64} : !fagpu.shared<1x64x96xf16>
// SM80-NEXT: %[[SK:[0-9]+]] = fagpu.alloc_shared {offset = 12288 : i64} : !fagpu.shared<1x64x96xf16>
// SM80-NEXT: %[[SV:[0-9]+]] = fagpu.alloc_shared {offset = 24576 : i64} : !fagpu.shared<1x64x64xf16>
// SM80: %[[QA:[0-9]+]] = fagpu.load_operand %[[SQ]][%c0] : !fagpu.shared<1x64x96xf16> -> tensor<64x96xf16, #fagpu.operand<warps = 4>>
// SM80: fagpu.mma %[[QA]], %[[SK]][%c0] {b_transposed} : tensor<64x96xf16, #fagpu.operand<warps = 4>>, !fagpu.shared<1x64x96xf16> -> tensor<64x64xf32, #fagpu.acc<warps = 4>>
// SM80: fagpu.mma %{{.*}}, %[[SV]][%c0] acc %{{.*}} : tensor<64x64xf16, #fagpu.operand<warps = 4>>, !fagpu.shared<1x64x64xf16> -> tensor<64x64xf32, #fagpu.acc<warps = 4>>
// SM80: fagpu.store %{{.*}} to %arg3{{.*}} : tensor<64x64xf32, #fagpu.acc<warps = 4>>, memref<?x4x?x64xf16, {{.*}}>
func.func @dk96_dv64(%q: tensor<?x4x?x96xf16>, %k: tensor<?x4x?x96xf16>, %v: tensor<?x4x?x64xf16>) -> tensor<?x4x?x64xf16> {
  %o = fa.attention %q, %k, %v : tensor<?x4x?x96xf16>, tensor<?x4x?x96xf16>, tensor<?x4x?x64xf16> -> tensor<?x4x?x64xf16>
  return %o : tensor<?x4x?x64xf16>
}
