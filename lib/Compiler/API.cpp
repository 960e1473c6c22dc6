//===- API.cpp - FA's public C++ API ----------------------------*- C++ -*-===//

#include "fa/fa.h"

#include "fa/Compiler/Registration.h"
#include "mlir/IR/BuiltinOps.h"
#include "mlir/IR/Diagnostics.h"
#include "mlir/IR/Location.h"
#include "mlir/IR/MLIRContext.h"
#include "mlir/Parser/Parser.h"
#include "mlir/Pass/PassManager.h"
#include "mlir/Pass/PassRegistry.h"
#include "llvm/Support/SourceMgr.h"
#include "llvm/Support/raw_ostream.h"

#include <mutex>

#ifndef FA_VERSION
#define FA_VERSION "0.1.0"
#endif

std::string fa::version() { return FA_VERSION; }

std::string fa::runPipeline(const std::string &mlir,
                            const std::string &pipeline) {
  static std::once_flag registered;
  std::call_once(registered, [] { mlir::fa::registerPasses(); });

  mlir::DialectRegistry registry;
  mlir::fa::registerDialects(registry);
  mlir::MLIRContext context(registry);

  // Collect diagnostics as "loc: error: message" lines for the exception.
  std::string diagnostics;
  llvm::raw_string_ostream diagOS(diagnostics);
  mlir::ScopedDiagnosticHandler handler(&context, [&](mlir::Diagnostic &diag) {
    if (auto loc = diag.getLocation()->findInstanceOf<mlir::FileLineColLoc>())
      diagOS << loc.getFilename().getValue() << ":" << loc.getLine() << ":"
             << loc.getColumn() << ": ";
    else
      diagOS << diag.getLocation() << ": ";
    switch (diag.getSeverity()) {
    case mlir::DiagnosticSeverity::Error:
      diagOS << "error: ";
      break;
    case mlir::DiagnosticSeverity::Warning:
      diagOS << "warning: ";
      break;
    default:
      diagOS << "note: ";
      break;
    }
    diagOS << diag << "\n";
    return mlir::success();
  });

  llvm::SourceMgr sourceMgr;
  sourceMgr.AddNewSourceBuffer(
      llvm::MemoryBuffer::getMemBufferCopy(mlir, "<input>"), llvm::SMLoc());
  mlir::OwningOpRef<mlir::ModuleOp> module =
      mlir::parseSourceFile<mlir::ModuleOp>(sourceMgr, &context);
  if (!module)
    throw Error("fa::runPipeline: invalid input IR\n" + diagnostics);

  std::string pipelineErrors;
  llvm::raw_string_ostream pipelineOS(pipelineErrors);
  mlir::FailureOr<mlir::OpPassManager> parsed =
      mlir::parsePassPipeline(pipeline, pipelineOS);
  if (mlir::failed(parsed))
    throw Error("fa::runPipeline: invalid pass pipeline '" + pipeline +
                "': " + pipelineErrors);
  mlir::PassManager pm(&context, parsed->getOpAnchorName());
  static_cast<mlir::OpPassManager &>(pm) = std::move(*parsed);
  if (mlir::failed(pm.run(*module)))
    throw Error("fa::runPipeline: pipeline '" + pipeline + "' failed\n" +
                diagnostics);

  std::string result;
  llvm::raw_string_ostream os(result);
  module->print(os);
  return result;
}
