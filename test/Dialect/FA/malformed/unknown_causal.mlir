// RUN: not fa-opt %s 2>&1 | FileCheck %s

// #fa.causal only knows top_left and bottom_right.

func.func @f(%q: tensor<2x8x128x64xf16>, %k: tensor<2x8x128x64xf16>, %v: tensor<2x8x128x64xf16>) -> tensor<2x8x128x64xf16> {
  // CHECK: {{.*}}unknown_causal.mlir:[[@LINE+2]]:53: error: expected ::mlir::fa::CausalKind to be one of: top_left, bottom_right
  // CHECK: {{.*}}unknown_causal.mlir:[[@LINE+1]]:61: error: failed to parse FA_CausalAttr parameter 'value' which is to be a `::mlir::fa::CausalKind`
  %o = fa.attention %q, %k, %v {causal = #fa.causal<diagonal>} : tensor<2x8x128x64xf16>, tensor<2x8x128x64xf16>, tensor<2x8x128x64xf16> -> tensor<2x8x128x64xf16>
  return %o : tensor<2x8x128x64xf16>
}

// CHECK-NOT: error:
