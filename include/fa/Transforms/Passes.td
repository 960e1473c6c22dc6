//===- Passes.td - FA transformation passes -----------------*- tablegen -*-===//

#ifndef FA_TRANSFORMS_PASSES_TD
#define FA_TRANSFORMS_PASSES_TD

include "mlir/Pass/PassBase.td"

def FADecompose : Pass<"fa-decompose"> {
  let summary = "Lower fa.attention to the materialized reference in linalg";
  let description = [{
    Rewrites every `fa.attention` into linalg on tensors exactly as the op
    defines it: the full `[B, Hkv, G, Nq, Nk]` score tensor (QK^T in f32),
    scale, softcap, ALiBi, bias, `score_mod`, masks, a numerically stable
    softmax in f32 (row max, exp, row sum), the product with V and the
    log-sum-exp. Query heads are regrouped as `[Hkv, G]` with
    `G = Hq / Hkv` so GQA/MQA need no gather.

    This is the executable specification other lowerings are checked
    against; it is O(Nq * Nk) in memory and not meant to be fast.
  }];
  let dependentDialects = [
    "::mlir::arith::ArithDialect",
    "::mlir::linalg::LinalgDialect",
    "::mlir::math::MathDialect",
    "::mlir::tensor::TensorDialect"
  ];
}

#endif // FA_TRANSFORMS_PASSES_TD
