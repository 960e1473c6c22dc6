//===- Builders.cpp - IR builders shared by FA's lowerings ----------------===//

#include "fa/Transforms/Builders.h"
#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/Dialect/Math/IR/Math.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"
#include "mlir/IR/IRMapping.h"

#include <limits>

using namespace mlir;
using namespace mlir::fa;

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

Value mlir::fa::buildScore(OpBuilder &b, Location loc,
                           const ScoreVariant &variant, Value dot, Value bias,
                           Value slope, const ScorePositions &pos) {
  Type f32 = b.getF32Type();
  Value s = arith::MulFOp::create(b, loc, dot, f32Const(b, loc, variant.scale));
  if (variant.softcap) {
    Value cap = f32Const(b, loc, variant.softcap.getValueAsDouble());
    Value t =
        math::TanhOp::create(b, loc, arith::DivFOp::create(b, loc, s, cap));
    s = arith::MulFOp::create(b, loc, cap, t);
  }
  if (slope) {
    Value dist = arith::SubIOp::create(b, loc, pos.queryAligned, pos.key);
    Value dist64 = arith::IndexCastOp::create(b, loc, b.getI64Type(), dist);
    Value distF = arith::SIToFPOp::create(b, loc, f32, dist64);
    Value absDist = math::AbsFOp::create(b, loc, distF);
    Value penalty = arith::MulFOp::create(b, loc, slope, absDist);
    s = arith::SubFOp::create(b, loc, s, penalty);
  }
  if (bias)
    s = arith::AddFOp::create(b, loc, s, extToF32(b, loc, bias));
  if (variant.scoreMod)
    s = inlineVariantRegion(b, *variant.scoreMod,
                            {s, pos.batch, pos.head, pos.query, pos.key});

  Value keep;
  auto addMask = [&](Value m) {
    keep = keep ? arith::AndIOp::create(b, loc, keep, m).getResult() : m;
  };
  if (variant.causal) {
    Value diag = variant.causal.getValue() == CausalKind::TopLeft
                     ? pos.query
                     : pos.queryAligned;
    addMask(arith::CmpIOp::create(b, loc, arith::CmpIPredicate::sle, pos.key,
                                  diag));
  }
  if (variant.window) {
    Value left = arith::ConstantIndexOp::create(b, loc, variant.window[0]);
    Value lo = arith::SubIOp::create(b, loc, pos.queryAligned, left);
    addMask(
        arith::CmpIOp::create(b, loc, arith::CmpIPredicate::sge, pos.key, lo));
    Value right = arith::ConstantIndexOp::create(b, loc, variant.window[1]);
    Value hi = arith::AddIOp::create(b, loc, pos.queryAligned, right);
    addMask(
        arith::CmpIOp::create(b, loc, arith::CmpIPredicate::sle, pos.key, hi));
  }
  if (variant.maskMod)
    addMask(inlineVariantRegion(b, *variant.maskMod,
                                {pos.batch, pos.head, pos.query, pos.key}));
  if (keep)
    s = arith::SelectOp::create(
        b, loc, keep, s,
        f32Const(b, loc, -std::numeric_limits<double>::infinity()));
  return s;
}
