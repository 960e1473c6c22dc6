// RUN: not fa-opt %s 2>&1 | FileCheck %s

// %key is not defined.

func.func @f(%q: tensor<2x8x128x64xf16>, %k: tensor<2x8x128x64xf16>, %v: tensor<2x8x128x64xf16>) -> tensor<2x8x128x64xf16> {
  // CHECK: {{.*}}undefined_value.mlir:[[@LINE+1]]:25: error: use of undeclared SSA value name
  %o = fa.attention %q, %key, %v : tensor<2x8x128x64xf16>, tensor<2x8x128x64xf16>, tensor<2x8x128x64xf16> -> tensor<2x8x128x64xf16>
  return %o : tensor<2x8x128x64xf16>
}

// CHECK-NOT: error:
