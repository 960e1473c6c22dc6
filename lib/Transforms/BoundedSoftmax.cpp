//===- BoundedSoftmax.cpp - A fixed offset for bounded scores -------------===//
//
// The running max of the online softmax only keeps e^(s - m) in range. Where
// the scores are bounded, s in [lo, hi] (softcap's cap * tanh(x) in
// [-cap, cap], or a score_mod of that form), a fixed offset at the middle of
// the range does the same: e^(s - (lo + hi) / 2) stays within e^((hi - lo) /
// 2) of 1. This pass replaces a GPU kernel's row-max loop by that constant
// where the rounded P keeps every such value normal with room to spare, so
// the kernel has one loop with no row max (its reductions and shuffles on
// the critical path), no rescale of O and the row sum, and no exponential
// per row and tile. Masked scores are -inf and their e^(s - m) is 0 under
// any offset; rows with no unmasked score keep l = 0. With the offset
// fixed, P's exponent is a function of the score alone: the score map
// computes it, its constants folded (softcap's is one constant times tanh).
//
//===----------------------------------------------------------------------===//

#include "fa/Dialect/FAGPU/IR/FAGPU.h"
#include "fa/Transforms/Passes.h"
#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Math/IR/Math.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/IR/Matchers.h"
#include "mlir/Interfaces/SideEffectInterfaces.h"
#include "llvm/ADT/SetVector.h"
#include "llvm/ADT/TypeSwitch.h"

#include <cmath>
#include <limits>
#include <optional>

namespace mlir::fa {
#define GEN_PASS_DEF_FABOUNDEDSOFTMAX
#include "fa/Transforms/Passes.h.inc"
} // namespace mlir::fa

using namespace mlir;
using namespace mlir::fa;

