// RUN: fa-opt %s -split-input-file -fa-fuse=chip=sm_90a -fa-tile -fa-online-softmax -fa-async-copy | FileCheck %s
// RUN: fa-opt %s -split-input-file -fa-fuse="chip=sm_90a head-group=4" -fa-tile -fa-online-softmax -fa-async-copy | FileCheck %s --check-prefix=GROUP
// RUN: not fa-opt %s -split-input-file -fa-fuse="chip=sm_90a head-group=-1" 2>&1 | FileCheck %s --check-prefix=BAD
// BAD: fa-fuse: head-group must be 0 (the default) or at least 1, got -1

// fa-tile on a kernel fa-fuse marked fa.wgmma (sm_90a, D = 128, no mask):
// 128 x 128 tiles over 8 warps (two warpgroups), every tile in wgmma's
// swizzle, S read with Q and K both from shared memory (no Q fragments in
// registers), P V with P from registers; fa-async-copy rings K and V in two
// stages, which keep the swizzle.
// CHECK-LABEL: gpu.func @fa_forward_0
// CHECK-SAME: fa.block_kv = 128 : i64, fa.block_q = 128 : i64, fa.kv_stages = 2 : i64, fa.wgmma, known_block_size = array<i32: 256, 1, 1>
// CHECK: %[[SQ:[0-9]+]] = fagpu.alloc_shared {offset = 0 : i64} : !fagpu.shared<1x128x128xbf16, wgmma>
// CHECK-NEXT: %[[SK:[0-9]+]] = fagpu.alloc_shared {offset = 32768 : i64} : !fagpu.shared<2x128x128xbf16, wgmma>
// CHECK-NEXT: %[[SV:[0-9]+]] = fagpu.alloc_shared {offset = 98304 : i64} : !fagpu.shared<2x128x128xbf16, wgmma>
// CHECK-NOT: fagpu.load_operand
// CHECK: scf.for {{.*}} -> (tensor<128xf32, #fagpu.rows<warps = 8>>, tensor<128xf32, #fagpu.rows<warps = 8, partial = true>>, tensor<128x128xf32, #fagpu.acc<warps = 8>>, !fagpu.token)
// CHECK: %[[S:[0-9]+]] = fagpu.mma %[[SQ]], %[[SK]][%[[STAGE:[0-9]+]]] {b_transposed, wgmma} : !fagpu.shared<1x128x128xbf16, wgmma>, !fagpu.shared<2x128x128xbf16, wgmma> -> tensor<128x128xf32, #fagpu.acc<warps = 8>>
// CHECK: %[[P:[0-9]+]] = fagpu.to_operand %{{[0-9]+}} : tensor<128x128xf32, #fagpu.acc<warps = 8>> -> tensor<128x128xbf16, #fagpu.operand<warps = 8>>
// CHECK-NEXT: fagpu.mma %[[P]], %[[SV]][%[[STAGE]]] acc %{{[0-9]+}} {wgmma} : tensor<128x128xbf16, #fagpu.operand<warps = 8>>, !fagpu.shared<2x128x128xbf16, wgmma> -> tensor<128x128xf32, #fagpu.acc<warps = 8>>
func.func @d128(%q: tensor<?x8x?x128xbf16>, %k: tensor<?x2x?x128xbf16>, %v: tensor<?x2x?x128xbf16>) -> tensor<?x8x?x128xbf16> {
  %o = fa.attention %q, %k, %v : tensor<?x8x?x128xbf16>, tensor<?x2x?x128xbf16>, tensor<?x2x?x128xbf16> -> tensor<?x8x?x128xbf16>
  return %o : tensor<?x8x?x128xbf16>
}

// -----

