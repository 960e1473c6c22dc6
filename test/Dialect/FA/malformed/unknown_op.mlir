// RUN: not fa-opt %s 2>&1 | FileCheck %s

// A misspelled op name of the fa dialect.

func.func @f(%q: tensor<2x8x128x64xf16>, %k: tensor<2x8x128x64xf16>, %v: tensor<2x8x128x64xf16>) -> tensor<2x8x128x64xf16> {
  // CHECK: {{.*}}unknown_op.mlir:[[@LINE+1]]:8: error: custom op 'fa.attenton' is unknown
  %o = fa.attenton %q, %k, %v : tensor<2x8x128x64xf16>, tensor<2x8x128x64xf16>, tensor<2x8x128x64xf16> -> tensor<2x8x128x64xf16>
  return %o : tensor<2x8x128x64xf16>
}

// CHECK-NOT: error:
