//===- HostJit.cpp - Compile and run attention on the host ---------------===//

#include "fa/Compiler/HostJit.h"
#include "fa/Transforms/Passes.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Bufferization/IR/Bufferization.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/LLVMIR/LLVMDialect.h"
#include "mlir/Dialect/Math/IR/Math.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"
#include "mlir/ExecutionEngine/CRunnerUtils.h"
#include "mlir/ExecutionEngine/ExecutionEngine.h"
#include "mlir/ExecutionEngine/OptUtils.h"
#include "mlir/IR/Builders.h"
#include "mlir/IR/BuiltinTypes.h"
#include "mlir/IR/IRMapping.h"
#include "mlir/Pass/PassManager.h"
#include "mlir/Target/LLVMIR/Dialect/Builtin/BuiltinToLLVMIRTranslation.h"
#include "mlir/Target/LLVMIR/Dialect/LLVMIR/LLVMToLLVMIRTranslation.h"
#include "mlir/Target/LLVMIR/Export.h"
#include "llvm/ADT/TypeSwitch.h"
#include "llvm/ExecutionEngine/Orc/JITTargetMachineBuilder.h"
#include "llvm/ExecutionEngine/Orc/Mangling.h"
#include "llvm/IR/LLVMContext.h"
#include "llvm/IR/Module.h"
#include "llvm/Support/TargetSelect.h"
#include "llvm/Support/ThreadPool.h"
#include "llvm/Support/Threading.h"
#include "llvm/Support/raw_ostream.h"
#include "llvm/TargetParser/Host.h"

#include <atomic>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <limits>
#include <mutex>

using namespace mlir;
using namespace mlir::fa;

//===----------------------------------------------------------------------===//
// Kernel module
//===----------------------------------------------------------------------===//

FailureOr<AttentionOp> mlir::fa::findSingleAttention(Operation *root) {
  SmallVector<AttentionOp> ops;
  root->walk([&](AttentionOp op) { ops.push_back(op); });
  if (ops.size() == 1)
    return ops.front();
  InFlightDiagnostic diag = root->emitError()
                            << "expected exactly one fa.attention, found "
                            << ops.size();
  for (AttentionOp op : ops)
    diag.attachNote(op.getLoc()) << "fa.attention here";
  return failure();
}

FailureOr<Operation *> mlir::fa::findSingleAttentionOp(Operation *root) {
  SmallVector<Operation *> ops;
  root->walk([&](Operation *op) {
    if (isa<AttentionOp, AttentionGradOp>(op))
      ops.push_back(op);
  });
  if (ops.size() == 1)
    return ops.front();
  InFlightDiagnostic diag =
      root->emitError()
      << "expected exactly one fa.attention or fa.attention_grad, found "
      << ops.size();
  for (Operation *op : ops)
    diag.attachNote(op->getLoc()) << op->getName() << " here";
  return failure();
}

/// The memref a tensor argument of the kernel is passed as: the same shape,
/// any strides and offset.
static MemRefType getStridedMemRefType(Type tensorType) {
  auto type = cast<RankedTensorType>(tensorType);
  SmallVector<int64_t> strides(type.getRank(), ShapedType::kDynamic);
  auto layout =
      StridedLayoutAttr::get(type.getContext(), ShapedType::kDynamic, strides);
  return MemRefType::get(type.getShape(), type.getElementType(), layout);
}

OwningOpRef<ModuleOp> mlir::fa::buildHostKernelModule(Operation *op) {
  if (!isa<AttentionOp, AttentionGradOp>(op)) {
    op->emitError("expected fa.attention or fa.attention_grad");
    return nullptr;
  }
  StringRef name =
      isa<AttentionOp>(op) ? kHostKernelName : kHostBackwardKernelName;
  // The wrapper creates ops of these dialects; the caller may only have
  // parsed fa and func.
  op->getContext()
      ->loadDialect<bufferization::BufferizationDialect, func::FuncDialect,
                    tensor::TensorDialect>();
  MLIRContext *ctx = op->getContext();
  Location loc = op->getLoc();
  OpBuilder b(ctx);
  OwningOpRef<ModuleOp> module = ModuleOp::create(loc);
  b.setInsertionPointToEnd(module->getBody());

  // Inputs in operand order (Q, K, V, [O, dO, lse], bias, alibi_slopes,
  // seed; absent optional operands are not operands), then the results as
  // output buffers.
  SmallVector<Value> inputs(op->getOperands());
  SmallVector<Type> argTypes;
  for (Value v : inputs)
    argTypes.push_back(isa<RankedTensorType>(v.getType())
                           ? getStridedMemRefType(v.getType())
                           : v.getType());
  for (Type t : op->getResultTypes())
    argTypes.push_back(getStridedMemRefType(t));

  auto func =
      func::FuncOp::create(b, loc, name, b.getFunctionType(argTypes, {}));
  func->setAttr(LLVM::LLVMDialect::getEmitCWrapperAttrName(), b.getUnitAttr());
  // Distinct buffers (checked by the caller): tell LLVM, so that it keeps
  // accumulators in registers and vectorizes the tile loops.
  for (auto [i, t] : llvm::enumerate(argTypes))
    if (isa<MemRefType>(t))
      func.setArgAttr(i, LLVM::LLVMDialect::getNoAliasAttrName(),
                      b.getUnitAttr());
  Block *entry = func.addEntryBlock();
  b.setInsertionPointToStart(entry);

  // The caller owns distinct buffers: `restrict` lets one-shot bufferization
  // read them in place and write the results straight into the outputs.
  IRMapping mapping;
  for (auto [i, v] : llvm::enumerate(inputs)) {
    Value arg = entry->getArgument(i);
    if (isa<RankedTensorType>(v.getType()))
      arg = bufferization::ToTensorOp::create(b, loc, v.getType(), arg,
                                              /*restrict=*/true);
    mapping.map(v, arg);
  }
  Operation *clone = b.clone(*op, mapping);
  for (auto [i, result] : llvm::enumerate(clone->getResults())) {
    Value out = entry->getArgument(inputs.size() + i);
    bufferization::MaterializeInDestinationOp::create(
        b, loc, TypeRange(), result, out, /*restrict=*/true,
        /*writable=*/true);
  }
  func::ReturnOp::create(b, loc);
  return module;
}

/// A module with one function `name` taking `argTypes`; returns its entry
/// block with the builder at its start.
static Block *createSourceFunction(OpBuilder &b, ModuleOp module,
                                   StringRef name, TypeRange argTypes,
                                   TypeRange resultTypes) {
  b.setInsertionPointToEnd(module.getBody());
  auto func = func::FuncOp::create(b, module.getLoc(), name,
                                   b.getFunctionType(argTypes, resultTypes));
  Block *entry = func.addEntryBlock();
  b.setInsertionPointToStart(entry);
  return entry;
}

/// Copies the score_mod and mask_mod regions and the discardable attributes
/// of `from` (the variant's inherent attributes go through the builders).
static void copyVariantExtras(Operation *from, Region &fromScoreMod,
                              Region &fromMaskMod, Operation *to,
                              Region &toScoreMod, Region &toMaskMod) {
  // Both ops are IsolatedFromAbove: the regions use only their arguments.
  IRMapping mapping;
  fromScoreMod.cloneInto(&toScoreMod, mapping);
  fromMaskMod.cloneInto(&toMaskMod, mapping);
  for (NamedAttribute attr : from->getDiscardableAttrs())
    to->setDiscardableAttr(attr.getName(), attr.getValue());
}

/// The bias, alibi_slopes, dropout_seed and capture operands that `op` has.
template <typename OpT> static SmallVector<Value> getVariantOperands(OpT op) {
  SmallVector<Value> values;
  for (Value v : {Value(op.getBias()), Value(op.getAlibiSlopes()),
                  Value(op.getDropoutSeed())})
    if (v)
      values.push_back(v);
  llvm::append_range(values, op.getCaptures());
  return values;
}

/// `values`, each mapped through `mapping`.
static SmallVector<Value> lookupAll(const IRMapping &mapping,
                                    ValueRange values) {
  return llvm::map_to_vector(values,
                             [&](Value v) { return mapping.lookup(v); });
}

OwningOpRef<ModuleOp> mlir::fa::buildForwardOfGrad(AttentionGradOp grad) {
  MLIRContext *ctx = grad.getContext();
  ctx->loadDialect<func::FuncDialect>();
  Location loc = grad.getLoc();
  OpBuilder b(ctx);
  OwningOpRef<ModuleOp> module = ModuleOp::create(loc);
  SmallVector<Value> variantOperands = getVariantOperands(grad);
  SmallVector<Type> argTypes = {grad.getQuery().getType(),
                                grad.getKey().getType(),
                                grad.getValue().getType()};
  llvm::append_range(argTypes, ValueRange(variantOperands).getTypes());
  Type oType = grad.getOutput().getType(), lseType = grad.getLse().getType();
  Block *entry =
      createSourceFunction(b, *module, "attention", argTypes, {oType, lseType});
  IRMapping args;
  args.map(grad.getQuery(), entry->getArgument(0));
  args.map(grad.getKey(), entry->getArgument(1));
  args.map(grad.getValue(), entry->getArgument(2));
  for (auto [i, v] : llvm::enumerate(variantOperands))
    args.map(v, entry->getArgument(3 + i));
  auto lookup = [&](Value v) { return v ? args.lookup(v) : Value(); };
  auto forward = AttentionOp::create(
      b, loc, oType, lseType, args.lookup(grad.getQuery()),
      args.lookup(grad.getKey()), args.lookup(grad.getValue()),
      lookup(grad.getBias()), lookup(grad.getAlibiSlopes()),
      lookup(grad.getDropoutSeed()), lookupAll(args, grad.getCaptures()),
      grad.getScaleAttr(), grad.getCausalAttr(), grad.getWindowAttr(),
      grad.getSoftcapAttr(), grad.getDropoutPAttr());
  copyVariantExtras(grad, grad.getScoreMod(), grad.getMaskMod(), forward,
                    forward.getScoreMod(), forward.getMaskMod());
  func::ReturnOp::create(b, loc, forward->getResults());
  return module;
}

OwningOpRef<ModuleOp> mlir::fa::buildGradOfForward(AttentionOp forward,
                                                   bool gradBias) {
  MLIRContext *ctx = forward.getContext();
  ctx->loadDialect<func::FuncDialect>();
  Location loc = forward.getLoc();
  OpBuilder b(ctx);
  OwningOpRef<ModuleOp> module = ModuleOp::create(loc);
  auto oType = cast<RankedTensorType>(forward.getOutput().getType());
  Type lseType = forward.getLse()
                     ? forward.getLse().getType()
                     : RankedTensorType::get(oType.getShape().drop_back(),
                                             Float32Type::get(ctx));
  SmallVector<Value> variantOperands = getVariantOperands(forward);
  SmallVector<Type> argTypes = {forward.getQuery().getType(),
                                forward.getKey().getType(),
                                forward.getValue().getType(),
                                oType,
                                oType,
                                lseType};
  llvm::append_range(argTypes, ValueRange(variantOperands).getTypes());
  SmallVector<Type> resultTypes = {forward.getQuery().getType(),
                                   forward.getKey().getType(),
                                   forward.getValue().getType()};
  // dBias has the bias's type.
  Type gradBiasType =
      gradBias && forward.getBias() ? forward.getBias().getType() : Type();
  if (gradBiasType)
    resultTypes.push_back(gradBiasType);
  Block *entry =
      createSourceFunction(b, *module, "attention_grad", argTypes, resultTypes);
  IRMapping args;
  for (auto [i, v] : llvm::enumerate(variantOperands))
    args.map(v, entry->getArgument(6 + i));
  auto lookup = [&](Value v) { return v ? args.lookup(v) : Value(); };
  auto grad = AttentionGradOp::create(
      b, loc, resultTypes[0], resultTypes[1], resultTypes[2], gradBiasType,
      entry->getArgument(0), entry->getArgument(1), entry->getArgument(2),
      entry->getArgument(3), entry->getArgument(4), entry->getArgument(5),
      lookup(forward.getBias()), lookup(forward.getAlibiSlopes()),
      lookup(forward.getDropoutSeed()), lookupAll(args, forward.getCaptures()),
      forward.getScaleAttr(), forward.getCausalAttr(), forward.getWindowAttr(),
      forward.getSoftcapAttr(), forward.getDropoutPAttr());
  copyVariantExtras(forward, forward.getScoreMod(), forward.getMaskMod(), grad,
                    grad.getScoreMod(), grad.getMaskMod());
  func::ReturnOp::create(b, loc, grad->getResults());
  return module;
}

