//===- DifferentiateScoreMod.cpp - d score_mod / d score ------------------===//
//
// Forward-mode differentiation of fa.attention_grad's score_mod region with
// respect to its score argument: one input, one output, so one sweep that
// carries a tangent next to each value gives the derivative directly.
//
//===----------------------------------------------------------------------===//

#include "fa/Dialect/FA/IR/FAOps.h"
#include "fa/Transforms/Passes.h"
#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Math/IR/Math.h"
#include "mlir/IR/IRMapping.h"
#include "mlir/IR/PatternMatch.h"
#include "mlir/Transforms/RegionUtils.h"
#include "llvm/ADT/TypeSwitch.h"

#include <cmath>

namespace mlir::fa {
#define GEN_PASS_DEF_FADIFFERENTIATESCOREMOD
#include "fa/Transforms/Passes.h.inc"
} // namespace mlir::fa

using namespace mlir;
using namespace mlir::fa;

namespace {

constexpr double kLn2 = 0.69314718055994530942;
constexpr double kTwoOverSqrtPi = 1.12837916709551257390;

/// Builds the derivative region: the primal ops are cloned, and each float
/// value that depends on the score gets a tangent (d value / d score).
/// Values without a tangent do not depend on the score.
class Differentiator {
public:
  explicit Differentiator(OpBuilder &b) : b(b) {}

  /// Differentiates `source` into the empty region `target`. Fails, with an
  /// error on the op, at the first op it cannot differentiate.
  LogicalResult run(Region &source, Region &target);

private:
  Value cst(Location loc, Type t, double v) {
    return arith::ConstantOp::create(b, loc, b.getFloatAttr(t, v));
  }
  Value mul(Location loc, Value x, Value y) {
    return arith::MulFOp::create(b, loc, x, y);
  }
  Value div(Location loc, Value x, Value y) {
    return arith::DivFOp::create(b, loc, x, y);
  }
  /// The tangent of `v`, or null when it does not depend on the score.
  Value tangent(Value v) { return tangents.lookupOrNull(v); }
  /// The tangent of `v`, materializing 0 where it has none.
  Value tangentOrZero(Location loc, Value v) {
    Value t = tangent(v);
    return t ? t : cst(loc, v.getType(), 0.0);
  }

  /// The tangent of the single result of the cloned op `op` (whose operands
  /// are already mapped), given the original op's operands' tangents.
  /// Returns null when the result does not depend on the score; fails for
  /// an op it cannot differentiate.
  FailureOr<Value> differentiate(Operation *op, Operation *clone);

