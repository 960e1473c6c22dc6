//===- CudaJit.cpp - Compile fa.attention to a PTX kernel -----------------===//

#include "fa/Compiler/CudaJit.h"
#include "fa/Compiler/Pipelines.h"
#include "fa/Runtime/Cuda.h"
#include "fa/Runtime/KernelCache.h"
#include "fa/Version.h"
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

std::shared_ptr<const ::fa::runtime::CachedKernel>
mlir::fa::getOrCompileCudaKernel(AttentionOp op, StringRef chip, bool &compiled,
                                 std::string &error) {
  namespace rt = ::fa::runtime;
  // The key: the op in generic form (attributes, regions, types), the chip
  // and the compiler version.
  std::string irText;
  llvm::raw_string_ostream irOS(irText);
  op->print(irOS, OpPrintingFlags().printGenericOpForm());
  std::string key = rt::makeKey(irText, chip, FA_VERSION);
  compiled = false;
  rt::Expected<std::shared_ptr<const rt::CachedKernel>> cached =
      rt::KernelCache::global().getOrCompile(
          key, [&]() -> rt::Expected<rt::CachedKernel> {
            compiled = true;
            FailureOr<CudaKernelImage> image = compileCudaKernel(op, chip);
            if (failed(image))
              return rt::Status::error("fa-pipeline-cuda failed");
            rt::CachedKernel kernel;
            kernel.kernelName = image->name;
            kernel.blockX = image->threads;
            kernel.dynamicSharedBytes = image->sharedBytes;
            kernel.gridRule =
                "ceil(Nq/" + std::to_string(image->blockQ) + "),Hq,B";
            kernel.paramLayout = "q,k,v,o,lse,strides[14],nq,nk,group,scale";
            kernel.chip = chip.str();
            kernel.image = image->ptx;
            return kernel;
          });
  if (cached.failed()) {
    error = cached.getMessage();
    return nullptr;
  }
  return cached.value();
}

int64_t mlir::fa::getBlockQ(const ::fa::runtime::CachedKernel &kernel) {
  StringRef rule(kernel.gridRule);
  if (!rule.consume_front("ceil(Nq/"))
    return 0;
  int64_t blockQ = 0;
  if (rule.take_until([](char c) { return c == ')'; }).getAsInteger(10, blockQ))
    return 0;
  return blockQ;
}

::fa::runtime::Status
mlir::fa::launchCudaKernel(const ::fa::runtime::CachedKernel &kernel,
                           const ::fa::runtime::Function &function,
                           const CudaAttentionCall &call, void *stream) {
  namespace rt = ::fa::runtime;
  int64_t blockQ = getBlockQ(kernel);
  if (blockQ <= 0)
    return rt::Status::error("kernel cache entry has a bad grid rule '" +
                             kernel.gridRule + "'");
  if (call.batch == 0 || call.headsQ == 0 || call.seqQ == 0)
    return rt::Status::success();
  CudaAttentionCall c = call; // the driver reads parameters through pointers
  int32_t seqQ = c.seqQ, seqKV = c.seqKV,
          group = static_cast<int32_t>(c.headsQ / c.headsKV);
  void *params[23];
  for (int i = 0; i < 5; ++i)
    params[i] = &c.pointers[i];
  for (int i = 0; i < 14; ++i)
    params[5 + i] = &c.strides[i];
  params[19] = &seqQ;
  params[20] = &seqKV;
  params[21] = &group;
  params[22] = &c.scaleLog2;
  rt::Dim3 grid{static_cast<unsigned>((c.seqQ + blockQ - 1) / blockQ),
                static_cast<unsigned>(c.headsQ),
                static_cast<unsigned>(c.batch)};
  return rt::launch(function, grid, rt::Dim3{kernel.blockX, 1, 1},
                    kernel.dynamicSharedBytes, stream, params);
}
