//===- FAOps.td - FA operations -----------------------------*- tablegen -*-===//

#ifndef FA_DIALECT_FA_IR_FAOPS_TD
#define FA_DIALECT_FA_IR_FAOPS_TD

include "fa/Dialect/FA/IR/FADialect.td"
include "fa/Dialect/FA/IR/FAAttrs.td"
include "mlir/Interfaces/ControlFlowInterfaces.td"
include "mlir/Interfaces/SideEffectInterfaces.td"
include "mlir/IR/BuiltinAttributes.td"
include "mlir/IR/CommonAttrConstraints.td"
include "mlir/IR/OpBase.td"

//===----------------------------------------------------------------------===//
// Shared variant description of fa.attention and fa.attention_grad.
//===----------------------------------------------------------------------===//

// Optional operands that carry per-call data of a variant. They come after
// the op's own tensor operands. `captures` are tensors the score_mod /
// mask_mod regions read (with tensor.extract): they are passed to each region
// as trailing block arguments, in order, so the regions stay isolated.
defvar FA_VariantOperands = (ins
  Optional<AnyRankedTensor>:$bias,
  Optional<AnyRankedTensor>:$alibi_slopes,
  Optional<I64>:$dropout_seed,
  Variadic<AnyRankedTensor>:$captures
);

// Attributes that fix a variant at compile time.
defvar FA_VariantAttrs = (ins
  OptionalAttr<F32Attr>:$scale,
  OptionalAttr<FA_CausalAttr>:$causal,
  OptionalAttr<DenseI64ArrayAttr>:$window,
  OptionalAttr<F32Attr>:$softcap,
  OptionalAttr<F32Attr>:$dropout_p
);

defvar FA_VariantRegions = (region
  MaxSizedRegion<1>:$score_mod,
  MaxSizedRegion<1>:$mask_mod
);

// The backward form adds the derivative of score_mod with respect to its
// score argument, (score, b, h, i, j) -> d score_mod / d score, filled in by
// fa-differentiate-score-mod.
defvar FA_GradRegions = (region
  MaxSizedRegion<1>:$score_mod,
  MaxSizedRegion<1>:$mask_mod,
  MaxSizedRegion<1>:$score_mod_grad
);

defvar FA_VariantFormat = [{
  (`bias` `(` $bias^ `:` type($bias) `)`)?
  (`alibi_slopes` `(` $alibi_slopes^ `:` type($alibi_slopes) `)`)?
  (`dropout_seed` `(` $dropout_seed^ `)`)?
  (`captures` `(` $captures^ `:` type($captures) `)`)?
  attr-dict
}];

defvar FA_RegionFormat = [{
  (`score_mod` $score_mod^)?
  (`mask_mod` $mask_mod^)?
}];

defvar FA_GradRegionFormat = [{
  (`score_mod` $score_mod^)?
  (`mask_mod` $mask_mod^)?
  (`score_mod_grad` $score_mod_grad^)?
}];

class FA_AttentionBase<string mnemonic, list<Trait> traits = []>
    : FA_Op<mnemonic, !listconcat(traits, [
        AttrSizedOperandSegments, IsolatedFromAbove, Pure])> {
  let hasVerifier = 1;
  let hasRegionVerifier = 1;

  code variantMethods = [{
    /// Element type of Q, K and V.
    ::mlir::Type getElementType() {
      return getQuery().getType().getElementType();
    }
    /// Hq / Hkv when both are static, ShapedType::kDynamic otherwise.
    int64_t getHeadGroupSize();
    /// The `scale` attribute, or 1/sqrt(D) when it is absent.
    double getScaleOrDefault();
  }];
}

//===----------------------------------------------------------------------===//
// fa.attention
//===----------------------------------------------------------------------===//

