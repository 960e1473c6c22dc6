//===- Passes.td - FA conversion passes ---------------------*- tablegen -*-===//

#ifndef FA_CONVERSION_PASSES_TD
#define FA_CONVERSION_PASSES_TD

include "mlir/Pass/PassBase.td"

def ConvertFAToLinalg : Pass<"convert-fa-to-linalg"> {
  let summary = "Lower fa.score_tile to linalg on tensors";
  let description = [{
    Each `fa.score_tile` becomes the tile's Q K^T (a `linalg.generic`
    accumulating in f32) and one elementwise `linalg.generic` applying the
    variant at absolute positions (`query_offset + r`, `key_offset + c`);
    bias and ALiBi slopes are read with `tensor.extract`, broadcast
    dimensions at index 0.
  }];
  let dependentDialects = [
    "::mlir::arith::ArithDialect",
    "::mlir::linalg::LinalgDialect",
    "::mlir::math::MathDialect",
    "::mlir::tensor::TensorDialect"
  ];
}

#endif // FA_CONVERSION_PASSES_TD
