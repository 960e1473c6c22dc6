// RUN: not fa-opt %s -fa-fuse=chip=sm_90a -fa-tile -fa-online-softmax -convert-fa-to-nvvm=chip=sm_80 2>&1 | FileCheck %s
// RUN: fa-opt %s -fa-fuse=chip=sm_90a -fa-tile -fa-online-softmax -convert-fa-to-nvvm | FileCheck %s --check-prefix=INHERIT

// The kernel module's chip, set by fa-fuse, is the one convert-fa-to-nvvm
// uses when told none; a different one is refused.
// CHECK: error: convert-fa-to-nvvm: chip=sm_80, but the kernel module targets sm_90a
// INHERIT: gpu.module @fa_kernels [#nvvm.target<O = 3, chip = "sm_90a", features = "+ptx80">]
// INHERIT-NEXT: llvm.mlir.global external @fa_smem()
// INHERIT-NEXT: llvm.func @fa_forward_0(
func.func @f(%q: tensor<1x1x8x64xbf16>) -> tensor<1x1x8x64xbf16> {
  %o = fa.attention %q, %q, %q : tensor<1x1x8x64xbf16>, tensor<1x1x8x64xbf16>, tensor<1x1x8x64xbf16> -> tensor<1x1x8x64xbf16>
  return %o : tensor<1x1x8x64xbf16>
}
