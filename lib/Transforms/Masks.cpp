//===- Masks.cpp - The causal and window masks, defined once --------------===//
//
// The ops come out in the order the GPU kernels have always emitted them
// (their PTX is compared byte for byte across changes), one op per
// statement so that the order does not depend on the compiler's order of
// evaluating arguments. That includes repeats (query + diag at each use):
// LLVM merges them in the kernels, and the host passes query + diag in.
//
//===----------------------------------------------------------------------===//

#include "fa/Transforms/Masks.h"
#include "mlir/Dialect/Arith/IR/Arith.h"

#include <algorithm>

using namespace mlir;
using namespace mlir::fa;

using Pred = arith::CmpIPredicate;

Value MaskBuilder::constant(int64_t v) {
  return arith::ConstantOp::create(b, loc, b.getIntegerAttr(type, v));
}

Value MaskBuilder::windowSize(int64_t size) {
  return constant(std::min<int64_t>(size, int64_t(1) << 30));
}

Value MaskBuilder::diagonal(Value nq, Value nk) {
  if (!masks.needsDiagonal())
    return Value();
  return arith::SubIOp::create(b, loc, nk, nq);
}

Value MaskBuilder::keep(Value query, Value key, Value nk, Value diag,
                        Value aligned) {
  Value keep;
  auto both = [&](Value m) {
    keep = keep ? arith::AndIOp::create(b, loc, keep, m).getResult() : m;
  };
  auto onDiagonal = [&]() -> Value {
    return aligned ? aligned : arith::AddIOp::create(b, loc, query, diag);
  };
  if (nk)
    both(arith::CmpIOp::create(b, loc, Pred::slt, key, nk));
  if (masks.causal) {
    Value last = masks.topLeft() ? query : onDiagonal();
    both(arith::CmpIOp::create(b, loc, Pred::sle, key, last));
  }
  if (masks.window) {
    Value center = onDiagonal();
    Value left = windowSize(masks.window[0]);
    Value lo = arith::SubIOp::create(b, loc, center, left);
    both(arith::CmpIOp::create(b, loc, Pred::sge, key, lo));
    Value right = windowSize(masks.window[1]);
    Value hi = arith::AddIOp::create(b, loc, center, right);
    both(arith::CmpIOp::create(b, loc, Pred::sle, key, hi));
  }
  return keep;
}

RowRange MaskBuilder::visibleKeys(Value q0, Value qEnd, Value nk, Value diag,
                                  int64_t blockKV) {
  Value zero = constant(0);
  Value begin = zero, end = nk;
  // Query i sees keys up to i (+ diag) and, with a window, from i + diag -
  // left to i + diag + right: the tile's first row bounds begin, its last
  // (qEnd - 1) bounds end.
  if (masks.causal) {
    Value last =
        masks.topLeft() ? qEnd : arith::AddIOp::create(b, loc, qEnd, diag);
    Value capped = arith::MinSIOp::create(b, loc, end, last);
    end = arith::MaxSIOp::create(b, loc, zero, capped);
  }
  if (masks.window) {
    Value left = windowSize(masks.window[0]);
    Value first = arith::AddIOp::create(b, loc, q0, diag);
    Value lo = arith::SubIOp::create(b, loc, first, left);
    // Start on a K/V tile boundary so that every Q tile sees the same tiles.
    Value block = constant(blockKV);
    Value from = arith::MaxSIOp::create(b, loc, zero, lo);
    Value tiles = arith::DivUIOp::create(b, loc, from, block);
    begin = arith::MulIOp::create(b, loc, tiles, block);
    Value right = windowSize(masks.window[1]);
    Value last = arith::AddIOp::create(b, loc, qEnd, diag);
    Value hi = arith::AddIOp::create(b, loc, last, right);
    Value capped = arith::MinSIOp::create(b, loc, end, hi);
    end = arith::MaxSIOp::create(b, loc, zero, capped);
  }
  return {begin, end};
}

RowRange MaskBuilder::visibleQueries(Value k0, Value kEnd, Value nq,
                                     Value diag) {
  // Key j is seen by queries from j (- diag) on and, with a window, by
  // j - diag - right to j - diag + left.
  Value begin = constant(0), end = nq;
  if (masks.causal) {
    Value first =
        masks.topLeft() ? k0 : arith::SubIOp::create(b, loc, k0, diag);
    begin = arith::MaxSIOp::create(b, loc, begin, first);
  }
  if (masks.window) {
    Value right = windowSize(masks.window[1]);
    Value first = arith::SubIOp::create(b, loc, k0, diag);
    Value lo = arith::SubIOp::create(b, loc, first, right);
    begin = arith::MaxSIOp::create(b, loc, begin, lo);
    Value left = windowSize(masks.window[0]);
    Value last = arith::SubIOp::create(b, loc, kEnd, diag);
    Value hi = arith::AddIOp::create(b, loc, last, left);
    end = arith::MinSIOp::create(b, loc, end, hi);
  }
  return {begin, end};
}

Value MaskBuilder::tileNeedsMask(Value q0, int64_t blockQ, Value kv0,
                                 int64_t blockKV, Value nk, Value diag) {
  Value need;
  auto either = [&](Value m) {
    need = need ? arith::OrIOp::create(b, loc, need, m).getResult() : m;
  };
  Value tileEnd = arith::AddIOp::create(b, loc, kv0, constant(blockKV));
  if (nk)
    either(arith::CmpIOp::create(b, loc, Pred::sgt, tileEnd, nk));
  Value lastRow;
  if (masks.window)
    lastRow = arith::AddIOp::create(b, loc, q0, constant(blockQ - 1));
  auto lastKey = [&]() -> Value {
    return arith::SubIOp::create(b, loc, tileEnd, constant(1));
  };
  // The first row sees the fewest keys past the diagonal and the window's
  // right edge, the last row the fewest before its left edge.
  if (masks.causal) {
    Value last = masks.topLeft() ? q0 : arith::AddIOp::create(b, loc, q0, diag);
    Value key = lastKey();
    either(arith::CmpIOp::create(b, loc, Pred::sgt, key, last));
  }
  if (masks.window) {
    Value left = windowSize(masks.window[0]);
    Value center = arith::AddIOp::create(b, loc, lastRow, diag);
    Value lo = arith::SubIOp::create(b, loc, center, left);
    either(arith::CmpIOp::create(b, loc, Pred::slt, kv0, lo));
    Value right = windowSize(masks.window[1]);
    Value first = arith::AddIOp::create(b, loc, q0, diag);
    Value hi = arith::AddIOp::create(b, loc, first, right);
    Value key = lastKey();
    either(arith::CmpIOp::create(b, loc, Pred::sgt, key, hi));
  }
  return need;
}