int64_t mlir::fa::getHostVectorBits() {
  static const int64_t bits = [] {
    llvm::StringMap<bool> features = llvm::sys::getHostCPUFeatures();
    if (features.lookup("avx512f"))
      return 512;
    if (features.lookup("avx2") || features.lookup("avx"))
      return 256;
    return 128;
  }();
  return bits;
}

LogicalResult
mlir::fa::lowerHostKernelModule(ModuleOp module,
                                const HostPipelineOptions &options) {
  PassManager pm(module.getContext());
  buildHostPipeline(pm, options);
  if (failed(pm.run(module)))
    return failure();
  // X86's tuning for AVX-512 parts caps the vectorizer at 256 bits (for the
  // clock); the softmax's loops here are throughput-bound beside 512-bit
  // FMA blocks, and measure faster at the full width.
  if (options.vectorBits >= 512) {
    auto width = StringAttr::get(module.getContext(),
                                 std::to_string(options.vectorBits));
    module.walk([&](LLVM::LLVMFuncOp func) {
      if (!func.isExternal())
        func.setPreferVectorWidthAttr(width);
    });
  }
  return success();
}

static void registerLLVMTranslations(MLIRContext &ctx) {
  registerBuiltinDialectTranslation(ctx);
  registerLLVMDialectTranslation(ctx);
}

LogicalResult mlir::fa::printHostLLVMIR(ModuleOp module,
                                        llvm::raw_ostream &os) {
  registerLLVMTranslations(*module.getContext());
  llvm::LLVMContext llvmContext;
  std::unique_ptr<llvm::Module> llvmModule =
      translateModuleToLLVMIR(module, llvmContext);
  if (!llvmModule)
    return failure();
  llvmModule->print(os, nullptr);
  return success();
}

//===----------------------------------------------------------------------===//
// JIT
//===----------------------------------------------------------------------===//

HostKernelArg HostKernelArg::contiguous(void *data, ArrayRef<int64_t> sizes) {
  HostKernelArg arg;
  arg.data = data;
  arg.sizes.assign(sizes.begin(), sizes.end());
  arg.strides.resize(sizes.size());
  int64_t stride = 1;
  for (int64_t i = sizes.size() - 1; i >= 0; --i) {
    arg.strides[i] = stride;
    stride *= sizes[i];
  }
  return arg;
}

HostKernelArg HostKernelArg::i64(int64_t value) {
  HostKernelArg arg;
  arg.scalar = value;
  return arg;
}

namespace {

/// Half-precision conversions LLVM may call instead of inlining them (bf16
/// needs AVX512-BF16, f16 needs F16C). The process may not export them, so
/// the JIT gets its own. The 16-bit results come back in xmm0, the ABI of
/// _Float16; its bits are what we return.
_Float16 fromBits(uint16_t bits) {
  _Float16 h;
  std::memcpy(&h, &bits, sizeof(h));
  return h;
}

uint16_t toBits(_Float16 h) {
  uint16_t bits;
  std::memcpy(&bits, &h, sizeof(bits));
  return bits;
}

uint16_t roundFloatToBFloat16(float value) {
  uint32_t bits;
  std::memcpy(&bits, &value, sizeof(bits));
  if (std::isnan(value))
    return static_cast<uint16_t>((bits >> 16) | 0x40);
  // Round to nearest, ties to even, on the 16 bits that are dropped.
  uint32_t lsb = (bits >> 16) & 1;
  bits += 0x7fff + lsb;
  return static_cast<uint16_t>(bits >> 16);
}

uint16_t roundDoubleToBFloat16(double value) {
  // Round to odd into float first: with 16 spare bits, the second rounding
  // (to nearest even) then gives the correctly rounded result.
  float f = static_cast<float>(value);
  if (!std::isnan(value) && static_cast<double>(f) != value) {
    if (std::fabs(static_cast<double>(f)) > std::fabs(value))
      f = std::nextafter(f, 0.0f);
    uint32_t bits;
    std::memcpy(&bits, &f, sizeof(bits));
    bits |= 1;
    std::memcpy(&f, &bits, sizeof(bits));
  }
  return roundFloatToBFloat16(f);
}

extern "C" _Float16 faTruncSFBF2(float x) {
  return fromBits(roundFloatToBFloat16(x));
}
extern "C" _Float16 faTruncDFBF2(double x) {
  return fromBits(roundDoubleToBFloat16(x));
}
extern "C" float faExtendBFSF2(_Float16 x) {
  uint32_t bits = static_cast<uint32_t>(toBits(x)) << 16;
  float f;
  std::memcpy(&f, &bits, sizeof(f));
  return f;
}
extern "C" _Float16 faTruncSFHF2(float x) { return static_cast<_Float16>(x); }
extern "C" _Float16 faTruncDFHF2(double x) { return static_cast<_Float16>(x); }
extern "C" float faExtendHFSF2(_Float16 x) { return static_cast<float>(x); }

/// memref.copy between non-identity layouts lowers to a call to
/// `memrefCopy`, which lives in libmlir_c_runner_utils.so; FA links MLIR
/// statically and loads no runtime library, so it brings its own.
extern "C" void faMemrefCopy(int64_t elemSize, ::UnrankedMemRefType<char> *src,
                             ::UnrankedMemRefType<char> *dst) {
  DynamicMemRefType<char> s(*src), d(*dst);
  int64_t rank = s.rank;
  char *from = s.data + s.offset * elemSize;
  char *to = d.data + d.offset * elemSize;
  if (rank == 0) {
    std::memcpy(to, from, elemSize);
    return;
  }
  for (int64_t i = 0; i < rank; ++i)
    if (s.sizes[i] == 0)
      return;
  // Walk every index but the innermost; copy rows with memcpy when both
  // sides are contiguous along it.
  int64_t inner = s.sizes[rank - 1];
  bool contiguousRows = s.strides[rank - 1] == 1 && d.strides[rank - 1] == 1;
  SmallVector<int64_t> index(rank, 0);
  while (true) {
    int64_t srcOffset = 0, dstOffset = 0;
    for (int64_t i = 0; i < rank - 1; ++i) {
      srcOffset += index[i] * s.strides[i];
      dstOffset += index[i] * d.strides[i];
    }
    if (contiguousRows) {
      std::memmove(to + dstOffset * elemSize, from + srcOffset * elemSize,
                   inner * elemSize);
    } else {
      for (int64_t j = 0; j < inner; ++j)
        std::memcpy(to + (dstOffset + j * d.strides[rank - 1]) * elemSize,
                    from + (srcOffset + j * s.strides[rank - 1]) * elemSize,
                    elemSize);
    }
    int64_t dim = rank - 2;
    for (; dim >= 0; --dim) {
      if (++index[dim] < s.sizes[dim])
        break;
      index[dim] = 0;
    }
    if (dim < 0)
      return;
  }
}

llvm::orc::SymbolMap runtimeSymbols(llvm::orc::MangleAndInterner interner) {
  llvm::orc::SymbolMap map;
  auto add = [&](const char *name, auto *fn) {
    map[interner(name)] = {llvm::orc::ExecutorAddr::fromPtr(fn),
                           llvm::JITSymbolFlags::Exported};
  };
  add("__truncsfbf2", &faTruncSFBF2);
  add("__truncdfbf2", &faTruncDFBF2);
  add("__extendbfsf2", &faExtendBFSF2);
  add("__truncsfhf2", &faTruncSFHF2);
  add("__truncdfhf2", &faTruncDFHF2);
  add("__extendhfsf2", &faExtendHFSF2);
  add("__gnu_h2f_ieee", &faExtendHFSF2);
  add("__gnu_f2h_ieee", &faTruncSFHF2);
  add("memrefCopy", &faMemrefCopy);
  return map;
}

/// A memref descriptor of any rank FA passes, laid out as
/// StridedMemRefType<T, N> (the element type does not change the layout).
struct Descriptor {
  template <int N> static std::shared_ptr<void> make(const HostKernelArg &a) {
    auto d = std::make_shared<StridedMemRefType<char, N>>();
    d->basePtr = d->data = static_cast<char *>(a.data);
    d->offset = a.offset;
    for (int i = 0; i < N; ++i) {
      d->sizes[i] = a.sizes[i];
      d->strides[i] = a.strides[i];
    }
    return d;
  }
};

std::shared_ptr<void> makeDescriptor(const HostKernelArg &a) {
  switch (a.sizes.size()) {
  case 1:
    return Descriptor::make<1>(a);
  case 2:
    return Descriptor::make<2>(a);
  case 3:
    return Descriptor::make<3>(a);
  case 4:
    return Descriptor::make<4>(a);
  case 5:
    return Descriptor::make<5>(a);
  default:
    return nullptr;
  }
}

} // namespace

HostKernel::~HostKernel() = default;

llvm::Expected<std::unique_ptr<HostKernel>>
HostKernel::compile(ModuleOp kernelModule, const HostPipelineOptions &options) {
  StringRef name = kHostKernelName;
  auto func = kernelModule.lookupSymbol<func::FuncOp>(name);
  if (!func) {
    name = kHostBackwardKernelName;
    func = kernelModule.lookupSymbol<func::FuncOp>(name);
  }
  if (!func)
    return llvm::createStringError("the kernel module has no @%s or @%s",
                                   kHostKernelName, kHostBackwardKernelName);
  std::unique_ptr<HostKernel> kernel(new HostKernel());
  kernel->name = name.str();
  for (Type t : func.getArgumentTypes()) {
    auto memref = dyn_cast<MemRefType>(t);
    kernel->argRanks.push_back(memref ? memref.getRank() : -1);
    kernel->argElementBytes.push_back(
        memref ? memref.getElementTypeBitWidth() / 8 : 0);
  }
  // The kernel's results come back through the last arguments.
  func.walk([&](Operation *op) {
    if (isa<AttentionOp, AttentionGradOp>(op))
      kernel->numOutputs = op->getNumResults();
  });

  // The JIT's code runs on this CPU: its vector width, whatever the caller's
  // options say.
  HostPipelineOptions jitOptions;
  jitOptions.copyOptionValuesFrom(options);
  jitOptions.vectorBits = getHostVectorBits();
  if (failed(lowerHostKernelModule(kernelModule, jitOptions)))
    return llvm::createStringError("fa-pipeline-host failed");

  disableSLPVectorizer();
  static std::once_flag targetInit;
  std::call_once(targetInit, [] {
    llvm::InitializeNativeTarget();
    llvm::InitializeNativeTargetAsmPrinter();
  });
  registerLLVMTranslations(*kernelModule.getContext());

  // Optimize for this CPU (vector width, FMA): without a target machine the
  // vectorizer has no cost model and leaves the tile loops scalar.
  auto tmBuilder = llvm::orc::JITTargetMachineBuilder::detectHost();
  if (!tmBuilder)
    return tmBuilder.takeError();
  auto targetMachine = tmBuilder->createTargetMachine();
  if (!targetMachine)
    return targetMachine.takeError();
  // O2: the kernels' vectors and register blocks are explicit, and O3's
  // extra passes measured no faster here but took a quarter of the
  // compile (backward 2.9-3.9 s at O3, 2.2-3.0 s at O2).
  auto transformer =
      makeOptimizingTransformer(/*optLevel=*/2,
                                /*sizeLevel=*/0, targetMachine->get());
  ExecutionEngineOptions engineOptions;
  engineOptions.transformer = transformer;
  engineOptions.jitCodeGenOptLevel = llvm::CodeGenOptLevel::Aggressive;
  engineOptions.enablePerfNotificationListener = false;
  auto engine = ExecutionEngine::create(kernelModule, engineOptions);
  if (!engine)
    return engine.takeError();
  kernel->engine = std::move(*engine);
  kernel->engine->registerSymbols(runtimeSymbols);
  kernel->engine->initialize();
  // Code is generated lazily on lookup: do it now, so that compile() pays
  // for it and reports unresolved symbols.
  auto entry = kernel->engine->lookupPacked("_mlir_ciface_" + kernel->name);
  if (!entry)
    return entry.takeError();
  kernel->entry = *entry;
  if (auto func = kernelModule.lookupSymbol<LLVM::LLVMFuncOp>(kernel->name))
    if (auto loops = func->getAttrOfType<IntegerAttr>(kSharedLoopsAttr))
      kernel->numSharedLoops = loops.getInt();
  return kernel;
}

