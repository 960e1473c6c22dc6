// fa-fuse's warp-specialize on sm_90a: wgmma kernels of the plain path are
// marked `fa.warp_specialize` with a producer warpgroup's default tiles,
// 128 query rows (two consumer warpgroups) and K/V tiles of 128 rows (64 at
// D = 256); the scored path (a bias here) and head dims without wgmma
// keep their tiles, unmarked. fa-warp-specialize leaves unmarked kernels
// alone (the UNMARKED run: the same kernels without the option).
// RUN: fa-opt %s -split-input-file -fa-fuse="chip=sm_90a warp-specialize=1" | FileCheck %s
// RUN: fa-opt %s -split-input-file -fa-fuse="chip=sm_90a" -fa-tile -fa-online-softmax -fa-warp-specialize | FileCheck %s --check-prefix=UNMARKED

// CHECK-LABEL: func.func @d64
// CHECK: gpu.func @fa_forward_0
// CHECK-SAME: fa.block_kv = 128 : i64, fa.block_q = 128 : i64, fa.warp_specialize, fa.wgmma, known_block_size = array<i32: 256, 1, 1>
// UNMARKED-LABEL: func.func @d64
// UNMARKED: gpu.func @fa_forward_0
// UNMARKED-NOT: fagpu.warp_specialize
// UNMARKED: fagpu.copy
func.func @d64(%q: tensor<1x1x8x64xf16>) -> tensor<1x1x8x64xf16> {
  %o = fa.attention %q, %q, %q {causal = #fa.causal<top_left>} : tensor<1x1x8x64xf16>, tensor<1x1x8x64xf16>, tensor<1x1x8x64xf16> -> tensor<1x1x8x64xf16>
  return %o : tensor<1x1x8x64xf16>
}

// -----

// CHECK-LABEL: func.func @d256
// CHECK: gpu.func @fa_forward_0
// CHECK-SAME: fa.block_kv = 64 : i64, fa.block_q = 128 : i64, fa.warp_specialize, fa.wgmma, known_block_size = array<i32: 256, 1, 1>
func.func @d256(%q: tensor<1x1x8x256xbf16>) -> tensor<1x1x8x256xbf16> {
  %o = fa.attention %q, %q, %q : tensor<1x1x8x256xbf16>, tensor<1x1x8x256xbf16>, tensor<1x1x8x256xbf16> -> tensor<1x1x8x256xbf16>
  return %o : tensor<1x1x8x256xbf16>
}

// -----

// CHECK-LABEL: func.func @bias
// CHECK: gpu.func @fa_forward_0
// CHECK-NOT: fa.warp_specialize
// CHECK-SAME: fa.block_kv = 32 : i64, fa.block_q = 64 : i64, fa.wgmma,
func.func @bias(%q: tensor<1x1x8x128xbf16>, %b: tensor<1x1x8x8xbf16>) -> tensor<1x1x8x128xbf16> {
  %o = fa.attention %q, %q, %q bias(%b : tensor<1x1x8x8xbf16>) : tensor<1x1x8x128xbf16>, tensor<1x1x8x128xbf16>, tensor<1x1x8x128xbf16> -> tensor<1x1x8x128xbf16>
  return %o : tensor<1x1x8x128xbf16>
}

// -----

// CHECK-LABEL: func.func @d96
// CHECK: gpu.func @fa_forward_0
// CHECK-NOT: fa.warp_specialize
// CHECK-SAME: known_block_size = array<i32: 128, 1, 1>
func.func @d96(%q: tensor<1x1x8x96xbf16>) -> tensor<1x1x8x96xbf16> {
  %o = fa.attention %q, %q, %q : tensor<1x1x8x96xbf16>, tensor<1x1x8x96xbf16>, tensor<1x1x8x96xbf16> -> tensor<1x1x8x96xbf16>
  return %o : tensor<1x1x8x96xbf16>
}
