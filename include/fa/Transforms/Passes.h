//===- Passes.h - FA transformation passes ----------------------*- C++ -*-===//

#ifndef FA_TRANSFORMS_PASSES_H
#define FA_TRANSFORMS_PASSES_H

#include "fa/Dialect/FAGPU/IR/FAGPU.h"
#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Bufferization/IR/Bufferization.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/GPU/IR/GPUDialect.h"
#include "mlir/Dialect/LLVMIR/NVVMDialect.h"
#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/Dialect/Math/IR/Math.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"
#include "mlir/Pass/Pass.h"

namespace mlir::fa {

#define GEN_PASS_DECL
#include "fa/Transforms/Passes.h.inc"

#define GEN_PASS_REGISTRATION
#include "fa/Transforms/Passes.h.inc"

/// Discardable attributes by which fa-tile marks the two softmax loops for
/// fa-online-softmax. The row-max loop's value names the exponential the
/// row-sum loop takes of the scores minus the max: "exp" (the host) or
/// "exp2" (the GPU kernels, whose max is in the log2 domain).
inline constexpr llvm::StringLiteral kRowMaxLoopAttr = "fa.softmax_row_max";
inline constexpr llvm::StringLiteral kRowSumLoopAttr = "fa.softmax_row_sum";
/// Marks the op that yields a K/V tile's scores in each loop where it is not
/// an fa.score_tile (the GPU kernels' masked tile).
inline constexpr llvm::StringLiteral kSoftmaxScoresAttr = "fa.softmax_scores";

/// Set by fa-host-parallel on a function whose loops concurrent calls share:
/// the number of counters its last argument holds.
inline constexpr llvm::StringLiteral kSharedLoopsAttr = "fa.shared_loops";

} // namespace mlir::fa

#endif // FA_TRANSFORMS_PASSES_H
