//===- fa-opt.cpp - mlir-opt with the fa dialect and passes ---------------===//

#include "fa/Compiler/Registration.h"
#include "mlir/IR/DialectRegistry.h"
#include "mlir/InitAllDialects.h"
#include "mlir/InitAllExtensions.h"
#include "mlir/InitAllPasses.h"
#include "mlir/Target/LLVMIR/Dialect/All.h"
#include "mlir/Tools/mlir-opt/MlirOptMain.h"

int main(int argc, char **argv) {
  // Everything upstream too: users mix fa with any dialect and lower
  // step by step with upstream passes.
  mlir::DialectRegistry registry;
  mlir::registerAllDialects(registry);
  mlir::registerAllExtensions(registry);
  // gpu-module-to-binary translates to LLVM IR (PTX for NVVM targets).
  mlir::registerAllToLLVMIRTranslations(registry);
  mlir::fa::registerDialects(registry);
  mlir::registerAllPasses();
  mlir::fa::registerPasses();
  return mlir::asMainReturnCode(mlir::MlirOptMain(
      argc, argv, "FA optimizer driver: the fa dialect and passes\n",
      registry));
}