def FA_AttentionOp : FA_AttentionBase<"attention"> {
  let summary = "Exact scaled-dot-product attention";
  let description = [{
    Computes `O = softmax(mask(mod(scale * Q K^T))) V` without fixing how.
    Q is `[B, Hq, Nq, D]`, K is `[B, Hkv, Nk, D]`, V is `[B, Hkv, Nk, Dv]`;
    query head `h` reads key/value head `h / (Hq / Hkv)` (GQA, MQA). B, H and
    N may be dynamic; D and Dv are static. O is `[B, Hq, Nq, Dv]` in the
    element type of Q; the optional second result is the log-sum-exp of each
    row, `[B, Hq, Nq]` in f32 (`-inf` for a fully masked row, whose O is 0).

    The score of query `i` and key `j` is built in this order, in f32:

    1. `s = scale * dot(q_i, k_j)`, scale defaulting to `1/sqrt(D)`;
    2. `softcap`: `s = softcap * tanh(s / softcap)`;
    3. `alibi_slopes` (`[Hq]` or `[B, Hq]`, f32):
       `s -= slope[h] * |i + Nk - Nq - j|`;
    4. `bias` (rank 4, broadcastable to `[B, Hq, Nq, Nk]`): `s += bias`;
    5. `score_mod` region: `s = score_mod(s, b, h, i, j)`;
    6. masks (a masked score is `-inf`): `causal` (`#fa.causal<top_left>`
       keeps `j <= i`, `#fa.causal<bottom_right>` keeps `j <= i + Nk - Nq`),
       `window = array<i64: left, right>` (keeps
       `i + Nk - Nq - left <= j <= i + Nk - Nq + right`), and the `mask_mod`
       region (keeps `(b, h, i, j)` where it yields true).

    The regions may read the `captures` tensors (ranked, rank >= 1, integer
    or float elements), which they receive, in order, as block arguments
    after `(s, b, h, i, j)` resp. `(b, h, i, j)`, with `tensor.extract`.

    Then the row softmax, dropout of probabilities with `dropout_p` from a
    Philox stream keyed by `dropout_seed` (kept ones scaled by
    `1 / (1 - dropout_p)`), and the product with V.

    Example:

    ```mlir
    %o, %lse = fa.attention %q, %k, %v {causal = #fa.causal<bottom_right>}
        : tensor<?x8x?x64xbf16>, tensor<?x2x?x64xbf16>, tensor<?x2x?x64xbf16>
        -> tensor<?x8x?x64xbf16>, tensor<?x8x?xf32>
    ```
  }];

  let arguments = !con(
      (ins AnyRankedTensor:$query, AnyRankedTensor:$key,
           AnyRankedTensor:$value),
      FA_VariantOperands, FA_VariantAttrs);
  let results = (outs AnyRankedTensor:$output,
                      Optional<AnyRankedTensor>:$lse);
  let regions = FA_VariantRegions;

  let assemblyFormat = !strconcat("$query `,` $key `,` $value",
    FA_VariantFormat, [{
    `:` type($query) `,` type($key) `,` type($value) `->` type(results)
  }], FA_RegionFormat);

  let extraClassDeclaration = variantMethods;
}

//===----------------------------------------------------------------------===//
// fa.attention_grad
//===----------------------------------------------------------------------===//

def FA_AttentionGradOp : FA_AttentionBase<"attention_grad"> {
  let summary = "Gradients of fa.attention with respect to Q, K and V";
  let description = [{
    Given the inputs of an `fa.attention` with the same variant, its output
    `O`, the output gradient `dO` (both `[B, Hq, Nq, Dv]`) and the saved
    log-sum-exp `lse` (`[B, Hq, Nq]`, f32), returns `dQ`, `dK` and `dV` with
    the types of Q, K and V. Gradients of K/V heads shared by several query
    heads (GQA) are summed.

    The optional fourth result, `dBias`, is the gradient with respect to
    the `bias` operand, with its type: summed over the dimensions the bias
    broadcasts.

    With a `score_mod`, the optional `score_mod_grad` region holds its
    derivative with respect to the score (same arguments, yields f32);
    `fa-differentiate-score-mod` derives it, and lowerings need it.

    ```mlir
    %dq, %dk, %dv = fa.attention_grad %q, %k, %v, %o, %do, %lse
        : tensor<?x8x?x64xbf16>, tensor<?x8x?x64xbf16>, tensor<?x8x?x64xbf16>,
          tensor<?x8x?x64xbf16>, tensor<?x8x?x64xbf16>, tensor<?x8x?xf32>
        -> tensor<?x8x?x64xbf16>, tensor<?x8x?x64xbf16>, tensor<?x8x?x64xbf16>
    ```
  }];

  let arguments = !con(
      (ins AnyRankedTensor:$query, AnyRankedTensor:$key,
           AnyRankedTensor:$value, AnyRankedTensor:$output,
           AnyRankedTensor:$grad_output, AnyRankedTensor:$lse),
      FA_VariantOperands, FA_VariantAttrs);
  let results = (outs AnyRankedTensor:$grad_query,
                      AnyRankedTensor:$grad_key,
                      AnyRankedTensor:$grad_value,
                      Optional<AnyRankedTensor>:$grad_bias);
  let regions = FA_GradRegions;

  let assemblyFormat = !strconcat(
    "$query `,` $key `,` $value `,` $output `,` $grad_output `,` $lse",
    FA_VariantFormat, [{
    `:` type($query) `,` type($key) `,` type($value) `,` type($output) `,`
        type($grad_output) `,` type($lse) `->` type(results)
  }], FA_GradRegionFormat);

  let extraClassDeclaration = variantMethods;
}

