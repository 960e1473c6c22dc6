//===- Builders.cpp - IR builders shared by FA's lowerings ----------------===//

#include "fa/Transforms/Builders.h"
#include "fa/Transforms/Masks.h"
#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/Dialect/Math/IR/Math.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"
#include "mlir/IR/IRMapping.h"

#include <limits>

using namespace mlir;
using namespace mlir::fa;

std::pair<Value, Value> mlir::fa::clampPositions(OpBuilder &b, Location loc,
                                                 Value i, Value j, Value nq,
                                                 Value nk) {
  Value one = arith::ConstantIndexOp::create(b, loc, 1);
  return {
      arith::MinUIOp::create(b, loc, i, arith::SubIOp::create(b, loc, nq, one)),
      arith::MinUIOp::create(b, loc, j,
                             arith::SubIOp::create(b, loc, nk, one))};
}

void mlir::fa::unclampArithmetic(
    Block &body, ArrayRef<std::pair<Value, Value>> clampedAndTrue) {
  auto isRead = [](Operation *op) {
    return isa<tensor::ExtractOp, memref::LoadOp>(op);
  };
  // The ops whose results reach a read's index (users come later in the
  // block).
  DenseSet<Operation *> addressing;
  for (Operation &op : llvm::reverse(body.without_terminator()))
    if (llvm::any_of(op.getUsers(), [&](Operation *user) {
          return isRead(user) || addressing.contains(user);
        }))
      addressing.insert(&op);
  for (auto [clamped, position] : clampedAndTrue)
    clamped.replaceUsesWithIf(position, [&](OpOperand &use) {
      return !isRead(use.getOwner()) && !addressing.contains(use.getOwner());
    });
  // Clamps no read needs.
  SmallVector<Operation *> ops;
  for (Operation &op : body.without_terminator())
    ops.push_back(&op);
  for (Operation *op : llvm::reverse(ops))
    if (isOpTriviallyDead(op))
      op->erase();
}

Value mlir::fa::inlineVariantRegion(OpBuilder &b, Region &region,
                                    ValueRange args) {
  IRMapping mapping;
  Block &block = region.front();
  mapping.map(block.getArguments(), args);
  for (Operation &inner : block.without_terminator())
    b.clone(inner, mapping);
  auto yield = cast<YieldOp>(block.getTerminator());
  return mapping.lookupOrDefault(yield.getValues().front());
}

LogicalResult mlir::fa::checkBlockSizes(Operation *root, StringRef pass,
                                        int64_t blockQ, int64_t blockKV) {
  if (blockQ > 0 && blockKV > 0)
    return success();
  return root->emitError() << pass
                           << ": block-q and block-kv must be positive, got "
                           << blockQ << " and " << blockKV;
}

SmallVector<Value> mlir::fa::castToTypes(OpBuilder &b, Location loc,
                                         ValueRange values, TypeRange types) {
  SmallVector<Value> results;
  for (auto [value, type] : llvm::zip(values, types))
    results.push_back(value.getType() == type
                          ? value
                          : tensor::CastOp::create(b, loc, type, value));
  return results;
}

Value mlir::fa::f32Const(OpBuilder &b, Location loc, double v) {
  return arith::ConstantOp::create(b, loc, b.getF32FloatAttr(v));
}

Value mlir::fa::extToF32(OpBuilder &b, Location loc, Value v) {
  Type f32 = b.getF32Type();
  return v.getType() == f32 ? v : arith::ExtFOp::create(b, loc, f32, v);
}

Value mlir::fa::filledF32(OpBuilder &b, Location loc,
                          ArrayRef<OpFoldResult> sizes, double value) {
  Value empty = tensor::EmptyOp::create(b, loc, sizes, b.getF32Type());
  Value cst = f32Const(b, loc, value);
  return linalg::FillOp::create(b, loc, cst, empty).getResult(0);
}

AffineMap mlir::fa::dimsMap(MLIRContext *ctx, unsigned numDims,
                            ArrayRef<unsigned> which) {
  SmallVector<AffineExpr> exprs;
  for (unsigned d : which)
    exprs.push_back(getAffineDimExpr(d, ctx));
  return AffineMap::get(numDims, 0, exprs, ctx);
}

Value mlir::fa::buildGeneric(OpBuilder &b, Location loc, Value init,
                             ValueRange inputs, ArrayRef<AffineMap> maps,
                             ArrayRef<utils::IteratorType> iterators,
                             BodyFn body) {
  return linalg::GenericOp::create(
             b, loc, init.getType(), inputs, init, maps, iterators,
             [&](OpBuilder &nb, Location l, ValueRange args) {
               linalg::YieldOp::create(nb, l, body(nb, l, args));
             })
      .getResult(0);
}

