//===- Registration.cpp - Register FA's dialects and passes ---------------===//

#include "fa/Compiler/Registration.h"
#include "fa/Dialect/FA/IR/FADialect.h"
#include "fa/Transforms/Passes.h"
#include "mlir/IR/DialectRegistry.h"
#include "mlir/InitAllDialects.h"
#include "mlir/InitAllExtensions.h"
#include "mlir/InitAllPasses.h"

void mlir::fa::registerDialects(DialectRegistry &registry) {
  registry.insert<FADialect>();
  // fa-opt is mlir-opt plus fa: users mix fa with any upstream dialect.
  mlir::registerAllDialects(registry);
  mlir::registerAllExtensions(registry);
}

void mlir::fa::registerPasses() {
  mlir::registerAllPasses();
  mlir::fa::registerFAPasses();
}
