// fa-fuse on a chip with wgmma (sm_90a): kernels whose head dim is a
// multiple of 64 are marked `fa.wgmma` and get wgmma's default tiles, with
// one warp per 16 query rows; other head dims, other chips and wgmma=false
// keep mma.sync's 4 warps.
// RUN: fa-opt %s -split-input-file -fa-fuse=chip=sm_90a | FileCheck %s
// RUN: fa-opt %s -split-input-file -fa-fuse="chip=sm_90a wgmma=false" | FileCheck %s --check-prefix=OFF
// RUN: fa-opt %s -split-input-file -fa-fuse=chip=sm_80 | FileCheck %s --check-prefix=OFF

// D = 128 without a mask: 128 x 128 tiles, two warpgroups.
// CHECK-LABEL: func.func @d128
// CHECK: gpu.launch_func @fa_kernels::@fa_forward_0 blocks in (%{{.*}}) threads in (%[[T:[a-z0-9_]+]], %{{.*}}, %{{.*}})
// CHECK: gpu.func @fa_forward_0
// CHECK-SAME: fa.block_kv = 128 : i64, fa.block_q = 128 : i64, fa.wgmma, known_block_size = array<i32: 256, 1, 1>
// OFF-LABEL: func.func @d128
// OFF: gpu.func @fa_forward_0
// OFF-SAME: fa.block_kv = 64 : i64, fa.block_q = 128 : i64, known_block_size = array<i32: 128, 1, 1>
func.func @d128(%q: tensor<1x1x8x128xbf16>) -> tensor<1x1x8x128xbf16> {
  %o = fa.attention %q, %q, %q : tensor<1x1x8x128xbf16>, tensor<1x1x8x128xbf16>, tensor<1x1x8x128xbf16> -> tensor<1x1x8x128xbf16>
  return %o : tensor<1x1x8x128xbf16>
}

// -----

// D = 64: 64 x 128, one warpgroup.
// CHECK-LABEL: func.func @d64
// CHECK: gpu.func @fa_forward_0
// CHECK-SAME: fa.block_kv = 128 : i64, fa.block_q = 64 : i64, fa.wgmma, known_block_size = array<i32: 128, 1, 1>
// OFF-LABEL: func.func @d64
// OFF-NOT: fa.wgmma
func.func @d64(%q: tensor<1x1x8x64xf16>) -> tensor<1x1x8x64xf16> {
  %o = fa.attention %q, %q, %q {causal = #fa.causal<top_left>} : tensor<1x1x8x64xf16>, tensor<1x1x8x64xf16>, tensor<1x1x8x64xf16> -> tensor<1x1x8x64xf16>
  return %o : tensor<1x1x8x64xf16>
}

// -----

// D = 96 is not a multiple of wgmma's 64-column swizzle blocks: mma.sync.
// CHECK-LABEL: func.func @d96
// CHECK: gpu.func @fa_forward_0
// CHECK-NOT: fa.wgmma
// CHECK-SAME: known_block_size = array<i32: 128, 1, 1>
func.func @d96(%q: tensor<1x1x8x96xbf16>) -> tensor<1x1x8x96xbf16> {
  %o = fa.attention %q, %q, %q : tensor<1x1x8x96xbf16>, tensor<1x1x8x96xbf16>, tensor<1x1x8x96xbf16> -> tensor<1x1x8x96xbf16>
  return %o : tensor<1x1x8x96xbf16>
}
