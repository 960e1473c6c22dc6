//===- OnlineSoftmax.cpp - One pass over K/V tiles ------------------------===//
//
// Fuses fa-tile's two softmax loops (row max, then row sum and P V) into
// one loop that carries the running max and rescales what it has summed so
// far whenever the max grows:
//
//   m' = max(m, rowmax(s))      alpha = exp(m - m')   (1 while m' = -inf)
//   l' = alpha * l + rowsum(exp(s - m'))
//   acc' = alpha * acc + exp(s - m') V
//
// The sum loop's body is reused as is: its uses of the final row max become
// uses of m', and its uses of l and acc become uses of the rescaled values.
//
//===----------------------------------------------------------------------===//

#include "fa/Dialect/FA/IR/FAOps.h"
#include "fa/Transforms/Builders.h"
#include "fa/Transforms/Passes.h"
#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/Dialect/Math/IR/Math.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"
#include "mlir/Dialect/Utils/StaticValueUtils.h"
#include "mlir/IR/IRMapping.h"
#include "mlir/IR/PatternMatch.h"

#include <limits>

namespace mlir::fa {
#define GEN_PASS_DEF_FAONLINESOFTMAX
#include "fa/Transforms/Passes.h.inc"
} // namespace mlir::fa

using namespace mlir;
using namespace mlir::fa;

namespace {

using utils::IteratorType;
constexpr double kNegInf = -std::numeric_limits<double>::infinity();

/// The row-sum loop that consumes `maxLoop`'s result, or a diagnostic.
FailureOr<scf::ForOp> findSumLoop(scf::ForOp maxLoop) {
  if (maxLoop.getNumResults() != 1)
    return maxLoop.emitOpError("fa-online-softmax: a row-max loop must carry "
                               "exactly the running max");
  for (Operation *user : maxLoop.getResult(0).getUsers()) {
    auto sumLoop = user->getParentOfType<scf::ForOp>();
    while (sumLoop && !sumLoop->hasAttr(kRowSumLoopAttr))
      sumLoop = sumLoop->getParentOfType<scf::ForOp>();
    if (!sumLoop)
      continue;
    auto same = [](Value a, Value b) {
      return isEqualConstantIntOrValue(getAsOpFoldResult(a),
                                       getAsOpFoldResult(b));
    };
    if (sumLoop->getBlock() != maxLoop->getBlock() ||
        !same(sumLoop.getLowerBound(), maxLoop.getLowerBound()) ||
        !same(sumLoop.getUpperBound(), maxLoop.getUpperBound()) ||
        !same(sumLoop.getStep(), maxLoop.getStep()))
      return maxLoop.emitOpError(
          "fa-online-softmax: the row-max and row-sum loops must run over "
          "the same K/V tiles in the same block");
    for (Operation *other : maxLoop.getResult(0).getUsers()) {
      Operation *inBlock = maxLoop->getBlock()->findAncestorOpInBlock(*other);
      if (inBlock && inBlock != sumLoop.getOperation() &&
          inBlock->isBeforeInBlock(sumLoop))
        return other->emitOpError(
            "fa-online-softmax: uses the row max before the row-sum loop");
    }
    if (sumLoop.getNumRegionIterArgs() != 2)
      return sumLoop.emitOpError("fa-online-softmax: a row-sum loop must carry "
                                 "exactly the running sum and accumulator");
    return sumLoop;
  }
  return maxLoop.emitOpError(
      "fa-online-softmax: no row-sum loop uses this row-max loop");
}

LogicalResult fuse(RewriterBase &rewriter, scf::ForOp maxLoop) {
  FailureOr<scf::ForOp> found = findSumLoop(maxLoop);
  if (failed(found))
    return failure();
  scf::ForOp sumLoop = *found;
  Block *sumBody = sumLoop.getBody();
  auto tiles = sumBody->getOps<ScoreTileOp>();
  if (std::distance(tiles.begin(), tiles.end()) != 1)
    return sumLoop.emitOpError("fa-online-softmax: a row-sum loop must "
                               "compute exactly one fa.score_tile");
  ScoreTileOp scoreTile = *tiles.begin();

  Location loc = sumLoop.getLoc();
  MLIRContext *ctx = rewriter.getContext();
  Value rowMax = maxLoop.getResult(0);
  SmallVector<Value> inits = {maxLoop.getInitArgs()[0],
                              sumLoop.getInitArgs()[0],
                              sumLoop.getInitArgs()[1]};
  rewriter.setInsertionPoint(sumLoop);
  auto fused = scf::ForOp::create(
      rewriter, loc, sumLoop.getLowerBound(), sumLoop.getUpperBound(),
      sumLoop.getStep(), inits,
      [&](OpBuilder &b, Location l, Value iv, ValueRange iters) {
        Value runMax = iters[0], runSum = iters[1], runAcc = iters[2];
        IRMapping mapping;
        mapping.map(sumLoop.getInductionVar(), iv);
        for (Operation &inner : sumBody->without_terminator()) {
          b.clone(inner, mapping);
          if (&inner != scoreTile.getOperation())
            continue;
          // Right after the scores: the new max and the rescaled state.
          Value s = mapping.lookup(scoreTile.getResult());
          AffineMap row = dimsMap(ctx, 2, {0}), tile = dimsMap(ctx, 2, {0, 1});
          // The tile's row max, then m' = max(m, tile max) and
          // alpha = exp(m - m') in one op that reads m before overwriting
          // it in place (so m stays the loop's one buffer).
          OpFoldResult rows = tensor::getMixedSize(b, l, runMax, 0);
          Value tileMax = buildGeneric(
              b, l, filledF32(b, l, {rows}, kNegInf), s, {tile, row},
              {IteratorType::parallel, IteratorType::reduction},
              [](OpBuilder &nb, Location bl, ValueRange args) -> Value {
                return arith::MaximumFOp::create(nb, bl, args[0], args[1]);
              });
          AffineMap id1 = dimsMap(ctx, 1, {0});
          Value alphaInit =
              tensor::EmptyOp::create(b, l, {rows}, b.getF32Type());
          auto update = linalg::GenericOp::create(
              b, l, TypeRange{runMax.getType(), alphaInit.getType()},
              ValueRange{tileMax}, ValueRange{runMax, alphaInit},
              ArrayRef<AffineMap>{id1, id1, id1},
              ArrayRef<IteratorType>{IteratorType::parallel},
              [](OpBuilder &nb, Location bl, ValueRange args) {
                Value oldMax = args[1];
                Value newMax =
                    arith::MaximumFOp::create(nb, bl, oldMax, args[0]);
                // Nothing seen yet (m' = -inf): nothing to rescale.
                Value none =
                    arith::CmpFOp::create(nb, bl, arith::CmpFPredicate::OEQ,
                                          newMax, f32Const(nb, bl, kNegInf));
                Value diff = arith::SubFOp::create(nb, bl, oldMax, newMax);
                Value e = math::ExpOp::create(nb, bl, diff);
                Value alpha = arith::SelectOp::create(nb, bl, none,
                                                      f32Const(nb, bl, 1.0), e);
                linalg::YieldOp::create(nb, bl, ValueRange{newMax, alpha});
              });
          Value newMax = update.getResult(0), alpha = update.getResult(1);
          auto scale = [](OpBuilder &nb, Location bl,
                          ValueRange args) -> Value {
            return arith::MulFOp::create(nb, bl, args[1], args[0]);
          };
          Value sum = buildGeneric(b, l, runSum, alpha, {id1, id1},
                                   {IteratorType::parallel}, scale);
          Value acc = buildGeneric(
              b, l, runAcc, alpha, {row, tile},
              {IteratorType::parallel, IteratorType::parallel}, scale);
          mapping.map(rowMax, newMax);
          mapping.map(sumLoop.getRegionIterArgs()[0], sum);
          mapping.map(sumLoop.getRegionIterArgs()[1], acc);
        }
        auto yield = cast<scf::YieldOp>(sumBody->getTerminator());
        SmallVector<Value> results = {mapping.lookup(rowMax)};
        for (Value v : yield.getOperands())
          results.push_back(mapping.lookupOrDefault(v));
        scf::YieldOp::create(b, l, results);
      });

  rewriter.replaceAllUsesWith(sumLoop.getResults(),
                              fused.getResults().drop_front());
  rewriter.eraseOp(sumLoop);
  rewriter.replaceAllUsesWith(rowMax, fused.getResult(0));
  rewriter.eraseOp(maxLoop);
  return success();
}

struct FAOnlineSoftmaxPass
    : public mlir::fa::impl::FAOnlineSoftmaxBase<FAOnlineSoftmaxPass> {
  void runOnOperation() override {
    SmallVector<scf::ForOp> maxLoops;
    getOperation()->walk([&](scf::ForOp loop) {
      if (loop->hasAttr(kRowMaxLoopAttr))
        maxLoops.push_back(loop);
    });
    IRRewriter rewriter(&getContext());
    for (scf::ForOp loop : maxLoops)
      if (failed(fuse(rewriter, loop)))
        return signalPassFailure();
  }
};

} // namespace
