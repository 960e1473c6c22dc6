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

using namespace mlir;
using namespace mlir::fa;

namespace {
/// Runs fa-pipeline-cuda for `chip` (and the forward's `tile`, the
/// backward's `bwdPrefetch`) on a module holding a copy of just `op` inside a
/// function of its operands; the module and its PTX.
FailureOr<std::pair<OwningOpRef<ModuleOp>, std::string>>
compileAlone(Operation *op, StringRef chip, CudaForwardTile tile = {},
             CudaBackwardOptions bwd = {}) {
  MLIRContext *ctx = op->getContext();
  ctx->loadDialect<gpu::GPUDialect, LLVM::LLVMDialect, func::FuncDialect>();
  OpBuilder b(ctx);
  OwningOpRef<ModuleOp> module = ModuleOp::create(op->getLoc());
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
  options.bwdPrefetch = bwd.prefetch;
  options.bwdAtomicDQ = bwd.atomicDQ;
  options.bwdDkDvWarps = bwd.dkdvWarps;
  options.bwdWgmma = bwd.wgmma;
  options.bwdDeterministic = bwd.deterministic;
  buildCudaPipeline(pm, options);
  if (failed(pm.run(*module)))
    return failure();
  auto binary = module->lookupSymbol<gpu::BinaryOp>("fa_kernels");
  if (!binary || binary.getObjects().size() != 1)
    return op->emitOpError("fa-pipeline-cuda produced no kernel binary");
  auto object = cast<gpu::ObjectAttr>(binary.getObjects()[0]);
  std::string ptx = object.getObject().getValue().str();
  return std::make_pair(std::move(module), std::move(ptx));
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

/// The rank of each of `captures` (tensor types).
std::vector<int64_t> captureRanks(TypeRange captures) {
  std::vector<int64_t> ranks;
  for (Type t : captures)
    ranks.push_back(cast<ShapedType>(t).getRank());
  return ranks;
}

/// A parameter layout split into the kernel's own parameters and its
/// captures' (getCudaCaptureParams).
std::pair<StringRef, StringRef> splitCaptureParams(StringRef layout) {
  size_t at = layout.find(",capture0,");
  if (at == StringRef::npos)
    return {layout, ""};
  return {layout.take_front(at), layout.drop_front(at)};
}

/// The ranks of `captures` (a call's: one stride per dim).
std::vector<int64_t> captureRanks(const std::vector<CudaCapture> &captures) {
  std::vector<int64_t> ranks;
  for (const CudaCapture &c : captures)
    ranks.push_back(int64_t(c.strides.size()));
  return ranks;
}

/// Appends the launch parameters of `captures` (pointers into them: they
/// must outlive the launch).
void appendCaptureParams(std::vector<void *> &params,
                         std::vector<CudaCapture> &captures) {
  for (CudaCapture &c : captures) {
    params.push_back(&c.data);
    for (int64_t &stride : c.strides)
      params.push_back(&stride);
  }
}
} // namespace

std::string mlir::fa::getCudaCaptureParams(ArrayRef<int64_t> ranks) {
  std::string params;
  for (auto [i, rank] : llvm::enumerate(ranks)) {
    std::string name = "capture" + std::to_string(i);
    params +=
        "," + name + "," + name + "_strides[" + std::to_string(rank) + "]";
  }
  return params;
}

FailureOr<CudaKernelImage> mlir::fa::compileCudaKernel(AttentionOp op,
                                                       StringRef chip,
                                                       CudaForwardTile tile) {
  auto compiled = compileAlone(op, chip, tile);
  if (failed(compiled))
    return failure();
  auto &[module, ptx] = *compiled;
  CudaKernelImage image;
  image.chip = chip.str();
  image.name = "fa_forward_0";
  image.ptx = std::move(ptx);
  // convert-fa-to-nvvm records the launch contract on the module, which
  // outlives the gpu.module that serialization replaces.
  auto meta = (*module)->getAttrOfType<DictionaryAttr>("fa.kernel");
  if (!meta)
    return op.emitOpError("fa-pipeline-cuda lost the kernel's launch contract");
  image.sharedBytes = cast<IntegerAttr>(meta.get("shared_bytes")).getInt();
  image.blockQ = cast<IntegerAttr>(meta.get("block_q")).getInt();
  image.threads = cast<IntegerAttr>(meta.get("threads")).getInt();
  image.dropout = static_cast<bool>(op.getDropoutSeed());
  image.scored = isScoredForward(op);
  image.captureRanks = captureRanks(op.getCaptures().getTypes());
  return image;
}

std::shared_ptr<const ::fa::runtime::CachedKernel>
mlir::fa::getOrCompileCudaKernel(AttentionOp op, StringRef chip, bool &compiled,
                                 std::string &error, CudaForwardTile tile) {
  namespace rt = ::fa::runtime;
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
            kernel.kernelName = image->name;
            kernel.blockX = image->threads;
            kernel.dynamicSharedBytes = image->sharedBytes;
            kernel.gridRule =
                "ceil(Nq/" + std::to_string(image->blockQ) + "),Hq,B";
            kernel.paramLayout = (image->dropout  ? kCudaForwardDropoutParams
                                  : image->scored ? kCudaForwardScoredParams
                                                  : kCudaForwardParams) +
                                 getCudaCaptureParams(image->captureRanks);
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
  auto [own, captureParams] = splitCaptureParams(kernel.paramLayout);
  bool dropout = own == kCudaForwardDropoutParams;
  bool scored = dropout || own == kCudaForwardScoredParams;
  if (!scored && own != kCudaForwardParams)
    return rt::Status::error("kernel cache entry has an unknown parameter "
                             "layout '" +
                             kernel.paramLayout + "'");
  std::string callCaptures = getCudaCaptureParams(captureRanks(c.captures));
  if (captureParams != callCaptures)
    return rt::Status::error("kernel cache entry has parameter layout '" +
                             kernel.paramLayout + "', but the call passes " +
                             std::to_string(c.captures.size()) +
                             " captures ('" + callCaptures + "')");
  std::vector<void *> params(23);
  for (int i = 0; i < 5; ++i)
    params[i] = &c.pointers[i];
  for (int i = 0; i < 14; ++i)
    params[5 + i] = &c.strides[i];
  params[19] = &seqQ;
  params[20] = &seqKV;
  params[21] = &group;
  params[22] = &c.scaleLog2;
  if (scored) {
    params.push_back(&c.bias);
    for (int i = 0; i < 4; ++i)
      params.push_back(&c.biasStrides[i]);
    params.push_back(&c.slopes);
    params.push_back(&c.slopesBatchStride);
  }
  if (dropout)
    params.push_back(&c.seed);
  appendCaptureParams(params, c.captures);
  rt::Dim3 grid{static_cast<unsigned>((c.seqQ + blockQ - 1) / blockQ),
                static_cast<unsigned>(c.headsQ),
                static_cast<unsigned>(c.batch)};
  return rt::launch(function, grid, rt::Dim3{kernel.blockX, 1, 1},
                    kernel.dynamicSharedBytes, stream, params.data());
}

//===----------------------------------------------------------------------===//
// The backward
//===----------------------------------------------------------------------===//

std::string mlir::fa::getCudaDQAccumParam(int64_t d) {
  return ",dq_accum_d" + std::to_string(d);
}

FailureOr<CudaBackwardImage>
mlir::fa::compileCudaBackward(AttentionGradOp op, StringRef chip,
                              CudaBackwardOptions options) {
  auto compiled = compileAlone(op, chip, {}, options);
  if (failed(compiled))
    return failure();
  auto &[module, ptx] = *compiled;
  CudaBackwardImage image;
  image.chip = chip.str();
  image.ptx = std::move(ptx);
  // convert-fa-to-nvvm records the launch contracts on the module.
  auto contracts = (*module)->getAttrOfType<ArrayAttr>("fa.backward");
  if (!contracts || contracts.size() != (op.getGradBias() ? 4u : 3u))
    return op.emitOpError(
        "fa-pipeline-cuda lost the backward kernels' launch contracts");
  for (Attribute attr : contracts) {
    auto dict = cast<DictionaryAttr>(attr);
    CudaEntryPoint entry;
    entry.name = cast<StringAttr>(dict.get("name")).str();
    entry.gridRule = cast<StringAttr>(dict.get("grid")).str();
    entry.threads = cast<IntegerAttr>(dict.get("threads")).getInt();
    entry.sharedBytes = cast<IntegerAttr>(dict.get("shared_bytes")).getInt();
    image.entries.push_back(std::move(entry));
  }
  image.dropout = static_cast<bool>(op.getDropoutSeed());
  image.scored = image.dropout || op.getBias() || op.getAlibiSlopes() ||
                 !op.getScoreMod().empty() || !op.getMaskMod().empty();
  image.captureRanks = captureRanks(op.getCaptures().getTypes());
  // Atomic dQ (asked for, or chosen by default): dq_convert in place of dq.
  if (llvm::any_of(image.entries, [](const CudaEntryPoint &e) {
        return StringRef(e.name).starts_with("fa_backward_dq_convert_");
      }))
    image.dqAccumDim = op.getQuery().getType().getDimSize(3);
  return image;
}

std::shared_ptr<const ::fa::runtime::CachedKernel>
mlir::fa::getOrCompileCudaBackward(AttentionGradOp op, StringRef chip,
                                   bool &compiled, std::string &error,
                                   CudaBackwardOptions options) {
  namespace rt = ::fa::runtime;
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
            const CudaEntryPoint &first = image->entries[0];
            kernel.kernelName = first.name;
            kernel.blockX = first.threads;
            kernel.dynamicSharedBytes = first.sharedBytes;
            kernel.gridRule = first.gridRule;
            std::string params =
                (image->dropout  ? kCudaBackwardDropoutParams
                 : image->scored ? kCudaBackwardScoredParams
                                 : kCudaBackwardParams) +
                (image->dqAccumDim ? getCudaDQAccumParam(image->dqAccumDim)
                                   : "") +
                getCudaCaptureParams(image->captureRanks);
            kernel.paramLayout = params;
            for (const CudaEntryPoint &e :
                 ArrayRef<CudaEntryPoint>(image->entries).drop_front()) {
              rt::CachedKernel::Entry entry;
              entry.kernelName = e.name;
              entry.blockX = e.threads;
              entry.dynamicSharedBytes = e.sharedBytes;
              entry.gridRule = e.gridRule;
              entry.paramLayout = params;
              kernel.entries.push_back(std::move(entry));
            }
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
/// A backward kernel's launch shape, from its cache entry.
struct BackwardLaunch {
  std::string name;
  unsigned threads = 0, sharedBytes = 0;
  /// Its grid: x is ceil(N / rows) over the queries (Nq) or the keys (Nk),
  /// or 1 (`single`); y is Hq, Hkv (`overKeys`) or 1 (`oneHead`); z is B or
  /// 1 (`oneBatch`). dBias's blocks have 1 where the bias broadcasts.
  bool overKeys = false, single = false, oneHead = false, oneBatch = false;
  int64_t rows = 0;
  /// The scored path's parameters (kCudaBackwardScoredParams), and the
  /// seed after them (kCudaBackwardDropoutParams).
  bool scored = false, dropout = false;
  /// The captures' parameters (getCudaCaptureParams).
  std::string captureParams;
  /// D of the atomic dQ accumulator (getCudaDQAccumParam), or 0.
  int64_t accumDim = 0;
};

/// Parses "ceil(Nq/<rows>),Hq,B" or "ceil(Nk/<rows>),Hkv,B", and dbias's
/// "ceil(Nq/<rows>)|1,Hq|1,B|1".
::fa::runtime::Expected<BackwardLaunch>
parseLaunch(const std::string &name, unsigned threads, unsigned sharedBytes,
            const std::string &gridRule, const std::string &params) {
  namespace rt = ::fa::runtime;
  BackwardLaunch launch{name, threads, sharedBytes};
  auto [own, captureParams] = splitCaptureParams(params);
  launch.captureParams = captureParams.str();
  size_t accumAt = own.rfind(",dq_accum_d");
  if (accumAt != StringRef::npos) {
    StringRef dim = own.drop_front(accumAt + strlen(",dq_accum_d"));
    if (dim.getAsInteger(10, launch.accumDim) || launch.accumDim <= 0 ||
        launch.accumDim % 32 != 0)
      return rt::Status::error("kernel " + name + " has parameter layout '" +
                               params + "' with a bad dQ accumulator");
    own = own.take_front(accumAt);
  }
  launch.dropout = own == kCudaBackwardDropoutParams;
  launch.scored = launch.dropout || own == kCudaBackwardScoredParams;
  if (own != kCudaBackwardParams && !launch.scored)
    return rt::Status::error("kernel " + name + " has parameter layout '" +
                             params + "', expected '" + kCudaBackwardParams +
                             "', '" + kCudaBackwardScoredParams + "' or '" +
                             kCudaBackwardDropoutParams + "'");
  StringRef rule(gridRule);
  bool ok;
  if (StringRef(name).starts_with("fa_backward_dbias_")) {
    launch.single = rule.consume_front("1");
    ok = launch.single || (rule.consume_front("ceil(Nq/") &&
                           !rule.consumeInteger(10, launch.rows) &&
                           launch.rows > 0 && rule.consume_front(")"));
    launch.oneHead = rule.consume_front(",1");
    ok = ok && (launch.oneHead || rule.consume_front(",Hq"));
    launch.oneBatch = rule.consume_front(",1");
    ok = ok && (launch.oneBatch || rule.consume_front(",B")) && rule.empty();
  } else {
    ok = rule.consume_front("ceil(N");
    launch.overKeys = rule.consume_front("k");
    ok = ok && (launch.overKeys || rule.consume_front("q")) &&
         rule.consume_front("/") && !rule.consumeInteger(10, launch.rows) &&
         launch.rows > 0 &&
         rule.consume_front(launch.overKeys ? "),Hkv,B" : "),Hq,B") &&
         rule.empty();
  }
  if (!ok)
    return rt::Status::error("kernel " + name + " has a bad grid rule '" +
                             gridRule + "'");
  return launch;
}

/// The kernels of a backward cache entry (three, or four with dbias),
/// checked.
::fa::runtime::Expected<std::vector<BackwardLaunch>>
backwardLaunches(const ::fa::runtime::CachedKernel &kernel) {
  namespace rt = ::fa::runtime;
  if (kernel.entries.size() != 2 && kernel.entries.size() != 3)
    return rt::Status::error("kernel cache entry " + kernel.kernelName +
                             " is not a backward (it has " +
                             std::to_string(kernel.entries.size()) +
                             " further entry points, expected 2 or 3)");
  std::vector<BackwardLaunch> launches;
  rt::Expected<BackwardLaunch> first =
      parseLaunch(kernel.kernelName, kernel.blockX, kernel.dynamicSharedBytes,
                  kernel.gridRule, kernel.paramLayout);
  if (first.failed())
    return first.getStatus();
  launches.push_back(first.take());
  for (const rt::CachedKernel::Entry &e : kernel.entries) {
    rt::Expected<BackwardLaunch> launch =
        parseLaunch(e.kernelName, e.blockX, e.dynamicSharedBytes, e.gridRule,
                    e.paramLayout);
    if (launch.failed())
      return launch.getStatus();
    launches.push_back(launch.take());
  }
  const char *prefixes[4] = {"fa_backward_dsum_", "fa_backward_dkdv_",
                             "fa_backward_dq_", "fa_backward_dbias_"};
  for (size_t i = 0; i < launches.size(); ++i) {
    if (launches[i].scored != launches[0].scored ||
        launches[i].dropout != launches[0].dropout ||
        launches[i].captureParams != launches[0].captureParams ||
        launches[i].accumDim != launches[0].accumDim)
      return rt::Status::error("kernel cache entry " + kernel.kernelName +
                               ": its entry points' parameter layouts differ");
    if (!StringRef(launches[i].name).starts_with(prefixes[i]))
      return rt::Status::error("kernel cache entry " + kernel.kernelName +
                               ": entry point " + std::to_string(i) + " is " +
                               launches[i].name + ", expected " + prefixes[i] +
                               "<i>");
  }
  if (launches.size() == 4 && !launches[0].scored)
    return rt::Status::error("kernel cache entry " + kernel.kernelName +
                             ": dbias needs the scored parameter layout");
  // dQ's kernel is dq_convert exactly when there is an accumulator.
  bool convert =
      StringRef(launches[2].name).starts_with("fa_backward_dq_convert_");
  if (convert != (launches[0].accumDim != 0))
    return rt::Status::error(
        "kernel cache entry " + kernel.kernelName + ": entry point " +
        launches[2].name +
        (convert ? " needs a dQ accumulator parameter"
                 : " does not take the dQ accumulator parameter"));
  return launches;
}

/// Dsum's bytes in the workspace, rounded up to 256 (the accumulator's
/// alignment).
uint64_t dsumBytes(const mlir::fa::CudaBackwardCall &call) {
  uint64_t bytes = uint64_t(call.batch) * uint64_t(call.headsQ) *
                   uint64_t(call.seqQ) * sizeof(float);
  return (bytes + 255) / 256 * 256;
}

/// Dsum, then the f32 dQ accumulator of `accumDim` columns (0: none).
uint64_t workspaceBytes(const mlir::fa::CudaBackwardCall &call,
                        int64_t accumDim) {
  return dsumBytes(call) + uint64_t(call.batch) * uint64_t(call.headsQ) *
                               uint64_t(call.seqQ) * uint64_t(accumDim) *
                               sizeof(float);
}
} // namespace

uint64_t mlir::fa::getCudaBackwardWorkspaceBytes(
    const ::fa::runtime::CachedKernel &kernel, const CudaBackwardCall &call) {
  ::fa::runtime::Expected<std::vector<BackwardLaunch>> launches =
      backwardLaunches(kernel);
  return workspaceBytes(call, launches.failed() ? 0 : (*launches)[0].accumDim);
}

::fa::runtime::Expected<CudaBackwardFunctions>
mlir::fa::loadCudaBackward(const ::fa::runtime::CachedKernel &kernel,
                           const ::fa::runtime::Module &module) {
  namespace rt = ::fa::runtime;
  rt::Expected<std::vector<BackwardLaunch>> launches = backwardLaunches(kernel);
  if (launches.failed())
    return launches.getStatus();
  std::vector<rt::Function> functions;
  for (const BackwardLaunch &launch : *launches) {
    rt::Expected<rt::Function> function =
        rt::Function::get(module, launch.name);
    if (function.failed())
      return function.getStatus();
    if (launch.sharedBytes > 0) {
      rt::Status status =
          function->setMaxDynamicSharedMemory(int(launch.sharedBytes));
      if (status.failed())
        return status;
    }
    functions.push_back(function.take());
  }
  CudaBackwardFunctions result{functions[0], functions[1], functions[2],
                               std::nullopt};
  if (functions.size() == 4)
    result.dbias = functions[3];
  return result;
}

::fa::runtime::Status
mlir::fa::launchCudaBackward(const ::fa::runtime::CachedKernel &kernel,
                             const CudaBackwardFunctions &functions,
                             const CudaBackwardCall &call, void *stream) {
  namespace rt = ::fa::runtime;
  rt::Expected<std::vector<BackwardLaunch>> launches = backwardLaunches(kernel);
  if (launches.failed())
    return launches.getStatus();
  if (call.batch < 0 || call.headsQ < 0 || call.headsKV < 0 || call.seqQ < 0 ||
      call.seqKV < 0)
    return rt::Status::error("backward: negative size");
  std::string callCaptures = getCudaCaptureParams(captureRanks(call.captures));
  if ((*launches)[0].captureParams != callCaptures)
    return rt::Status::error(
        "backward: kernel cache entry " + kernel.kernelName +
        " takes captures '" + (*launches)[0].captureParams +
        "', but the call passes " + std::to_string(call.captures.size()) +
        " ('" + callCaptures + "')");
  bool withDBias = launches->size() == 4;
  if (withDBias && !functions.dbias)
    return rt::Status::error("backward: the dbias kernel is not loaded");
  // dBias of a bias broadcast over rows or columns has elements (zeros)
  // even when Nq = Nk = 0.
  if (call.batch == 0 || call.headsQ == 0 ||
      (call.seqQ == 0 && call.seqKV == 0 && !withDBias))
    return rt::Status::success();
  if (call.headsKV == 0 || call.headsQ % call.headsKV != 0)
    return rt::Status::error(
        "backward: Hq = " + std::to_string(call.headsQ) +
        " is not a multiple of Hkv = " + std::to_string(call.headsKV));
  if (call.seqQ >= (int64_t(1) << 30) || call.seqKV >= (int64_t(1) << 30))
    return rt::Status::error("backward: sequences must be shorter than 2^30");

  // The workspace: the caller's, or one of ours for this call.
  rt::DeviceBuffer ownWorkspace;
  uint64_t workspace = call.workspace;
  if (workspace % 256 != 0)
    return rt::Status::error("backward: the workspace must be 256-byte "
                             "aligned");
  // With Nq = 0 the dK/dV kernel still runs (dK = dV = 0) and addresses the
  // first row of Q, dO, lse and Dsum, whose loads its guards discard: those
  // (empty, maybe null) arguments point at a scratch buffer of ours instead.
  if (call.seqQ == 0)
    workspace = 0;
  if (!workspace) {
    rt::Expected<rt::DeviceBuffer> buffer = rt::DeviceBuffer::allocate(
        functions.dsum.getDevice(),
        std::max<size_t>(workspaceBytes(call, (*launches)[0].accumDim), 1024));
    if (buffer.failed())
      return buffer.getStatus();
    ownWorkspace = buffer.take();
    workspace = ownWorkspace.getPointer();
  }

  // The driver reads parameters through pointers.
  uint64_t pointers[10];
  for (int i = 0; i < 9; ++i)
    pointers[i] = call.pointers[i];
  pointers[9] = workspace;
  if (call.seqQ == 0)
    for (int i : {0, 3, 4, 5, 6}) // Q, O, dO, lse, dQ
      pointers[i] = workspace;
  int64_t strides[28];
  for (int i = 0; i < 26; ++i)
    strides[i] = call.strides[i];
  strides[26] = call.headsQ * call.seqQ;
  strides[27] = call.seqQ;
  int32_t seqQ = int32_t(call.seqQ), seqKV = int32_t(call.seqKV),
          group = int32_t(call.headsQ / call.headsKV);
  float scaleLog2 = call.scaleLog2, scale = call.scale;
  // The scored path's tail (the driver reads as many as a kernel declares).
  uint64_t bias = call.bias, slopes = call.slopes, dbias = call.dbias;
  int64_t biasStrides[4], dbiasStrides[4],
      slopesStride = call.slopesBatchStride;
  for (int i = 0; i < 4; ++i) {
    biasStrides[i] = call.biasStrides[i];
    dbiasStrides[i] = call.dbiasStrides[i];
  }
  int32_t batch = int32_t(call.batch), headsQ = int32_t(call.headsQ);
  std::vector<CudaCapture> captures = call.captures;
  std::vector<void *> params(57);
  for (int i = 0; i < 10; ++i)
    params[i] = &pointers[i];
  for (int i = 0; i < 28; ++i)
    params[10 + i] = &strides[i];
  params[38] = &seqQ;
  params[39] = &seqKV;
  params[40] = &group;
  params[41] = &scaleLog2;
  params[42] = &scale;
  params[43] = &bias;
  for (int i = 0; i < 4; ++i) {
    params[44 + i] = &biasStrides[i];
    params[51 + i] = &dbiasStrides[i];
  }
  params[48] = &slopes;
  params[49] = &slopesStride;
  params[50] = &dbias;
  params[55] = &batch;
  params[56] = &headsQ;
  int64_t seed = call.seed;
  if (!(*launches)[0].scored)
    params.resize(43);
  else if ((*launches)[0].dropout)
    params.push_back(&seed);
  // The accumulator, after Dsum.
  uint64_t dqAccum = workspace + dsumBytes(call);
  if ((*launches)[0].accumDim)
    params.push_back(&dqAccum);
  // The captures follow the kernels' own parameters.
  appendCaptureParams(params, captures);

  const rt::Function *fns[4] = {&functions.dsum, &functions.dkdv, &functions.dq,
                                withDBias ? &*functions.dbias : nullptr};
  for (size_t i = 0; i < launches->size(); ++i) {
    const BackwardLaunch &launch = (*launches)[i];
    int64_t n = launch.overKeys ? call.seqKV : call.seqQ;
    if (n == 0 && !launch.single)
      continue;
    rt::Dim3 grid{
        launch.single ? 1u : unsigned((n + launch.rows - 1) / launch.rows),
        launch.oneHead ? 1u
                       : unsigned(launch.overKeys ? call.headsKV : call.headsQ),
        launch.oneBatch ? 1u : unsigned(call.batch)};
    rt::Status status =
        rt::launch(*fns[i], grid, rt::Dim3{launch.threads, 1, 1},
                   launch.sharedBytes, stream, params.data());
    if (status.failed())
      return status;
  }
  if (ownWorkspace.getPointer()) {
    // The kernels must be done with our workspace before it is freed.
    rt::Driver &driver = functions.dsum.getDevice().getDriver();
    rt::Status status = driver.check(
        driver.api().cuStreamSynchronize(static_cast<rt::cu::Stream>(stream)),
        "cuStreamSynchronize");
    if (status.failed())
      return status;
  }
  return rt::Status::success();
}
