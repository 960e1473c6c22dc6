// RUN: not fa-opt %s 2>&1 | FileCheck %s

// A missing comma between operands is a parse error, not a crash.

func.func @f(%q: tensor<2x8x128x64xf16>, %k: tensor<2x8x128x64xf16>, %v: tensor<2x8x128x64xf16>) -> tensor<2x8x128x64xf16> {
  // CHECK: {{.*}}syntax_error.mlir:[[@LINE+1]]:23: error: expected ','
  %o = fa.attention %q %k, %v : tensor<2x8x128x64xf16>, tensor<2x8x128x64xf16>, tensor<2x8x128x64xf16> -> tensor<2x8x128x64xf16>
  return %o : tensor<2x8x128x64xf16>
}

// CHECK-NOT: error:
