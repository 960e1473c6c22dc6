//===- API.cpp - FA's public C++ API ----------------------------*- C++ -*-===//
//
// fa.h on top of the compiler: a spec becomes the text of one fa.attention,
// which goes through exactly the pipeline fa-jit and fa-opt use.
//
//===----------------------------------------------------------------------===//

#include "fa/fa.h"

#include "fa/Compiler/CudaJit.h"
#include "fa/Compiler/HostJit.h"
#include "fa/Compiler/Registration.h"
#include "fa/Runtime/Cuda.h"
#include "fa/Runtime/KernelCache.h"
#include "fa/Target/GpuTarget.h"
#include "fa/Version.h"
#include "mlir/IR/BuiltinOps.h"
#include "mlir/IR/Diagnostics.h"
#include "mlir/IR/Location.h"
#include "mlir/IR/MLIRContext.h"
#include "mlir/Parser/Parser.h"
#include "mlir/Pass/PassManager.h"
#include "mlir/Pass/PassRegistry.h"
#include "llvm/Support/Error.h"
#include "llvm/Support/SourceMgr.h"
#include "llvm/Support/raw_ostream.h"

#include <cmath>
#include <cstdio>
#include <map>
#include <mutex>
#include <optional>
#include <utility>

namespace {

/// Registers FA's passes once per process.
void ensureRegistered() {
  static std::once_flag registered;
  std::call_once(registered, [] { mlir::fa::registerPasses(); });
}

/// A context whose diagnostics are collected as "file:line:col: error: msg"
/// lines, for fa::Error.
struct DiagnosticContext {
  DiagnosticContext() : context(makeRegistry()), os(text) {
    handler = std::make_unique<mlir::ScopedDiagnosticHandler>(
        &context, [this](mlir::Diagnostic &diag) {
          if (auto loc =
                  diag.getLocation()->findInstanceOf<mlir::FileLineColLoc>())
            os << loc.getFilename().getValue() << ":" << loc.getLine() << ":"
               << loc.getColumn() << ": ";
          else
            os << diag.getLocation() << ": ";
          switch (diag.getSeverity()) {
          case mlir::DiagnosticSeverity::Error:
            os << "error: ";
            break;
          case mlir::DiagnosticSeverity::Warning:
            os << "warning: ";
            break;
          default:
            os << "note: ";
            break;
          }
          os << diag << "\n";
          return mlir::success();
        });
  }
  static mlir::DialectRegistry makeRegistry() {
    ensureRegistered();
    mlir::DialectRegistry registry;
    mlir::fa::registerDialects(registry);
    return registry;
  }
  mlir::OwningOpRef<mlir::ModuleOp> parse(const std::string &source,
                                          const char *name) {
    llvm::SourceMgr sourceMgr;
    sourceMgr.AddNewSourceBuffer(
        llvm::MemoryBuffer::getMemBufferCopy(source, name), llvm::SMLoc());
    return mlir::parseSourceFile<mlir::ModuleOp>(sourceMgr, &context);
  }

  mlir::MLIRContext context;
  std::string text;
  llvm::raw_string_ostream os;
  std::unique_ptr<mlir::ScopedDiagnosticHandler> handler;
};

std::string elementTypeName(fa::DType dtype) { return fa::toString(dtype); }

std::string dimText(int64_t d) {
  return d > 0 ? std::to_string(d) : std::string("?");
}

std::string floatText(double v) {
  char buf[64];
  std::snprintf(buf, sizeof(buf), "%.17e", v);
  return buf;
}

/// What specToMLIR writes: the fa.attention, or its fa.attention_grad (Q, K,
/// V, O, dO, lse, [bias], [slopes], [seed] -> dQ, dK, dV, and dBias with
/// GradWithBias; the score_mod_grad region is left to
/// fa-differentiate-score-mod).
enum class SpecForm { Forward, Grad, GradWithBias };

/// The spec as a function holding one op of `form`.
std::string specToMLIR(const fa::AttentionSpec &spec,
                       SpecForm form = SpecForm::Forward) {
  bool grad = form != SpecForm::Forward;
  std::string et = elementTypeName(spec.dtype);
  int64_t dv = spec.headDimV > 0 ? spec.headDimV : spec.headDim;
  std::string hq = dimText(spec.numHeadsQ), hkv = dimText(spec.numHeadsKV);
  std::string qType =
      "tensor<?x" + hq + "x?x" + std::to_string(spec.headDim) + "x" + et + ">";
  std::string kType =
      "tensor<?x" + hkv + "x?x" + std::to_string(spec.headDim) + "x" + et + ">";
  std::string vType =
      "tensor<?x" + hkv + "x?x" + std::to_string(dv) + "x" + et + ">";
  std::string oType =
      "tensor<?x" + hq + "x?x" + std::to_string(dv) + "x" + et + ">";
  std::string lseType = "tensor<?x" + hq + "x?xf32>";
  std::string biasType, slopesType;
  if (spec.bias) {
    biasType = "tensor<";
    for (bool b : spec.biasBroadcast)
      biasType += b ? "1x" : "?x";
    biasType += elementTypeName(spec.biasDType) + ">";
  }
  if (spec.alibi)
    slopesType = std::string("tensor<") + (spec.alibiPerBatch ? "?x" : "") +
                 hq + "xf32>";

  std::string args = "%q: " + qType + ", %k: " + kType + ", %v: " + vType;
  if (grad)
    args += ", %o: " + oType + ", %do: " + oType + ", %lse: " + lseType;
  std::string operands;
  if (spec.bias) {
    args += ", %bias: " + biasType;
    operands += " bias(%bias : " + biasType + ")";
  }
  if (spec.alibi) {
    args += ", %slopes: " + slopesType;
    operands += " alibi_slopes(%slopes : " + slopesType + ")";
  }
  if (spec.dropoutP != 0.0) {
    args += ", %seed: i64";
    operands += " dropout_seed(%seed)";
  }
  // Captures: function arguments %capture<i> (the operands), and the
  // regions' trailing arguments %cap<i> (regions cannot shadow names).
  std::string captureArgs, captureNames, captureTypes;
  for (size_t i = 0; i < spec.captures.size(); ++i) {
    std::string type = "tensor<";
    for (int64_t d = 0; d < spec.captures[i].rank; ++d)
      type += "?x";
    type += elementTypeName(spec.captures[i].dtype) + ">";
    std::string index = std::to_string(i);
    args += ", %capture" + index + ": " + type;
    captureArgs += ", %cap" + index + ": " + type;
    captureNames += (i ? ", %capture" : "%capture") + index;
    captureTypes += (i ? ", " : "") + type;
  }
  if (!spec.captures.empty())
    operands += " captures(" + captureNames + " : " + captureTypes + ")";
  std::vector<std::string> attrs;
  if (spec.scale)
    attrs.push_back("scale = " + floatText(*spec.scale) + " : f32");
  if (spec.causal != fa::Causal::None)
    attrs.push_back(
        std::string("causal = #fa.causal<") +
        (spec.causal == fa::Causal::TopLeft ? "top_left" : "bottom_right") +
        ">");
  if (spec.window)
    attrs.push_back(
        "window = array<i64: " + std::to_string(spec.window->first) + ", " +
        std::to_string(spec.window->second) + ">");
  if (spec.softcap)
    attrs.push_back("softcap = " + floatText(*spec.softcap) + " : f32");
  if (spec.dropoutP != 0.0)
    attrs.push_back("dropout_p = " + floatText(spec.dropoutP) + " : f32");
  std::string attrText;
  for (size_t i = 0; i < attrs.size(); ++i)
    attrText += (i ? ", " : " {") + attrs[i];
  if (!attrText.empty())
    attrText += "}";

  std::string results, text;
  if (grad) {
    bool withBias = form == SpecForm::GradWithBias;
    results =
        qType + ", " + kType + ", " + vType + (withBias ? ", " + biasType : "");
    text = "func.func @attention_grad(" + args + ") -> (" + results +
           ") {\n  %dq, %dk, %dv" + (withBias ? ", %dbias" : "") +
           " = fa.attention_grad %q, %k, %v, %o, %do, %lse" + operands +
           attrText + "\n      : " + qType + ", " + kType + ", " + vType +
           ", " + oType + ", " + oType + ", " + lseType + " -> " + results +
           "\n";
  } else {
    results = oType + (spec.returnLse ? ", " + lseType : "");
    text = "func.func @attention(" + args + ") -> (" + results + ") {\n  %o" +
           (spec.returnLse ? ", %lse" : "") + " = fa.attention %q, %k, %v" +
           operands + attrText + "\n      : " + qType + ", " + kType + ", " +
           vType + " -> " + results + "\n";
  }
  if (!spec.scoreMod.empty())
    text += "  score_mod {\n  ^bb0(%score: f32, %b: index, %h: index, "
            "%q_idx: index, %kv_idx: index" +
            captureArgs + "):\n" + spec.scoreMod + "\n  }\n";
  if (!spec.maskMod.empty())
    text += "  mask_mod {\n  ^bb0(%b: index, %h: index, %q_idx: index, "
            "%kv_idx: index" +
            captureArgs + "):\n" + spec.maskMod + "\n  }\n";
  if (grad)
    text = text + "  return %dq, %dk, %dv" +
           (form == SpecForm::GradWithBias ? ", %dbias" : "") + " : " +
           results + "\n}\n";
  else
    text += std::string("  return %o") + (spec.returnLse ? ", %lse" : "") +
            " : " + results + "\n}\n";
  return text;
}

/// The API function whose argument checks fail ("fa::Kernel::forward").
constexpr const char *kForward = "fa::Kernel::forward";
constexpr const char *kBackward = "fa::Kernel::backward";

[[noreturn]] void fail(const char *api, const std::string &message) {
  throw fa::Error(std::string(api) + ": " + message);
}

[[noreturn]] void fail(const std::string &message) { fail(kForward, message); }

std::string shapeText(const std::vector<int64_t> &shape) {
  std::string s = "[";
  for (size_t i = 0; i < shape.size(); ++i)
    s += (i ? ", " : "") + std::to_string(shape[i]);
  return s + "]";
}

} // namespace

namespace {
namespace rt = ::fa::runtime;

/// Whether a kernel compiled for `chip` loads on `device` (the target
/// model's rule: an arch-specific chip on its own compute capability, PTX of
/// another on any later one).
bool runsOn(const std::string &chip, const rt::Device &device) {
  const fa::target::GpuTarget *target = fa::target::lookupGpuTarget(chip);
  return target && target->runsOn(device.getComputeCapabilityMajor(),
                                  device.getComputeCapabilityMinor());
}

/// A kernel image (a forward's one or two kernels, or a backward's three or
/// four) loaded on one device: its module, in the device's primary context,
/// and its kernels in the image's order.
struct LoadedImage {
  rt::Device device;
  rt::Module module;
  mlir::fa::CudaFunctions functions;
};

/// A compiled image and its loads, one per device (a module belongs to one
/// context), each made on the first call there.
class GpuImage {
public:
  explicit GpuImage(std::shared_ptr<const rt::CachedKernel> image)
      : image(std::move(image)) {}

  const rt::CachedKernel &getImage() const { return *image; }

  /// The image loaded on device `ordinal`; throws fa::Error of `api` when it
  /// does not load there. The thread's current context is left as it was.
  const LoadedImage &load(const char *api, int ordinal) {
    std::lock_guard<std::mutex> lock(mutex);
    auto it = loaded.find(ordinal);
    if (it != loaded.end())
      return *it->second;
    rt::Expected<rt::Device> device = rt::Device::get(ordinal);
    if (device.failed())
      fail(api, device.getMessage());
    if (!runsOn(image->chip, device.value()))
      fail(api, "the kernel was compiled for " + image->chip + ", but device " +
                    std::to_string(ordinal) + " is " +
                    device.value().getChip());
    rt::ScopedContext scope(device.value());
    if (scope.getStatus().failed())
      fail(api, scope.getStatus().getMessage());
    // The PTX itself, which the driver compiles as a whole program (its
    // own cache keeps the SASS). A cubin of the driver's linker (cuLink*)
    // is compiled for separate linking: ptxas then ignores setmaxnreg and
    // serializes the wgmmas, and the kernels ran at 0.65-0.75x
    // (performance.md, "persistent").
    rt::Expected<rt::Module> module =
        rt::Module::load(device.value(), image->image);
    if (module.failed())
      fail(api, module.getMessage());
    rt::Expected<mlir::fa::CudaFunctions> functions =
        mlir::fa::loadCudaFunctions(*image, module.value());
    if (functions.failed())
      fail(api, functions.getMessage());
    auto entry = std::make_unique<LoadedImage>(
        LoadedImage{device.take(), module.take(), functions.take()});
    return *loaded.emplace(ordinal, std::move(entry)).first->second;
  }

private:
  std::shared_ptr<const rt::CachedKernel> image;
  std::mutex mutex;
  std::map<int, std::unique_ptr<const LoadedImage>> loaded;
};

/// A compiled GPU kernel.
struct GpuKernel {
  explicit GpuKernel(std::shared_ptr<const rt::CachedKernel> cached)
      : image(std::move(cached)) {
    for (const rt::KernelAbi &abi : image.getImage().kernels)
      for (const rt::KernelParam &p : abi.params)
        if (p.kind == rt::KernelParam::Kind::TensorMap &&
            p.tensor == rt::AbiTensor::Bias)
          biasMap = p;
  }
  GpuImage image;
  /// The tensor map its bias blocks are copied through (fa-bias-tiles), if
  /// any: found once, checked against each call's bias.
  std::optional<rt::KernelParam> biasMap;
};

/// The GPU backward's kernels (one cache entry).
struct GpuBackward {
  explicit GpuBackward(std::shared_ptr<const rt::CachedKernel> image)
      : image(std::move(image)) {}
  GpuImage image;
};
} // namespace

struct fa::Kernel::Impl {
  AttentionSpec spec;
  std::string target;
  std::string mlir;
  std::unique_ptr<mlir::fa::HostKernel> host;
  std::unique_ptr<GpuKernel> gpu;
  /// `gpu` with per-element bias reads, compiled on the first call whose
  /// bias the TMA of `gpu` cannot copy (forwardKernelFor).
  mutable std::mutex biasFallbackMutex;
  mutable std::unique_ptr<GpuKernel> gpuBiasFallback;

  /// The backward, compiled on the first backward() (most kernels never
  /// need one); a failure is kept and reported by every later call.
  mutable std::mutex backwardMutex;
  /// Indexed by whether it computes dBias too.
  mutable std::unique_ptr<mlir::fa::HostKernel> hostBackward[2];
  mutable std::unique_ptr<GpuBackward> gpuBackward[2];
  mutable std::string backwardError[2];
};

std::string fa::version() { return FA_VERSION; }

int fa::numThreads() { return mlir::fa::getHostThreads(); }

void fa::setNumThreads(int threads) { mlir::fa::setHostThreads(threads); }

const char *fa::toString(DType dtype) {
  switch (dtype) {
  case DType::F16:
    return "f16";
  case DType::BF16:
    return "bf16";
  case DType::F32:
    return "f32";
  case DType::F64:
    return "f64";
  case DType::I8:
    return "i8";
  case DType::I16:
    return "i16";
  case DType::I32:
    return "i32";
  case DType::I64:
    return "i64";
  }
  return "?";
}

std::string fa::runPipeline(const std::string &mlir,
                            const std::string &pipeline) {
  DiagnosticContext ctx;
  mlir::OwningOpRef<mlir::ModuleOp> module = ctx.parse(mlir, "<input>");
  if (!module)
    throw Error("fa::runPipeline: invalid input IR\n" + ctx.text);

  std::string pipelineErrors;
  llvm::raw_string_ostream pipelineOS(pipelineErrors);
  mlir::FailureOr<mlir::OpPassManager> parsed =
      mlir::parsePassPipeline(pipeline, pipelineOS);
  if (mlir::failed(parsed))
    throw Error("fa::runPipeline: invalid pass pipeline '" + pipeline +
                "': " + pipelineErrors);
  mlir::PassManager pm(&ctx.context, parsed->getOpAnchorName());
  static_cast<mlir::OpPassManager &>(pm) = std::move(*parsed);
  if (mlir::failed(pm.run(*module)))
    throw Error("fa::runPipeline: pipeline '" + pipeline + "' failed\n" +
                ctx.text);

  std::string result;
  llvm::raw_string_ostream os(result);
  module->print(os);
  return result;
}

fa::Kernel fa::compile(const AttentionSpec &spec,
                       const std::string &requested) {
  // "auto": the first CUDA device when there is one, else the host; where a
  // GPU must be used (rt::gpuRequired) a driver failure is an error.
  std::string target = requested;
  if (target == "auto") {
    rt::Expected<rt::Device> device = rt::Device::get(0);
    if (device.failed() && rt::gpuRequired())
      throw Error("fa::compile: target 'auto': a GPU is present (or "
                  "FA_REQUIRE_GPU=1) but " +
                  device.getMessage());
    target = device.ok() ? device.value().getChip() : "host";
  } else if (target.rfind("cuda:", 0) == 0) {
    // Device N's chip.
    std::string digits = target.substr(5);
    if (digits.empty() || digits.size() > 9 ||
        digits.find_first_not_of("0123456789") != std::string::npos)
      throw Error("fa::compile: target '" + target +
                  "': expected cuda:N with N a device number");
    rt::Expected<rt::Device> device = rt::Device::get(std::stoi(digits));
    if (device.failed())
      throw Error("fa::compile: target '" + target +
                  "': " + device.getMessage());
    target = device.value().getChip();
  }
  if (target != "host" && !fa::target::lookupGpuTarget(target))
    throw Error("fa::compile: target '" + target +
                "' is not supported (host, auto, cuda:N, or a GPU chip: " +
                fa::target::listGpuTargets() + ")");
  if (spec.headDim <= 0 || spec.headDimV < 0)
    throw Error("fa::compile: head dims must be positive, got D = " +
                std::to_string(spec.headDim) +
                ", Dv = " + std::to_string(spec.headDimV));
  if (spec.numHeadsQ < 0 || spec.numHeadsKV < 0)
    throw Error("fa::compile: head counts must be positive or 0 (any)");
  auto isAttentionDType = [](DType t) {
    return t == DType::F16 || t == DType::BF16 || t == DType::F32;
  };
  if (!isAttentionDType(spec.dtype))
    throw Error(std::string("fa::compile: dtype must be f16, bf16 or f32, "
                            "got ") +
                toString(spec.dtype));
  if (spec.bias && !isAttentionDType(spec.biasDType))
    throw Error(std::string("fa::compile: biasDType must be f16, bf16 or "
                            "f32, got ") +
                toString(spec.biasDType));
  if (spec.atomicDQ && spec.deterministic)
    throw Error("fa::compile: atomicDQ and deterministic exclude each other");
  for (size_t i = 0; i < spec.captures.size(); ++i)
    if (spec.captures[i].rank < 1)
      throw Error("fa::compile: capture " + std::to_string(i) +
                  " must have rank >= 1, got " +
                  std::to_string(spec.captures[i].rank));

  auto impl = std::make_shared<Kernel::Impl>();
  impl->spec = spec;
  impl->target = target;
  impl->mlir = specToMLIR(spec);

  DiagnosticContext ctx;
  mlir::OwningOpRef<mlir::ModuleOp> module = ctx.parse(impl->mlir, "<spec>");
  if (!module)
    throw Error("fa::compile: invalid attention spec\n" + ctx.text);
  mlir::FailureOr<mlir::fa::AttentionOp> op =
      mlir::fa::findSingleAttention(*module);
  if (mlir::failed(op))
    throw Error("fa::compile: invalid attention spec\n" + ctx.text);
  if (target != "host") {
    bool compiled = false;
    std::string error;
    std::shared_ptr<const rt::CachedKernel> image =
        mlir::fa::getOrCompileCudaKernel(*op, target, compiled, error);
    if (!image)
      throw Error("fa::compile: " + error + "\n" + ctx.text);
    impl->gpu = std::make_unique<GpuKernel>(std::move(image));
    Kernel kernel;
    kernel.impl = std::move(impl);
    return kernel;
  }
  mlir::OwningOpRef<mlir::ModuleOp> kernelModule =
      mlir::fa::buildHostKernelModule(*op);
  auto host = mlir::fa::HostKernel::compile(*kernelModule,
                                            mlir::fa::HostPipelineOptions());
  if (!host)
    throw Error("fa::compile: " + llvm::toString(host.takeError()) + "\n" +
                ctx.text);
  impl->host = std::move(*host);

  Kernel kernel;
  kernel.impl = std::move(impl);
  return kernel;
}

const std::string &fa::Kernel::mlir() const { return impl->mlir; }
const std::string &fa::Kernel::target() const { return impl->target; }
const fa::AttentionSpec &fa::Kernel::spec() const { return impl->spec; }

const std::string &fa::Kernel::ptx() const {
  if (!impl->gpu)
    throw Error("fa::Kernel::ptx: the kernel was compiled for the host, which "
                "runs no PTX; compile for a GPU target (sm_80, sm_90a, or auto "
                "on a machine with a GPU) to get it");
  const rt::CachedKernel &image = impl->gpu->image.getImage();
  if (image.format != rt::CachedKernel::Format::PTX)
    throw Error("fa::Kernel::ptx: the kernel's image is a cubin, not PTX");
  return image.image;
}

namespace {

/// Where the views of a call must be: the kernel's kind of device and, for a
/// GPU kernel, q's device (the call runs there).
struct Place {
  fa::Device device;
  int index;
};

/// The place of a call of a kernel on `device` with `q`.
Place placeOf(const char *api, fa::Device device, const fa::TensorView &q) {
  if (device == fa::Device::CUDA && q.device == fa::Device::CUDA &&
      q.deviceIndex < 0)
    fail(api, "q is on cuda:" + std::to_string(q.deviceIndex) +
                  ", which is no device");
  return {device, q.deviceIndex};
}

/// Checks that `t` is where the call runs.
void checkPlace(const char *api, const fa::TensorView &t, const char *name,
                Place where) {
  if (t.device != where.device)
    fail(api, std::string(name) +
                  (where.device == fa::Device::CPU
                       ? " is a CUDA tensor, but the kernel was compiled for "
                         "the host"
                       : " is a CPU tensor, but the kernel was compiled for a "
                         "GPU"));
  if (where.device == fa::Device::CUDA && t.deviceIndex != where.index)
    fail(api, std::string(name) +
                  " is on cuda:" + std::to_string(t.deviceIndex) +
                  " but q is on cuda:" + std::to_string(where.index));
}

/// Checks one view and turns it into a kernel argument.
mlir::fa::HostKernelArg toArg(const char *api, const fa::TensorView &t,
                              const char *name, fa::DType dtype, size_t rank,
                              bool isOutput, Place where) {
  auto fail = [api](const std::string &message) { ::fail(api, message); };
  bool empty = llvm::is_contained(t.shape, 0);
  if (!t.data && !empty)
    fail(std::string(name) + " has no data (null pointer)");
  checkPlace(api, t, name, where);
  if (t.dtype != dtype)
    fail(std::string(name) + " must have dtype " + fa::toString(dtype) +
         ", got " + fa::toString(t.dtype));
  if (t.shape.size() != rank)
    fail(std::string(name) + " must have rank " + std::to_string(rank) +
         ", got shape " + shapeText(t.shape));
  if (!t.strides.empty() && t.strides.size() != rank)
    fail(std::string(name) + " has " + std::to_string(t.strides.size()) +
         " strides for rank " + std::to_string(rank));
  // An empty tensor may have no data (torch's, for one); a kernel argument
  // needs a pointer, which is never read.
  alignas(256) static char noElements[1];
  mlir::fa::HostKernelArg arg;
  arg.data = t.data ? t.data : noElements;
  arg.sizes.assign(t.shape.begin(), t.shape.end());
  if (t.strides.empty()) {
    arg.strides.resize(rank);
    int64_t stride = 1;
    for (size_t i = rank; i-- > 0;) {
      arg.strides[i] = stride;
      stride *= t.shape[i];
    }
  } else {
    arg.strides.assign(t.strides.begin(), t.strides.end());
  }
  for (size_t i = 0; i < rank; ++i) {
    if (t.shape[i] < 0)
      fail(std::string(name) + " has a negative size in shape " +
           shapeText(t.shape));
    if (arg.strides[i] < 0)
      fail(std::string(name) + " has a negative stride (" +
           std::to_string(arg.strides[i]) + " in dim " + std::to_string(i) +
           "); negative strides are not supported");
    if (isOutput && !empty && arg.strides[i] == 0 && t.shape[i] > 1)
      fail(std::string(name) + " is an output but has stride 0 in dim " +
           std::to_string(i) + " (its elements would overlap)");
  }
  return arg;
}

void checkDim(const char *api, int64_t got, int64_t want,
              const std::string &what) {
  if (got != want)
    fail(api, what + ": expected " + std::to_string(want) + ", got " +
                  std::to_string(got));
}

/// Q, K, V and the variant's operands, checked against the spec and each
/// other; the same for the forward and the backward.
struct CheckedInputs {
  mlir::fa::HostKernelArg q, k, v;
  std::vector<mlir::fa::HostKernelArg> variant; // [bias], [slopes], [seed]
  int64_t b, hq, nq, hkv, nk, d, dv;
};

/// The threads a host kernel of `flopsPerScore` FLOPs per score (of B Hq
/// Nq Nk) is worth: one per 4 MFLOP, about 25 us of one core's work, for
/// waking a pool thread cost 10-30 us a call (1 x 8 x 16 x 16: 31 us on two
/// threads, 12 on one).
int hostThreadsFor(int64_t flopsPerScore, const CheckedInputs &in) {
  double flops = double(flopsPerScore) * double(in.b) * double(in.hq) *
                 double(in.nq) * double(in.nk);
  return static_cast<int>(std::clamp(flops / 4e6, 1.0, 4096.0));
}

CheckedInputs checkInputs(const char *api, const fa::AttentionSpec &spec,
                          Place device, const fa::TensorView &q,
                          const fa::TensorView &k, const fa::TensorView &v,
                          const fa::TensorView *bias,
                          const fa::TensorView *alibiSlopes,
                          int64_t dropoutSeed,
                          const std::vector<fa::TensorView> &captures) {
  using fa::DType;
  CheckedInputs in;
  in.q = toArg(api, q, "q", spec.dtype, 4, false, device);
  in.k = toArg(api, k, "k", spec.dtype, 4, false, device);
  in.v = toArg(api, v, "v", spec.dtype, 4, false, device);

  int64_t b = q.shape[0], hq = q.shape[1], nq = q.shape[2];
  int64_t hkv = k.shape[1], nk = k.shape[2];
  int64_t d = spec.headDim, dv = spec.headDimV > 0 ? spec.headDimV : d;
  in.b = b, in.hq = hq, in.nq = nq, in.hkv = hkv, in.nk = nk, in.d = d,
  in.dv = dv;
  checkDim(api, q.shape[3], d, "q head dim (q.shape[3])");
  checkDim(api, k.shape[3], d, "k head dim (k.shape[3])");
  checkDim(api, v.shape[3], dv, "v head dim (v.shape[3])");
  checkDim(api, k.shape[0], b, "k batch size (k.shape[0])");
  checkDim(api, v.shape[0], b, "v batch size (v.shape[0])");
  checkDim(api, v.shape[1], hkv, "v heads (v.shape[1])");
  checkDim(api, v.shape[2], nk, "v sequence length (v.shape[2])");
  if (spec.numHeadsQ > 0)
    checkDim(api, hq, spec.numHeadsQ, "q heads (q.shape[1])");
  if (spec.numHeadsKV > 0)
    checkDim(api, hkv, spec.numHeadsKV, "k heads (k.shape[1])");
  if (hkv == 0 || hq % hkv != 0)
    fail(api, "q heads (" + std::to_string(hq) +
                  ") must be a multiple of k/v heads (" + std::to_string(hkv) +
                  ")");

  if (spec.bias) {
    if (!bias)
      fail(api, "the kernel was compiled with a bias; pass one");
    in.variant.push_back(
        toArg(api, *bias, "bias", spec.biasDType, 4, false, device));
    const int64_t full[4] = {b, hq, nq, nk};
    for (int i = 0; i < 4; ++i)
      checkDim(api, bias->shape[i], spec.biasBroadcast[i] ? 1 : full[i],
               "bias dim " + std::to_string(i));
  } else if (bias) {
    fail(api, "the kernel was compiled without a bias; recompile with "
              "spec.bias = true");
  }
  if (spec.alibi) {
    if (!alibiSlopes)
      fail(api, "the kernel was compiled with ALiBi; pass alibiSlopes");
    in.variant.push_back(toArg(api, *alibiSlopes, "alibiSlopes", DType::F32,
                               spec.alibiPerBatch ? 2 : 1, false, device));
    if (spec.alibiPerBatch)
      checkDim(api, alibiSlopes->shape[0], b, "alibiSlopes batch size");
    checkDim(api, alibiSlopes->shape.back(), hq, "alibiSlopes heads");
  } else if (alibiSlopes) {
    fail(api, "the kernel was compiled without ALiBi; recompile with "
              "spec.alibi = true");
  }
  if (spec.dropoutP != 0.0)
    in.variant.push_back(mlir::fa::HostKernelArg::i64(dropoutSeed));
  if (captures.size() != spec.captures.size())
    fail(api, "the kernel was compiled with " +
                  std::to_string(spec.captures.size()) + " captures, got " +
                  std::to_string(captures.size()));
  for (size_t i = 0; i < captures.size(); ++i) {
    std::string name = "capture " + std::to_string(i);
    in.variant.push_back(
        toArg(api, captures[i], name.c_str(), spec.captures[i].dtype,
              static_cast<size_t>(spec.captures[i].rank), false, device));
  }
  return in;
}

/// Checks that `t` has `shape`, naming each dim as "<name> <what>
/// (<name>.shape[i])".
void checkShape(const char *api, const fa::TensorView &t, const char *name,
                llvm::ArrayRef<int64_t> shape) {
  static const char *const what4[4] = {"batch size", "heads", "sequence length",
                                       "head dim"};
  for (size_t i = 0; i < shape.size(); ++i)
    checkDim(api, t.shape[i], shape[i],
             std::string(name) + " " + what4[i] + " (" + name + ".shape[" +
                 std::to_string(i) + "])");
}

} // namespace

namespace {

/// Bytes per element of `dtype`.
size_t dtypeBytes(fa::DType dtype) {
  switch (dtype) {
  case fa::DType::I8:
    return 1;
  case fa::DType::F16:
  case fa::DType::BF16:
  case fa::DType::I16:
    return 2;
  case fa::DType::F32:
  case fa::DType::I32:
    return 4;
  case fa::DType::F64:
  case fa::DType::I64:
    return 8;
  }
  return 4;
}

/// The GPU calls' captures: spec.captures' views, args[first] on (any
/// strides; the kernel reads the elements the regions index).
std::vector<mlir::fa::CudaCapture>
gpuCaptures(const fa::AttentionSpec &spec,
            const std::vector<mlir::fa::HostKernelArg> &args, size_t first) {
  std::vector<mlir::fa::CudaCapture> captures;
  for (size_t i = 0; i < spec.captures.size(); ++i) {
    const mlir::fa::HostKernelArg &a = args[first + i];
    mlir::fa::CudaCapture c;
    c.data = reinterpret_cast<uint64_t>(a.data) +
             a.offset * dtypeBytes(spec.captures[i].dtype);
    c.strides.assign(a.strides.begin(), a.strides.end());
    captures.push_back(std::move(c));
  }
  return captures;
}

/// The workspace of a call of `api`: at least `bytes` (what `sizeFn` says)
/// of contiguous device memory where the call runs, 256-byte aligned.
uint64_t checkWorkspace(const char *api, const char *sizeFn,
                        const fa::TensorView &t, Place where, uint64_t bytes) {
  checkPlace(api, t, "workspace", where);
  uint64_t elements = 1;
  for (int64_t n : t.shape) {
    if (n < 0)
      fail(api, "workspace has a negative size in shape " + shapeText(t.shape));
    elements *= uint64_t(n);
  }
  if (!t.strides.empty()) {
    if (t.strides.size() != t.shape.size())
      fail(api, "workspace has " + std::to_string(t.strides.size()) +
                    " strides for rank " + std::to_string(t.shape.size()));
    int64_t stride = 1;
    for (size_t i = t.shape.size(); i-- > 0;) {
      if (t.shape[i] > 1 && t.strides[i] != stride)
        fail(api, "workspace must be contiguous");
      stride *= t.shape[i];
    }
  }
  uint64_t have = elements * dtypeBytes(t.dtype);
  if (have < bytes)
    fail(api, "workspace has " + std::to_string(have) +
                  " bytes, but this call needs " + std::to_string(bytes) +
                  " (" + sizeFn + ")");
  if (reinterpret_cast<uintptr_t>(t.data) % 256 != 0)
    fail(api, "workspace must be 256-byte aligned");
  return reinterpret_cast<uint64_t>(t.data);
}

/// The forward kernel of `impl` for `call`: `impl.gpu`, unless it copies
/// bias blocks by TMA (fa-bias-tiles) and `call`'s bias does not fit a
/// tensor map (its key stride not 1, rows not a multiple of 16 bytes): then
/// the same op compiled with one bias load a score (fwd-bias-tiles=0), on
/// first need.
GpuKernel &forwardKernelFor(const fa::Kernel::Impl &impl,
                            const rt::KernelCall &call) {
  const std::optional<rt::KernelParam> &map = impl.gpu->biasMap;
  if (!map || !rt::getTensorMapRequest(*map, call).failed())
    return *impl.gpu;
  std::lock_guard<std::mutex> lock(impl.biasFallbackMutex);
  if (!impl.gpuBiasFallback) {
    DiagnosticContext ctx;
    mlir::OwningOpRef<mlir::ModuleOp> module = ctx.parse(impl.mlir, "<spec>");
    mlir::FailureOr<mlir::fa::AttentionOp> op =
        module ? mlir::fa::findSingleAttention(*module)
               : mlir::FailureOr<mlir::fa::AttentionOp>(mlir::failure());
    if (mlir::failed(op))
      fail("invalid attention spec\n" + ctx.text);
    mlir::fa::CudaForwardTile tile;
    tile.biasTiles = false;
    bool compiled = false;
    std::string error;
    std::shared_ptr<const rt::CachedKernel> image =
        mlir::fa::getOrCompileCudaKernel(*op, impl.target, compiled, error,
                                         tile);
    if (!image)
      fail(error + "\n" + ctx.text);
    impl.gpuBiasFallback = std::make_unique<GpuKernel>(std::move(image));
  }
  return *impl.gpuBiasFallback;
}

/// Runs the GPU kernel on device views, after the checks its ABI needs:
/// rows contiguous (stride 1 in the head dim) and 16-byte aligned rows for
/// cp.async. `allArgs` are q, k, v, [bias], [ALiBi slopes], [seed],
/// [captures], out, [lse], as the host kernel takes them, all on CUDA device
/// `device`.
void launchGpu(const fa::Kernel::Impl &impl,
               const std::vector<mlir::fa::HostKernelArg> &allArgs, Place where,
               const fa::TensorView *workspace, void *stream) {
  const fa::AttentionSpec &spec = impl.spec;
  int device = where.index;
  // The variant's operands apart: the rest is the plain kernel's q, k, v, o,
  // lse.
  std::vector<mlir::fa::HostKernelArg> args(allArgs.begin(),
                                            allArgs.begin() + 3);
  size_t next = 3;
  const mlir::fa::HostKernelArg *bias = spec.bias ? &allArgs[next++] : nullptr;
  const mlir::fa::HostKernelArg *slopes =
      spec.alibi ? &allArgs[next++] : nullptr;
  const mlir::fa::HostKernelArg *seed =
      spec.dropoutP != 0.0 ? &allArgs[next++] : nullptr;
  size_t firstCapture = next;
  next += spec.captures.size();
  args.insert(args.end(), allArgs.begin() + next, allArgs.end());
  const char *names[5] = {"q", "k", "v", "out", "lse"};
  size_t elementBytes = spec.dtype == fa::DType::F32 ? 4 : 2;
  for (int i = 0; i < 4; ++i) {
    const mlir::fa::HostKernelArg &a = args[i];
    if (a.strides[3] != 1)
      fail(std::string(names[i]) +
           " must have stride 1 in its last dim on the GPU, got " +
           std::to_string(a.strides[3]));
    bool aligned = reinterpret_cast<uintptr_t>(a.data) % 16 == 0;
    for (int d = 0; d < 3; ++d)
      aligned &= (a.strides[d] * elementBytes) % 16 == 0;
    if (!aligned)
      fail(std::string(names[i]) +
           " must be 16-byte aligned, with batch, head and row strides that "
           "are multiples of 16 bytes, on the GPU");
  }
  bool hasLse = args.size() == 5;
  if (hasLse && args[4].strides[2] != 1)
    fail("lse must have stride 1 in its last dim on the GPU, got " +
         std::to_string(args[4].strides[2]));
  const mlir::fa::HostKernelArg &q = args[0], &k = args[1], &v = args[2],
                                &o = args[3];
  rt::KernelCall call;
  const mlir::fa::HostKernelArg *tensors[4] = {&q, &k, &v, &o};
  const rt::AbiTensor names4[4] = {rt::AbiTensor::Q, rt::AbiTensor::K,
                                   rt::AbiTensor::V, rt::AbiTensor::O};
  for (int i = 0; i < 4; ++i)
    call.set(names4[i], reinterpret_cast<uint64_t>(tensors[i]->data),
             {tensors[i]->strides[0], tensors[i]->strides[1],
              tensors[i]->strides[2]});
  if (hasLse)
    call.set(rt::AbiTensor::Lse, reinterpret_cast<uint64_t>(args[4].data),
             {args[4].strides[0], args[4].strides[1]});
  call.batch = q.sizes[0];
  call.headsQ = q.sizes[1];
  call.headsKV = k.sizes[1];
  call.seqQ = q.sizes[2];
  call.seqKV = k.sizes[2];
  double scale =
      spec.scale ? *spec.scale : 1.0 / std::sqrt(double(spec.headDim));
  call.scaleLog2 = static_cast<float>(scale * M_LOG2E);
  call.scale = static_cast<float>(scale);
  if (bias) {
    // Size-1 dims broadcast: stride 0 whatever the view says.
    size_t elementBytes = spec.biasDType == fa::DType::F32 ? 4 : 2;
    rt::KernelCall::Tensor &b = call[rt::AbiTensor::Bias];
    b.data =
        reinterpret_cast<uint64_t>(bias->data) + bias->offset * elementBytes;
    for (int d = 0; d < 4; ++d)
      b.strides[d] = bias->sizes[d] == 1 ? 0 : bias->strides[d];
  }
  if (slopes) {
    rt::KernelCall::Tensor &s = call[rt::AbiTensor::Slopes];
    s.data = reinterpret_cast<uint64_t>(slopes->data) + slopes->offset * 4;
    if (slopes->sizes.size() == 2) {
      if (slopes->strides[1] != 1)
        fail("alibiSlopes must have stride 1 in its last dim on the GPU, got " +
             std::to_string(slopes->strides[1]));
      s.strides[0] = slopes->sizes[0] == 1 ? 0 : slopes->strides[0];
    } else if (slopes->strides[0] != 1) {
      fail("alibiSlopes must have stride 1 on the GPU, got " +
           std::to_string(slopes->strides[0]));
    }
  }
  if (seed)
    call.seed = seed->scalar;
  call.captures = gpuCaptures(spec, allArgs, firstCapture);
  GpuKernel &gpu = forwardKernelFor(impl, call);
  const LoadedImage &loaded = gpu.image.load(kForward, device);
  rt::ScopedContext scope(loaded.device);
  if (scope.getStatus().failed())
    fail(scope.getStatus().getMessage());
  uint64_t workspaceAddress = 0;
  if (workspace)
    workspaceAddress = checkWorkspace(
        kForward, "forwardWorkspaceBytes", *workspace, where,
        mlir::fa::getCudaForwardWorkspaceBytes(gpu.image.getImage(), call));
  if (rt::Status st =
          mlir::fa::launchCudaForward(gpu.image.getImage(), loaded.functions,
                                      call, stream, workspaceAddress);
      st.failed())
    fail(st.getMessage());
}

} // namespace

