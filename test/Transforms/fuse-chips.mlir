// The kernel module's NVVM target comes from the GPU target model
// (include/fa/Target/GpuTarget.h): each chip gets the first PTX version that
// knows it and the instructions FA emits there.
// RUN: fa-opt %s -fa-fuse=chip=sm_80 | FileCheck %s --check-prefix=SM80
// RUN: fa-opt %s -fa-fuse=chip=sm_89 | FileCheck %s --check-prefix=SM89
// RUN: fa-opt %s -fa-fuse=chip=sm_90 | FileCheck %s --check-prefix=SM90
// RUN: fa-opt %s -fa-fuse=chip=sm_90a | FileCheck %s --check-prefix=SM90A
// RUN: fa-opt %s -fa-fuse=chip=sm_100 | FileCheck %s --check-prefix=SM100
// SM80: gpu.module @fa_kernels [#nvvm.target<O = 3, chip = "sm_80", features = "+ptx70">]
// SM89: gpu.module @fa_kernels [#nvvm.target<O = 3, chip = "sm_89", features = "+ptx78">]
// SM90: gpu.module @fa_kernels [#nvvm.target<O = 3, chip = "sm_90", features = "+ptx80">]
// SM90A: gpu.module @fa_kernels [#nvvm.target<O = 3, chip = "sm_90a", features = "+ptx80">]
// SM100: gpu.module @fa_kernels [#nvvm.target<O = 3, chip = "sm_100", features = "+ptx86">]

// A chip the model does not know is refused by name, with the ones it does.
// RUN: not fa-opt %s -fa-fuse=chip=sm_75 2>&1 | FileCheck %s --check-prefix=UNKNOWN
// RUN: not fa-opt %s -convert-fa-to-nvvm=chip=sm_91 2>&1 | FileCheck %s --check-prefix=UNKNOWN-NVVM
// UNKNOWN: error: fa-fuse: unknown chip 'sm_75' (FA compiles for sm_80, sm_86, sm_87, sm_89, sm_90, sm_90a, sm_100, sm_120)
// UNKNOWN-NVVM: error: convert-fa-to-nvvm: unknown chip 'sm_91' (FA compiles for sm_80, sm_86, sm_87, sm_89, sm_90, sm_90a, sm_100, sm_120)

func.func @f(%q: tensor<1x1x8x64xbf16>) -> tensor<1x1x8x64xbf16> {
  %o = fa.attention %q, %q, %q : tensor<1x1x8x64xbf16>, tensor<1x1x8x64xbf16>, tensor<1x1x8x64xbf16> -> tensor<1x1x8x64xbf16>
  return %o : tensor<1x1x8x64xbf16>
}
