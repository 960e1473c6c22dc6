// RUN: fa-opt %s -fa-fuse="chip=sm_90a wgmma=false" -fa-tile -fa-online-softmax -fa-async-copy -split-input-file | FileCheck %s
// RUN: fa-opt %s -fa-fuse="chip=sm_90a wgmma=false" -fa-tile -fa-online-softmax -fa-async-copy=stages=3 -split-input-file | FileCheck %s --check-prefix=S3

// The plain path's 128 x 64 tile at D = 64 gets two stages by default:
// (128 + 2 * 2 * 64) * 64 * 2 bytes, on the kernel and on its launch; three
// when asked, (128 + 2 * 3 * 64) * 64 * 2.

// CHECK-LABEL: func.func @plain
// CHECK: %[[SMEM:.+]] = arith.constant 49152 : i32
// CHECK-NOT: arith.constant 32768 : i32
// CHECK: gpu.launch_func @fa_kernels::@fa_forward_0 {{.+}} dynamic_shared_memory_size %[[SMEM]] args(
// CHECK: gpu.func @fa_forward_0({{.+}}) kernel attributes {fa.block_kv = 64 : i64, fa.block_q = 128 : i64, fa.kv_stages = 2 : i64,
// S3-LABEL: func.func @plain
// S3: %[[SMEM:.+]] = arith.constant 65536 : i32
// S3: gpu.launch_func @fa_kernels::@fa_forward_0 {{.+}} dynamic_shared_memory_size %[[SMEM]] args(
// S3: gpu.func @fa_forward_0({{.+}}) kernel attributes {fa.block_kv = 64 : i64, fa.block_q = 128 : i64, fa.kv_stages = 3 : i64,
func.func @plain(%q: tensor<?x8x?x64xbf16>) -> tensor<?x8x?x64xbf16> {
  %o = fa.attention %q, %q, %q : tensor<?x8x?x64xbf16>, tensor<?x8x?x64xbf16>, tensor<?x8x?x64xbf16> -> tensor<?x8x?x64xbf16>
  return %o : tensor<?x8x?x64xbf16>
}

// -----

// One stage elsewhere: the scored path (64 x 64 at D = 64: 24576 bytes),
// D = 128 with a causal mask (64 x 128: 81920) and D = 256 (64 x 64:
// 98304). Three stages of D = 256 take 229376 bytes, which sm_90a gives a
// CTA.

// CHECK-LABEL: func.func @others
// CHECK: arith.constant 24576 : i32
// CHECK: arith.constant 81920 : i32
// CHECK: arith.constant 98304 : i32
// CHECK: gpu.func @fa_forward_0({{.+}}) kernel attributes {fa.block_kv = 64 : i64, fa.block_q = 64 : i64, fa.kv_stages = 1 : i64,
// CHECK: gpu.func @fa_forward_1({{.+}}) kernel attributes {fa.block_kv = 128 : i64, fa.block_q = 64 : i64, fa.kv_stages = 1 : i64,
// CHECK: gpu.func @fa_forward_2({{.+}}) kernel attributes {fa.block_kv = 64 : i64, fa.block_q = 64 : i64, fa.kv_stages = 1 : i64,
// S3-LABEL: func.func @others
// S3: arith.constant 57344 : i32
// S3: arith.constant 212992 : i32
// S3: arith.constant 229376 : i32
func.func @others(%q: tensor<1x2x64x64xf16>, %bias: tensor<1x2x64x64xf32>, %q2: tensor<1x2x64x128xf16>, %q3: tensor<1x2x64x256xf16>) -> (tensor<1x2x64x64xf16>, tensor<1x2x64x128xf16>, tensor<1x2x64x256xf16>) {
  %o = fa.attention %q, %q, %q bias(%bias : tensor<1x2x64x64xf32>) : tensor<1x2x64x64xf16>, tensor<1x2x64x64xf16>, tensor<1x2x64x64xf16> -> tensor<1x2x64x64xf16>
  %o2 = fa.attention %q2, %q2, %q2 {causal = #fa.causal<top_left>} : tensor<1x2x64x128xf16>, tensor<1x2x64x128xf16>, tensor<1x2x64x128xf16> -> tensor<1x2x64x128xf16>
  %o3 = fa.attention %q3, %q3, %q3 : tensor<1x2x64x256xf16>, tensor<1x2x64x256xf16>, tensor<1x2x64x256xf16> -> tensor<1x2x64x256xf16>
  return %o, %o2, %o3 : tensor<1x2x64x64xf16>, tensor<1x2x64x128xf16>, tensor<1x2x64x256xf16>
}
