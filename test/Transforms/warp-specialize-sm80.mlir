// RUN: fa-opt %s -fa-fuse="chip=sm_80 warp-specialize=1" -fa-tile -fa-online-softmax -fa-warp-specialize | FileCheck %s

// mma.sync kernels (sm_80) are left as fa-tile wrote them.
// CHECK-LABEL: gpu.func @fa_forward_0
// CHECK-NOT: fagpu.warp_specialize
// CHECK: fagpu.copy
func.func @d64(%q: tensor<1x8x128x64xbf16>, %k: tensor<1x8x128x64xbf16>, %v: tensor<1x8x128x64xbf16>) -> tensor<1x8x128x64xbf16> {
  %o = fa.attention %q, %k, %v : tensor<1x8x128x64xbf16>, tensor<1x8x128x64xbf16>, tensor<1x8x128x64xbf16> -> tensor<1x8x128x64xbf16>
  return %o : tensor<1x8x128x64xbf16>
}
