//===- CudaJit.cpp - Compile fa.attention to a PTX kernel -----------------===//

#include "fa/Compiler/CudaJit.h"
#include "fa/Compiler/Pipelines.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/GPU/IR/GPUDialect.h"
#include "mlir/Dialect/LLVMIR/LLVMDialect.h"
#include "mlir/IR/BuiltinOps.h"
#include "mlir/IR/IRMapping.h"
#include "mlir/Pass/PassManager.h"

using namespace mlir;
using namespace mlir::fa;

FailureOr<CudaKernelImage> mlir::fa::compileCudaKernel(AttentionOp op,
                                                       StringRef chip) {
  MLIRContext *ctx = op.getContext();
  ctx->loadDialect<gpu::GPUDialect, LLVM::LLVMDialect, func::FuncDialect>();
  // A module holding a copy of just this op, inside a function of its
  // operands.
  OpBuilder b(ctx);
  OwningOpRef<ModuleOp> module = ModuleOp::create(op.getLoc());
  b.setInsertionPointToEnd(module->getBody());
  auto func = func::FuncOp::create(
      b, op.getLoc(), "attention",
      b.getFunctionType(op->getOperandTypes(), op->getResultTypes()));
  Block *entry = func.addEntryBlock();
  b.setInsertionPointToStart(entry);
  IRMapping mapping;
  mapping.map(op->getOperands(), entry->getArguments());
  Operation *clone = b.clone(*op, mapping);
  func::ReturnOp::create(b, op.getLoc(), clone->getResults());

  PassManager pm(ctx);
  CudaPipelineOptions options;
  options.chip = chip.str();
  buildCudaPipeline(pm, options);
  if (failed(pm.run(*module)))
    return failure();

  CudaKernelImage image;
  image.chip = chip.str();
  image.name = "fa_forward_0";
  auto binary = module->lookupSymbol<gpu::BinaryOp>("fa_kernels");
  if (!binary || binary.getObjects().size() != 1)
    return op.emitOpError("fa-pipeline-cuda produced no kernel binary");
  auto object = cast<gpu::ObjectAttr>(binary.getObjects()[0]);
  image.ptx = object.getObject().getValue().str();
  // convert-fa-to-nvvm records the launch contract on the module, which
  // outlives the gpu.module that serialization replaces.
  auto meta = (*module)->getAttrOfType<DictionaryAttr>("fa.kernel");
  if (!meta)
    return op.emitOpError("fa-pipeline-cuda lost the kernel's launch contract");
  image.sharedBytes = cast<IntegerAttr>(meta.get("shared_bytes")).getInt();
  image.blockQ = cast<IntegerAttr>(meta.get("block_q")).getInt();
  image.threads = cast<IntegerAttr>(meta.get("threads")).getInt();
  return image;
}
