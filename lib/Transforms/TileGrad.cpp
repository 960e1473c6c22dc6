//===- TileGrad.cpp - Tile fa.attention_grad ------------------------------===//
//
// fa.attention_grad -> FlashAttention-2's backward on tensors: Dsum =
// rowsum(dO * O), then dK/dV with a K/V tile resident and a loop over the Q
// tiles that see it, then dQ with a Q tile resident and a loop over the K/V
// tiles it sees. P is recomputed from the saved lse in both; nothing of size
// Nq x Nk is ever built.
//
//===----------------------------------------------------------------------===//

#include "fa/Dialect/FA/IR/FAOps.h"
#include "fa/Transforms/Builders.h"
#include "fa/Transforms/Passes.h"
#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Arith/Utils/Utils.h"
#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/Dialect/Math/IR/Math.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"
#include "mlir/IR/PatternMatch.h"

#include <limits>

namespace mlir::fa {
#define GEN_PASS_DEF_FATILEGRAD
#include "fa/Transforms/Passes.h.inc"
} // namespace mlir::fa

using namespace mlir;
using namespace mlir::fa;

namespace {

using utils::IteratorType;
constexpr IteratorType kPar = IteratorType::parallel;
constexpr IteratorType kRed = IteratorType::reduction;
constexpr double kNegInf = -std::numeric_limits<double>::infinity();

class GradTiler {
public:
  GradTiler(OpBuilder &b, AttentionGradOp op, int64_t blockQ, int64_t blockKV)
      : b(b), op(op), loc(op.getLoc()), ctx(op.getContext()), blockQ(blockQ),
        blockKV(blockKV) {}

  /// dQ, dK, dV.
  SmallVector<Value> build();

private:
  Value cst(int64_t v) { return arith::ConstantIndexOp::create(b, loc, v); }
  Value dim(Value t, int64_t i) {
    return getValueOrCreateConstantIndexOp(b, loc,
                                           tensor::getMixedSize(b, loc, t, i));
  }
  Value minIdx(Value x, Value y) {
    return arith::MinSIOp::create(b, loc, x, y);
  }
  int64_t headDim(Value t) {
    return cast<RankedTensorType>(t.getType()).getDimSize(3);
  }
  /// Elements [offset, offset + size) of row (batch, head) of a [B, H, N]
  /// tensor.
  Value extractVector(Value t, Value batch, Value head, Value offset,
                      Value size);
  /// Writes `tile` ([size, D]) into rows [offset, offset + size) of
  /// (batch, head) of `dest` inside an scf.forall terminator.
  void insertRows(Value tile, Value dest, Value batch, Value head, Value offset,
                  Value size);
  /// A [rows, d] f32 accumulator cast to the element type.
  Value toElementType(Value acc, Value rows, int64_t d);

  /// Dsum[b, h, i] = sum_e dO * O, in f32.
  Value buildDsum();

  /// What a Q tile reads: rows [q0, q0 + rows) of query head `head` of
  /// batch `batch` of Q and dO, and of lse and Dsum.
  struct QueryTile {
    Value rows, q, dO, lse, dsum;
  };
  QueryTile extractQueryTile(Value dsum, Value batch, Value head, Value q0);

  /// Everything one (Q tile, K/V tile) pair contributes: P (times the
  /// dropout factors, as dV needs it) and
  /// dDot = P * (dP - Dsum) * d score / d dot (or d score / d bias with
  /// ScoreDerivative::Bias), both [rows, cols].
  std::pair<Value, Value>
  buildTilePair(const QueryTile &qt, Value kTile, Value vTile, Value batch,
                Value head, Value q0, Value k0,
                ScoreDerivative derivative = ScoreDerivative::Dot);

  /// acc[x, e] += sum_y a[y, x] * t[y, e] (transposeA) or
  /// acc[x, e] += sum_y a[x, y] * t[y, e].
  Value accumulateProduct(Value acc, Value a, Value t, bool transposeA);