namespace {

constexpr double kInf = std::numeric_limits<double>::infinity();

/// The finite values a score may take, [lo, hi]; it may also be -inf (a
/// masked score). Empty (lo > hi) where every value is -inf.
struct Range {
  double lo = kInf, hi = -kInf;
  bool empty() const { return lo > hi; }
  Range join(Range o) const { return {std::min(lo, o.lo), std::max(hi, o.hi)}; }
};

Range sumOf(Range a, Range b) { return {a.lo + b.lo, a.hi + b.hi}; }
Range differenceOf(Range a, Range b) { return {a.lo - b.hi, a.hi - b.lo}; }
Range productOf(Range a, Range b) {
  double c[] = {a.lo * b.lo, a.lo * b.hi, a.hi * b.lo, a.hi * b.hi};
  return {*std::min_element(c, c + 4), *std::max_element(c, c + 4)};
}

/// A float constant (or splat) that is finite or -inf.
std::optional<Range> constantRange(Value v) {
  FloatAttr scalar;
  DenseFPElementsAttr splat;
  double x;
  if (matchPattern(v, m_Constant(&scalar)))
    x = scalar.getValueAsDouble();
  else if (matchPattern(v, m_Constant(&splat)) && splat.isSplat())
    x = splat.getSplatValue<APFloat>().convertToDouble();
  else
    return std::nullopt;
  if (x == -kInf)
    return Range{};
  if (!std::isfinite(x))
    return std::nullopt;
  return Range{x, x};
}

/// The range of `v`, from constants through the arithmetic of scores
/// (fagpu.map bodies, masks, branches); nullopt where unknown, e.g. a
/// product of Q and K or a value read from memory.
std::optional<Range> rangeOf(Value v, unsigned depth = 0) {
  if (depth > 64)
    return std::nullopt;
  auto of = [&](Value x) { return rangeOf(x, depth + 1); };
  if (auto arg = dyn_cast<BlockArgument>(v)) {
    // A map's element argument ranges over its input's values.
    auto map = dyn_cast<fagpu::MapOp>(arg.getOwner()->getParentOp());
    if (!map || arg.getArgNumber() >= map.getInputs().size())
      return std::nullopt;
    return of(map.getInputs()[arg.getArgNumber()]);
  }
  if (std::optional<Range> c = constantRange(v))
    return c;
  Operation *op = v.getDefiningOp();
  // Finite operands only: -inf times or plus anything is not a score range.
  auto finite = [&](Value x) -> std::optional<Range> {
    std::optional<Range> r = of(x);
    if (!r || r->empty())
      return std::nullopt;
    return r;
  };
  auto binary = [&](Range (*f)(Range, Range)) -> std::optional<Range> {
    std::optional<Range> a = finite(op->getOperand(0)),
                         b = finite(op->getOperand(1));
    if (!a || !b)
      return std::nullopt;
    return f(*a, *b);
  };
  return llvm::TypeSwitch<Operation *, std::optional<Range>>(op)
      .Case([&](arith::AddFOp) { return binary(sumOf); })
      .Case([&](arith::SubFOp) { return binary(differenceOf); })
      .Case([&](arith::MulFOp) { return binary(productOf); })
      .Case([&](arith::NegFOp n) -> std::optional<Range> {
        std::optional<Range> a = finite(n.getOperand());
        if (!a)
          return std::nullopt;
        return Range{-a->hi, -a->lo};
      })
      .Case([&](math::TanhOp) {
        // Of any input (a NaN stays one, as under a running max); the GPU's
        // tanh is within [-1, 1] up to its rounding, far inside the margins.
        return Range{-1.0, 1.0};
      })
      .Case([&](arith::SelectOp s) -> std::optional<Range> {
        std::optional<Range> a = of(s.getTrueValue()),
                             b = of(s.getFalseValue());
        if (!a || !b)
          return std::nullopt;
        return a->join(*b);
      })
      .Case([&](fagpu::MaskOp m) { return of(m.getScores()); })
      .Case([&](fagpu::MapOp m) -> std::optional<Range> {
        return of(m.getBody().front().getTerminator()->getOperand(0));
      })
      .Case([&](scf::IfOp i) -> std::optional<Range> {
        unsigned n = cast<OpResult>(v).getResultNumber();
        if (i.getElseRegion().empty())
          return std::nullopt;
        std::optional<Range> a = of(i.thenYield().getOperand(n)),
                             b = of(i.elseYield().getOperand(n));
        if (!a || !b)
          return std::nullopt;
        return a->join(*b);
      })
      .Default([](Operation *) { return std::nullopt; });
}

/// The constant c of fa-tile's row-max loop m' = max(m, c rowmax(s)) (the
/// log2 domain's scale), or nullopt where the loop is not of that form.
std::optional<double> rowMaxScale(scf::ForOp loop, Operation *scores) {
  if (loop.getNumRegionIterArgs() != 1)
    return std::nullopt;
  std::optional<Range> init = constantRange(loop.getInitArgs()[0]);
  if (!init || !init->empty())
    return std::nullopt;
  Value m = loop.getRegionIterArgs()[0];
  auto reduce = dyn_cast_or_null<fagpu::ReduceRowsOp>(scores->getNextNode());
  if (!reduce || reduce.getSource() != scores->getResult(0) ||
      reduce.getKind() != fagpu::ReduceKind::Max)
    return std::nullopt;
  auto mul = dyn_cast_or_null<arith::MulFOp>(reduce->getNextNode());
  auto max = mul ? dyn_cast_or_null<arith::MaximumFOp>(mul->getNextNode())
                 : arith::MaximumFOp();
  if (!max || max->getNextNode() != loop.getBody()->getTerminator() ||
      loop.getBody()->getTerminator()->getOperand(0) != max.getResult())
    return std::nullopt;
  Value other =
      mul.getLhs() == reduce.getResult() ? mul.getRhs() : mul.getLhs();
  std::optional<Range> c = constantRange(other);
  if (!c || c->empty() || c->lo != c->hi || !(c->lo > 0) ||
      !((max.getLhs() == m && max.getRhs() == mul.getResult()) ||
        (max.getRhs() == m && max.getLhs() == mul.getResult())))
    return std::nullopt;
  return c->lo;
}

/// The op marked as a loop's scores, if there is exactly one.
Operation *markedScores(scf::ForOp loop) {
  Operation *found = nullptr;
  for (Operation &op : loop.getBody()->without_terminator()) {
    if (!op.hasAttr(kSoftmaxScoresAttr))
      continue;
    if (found || op.getNumResults() != 1)
      return nullptr;
    found = &op;
  }
  return found;
}

/// The row-sum loop reading `maxLoop`'s result in its block, if one does.
scf::ForOp rowSumLoop(scf::ForOp maxLoop) {
  for (Operation *user : maxLoop.getResult(0).getUsers()) {
    Operation *inBlock = maxLoop->getBlock()->findAncestorOpInBlock(*user);
    auto loop = dyn_cast_or_null<scf::ForOp>(inBlock);
    if (loop && loop->hasAttr(kRowSumLoopAttr))
      return loop;
  }
  return {};
}

/// The loop's carried row sum of the very values P V's operand rounds (the
/// row sum's index among the iter_args), or null: with dropout, P V reads
/// P times its factors and the sum P itself.
struct RowSum {
  fagpu::UpdateRowSumOp op;
  Type rounded;
  unsigned index = 0;
};
std::optional<RowSum> findRowSum(scf::ForOp loop) {
  std::optional<RowSum> found;
  for (auto pack : loop.getBody()->getOps<fagpu::ToOperandOp>())
    for (Operation *user : pack.getSource().getUsers())
      if (auto update = dyn_cast<fagpu::UpdateRowSumOp>(user)) {
        auto carried = dyn_cast<BlockArgument>(update.getSum());
        if (found || !carried || carried.getOwner() != loop.getBody())
          return std::nullopt;
        unsigned index = carried.getArgNumber() - 1;
        if (loop.getBody()->getTerminator()->getOperand(index) !=
            update.getResult())
          return std::nullopt;
        found = RowSum{update, getElementTypeOrSelf(pack.getResult().getType()),
                       index};
      }
  return found;
}

/// The largest |exponent| (log2) the offset may leave P, of element type
/// `p`: 5/8 of the smaller side of its exponent range, the rest headroom for
/// V's magnitude in the f32 products and sums (bf16: 78, a softcap up to
/// 54; f16: 8, a softcap up to 5.5).
double exponentLimit(Type p) {
  const llvm::fltSemantics &sem = cast<FloatType>(p).getFloatSemantics();
  double range = std::min<double>(llvm::APFloat::semanticsMaxExponent(sem),
                                  -llvm::APFloat::semanticsMinExponent(sem));
  return std::floor(range * 5 / 8);
}

/// No score sits at the offset, so P's rounding no longer cancels in a row
/// with one key, as it does where the running max makes that key's P
/// exactly 1: O's row sum adds P as P V's operand holds it, and O is the
/// average of V under the weights P V applied. The lse (the log of the row
/// sum after the loop) keeps a sum of P as computed, the softmax's own.
void roundRowSum(scf::ForOp loop, RowSum rowSum) {
  fagpu::UpdateRowSumOp sum = rowSum.op;
  unsigned index = rowSum.index;
  SmallVector<math::Log2Op> logs;
  SmallVector<fagpu::ReduceRowsOp> totals;
  for (Operation *user : loop.getResult(index).getUsers())
    if (auto total = dyn_cast<fagpu::ReduceRowsOp>(user))
      for (Operation *totalUser : total->getUsers())
        if (auto log = dyn_cast<math::Log2Op>(totalUser)) {
          logs.push_back(log);
          totals.push_back(total);
        }
  sum.setRoundedAttr(TypeAttr::get(rowSum.rounded));
  if (logs.empty())
    return;
  IRRewriter rewriter(loop.getContext());
  Value init = loop.getInitArgs()[index];
  auto more =
      cast<LoopLikeOpInterface>(loop.getOperation())
          .replaceWithAdditionalYields(
              rewriter, init, /*replaceInitOperandUsesInLoop=*/false,
              [&](OpBuilder &b, Location loc, ArrayRef<BlockArgument> args) {
                b.setInsertionPointAfter(sum);
                auto exact = fagpu::UpdateRowSumOp::create(
                    b, loc, sum.getType(), args[0], sum.getValues(),
                    TypeAttr());
                return SmallVector<Value>{exact.getResult()};
              });
  if (failed(more)) {
    // The lse needs the exact sum: the rounded one is O's alone.
    sum.removeRoundedAttr();
    return;
  }
  Value exactSum = more->getLoopResults()->back();
  for (auto [log, total] : llvm::zip(logs, totals)) {
    rewriter.setInsertionPoint(log);
    Value exactTotal = fagpu::ReduceRowsOp::create(
        rewriter, log.getLoc(), total.getType(), total.getKindAttr(), exactSum);
    rewriter.modifyOpInPlace(log, [&] { log->setOperand(0, exactTotal); });
  }
}

/// The value of a row tile computed from splat constants (fa-tile's
/// "m, or 0 where -inf" of a constant m), or nullopt.
std::optional<double> constantRows(Value v, unsigned depth = 0) {
  if (depth > 8)
    return std::nullopt;
  auto of = [&](Value x) { return constantRows(x, depth + 1); };
  if (std::optional<Range> c = constantRange(v))
    return c->empty() ? -kInf : c->lo;
  if (auto negate = v.getDefiningOp<arith::NegFOp>()) {
    std::optional<double> x = of(negate.getOperand());
    return x ? std::optional<double>(-*x) : std::nullopt;
  }
  if (auto broadcast = v.getDefiningOp<fagpu::BroadcastRowsOp>())
    return of(broadcast.getSource());
  if (auto select = v.getDefiningOp<arith::SelectOp>()) {
    auto compare = select.getCondition().getDefiningOp<arith::CmpFOp>();
    if (!compare || compare.getPredicate() != arith::CmpFPredicate::OEQ)
      return std::nullopt;
    std::optional<double> a = of(compare.getLhs()), b = of(compare.getRhs());
    if (!a || !b)
      return std::nullopt;
    return of(*a == *b ? select.getTrueValue() : select.getFalseValue());
  }
  return std::nullopt;
}

/// The fagpu.map whose values `scores` are, directly or through a branch
/// that masks them (fa-tile's scf.if of fagpu.mask), where nothing else
/// reads them.
fagpu::MapOp scoreMap(Value scores) {
  if (auto map = scores.getDefiningOp<fagpu::MapOp>())
    return map;
  auto branch = scores.getDefiningOp<scf::IfOp>();
  if (!branch || branch->getNumResults() != 1 || branch.getElseRegion().empty())
    return {};
  auto mask = branch.thenYield().getOperand(0).getDefiningOp<fagpu::MaskOp>();
  auto map = branch.elseYield().getOperand(0).getDefiningOp<fagpu::MapOp>();
  if (!mask || !map || mask.getScores() != map.getResult() ||
      !mask->hasOneUse() || !llvm::hasNItems(map->getUses(), 2))
    return {};
  return map;
}

/// With the offset fixed, P's exponent c s - offset is a function of the
/// score alone: the score map computes it, where softcap's cap c is one
/// constant (a multiply fewer per score, and the lowering's tanh takes it
/// into its fma). Masked scores stay -inf (c > 0).
void foldExponent(Value scores) {
  if (!scores.hasOneUse())
    return;
  auto fma = dyn_cast<math::FmaOp>(*scores.user_begin());
  if (!fma || fma.getA() != scores || !fma->hasOneUse() ||
      !isa<math::Exp2Op>(*fma->user_begin()))
    return;
  std::optional<Range> scale = constantRange(fma.getB());
  std::optional<double> negOffset = constantRows(fma.getC());
  fagpu::MapOp map = scoreMap(scores);
  if (!scale || scale->empty() || scale->lo != scale->hi || !(scale->lo > 0) ||
      !negOffset || !std::isfinite(*negOffset) || !map)
    return;
  auto yield = cast<fagpu::YieldOp>(map.getBody().front().getTerminator());
  // The exponent a y + b of the yielded y: while y is an affine function
  // of a constant, folded into a and b.
  double a = scale->lo, bias = *negOffset;
  Value y = yield.getValue();
  // A set: an op whose operands are one value is not visited twice.
  llvm::SetVector<Operation *> dead;
  dead.insert(fma);
  while (Operation *op = y.getDefiningOp()) {
    if (!op->hasOneUse() ||
        !isa<arith::MulFOp, arith::AddFOp, arith::SubFOp>(op))
      break;
    auto constantAt = [&](unsigned i) -> std::optional<double> {
      std::optional<Range> r = constantRange(op->getOperand(i));
      return r && !r->empty() ? std::optional<double>(r->lo) : std::nullopt;
    };
    bool sub = isa<arith::SubFOp>(op);
    unsigned xIndex = 0;
    std::optional<double> k = constantAt(1);
    if (!k && !sub) {
      k = constantAt(0);
      xIndex = 1;
    }
    if (!k)
      break;
    if (isa<arith::MulFOp>(op))
      a *= *k;
    else
      bias += (sub ? -a : a) * *k;
    y = op->getOperand(xIndex);
    dead.insert(op);
  }
  OpBuilder b(yield);
  Location loc = yield.getLoc();
  Type f32 = b.getF32Type();
  Value e = arith::MulFOp::create(
      b, loc, y, arith::ConstantOp::create(b, loc, b.getFloatAttr(f32, a)));
  if (bias != 0)
    e = arith::AddFOp::create(
        b, loc, e,
        arith::ConstantOp::create(b, loc, b.getFloatAttr(f32, bias)));
  yield->setOperand(0, e);
  fma.replaceAllUsesWith(scores);
  // What computed the old exponent (fa-tile's "m, or 0 where -inf" of the
  // offset, the scale, the folded ops) is dead now.
  while (!dead.empty()) {
    Operation *op = dead.pop_back_val();
    if (!isOpTriviallyDead(op))
      continue;
    for (Value operand : op->getOperands())
      if (Operation *def = operand.getDefiningOp())
        dead.insert(def);
    op->erase();
  }
}

struct FABoundedSoftmaxPass
    : public mlir::fa::impl::FABoundedSoftmaxBase<FABoundedSoftmaxPass> {
  void runOnOperation() override {
    SmallVector<scf::ForOp> maxLoops;
    getOperation()->walk([&](scf::ForOp loop) {
      if (loop->hasAttr(kRowMaxLoopAttr))
        maxLoops.push_back(loop);
    });
    for (scf::ForOp maxLoop : maxLoops) {
      auto exponential = maxLoop->getAttrOfType<StringAttr>(kRowMaxLoopAttr);
      Type rowType = maxLoop.getNumResults() == 1
                         ? maxLoop.getResult(0).getType()
                         : Type();
      // GPU kernels only (fagpu register tiles, the log2 domain).
      if (!exponential || exponential.getValue() != "exp2" || !rowType ||
          !fagpu::getLayoutWarps(rowType))
        continue;
      Operation *maxScores = markedScores(maxLoop);
      scf::ForOp sumLoop = rowSumLoop(maxLoop);
      Operation *sumScores = sumLoop ? markedScores(sumLoop) : nullptr;
      if (!maxScores || !sumScores)
        continue;
      std::optional<double> scale = rowMaxScale(maxLoop, maxScores);
      std::optional<Range> range = rangeOf(sumScores->getResult(0));
      std::optional<RowSum> rowSum = findRowSum(sumLoop);
      if (!scale || !range || range->empty() || !rowSum)
        continue;
      double half = *scale * (range->hi - range->lo) / 2;
      if (half > exponentLimit(rowSum->rounded))
        continue;
      // The max loop's result, in its units (the log2 domain), is the
      // offset the row-sum loop subtracts; the loop itself goes.
      OpBuilder b(maxLoop);
      auto type = cast<RankedTensorType>(rowType);
      double offset = *scale * (range->hi + range->lo) / 2;
      Value fixed = arith::ConstantOp::create(
          b, maxLoop.getLoc(),
          DenseElementsAttr::get(
              type, b.getFloatAttr(type.getElementType(), offset)));
      maxLoop.getResult(0).replaceAllUsesWith(fixed);
      maxLoop.erase();
      // As fa-online-softmax leaves its loop: unmarked.
      sumLoop->removeAttr(kRowSumLoopAttr);
      sumScores->removeAttr(kSoftmaxScoresAttr);
      roundRowSum(sumLoop, *rowSum);
      foldExponent(sumScores->getResult(0));
    }
  }
};

} // namespace
