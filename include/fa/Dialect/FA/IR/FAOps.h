//===- FAOps.h - FA operations and attributes -------------------*- C++ -*-===//

#ifndef FA_DIALECT_FA_IR_FAOPS_H
#define FA_DIALECT_FA_IR_FAOPS_H

#include "fa/Dialect/FA/IR/FADialect.h"
#include "mlir/Bytecode/BytecodeOpInterface.h"
#include "mlir/IR/Attributes.h"
#include "mlir/IR/BuiltinTypes.h"
#include "mlir/IR/OpDefinition.h"
#include "mlir/Interfaces/ControlFlowInterfaces.h"
#include "mlir/Interfaces/SideEffectInterfaces.h"

#include "fa/Runtime/KernelAbi.h"
#include "llvm/ADT/Hashing.h"

#include "fa/Dialect/FA/IR/FAEnums.h.inc"

namespace fa::runtime {
// #fa.kernel_abi stores these (uniqued by value).
inline llvm::hash_code hash_value(const GridAxis &axis) {
  return llvm::hash_combine(axis.kind, axis.rows);
}
inline llvm::hash_code hash_value(const GridRule &rule) {
  return llvm::hash_combine(rule.x, rule.y, rule.z);
}
/// Hashes what KernelParam::operator== compares.
inline llvm::hash_code hash_value(const KernelParam &p) {
  switch (p.kind) {
  case KernelParam::Kind::Pointer:
  case KernelParam::Kind::Stride:
    return llvm::hash_combine(p.kind, p.type, p.tensor, p.dim,
                              p.tensor == AbiTensor::Capture ? p.capture
                                                             : uint32_t(0));
  case KernelParam::Kind::Size:
    return llvm::hash_combine(p.kind, p.type, p.size);
  case KernelParam::Kind::Scalar:
    return llvm::hash_combine(p.kind, p.type, p.scalar);
  case KernelParam::Kind::TensorMap:
    return llvm::hash_combine(p.kind, p.type, p.tensor, p.dim, p.boxRows);
  }
  return llvm::hash_combine(p.kind);
}
} // namespace fa::runtime

#define GET_ATTRDEF_CLASSES
#include "fa/Dialect/FA/IR/FAAttrs.h.inc"

#define GET_OP_CLASSES
#include "fa/Dialect/FA/IR/FAOps.h.inc"

#endif // FA_DIALECT_FA_IR_FAOPS_H
