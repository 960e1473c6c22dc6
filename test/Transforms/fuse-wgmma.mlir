// fa-fuse on a chip with wgmma (sm_90a): kernels are marked `fa.wgmma` and
// get wgmma's default tiles, with one warp per 16 query rows (a head dim
// between multiples of 64 those of the next multiple, whose columns its
// shared tiles have); other chips and wgmma=false keep mma.sync's 4 warps.
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

// D = 96 lies between wgmma's 64-column swizzle panels: D = 128's tiles,
// 128 x 128, and shared memory for 128 columns, (128 + 2 x 128) x 128 x 2
// bytes.
// CHECK-LABEL: func.func @d96
// CHECK: %[[SMEM:.*]] = arith.constant 98304 : i32
// CHECK: gpu.launch_func @fa_kernels::@fa_forward_0 {{.*}} dynamic_shared_memory_size %[[SMEM]]
// CHECK: gpu.func @fa_forward_0
// CHECK-SAME: fa.block_kv = 128 : i64, fa.block_q = 128 : i64, fa.wgmma, known_block_size = array<i32: 256, 1, 1>
// OFF-LABEL: func.func @d96
// OFF-NOT: fa.wgmma
func.func @d96(%q: tensor<1x1x8x96xbf16>) -> tensor<1x1x8x96xbf16> {
  %o = fa.attention %q, %q, %q : tensor<1x1x8x96xbf16>, tensor<1x1x8x96xbf16>, tensor<1x1x8x96xbf16> -> tensor<1x1x8x96xbf16>
  return %o : tensor<1x1x8x96xbf16>
}
