//===- FAGPU.h - FA's kernel-level IR ---------------------------*- C++ -*-===//

#ifndef FA_DIALECT_FAGPU_IR_FAGPU_H
#define FA_DIALECT_FAGPU_IR_FAGPU_H

#include "fa/Dialect/FA/IR/FAOps.h"
#include "mlir/Bytecode/BytecodeOpInterface.h"
#include "mlir/IR/BuiltinTypes.h"
#include "mlir/IR/Dialect.h"
#include "mlir/IR/OpDefinition.h"
#include "mlir/Interfaces/InferTypeOpInterface.h"
#include "mlir/Interfaces/SideEffectInterfaces.h"

#include "fa/Dialect/FAGPU/IR/FAGPUOpsDialect.h.inc"

#include "fa/Dialect/FAGPU/IR/FAGPUEnums.h.inc"

#define GET_ATTRDEF_CLASSES
#include "fa/Dialect/FAGPU/IR/FAGPUAttrs.h.inc"

#define GET_TYPEDEF_CLASSES
#include "fa/Dialect/FAGPU/IR/FAGPUOpsTypes.h.inc"

#define GET_OP_CLASSES
#include "fa/Dialect/FAGPU/IR/FAGPUOps.h.inc"

namespace mlir::fagpu {

/// The number of warps of a register tile's layout, or 0 when `type` is not
/// a tensor with an fagpu layout.
unsigned getLayoutWarps(Type type);

/// Registers (32-bit values) one thread holds for `type`, a tensor with an
/// fagpu layout: f32 values of accumulators and rows, pairs of 16-bit
/// elements of operands.
int64_t getRegistersPerThread(RankedTensorType type);

/// The columns of a tile in wgmma's layout holding rows of `d` elements:
/// whole 64-column (128-byte swizzle) panels, zero past d.
inline int64_t getWgmmaTileCols(int64_t d) { return (d + 63) / 64 * 64; }

} // namespace mlir::fagpu

#endif // FA_DIALECT_FAGPU_IR_FAGPU_H
