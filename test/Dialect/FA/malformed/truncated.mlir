// RUN: not fa-opt %s 2>&1 | FileCheck %s

// The file ends in the middle of the op's types.

// CHECK: {{.*}}truncated.mlir:[[@LINE+3]]:107: error: expected non-function type
// CHECK-NOT: error:
func.func @f(%q: tensor<2x8x128x64xf16>, %k: tensor<2x8x128x64xf16>, %v: tensor<2x8x128x64xf16>) -> tensor<2x8x128x64xf16> {
  %o = fa.attention %q, %k, %v : tensor<2x8x128x64xf16>, tensor<2x8x128x64xf16>, tensor<2x8x128x64xf16> ->