static std::atomic<int> hostThreadsOverride{0};

int mlir::fa::getHostThreads() {
  if (int threads = hostThreadsOverride.load(std::memory_order_relaxed))
    return threads;
  static const int defaultThreads = [] {
    if (const char *env = std::getenv("FA_NUM_THREADS")) {
      char *end = nullptr;
      long n = std::strtol(env, &end, 10);
      if (end != env && *end == '\0' && n > 0 && n <= 4096)
        return static_cast<int>(n);
    }
    return static_cast<int>(
        llvm::hardware_concurrency().compute_thread_count());
  }();
  return defaultThreads;
}

void mlir::fa::setHostThreads(int threads) {
  hostThreadsOverride.store(threads > 0 ? threads : 0,
                            std::memory_order_relaxed);
}

/// Helper threads for every kernel call: started on demand, never more than
/// the hardware threads (the calling thread is the other one).
static llvm::StdThreadPool &getHostThreadPool() {
  static llvm::StdThreadPool *pool =
      new llvm::StdThreadPool(llvm::hardware_concurrency());
  return *pool;
}

/// The bytes a strided memref can touch, as [begin, end).
static std::pair<uintptr_t, uintptr_t> getByteExtent(const HostKernelArg &arg,
                                                     int64_t elementBytes) {
  int64_t lo = arg.offset, hi = arg.offset;
  for (auto [size, stride] : llvm::zip(arg.sizes, arg.strides)) {
    if (size == 0)
      return {0, 0};
    (stride < 0 ? lo : hi) += (size - 1) * stride;
  }
  auto base = reinterpret_cast<uintptr_t>(arg.data);
  return {base + lo * elementBytes, base + (hi + 1) * elementBytes};
}

llvm::Error HostKernel::run(ArrayRef<HostKernelArg> args, int maxThreads) {
  if (args.size() != argRanks.size())
    return llvm::createStringError("@%s takes %zu arguments, got %zu",
                                   name.c_str(), argRanks.size(), args.size());
  // The memref arguments are noalias: an output must not share bytes with
  // any other argument.
  for (size_t out = args.size() - numOutputs; out < args.size(); ++out) {
    if (argRanks[out] < 0 || args[out].isScalar())
      continue;
    auto [outBegin, outEnd] = getByteExtent(args[out], argElementBytes[out]);
    for (size_t i = 0; i < args.size(); ++i) {
      if (i == out || argRanks[i] < 0 || args[i].isScalar())
        continue;
      auto [begin, end] = getByteExtent(args[i], argElementBytes[i]);
      if (begin < outEnd && outBegin < end)
        return llvm::createStringError(
            "argument %zu of @%s (an output) overlaps argument %zu", out,
            name.c_str(), i);
    }
  }
  // Descriptors and scalars must outlive the call; packed holds their
  // addresses, as the C interface's packed wrapper expects.
  SmallVector<std::shared_ptr<void>> descriptors;
  SmallVector<void *> pointers(args.size() + 1);
  SmallVector<int64_t> scalars(args.size());
  SmallVector<void *> packed;
  for (auto [i, arg] : llvm::enumerate(args)) {
    int64_t rank = argRanks[i];
    if (rank < 0) {
      if (!arg.isScalar())
        return llvm::createStringError("argument %zu of @%s is an i64", i,
                                       name.c_str());
      scalars[i] = arg.scalar;
      packed.push_back(&scalars[i]);
      continue;
    }
    if (arg.isScalar() || static_cast<int64_t>(arg.sizes.size()) != rank ||
        arg.strides.size() != arg.sizes.size())
      return llvm::createStringError(
          "argument %zu of @%s is a rank-%lld memref", i, name.c_str(),
          static_cast<long long>(rank));
    descriptors.push_back(makeDescriptor(arg));
    if (!descriptors.back())
      return llvm::createStringError("unsupported memref rank %lld",
                                     static_cast<long long>(rank));
    pointers[i] = descriptors.back().get();
    packed.push_back(&pointers[i]);
  }
  if (numSharedLoops == 0) {
    entry(packed.data());
    return llvm::Error::success();
  }
  // Every thread calls the kernel with the same arguments; the counters
  // (updated atomically by the kernel) hand out the loop iterations. A
  // helper that starts late finds them spent and returns.
  SmallVector<int64_t> counters(numSharedLoops, 0);
  descriptors.push_back(makeDescriptor(
      HostKernelArg::contiguous(counters.data(), {numSharedLoops})));
  pointers.back() = descriptors.back().get();
  packed.push_back(&pointers.back());
  int threads = getHostThreads();
  if (maxThreads > 0)
    threads = std::min(threads, maxThreads);
  llvm::ThreadPoolTaskGroup helpers(getHostThreadPool());
  for (int t = 1; t < threads; ++t)
    helpers.async([&] { entry(packed.data()); });
  entry(packed.data());
  helpers.wait();
  return llvm::Error::success();
}

//===----------------------------------------------------------------------===//
// Region evaluation
//===----------------------------------------------------------------------===//

namespace {

enum class Opcode {
  Constant,
  Copy,
  // Floating point.
  AddF,
  SubF,
  MulF,
  DivF,
  RemF,
  NegF,
  MaximumF,
  MinimumF,
  MaxNumF,
  MinNumF,
  Exp,
  Exp2,
  Log,
  Log2,
  Tanh,
  AbsF,
  Sqrt,
  Rsqrt,
  PowF,
  CmpF,
  FPToSI,
  FPToUI,
  // Integers, wrapped to their bit width.
  AddI,
  SubI,
  MulI,
  DivSI,
  DivUI,
  RemSI,
  RemUI,
  FloorDivSI,
  CeilDivSI,
  MaxSI,
  MinSI,
  AndI,
  OrI,
  XOrI,
  AbsI,
  CmpI,
  ExtSI,
  ExtUI,
  TruncI,
  UIToFP,
  Select,
  // tensor.extract from a capture.
  Extract,
};

} // namespace

struct RegionEvaluator::Instruction {
  Opcode opcode;
  int64_t result = 0;
  int64_t operands[3] = {0, 0, 0};
  double constant = 0.0;
  unsigned predicate = 0;
  /// Bit width of the integer the op works on (its operands for cmpi and
  /// casts from integers, its result otherwise); 64 for index.
  unsigned width = 64;
  /// Extract: which capture, and the slots of its indices.
  int64_t capture = 0;
  SmallVector<int64_t, 4> indices;
};

static unsigned getIntWidth(Type t) {
  if (auto it = dyn_cast<IntegerType>(t))
    return it.getWidth();
  return 64;
}

/// `x` (an integer held as a double) as the low `width` bits.
static int64_t saturateToI64(double x);

static uint64_t toUnsigned(double x, unsigned width) {
  uint64_t u = static_cast<uint64_t>(saturateToI64(x));
  return width >= 64 ? u : u & ((uint64_t(1) << width) - 1);
}

/// The low `width` bits of `u` as a signed integer.
static int64_t toSigned(uint64_t u, unsigned width) {
  if (width >= 64)
    return static_cast<int64_t>(u);
  uint64_t sign = uint64_t(1) << (width - 1);
  u &= (uint64_t(1) << width) - 1;
  return static_cast<int64_t>((u ^ sign) - sign);
}

/// An integer result of `width` bits. i1 stays 0 / 1 so that it reads as a
/// boolean; wider integers are kept signed.
static double fromBits(uint64_t u, unsigned width) {
  if (width == 1)
    return static_cast<double>(u & 1);
  return static_cast<double>(toSigned(u, width));
}

static int64_t asSigned(double x, unsigned width) {
  return toSigned(toUnsigned(x, width), width);
}

/// Saturating double to int64 (out-of-range conversion is undefined in C++).
static int64_t saturateToI64(double x) {
  if (std::isnan(x))
    return 0;
  if (x >= 9.2233720368547758e18)
    return std::numeric_limits<int64_t>::max();
  if (x <= -9.2233720368547758e18)
    return std::numeric_limits<int64_t>::min();
  return static_cast<int64_t>(x);
}

static bool compareF(arith::CmpFPredicate p, double a, double b) {
  using P = arith::CmpFPredicate;
  bool unordered = std::isnan(a) || std::isnan(b);
  switch (p) {
  case P::AlwaysFalse:
    return false;
  case P::AlwaysTrue:
    return true;
  case P::OEQ:
    return !unordered && a == b;
  case P::OGT:
    return !unordered && a > b;
  case P::OGE:
    return !unordered && a >= b;
  case P::OLT:
    return !unordered && a < b;
  case P::OLE:
    return !unordered && a <= b;
  case P::ONE:
    return !unordered && a != b;
  case P::ORD:
    return !unordered;
  case P::UEQ:
    return unordered || a == b;
  case P::UGT:
    return unordered || a > b;
  case P::UGE:
    return unordered || a >= b;
  case P::ULT:
    return unordered || a < b;
  case P::ULE:
    return unordered || a <= b;
  case P::UNE:
    return unordered || a != b;
  case P::UNO:
    return unordered;
  }
  return false;
}

static bool compareI(arith::CmpIPredicate p, double a, double b,
                     unsigned width) {
  using P = arith::CmpIPredicate;
  int64_t sa = asSigned(a, width), sb = asSigned(b, width);
  uint64_t ua = toUnsigned(a, width), ub = toUnsigned(b, width);
  switch (p) {
  case P::eq:
    return ua == ub;
  case P::ne:
    return ua != ub;
  case P::slt:
    return sa < sb;
  case P::sle:
    return sa <= sb;
  case P::sgt:
    return sa > sb;
  case P::sge:
    return sa >= sb;
  case P::ult:
    return ua < ub;
  case P::ule:
    return ua <= ub;
  case P::ugt:
    return ua > ub;
  case P::uge:
    return ua >= ub;
  }
  return false;
}

