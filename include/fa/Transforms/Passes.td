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

def FATile : Pass<"fa-tile"> {
  let summary = "Tile fa.attention into Q tiles (parallel) and K/V tiles "
                "(sequential)";
  let description = [{
    Rewrites every `fa.attention` into an `scf.forall` over (batch, query
    head, Q tile of `block-q` rows) whose body loops over K/V tiles of
    `block-kv` rows. Scores of a tile pair are an `fa.score_tile`. The
    softmax across K/V tiles is still the safe two-pass one: a loop that
    takes the row max (`fa.softmax_row_max`), then a loop that sums
    `exp(s - max)` and accumulates P V (`fa.softmax_row_sum`); each
    recomputes the scores, so nothing larger than a tile is stored.
    `fa-online-softmax` fuses the two loops.

    Causal and window masks narrow the K/V loop per Q tile, so tiles that
    are entirely masked are never visited. Last tiles are ragged: a tile
    holds `min(block, N - offset)` rows.
  }];
  let options = [
    Option<"blockQ", "block-q", "int64_t", /*default=*/"64",
           "Query rows per tile">,
    Option<"blockKV", "block-kv", "int64_t", /*default=*/"64",
           "Key/value rows per tile">
  ];
  let dependentDialects = [
    "::mlir::arith::ArithDialect",
    "::mlir::linalg::LinalgDialect",
    "::mlir::math::MathDialect",
    "::mlir::scf::SCFDialect",
    "::mlir::tensor::TensorDialect"
  ];
}

def FAOnlineSoftmax : Pass<"fa-online-softmax"> {
  let summary = "Fuse the two softmax passes of fa-tile into one online pass";
  let description = [{
    Replaces each pair of `fa.softmax_row_max` / `fa.softmax_row_sum` loops
    by a single loop over K/V tiles carrying the running max m, the running
    sum l and the accumulator: per tile, `m' = max(m, rowmax(s))`,
    `alpha = exp(m - m')` (1 while m' is still -inf), `p = exp(s - m')`,
    `l' = alpha * l + rowsum(p)`, `acc' = alpha * acc + p V`. Scores are
    computed once per tile instead of twice.
  }];
  let dependentDialects = [
    "::mlir::arith::ArithDialect",
    "::mlir::linalg::LinalgDialect",
    "::mlir::math::MathDialect",
    "::mlir::scf::SCFDialect",
    "::mlir::tensor::TensorDialect"
  ];
}

def FADifferentiateScoreMod : Pass<"fa-differentiate-score-mod"> {
  let summary = "Derive d score_mod / d score for fa.attention_grad";
  let description = [{
    Fills the `score_mod_grad` region of every `fa.attention_grad` that has
    a `score_mod` and no `score_mod_grad` yet, by forward-mode
    differentiation of the region's ops with respect to its score argument
    (the index arguments carry no derivative). The region recomputes the
    values it needs and yields the derivative.

    Differentiable: arith addf, subf, mulf, divf, negf, maximumf, minimumf,
    maxnumf, minnumf, select, extf, truncf; math exp, exp2, expm1, log,
    log2, log1p, tanh, sqrt, rsqrt, absf, sin, cos, erf, powf, fma; floor,
    ceil, round and integer/comparison ops have no derivative (0). Any other
    op that depends on the score is an error naming it.
  }];
  let dependentDialects = [
    "::mlir::arith::ArithDialect",
    "::mlir::math::MathDialect"
  ];
}

def FATileGrad : Pass<"fa-tile-grad"> {
  let summary = "Tile fa.attention_grad: recompute P from the lse, tile by "
                "tile";
  let description = [{
    Rewrites every `fa.attention_grad` into three steps on tensors, none of
    which stores an Nq x Nk value:

    1. `Dsum[b, h, i] = sum_e dO[b, h, i, e] * O[b, h, i, e]` (f32);
    2. an `scf.forall` over (batch, kv head, K/V tile of `block-kv` rows)
       that keeps the tile's dK and dV accumulators (f32) and loops over the
       query heads of its GQA group and the Q tiles of `block-q` rows that
       can see the tile (causal/window skipping): scores and their
       derivative from an `fa.score_tile`, `P = exp(s - lse)`,
       `dV += P^T dO`, `dP = dO V^T`, `dS = P * (dP - Dsum) * ds/ddot`,
       `dK += dS^T Q`;
    3. an `scf.forall` over (batch, query head, Q tile) that recomputes the
       same tiles and accumulates `dQ += dS K`.

    dQ is written by its own step rather than accumulated with atomics, so
    the result is deterministic. A `score_mod` needs its `score_mod_grad`
    region (`fa-differentiate-score-mod`). Dropout multiplies P (for dV)
    and dP by the forward's factors (the same Philox stream).
  }];
  let options = [
    Option<"blockQ", "block-q", "int64_t", /*default=*/"64",
           "Query rows per tile">,
    Option<"blockKV", "block-kv", "int64_t", /*default=*/"64",
           "Key/value rows per tile">
  ];
  let dependentDialects = [
    "::mlir::arith::ArithDialect",
    "::mlir::linalg::LinalgDialect",
    "::mlir::math::MathDialect",
    "::mlir::scf::SCFDialect",
    "::mlir::tensor::TensorDialect"
  ];
}

#endif // FA_TRANSFORMS_PASSES_TD
