//===- SoftmaxRotation.h - The loop rotated by one product ------*- C++ -*-===//
//
// FlashAttention-3's intra-warpgroup overlap, shared by fa-overlap-softmax
// (copies in cp.async groups) and fa-warp-specialize (copies by a producer
// warpgroup, guarded by mbarriers): iteration n starts S(n) = Q K(n)^T and
// then P(n - 1) V(n - 1), waits for S(n) alone, computes tile n's softmax
// while P V runs, and waits for P V before rounding P(n) and rescaling the
// accumulator (P(n - 1)'s registers are the tensor cores' until then).
// Tile 0's scores and softmax are peeled before the loop, under a test that
// there is a tile, and the last P V follows it. How V(n - 1) is waited for
// and released, and the warpgroups' turns, are the caller's hooks.
//
//===----------------------------------------------------------------------===//

#ifndef FA_TRANSFORMS_SOFTMAXROTATION_H
#define FA_TRANSFORMS_SOFTMAXROTATION_H

#include "fa/Dialect/FAGPU/IR/FAGPU.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/IR/Builders.h"
#include "llvm/ADT/STLFunctionalExtras.h"

namespace mlir::fa {

/// fa-online-softmax's loop over K/V tiles: S = Q K^T (`scores`), the
/// softmax, P rounded into P V's A operand (`pack`), and P V (`pv`) adding
/// to the carried accumulator `accIndex`, rescaled (`rescale`; null where
/// the softmax has a fixed offset, fa-bounded-softmax).
struct SoftmaxLoop {
  scf::ForOp loop;
  fagpu::MmaOp scores, pv;
  fagpu::ScaleRowsOp rescale;
  fagpu::ToOperandOp pack;
  unsigned accIndex = 0;
  /// The ring position P V reads (its stage, and with mbarriers their
  /// parity): values of the loop, carried one iteration by the rotation.
  SmallVector<Value> position;
};

/// What differs between the kernels' copies and schedules; each hook may
/// be empty.
struct SoftmaxRotationHooks {
  /// Ops of the body neither peeled nor in the rotated body (V's wait and
  /// release, which the hooks below place).
  llvm::function_ref<bool(Operation *)> skip;
  /// Before S's issue (a turn taken; `first` in the peeled tile).
  llvm::function_ref<void(OpBuilder &, bool first)> beforeScores;
  /// After S's issue in the peeled tile (the turn passed).
  llvm::function_ref<void(OpBuilder &)> afterPeeledScores;
  /// Around P(n - 1) V(n - 1)'s issue, which reads V at `position` (V's
  /// wait before it; the turn passed after it).
  llvm::function_ref<void(OpBuilder &, ValueRange position)> beforePV;
  llvm::function_ref<void(OpBuilder &)> afterPV;
  /// After P V's wait (V's stage released).
  llvm::function_ref<void(OpBuilder &, ValueRange position)> afterPVWait;
  /// Around the last tile's P V, after the rotated loop, which carries
  /// `results` (the original loop's).
  llvm::function_ref<void(OpBuilder &, ValueRange position, ValueRange results)>
      beforeLastPV;
  llvm::function_ref<void(OpBuilder &, ValueRange position)> afterLastPV;
  /// Where there is no tile (the guard's other branch).
  llvm::function_ref<void(OpBuilder &)> noTiles;
};

/// Matches the accumulator `l.pv` adds to: the loop's carried value,
/// rescaled first (fa-online-softmax) or not (fa-bounded-softmax), read
/// once in the body. Sets `l.rescale` (null without one) and `l.accIndex`;
/// false where P V's accumulator is not of that form.
bool matchCarriedAccumulator(SoftmaxLoop &l);

/// Replaces `l.loop` by the guarded, peeled and rotated loop.
void rotateSoftmaxLoop(SoftmaxLoop l, const SoftmaxRotationHooks &hooks);

} // namespace mlir::fa

#endif // FA_TRANSFORMS_SOFTMAXROTATION_H