// Head dims between wgmma's 64-column panels: Dk = 80 and Dv = 96 in tiles of
// 128 columns (D = 128's tiles, stages and shared memory), zero past the
// head dim. S sums over the 80 columns that hold data (depth), P V computes
// O's 96 columns from V's 128-column tile, and O is stored as 96 columns.
// CHECK-LABEL: gpu.func @fa_forward_0
// CHECK-SAME: fa.block_kv = 128 : i64, fa.block_q = 128 : i64, fa.kv_stages = 2 : i64, fa.wgmma, known_block_size = array<i32: 256, 1, 1>
// CHECK: %[[SQ:[0-9]+]] = fagpu.alloc_shared {offset = 0 : i64} : !fagpu.shared<1x128x128xf16, wgmma>
// CHECK-NEXT: %[[SK:[0-9]+]] = fagpu.alloc_shared {offset = 32768 : i64} : !fagpu.shared<2x128x128xf16, wgmma>
// CHECK-NEXT: %[[SV:[0-9]+]] = fagpu.alloc_shared {offset = 98304 : i64} : !fagpu.shared<2x128x128xf16, wgmma>
// CHECK: fagpu.async_copy %arg0[%{{.*}}] bound %{{.*}} to %[[SQ]][%{{.*}}] : memref<?x4x?x80xf16, strided<[?, ?, ?, 1], offset: ?>> to !fagpu.shared<1x128x128xf16, wgmma>
// CHECK: %[[S:[0-9]+]] = fagpu.mma %[[SQ]], %[[SK]][%[[STAGE:[0-9]+]]] {b_transposed, depth = 80 : i64, wgmma} : !fagpu.shared<1x128x128xf16, wgmma>, !fagpu.shared<2x128x128xf16, wgmma> -> tensor<128x128xf32, #fagpu.acc<warps = 8>>
// CHECK: fagpu.mma %{{[0-9]+}}, %[[SV]][%[[STAGE]]] acc %{{[0-9]+}} {wgmma} : tensor<128x128xf16, #fagpu.operand<warps = 8>>, !fagpu.shared<2x128x128xf16, wgmma> -> tensor<128x96xf32, #fagpu.acc<warps = 8>>
// CHECK: fagpu.store %{{[0-9]+}} to %arg3[{{.*}}] bound %{{.*}} : tensor<128x96xf32, #fagpu.acc<warps = 8>>, memref<?x4x?x96xf16, strided<[?, ?, ?, 1], offset: ?>>
func.func @d80(%q: tensor<?x4x?x80xf16>, %k: tensor<?x4x?x80xf16>, %v: tensor<?x4x?x96xf16>) -> tensor<?x4x?x96xf16> {
  %o = fa.attention %q, %k, %v : tensor<?x4x?x80xf16>, tensor<?x4x?x80xf16>, tensor<?x4x?x96xf16> -> tensor<?x4x?x96xf16>
  return %o : tensor<?x4x?x96xf16>
}

// -----

// A causal grid: one head's tiles heavy to light by default here (no
// producer warpgroup); with fa-fuse's head-group, the heaviest tiles of 4
// heads first, where the CTA's place is read and where the epilogue reads it
// again.
// CHECK-LABEL: gpu.func @fa_forward_0
// CHECK-NOT: fa.head_group
// CHECK: fagpu.block_coords {heavy_first}
// CHECK: fagpu.block_coords {heavy_first, rematerialize}
// GROUP: gpu.func @fa_forward_0{{.*}}fa.head_group = 4 : i64
// GROUP: fagpu.block_coords {head_group = 4 : i64, heavy_first}
// GROUP: fagpu.block_coords {head_group = 4 : i64, heavy_first, rematerialize}
func.func @causal_d128(%q: tensor<?x8x?x128xbf16>, %k: tensor<?x8x?x128xbf16>, %v: tensor<?x8x?x128xbf16>) -> tensor<?x8x?x128xbf16> {
  %o = fa.attention %q, %k, %v {causal = #fa.causal<top_left>} : tensor<?x8x?x128xbf16>, tensor<?x8x?x128xbf16>, tensor<?x8x?x128xbf16> -> tensor<?x8x?x128xbf16>
  return %o : tensor<?x8x?x128xbf16>
}

// -----

// Without a causal mask the head group has nothing to order.
// GROUP-NOT: head_group
func.func @noncausal_d128(%q: tensor<?x8x?x128xbf16>, %k: tensor<?x8x?x128xbf16>, %v: tensor<?x8x?x128xbf16>) -> tensor<?x8x?x128xbf16> {
  %o = fa.attention %q, %k, %v : tensor<?x8x?x128xbf16>, tensor<?x8x?x128xbf16>, tensor<?x8x?x128xbf16> -> tensor<?x8x?x128xbf16>
  return %o : tensor<?x8x?x128xbf16>
}
