//===- Decompose.cpp - fa.attention to the materialized reference ---------===//
//
// The reference lowering: every step of fa.attention's definition becomes a
// linalg op on tensors, with the whole score matrix materialized. Query heads
// are viewed as [Hkv, G] (G = Hq / Hkv) so that K and V are indexed by the
// same head index as the grouped queries.
//
//===----------------------------------------------------------------------===//

#include "fa/Dialect/FA/IR/FAOps.h"
#include "fa/Transforms/Passes.h"
#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Arith/Utils/Utils.h"
#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/Dialect/Math/IR/Math.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"
#include "mlir/Dialect/Utils/StaticValueUtils.h"
#include "mlir/IR/IRMapping.h"
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

/// Builds the reference computation for one fa.attention.
class ReferenceBuilder {
public:
  ReferenceBuilder(OpBuilder &b, AttentionOp op)
      : b(b), op(op), loc(op.getLoc()), f32(b.getF32Type()),
        et(op.getElementType()) {}

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
  Value f32Const(double v) {
    return arith::ConstantOp::create(b, loc, b.getF32FloatAttr(v));
  }
  Value extToF32(Value v) {
    return v.getType() == f32 ? v : arith::ExtFOp::create(b, loc, f32, v);
  }
  Value filled(ArrayRef<OpFoldResult> sizes, double value) {
    Value empty = tensor::EmptyOp::create(b, loc, sizes, f32);
    return linalg::FillOp::create(b, loc, ValueRange{f32Const(value)},
                                  ValueRange{empty})
        .getResult(0);
  }
  AffineMap map(unsigned numDims, ArrayRef<AffineExpr> exprs) {
    return AffineMap::get(numDims, 0, exprs, b.getContext());
  }
  AffineMap dims(unsigned numDims, ArrayRef<unsigned> which) {
    SmallVector<AffineExpr> exprs;
    for (unsigned d : which)
      exprs.push_back(b.getAffineDimExpr(d));
    return map(numDims, exprs);
  }
  /// Splits dim `headDim` of `t` (Hq, or 1 when broadcast) into [Hkv, G].
  Value groupHeads(Value t, int64_t headDim);
  /// Clones the single block of `region` at the builder's insertion point
  /// with its arguments bound to `args`; returns the yielded value.
  Value inlineRegion(Region &region, ValueRange args) {
    IRMapping mapping;
    Block &block = region.front();
    mapping.map(block.getArguments(), args);
    for (Operation &inner : block.without_terminator())
      b.clone(inner, mapping);
    auto yield = cast<YieldOp>(block.getTerminator());
    return mapping.lookupOrDefault(yield.getValues().front());
  }

  OpBuilder &b;
  AttentionOp op;
  Location loc;
  Type f32, et;
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
  auto [staticSizes, dynSizes] = decomposeMixedValues(sizes);
  auto resultType = RankedTensorType::get(staticSizes, type.getElementType());
  return tensor::ExpandShapeOp::create(b, loc, resultType, t, reassoc, sizes);
}

