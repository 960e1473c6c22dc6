//===- FAToLinalg.cpp - fa.score_tile to linalg ---------------------------===//

#include "fa/Conversion/Passes.h"
#include "fa/Dialect/FA/IR/FAOps.h"
#include "fa/Transforms/Builders.h"
#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"
#include "mlir/IR/PatternMatch.h"

namespace mlir::fa {
#define GEN_PASS_DEF_CONVERTFATOLINALG
#include "fa/Conversion/Passes.h.inc"
} // namespace mlir::fa

using namespace mlir;
using namespace mlir::fa;

namespace {

using utils::IteratorType;

/// The element of a broadcastable operand at `indices` (size-1 dims read 0).
Value extractBroadcast(OpBuilder &b, Location loc, Value t,
                       ArrayRef<Value> indices) {
  auto type = cast<RankedTensorType>(t.getType());
  SmallVector<Value> idx;
  for (auto [d, index] : llvm::enumerate(indices))
    idx.push_back(type.getDimSize(d) == 1
                      ? arith::ConstantIndexOp::create(b, loc, 0)
                      : index);
  return tensor::ExtractOp::create(b, loc, t, idx);
}

/// The scores of `op` and, when it has one, their derivative.
SmallVector<Value> lowerScoreTile(OpBuilder &b, ScoreTileOp op) {
  Location loc = op.getLoc();
  MLIRContext *ctx = b.getContext();
  Value q = op.getQuery(), k = op.getKey();
  OpFoldResult rows = tensor::getMixedSize(b, loc, q, 0);
  OpFoldResult cols = tensor::getMixedSize(b, loc, k, 0);

  // Q K^T over (r, c, d), accumulated in f32.
  Value dot = buildGeneric(
      b, loc, filledF32(b, loc, {rows, cols}, 0.0), {q, k},
      {dimsMap(ctx, 3, {0, 2}), dimsMap(ctx, 3, {1, 2}),
       dimsMap(ctx, 3, {0, 1})},
      {IteratorType::parallel, IteratorType::parallel, IteratorType::reduction},
      [](OpBuilder &nb, Location l, ValueRange args) -> Value {
        Value lhs = extToF32(nb, l, args[0]);
        Value rhs = extToF32(nb, l, args[1]);
        Value prod = arith::MulFOp::create(nb, l, lhs, rhs);
        // The dot product's order is free (it is f32 accumulation of a
        // tile): let the backend reassociate it into vector lanes.
        auto fmf = arith::FastMathFlagsAttr::get(
            nb.getContext(),
            arith::FastMathFlags::reassoc | arith::FastMathFlags::contract);
        return arith::AddFOp::create(nb, l, args[2], prod, fmf);
      });

  ScoreVariant variant = ScoreVariant::get(op, op.getScale().convertToDouble());
  Value diagOffset;
  if (variant.needsDiagonal())
    diagOffset =
        arith::SubIOp::create(b, loc, op.getKeyLen(), op.getQueryLen());
  Value bias = op.getBias(), slopes = op.getAlibiSlopes();
  bool withDerivative = static_cast<bool>(op.getDerivative());
  SmallVector<Value> inits = {dot};
  if (withDerivative)
    inits.push_back(
        tensor::EmptyOp::create(b, loc, {rows, cols}, b.getF32Type()));
  AffineMap id = dimsMap(ctx, 2, {0, 1});
  auto generic = linalg::GenericOp::create(
      b, loc, ValueRange(inits).getTypes(), ValueRange(), inits,
      SmallVector<AffineMap>(inits.size(), id),
      {IteratorType::parallel, IteratorType::parallel},
      [&](OpBuilder &nb, Location l, ValueRange args) {
        ScorePositions pos;
        pos.batch = op.getBatch();
        pos.head = op.getHead();
        Value r = linalg::IndexOp::create(nb, l, 0);
        Value c = linalg::IndexOp::create(nb, l, 1);
        pos.query = arith::AddIOp::create(nb, l, op.getQueryOffset(), r);
        pos.key = arith::AddIOp::create(nb, l, op.getKeyOffset(), c);
        if (diagOffset)
          pos.queryAligned =
              arith::AddIOp::create(nb, l, pos.query, diagOffset);
        Value biasValue, slope;
        if (bias)
          biasValue = extractBroadcast(
              nb, l, bias, {pos.batch, pos.head, pos.query, pos.key});
        if (slopes) {
          bool perBatch =
              cast<RankedTensorType>(slopes.getType()).getRank() == 2;
          slope = perBatch
                      ? extractBroadcast(nb, l, slopes, {pos.batch, pos.head})
                      : extractBroadcast(nb, l, slopes, {pos.head});
        }
        Value derivative;
        Value score = buildScore(
            nb, l, variant, args[0], biasValue, slope, pos,
            withDerivative ? &derivative : nullptr,
            op.getScoreModGrad().empty() ? nullptr : &op.getScoreModGrad(),
            op.getBiasDerivative());
        SmallVector<Value> yields = {score};
        if (withDerivative)
          yields.push_back(derivative);
        linalg::YieldOp::create(nb, l, yields);
      });
  return llvm::to_vector_of<Value>(generic.getResults());
}

struct ConvertFAToLinalgPass
    : public mlir::fa::impl::ConvertFAToLinalgBase<ConvertFAToLinalgPass> {
  void runOnOperation() override {
    SmallVector<ScoreTileOp> ops;
    getOperation()->walk([&](ScoreTileOp op) { ops.push_back(op); });
    IRRewriter rewriter(&getContext());
    for (ScoreTileOp op : ops) {
      rewriter.setInsertionPoint(op);
      SmallVector<Value> results = lowerScoreTile(rewriter, op);
      for (auto [result, type] : llvm::zip(results, op->getResultTypes()))
        if (result.getType() != type)
          result = tensor::CastOp::create(rewriter, op.getLoc(), type, result);
      rewriter.replaceOp(op, results);
    }
  }
};

} // namespace