void fa::Kernel::forward(const TensorView &q, const TensorView &k,
                         const TensorView &v, const TensorView &out,
                         const TensorView *lse, const TensorView *bias,
                         const TensorView *alibiSlopes, int64_t dropoutSeed,
                         void *stream, const std::vector<TensorView> &captures,
                         const TensorView *workspace) const {
  const AttentionSpec &spec = impl->spec;
  Place device = placeOf(kForward, impl->gpu ? Device::CUDA : Device::CPU, q);
  CheckedInputs in = checkInputs(kForward, spec, device, q, k, v, bias,
                                 alibiSlopes, dropoutSeed, captures);
  std::vector<mlir::fa::HostKernelArg> args = {in.q, in.k, in.v};
  llvm::append_range(args, in.variant);

  args.push_back(toArg(kForward, out, "out", spec.dtype, 4, true, device));
  checkShape(kForward, out, "out", {in.b, in.hq, in.nq, in.dv});
  if (spec.returnLse) {
    if (!lse)
      fail("the kernel was compiled to return the lse; pass one");
    args.push_back(toArg(kForward, *lse, "lse", DType::F32, 3, true, device));
    checkShape(kForward, *lse, "lse", {in.b, in.hq, in.nq});
  } else if (lse) {
    fail("the kernel was compiled without the lse; recompile with "
         "spec.returnLse = true");
  }

  if (impl->gpu)
    return launchGpu(*impl, args, device, workspace, stream);
  if (llvm::Error err =
          impl->host->run(args, hostThreadsFor(2 * (in.d + in.dv), in)))
    fail(llvm::toString(std::move(err)));
}

namespace {

/// Compiles the backward of `impl`'s spec: its fa.attention_grad, through
/// fa-pipeline-host like the forward, or for the GPU from the kernel cache.
/// `withBias` adds dBias. Sets impl.backwardError on failure.
void compileBackward(const fa::Kernel::Impl &impl, bool withBias) {
  std::string &error = impl.backwardError[withBias];
  DiagnosticContext ctx;
  mlir::OwningOpRef<mlir::ModuleOp> module = ctx.parse(
      specToMLIR(impl.spec, withBias ? SpecForm::GradWithBias : SpecForm::Grad),
      "<spec>");
  mlir::fa::AttentionGradOp grad;
  if (module)
    module->walk([&](mlir::fa::AttentionGradOp op) { grad = op; });
  if (!grad) {
    error = "invalid attention spec\n" + ctx.text;
    return;
  }
  if (impl.gpu) {
    bool compiled = false;
    std::shared_ptr<const rt::CachedKernel> image =
        mlir::fa::getOrCompileCudaBackward(
            grad, impl.target, compiled, error,
            {/*prefetch=*/true, impl.spec.atomicDQ, /*dkdvWarps=*/0,
             /*wgmma=*/true, impl.spec.deterministic});
    if (!image) {
      error += "\n" + ctx.text;
      return;
    }
    impl.gpuBackward[withBias] = std::make_unique<GpuBackward>(image);
    return;
  }
  mlir::OwningOpRef<mlir::ModuleOp> kernelModule =
      mlir::fa::buildHostKernelModule(grad.getOperation());
  if (!kernelModule) {
    error = "cannot build the backward of the attention spec\n" + ctx.text;
    return;
  }
  auto host = mlir::fa::HostKernel::compile(*kernelModule,
                                            mlir::fa::HostPipelineOptions());
  if (!host) {
    error = llvm::toString(host.takeError()) + "\n" + ctx.text;
    return;
  }
  impl.hostBackward[withBias] = std::move(*host);
}

/// The backward of `impl` (with dBias: `withBias`), compiled on the first
/// use: its host kernel or its GPU kernels.
std::pair<mlir::fa::HostKernel *, GpuBackward *>
getBackward(const fa::Kernel::Impl &impl, bool withBias) {
  std::lock_guard<std::mutex> lock(impl.backwardMutex);
  if (!impl.hostBackward[withBias] && !impl.gpuBackward[withBias] &&
      impl.backwardError[withBias].empty())
    compileBackward(impl, withBias);
  if (!impl.hostBackward[withBias] && !impl.gpuBackward[withBias])
    fail(kBackward, impl.backwardError[withBias]);
  return {impl.hostBackward[withBias].get(), impl.gpuBackward[withBias].get()};
}

/// Runs the GPU backward on device views (checked as the forward's are:
/// rows contiguous, 16-byte aligned rows). `args` are @fa_backward's: q, k,
/// v, out, dout, lse, [bias], [slopes], [seed], [captures], dq, dk, dv,
/// [dbias] (`withBias`), all where the call runs (`where`); `workspace`
/// the caller's or null.
void launchGpuBackward(GpuBackward &gpu, const fa::AttentionSpec &spec,
                       const std::vector<mlir::fa::HostKernelArg> &args,
                       bool withBias, Place where,
                       const fa::TensorView *workspace, void *stream) {
  const char *names[9] = {"q",   "k",  "v",  "out", "dout",
                          "lse", "dq", "dk", "dv"};
  size_t elementBytes = spec.dtype == fa::DType::F32 ? 4 : 2;
  // dq, dk, dv are the last three before dbias (the variant's operands
  // come after lse).
  size_t n = args.size() - (withBias ? 1 : 0);
  const mlir::fa::HostKernelArg *tensors[9] = {
      &args[0], &args[1],     &args[2],     &args[3],    &args[4],
      &args[5], &args[n - 3], &args[n - 2], &args[n - 1]};
  mlir::fa::CudaBackwardCall call;
  const rt::AbiTensor abiNames[9] = {
      rt::AbiTensor::Q,  rt::AbiTensor::K,  rt::AbiTensor::V,
      rt::AbiTensor::O,  rt::AbiTensor::DO, rt::AbiTensor::Lse,
      rt::AbiTensor::DQ, rt::AbiTensor::DK, rt::AbiTensor::DV};
  for (int i = 0; i < 9; ++i) {
    const mlir::fa::HostKernelArg &a = *tensors[i];
    rt::KernelCall::Tensor &t = call[abiNames[i]];
    t.data = reinterpret_cast<uint64_t>(a.data);
    if (i == 5)
      continue; // lse: checked below
    if (a.strides[3] != 1)
      fail(kBackward, std::string(names[i]) +
                          " must have stride 1 in its last dim on the GPU, "
                          "got " +
                          std::to_string(a.strides[3]));
    bool aligned = reinterpret_cast<uintptr_t>(a.data) % 16 == 0;
    for (int d = 0; d < 3; ++d) {
      aligned &= (a.strides[d] * elementBytes) % 16 == 0;
      t.strides[d] = a.strides[d];
    }
    if (!aligned)
      fail(kBackward,
           std::string(names[i]) +
               " must be 16-byte aligned, with batch, head and row strides "
               "that are multiples of 16 bytes, on the GPU");
  }
  const mlir::fa::HostKernelArg &lse = args[5];
  if (lse.strides[2] != 1)
    fail(kBackward, "lse must have stride 1 in its last dim on the GPU, got " +
                        std::to_string(lse.strides[2]));
  call[rt::AbiTensor::Lse].strides[0] = lse.strides[0];
  call[rt::AbiTensor::Lse].strides[1] = lse.strides[1];
  call.batch = args[0].sizes[0];
  call.headsQ = args[0].sizes[1];
  call.headsKV = args[1].sizes[1];
  call.seqQ = args[0].sizes[2];
  call.seqKV = args[1].sizes[2];
  double scale =
      spec.scale ? *spec.scale : 1.0 / std::sqrt(double(spec.headDim));
  call.scale = static_cast<float>(scale);
  call.scaleLog2 = static_cast<float>(scale * M_LOG2E);
  // The scored path's operands, as the forward passes them; dBias written
  // whole with its own strides.
  size_t biasBytes = spec.biasDType == fa::DType::F32 ? 4 : 2;
  size_t next = 6;
  if (spec.bias) {
    const mlir::fa::HostKernelArg &bias = args[next++];
    rt::KernelCall::Tensor &b = call[rt::AbiTensor::Bias];
    b.data = reinterpret_cast<uint64_t>(bias.data) + bias.offset * biasBytes;
    for (int d = 0; d < 4; ++d)
      b.strides[d] = bias.sizes[d] == 1 ? 0 : bias.strides[d];
  }
  if (spec.alibi) {
    const mlir::fa::HostKernelArg &slopes = args[next++];
    rt::KernelCall::Tensor &s = call[rt::AbiTensor::Slopes];
    s.data = reinterpret_cast<uint64_t>(slopes.data) + slopes.offset * 4;
    int64_t last = slopes.strides.back();
    if (last != 1 && slopes.sizes.back() > 1)
      fail(kBackward,
           "alibiSlopes must have stride 1 in its last dim on the GPU, got " +
               std::to_string(last));
    if (slopes.sizes.size() == 2)
      s.strides[0] = slopes.sizes[0] == 1 ? 0 : slopes.strides[0];
  }
  if (spec.dropoutP != 0.0)
    call.seed = args[next++].scalar;
  if (withBias) {
    const mlir::fa::HostKernelArg &dbias = args.back();
    rt::KernelCall::Tensor &t = call[rt::AbiTensor::DBias];
    t.data = reinterpret_cast<uint64_t>(dbias.data) + dbias.offset * biasBytes;
    for (int d = 0; d < 4; ++d)
      t.strides[d] = dbias.strides[d];
  }
  // The captures come right before dq, dk, dv.
  call.captures = gpuCaptures(spec, args, n - 3 - spec.captures.size());
  const rt::CachedKernel &image = gpu.image.getImage();
  // No workspace: the launcher takes one from the stream-ordered allocator.
  if (workspace)
    call.workspace =
        checkWorkspace(kBackward, "backwardWorkspaceBytes", *workspace, where,
                       mlir::fa::getCudaBackwardWorkspaceBytes(image, call));
  const LoadedImage &loaded = gpu.image.load(kBackward, where.index);
  rt::ScopedContext scope(loaded.device);
  if (scope.getStatus().failed())
    fail(kBackward, scope.getStatus().getMessage());
  if (rt::Status st =
          mlir::fa::launchCudaBackward(image, loaded.functions, call, stream);
      st.failed())
    fail(kBackward, st.getMessage());
}

} // namespace