  OpBuilder &b;
  IRMapping primal, tangents;
};

FailureOr<Value> Differentiator::differentiate(Operation *op,
                                               Operation *clone) {
  bool dependsOnScore = llvm::any_of(
      op->getOperands(), [&](Value v) { return tangent(v) != nullptr; });
  // Results that are not floats (i1 from a comparison, indices) carry no
  // derivative, and nothing that ignores the score has one.
  if (!dependsOnScore || op->getNumResults() != 1 ||
      !isa<FloatType>(op->getResult(0).getType()))
    return Value();

  Location loc = op->getLoc();
  Value r = clone->getResult(0);
  Type t = r.getType();
  auto arg = [&](unsigned i) { return primal.lookup(op->getOperand(i)); };
  auto dArg = [&](unsigned i) { return tangentOrZero(loc, op->getOperand(i)); };
  auto chain = [&](Value localDerivative) {
    return mul(loc, dArg(0), localDerivative);
  };
  // Picks the tangent of the operand a comparison-based op returns.
  auto pick = [&](arith::CmpFPredicate pred) -> Value {
    Value takeFirst = arith::CmpFOp::create(b, loc, pred, arg(0), arg(1));
    return arith::SelectOp::create(b, loc, takeFirst, dArg(0), dArg(1));
  };

  return llvm::TypeSwitch<Operation *, FailureOr<Value>>(op)
      .Case<arith::AddFOp, arith::SubFOp>([&](auto) -> Value {
        // Operands that do not depend on the score add no term.
        Value dx = tangent(op->getOperand(0)), dy = tangent(op->getOperand(1));
        bool sub = isa<arith::SubFOp>(op);
        if (!dy)
          return dx;
        if (!dx)
          return sub ? arith::NegFOp::create(b, loc, dy).getResult() : dy;
        return sub ? arith::SubFOp::create(b, loc, dx, dy).getResult()
                   : arith::AddFOp::create(b, loc, dx, dy).getResult();
      })
      .Case<arith::NegFOp>(
          [&](auto) -> Value { return arith::NegFOp::create(b, loc, dArg(0)); })
      .Case<arith::MulFOp>([&](auto) -> Value {
        Value dx = tangent(op->getOperand(0)), dy = tangent(op->getOperand(1));
        Value xTerm = dx ? mul(loc, dx, arg(1)) : Value();
        Value yTerm = dy ? mul(loc, arg(0), dy) : Value();
        if (xTerm && yTerm)
          return arith::AddFOp::create(b, loc, xTerm, yTerm);
        return xTerm ? xTerm : yTerm;
      })
      .Case<arith::DivFOp>([&](auto) -> Value {
        // (dx - r dy) / y
        Value dx = tangent(op->getOperand(0)), dy = tangent(op->getOperand(1));
        Value num = dx;
        if (dy) {
          Value rdy = mul(loc, r, dy);
          num = dx ? arith::SubFOp::create(b, loc, dx, rdy).getResult()
                   : arith::NegFOp::create(b, loc, rdy).getResult();
        }
        return div(loc, num, arg(1));
      })
      .Case<arith::MaximumFOp, arith::MaxNumFOp>(
          [&](auto) -> Value { return pick(arith::CmpFPredicate::OGE); })
      .Case<arith::MinimumFOp, arith::MinNumFOp>(
          [&](auto) -> Value { return pick(arith::CmpFPredicate::OLE); })
      .Case<arith::SelectOp>([&](auto) -> Value {
        return arith::SelectOp::create(b, loc, arg(0), dArg(1), dArg(2));
      })
      .Case<arith::ExtFOp>([&](auto) -> Value {
        return arith::ExtFOp::create(b, loc, t, dArg(0));
      })
      .Case<arith::TruncFOp>([&](auto) -> Value {
        return arith::TruncFOp::create(b, loc, t, dArg(0));
      })
      .Case<math::ExpOp>([&](auto) -> Value { return chain(r); })
      .Case<math::Exp2Op>(
          [&](auto) -> Value { return chain(mul(loc, r, cst(loc, t, kLn2))); })
      .Case<math::ExpM1Op>([&](auto) -> Value {
        return chain(arith::AddFOp::create(b, loc, r, cst(loc, t, 1.0)));
      })
      .Case<math::LogOp>(
          [&](auto) -> Value { return div(loc, dArg(0), arg(0)); })
      .Case<math::Log2Op>([&](auto) -> Value {
        return div(loc, dArg(0), mul(loc, arg(0), cst(loc, t, kLn2)));
      })
      .Case<math::Log1pOp>([&](auto) -> Value {
        return div(loc, dArg(0),
                   arith::AddFOp::create(b, loc, arg(0), cst(loc, t, 1.0)));
      })
      .Case<math::TanhOp>([&](auto) -> Value {
        Value one = cst(loc, t, 1.0);
        return chain(arith::SubFOp::create(b, loc, one, mul(loc, r, r)));
      })
      .Case<math::SqrtOp>([&](auto) -> Value {
        return div(loc, dArg(0), mul(loc, cst(loc, t, 2.0), r));
      })
      .Case<math::RsqrtOp>([&](auto) -> Value {
        // d x^(-1/2) = -1/2 x^(-3/2) = -r^3 / 2
        Value r3 = mul(loc, mul(loc, r, r), r);
        return chain(mul(loc, cst(loc, t, -0.5), r3));
      })
      .Case<math::AbsFOp>([&](auto) -> Value {
        Value negative = arith::CmpFOp::create(
            b, loc, arith::CmpFPredicate::OLT, arg(0), cst(loc, t, 0.0));
        return arith::SelectOp::create(
            b, loc, negative, arith::NegFOp::create(b, loc, dArg(0)), dArg(0));
      })
      .Case<math::SinOp>([&](auto) -> Value {
        return chain(math::CosOp::create(b, loc, arg(0)));
      })
      .Case<math::CosOp>([&](auto) -> Value {
        return chain(
            arith::NegFOp::create(b, loc, math::SinOp::create(b, loc, arg(0))));
      })
      .Case<math::ErfOp>([&](auto) -> Value {
        // 2 / sqrt(pi) * exp(-x^2)
        Value x2 = mul(loc, arg(0), arg(0));
        Value e =
            math::ExpOp::create(b, loc, arith::NegFOp::create(b, loc, x2));
        return chain(mul(loc, cst(loc, t, kTwoOverSqrtPi), e));
      })
      .Case<math::PowFOp>([&](auto) -> Value {
        // d x^y = y x^(y-1) dx + x^y log(x) dy
        Value result;
        if (tangent(op->getOperand(0))) {
          Value ym1 = arith::SubFOp::create(b, loc, arg(1), cst(loc, t, 1.0));
          Value p = math::PowFOp::create(b, loc, arg(0), ym1);
          result = mul(loc, dArg(0), mul(loc, arg(1), p));
        }
        if (tangent(op->getOperand(1))) {
          Value term = mul(loc, dArg(1),
                           mul(loc, r, math::LogOp::create(b, loc, arg(0))));
          result = result ? arith::AddFOp::create(b, loc, result, term) : term;
        }
        return result;
      })
      .Case<math::FmaOp>([&](auto) -> Value {
        Value d = arith::AddFOp::create(b, loc, mul(loc, dArg(0), arg(1)),
                                        mul(loc, arg(0), dArg(1)));
        return arith::AddFOp::create(b, loc, d, dArg(2));
      })
      .Case<math::FloorOp, math::CeilOp, math::RoundOp, math::RoundEvenOp,
            math::TruncOp>([&](auto) -> Value { return cst(loc, t, 0.0); })
      .Default([&](Operation *) -> FailureOr<Value> {
        return op->emitOpError("has no derivative that "
                               "fa-differentiate-score-mod knows; score_mod "
                               "cannot be differentiated");
      });
}

LogicalResult Differentiator::run(Region &source, Region &target) {
  Block &src = source.front();
  Block *dst = b.createBlock(
      &target, {}, src.getArgumentTypes(),
      SmallVector<Location>(src.getNumArguments(), source.getLoc()));
  primal.map(src.getArguments(), dst->getArguments());
  b.setInsertionPointToStart(dst);
  // d score / d score = 1.
  Value score = src.getArgument(0);
  tangents.map(score, cst(score.getLoc(), score.getType(), 1.0));

  for (Operation &op : src.without_terminator()) {
    Operation *clone = b.clone(op, primal);
    FailureOr<Value> t = differentiate(&op, clone);
    if (failed(t))
      return failure();
    if (*t)
      tangents.map(op.getResult(0), *t);
  }
  auto yield = cast<YieldOp>(src.getTerminator());
  Value result = yield.getValues().front();
  YieldOp::create(b, yield.getLoc(), tangentOrZero(yield.getLoc(), result));

  // Primal values only the score needed are dead now.
  IRRewriter rewriter(b);
  (void)runRegionDCE(rewriter, target);
  return success();
}

struct FADifferentiateScoreModPass
    : public mlir::fa::impl::FADifferentiateScoreModBase<
          FADifferentiateScoreModPass> {
  void runOnOperation() override {
    WalkResult result = getOperation()->walk([&](AttentionGradOp op) {
      if (op.getScoreMod().empty() || !op.getScoreModGrad().empty())
        return WalkResult::advance();
      OpBuilder b(op.getContext());
      if (failed(
              Differentiator(b).run(op.getScoreMod(), op.getScoreModGrad()))) {
        op.getScoreModGrad().getBlocks().clear();
        return WalkResult::interrupt();
      }
      return WalkResult::advance();
    });
    if (result.wasInterrupted())
      signalPassFailure();
  }
};

} // namespace