FailureOr<RegionEvaluator> RegionEvaluator::compile(Region &region,
                                                    std::string &error) {
  if (!region.hasOneBlock()) {
    error = "expected a region with one block";
    return failure();
  }
  Block &block = region.front();
  if (!block.mightHaveTerminator()) {
    error = "expected the region to end with fa.yield";
    return failure();
  }
  RegionEvaluator evaluator;
  auto program = std::make_shared<std::vector<Instruction>>();
  DenseMap<Value, int64_t> slots;
  // Scalar arguments take slots; tensor ones (the captures, trailing) are
  // numbered apart and only read by tensor.extract.
  DenseMap<Value, int64_t> captures;
  for (BlockArgument arg : block.getArguments()) {
    if (isa<RankedTensorType>(arg.getType()))
      captures[arg] = captures.size();
    else
      slots[arg] = slots.size();
  }
  evaluator.numArgs = slots.size();

  for (Operation &op : block) {
    if (op.hasTrait<OpTrait::IsTerminator>()) {
      if (op.getNumOperands() != 1) {
        error = "expected the region to yield one value";
        return failure();
      }
      evaluator.resultSlot = slots.lookup(op.getOperand(0));
      break;
    }
    Instruction inst;
    if (auto extract = dyn_cast<tensor::ExtractOp>(op)) {
      auto it = captures.find(extract.getTensor());
      if (it == captures.end()) {
        error = "cannot evaluate 'tensor.extract' of a tensor that is not a "
                "capture";
        return failure();
      }
      inst.opcode = Opcode::Extract;
      inst.capture = it->second;
      for (Value index : extract.getIndices())
        inst.indices.push_back(slots.lookup(index));
      inst.result = slots.size();
      slots[extract.getResult()] = inst.result;
      program->push_back(inst);
      continue;
    }
    // Binary and unary ops only need their opcode; the rest fill in more.
    std::optional<Opcode> opcode =
        llvm::TypeSwitch<Operation *, std::optional<Opcode>>(&op)
            .Case([&](arith::ConstantOp c) -> std::optional<Opcode> {
              Attribute value = c.getValue();
              if (auto f = dyn_cast<FloatAttr>(value)) {
                inst.constant = f.getValueAsDouble();
                return Opcode::Constant;
              }
              if (auto i = dyn_cast<IntegerAttr>(value)) {
                unsigned width = getIntWidth(i.getType());
                inst.constant = fromBits(i.getValue().getZExtValue(), width);
                return Opcode::Constant;
              }
              return std::nullopt;
            })
            .Case([](arith::AddFOp) { return Opcode::AddF; })
            .Case([](arith::SubFOp) { return Opcode::SubF; })
            .Case([](arith::MulFOp) { return Opcode::MulF; })
            .Case([](arith::DivFOp) { return Opcode::DivF; })
            .Case([](arith::RemFOp) { return Opcode::RemF; })
            .Case([](arith::NegFOp) { return Opcode::NegF; })
            .Case([](arith::MaximumFOp) { return Opcode::MaximumF; })
            .Case([](arith::MinimumFOp) { return Opcode::MinimumF; })
            .Case([](arith::MaxNumFOp) { return Opcode::MaxNumF; })
            .Case([](arith::MinNumFOp) { return Opcode::MinNumF; })
            .Case([](math::ExpOp) { return Opcode::Exp; })
            .Case([](math::Exp2Op) { return Opcode::Exp2; })
            .Case([](math::LogOp) { return Opcode::Log; })
            .Case([](math::Log2Op) { return Opcode::Log2; })
            .Case([](math::TanhOp) { return Opcode::Tanh; })
            .Case([](math::AbsFOp) { return Opcode::AbsF; })
            .Case([](math::SqrtOp) { return Opcode::Sqrt; })
            .Case([](math::RsqrtOp) { return Opcode::Rsqrt; })
            .Case([](math::PowFOp) { return Opcode::PowF; })
            .Case([&](arith::CmpFOp c) {
              inst.predicate = static_cast<unsigned>(c.getPredicate());
              return Opcode::CmpF;
            })
            .Case([](arith::FPToSIOp) { return Opcode::FPToSI; })
            .Case([](arith::FPToUIOp) { return Opcode::FPToUI; })
            .Case([](arith::AddIOp) { return Opcode::AddI; })
            .Case([](arith::SubIOp) { return Opcode::SubI; })
            .Case([](arith::MulIOp) { return Opcode::MulI; })
            .Case([](arith::DivSIOp) { return Opcode::DivSI; })
            .Case([](arith::DivUIOp) { return Opcode::DivUI; })
            .Case([](arith::RemSIOp) { return Opcode::RemSI; })
            .Case([](arith::RemUIOp) { return Opcode::RemUI; })
            .Case([](arith::FloorDivSIOp) { return Opcode::FloorDivSI; })
            .Case([](arith::CeilDivSIOp) { return Opcode::CeilDivSI; })
            .Case([](arith::MaxSIOp) { return Opcode::MaxSI; })
            .Case([](arith::MinSIOp) { return Opcode::MinSI; })
            .Case([](arith::AndIOp) { return Opcode::AndI; })
            .Case([](arith::OrIOp) { return Opcode::OrI; })
            .Case([](arith::XOrIOp) { return Opcode::XOrI; })
            .Case([](math::AbsIOp) { return Opcode::AbsI; })
            .Case([&](arith::CmpIOp c) {
              inst.predicate = static_cast<unsigned>(c.getPredicate());
              return Opcode::CmpI;
            })
            // Casts between integers keep the value at the source width and
            // then wrap it to the result's; index is 64 bits.
            .Case([](arith::IndexCastOp) { return Opcode::ExtSI; })
            .Case([](arith::IndexCastUIOp) { return Opcode::ExtUI; })
            .Case([](arith::ExtSIOp) { return Opcode::ExtSI; })
            .Case([](arith::ExtUIOp) { return Opcode::ExtUI; })
            .Case([](arith::TruncIOp) { return Opcode::TruncI; })
            .Case([](arith::SIToFPOp) { return Opcode::ExtSI; })
            .Case([](arith::UIToFPOp) { return Opcode::UIToFP; })
            // The reference works in double: precision changes are no-ops.
            .Case([](arith::ExtFOp) { return Opcode::Copy; })
            .Case([](arith::TruncFOp) { return Opcode::Copy; })
            .Case([](arith::SelectOp) { return Opcode::Select; })
            .Default([](Operation *) { return std::nullopt; });
    if (!opcode || op.getNumResults() != 1 || op.getNumRegions() != 0 ||
        op.getNumOperands() > 3 || isa<ShapedType>(op.getResult(0).getType())) {
      error = "cannot evaluate '" + op.getName().getStringRef().str() +
              "' (the reference evaluates scalar arith and math ops only)";
      return failure();
    }
    inst.opcode = *opcode;
    for (auto [i, operand] : llvm::enumerate(op.getOperands()))
      inst.operands[i] = slots.lookup(operand);
    // Integer ops wrap at their result width; compares and casts from an
    // integer read their operand's width.
    Type widthType = op.getResult(0).getType();
    if (isa<arith::CmpIOp, arith::ExtSIOp, arith::ExtUIOp, arith::IndexCastOp,
            arith::IndexCastUIOp, arith::SIToFPOp, arith::UIToFPOp>(op))
      widthType = op.getOperand(0).getType();
    inst.width = getIntWidth(widthType);
    // Narrowing casts wrap to the result's width.
    unsigned resultWidth = getIntWidth(op.getResult(0).getType());
    if (isa<arith::IndexCastOp, arith::IndexCastUIOp>(op) &&
        resultWidth < inst.width) {
      inst.opcode = Opcode::TruncI;
      inst.width = resultWidth;
    }
    inst.result = slots.size();
    slots[op.getResult(0)] = inst.result;
    program->push_back(inst);
  }
  evaluator.numSlots = slots.size();
  evaluator.program = std::move(program);
  return evaluator;
}