void fa::Kernel::backward(const TensorView &q, const TensorView &k,
                          const TensorView &v, const TensorView &out,
                          const TensorView &dout, const TensorView &lse,
                          const TensorView &dq, const TensorView &dk,
                          const TensorView &dv, const TensorView *bias,
                          const TensorView *alibiSlopes, int64_t dropoutSeed,
                          void *stream, const TensorView *dbias,
                          const std::vector<TensorView> &captures,
                          const TensorView *workspace) const {
  const AttentionSpec &spec = impl->spec;
  Place device = placeOf(kBackward, impl->gpu ? Device::CUDA : Device::CPU, q);
  CheckedInputs in = checkInputs(kBackward, spec, device, q, k, v, bias,
                                 alibiSlopes, dropoutSeed, captures);
  // @fa_backward(Q, K, V, O, dO, lse, [bias], [alibi_slopes], [seed], dQ,
  // dK, dV).
  std::vector<mlir::fa::HostKernelArg> args = {in.q, in.k, in.v};
  args.push_back(toArg(kBackward, out, "out", spec.dtype, 4, false, device));
  checkShape(kBackward, out, "out", {in.b, in.hq, in.nq, in.dv});
  args.push_back(toArg(kBackward, dout, "dout", spec.dtype, 4, false, device));
  checkShape(kBackward, dout, "dout", {in.b, in.hq, in.nq, in.dv});
  args.push_back(toArg(kBackward, lse, "lse", DType::F32, 3, false, device));
  checkShape(kBackward, lse, "lse", {in.b, in.hq, in.nq});
  llvm::append_range(args, in.variant);
  args.push_back(toArg(kBackward, dq, "dq", spec.dtype, 4, true, device));
  checkShape(kBackward, dq, "dq", {in.b, in.hq, in.nq, in.d});
  args.push_back(toArg(kBackward, dk, "dk", spec.dtype, 4, true, device));
  checkShape(kBackward, dk, "dk", {in.b, in.hkv, in.nk, in.d});
  args.push_back(toArg(kBackward, dv, "dv", spec.dtype, 4, true, device));
  checkShape(kBackward, dv, "dv", {in.b, in.hkv, in.nk, in.dv});
  bool withBias = dbias != nullptr;
  if (dbias) {
    if (!spec.bias)
      fail(kBackward, "dbias needs a bias, but the kernel was compiled "
                      "without one");
    args.push_back(
        toArg(kBackward, *dbias, "dbias", spec.biasDType, 4, true, device));
    const int64_t full[4] = {in.b, in.hq, in.nq, in.nk};
    for (int i = 0; i < 4; ++i)
      checkDim(kBackward, dbias->shape[i], spec.biasBroadcast[i] ? 1 : full[i],
               "dbias dim " + std::to_string(i));
  }

  auto [host, gpu] = getBackward(*impl, withBias);
  if (gpu)
    return launchGpuBackward(*gpu, spec, args, withBias, device, workspace,
                             stream);
  if (llvm::Error err =
          host->run(args, hostThreadsFor(2 * (3 * in.d + 2 * in.dv), in)))
    fail(kBackward, llvm::toString(std::move(err)));
}

namespace {
/// The sizes a *WorkspaceBytes query of `api` takes, none negative.
void checkWorkspaceSizes(const char *api, int64_t batch, int64_t headsQ,
                         int64_t seqQ) {
  if (batch < 0 || headsQ < 0 || seqQ < 0)
    fail(api, "sizes must be >= 0, got batch " + std::to_string(batch) +
                  ", headsQ " + std::to_string(headsQ) + ", seqQ " +
                  std::to_string(seqQ));
}
} // namespace

size_t fa::Kernel::forwardWorkspaceBytes(int64_t batch, int64_t headsQ,
                                         int64_t seqQ) const {
  checkWorkspaceSizes("fa::Kernel::forwardWorkspaceBytes", batch, headsQ, seqQ);
  if (!impl->gpu)
    return 0;
  rt::KernelCall call;
  call.batch = batch;
  call.headsQ = headsQ;
  call.seqQ = seqQ;
  return mlir::fa::getCudaForwardWorkspaceBytes(impl->gpu->image.getImage(),
                                                call);
}

size_t fa::Kernel::backwardWorkspaceBytes(int64_t batch, int64_t headsQ,
                                          int64_t seqQ, bool dbias) const {
  checkWorkspaceSizes("fa::Kernel::backwardWorkspaceBytes", batch, headsQ,
                      seqQ);
  if (!impl->gpu)
    return 0;
  GpuBackward *gpu = getBackward(*impl, dbias && impl->spec.bias).second;
  mlir::fa::CudaBackwardCall call;
  call.batch = batch;
  call.headsQ = headsQ;
  call.seqQ = seqQ;
  return mlir::fa::getCudaBackwardWorkspaceBytes(gpu->image.getImage(), call);
}
