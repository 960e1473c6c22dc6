// RUN: not fa-opt %s 2>&1 | FileCheck %s

// Three operands but only two operand types: the parser wants a third one.

func.func @f(%q: tensor<2x8x128x64xf16>, %k: tensor<2x8x128x64xf16>, %v: tensor<2x8x128x64xf16>) -> tensor<2x8x128x64xf16> {
  // CHECK: {{.*}}wrong_type_count.mlir:[[@LINE+1]]:80: error: expected ','
  %o = fa.attention %q, %k, %v : tensor<2x8x128x64xf16>, tensor<2x8x128x64xf16> -> tensor<2x8x128x64xf16>
  return %o : tensor<2x8x128x64xf16>
}

// CHECK-NOT: error:
