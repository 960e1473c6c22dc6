//===- OnlineSoftmax.cpp - One pass over K/V tiles ------------------------===//
//
// Fuses fa-tile's two softmax loops (row max, then row sum and P V) into
// one loop that carries the running max and rescales what it has summed so
// far whenever the max grows:
//
//   m' = max(m, rowmax(s))      alpha = e^(m - m')   (m' = 0 while -inf)
//   l' = alpha * l + rowsum(e^(s - m'))
//   acc' = alpha * acc + e^(s - m') V
//
// with e the exponential the loops name (exp on the host; exp2 in the GPU
// kernels, whose max is in the log2 domain). The sum loop's body is reused
// as is: its uses of the final row max become uses of m', and its uses of l
// and acc become uses of the rescaled values. The same algebra acts on
// linalg tensors (the host) and on fagpu register tiles (GPU kernels); only
// the ops that compute m' and rescale differ.
//
//===----------------------------------------------------------------------===//

#include "fa/Dialect/FA/IR/FAOps.h"
#include "fa/Dialect/FAGPU/IR/FAGPU.h"
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
#include "mlir/Interfaces/SideEffectInterfaces.h"

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

/// The op yielding a K/V tile's scores in `body`: its one fa.score_tile or
/// op marked `fa.softmax_scores`, or a diagnostic on `loop`.
FailureOr<Operation *> findScores(scf::ForOp loop, StringRef what) {
  SmallVector<Operation *> found;
  for (Operation &op : loop.getBody()->without_terminator())
    if (isa<ScoreTileOp>(op) || op.hasAttr(kSoftmaxScoresAttr))
      found.push_back(&op);
  if (found.size() != 1 || found.front()->getNumResults() != 1)
    return loop.emitOpError("fa-online-softmax: a ")
           << what
           << " loop must compute exactly one score tile (an fa.score_tile "
              "or an op marked '"
           << kSoftmaxScoresAttr << "')";
  return found.front();
}

/// A float constant of `type` (a splat for a tensor).
Value floatConstant(OpBuilder &b, Location loc, Type type, double value) {
  if (auto tensor = dyn_cast<RankedTensorType>(type))
    return arith::ConstantOp::create(
        b, loc,
        DenseElementsAttr::get(tensor,
                               b.getFloatAttr(tensor.getElementType(), value)));
  return arith::ConstantOp::create(b, loc, b.getFloatAttr(type, value));
}

/// alpha = e^(m - m'), the factor that rescales what was summed under the
/// running max m once it grows to m'. A row with no score yet (m' = -inf)
/// subtracts 0 instead, as the row-sum loop does: alpha = 0 then rescales
/// its zero sum and accumulator. On scalars or on row tensors alike.
Value buildRescaleFactor(OpBuilder &b, Location loc, bool exp2, Value m,
                         Value mNew) {
  Type type = mNew.getType();
  Value none = arith::CmpFOp::create(b, loc, arith::CmpFPredicate::OEQ, mNew,
                                     floatConstant(b, loc, type, kNegInf));
  Value mSafe = arith::SelectOp::create(b, loc, none,
                                        floatConstant(b, loc, type, 0.0), mNew);
  Value diff = arith::SubFOp::create(b, loc, m, mSafe);
  return exp2 ? math::Exp2Op::create(b, loc, diff).getResult()
              : math::ExpOp::create(b, loc, diff).getResult();
}

/// The ops that compute the new running max and rescale the state, in the
/// IR fa-tile wrote the loops in: linalg on tensors (the host) or fagpu
/// register tiles (GPU kernels).
class SoftmaxOps {
public:
  static FailureOr<SoftmaxOps> get(scf::ForOp maxLoop, Operation *sumScores);

  /// m' and alpha after a tile's scores `s`, from the running max `m`.
  std::pair<Value, Value> updateMax(OpBuilder &b, Location loc, Value s,
                                    Value m) const;
  /// `x` (the running sum or accumulator) times alpha, row by row.
  Value rescale(OpBuilder &b, Location loc, Value x, Value alpha) const;

private:
  bool exp2 = false;
  bool registers = false;
  /// Register tiles: the max loop's scores and the ops after them that
  /// update the max, which the fused loop repeats on its own scores.
  Operation *maxScores = nullptr;
  Value maxIterArg, maxYielded;
  SmallVector<Operation *> maxUpdate;
};

FailureOr<SoftmaxOps> SoftmaxOps::get(scf::ForOp maxLoop,
                                      Operation *sumScores) {
  SoftmaxOps ops;
  auto exponential = maxLoop->getAttrOfType<StringAttr>(kRowMaxLoopAttr);
  if (!exponential ||
      (exponential.getValue() != "exp" && exponential.getValue() != "exp2"))
    return maxLoop.emitOpError("fa-online-softmax: '")
           << kRowMaxLoopAttr
           << "' must name the row-sum loop's exponential, \"exp\" or "
              "\"exp2\"";
  ops.exp2 = exponential.getValue() == "exp2";
  auto scores = cast<RankedTensorType>(sumScores->getResult(0).getType());
  ops.registers = fagpu::getLayoutWarps(scores) != 0;
  if (!ops.registers)
    return ops;
  // Register tiles: the max loop's own update of the max (its reduction,
  // scale and max with m), repeated on the fused loop's scores.
  FailureOr<Operation *> maxScores = findScores(maxLoop, "row-max");
  if (failed(maxScores))
    return failure();
  ops.maxScores = *maxScores;
  ops.maxIterArg = maxLoop.getRegionIterArgs()[0];
  ops.maxYielded = maxLoop.getBody()->getTerminator()->getOperand(0);
  Block *body = maxLoop.getBody();
  llvm::SmallPtrSet<Operation *, 8> update = {*maxScores};
  for (Operation *op = (*maxScores)->getNextNode(); op != body->getTerminator();
       op = op->getNextNode()) {
    for (Value operand : op->getOperands()) {
      Operation *def = operand.getDefiningOp();
      bool ok = operand == maxLoop.getRegionIterArgs()[0] ||
                (def && update.contains(def)) ||
                !maxLoop->isAncestor(operand.getParentBlock()->getParentOp());
      if (!ok)
        return op->emitOpError("fa-online-softmax: the row-max loop must "
                               "update the max from the scores and the "
                               "running max alone");
    }
    if (!isPure(op))
      return op->emitOpError("fa-online-softmax: the row-max loop's update "
                             "of the max must have no side effects");
    update.insert(op);
    ops.maxUpdate.push_back(op);
  }
  return ops;
}

std::pair<Value, Value> SoftmaxOps::updateMax(OpBuilder &b, Location loc,
                                              Value s, Value m) const {
  if (registers) {
    IRMapping mapping;
    mapping.map(maxScores->getResult(0), s);
    mapping.map(maxIterArg, m);
    for (Operation *op : maxUpdate)
      b.clone(*op, mapping);
    Value mNew = mapping.lookupOrDefault(maxYielded);
    return {mNew, buildRescaleFactor(b, loc, exp2, m, mNew)};
  }
  // The tile's row max, then m' = max(m, tile max) and alpha in one op that
  // reads m before overwriting it in place (so m stays the loop's one
  // buffer).
  MLIRContext *ctx = b.getContext();
  AffineMap row = dimsMap(ctx, 2, {0}), tile = dimsMap(ctx, 2, {0, 1});
  AffineMap id1 = dimsMap(ctx, 1, {0});
  OpFoldResult rows = tensor::getMixedSize(b, loc, m, 0);
  // The tile's row max may skip NaN scores (maxnumf) and assume there are
  // none (nnan): a NaN score still reaches the row's output through its
  // exp(s - m) in the row sum, and without NaN checks the row's reduction
  // is a tree of vector maxes instead of a chain of scalar ones (12% of the
  // host's forward with AVX-512).
  Value tileMax =
      buildGeneric(b, loc, filledF32(b, loc, {rows}, kNegInf), s, {tile, row},
                   {IteratorType::parallel, IteratorType::reduction},
                   [](OpBuilder &nb, Location bl, ValueRange args) -> Value {
                     return arith::MaxNumFOp::create(
                         nb, bl, args[0], args[1], arith::FastMathFlags::nnan);
                   });
  Value alphaInit = tensor::EmptyOp::create(b, loc, {rows}, b.getF32Type());
  bool useExp2 = exp2;
  auto update = linalg::GenericOp::create(
      b, loc, TypeRange{m.getType(), alphaInit.getType()}, ValueRange{tileMax},
      ValueRange{m, alphaInit}, ArrayRef<AffineMap>{id1, id1, id1},
      ArrayRef<IteratorType>{IteratorType::parallel},
      [useExp2](OpBuilder &nb, Location bl, ValueRange args) {
        Value newMax = arith::MaximumFOp::create(nb, bl, args[1], args[0]);
        Value alpha = buildRescaleFactor(nb, bl, useExp2, args[1], newMax);
        linalg::YieldOp::create(nb, bl, ValueRange{newMax, alpha});
      });
  return {update.getResult(0), update.getResult(1)};
}

Value SoftmaxOps::rescale(OpBuilder &b, Location loc, Value x,
                          Value alpha) const {
  if (registers)
    return fagpu::ScaleRowsOp::create(b, loc, x.getType(), x, alpha);
  MLIRContext *ctx = b.getContext();
  int64_t rank = cast<RankedTensorType>(x.getType()).getRank();
  SmallVector<IteratorType> parallel(rank, IteratorType::parallel);
  return buildGeneric(
      b, loc, x, alpha,
      {dimsMap(ctx, rank, {0}), AffineMap::getMultiDimIdentityMap(rank, ctx)},
      parallel, [](OpBuilder &nb, Location bl, ValueRange args) -> Value {
        return arith::MulFOp::create(nb, bl, args[1], args[0]);
      });
}

LogicalResult fuse(RewriterBase &rewriter, scf::ForOp maxLoop) {
  FailureOr<scf::ForOp> found = findSumLoop(maxLoop);
  if (failed(found))
    return failure();
  scf::ForOp sumLoop = *found;
  Block *sumBody = sumLoop.getBody();
  FailureOr<Operation *> scores = findScores(sumLoop, "row-sum");
  if (failed(scores))
    return failure();
  FailureOr<SoftmaxOps> softmax = SoftmaxOps::get(maxLoop, *scores);
  if (failed(softmax))
    return failure();

  Location loc = sumLoop.getLoc();
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
          Operation *copy = b.clone(inner, mapping);
          if (&inner != *scores)
            continue;
          // Right after the scores: the new max and the rescaled state.
          copy->removeAttr(kSoftmaxScoresAttr);
          auto [newMax, alpha] =
              softmax->updateMax(b, l, copy->getResult(0), runMax);
          mapping.map(rowMax, newMax);
          mapping.map(sumLoop.getRegionIterArgs()[0],
                      softmax->rescale(b, l, runSum, alpha));
          mapping.map(sumLoop.getRegionIterArgs()[1],
                      softmax->rescale(b, l, runAcc, alpha));
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