  SmallVector<Value> buildKeyValueGrads(Value dsum);
  Value buildQueryGrad(Value dsum);
  Value buildBiasGrad(Value dsum);

  OpBuilder &b;
  AttentionGradOp op;
  Location loc;
  MLIRContext *ctx;
  int64_t blockQ, blockKV;
  Value batch, headsQ, headsKV, seqQ, seqKV, group;
};

Value GradTiler::extractVector(Value t, Value batchIdx, Value head,
                               Value offset, Value size) {
  OpFoldResult one = b.getIndexAttr(1);
  auto type = RankedTensorType::get({ShapedType::kDynamic}, b.getF32Type());
  return tensor::ExtractSliceOp::create(
      b, loc, type, t, ArrayRef<OpFoldResult>{batchIdx, head, offset},
      ArrayRef<OpFoldResult>{one, one, size},
      ArrayRef<OpFoldResult>{one, one, one});
}

void GradTiler::insertRows(Value tile, Value dest, Value batchIdx, Value head,
                           Value offset, Value size) {
  OpFoldResult one = b.getIndexAttr(1), zero = b.getIndexAttr(0);
  tensor::ParallelInsertSliceOp::create(
      b, loc, tile, dest, ArrayRef<OpFoldResult>{batchIdx, head, offset, zero},
      ArrayRef<OpFoldResult>{one, one, size, b.getIndexAttr(headDim(dest))},
      ArrayRef<OpFoldResult>{one, one, one, one});
}

Value GradTiler::toElementType(Value acc, Value rows, int64_t d) {
  Type et = op.getElementType();
  if (et.isF32())
    return acc;
  AffineMap id = dimsMap(ctx, 2, {0, 1});
  return buildGeneric(
      b, loc, tensor::EmptyOp::create(b, loc, {rows, b.getIndexAttr(d)}, et),
      acc, {id, id}, {kPar, kPar},
      [&](OpBuilder &nb, Location l, ValueRange args) -> Value {
        return arith::TruncFOp::create(nb, l, et, args[0]);
      });
}

GradTiler::QueryTile GradTiler::extractQueryTile(Value dsum, Value batchIdx,
                                                 Value head, Value q0) {
  QueryTile t;
  t.rows = minIdx(cst(blockQ), arith::SubIOp::create(b, loc, seqQ, q0));
  t.q = extractRows(b, loc, op.getQuery(), batchIdx, head, q0, t.rows);
  t.dO = extractRows(b, loc, op.getGradOutput(), batchIdx, head, q0, t.rows);
  t.lse = extractVector(op.getLse(), batchIdx, head, q0, t.rows);
  t.dsum = extractVector(dsum, batchIdx, head, q0, t.rows);
  return t;
}

Value GradTiler::buildDsum() {
  Value o = op.getOutput(), dO = op.getGradOutput();
  SmallVector<OpFoldResult> sizes = tensor::getMixedSizes(b, loc, dO);
  sizes.pop_back();
  AffineMap all = dimsMap(ctx, 4, {0, 1, 2, 3});
  return buildGeneric(
      b, loc, filledF32(b, loc, sizes, 0.0), {dO, o},
      {all, all, dimsMap(ctx, 4, {0, 1, 2})}, {kPar, kPar, kPar, kRed},
      [](OpBuilder &nb, Location l, ValueRange args) -> Value {
        Value prod = arith::MulFOp::create(nb, l, extToF32(nb, l, args[0]),
                                           extToF32(nb, l, args[1]));
        return arith::AddFOp::create(nb, l, args[2], prod);
      });
}

std::pair<Value, Value> GradTiler::buildTilePair(const QueryTile &qt,
                                                 Value kTile, Value vTile,
                                                 Value batchIdx, Value head,
                                                 Value q0, Value k0,
                                                 ScoreDerivative derivative) {
  ScoreTileOp scores = buildScoreTile(b, loc, op, qt.q, kTile, batchIdx, head,
                                      q0, k0, seqQ, seqKV, derivative);
  Value s = scores.getResult(), ds = scores.getDerivative();
  AffineMap tileMap = dimsMap(ctx, 2, {0, 1}), rowMap = dimsMap(ctx, 2, {0});

  // P = exp(s - lse); 0 for a fully masked row (lse = -inf).
  Value p = buildGeneric(
      b, loc, s, qt.lse, {rowMap, tileMap}, {kPar, kPar},
      [](OpBuilder &nb, Location l, ValueRange args) -> Value {
        Value empty = arith::CmpFOp::create(nb, l, arith::CmpFPredicate::OEQ,
                                            args[0], f32Const(nb, l, kNegInf));
        Value e = math::ExpOp::create(
            nb, l, arith::SubFOp::create(nb, l, args[1], args[0]));
        return arith::SelectOp::create(nb, l, empty, f32Const(nb, l, 0.0), e);
      });

  // dP = dO V^T over (r, c, e).
  OpFoldResult rows = tensor::getMixedSize(b, loc, qt.q, 0);
  OpFoldResult cols = tensor::getMixedSize(b, loc, kTile, 0);
  Value dp = buildGeneric(
      b, loc, filledF32(b, loc, {rows, cols}, 0.0), {qt.dO, vTile},
      {dimsMap(ctx, 3, {0, 2}), dimsMap(ctx, 3, {1, 2}),
       dimsMap(ctx, 3, {0, 1})},
      {kPar, kPar, kRed},
      [](OpBuilder &nb, Location l, ValueRange args) -> Value {
        Value prod = arith::MulFOp::create(nb, l, extToF32(nb, l, args[0]),
                                           extToF32(nb, l, args[1]));
        auto fmf = arith::FastMathFlagsAttr::get(
            nb.getContext(),
            arith::FastMathFlags::reassoc | arith::FastMathFlags::contract);
        return arith::AddFOp::create(nb, l, args[2], prod, fmf);
      });

  // With dropout (Z: 0 or 1 / (1 - p), the forward's), O = (P * Z) V, so
  // dV takes P * Z and dP = (dO V^T) * Z; Dsum = rowsum(dO * O) still equals
  // rowsum(P * dP). Both products come from one evaluation of Z.
  Value pz = p;
  if (auto dropout = op.getDropoutPAttr()) {
    SmallVector<Value> scaled =
        buildDropoutTiles(b, loc, {p, dp}, op.getDropoutSeed(),
                          dropout.getValueAsDouble(), batchIdx, head, q0, k0);
    pz = scaled[0];
    dp = scaled[1];
  }

  // dDot = P * (dP - Dsum) * d s / d dot.
  Value dDot = buildGeneric(
      b, loc, dp, {p, qt.dsum, ds}, {tileMap, rowMap, tileMap, tileMap},
      {kPar, kPar}, [](OpBuilder &nb, Location l, ValueRange args) -> Value {
        Value centered = arith::SubFOp::create(nb, l, args[3], args[1]);
        Value dsScore = arith::MulFOp::create(nb, l, args[0], centered);
        return arith::MulFOp::create(nb, l, dsScore, args[2]);
      });
  return {pz, dDot};
}

Value GradTiler::accumulateProduct(Value acc, Value a, Value t,
                                   bool transposeA) {
  // (x, y, e) with e innermost: contiguous in t and acc, so the host loop
  // vectorizes.
  AffineMap aMap =
      transposeA ? dimsMap(ctx, 3, {1, 0}) : dimsMap(ctx, 3, {0, 1});
  return buildGeneric(b, loc, acc, {a, t},
                      {aMap, dimsMap(ctx, 3, {1, 2}), dimsMap(ctx, 3, {0, 2})},
                      {kPar, kRed, kPar},
                      [](OpBuilder &nb, Location l, ValueRange args) -> Value {
                        Value prod = arith::MulFOp::create(
                            nb, l, args[0], extToF32(nb, l, args[1]));
                        return arith::AddFOp::create(nb, l, args[2], prod);
                      });
}

SmallVector<Value> GradTiler::buildKeyValueGrads(Value dsum) {
  Value k = op.getKey(), v = op.getValue();
  Type et = op.getElementType();
  int64_t d = headDim(k), dv = headDim(v);
  SmallVector<OpFoldResult> kSizes = tensor::getMixedSizes(b, loc, k);
  SmallVector<OpFoldResult> vSizes = tensor::getMixedSizes(b, loc, v);
  Value numKVTiles = arith::CeilDivUIOp::create(b, loc, seqKV, cst(blockKV));
  auto forall = scf::ForallOp::create(
      b, loc, ArrayRef<OpFoldResult>{batch, headsKV, numKVTiles},
      ValueRange{tensor::EmptyOp::create(b, loc, kSizes, et),
                 tensor::EmptyOp::create(b, loc, vSizes, et)},
      std::nullopt);
  OpBuilder::InsertionGuard guard(b);
  b.setInsertionPointToStart(forall.getBody());
  Value bi = forall.getInductionVar(0), hk = forall.getInductionVar(1);
  Value k0 =
      arith::MulIOp::create(b, loc, forall.getInductionVar(2), cst(blockKV));
  Value cols = minIdx(cst(blockKV), arith::SubIOp::create(b, loc, seqKV, k0));
  Value kTile = extractRows(b, loc, k, bi, hk, k0, cols);
  Value vTile = extractRows(b, loc, v, bi, hk, k0, cols);
  auto [qBegin, qEnd] = buildVisibleQueries(
      b, loc, op.getCausalAttr(), op.getWindowAttr(), k0, cols, seqQ, seqKV);

  // Over the query heads sharing this K/V head, then their visible Q tiles.
  SmallVector<Value> zeros = {
      filledF32(b, loc, {cols, b.getIndexAttr(d)}, 0.0),
      filledF32(b, loc, {cols, b.getIndexAttr(dv)}, 0.0)};
  auto headLoop = scf::ForOp::create(
      b, loc, cst(0), group, cst(1), zeros,
      [&](OpBuilder &hb, Location, Value gi, ValueRange headIters) {
        OpBuilder::InsertionGuard g(b);
        b.setInsertionPoint(hb.getInsertionBlock(), hb.getInsertionPoint());
        Value h = arith::AddIOp::create(
            b, loc, arith::MulIOp::create(b, loc, hk, group), gi);
        auto qLoop = scf::ForOp::create(
            b, loc, qBegin, qEnd, cst(blockQ), headIters,
            [&](OpBuilder &qb, Location, Value q0, ValueRange iters) {
              OpBuilder::InsertionGuard g2(b);
              b.setInsertionPoint(qb.getInsertionBlock(),
                                  qb.getInsertionPoint());
              QueryTile qt = extractQueryTile(dsum, bi, h, q0);
              auto [p, dDot] = buildTilePair(qt, kTile, vTile, bi, h, q0, k0);
              Value dK = accumulateProduct(iters[0], dDot, qt.q,
                                           /*transposeA=*/true);
              Value dV = accumulateProduct(iters[1], p, qt.dO,
                                           /*transposeA=*/true);
              scf::YieldOp::create(b, loc, ValueRange{dK, dV});
            });
        scf::YieldOp::create(b, loc, qLoop.getResults());
      });

  Value dKTile = toElementType(headLoop.getResult(0), cols, d);
  Value dVTile = toElementType(headLoop.getResult(1), cols, dv);
  b.setInsertionPointToStart(forall.getTerminator().getBody());
  insertRows(dKTile, forall.getRegionIterArgs()[0], bi, hk, k0, cols);
  insertRows(dVTile, forall.getRegionIterArgs()[1], bi, hk, k0, cols);
  return llvm::to_vector_of<Value>(forall.getResults());
}

Value GradTiler::buildQueryGrad(Value dsum) {
  Value q = op.getQuery(), k = op.getKey(), v = op.getValue();
  int64_t d = headDim(q);
  Value numQTiles = arith::CeilDivUIOp::create(b, loc, seqQ, cst(blockQ));
  auto forall = scf::ForallOp::create(
      b, loc, ArrayRef<OpFoldResult>{batch, headsQ, numQTiles},
      ValueRange{tensor::EmptyOp::create(
          b, loc, tensor::getMixedSizes(b, loc, q), op.getElementType())},
      std::nullopt);
  OpBuilder::InsertionGuard guard(b);
  b.setInsertionPointToStart(forall.getBody());
  Value bi = forall.getInductionVar(0), h = forall.getInductionVar(1);
  Value q0 =
      arith::MulIOp::create(b, loc, forall.getInductionVar(2), cst(blockQ));
  Value hk = arith::DivUIOp::create(b, loc, h, group);
  QueryTile qt = extractQueryTile(dsum, bi, h, q0);
  Value rows = qt.rows;
  auto [kvBegin, kvEnd] =
      buildVisibleKeys(b, loc, op.getCausalAttr(), op.getWindowAttr(), q0, rows,
                       seqQ, seqKV, blockKV);

  auto kvLoop = scf::ForOp::create(
      b, loc, kvBegin, kvEnd, cst(blockKV),
      ValueRange{filledF32(b, loc, {rows, b.getIndexAttr(d)}, 0.0)},
      [&](OpBuilder &lb, Location, Value k0, ValueRange iters) {
        OpBuilder::InsertionGuard g(b);
        b.setInsertionPoint(lb.getInsertionBlock(), lb.getInsertionPoint());
        Value cols =
            minIdx(cst(blockKV), arith::SubIOp::create(b, loc, seqKV, k0));
        Value kTile = extractRows(b, loc, k, bi, hk, k0, cols);
        Value vTile = extractRows(b, loc, v, bi, hk, k0, cols);
        Value dDot = buildTilePair(qt, kTile, vTile, bi, h, q0, k0).second;
        Value dQ = accumulateProduct(iters[0], dDot, kTile,
                                     /*transposeA=*/false);
        scf::YieldOp::create(b, loc, dQ);
      });

  Value dQTile = toElementType(kvLoop.getResult(0), rows, d);
  b.setInsertionPointToStart(forall.getTerminator().getBody());
  insertRows(dQTile, forall.getRegionIterArgs()[0], bi, h, q0, rows);
  return forall.getResult(0);
}

Value GradTiler::buildBiasGrad(Value dsum) {
  // One block of dBias per (bias batch, bias head, Q tile), over the bias's
  // own sizes (1 where it broadcasts). A block loops over every (b, h, Q
  // tile, K/V tile) that adds into it, so the sums over broadcast dimensions
  // need no atomics; its accumulator is [rows or 1, Nk or 1] in f32.
  Value k = op.getKey(), v = op.getValue(), bias = op.getBias();
  auto biasType = cast<RankedTensorType>(bias.getType());
  auto broadcast = [&](int64_t d) { return biasType.getDimSize(d) == 1; };
  Value one = cst(1);
  Value biasBatch = broadcast(0) ? one : batch;
  Value biasHeads = broadcast(1) ? one : headsQ;
  Value numQTiles = one;
  if (!broadcast(2))
    numQTiles = arith::CeilDivUIOp::create(b, loc, seqQ, cst(blockQ));
  auto forall = scf::ForallOp::create(
      b, loc, ArrayRef<OpFoldResult>{biasBatch, biasHeads, numQTiles},
      ValueRange{tensor::EmptyOp::create(b, loc,
                                         tensor::getMixedSizes(b, loc, bias),
                                         biasType.getElementType())},
      std::nullopt);
  OpBuilder::InsertionGuard guard(b);
  b.setInsertionPointToStart(forall.getBody());
  Value bb = forall.getInductionVar(0), hh = forall.getInductionVar(1);
  Value outRow =
      arith::MulIOp::create(b, loc, forall.getInductionVar(2), cst(blockQ));
  Value outRows = one;
  if (!broadcast(2))
    outRows = minIdx(cst(blockQ), arith::SubIOp::create(b, loc, seqQ, outRow));
  Value outCols = broadcast(3) ? one : seqKV;
  SmallVector<OpFoldResult> accSizes = {outRows, outCols};

  // The batches, heads and query rows that add into this block.
  Value bBegin = broadcast(0) ? cst(0) : bb;
  Value bEnd = broadcast(0) ? batch : arith::AddIOp::create(b, loc, bb, one);
  Value hBegin = broadcast(1) ? cst(0) : hh;
  Value hEnd = broadcast(1) ? headsQ : arith::AddIOp::create(b, loc, hh, one);
  Value qBegin = broadcast(2) ? cst(0) : outRow;
  Value qEnd = broadcast(2) ? seqQ : arith::AddIOp::create(b, loc, outRow, one);

  // A tile adds into the block's rows (or its one row) and columns (or its
  // one column): the broadcast dimensions are reductions.
  AffineMap tileMap = dimsMap(ctx, 2, {0, 1});
  AffineExpr zero = getAffineConstantExpr(0, ctx);
  AffineMap accMap =
      AffineMap::get(2, 0,
                     {broadcast(2) ? zero : getAffineDimExpr(0, ctx),
                      broadcast(3) ? zero : getAffineDimExpr(1, ctx)},
                     ctx);
  SmallVector<IteratorType> accIterators = {broadcast(2) ? kRed : kPar,
                                            broadcast(3) ? kRed : kPar};

  using LoopBody = function_ref<Value(Value, Value)>;
  auto loop = [&](Value lo, Value hi, Value step, Value init, LoopBody body) {
    auto forOp = scf::ForOp::create(
        b, loc, lo, hi, step, init,
        [&](OpBuilder &lb, Location, Value iv, ValueRange iters) {
          OpBuilder::InsertionGuard g(b);
          b.setInsertionPoint(lb.getInsertionBlock(), lb.getInsertionPoint());
          scf::YieldOp::create(b, loc, body(iv, iters[0]));
        });
    return forOp.getResult(0);
  };
  auto perKVTile = [&](Value bi, Value h, Value hk, Value q0,
                       const QueryTile &qt, Value k0, Value acc) -> Value {
    Value cols = minIdx(cst(blockKV), arith::SubIOp::create(b, loc, seqKV, k0));
    Value kTile = extractRows(b, loc, k, bi, hk, k0, cols);
    Value vTile = extractRows(b, loc, v, bi, hk, k0, cols);
    Value grad =
        buildTilePair(qt, kTile, vTile, bi, h, q0, k0, ScoreDerivative::Bias)
            .second;
    OpFoldResult c0 = b.getIndexAttr(0), c1 = b.getIndexAttr(1);
    SmallVector<OpFoldResult> offsets = {c0, broadcast(3) ? c0 : k0};
    SmallVector<OpFoldResult> sizes = {outRows, broadcast(3) ? one : cols};
    SmallVector<OpFoldResult> strides(2, c1);
    Value slice =
        tensor::ExtractSliceOp::create(b, loc, acc, offsets, sizes, strides);
    Value sum =
        buildGeneric(b, loc, slice, grad, {tileMap, accMap}, accIterators,
                     [](OpBuilder &nb, Location l, ValueRange args) -> Value {
                       return arith::AddFOp::create(nb, l, args[0], args[1]);
                     });
    return tensor::InsertSliceOp::create(b, loc, sum, acc, offsets, sizes,
                                         strides);
  };
  auto perQTile = [&](Value bi, Value h, Value q0, Value acc) -> Value {
    Value hk = arith::DivUIOp::create(b, loc, h, group);
    QueryTile qt = extractQueryTile(dsum, bi, h, q0);
    auto [kvBegin, kvEnd] =
        buildVisibleKeys(b, loc, op.getCausalAttr(), op.getWindowAttr(), q0,
                         qt.rows, seqQ, seqKV, blockKV);
    return loop(kvBegin, kvEnd, cst(blockKV), acc, [&](Value k0, Value a) {
      return perKVTile(bi, h, hk, q0, qt, k0, a);
    });
  };
  Value acc =
      loop(bBegin, bEnd, one, filledF32(b, loc, accSizes, 0.0),
           [&](Value bi, Value accB) {
             return loop(hBegin, hEnd, one, accB, [&](Value h, Value accH) {
               return loop(qBegin, qEnd, cst(blockQ), accH,
                           [&](Value q0, Value accQ) {
                             return perQTile(bi, h, q0, accQ);
                           });
             });
           });

  // Into the bias's element type, then into the block of dBias.
  Type et = biasType.getElementType();
  Value block = acc;
  if (!et.isF32())
    block =
        buildGeneric(b, loc, tensor::EmptyOp::create(b, loc, accSizes, et), acc,
                     {tileMap, tileMap}, {kPar, kPar},
                     [&](OpBuilder &nb, Location l, ValueRange args) -> Value {
                       return arith::TruncFOp::create(nb, l, et, args[0]);
                     });
  b.setInsertionPointToStart(forall.getTerminator().getBody());
  OpFoldResult c0 = b.getIndexAttr(0), c1 = b.getIndexAttr(1);
  tensor::ParallelInsertSliceOp::create(
      b, loc, block, forall.getRegionIterArgs()[0],
      ArrayRef<OpFoldResult>{bb, hh, broadcast(2) ? c0 : outRow, c0},
      ArrayRef<OpFoldResult>{c1, c1, outRows, outCols},
      ArrayRef<OpFoldResult>{c1, c1, c1, c1});
  return forall.getResult(0);
}

SmallVector<Value> GradTiler::build() {
  Value q = op.getQuery(), k = op.getKey();
  batch = dim(q, 0);
  headsQ = dim(q, 1);
  headsKV = dim(k, 1);
  seqQ = dim(q, 2);
  seqKV = dim(k, 2);
  int64_t g = op.getHeadGroupSize();
  group = ShapedType::isDynamic(g)
              ? arith::DivUIOp::create(b, loc, headsQ, headsKV).getResult()
              : cst(g);

  Value dsum = buildDsum();
  SmallVector<Value> kv = buildKeyValueGrads(dsum);
  Value dQ = buildQueryGrad(dsum);
  SmallVector<Value> grads = {dQ, kv[0], kv[1]};
  if (op.getGradBias())
    grads.push_back(buildBiasGrad(dsum));
  return castToTypes(b, loc, grads, op->getResultTypes());
}

struct FATileGradPass : public mlir::fa::impl::FATileGradBase<FATileGradPass> {
  using Base::Base;
  void runOnOperation() override {
    if (failed(
            checkBlockSizes(getOperation(), "fa-tile-grad", blockQ, blockKV)))
      return signalPassFailure();
    SmallVector<AttentionGradOp> ops;
    getOperation()->walk([&](AttentionGradOp op) { ops.push_back(op); });
    IRRewriter rewriter(&getContext());
    for (AttentionGradOp op : ops) {
      if (!op.getScoreMod().empty() && op.getScoreModGrad().empty()) {
        op.emitOpError("score_mod has no score_mod_grad region; run "
                       "fa-differentiate-score-mod first");
        return signalPassFailure();
      }
      rewriter.setInsertionPoint(op);
      rewriter.replaceOp(op, GradTiler(rewriter, op, blockQ, blockKV).build());
    }
  }
};

} // namespace
