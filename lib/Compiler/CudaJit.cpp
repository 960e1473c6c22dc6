//===- CudaJit.cpp - fa.attention(_grad) to PTX kernels, and launches -----===//

#include "fa/Compiler/CudaJit.h"
#include "CodegenHash.h"
#include "fa/Compiler/Pipelines.h"
#include "fa/Runtime/Cuda.h"
#include "fa/Runtime/KernelCache.h"
#include "fa/Transforms/GpuKernels.h"
#include "fa/Version.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/GPU/IR/GPUDialect.h"
#include "mlir/Dialect/LLVMIR/LLVMDialect.h"
#include "mlir/IR/BuiltinOps.h"
#include "mlir/IR/IRMapping.h"
#include "mlir/Pass/PassManager.h"

#include <algorithm>
#include <cstdlib>

using namespace mlir;
using namespace mlir::fa;

namespace {
namespace rt = ::fa::runtime;

/// What fa-pipeline-cuda made of an op: the PTX, and the ABI of each kernel
/// (in the gpu.module's order: launch order).
struct Compiled {
  OwningOpRef<ModuleOp> module;
  std::string ptx;
  std::vector<rt::KernelAbi> kernels;
};

/// Runs fa-pipeline-cuda for `chip` (and the forward's `tile`, the
/// backward's `bwd`) on a module holding a copy of just `op` inside a
/// function of its operands: its two halves, reading the kernels' ABIs
/// (fa.kernel_abi) in between, since gpu-module-to-binary drops them.
FailureOr<Compiled> compileAlone(Operation *op, StringRef chip,
                                 CudaForwardTile tile = {},
                                 CudaBackwardOptions bwd = {}) {
  MLIRContext *ctx = op->getContext();
  ctx->loadDialect<gpu::GPUDialect, LLVM::LLVMDialect, func::FuncDialect>();
  OpBuilder b(ctx);
  Compiled result;
  result.module = ModuleOp::create(op->getLoc());
  OwningOpRef<ModuleOp> &module = result.module;
  b.setInsertionPointToEnd(module->getBody());
  auto func = func::FuncOp::create(
      b, op->getLoc(), "attention",
      b.getFunctionType(op->getOperandTypes(), op->getResultTypes()));
  Block *entry = func.addEntryBlock();
  b.setInsertionPointToStart(entry);
  IRMapping mapping;
  mapping.map(op->getOperands(), entry->getArguments());
  Operation *clone = b.clone(*op, mapping);
  func::ReturnOp::create(b, op->getLoc(), clone->getResults());

  PassManager pm(ctx);
  CudaPipelineOptions options;
  options.chip = chip.str();
  options.blockQ = tile.blockQ;
  options.blockKV = tile.blockKV;
  options.kvStages = tile.kvStages;
  options.fwdWgmma = tile.wgmma;
  options.fwdOverlap = tile.overlap;
  options.fwdWarpSpecialize = tile.warpSpecialize;
  options.fwdTma = tile.tma;
  options.fwdPingpong = tile.pingpong;
  options.fwdWsOverlap = tile.wsOverlap;
  options.fwdPersistent = tile.persistent;
  options.fwdKeyRanges = tile.keyRanges;
  options.fwdHeadGroup = tile.headGroup;
  options.fwdCausalOrder = tile.causalOrder;
  options.fwdBoundedSoftmax = tile.boundedSoftmax;
  options.fwdExp2Fma = tile.exp2Fma;
  options.fwdTanhFma = tile.tanhFma;
  options.fwdBiasTiles = tile.biasTiles;
  options.bwdPrefetch = bwd.prefetch;
  options.bwdAtomicDQ = bwd.atomicDQ;
  options.bwdDkDvWarps = bwd.dkdvWarps;
  options.bwdWgmma = bwd.wgmma;
  options.bwdDeterministic = bwd.deterministic;
  buildCudaKernelPipeline(pm, options);
  if (failed(pm.run(*module)))
    return failure();
  auto kernels = module->lookupSymbol<gpu::GPUModuleOp>(kKernelModuleName);
  if (!kernels)
    return op->emitOpError("fa-pipeline-cuda produced no kernel module");
  for (auto fn : kernels.getOps<LLVM::LLVMFuncOp>())
    if (auto abi = fn->getAttrOfType<KernelAbiAttr>(kKernelAbiAttrName))
      result.kernels.push_back(abi.getAbi(fn.getSymName()));
  disableSLPVectorizer();
  PassManager toBinary(ctx);
  buildCudaBinaryPipeline(toBinary);
  if (failed(toBinary.run(*module)))
    return failure();
  auto binary = module->lookupSymbol<gpu::BinaryOp>(kKernelModuleName);
  if (!binary || binary.getObjects().size() != 1)
    return op->emitOpError("fa-pipeline-cuda produced no kernel binary");
  auto object = cast<gpu::ObjectAttr>(binary.getObjects()[0]);
  result.ptx = object.getObject().getValue().str();
  return result;
}

/// The cache key of `op` for `chip`: the op in generic form (attributes,
/// regions, types), the chip (with the forward's tile and the backward's
/// prefetch when not the default) and the compiler (version and codegen
/// hash).
std::string cacheKey(Operation *op, StringRef chip, CudaForwardTile tile = {},
                     CudaBackwardOptions bwd = {}) {
  std::string irText;
  llvm::raw_string_ostream irOS(irText);
  op->print(irOS, OpPrintingFlags().printGenericOpForm());
  std::string target = chip.str();
  if (tile.blockQ || tile.blockKV)
    target += ";block-q=" + std::to_string(tile.blockQ) +
              ";block-kv=" + std::to_string(tile.blockKV);
  if (tile.kvStages)
    target += ";kv-stages=" + std::to_string(tile.kvStages);
  if (!tile.wgmma)
    target += ";fwd-wgmma=0";
  if (tile.overlap)
    target += ";fwd-overlap=1";
  if (!tile.warpSpecialize)
    target += ";fwd-warp-specialize=0";
  if (tile.warpSpecialize && !tile.tma)
    target += ";fwd-tma=0";
  if (tile.warpSpecialize && !tile.pingpong)
    target += ";fwd-pingpong=0";
  if (tile.warpSpecialize && !tile.wsOverlap)
    target += ";fwd-ws-overlap=0";
  if (tile.warpSpecialize && tile.persistent != "auto")
    target += ";fwd-persistent=" + tile.persistent;
  if (!tile.keyRanges)
    target += ";fwd-key-ranges=0";
  if (tile.headGroup)
    target += ";fwd-head-group=" + std::to_string(tile.headGroup);
  if (tile.warpSpecialize && tile.causalOrder != "tail")
    target += ";fwd-causal-order=" + tile.causalOrder;
  if (!tile.boundedSoftmax)
    target += ";fwd-bounded-softmax=0";
  if (tile.exp2Fma >= 0)
    target += ";fwd-exp2-fma=" + std::to_string(tile.exp2Fma);
  if (tile.tanhFma >= 0)
    target += ";fwd-tanh-fma=" + std::to_string(tile.tanhFma);
  if (!tile.biasTiles)
    target += ";fwd-bias-tiles=0";
  if (!bwd.prefetch)
    target += ";bwd-prefetch=0";
  if (bwd.atomicDQ)
    target += ";bwd-atomic-dq=1";
  if (bwd.dkdvWarps)
    target += ";bwd-dkdv-warps=" + std::to_string(bwd.dkdvWarps);
  if (!bwd.wgmma)
    target += ";bwd-wgmma=0";
  if (bwd.deterministic)
    target += ";bwd-deterministic=1";
  // The version and the hash of the code generators' sources: kernels of an
  // older compiler are never reused.
  return ::fa::runtime::makeKey(irText, target, FA_VERSION "+" FA_CODEGEN_HASH);
}

} // namespace

