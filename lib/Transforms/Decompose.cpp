//===- Decompose.cpp - fa.attention to the materialized reference ---------===//
//
// The reference lowering: every step of fa.attention's definition becomes a
// linalg op on tensors, with the whole score matrix materialized. Query heads
// are viewed as [Hkv, G] (G = Hq / Hkv) so that K and V are indexed by the
// same head index as the grouped queries and GQA needs no gather.
//
//===----------------------------------------------------------------------===//

#include "fa/Dialect/FA/IR/FAOps.h"
#include "fa/Transforms/Builders.h"
#include "fa/Transforms/Passes.h"
#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Arith/Utils/Utils.h"
#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/Dialect/Math/IR/Math.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"
#include "mlir/Dialect/Utils/StaticValueUtils.h"
#include "mlir/IR/PatternMatch.h"

#include <limits>

namespace mlir::fa {
#define GEN_PASS_DEF_FADECOMPOSE
#include "fa/Transforms/Passes.h.inc"
} // namespace mlir::fa

using namespace mlir;
using namespace mlir::fa;

namespace {

using utils::IteratorType;
constexpr IteratorType kPar = IteratorType::parallel;
constexpr IteratorType kRed = IteratorType::reduction;
constexpr double kNegInf = -std::numeric_limits<double>::infinity();

/// Builds the reference computation of one fa.attention.
class ReferenceBuilder {
public:
  ReferenceBuilder(OpBuilder &b, AttentionOp op)
      : b(b), op(op), loc(op.getLoc()), f32(b.getF32Type()) {}

  LogicalResult build(SmallVectorImpl<Value> &results);

private:
  OpFoldResult dim(Value t, int64_t i) {
    OpFoldResult &size = dimCache[{t, i}];
    if (!size)
      size = tensor::getMixedSize(b, loc, t, i);
    return size;
  }
  Value index(OpFoldResult ofr) {
    return getValueOrCreateConstantIndexOp(b, loc, ofr);
  }
  RankedTensorType tensorType(ArrayRef<OpFoldResult> sizes, Type elementType) {
    return RankedTensorType::get(decomposeMixedValues(sizes).first,
                                 elementType);
  }
  Value filled(ArrayRef<OpFoldResult> sizes, double value) {
    return filledF32(b, loc, sizes, value);
  }
  AffineMap dims(unsigned numDims, ArrayRef<unsigned> which) {
    return dimsMap(b.getContext(), numDims, which);
  }
  Value generic(Value init, ValueRange inputs, ArrayRef<AffineMap> maps,
                ArrayRef<IteratorType> iterators, BodyFn body) {
    return buildGeneric(b, loc, init, inputs, maps, iterators, body);
  }
  /// Splits dim `headDim` of `t` (Hq, or 1 when broadcast) into [Hkv, G].
  Value groupHeads(Value t, int64_t headDim);
  /// The elementwise step from raw QK^T to masked, modified scores.
  Value modifyScores(Value scores);
  /// Back to [B, Hq, ...] and to the op's declared result type.
  Value ungroupHeads(Value t, Type resultType);