LogicalResult ReferenceBuilder::build(SmallVectorImpl<Value> &results) {
  if (op.getDropoutPAttr())
    return op.emitOpError(
        "dropout is not supported by fa-decompose (the reference has no "
        "Philox stream yet)");

  Value q = op.getQuery(), k = op.getKey(), v = op.getValue();
  batch = dim(q, 0);
  seqQ = dim(q, 2);
  headsKV = dim(k, 1);
  seqKV = dim(k, 2);
  headDimV = dim(v, 3);
  int64_t g = op.getHeadGroupSize();
  group = ShapedType::isDynamic(g)
              ? OpFoldResult(arith::DivUIOp::create(b, loc, index(dim(q, 1)),
                                                    index(headsKV))
                                 .getResult())
              : OpFoldResult(b.getIndexAttr(g));

  // Index space of scores: (b, kv-head, group, i, j).
  Value qGrouped = groupHeads(q, 1);
  SmallVector<OpFoldResult> scoreSizes = {batch, headsKV, group, seqQ, seqKV};
  SmallVector<OpFoldResult> rowSizes = {batch, headsKV, group, seqQ};

  // S = Q K^T, accumulated in f32. Dims: (b, h, g, i, j, d).
  Value scores =
      linalg::GenericOp::create(
          b, loc,
          TypeRange{RankedTensorType::get(
              decomposeMixedValues(scoreSizes).first, f32)},
          ValueRange{qGrouped, k}, ValueRange{filled(scoreSizes, 0.0)},
          ArrayRef<AffineMap>{dims(6, {0, 1, 2, 3, 5}), dims(6, {0, 1, 4, 5}),
                              dims(6, {0, 1, 2, 3, 4})},
          ArrayRef<IteratorType>{kPar, kPar, kPar, kPar, kPar, kRed},
          [&](OpBuilder &nb, Location l, ValueRange args) {
            OpBuilder::InsertionGuard guard(b);
            b.setInsertionPointToEnd(nb.getInsertionBlock());
            Value lhs = extToF32(args[0]);
            Value rhs = extToF32(args[1]);
            Value prod = arith::MulFOp::create(b, l, lhs, rhs);
            linalg::YieldOp::create(
                b, l, ValueRange{arith::AddFOp::create(b, l, args[2], prod)});
          })
          .getResult(0);

  // Score modifications and masks, elementwise over (b, h, g, i, j).
  SmallVector<Value> inputs;
  SmallVector<AffineMap> maps;
  Value bias = op.getBias(), slopes = op.getAlibiSlopes();
  if (bias) {
    auto biasType = cast<RankedTensorType>(bias.getType());
    inputs.push_back(groupHeads(bias, 1));
    SmallVector<AffineExpr> exprs;
    // Grouped bias dims: [B', Hkv', G', Nq', Nk'], each 1 when broadcast.
    for (int64_t d = 0; d < 5; ++d) {
      int64_t srcDim = d <= 1 ? d : d - 1;
      bool bcast = biasType.getDimSize(srcDim) == 1;
      exprs.push_back(bcast ? b.getAffineConstantExpr(0)
                            : b.getAffineDimExpr(d));
    }
    maps.push_back(map(5, exprs));
  }
  if (slopes) {
    auto slopesType = cast<RankedTensorType>(slopes.getType());
    bool perBatch = slopesType.getRank() == 2;
    inputs.push_back(groupHeads(slopes, perBatch ? 1 : 0));
    maps.push_back(perBatch ? dims(5, {0, 1, 2}) : dims(5, {1, 2}));
  }
  maps.push_back(dims(5, {0, 1, 2, 3, 4}));

  Value groupV = index(group);
  Value diagOffset = arith::SubIOp::create(b, loc, index(seqKV), index(seqQ));
  double scale = op.getScaleOrDefault();
  std::optional<double> softcap;
  if (auto attr = op.getSoftcapAttr())
    softcap = attr.getValueAsDouble();

  scores =
      linalg::GenericOp::create(
          b, loc, TypeRange{scores.getType()}, inputs, ValueRange{scores}, maps,
          SmallVector<IteratorType>(5, kPar),
          [&](OpBuilder &nb, Location l, ValueRange args) {
            OpBuilder::InsertionGuard guard(b);
            b.setInsertionPointToEnd(nb.getInsertionBlock());
            Value s = arith::MulFOp::create(b, l, args.back(), f32Const(scale));
            if (softcap) {
              Value cap = f32Const(*softcap);
              Value t = math::TanhOp::create(
                  b, l, arith::DivFOp::create(b, l, s, cap));
              s = arith::MulFOp::create(b, l, cap, t);
            }
            Value bi = linalg::IndexOp::create(b, l, 0);
            Value hk = linalg::IndexOp::create(b, l, 1);
            Value hg = linalg::IndexOp::create(b, l, 2);
            Value i = linalg::IndexOp::create(b, l, 3);
            Value j = linalg::IndexOp::create(b, l, 4);
            // Query i lines up with key i + Nk - Nq (bottom-right).
            Value iAligned = arith::AddIOp::create(b, l, i, diagOffset);
            unsigned nextInput = 0;
            if (bias)
              ++nextInput;
            if (slopes) {
              Value dist = arith::SubIOp::create(b, l, iAligned, j);
              Value distF = arith::SIToFPOp::create(
                  b, l, f32,
                  arith::IndexCastOp::create(b, l, b.getI64Type(), dist));
              Value penalty = arith::MulFOp::create(
                  b, l, args[nextInput], math::AbsFOp::create(b, l, distF));
              s = arith::SubFOp::create(b, l, s, penalty);
            }
            if (bias)
              s = arith::AddFOp::create(b, l, s, extToF32(args[0]));
            Value h = arith::AddIOp::create(
                b, l, arith::MulIOp::create(b, l, hk, groupV), hg);
            if (!op.getScoreMod().empty())
              s = inlineRegion(op.getScoreMod(), {s, bi, h, i, j});

            Value keep;
            auto addMask = [&](Value m) {
              keep =
                  keep ? arith::AndIOp::create(b, l, keep, m).getResult() : m;
            };
            if (auto causal = op.getCausalAttr()) {
              Value diag =
                  causal.getValue() == CausalKind::TopLeft ? i : iAligned;
              addMask(arith::CmpIOp::create(b, l, arith::CmpIPredicate::sle, j,
                                            diag));
            }
            if (auto window = op.getWindowAttr()) {
              Value lo = arith::SubIOp::create(
                  b, l, iAligned,
                  arith::ConstantIndexOp::create(b, l, window[0]));
              Value hi = arith::AddIOp::create(
                  b, l, iAligned,
                  arith::ConstantIndexOp::create(b, l, window[1]));
              addMask(arith::CmpIOp::create(b, l, arith::CmpIPredicate::sge, j,
                                            lo));
              addMask(arith::CmpIOp::create(b, l, arith::CmpIPredicate::sle, j,
                                            hi));
            }
            if (!op.getMaskMod().empty())
              addMask(inlineRegion(op.getMaskMod(), {bi, h, i, j}));
            if (keep)
              s = arith::SelectOp::create(
                  b, l, keep, s,
                  f32Const(-std::numeric_limits<double>::infinity()));
            linalg::YieldOp::create(b, l, ValueRange{s});
          })
          .getResult(0);

  // Stable softmax in f32: m = max_j s, p = exp(s - m), l = sum_j p.
  // A fully masked row has m = -inf; it gets p = 0 and l = 0.
  auto rowType =
      RankedTensorType::get(decomposeMixedValues(rowSizes).first, f32);
  AffineMap full5 = dims(5, {0, 1, 2, 3, 4}), row5 = dims(5, {0, 1, 2, 3});
  SmallVector<IteratorType> reduceJ = {kPar, kPar, kPar, kPar, kRed};
  auto bodyBuilder = [&](auto fn) {
    return [&, fn](OpBuilder &nb, Location l, ValueRange args) {
      OpBuilder::InsertionGuard guard(b);
      b.setInsertionPointToEnd(nb.getInsertionBlock());
      linalg::YieldOp::create(b, l, ValueRange{fn(l, args)});
    };
  };
  Value rowMax = linalg::GenericOp::create(
                     b, loc, TypeRange{rowType}, ValueRange{scores},
                     ValueRange{filled(
                         rowSizes, -std::numeric_limits<double>::infinity())},
                     ArrayRef<AffineMap>{full5, row5}, reduceJ,
                     bodyBuilder([&](Location l, ValueRange args) -> Value {
                       return arith::MaximumFOp::create(b, l, args[0], args[1]);
                     }))
                     .getResult(0);
  Value negInf = f32Const(-std::numeric_limits<double>::infinity());
  Value probs = linalg::GenericOp::create(
                    b, loc, TypeRange{scores.getType()}, ValueRange{rowMax},
                    ValueRange{scores}, ArrayRef<AffineMap>{row5, full5},
                    SmallVector<IteratorType>(5, kPar),
                    bodyBuilder([&](Location l, ValueRange args) -> Value {
                      Value masked = arith::CmpFOp::create(
                          b, l, arith::CmpFPredicate::OEQ, args[0], negInf);
                      Value m = arith::SelectOp::create(b, l, masked,
                                                        f32Const(0.0), args[0]);
                      return math::ExpOp::create(
                          b, l, arith::SubFOp::create(b, l, args[1], m));
                    }))
                    .getResult(0);
  Value rowSum =
      linalg::GenericOp::create(
          b, loc, TypeRange{rowType}, ValueRange{probs},
          ValueRange{filled(rowSizes, 0.0)}, ArrayRef<AffineMap>{full5, row5},
          reduceJ, bodyBuilder([&](Location l, ValueRange args) -> Value {
            return arith::AddFOp::create(b, l, args[0], args[1]);
          }))
          .getResult(0);

  // O = (P V) / l over (b, h, g, i, e, j); a row with l = 0 gives O = 0.
  SmallVector<OpFoldResult> outSizes = {batch, headsKV, group, seqQ, headDimV};
  auto accType =
      RankedTensorType::get(decomposeMixedValues(outSizes).first, f32);
  Value acc =
      linalg::GenericOp::create(
          b, loc, TypeRange{accType}, ValueRange{probs, v},
          ValueRange{filled(outSizes, 0.0)},
          ArrayRef<AffineMap>{dims(6, {0, 1, 2, 3, 5}), dims(6, {0, 1, 5, 4}),
                              dims(6, {0, 1, 2, 3, 4})},
          ArrayRef<IteratorType>{kPar, kPar, kPar, kPar, kPar, kRed},
          bodyBuilder([&](Location l, ValueRange args) -> Value {
            Value prod =
                arith::MulFOp::create(b, l, args[0], extToF32(args[1]));
            return arith::AddFOp::create(b, l, args[2], prod);
          }))
          .getResult(0);
  auto outGroupedType =
      RankedTensorType::get(decomposeMixedValues(outSizes).first, et);
  Value out = linalg::GenericOp::create(
                  b, loc, TypeRange{outGroupedType}, ValueRange{acc, rowSum},
                  ValueRange{tensor::EmptyOp::create(b, loc, outSizes, et)},
                  ArrayRef<AffineMap>{full5, row5, full5},
                  SmallVector<IteratorType>(5, kPar),
                  bodyBuilder([&](Location l, ValueRange args) -> Value {
                    Value empty =
                        arith::CmpFOp::create(b, l, arith::CmpFPredicate::OEQ,
                                              args[1], f32Const(0.0));
                    Value o = arith::SelectOp::create(
                        b, l, empty, f32Const(0.0),
                        arith::DivFOp::create(b, l, args[0], args[1]));
                    return et == f32 ? o : arith::TruncFOp::create(b, l, et, o);
                  }))
                  .getResult(0);

  // Back to [B, Hq, Nq, Dv], then to the exact declared result type.
  auto collapse = [&](Value t, Type resultType) -> Value {
    auto type = cast<RankedTensorType>(t.getType());
    SmallVector<ReassociationIndices> reassoc = {{0}, {1, 2}};
    for (int64_t i = 3; i < type.getRank(); ++i)
      reassoc.push_back({i});
    Value c = tensor::CollapseShapeOp::create(b, loc, t, reassoc);
    if (c.getType() != resultType)
      c = tensor::CastOp::create(b, loc, resultType, c);
    return c;
  };
  results.push_back(collapse(out, op.getOutput().getType()));

  if (Value lse = op.getLse()) {
    // lse = m + log(l); -inf for a fully masked row (m = -inf, l = 0).
    AffineMap row4 = dims(4, {0, 1, 2, 3});
    Value lseGrouped =
        linalg::GenericOp::create(
            b, loc, TypeRange{rowType}, ValueRange{rowMax, rowSum},
            ValueRange{tensor::EmptyOp::create(b, loc, rowSizes, f32)},
            ArrayRef<AffineMap>{row4, row4, row4},
            SmallVector<IteratorType>(4, kPar),
            bodyBuilder([&](Location l, ValueRange args) -> Value {
              return arith::AddFOp::create(b, l, args[0],
                                           math::LogOp::create(b, l, args[1]));
            }))
            .getResult(0);
    results.push_back(collapse(lseGrouped, lse.getType()));
  }
  return success();
}

struct FADecomposePass : public fa::impl::FADecomposeBase<FADecomposePass> {
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
