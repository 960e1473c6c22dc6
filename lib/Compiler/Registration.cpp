//===- Registration.cpp - Register FA's dialects and passes ---------------===//

#include "fa/Compiler/Registration.h"
#include "fa/Dialect/FA/IR/FADialect.h"
#include "fa/Transforms/Passes.h"
#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/Dialect/Math/IR/Math.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"
#include "mlir/IR/DialectRegistry.h"
#include "mlir/Transforms/Passes.h"

void mlir::fa::registerDialects(DialectRegistry &registry) {
  registry.insert<FADialect, arith::ArithDialect, func::FuncDialect,
                  linalg::LinalgDialect, math::MathDialect,
                  tensor::TensorDialect>();
}

void mlir::fa::registerPasses() {
  mlir::registerTransformsPasses();
  mlir::fa::registerFAPasses();
}
