//===- Masks.h - The causal and window masks, defined once ------*- C++ -*-===//
//
// fa.attention's causal and window masks and what tiling derives from them,
// as arith ops on integers of one type: index in the host route, i32 in the
// GPU kernels. With diag = Nk - Nq (the bottom-right diagonal's offset),
// query i keeps key j when
//   j < Nk                                   (where the caller asks for it),
//   j <= i (causal top-left), j <= i + diag  (causal bottom-right),
//   i + diag - left <= j <= i + diag + right (window [left, right]).
// The per-element predicate, the keys a query tile visits, the queries a key
// tile reaches and whether a tile pair needs per-element masking all follow
// from it here; a new mask adds its terms to each.
//
//===----------------------------------------------------------------------===//

#ifndef FA_TRANSFORMS_MASKS_H
#define FA_TRANSFORMS_MASKS_H

#include "fa/Dialect/FA/IR/FAOps.h"
#include "mlir/IR/Builders.h"

namespace mlir::fa {

/// A variant's causal and window masks (both optional).
struct Masks {
  CausalKindAttr causal;
  DenseI64ArrayAttr window;

  template <typename OpT> static Masks get(OpT op) {
    return {op.getCausalAttr(), op.getWindowAttr()};
  }
  /// Whether either mask is set.
  bool any() const { return causal || window; }
  /// Whether the causal mask is top-left (j <= i).
  bool topLeft() const {
    return causal && causal.getValue() == CausalKind::TopLeft;
  }
  /// Whether the masks read diag = Nk - Nq.
  bool needsDiagonal() const { return window || (causal && !topLeft()); }
};

/// Rows [begin, end) of a sequence.
struct RowRange {
  Value begin, end;
};

/// Emits the masks' predicates and ranges at the builder's insertion point,
/// on values of `type` (index or i32) and constants created in it. Window
/// sizes are capped at 2^30: sequences stay below that, so the bounds' i32
/// arithmetic cannot overflow and a wider window masks nothing more.
class MaskBuilder {
public:
  MaskBuilder(OpBuilder &b, Location loc, const Masks &masks, Type type)
      : b(b), loc(loc), masks(masks), type(type) {}

  /// diag = Nk - Nq where the masks read it, else null.
  Value diagonal(Value nq, Value nk);
  /// Whether query `query` keeps key `key` (i1): key < nk unless `nk` is
  /// null, then causal and window. Their diagonal position query + diag is
  /// `aligned` where the caller has it, else computed from `diag`. Null
  /// when nothing is checked.
  Value keep(Value query, Value key, Value nk, Value diag,
             Value aligned = Value());
  /// The keys that some query of [q0, qEnd) keeps: 0 <= end <= nk (end <=
  /// begin: none); with a window, begin is a multiple of `blockKV` so that
  /// every query tile visits the same K/V tiles.
  RowRange visibleKeys(Value q0, Value qEnd, Value nk, Value diag,
                       int64_t blockKV);
  /// The queries that keep some key of [k0, kEnd) (begin >= end: none).
  RowRange visibleQueries(Value k0, Value kEnd, Value nq, Value diag);
  /// Whether the tile of queries [q0, q0 + blockQ) x keys [kv0, kv0 +
  /// blockKV) drops some pair: it crosses nk (unless `nk` is null), the
  /// causal diagonal or a window edge. Null when nothing is checked.
  Value tileNeedsMask(Value q0, int64_t blockQ, Value kv0, int64_t blockKV,
                      Value nk, Value diag);

private:
  Value constant(int64_t v);
  /// Window size `size` as a constant, capped at 2^30.
  Value windowSize(int64_t size);

  OpBuilder &b;
  Location loc;
  Masks masks;
  Type type;
};

} // namespace mlir::fa

#endif // FA_TRANSFORMS_MASKS_H