Value mlir::fa::buildSoftcap(OpBuilder &b, Location loc, double cap,
                             double scale, Value dot, Value *derivative,
                             double factor,
                             function_ref<Value(Value)> makeTanh) {
  // One op per statement: the IR's order must not depend on argument
  // evaluation.
  Value capFactor = f32Const(b, loc, cap * factor);
  Value ratio = f32Const(b, loc, scale / cap);
  Value x = arith::MulFOp::create(b, loc, dot, ratio);
  Value t =
      makeTanh ? makeTanh(x) : math::TanhOp::create(b, loc, x).getResult();
  Value s = arith::MulFOp::create(b, loc, capFactor, t);
  if (derivative) {
    Value one = f32Const(b, loc, 1.0);
    Value t2 = arith::MulFOp::create(b, loc, t, t);
    *derivative = arith::SubFOp::create(b, loc, one, t2);
  }
  return s;
}

Value mlir::fa::buildScore(OpBuilder &b, Location loc,
                           const ScoreVariant &variant, Value dot, Value bias,
                           Value slope, const ScorePositions &pos,
                           Value *derivative, Region *scoreModGrad,
                           bool wrtBias, bool unscaled) {
  Type f32 = b.getF32Type();
  // The scale's product may fuse with the terms added to it (one fma).
  auto contract = arith::FastMathFlags::contract;
  Value s;
  if (!variant.softcap)
    s = arith::MulFOp::create(b, loc, dot, f32Const(b, loc, variant.scale),
                              contract);
  // d s / d dot, by the chain rule through each step that is not additive.
  // The bias is added after the scale and the softcap, so only score_mod
  // and the masks act on its derivative.
  Value ds;
  if (derivative)
    ds = f32Const(b, loc, wrtBias || unscaled ? 1.0 : variant.scale);
  if (variant.softcap) {
    Value capDerivative;
    s = buildSoftcap(b, loc, variant.softcap.getValueAsDouble(), variant.scale,
                     dot, derivative && !wrtBias ? &capDerivative : nullptr);
    if (capDerivative)
      ds = arith::MulFOp::create(b, loc, ds, capDerivative);
  }
  if (slope) {
    Value dist = arith::SubIOp::create(b, loc, pos.queryAligned, pos.key);
    // |dist| < 2^31 (sequence lengths are 32-bit): i32 keeps the GPU's
    // index arithmetic 32-bit.
    Value dist32 = arith::IndexCastOp::create(b, loc, b.getI32Type(), dist);
    Value distF = arith::SIToFPOp::create(b, loc, f32, dist32);
    Value absDist = math::AbsFOp::create(b, loc, distF);
    Value penalty = arith::MulFOp::create(b, loc, slope, absDist, contract);
    s = arith::SubFOp::create(b, loc, s, penalty, contract);
  }
  if (bias)
    s = arith::AddFOp::create(b, loc, s, extToF32(b, loc, bias), contract);
  if (variant.scoreMod) {
    SmallVector<Value> args = {s, pos.batch, pos.head, pos.query, pos.key};
    llvm::append_range(args, variant.captures);
    s = inlineVariantRegion(b, *variant.scoreMod, args);
    if (derivative) {
      assert(scoreModGrad && "a score_mod derivative needs its region");
      ds = arith::MulFOp::create(b, loc, ds,
                                 inlineVariantRegion(b, *scoreModGrad, args));
    }
  }

  // causal and window (on query + diag, which the caller has), then
  // mask_mod.
  Value keep;
  Masks masks{variant.causal, variant.window};
  if (masks.any())
    keep = MaskBuilder(b, loc, masks, pos.key.getType())
               .keep(pos.query, pos.key, /*nk=*/Value(), /*diag=*/Value(),
                     pos.queryAligned);
  auto addMask = [&](Value m) {
    keep = keep ? arith::AndIOp::create(b, loc, keep, m).getResult() : m;
  };
  if (variant.maskMod) {
    SmallVector<Value> args = {pos.batch, pos.head, pos.query, pos.key};
    llvm::append_range(args, variant.captures);
    addMask(inlineVariantRegion(b, *variant.maskMod, args));
  }
  if (keep) {
    s = arith::SelectOp::create(
        b, loc, keep, s,
        f32Const(b, loc, -std::numeric_limits<double>::infinity()));
    if (derivative)
      ds = arith::SelectOp::create(b, loc, keep, ds, f32Const(b, loc, 0.0));
  }
  if (derivative)
    *derivative = ds;
  return s;
}

