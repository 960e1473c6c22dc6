//===- Passes.h - FA conversion passes --------------------------*- C++ -*-===//

#ifndef FA_CONVERSION_PASSES_H
#define FA_CONVERSION_PASSES_H

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/GPU/IR/GPUDialect.h"
#include "mlir/Dialect/LLVMIR/LLVMDialect.h"
#include "mlir/Dialect/LLVMIR/NVVMDialect.h"
#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/Dialect/Math/IR/Math.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"
#include "mlir/Pass/Pass.h"

namespace mlir::fa {

#define GEN_PASS_DECL
#include "fa/Conversion/Passes.h.inc"

#define GEN_PASS_REGISTRATION
#include "fa/Conversion/Passes.h.inc"

} // namespace mlir::fa

#endif // FA_CONVERSION_PASSES_H