  OpBuilder &b;
  AttentionOp op;
  Location loc;
  Type f32;
  OpFoldResult batch, headsKV, group, seqQ, seqKV, headDimV;
  DenseMap<std::pair<Value, int64_t>, OpFoldResult> dimCache;
};

Value ReferenceBuilder::groupHeads(Value t, int64_t headDim) {
  auto type = cast<RankedTensorType>(t.getType());
  bool broadcast = type.getDimSize(headDim) == 1;
  SmallVector<OpFoldResult> sizes;
  SmallVector<ReassociationIndices> reassoc;
  for (int64_t i = 0, r = type.getRank(); i < r; ++i) {
    int64_t out = sizes.size();
    if (i == headDim) {
      sizes.push_back(broadcast ? b.getIndexAttr(1) : headsKV);
      sizes.push_back(broadcast ? b.getIndexAttr(1) : group);
      reassoc.push_back({out, out + 1});
    } else {
      sizes.push_back(dim(t, i));
      reassoc.push_back({out});
    }
  }
  return tensor::ExpandShapeOp::create(
      b, loc, tensorType(sizes, type.getElementType()), t, reassoc, sizes);
}

Value ReferenceBuilder::ungroupHeads(Value t, Type resultType) {
  auto type = cast<RankedTensorType>(t.getType());
  SmallVector<ReassociationIndices> reassoc = {{0}, {1, 2}};
  for (int64_t i = 3; i < type.getRank(); ++i)
    reassoc.push_back({i});
  Value c = tensor::CollapseShapeOp::create(b, loc, t, reassoc);
  if (c.getType() != resultType)
    c = tensor::CastOp::create(b, loc, resultType, c);
  return c;
}

Value ReferenceBuilder::modifyScores(Value scores) {
  // Operands besides the scores, each with its map from (b, h, g, i, j).
  SmallVector<Value> inputs;
  SmallVector<AffineMap> maps;
  Value bias = op.getBias(), slopes = op.getAlibiSlopes();
  if (bias) {
    // Grouped bias: [B', Hkv', G', Nq', Nk'], a dim of 1 is broadcast.
    auto biasType = cast<RankedTensorType>(bias.getType());
    SmallVector<AffineExpr> exprs;
    for (int64_t d = 0; d < 5; ++d) {
      int64_t srcDim = d <= 1 ? d : d - 1;
      exprs.push_back(biasType.getDimSize(srcDim) == 1
                          ? b.getAffineConstantExpr(0)
                          : b.getAffineDimExpr(d));
    }
    inputs.push_back(groupHeads(bias, 1));
    maps.push_back(AffineMap::get(5, 0, exprs, b.getContext()));
  }
  if (slopes) {
    bool perBatch = cast<RankedTensorType>(slopes.getType()).getRank() == 2;
    inputs.push_back(groupHeads(slopes, perBatch ? 1 : 0));
    maps.push_back(perBatch ? dims(5, {0, 1, 2}) : dims(5, {1, 2}));
  }
  maps.push_back(dims(5, {0, 1, 2, 3, 4}));

  ScoreVariant variant = ScoreVariant::get(op, op.getScaleOrDefault());
  // Query i lines up with key i + Nk - Nq on the bottom-right diagonal.
  Value diagOffset;
  if (variant.needsDiagonal())
    diagOffset = arith::SubIOp::create(b, loc, index(seqKV), index(seqQ));
  Value groupSize = variant.needsHead() ? index(group) : Value();

  return generic(scores, inputs, maps, SmallVector<IteratorType>(5, kPar),
                 [&](OpBuilder &nb, Location l, ValueRange args) -> Value {
                   // Positions, created in a fixed order and only when a step
                   // uses them.
                   ScorePositions pos;
                   if (variant.needsHead()) {
                     pos.batch = linalg::IndexOp::create(nb, l, 0);
                     Value hk = linalg::IndexOp::create(nb, l, 1);
                     Value hg = linalg::IndexOp::create(nb, l, 2);
                     Value base = arith::MulIOp::create(nb, l, hk, groupSize);
                     pos.head = arith::AddIOp::create(nb, l, base, hg);
                   }
                   if (variant.needsPositions()) {
                     pos.query = linalg::IndexOp::create(nb, l, 3);
                     pos.key = linalg::IndexOp::create(nb, l, 4);
                   }
                   if (diagOffset)
                     pos.queryAligned =
                         arith::AddIOp::create(nb, l, pos.query, diagOffset);
                   Value biasValue = bias ? args[0] : Value();
                   Value slope = slopes ? args[args.size() - 2] : Value();
                   return buildScore(nb, l, variant, args.back(), biasValue,
                                     slope, pos);
                 });
}

LogicalResult ReferenceBuilder::build(SmallVectorImpl<Value> &results) {
  if (op.getDropoutPAttr())
    return op.emitOpError("dropout is not supported by fa-decompose (the "
                          "reference has no Philox stream yet)");

  Value q = op.getQuery(), k = op.getKey(), v = op.getValue();
  Type et = op.getElementType();
  batch = dim(q, 0);
  seqQ = dim(q, 2);
  headsKV = dim(k, 1);
  seqKV = dim(k, 2);
  headDimV = dim(v, 3);
  int64_t g = op.getHeadGroupSize();
  if (ShapedType::isDynamic(g))
    group = arith::DivUIOp::create(b, loc, index(dim(q, 1)), index(headsKV))
                .getResult();
  else
    group = b.getIndexAttr(g);

  // Scores live in the index space (b, h, g, i, j), h the K/V head.
  SmallVector<OpFoldResult> scoreSizes = {batch, headsKV, group, seqQ, seqKV};
  SmallVector<OpFoldResult> rowSizes = {batch, headsKV, group, seqQ};
  SmallVector<OpFoldResult> outSizes = {batch, headsKV, group, seqQ, headDimV};
  AffineMap all5 = dims(5, {0, 1, 2, 3, 4}), row5 = dims(5, {0, 1, 2, 3});
  SmallVector<IteratorType> par5(5, kPar);
  SmallVector<IteratorType> reduceLast5 = {kPar, kPar, kPar, kPar, kRed};
  SmallVector<IteratorType> reduceLast6 = {kPar, kPar, kPar, kPar, kPar, kRed};

  // S = Q K^T in f32 over (b, h, g, i, j, d).
  Value qGrouped = groupHeads(q, 1);
  Value scores = generic(
      filled(scoreSizes, 0.0), {qGrouped, k},
      {dims(6, {0, 1, 2, 3, 5}), dims(6, {0, 1, 4, 5}),
       dims(6, {0, 1, 2, 3, 4})},
      reduceLast6, [&](OpBuilder &nb, Location l, ValueRange args) -> Value {
        Value lhs = extToF32(nb, l, args[0]);
        Value rhs = extToF32(nb, l, args[1]);
        Value prod = arith::MulFOp::create(nb, l, lhs, rhs);
        return arith::AddFOp::create(nb, l, args[2], prod);
      });
  scores = modifyScores(scores);

  // Stable softmax in f32: m = max_j s, p = exp(s - m), l = sum_j p. A fully
  // masked row has m = -inf; it gets p = 0 and l = 0 rather than NaN.
  Value rowMax =
      generic(filled(rowSizes, kNegInf), scores, {all5, row5}, reduceLast5,
              [&](OpBuilder &nb, Location l, ValueRange args) -> Value {
                return arith::MaximumFOp::create(nb, l, args[0], args[1]);
              });
  Value probs = generic(
      scores, rowMax, {row5, all5}, par5,
      [&](OpBuilder &nb, Location l, ValueRange args) -> Value {
        Value masked = arith::CmpFOp::create(nb, l, arith::CmpFPredicate::OEQ,
                                             args[0], f32Const(nb, l, kNegInf));
        Value m = arith::SelectOp::create(nb, l, masked, f32Const(nb, l, 0.0),
                                          args[0]);
        Value diff = arith::SubFOp::create(nb, l, args[1], m);
        return math::ExpOp::create(nb, l, diff);
      });
  Value rowSum =
      generic(filled(rowSizes, 0.0), probs, {all5, row5}, reduceLast5,
              [&](OpBuilder &nb, Location l, ValueRange args) -> Value {
                return arith::AddFOp::create(nb, l, args[0], args[1]);
              });

  // O = (P V) / l over (b, h, g, i, e, j); a row with l = 0 gives O = 0.
  Value acc = generic(filled(outSizes, 0.0), {probs, v},
                      {dims(6, {0, 1, 2, 3, 5}), dims(6, {0, 1, 5, 4}),
                       dims(6, {0, 1, 2, 3, 4})},
                      reduceLast6,
                      [&](OpBuilder &nb, Location l, ValueRange args) -> Value {
                        Value rhs = extToF32(nb, l, args[1]);
                        Value prod = arith::MulFOp::create(nb, l, args[0], rhs);
                        return arith::AddFOp::create(nb, l, args[2], prod);
                      });
  Value out =
      generic(tensor::EmptyOp::create(b, loc, outSizes, et), {acc, rowSum},
              {all5, row5, all5}, par5,
              [&](OpBuilder &nb, Location l, ValueRange args) -> Value {
                Value zero = f32Const(nb, l, 0.0);
                Value empty = arith::CmpFOp::create(
                    nb, l, arith::CmpFPredicate::OEQ, args[1], zero);
                Value quotient = arith::DivFOp::create(nb, l, args[0], args[1]);
                Value o = arith::SelectOp::create(nb, l, empty, zero, quotient);
                return et == f32 ? o : arith::TruncFOp::create(nb, l, et, o);
              });
  results.push_back(ungroupHeads(out, op.getOutput().getType()));

  if (Value lse = op.getLse()) {
    // lse = m + log(l): -inf + log(0) = -inf for a fully masked row.
    AffineMap all4 = dims(4, {0, 1, 2, 3});
    Value lseGrouped = generic(
        tensor::EmptyOp::create(b, loc, rowSizes, f32), {rowMax, rowSum},
        {all4, all4, all4}, SmallVector<IteratorType>(4, kPar),
        [&](OpBuilder &nb, Location l, ValueRange args) -> Value {
          Value logSum = math::LogOp::create(nb, l, args[1]);
          return arith::AddFOp::create(nb, l, args[0], logSum);
        });
    results.push_back(ungroupHeads(lseGrouped, lse.getType()));
  }
  return success();
}

struct FADecomposePass
    : public mlir::fa::impl::FADecomposeBase<FADecomposePass> {
  void runOnOperation() override {
    SmallVector<AttentionOp> ops;
    getOperation()->walk([&](AttentionOp op) { ops.push_back(op); });
    IRRewriter rewriter(&getContext());
    for (AttentionOp op : ops) {
      rewriter.setInsertionPoint(op);
      SmallVector<Value> results;
      if (failed(ReferenceBuilder(rewriter, op).build(results)))
        return signalPassFailure();
      rewriter.replaceOp(op, results);
    }
  }
};

} // namespace
