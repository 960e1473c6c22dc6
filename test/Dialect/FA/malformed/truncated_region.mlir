// RUN: not fa-opt %s 2>&1 | FileCheck %s

// The file ends inside a score_mod region: no closing braces.

// CHECK: {{.*}}truncated_region.mlir:[[@LINE+5]]:22: error: expected operation name in quotes
// CHECK-NOT: error:
func.func @f(%q: tensor<2x8x128x64xf16>, %k: tensor<2x8x128x64xf16>, %v: tensor<2x8x128x64xf16>) -> tensor<2x8x128x64xf16> {
  %o = fa.attention %q, %k, %v : tensor<2x8x128x64xf16>, tensor<2x8x128x64xf16>, tensor<2x8x128x64xf16> -> tensor<2x8x128x64xf16> score_mod {
  ^bb0(%s: f32, %b: index, %h: index, %i: index, %j: index):
    fa.yield %s : f32