//===----------------------------------------------------------------------===//
// fa.score_tile
//===----------------------------------------------------------------------===//

def FA_ScoreTileOp : FA_Op<"score_tile", [
    AttrSizedOperandSegments, IsolatedFromAbove, Pure]> {
  let summary = "Scores of a tile of queries against a tile of keys";
  let description = [{
    Introduced by `fa-tile`. Computes steps 1 to 6 of `fa.attention`'s score
    definition (scale, softcap, ALiBi, bias, `score_mod`, masks) for query
    rows `query_offset + r` and key rows `key_offset + c` of batch `batch`
    and query head `head`, where Q has `query_len` rows and K `key_len` rows
    in all (the bottom-right diagonal needs both). `query` is `[rows, D]`,
    `key` is `[cols, D]`, the result `[rows, cols]` in f32, `-inf` where
    masked. `bias` and `alibi_slopes` are the whole operands of the
    `fa.attention`, indexed at absolute positions; so are `captures`, which
    the regions receive as trailing block arguments. `scale` is resolved.

    The optional second result (used by the backward) is the derivative of
    each score with respect to its raw dot product `dot(q_i, k_j)`: `scale`
    times the softcap's `1 - tanh^2` times `score_mod_grad` (required with a
    `score_mod`), and 0 where masked. With `bias_derivative` it is the
    derivative with respect to the bias term instead (`score_mod_grad`
    alone, 0 where masked), which is what the bias gradient needs.

    ```mlir
    %s = fa.score_tile %qt, %kt at [%b, %h, %q0, %k0] of [%nq, %nk]
        {causal = #fa.causal<top_left>, scale = 1.250000e-01 : f32}
        : tensor<?x64xbf16>, tensor<?x64xbf16> -> tensor<?x?xf32>
    ```
  }];
  let arguments = (ins
    AnyRankedTensor:$query, AnyRankedTensor:$key,
    Index:$batch, Index:$head, Index:$query_offset, Index:$key_offset,
    Index:$query_len, Index:$key_len,
    Optional<AnyRankedTensor>:$bias,
    Optional<AnyRankedTensor>:$alibi_slopes,
    Variadic<AnyRankedTensor>:$captures,
    F32Attr:$scale,
    OptionalAttr<FA_CausalAttr>:$causal,
    OptionalAttr<DenseI64ArrayAttr>:$window,
    OptionalAttr<F32Attr>:$softcap,
    UnitAttr:$bias_derivative
  );
  let results = (outs AnyRankedTensor:$result,
                      Optional<AnyRankedTensor>:$derivative);
  let regions = FA_GradRegions;
  let assemblyFormat = !strconcat([{
    $query `,` $key `at` `[` $batch `,` $head `,` $query_offset `,`
        $key_offset `]` `of` `[` $query_len `,` $key_len `]`
    (`bias` `(` $bias^ `:` type($bias) `)`)?
    (`alibi_slopes` `(` $alibi_slopes^ `:` type($alibi_slopes) `)`)?
    (`captures` `(` $captures^ `:` type($captures) `)`)?
    attr-dict `:` type($query) `,` type($key) `->` type(results)
  }], FA_GradRegionFormat);
  let hasVerifier = 1;
  let hasRegionVerifier = 1;
}

//===----------------------------------------------------------------------===//
// fa.yield
//===----------------------------------------------------------------------===//

def FA_YieldOp : FA_Op<"yield", [
    Pure, ReturnLike, Terminator,
    ParentOneOf<["AttentionOp", "AttentionGradOp", "ScoreTileOp"]>]> {
  let summary = "Returns the value of a score_mod or mask_mod region";
  let arguments = (ins Variadic<AnyType>:$values);
  let assemblyFormat = "attr-dict ($values^ `:` type($values))?";
}

#endif // FA_DIALECT_FA_IR_FAOPS_TD