/// Element `index` (slots of `v`) of `capture`; NaN outside it.
static double extractCapture(const RegionCapture &capture,
                             ArrayRef<int64_t> indices, ArrayRef<double> v) {
  if (indices.size() != capture.shape.size())
    return std::nan("");
  int64_t offset = 0;
  for (auto [slot, size] : llvm::zip(indices, capture.shape)) {
    double i = v[slot];
    if (!(i >= 0.0 && i < static_cast<double>(size)))
      return std::nan("");
    offset = offset * size + static_cast<int64_t>(i);
  }
  return capture.values[offset];
}

double RegionEvaluator::evaluate(ArrayRef<double> args,
                                 ArrayRef<RegionCapture> captures) const {
  SmallVector<double, 32> v(numSlots, 0.0);
  for (int64_t i = 0, e = std::min<int64_t>(numArgs, args.size()); i < e; ++i)
    v[i] = args[i];
  for (const Instruction &inst : *program) {
    if (inst.opcode == Opcode::Extract) {
      v[inst.result] =
          inst.capture < static_cast<int64_t>(captures.size())
              ? extractCapture(captures[inst.capture], inst.indices, v)
              : std::nan("");
      continue;
    }
    double a = v[inst.operands[0]], b = v[inst.operands[1]],
           c = v[inst.operands[2]];
    unsigned w = inst.width;
    int64_t sa = asSigned(a, w), sb = asSigned(b, w);
    uint64_t ua = toUnsigned(a, w), ub = toUnsigned(b, w);
    double r = 0.0;
    switch (inst.opcode) {
    case Opcode::Constant:
      r = inst.constant;
      break;
    case Opcode::Copy:
      r = a;
      break;
    case Opcode::AddF:
      r = a + b;
      break;
    case Opcode::SubF:
      r = a - b;
      break;
    case Opcode::MulF:
      r = a * b;
      break;
    case Opcode::DivF:
      r = a / b;
      break;
    case Opcode::RemF:
      r = std::fmod(a, b);
      break;
    case Opcode::NegF:
      r = -a;
      break;
    case Opcode::MaximumF:
      r = std::isnan(a) || std::isnan(b) ? std::nan("") : std::max(a, b);
      break;
    case Opcode::MinimumF:
      r = std::isnan(a) || std::isnan(b) ? std::nan("") : std::min(a, b);
      break;
    case Opcode::MaxNumF:
      r = std::fmax(a, b);
      break;
    case Opcode::MinNumF:
      r = std::fmin(a, b);
      break;
    case Opcode::Exp:
      r = std::exp(a);
      break;
    case Opcode::Exp2:
      r = std::exp2(a);
      break;
    case Opcode::Log:
      r = std::log(a);
      break;
    case Opcode::Log2:
      r = std::log2(a);
      break;
    case Opcode::Tanh:
      r = std::tanh(a);
      break;
    case Opcode::AbsF:
      r = std::fabs(a);
      break;
    case Opcode::Sqrt:
      r = std::sqrt(a);
      break;
    case Opcode::Rsqrt:
      r = 1.0 / std::sqrt(a);
      break;
    case Opcode::PowF:
      r = std::pow(a, b);
      break;
    case Opcode::CmpF:
      r = compareF(static_cast<arith::CmpFPredicate>(inst.predicate), a, b);
      break;
    case Opcode::FPToSI:
      r = fromBits(static_cast<uint64_t>(saturateToI64(std::trunc(a))), w);
      break;
    case Opcode::FPToUI:
      r = fromBits(static_cast<uint64_t>(saturateToI64(std::trunc(a))), w);
      break;
    case Opcode::AddI:
      r = fromBits(ua + ub, w);
      break;
    case Opcode::SubI:
      r = fromBits(ua - ub, w);
      break;
    case Opcode::MulI:
      r = fromBits(ua * ub, w);
      break;
    // Division by zero is undefined in arith; give 0 rather than trap.
    case Opcode::DivSI:
      r = sb == 0 || (sb == -1 && sa == std::numeric_limits<int64_t>::min())
              ? 0.0
              : fromBits(static_cast<uint64_t>(sa / sb), w);
      break;
    case Opcode::DivUI:
      r = ub == 0 ? 0.0 : fromBits(ua / ub, w);
      break;
    case Opcode::RemSI:
      r = sb == 0 || sb == -1 ? 0.0
                              : fromBits(static_cast<uint64_t>(sa % sb), w);
      break;
    case Opcode::RemUI:
      r = ub == 0 ? 0.0 : fromBits(ua % ub, w);
      break;
    case Opcode::FloorDivSI:
    case Opcode::CeilDivSI: {
      if (sb == 0 || (sb == -1 && sa == std::numeric_limits<int64_t>::min()))
        break;
      int64_t q = sa / sb, rem = sa % sb;
      bool inexact = rem != 0;
      bool negative = (rem < 0) != (sb < 0);
      if (inst.opcode == Opcode::FloorDivSI && inexact && negative)
        --q;
      if (inst.opcode == Opcode::CeilDivSI && inexact && !negative)
        ++q;
      r = fromBits(static_cast<uint64_t>(q), w);
      break;
    }
    case Opcode::MaxSI:
      r = fromBits(static_cast<uint64_t>(std::max(sa, sb)), w);
      break;
    case Opcode::MinSI:
      r = fromBits(static_cast<uint64_t>(std::min(sa, sb)), w);
      break;
    case Opcode::AndI:
      r = fromBits(ua & ub, w);
      break;
    case Opcode::OrI:
      r = fromBits(ua | ub, w);
      break;
    case Opcode::XOrI:
      r = fromBits(ua ^ ub, w);
      break;
    case Opcode::AbsI:
      r = fromBits(static_cast<uint64_t>(sa < 0 ? -sa : sa), w);
      break;
    case Opcode::CmpI:
      r = compareI(static_cast<arith::CmpIPredicate>(inst.predicate), a, b, w);
      break;
    case Opcode::ExtSI:
      r = static_cast<double>(sa);
      break;
    case Opcode::ExtUI:
    case Opcode::UIToFP:
      r = static_cast<double>(ua);
      break;
    case Opcode::TruncI:
      r = fromBits(ua, w);
      break;
    case Opcode::Select:
      r = a != 0.0 ? b : c;
      break;
    case Opcode::Extract:
      break;
    }
    v[inst.result] = r;
  }
  return v[resultSlot];
}