FailureOr<CudaKernelImage> mlir::fa::compileCudaKernel(AttentionOp op,
                                                       StringRef chip,
                                                       CudaForwardTile tile) {
  FailureOr<Compiled> compiled = compileAlone(op, chip, tile);
  if (failed(compiled))
    return failure();
  // The forward, then fa-key-ranges' kernel where it bounds the loop.
  std::vector<rt::KernelAbi> &kernels = compiled->kernels;
  bool ranged = kernels.size() == 2 && rt::takesKeyRanges(kernels[0]) &&
                rt::takesKeyRanges(kernels[1]) &&
                kernels[1].grid.y.kind == rt::GridAxis::Kind::TilesNk;
  if (kernels.size() != 1 && !ranged)
    return op.emitOpError("fa-pipeline-cuda made ")
           << kernels.size()
           << " kernels with a launch ABI (fa.kernel_abi), expected the "
              "forward and at most its key-range kernel";
  CudaKernelImage image;
  image.chip = chip.str();
  image.ptx = std::move(compiled->ptx);
  image.abi = std::move(kernels[0]);
  if (ranged)
    image.keyRanges = std::move(kernels[1]);
  return image;
}

std::shared_ptr<const ::fa::runtime::CachedKernel>
mlir::fa::getOrCompileCudaKernel(AttentionOp op, StringRef chip, bool &compiled,
                                 std::string &error, CudaForwardTile tile) {
  std::string key = cacheKey(op, chip, tile);
  compiled = false;
  rt::Expected<std::shared_ptr<const rt::CachedKernel>> cached =
      rt::KernelCache::global().getOrCompile(
          key, [&]() -> rt::Expected<rt::CachedKernel> {
            compiled = true;
            FailureOr<CudaKernelImage> image =
                compileCudaKernel(op, chip, tile);
            if (failed(image))
              return rt::Status::error("fa-pipeline-cuda failed");
            rt::CachedKernel kernel;
            kernel.kernels.push_back(image->abi);
            if (image->keyRanges)
              kernel.kernels.push_back(*image->keyRanges);
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

namespace {
/// FA_PERSISTENT_CTAS (a positive integer): the CTAs of a persistent grid at
/// most where the call sets none, e.g. to leave SMs to concurrent kernels;
/// 0 where it is unset. Read once.
int64_t persistentCtasFromEnvironment() {
  static const int64_t ctas = [] {
    const char *env = std::getenv("FA_PERSISTENT_CTAS");
    return env ? std::max<int64_t>(0, std::atoll(env)) : 0;
  }();
  return ctas;
}
} // namespace

rt::Status mlir::fa::launchCudaKernel(const rt::KernelAbi &abi,
                                      const rt::Function &function,
                                      const rt::KernelCall &call,
                                      void *stream) {
  const rt::Device &device = function.getDevice();
  rt::Expected<rt::GridSize> grid =
      rt::getLaunchGrid(abi.grid, call, uint32_t(device.getSMCount()));
  if (grid.failed())
    return rt::Status::error("kernel " + abi.name + ": " + grid.getMessage());
  if (int64_t cap = persistentCtasFromEnvironment();
      cap && !call.persistentCtas &&
      abi.grid.x.kind == rt::GridAxis::Kind::Persistent)
    grid->x = uint32_t(std::min<int64_t>(grid->x, cap));
  if (grid->empty())
    return rt::Status::success();
  // TMA kernels' maps, encoded by the driver of the function's device.
  rt::Driver &driver = device.getDriver();
  rt::Expected<rt::ParamBuffer> params = rt::ParamBuffer::build(
      abi, call, [&](const rt::TensorMapRequest &request, void *map) {
        return rt::encodeTensorMap(request, map, driver);
      });
  if (params.failed())
    return params.getStatus();
  return rt::launch(function, rt::Dim3{grid->x, grid->y, grid->z},
                    rt::Dim3{abi.threads, 1, 1}, abi.sharedBytes, stream,
                    params->getArgs());
}

rt::Expected<CudaFunctions>
mlir::fa::loadCudaFunctions(const rt::CachedKernel &kernel,
                            const rt::Module &module) {
  CudaFunctions functions;
  for (const rt::KernelAbi &abi : kernel.kernels) {
    rt::Expected<rt::Function> function = rt::Function::get(module, abi.name);
    if (function.failed())
      return function.getStatus();
    if (abi.sharedBytes > 0) {
      rt::Status status =
          function->setMaxDynamicSharedMemory(int(abi.sharedBytes));
      if (status.failed())
        return status;
    }
    functions.kernels.push_back(function.take());
  }
  return functions;
}

uint64_t mlir::fa::getCudaForwardWorkspaceBytes(const rt::CachedKernel &kernel,
                                                const rt::KernelCall &call) {
  if (kernel.kernels.size() != 2)
    return 0;
  return rt::getKeyRangesBytes(kernel.kernels[0].grid, call);
}

rt::Status mlir::fa::launchCudaForward(const rt::CachedKernel &kernel,
                                       const CudaFunctions &functions,
                                       const rt::KernelCall &call, void *stream,
                                       uint64_t workspace) {
  size_t count = kernel.kernels.size();
  if (count < 1 || count > 2 || functions.kernels.size() != count)
    return rt::Status::error(
        "forward: kernel cache entry has " + std::to_string(count) +
        " kernels (a forward has 1, or 2 with key ranges), " +
        std::to_string(functions.kernels.size()) + " of them loaded");
  const rt::KernelAbi &forward = kernel.kernels[0];
  if (count == 1)
    return launchCudaKernel(forward, functions.kernels[0], call, stream);
  rt::Expected<rt::GridSize> grid = rt::getLaunchGrid(forward.grid, call);
  if (grid.failed())
    return rt::Status::error("kernel " + forward.name + ": " +
                             grid.getMessage());
  if (grid->empty())
    return rt::Status::success();
  // The key ranges, written by the key-range kernel and read by the
  // forward: in the caller's workspace, or allocated and freed on the
  // stream (no host wait).
  if (workspace % 256 != 0)
    return rt::Status::error("forward: the workspace must be 256-byte "
                             "aligned");
  uint64_t rangesBytes = rt::getKeyRangesBytes(forward.grid, call);
  rt::StreamBuffer ownRanges;
  if (!workspace) {
    rt::Expected<rt::StreamBuffer> ranges = rt::StreamBuffer::allocate(
        functions.kernels[0].getDevice(), rangesBytes, stream);
    if (ranges.failed())
      return ranges.getStatus();
    ownRanges = ranges.take();
    workspace = ownRanges.getPointer();
  }
  // The key-range kernel merges into zeroed records (KernelAbi.h).
  if (rt::Status st = rt::fillWordsAsync(functions.kernels[1].getDevice(),
                                         workspace, 0, rangesBytes / 4, stream);
      st.failed())
    return st;
  rt::KernelCall values = call;
  values[rt::AbiTensor::KeyRanges].data = workspace;
  for (size_t i : {size_t(1), size_t(0)})
    if (rt::Status st = launchCudaKernel(kernel.kernels[i],
                                         functions.kernels[i], values, stream);
        st.failed())
      return st;
  return ownRanges.release();
}

//===----------------------------------------------------------------------===//
// The backward
//===----------------------------------------------------------------------===//

FailureOr<CudaBackwardImage>
mlir::fa::compileCudaBackward(AttentionGradOp op, StringRef chip,
                              CudaBackwardOptions options) {
  FailureOr<Compiled> compiled = compileAlone(op, chip, {}, options);
  if (failed(compiled))
    return failure();
  size_t expected = op.getGradBias() ? 4 : 3;
  if (compiled->kernels.size() != expected)
    return op.emitOpError("fa-pipeline-cuda made ")
           << compiled->kernels.size()
           << " kernels with a launch ABI (fa.kernel_abi), expected "
           << expected;
  CudaBackwardImage image;
  image.chip = chip.str();
  image.ptx = std::move(compiled->ptx);
  image.kernels = std::move(compiled->kernels);
  return image;
}

std::shared_ptr<const rt::CachedKernel>
mlir::fa::getOrCompileCudaBackward(AttentionGradOp op, StringRef chip,
                                   bool &compiled, std::string &error,
                                   CudaBackwardOptions options) {
  compiled = false;
  rt::Expected<std::shared_ptr<const rt::CachedKernel>> cached =
      rt::KernelCache::global().getOrCompile(
          cacheKey(op, chip, {}, options),
          [&]() -> rt::Expected<rt::CachedKernel> {
            compiled = true;
            FailureOr<CudaBackwardImage> image =
                compileCudaBackward(op, chip, options);
            if (failed(image))
              return rt::Status::error("fa-pipeline-cuda failed");
            rt::CachedKernel kernel;
            kernel.kernels = std::move(image->kernels);
            kernel.chip = chip.str();
            kernel.image = std::move(image->ptx);
            return kernel;
          });
  if (cached.failed()) {
    error = cached.getMessage();
    return nullptr;
  }
  return cached.value();
}

namespace {
/// Dsum's bytes in the workspace, rounded up to 256 (the accumulator's
/// alignment).
uint64_t dsumBytes(const rt::KernelCall &call) {
  uint64_t bytes = uint64_t(call.batch) * uint64_t(call.headsQ) *
                   uint64_t(call.seqQ) * sizeof(float);
  return (bytes + 255) / 256 * 256;
}

/// D of the dQ accumulator the kernels of `kernel` take, or 0.
uint32_t dqAccumColumns(const rt::CachedKernel &kernel) {
  for (const rt::KernelAbi &abi : kernel.kernels)
    if (uint32_t columns = rt::getDQAccumColumns(abi))
      return columns;
  return 0;
}

/// The least workspace: with Nq = 0 it is the scratch that the dK/dV
/// kernel's (discarded) loads of Q, dO, lse and Dsum address.
constexpr uint64_t kMinWorkspaceBytes = 1024;

/// Dsum, then the f32 dQ accumulator of `accumDim` columns (0: none).
uint64_t workspaceBytes(const rt::KernelCall &call, uint64_t accumDim) {
  return std::max(kMinWorkspaceBytes,
                  dsumBytes(call) +
                      uint64_t(call.batch) * uint64_t(call.headsQ) *
                          uint64_t(call.seqQ) * accumDim * sizeof(float));
}
} // namespace

uint64_t mlir::fa::getCudaBackwardWorkspaceBytes(const rt::CachedKernel &kernel,
                                                 const CudaBackwardCall &call) {
  return workspaceBytes(call, dqAccumColumns(kernel));
}

rt::Status mlir::fa::launchCudaBackward(const rt::CachedKernel &kernel,
                                        const CudaFunctions &functions,
                                        const CudaBackwardCall &call,
                                        void *stream) {
  if (kernel.kernels.empty() ||
      functions.kernels.size() != kernel.kernels.size())
    return rt::Status::error(
        "backward: kernel cache entry has " +
        std::to_string(kernel.kernels.size()) + " kernels, " +
        std::to_string(functions.kernels.size()) + " of them loaded");
  if (call.batch < 0 || call.headsQ < 0 || call.headsKV < 0 || call.seqQ < 0 ||
      call.seqKV < 0)
    return rt::Status::error("backward: negative size");
  // The grids first: nothing to launch (an empty problem; dBias of a bias
  // broadcast over rows or columns has elements, zeros, even when Nq = Nk =
  // 0), or a grid past CUDA's limits, before any work.
  std::vector<rt::GridSize> grids;
  bool any = false;
  for (const rt::KernelAbi &abi : kernel.kernels) {
    rt::Expected<rt::GridSize> grid = rt::getLaunchGrid(abi.grid, call);
    if (grid.failed())
      return rt::Status::error("backward: kernel " + abi.name + ": " +
                               grid.getMessage());
    any |= !grid->empty();
    grids.push_back(*grid);
  }
  if (!any)
    return rt::Status::success();
  if (call.headsKV == 0 || call.headsQ % call.headsKV != 0)
    return rt::Status::error(
        "backward: Hq = " + std::to_string(call.headsQ) +
        " is not a multiple of Hkv = " + std::to_string(call.headsKV));
  if (call.seqQ >= (int64_t(1) << 30) || call.seqKV >= (int64_t(1) << 30))
    return rt::Status::error("backward: sequences must be shorter than 2^30");

  // The workspace: the caller's, or one of the stream-ordered allocator's
  // for this call, freed on the stream after the kernels (no host wait).
  rt::StreamBuffer ownWorkspace;
  uint64_t workspace = call.workspace;
  if (workspace % 256 != 0)
    return rt::Status::error("backward: the workspace must be 256-byte "
                             "aligned");
  if (!workspace) {
    rt::Expected<rt::StreamBuffer> buffer = rt::StreamBuffer::allocate(
        functions.kernels[0].getDevice(),
        workspaceBytes(call, dqAccumColumns(kernel)), stream);
    if (buffer.failed())
      return buffer.getStatus();
    ownWorkspace = buffer.take();
    workspace = ownWorkspace.getPointer();
  }

  // The launcher's values: Dsum ([B, Hq, Nq] contiguous) and the
  // accumulator after it, in the workspace.
  rt::KernelCall values = call;
  values.set(rt::AbiTensor::Dsum, workspace,
             {call.headsQ * call.seqQ, call.seqQ});
  values[rt::AbiTensor::DQAccum].data = workspace + dsumBytes(call);
  // With Nq = 0 the dK/dV kernel still runs (dK = dV = 0) and addresses the
  // first row of Q, dO, lse and Dsum, whose loads its guards discard: those
  // (empty, maybe null) arguments point at the workspace instead.
  if (call.seqQ == 0)
    for (rt::AbiTensor t :
         {rt::AbiTensor::Q, rt::AbiTensor::O, rt::AbiTensor::DO,
          rt::AbiTensor::Lse, rt::AbiTensor::DQ})
      values[t].data = workspace;
  // Every kernel's parameters before the first launch: a call that does
  // not fit the kernels launches none.
  std::vector<rt::ParamBuffer> params;
  for (const rt::KernelAbi &abi : kernel.kernels) {
    rt::Expected<rt::ParamBuffer> buffer = rt::ParamBuffer::build(
        abi, values, [&](const rt::TensorMapRequest &request, void *map) {
          return rt::encodeTensorMap(
              request, map, functions.kernels[0].getDevice().getDriver());
        });
    if (buffer.failed())
      return rt::Status::error("backward: " + buffer.getMessage());
    params.push_back(buffer.take());
  }
  for (size_t i = 0; i < kernel.kernels.size(); ++i) {
    if (grids[i].empty())
      continue;
    const rt::KernelAbi &abi = kernel.kernels[i];
    rt::Status status = rt::launch(functions.kernels[i],
                                   rt::Dim3{grids[i].x, grids[i].y, grids[i].z},
                                   rt::Dim3{abi.threads, 1, 1}, abi.sharedBytes,
                                   stream, params[i].getArgs());
    if (status.failed())
      return status;
  }
  // Our workspace, if any, is freed on the stream after the kernels.
  return ownWorkspace.release();
}
