//===- fa-opt.cpp - mlir-opt with the fa dialect and passes ---------------===//

#include "fa/Compiler/Registration.h"
#include "mlir/IR/DialectRegistry.h"
#include "mlir/Tools/mlir-opt/MlirOptMain.h"

int main(int argc, char **argv) {
  mlir::DialectRegistry registry;
  mlir::fa::registerDialects(registry);
  mlir::fa::registerPasses();
  return mlir::asMainReturnCode(mlir::MlirOptMain(
      argc, argv, "FA optimizer driver: the fa dialect and passes\n",
      registry));
}