Value mlir::fa::buildPhiloxDropout(OpBuilder &b, Location loc, Value seed,
                                   double p, ArrayRef<Value> counter,
                                   bool scaled) {
  assert(counter.size() == 4 && "Philox4x32 takes four counter words");
  Type i32 = b.getI32Type(), i64 = b.getI64Type();
  auto c32 = [&](uint32_t v) -> Value {
    return arith::ConstantIntOp::create(b, loc, i32, static_cast<int32_t>(v));
  };
  Value c[4] = {counter[0], counter[1], counter[2], counter[3]};
  Value k0 = arith::TruncIOp::create(b, loc, i32, seed);
  Value k1 = arith::TruncIOp::create(
      b, loc, i32,
      arith::ShRUIOp::create(b, loc, seed,
                             arith::ConstantIntOp::create(b, loc, i64, 32)));
  // Philox4x32-10 (Salmon et al., SC'11).
  for (int round = 0; round < 10; ++round) {
    auto m0 = arith::MulUIExtendedOp::create(b, loc, c32(0xD2511F53), c[0]);
    auto m1 = arith::MulUIExtendedOp::create(b, loc, c32(0xCD9E8D57), c[2]);
    Value n0 = arith::XOrIOp::create(
        b, loc, arith::XOrIOp::create(b, loc, m1.getHigh(), c[1]), k0);
    Value n2 = arith::XOrIOp::create(
        b, loc, arith::XOrIOp::create(b, loc, m0.getHigh(), c[3]), k1);
    c[0] = n0;
    c[1] = m1.getLow();
    c[2] = n2;
    c[3] = m0.getLow();
    if (round < 9) {
      k0 = arith::AddIOp::create(b, loc, k0, c32(0x9E3779B9));
      k1 = arith::AddIOp::create(b, loc, k1, c32(0xBB67AE85));
    }
  }
  // 24 random bits as a uniform in [0, 1), exact in f32. (One op per
  // statement: the IR's order must not depend on argument evaluation.)
  Value bits = arith::ShRUIOp::create(b, loc, c[0], c32(8));
  Value bitsF = arith::UIToFPOp::create(b, loc, b.getF32Type(), bits);
  Value ulp = f32Const(b, loc, 1.0 / 16777216.0);
  Value uniform = arith::MulFOp::create(b, loc, bitsF, ulp);
  Value threshold = f32Const(b, loc, p);
  Value keep = arith::CmpFOp::create(b, loc, arith::CmpFPredicate::OGE, uniform,
                                     threshold);
  Value kept = f32Const(b, loc, scaled ? 1.0 / (1.0 - p) : 1.0);
  Value dropped = f32Const(b, loc, 0.0);
  return arith::SelectOp::create(b, loc, keep, kept, dropped);
}

Value mlir::fa::buildDropoutScale(OpBuilder &b, Location loc, Value seed,
                                  double p, Value batch, Value head,
                                  Value query, Value key) {
  auto word = [&](Value index) -> Value {
    return arith::IndexCastUIOp::create(b, loc, b.getI32Type(), index);
  };
  Value counter[4] = {word(key), word(query), word(head), word(batch)};
  return buildPhiloxDropout(b, loc, seed, p, counter);
}

//===----------------------------------------------------------------------===//
// Tiles
//===----------------------------------------------------------------------===//

SmallVector<Value> mlir::fa::buildDropoutTiles(OpBuilder &b, Location loc,
                                               ValueRange tiles, Value seed,
                                               double p, Value batch,
                                               Value head, Value q0, Value k0) {
  AffineMap id = dimsMap(b.getContext(), 2, {0, 1});
  SmallVector<AffineMap> maps(tiles.size(), id);
  auto generic = linalg::GenericOp::create(
      b, loc, tiles.getTypes(), ValueRange{}, tiles, maps,
      {utils::IteratorType::parallel, utils::IteratorType::parallel},
      [&](OpBuilder &nb, Location l, ValueRange args) {
        Value i =
            arith::AddIOp::create(nb, l, q0, linalg::IndexOp::create(nb, l, 0));
        Value j =
            arith::AddIOp::create(nb, l, k0, linalg::IndexOp::create(nb, l, 1));
        Value scale = buildDropoutScale(nb, l, seed, p, batch, head, i, j);
        SmallVector<Value> scaled;
        for (Value x : args)
          scaled.push_back(arith::MulFOp::create(nb, l, x, scale));
        linalg::YieldOp::create(nb, l, scaled);
      });
  return SmallVector<Value>(generic.getResults());
}

