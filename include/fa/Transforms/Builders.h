//===- Builders.h - IR builders shared by FA's lowerings -------*- C++ -*-===//
//
// One implementation of steps 1-6 of fa.attention's score definition (scale,
// softcap, ALiBi, bias, score_mod, masks), shared by every lowering so that
// the reference and the tiled kernels cannot drift apart, and small linalg
// helpers.
//
//===----------------------------------------------------------------------===//

#ifndef FA_TRANSFORMS_BUILDERS_H
#define FA_TRANSFORMS_BUILDERS_H

#include "fa/Dialect/FA/IR/FAOps.h"
#include "fa/Transforms/Masks.h"
#include "mlir/Dialect/Utils/StructuredOpsUtils.h"
#include "mlir/IR/Builders.h"

namespace mlir::fa {

//===----------------------------------------------------------------------===//
// linalg helpers
//===----------------------------------------------------------------------===//

/// Emits "<pass>: block-q and block-kv must be positive, got Q and KV" on
/// `root` and fails unless both are.
LogicalResult checkBlockSizes(Operation *root, StringRef pass, int64_t blockQ,
                              int64_t blockKV);
/// `values`, each tensor.cast to its type in `types` where it differs.
SmallVector<Value> castToTypes(OpBuilder &b, Location loc, ValueRange values,
                               TypeRange types);

/// Computes the value a linalg.generic body yields.
using BodyFn = llvm::function_ref<Value(OpBuilder &, Location, ValueRange)>;

Value f32Const(OpBuilder &b, Location loc, double v);
/// `v` extended to f32 (returned as is when already f32).
Value extToF32(OpBuilder &b, Location loc, Value v);
/// A tensor of `sizes` f32 filled with `value`.
Value filledF32(OpBuilder &b, Location loc, ArrayRef<OpFoldResult> sizes,
                double value);
/// The projection (d0, ..., dn-1) -> (d_which...).
AffineMap dimsMap(MLIRContext *ctx, unsigned numDims, ArrayRef<unsigned> which);
/// A linalg.generic with one result initialized by `init`.
Value buildGeneric(OpBuilder &b, Location loc, Value init, ValueRange inputs,
                   ArrayRef<AffineMap> maps,
                   ArrayRef<utils::IteratorType> iterators, BodyFn body);

//===----------------------------------------------------------------------===//
// Scores
//===----------------------------------------------------------------------===//

/// The compile-time part of a variant, read off fa.attention or
/// fa.score_tile.
struct ScoreVariant {
  double scale = 1.0;
  FloatAttr softcap;
  CausalKindAttr causal;
  DenseI64ArrayAttr window;
  Region *scoreMod = nullptr;
  Region *maskMod = nullptr;
  bool hasAlibi = false;
  bool hasBias = false;
  /// The op's captures: the regions' trailing arguments where they are
  /// inlined (values defined above the inlining point).
  SmallVector<Value, 2> captures;

  template <typename OpT> static ScoreVariant get(OpT op, double scale) {
    ScoreVariant v;
    v.scale = scale;
    v.softcap = op.getSoftcapAttr();
    v.causal = op.getCausalAttr();
    v.window = op.getWindowAttr();
    v.scoreMod = op.getScoreMod().empty() ? nullptr : &op.getScoreMod();
    v.maskMod = op.getMaskMod().empty() ? nullptr : &op.getMaskMod();
    v.hasAlibi = static_cast<bool>(op.getAlibiSlopes());
    v.hasBias = static_cast<bool>(op.getBias());
    v.captures.assign(op.getCaptures().begin(), op.getCaptures().end());
    return v;
  }

