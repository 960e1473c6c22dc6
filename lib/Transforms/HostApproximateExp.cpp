//===- HostApproximateExp.cpp - f32 exp as a polynomial on the host -------===//
//
// The host lowers math.exp to a call of the C library's expf per element,
// which the loop vectorizer cannot widen: in the softmax loops of every
// tile that call costs as much as a tile product. This pass rewrites each
// f32 math.exp into MLIR's polynomial approximation (Cephes: a range
// reduction by ln 2, a degree-6 polynomial and an exponent built from
// bits, relative error below 2^-22.5, results below 2^-126 flushed to 0),
// plain arith and math.fma ops that vectorize with the loops around them.
//
//===----------------------------------------------------------------------===//

#include "fa/Transforms/Passes.h"
#include "mlir/Dialect/Math/IR/Math.h"
#include "mlir/Dialect/Math/Transforms/Passes.h"
#include "mlir/Dialect/Vector/IR/VectorOps.h"
#include "mlir/IR/PatternMatch.h"
#include "mlir/Transforms/GreedyPatternRewriteDriver.h"

namespace mlir::fa {
#define GEN_PASS_DEF_FAHOSTAPPROXIMATEEXP
#include "fa/Transforms/Passes.h.inc"
} // namespace mlir::fa

using namespace mlir;
using namespace mlir::fa;

namespace {

struct FAHostApproximateExpPass
    : public mlir::fa::impl::FAHostApproximateExpBase<
          FAHostApproximateExpPass> {
  using Base::Base;
  void runOnOperation() override {
    RewritePatternSet patterns(&getContext());
    // f32 only: narrower types are not extended (there are none in the
    // tile loops, whose softmax is f32).
    populateMathPolynomialApproximationPatterns(patterns, [](StringRef name) {
      return name == math::ExpOp::getOperationName();
    });
    if (failed(applyPatternsGreedily(getOperation(), std::move(patterns))))
      return signalPassFailure();
  }
};

} // namespace