Value mlir::fa::buildDropoutTile(OpBuilder &b, Location loc, Value tile,
                                 Value seed, double p, Value batch, Value head,
                                 Value q0, Value k0) {
  return buildDropoutTiles(b, loc, tile, seed, p, batch, head, q0, k0)[0];
}

Value mlir::fa::extractRows(OpBuilder &b, Location loc, Value t, Value batch,
                            Value head, Value offset, Value size) {
  auto type = cast<RankedTensorType>(t.getType());
  int64_t d = type.getDimSize(3);
  SmallVector<OpFoldResult> offsets = {batch, head, offset, b.getIndexAttr(0)};
  SmallVector<OpFoldResult> sizes = {b.getIndexAttr(1), b.getIndexAttr(1), size,
                                     b.getIndexAttr(d)};
  SmallVector<OpFoldResult> strides(4, b.getIndexAttr(1));
  auto sliceType =
      RankedTensorType::get({ShapedType::kDynamic, d}, type.getElementType());
  return tensor::ExtractSliceOp::create(b, loc, sliceType, t, offsets, sizes,
                                        strides);
}

namespace {
/// The variant operands and attributes both attention ops share.
template <typename OpT>
ScoreTileOp createScoreTile(OpBuilder &b, Location loc, OpT op, Value qTile,
                            Value kTile, Value batch, Value head, Value q0,
                            Value k0, Value seqQ, Value seqKV,
                            ScoreDerivative derivative) {
  auto tileType = RankedTensorType::get(
      {ShapedType::kDynamic, ShapedType::kDynamic}, b.getF32Type());
  bool withDerivative = derivative != ScoreDerivative::None;
  return ScoreTileOp::create(
      b, loc, tileType, withDerivative ? Type(tileType) : Type(), qTile, kTile,
      batch, head, q0, k0, seqQ, seqKV, op.getBias(), op.getAlibiSlopes(),
      op.getCaptures(), b.getF32FloatAttr(op.getScaleOrDefault()),
      op.getCausalAttr(), op.getWindowAttr(), op.getSoftcapAttr(),
      derivative == ScoreDerivative::Bias ? b.getUnitAttr() : UnitAttr());
}
} // namespace

ScoreTileOp mlir::fa::buildScoreTile(OpBuilder &b, Location loc,
                                     Operation *attention, Value qTile,
                                     Value kTile, Value batch, Value head,
                                     Value q0, Value k0, Value seqQ,
                                     Value seqKV, ScoreDerivative derivative) {
  ScoreTileOp tile;
  IRMapping mapping;
  if (auto op = dyn_cast<AttentionOp>(attention)) {
    tile = createScoreTile(b, loc, op, qTile, kTile, batch, head, q0, k0, seqQ,
                           seqKV, derivative);
    op.getScoreMod().cloneInto(&tile.getScoreMod(), mapping);
    op.getMaskMod().cloneInto(&tile.getMaskMod(), mapping);
    return tile;
  }
  auto op = cast<AttentionGradOp>(attention);
  tile = createScoreTile(b, loc, op, qTile, kTile, batch, head, q0, k0, seqQ,
                         seqKV, derivative);
  op.getScoreMod().cloneInto(&tile.getScoreMod(), mapping);
  op.getMaskMod().cloneInto(&tile.getMaskMod(), mapping);
  if (derivative != ScoreDerivative::None)
    op.getScoreModGrad().cloneInto(&tile.getScoreModGrad(), mapping);
  return tile;
}

std::pair<Value, Value>
mlir::fa::buildVisibleKeys(OpBuilder &b, Location loc, CausalKindAttr causal,
                           DenseI64ArrayAttr window, Value q0, Value rows,
                           Value seqQ, Value seqKV, int64_t blockKV) {
  MaskBuilder masks(b, loc, {causal, window}, b.getIndexType());
  Value qEnd = arith::AddIOp::create(b, loc, q0, rows);
  Value diag = masks.diagonal(seqQ, seqKV);
  RowRange keys = masks.visibleKeys(q0, qEnd, seqKV, diag, blockKV);
  return {keys.begin, keys.end};
}

std::pair<Value, Value>
mlir::fa::buildVisibleQueries(OpBuilder &b, Location loc, CausalKindAttr causal,
                              DenseI64ArrayAttr window, Value k0, Value cols,
                              Value seqQ, Value seqKV) {
  MaskBuilder masks(b, loc, {causal, window}, b.getIndexType());
  Value kEnd = arith::AddIOp::create(b, loc, k0, cols);
  Value diag = masks.diagonal(seqQ, seqKV);
  RowRange queries = masks.visibleQueries(k0, kEnd, seqQ, diag);
  return {queries.begin, queries.end};
}