  /// Whether the batch and query head indices are read (by the regions).
  bool needsHead() const { return scoreMod || maskMod; }
  /// Whether query/key positions are read.
  bool needsPositions() const {
    return hasAlibi || causal || window || needsHead();
  }
  /// Whether the bottom-right diagonal i + Nk - Nq is read.
  bool needsDiagonal() const {
    return hasAlibi || Masks{causal, window}.needsDiagonal();
  }
};

/// Positions of one score: batch, query head, query row i, key row j, and
/// i + Nk - Nq. Only those the variant needs must be set.
struct ScorePositions {
  Value batch, head, query, key, queryAligned;
};

/// Turns the raw dot product `dot` (f32) into the score of fa.attention's
/// definition. `bias` (any float type) and `slope` (f32) are the values at
/// this position, null when the variant has none; the regions read
/// `variant.captures`. With `derivative`, also
/// sets it to d score / d dot, or with `wrtBias` to d score / d bias (0
/// where masked); a variant with a score_mod then needs `scoreModGrad`, the
/// region of its derivative. `unscaled` leaves the scale out of d score /
/// d dot (d score / d (scale * dot)): the GPU kernels apply it once per
/// output.
Value buildScore(OpBuilder &b, Location loc, const ScoreVariant &variant,
                 Value dot, Value bias, Value slope, const ScorePositions &pos,
                 Value *derivative = nullptr, Region *scoreModGrad = nullptr,
                 bool wrtBias = false, bool unscaled = false);

/// Softcap's step of the score, cap * tanh(scale * dot / cap) (one multiply
/// by scale / cap, no division), times `factor` folded into the multiply by
/// the cap (a kernel scoring in the log2 domain passes log2(e)). With
/// `derivative`, also sets it to 1 - tanh^2 from the same tanh: d step /
/// d (scale * dot), over `factor`. `makeTanh` builds the tanh (math.tanh
/// when null). buildScore's softcap; the GPU backward's plain path calls it
/// directly.
Value buildSoftcap(OpBuilder &b, Location loc, double cap, double scale,
                   Value dot, Value *derivative = nullptr, double factor = 1.0,
                   function_ref<Value(Value)> makeTanh = nullptr);

/// Dropout of probability (b, h, i, j): 0 when dropped, 1 / (1 - p) when
/// kept (f32). Philox4x32-10 with key (seed low, seed high) on the counter
/// (j, i, h, b) (each truncated to 32 bits); the probability is kept when
/// the first output word x satisfies (x >> 8) * 2^-24 >= p (p rounded to
/// f32). `seed` is i64; positions are indices.
Value buildDropoutScale(OpBuilder &b, Location loc, Value seed, double p,
                        Value batch, Value head, Value query, Value key);
/// buildDropoutScale on the four i32 counter words (j, i, h, b) directly,
/// for callers (the GPU kernels) that hold positions as i32. With `scaled`
/// false the kept value is 1 instead of 1 / (1 - p): a kernel that rounds P
/// for a matmul applies 1 / (1 - p) to the f32 result, as P * 1 / (1 - p)
/// would cross 1 and round twice as coarsely there.
Value buildPhiloxDropout(OpBuilder &b, Location loc, Value seed, double p,
                         ArrayRef<Value> counter, bool scaled = true);

//===----------------------------------------------------------------------===//
// Tiles
//===----------------------------------------------------------------------===//

/// Each of `tiles` ([rows, cols] f32, rows from query q0, columns from key
/// k0, all the same size) times buildDropoutScale at each position, in one
/// linalg.generic: the Philox stream is evaluated once per position.
SmallVector<Value> buildDropoutTiles(OpBuilder &b, Location loc,
                                     ValueRange tiles, Value seed, double p,
                                     Value batch, Value head, Value q0,
                                     Value k0);

/// buildDropoutTiles of one tile.
Value buildDropoutTile(OpBuilder &b, Location loc, Value tile, Value seed,
                       double p, Value batch, Value head, Value q0, Value k0);

/// Rows [offset, offset + size) of head `head` of batch `batch` of a
/// [B, H, N, D] tensor, as a [size, D] tensor.
Value extractRows(OpBuilder &b, Location loc, Value t, Value batch, Value head,
                  Value offset, Value size);

/// Which derivative an fa.score_tile yields besides the scores.
enum class ScoreDerivative { None, Dot, Bias };

/// fa.score_tile of `qTile` against `kTile` with the variant of `attention`
/// (an fa.attention or fa.attention_grad; its regions are cloned), also
/// yielding d score / d dot or d score / d bias when asked.
ScoreTileOp buildScoreTile(OpBuilder &b, Location loc, Operation *attention,
                           Value qTile, Value kTile, Value batch, Value head,
                           Value q0, Value k0, Value seqQ, Value seqKV,
                           ScoreDerivative derivative = ScoreDerivative::None);

/// The K/V rows [begin, end) that some query of [q0, q0 + rows) may see under
/// the causal/window masks (both null: every row): MaskBuilder::visibleKeys
/// on index.
std::pair<Value, Value> buildVisibleKeys(OpBuilder &b, Location loc,
                                         CausalKindAttr causal,
                                         DenseI64ArrayAttr window, Value q0,
                                         Value rows, Value seqQ, Value seqKV,
                                         int64_t blockKV);

/// The query rows [begin, end) that may see some key of [k0, k0 + cols) under
/// the causal/window masks (MaskBuilder::visibleQueries on index); begin >=
/// end when none does.
std::pair<Value, Value> buildVisibleQueries(OpBuilder &b, Location loc,
                                            CausalKindAttr causal,
                                            DenseI64ArrayAttr window, Value k0,
                                            Value cols, Value seqQ,
                                            Value seqKV);

/// Query row `i` and key `j` clamped to the last row and key (`nq` and
/// `nk` positive): where a ragged tile's positions past Nq and Nk read the
/// captures and bias, never past the buffers (their scores are masked or
/// never stored).
std::pair<Value, Value> clampPositions(OpBuilder &b, Location loc, Value i,
                                       Value j, Value nq, Value nk);

/// In `body`, the uses of each clamped position (clampPositions') that
/// compute no read's index take the true position instead: their values
/// past Nq and Nk are masked or never stored, and a term of the true
/// positions converts to float once per tile (convert-fa-to-nvvm's
/// fagpu.map lowering), where the clamp's min would hide it.
void unclampArithmetic(Block &body,
                       ArrayRef<std::pair<Value, Value>> clampedAndTrue);

/// Clones the single block of `region` at the builder's insertion point with
/// its arguments bound to `args`; returns the value it yields.
Value inlineVariantRegion(OpBuilder &b, Region &region, ValueRange args);

} // namespace mlir::fa

#endif // FA_TRANSFORMS_BUILDERS_H
