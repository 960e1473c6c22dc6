//===- fa-jit.cpp - Compile and run one attention variant -----------------===//
//
// fa-jit takes one fa.attention or fa.attention_grad (from a .mlir file, or
// built from flags), compiles it with fa-pipeline-host, runs it on .npy or
// random inputs and, with --check, compares it with the float64 reference.
// The backward runs the forward of the same variant first for O and lse.
//
//===----------------------------------------------------------------------===//

#include "fa/Compiler/CudaJit.h"
#include "fa/Compiler/HostJit.h"
#include "fa/Compiler/Registration.h"
#include "fa/Runtime/Cuda.h"
#include "fa/Runtime/KernelCache.h"
#include "fa/Support/Npy.h"
#include "fa/Support/Reference.h"
#include "fa/Target/GpuTarget.h"
#include "fa/Version.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/Builders.h"
#include "mlir/IR/BuiltinOps.h"
#include "mlir/IR/Diagnostics.h"
#include "mlir/IR/MLIRContext.h"
#include "mlir/IR/Verifier.h"
#include "mlir/Parser/Parser.h"
#include "mlir/Support/FileUtilities.h"
#include "llvm/ADT/STLExtras.h"
#include "llvm/ADT/StringExtras.h"
#include "llvm/Support/CommandLine.h"
#include "llvm/Support/Format.h"
#include "llvm/Support/FormatVariadic.h"
#include "llvm/Support/InitLLVM.h"
#include "llvm/Support/SourceMgr.h"
#include "llvm/Support/raw_ostream.h"

#include <array>
#include <chrono>
#include <cmath>
#include <cstring>
#include <limits>
#include <optional>
#include <random>
#include <sys/resource.h>

using namespace mlir;
using namespace mlir::fa;
namespace cl = llvm::cl;
// The dependency-free helpers live in ::fa, next to mlir::fa.
using ::fa::support::AccuracyCheck;
using ::fa::support::AttentionOptions;
using ::fa::support::CausalMask;
using ::fa::support::checkAccuracy;
using ::fa::support::DType;
using ::fa::support::ErrorScale;
using ::fa::support::NpyArray;
using ::fa::support::Precision;
using ::fa::support::relativeError;
using ::fa::support::SlidingWindow;

//===----------------------------------------------------------------------===//
// Options
//===----------------------------------------------------------------------===//

static cl::OptionCategory faCategory("fa-jit options");

static cl::opt<std::string> inputFile(cl::Positional, cl::desc("[FILE.mlir]"),
                                      cl::init(""), cl::cat(faCategory));

// The variant, when there is no input file.
static cl::opt<int64_t> gqaOpt(
    "gqa",
    cl::desc("Query heads per key/value head (GQA; = Hq for MQA): sets Hkv "
             "to Hq / G, Hq from --shape (B,Hq,Hq,Nq,Nk,D is fine)"),
    cl::init(0), cl::value_desc("G"), cl::cat(faCategory));
static cl::opt<std::string>
    shapeOpt("shape",
             cl::desc("B,Hq,Hkv,Nq,Nk,D[,Dv] (default 1,4,4,128,128,64, or "
                      "taken from --inputs); with a file, gives the op's "
                      "dynamic dims"),
             cl::value_desc("sizes"), cl::cat(faCategory));
static cl::opt<std::string>
    dtypeOpt("dtype",
             cl::desc("Element type of Q, K, V and O: f32, f16 or bf16 "
                      "(default f32, or that of the --inputs files)"),
             cl::cat(faCategory));
static cl::opt<std::string>
    causalOpt("causal", cl::desc("Causal mask: top-left or bottom-right"),
              cl::cat(faCategory));
static cl::opt<std::string>
    windowOpt("window", cl::desc("Sliding window L,R (both >= 0)"),
              cl::value_desc("L,R"), cl::cat(faCategory));
static cl::opt<double> softcapOpt("softcap",
                                  cl::desc("Softcap: s = X * tanh(s / X)"),
                                  cl::value_desc("X"), cl::cat(faCategory));
static cl::opt<double> scaleOpt("scale",
                                cl::desc("Score scale (default 1/sqrt(D))"),
                                cl::value_desc("X"), cl::cat(faCategory));
static cl::opt<bool>
    alibiOpt("alibi", cl::desc("ALiBi with slopes 2^(-8(h+1)/Hq), shape [Hq]"),
             cl::cat(faCategory));
static cl::opt<bool> biasOpt(
    "bias",
    cl::desc("Additive bias, random f32 [1, Hq, Nq, Nk] unless it is the "
             "fourth --inputs file (which implies --bias)"),
    cl::cat(faCategory));
static cl::opt<bool> lseOpt("lse", cl::desc("Also return the log-sum-exp"),
                            cl::cat(faCategory));
static cl::opt<bool>
    dbiasOpt("dbias",
             cl::desc("Backward: also return the gradient of the bias "
                      "(needs --bias or a bias file)"),
             cl::cat(faCategory));
static cl::opt<bool> backwardOpt(
    "backward",
    cl::desc("Run the backward: the fa.attention_grad of the variant (or of "
             "the file's fa.attention; a file holding fa.attention_grad "
             "implies it) on Q, K, V and dO, after the forward of the same "
             "variant has given O and lse"),
    cl::cat(faCategory));
static cl::opt<double>
    dropoutOpt("dropout", cl::desc("Dropout probability (seeded by --seed)"),
               cl::value_desc("P"), cl::cat(faCategory));

// Data.
static cl::opt<std::string>
    inputsOpt("inputs",
              cl::desc("q.npy,k.npy,v.npy[,bias.npy], with the backward "
                       "q.npy,k.npy,v.npy,do.npy[,bias.npy]: inputs "
                       "(otherwise random normal); shapes and dtypes must "
                       "match the op"),
              cl::value_desc("files"), cl::cat(faCategory));
static cl::opt<std::string> capturesOpt(
    "captures",
    cl::desc("cap0.npy,cap1.npy,...: the op's captures, in order (the "
             "tensors its score_mod / mask_mod read); dtypes and static dims "
             "must match the op's capture types"),
    cl::value_desc("files"), cl::cat(faCategory));
static cl::opt<uint64_t>
    seedOpt("seed", cl::desc("Seed of the random inputs (and of dropout)"),
            cl::init(0), cl::cat(faCategory));
static cl::opt<std::string> outputOpt("output", cl::desc("Write O as .npy"),
                                      cl::value_desc("o.npy"),
                                      cl::cat(faCategory));
static cl::opt<std::string>
    lseOutputOpt("lse-output", cl::desc("Write lse as .npy (implies --lse)"),
                 cl::value_desc("lse.npy"), cl::cat(faCategory));
static cl::opt<std::string> gradOutputsOpt(
    "grad-outputs", cl::desc("Backward: write dQ, dK, dV (and dBias) as .npy"),
    cl::value_desc("dq.npy,dk.npy,dv.npy[,dbias.npy]"), cl::cat(faCategory));

// Checking.
static cl::opt<bool> checkOpt(
    "check",
    cl::desc("Compare with the float64 reference on the same inputs and fail "
             "when a result's worst row is more than twice as far from it as "
             "a plain computation in the inputs' precision is, plus 1e-5 "
             "(docs/accuracy.md): O and lse, or dQ, dK, dV and dBias"),
    cl::cat(faCategory));
static cl::opt<double>
    toleranceOpt("tolerance",
                 cl::desc("Replace the --check bound by this fixed bound on "
                          "the worst row error (docs/accuracy.md)"),
                 cl::init(0.0), cl::cat(faCategory));

// Compilation.
static cl::opt<std::string>
    emitOpt("emit",
            cl::desc("Print IR instead of running: kernel (the @fa_forward "
                     "module before the pipeline), mlir (after it, in the "
                     "LLVM dialect), llvm (LLVM IR) or, for a GPU target, "
                     "ptx"),
            cl::cat(faCategory));
static cl::opt<bool> benchOpt(
    "bench",
    cl::desc("GPU: time the kernel with CUDA events after warm-up and print "
             "`bench: median_ms=<ms> tflops=<TFLOP/s>` (2*B*Hq*Nq*Nk*(D + Dv) "
             "FLOPs, half when causal; the backward's kernels together, "
             "2*B*Hq*Nq*Nk*(3D + 2Dv))"),
    cl::cat(faCategory));
static cl::opt<int> benchItersOpt("bench-iters",
                                  cl::desc("Timed runs of --bench"),
                                  cl::init(50), cl::cat(faCategory));
static cl::opt<std::string>
    targetOpt("target",
              cl::desc("Where to run: host, or a GPU chip (sm_80, sm_90a; "
                       "auto: the GPU found, else the host)"),
              cl::init("host"), cl::cat(faCategory));
static cl::opt<int64_t> blockQOpt(
    "block-q",
    cl::desc("Query rows per tile (0: default); on a GPU target, of the "
             "forward kernel: 64 or 128"),
    cl::init(0), cl::cat(faCategory));
static cl::opt<int64_t> blockKVOpt(
    "block-kv",
    cl::desc("Key/value rows per tile (0: default); on a GPU target, of the "
             "forward kernel: 32, 64 or 128, or with --fwd-warp-specialize on "
             "sm_90a and --block-q=128 any multiple of 16 from 80 to 224"),
    cl::init(0), cl::cat(faCategory));
static cl::opt<int64_t> hostVectorBitsOpt(
    "host-vector-bits",
    cl::desc("With --emit on the host: fa-pipeline-host's vector-bits (128, "
             "256 or 512; 0: this CPU's, which the JIT always compiles for)"),
    cl::init(0), cl::cat(faCategory));
static cl::opt<bool> fwdWgmmaOpt(
    "fwd-wgmma",
    cl::desc("On sm_90a, the forward kernel multiplies with warpgroup MMAs "
             "(wgmma; head dims between multiples of 64 padded with zero "
             "columns) (default; false: mma.sync)"),
    cl::init(true), cl::cat(faCategory));
static cl::opt<bool> fwdOverlapOpt(
    "fwd-overlap",
    cl::desc("On sm_90a, a wgmma forward kernel without a producer "
             "warpgroup, with two or more K/V stages, runs each tile's "
             "softmax under the previous tile's P V (fa-overlap-softmax; off "
             "by default: measured no faster; see --fwd-ws-overlap)"),
    cl::init(false), cl::cat(faCategory));
static cl::opt<bool> fwdWarpSpecializeOpt(
    "fwd-warp-specialize",
    cl::desc("On sm_90a, a wgmma forward kernel of the plain path gets 128 "
             "query rows and a producer warpgroup for its copies "
             "(fa-warp-specialize)"),
    cl::init(true), cl::cat(faCategory));
static cl::opt<bool> fwdTmaOpt(
    "fwd-tma",
    cl::desc("With --fwd-warp-specialize, the producer copies with TMA "
             "where the tiles allow (false: cp.async)"),
    cl::init(true), cl::cat(faCategory));
static cl::opt<bool> fwdWsOverlapOpt(
    "fwd-ws-overlap",
    cl::desc("With --fwd-warp-specialize, each tile's softmax runs under the "
             "previous tile's P V (the consumers' loop rotated)"),
    cl::init(true), cl::cat(faCategory));
static cl::opt<std::string> fwdPersistentOpt(
    "fwd-persistent",
    cl::desc("With --fwd-warp-specialize, where every query tile visits the "
             "same keys or a causal mask or window alone tells them apart "
             "(causal tiles in heavy/light pairs), a persistent grid: each "
             "CTA runs work items round robin and copies the next one's Q "
             "and K/V under the current one's epilogue (auto: the plain "
             "path, causal and windows too, and terms that read no memory "
             "and draw no random bits such as softcap, ALiBi or a score_mod "
             "of the position, not bias, captures or dropout; always: also "
             "those, and a key-range kernel's tiles one an item; never)"),
    cl::init("auto"), cl::cat(faCategory));
static cl::opt<std::string> fwdCausalOrderOpt(
    "fwd-causal-order",
    cl::desc("With a persistent causal grid, how the CTAs share the query "
             "tiles: tail (the default: heavy/light pairs round robin for "
             "the full rounds but the last, then single tiles heaviest "
             "first, each round of the CTAs in the other direction) or "
             "paired (pairs throughout)"),
    cl::init("tail"), cl::cat(faCategory));
static cl::opt<int64_t> fwdHeadGroupOpt(
    "fwd-head-group",
    cl::desc("Under a causal mask, run the heaviest query tiles of this many "
             "(head, batch) pairs before the lighter ones (1: one head's "
             "tiles heavy to light; 0: the default, 8 at D >= 128 with a "
             "producer warpgroup, else 1)"),
    cl::init(0), cl::cat(faCategory));
static cl::opt<int64_t> persistentCtasOpt(
    "persistent-ctas",
    cl::desc("A persistent forward's CTAs at most (0: as many as the GPU's "
             "SMs hold)"),
    cl::init(0), cl::cat(faCategory));
static cl::opt<bool> fwdKeyRangesOpt(
    "fwd-key-ranges",
    cl::desc("A forward whose mask_mod reads neither b nor h visits only the "
             "key tiles a key-range kernel finds it keeping (fa-key-ranges)"),
    cl::init(true), cl::cat(faCategory));
static cl::opt<bool> fwdPingpongOpt(
    "fwd-pingpong",
    cl::desc("With --fwd-warp-specialize, the consumer warpgroups take turns "
             "at the tensor cores (ping-pong)"),
    cl::init(true), cl::cat(faCategory));
static cl::opt<int64_t> fwdExp2FmaOpt(
    "fwd-exp2-fma",
    cl::desc("Of every 8 exponentials of P a thread computes, this many by a "
             "polynomial on the FMA pipe instead of the MUFU's ex2 (-1: the "
             "default for the variant)"),
    cl::init(-1), cl::cat(faCategory));
static cl::opt<int64_t> fwdTanhFmaOpt(
    "fwd-tanh-fma",
    cl::desc("Of every 8 tanh values a thread computes, this many take their "
             "reciprocal from Newton steps on the FMA pipe instead of the "
             "MUFU's rcp (-1: the default for the variant)"),
    cl::init(-1), cl::cat(faCategory));
static cl::opt<bool> fwdBiasTilesOpt(
    "fwd-bias-tiles",
    cl::desc("With --fwd-warp-specialize and --fwd-tma, each K/V tile's bias "
             "block is copied into shared memory beside K and read from "
             "there (false: one global load a score)"),
    cl::init(true), cl::cat(faCategory));
static cl::opt<bool> fwdBoundedSoftmaxOpt(
    "fwd-bounded-softmax",
    cl::desc("Where the scores are bounded (softcap), the softmax subtracts "
             "a fixed offset instead of a running max (fa-bounded-softmax)"),
    cl::init(true), cl::cat(faCategory));
static cl::opt<int64_t> kvStagesOpt(
    "kv-stages",
    cl::desc("On a GPU target, the forward kernel's K/V pipeline stages "
             "(fa-async-copy): 1 (FlashAttention-2's schedule) to 4 (tiles "
             "n + 1 .. n + 3 copied during tile n); 0: the tile's default (2 "
             "for the plain path's 128 x 64 tiles up to D = 128, else 1)"),
    cl::init(0), cl::cat(faCategory));
static cl::opt<bool> bwdPrefetchOpt(
    "bwd-prefetch",
    cl::desc("On a GPU target, --backward: the dK/dV kernel loads the next Q "
             "tile while computing the current one (default true)"),
    cl::init(true), cl::cat(faCategory));
static cl::opt<bool> bwdAtomicDQOpt(
    "bwd-atomic-dq",
    cl::desc("On a GPU target, --backward: the dK/dV kernel adds dQ into an "
             "f32 accumulator (atomics; bulk reductions on sm_90a) instead "
             "of a dQ kernel. Neither this nor --bwd-deterministic: atomic "
             "where the dK/dV kernel is the wgmma one (sm_90a, plain path, "
             "D = 64 or 128), else the dQ kernel"),
    cl::init(false), cl::cat(faCategory));
static cl::opt<bool> bwdDeterministicOpt(
    "bwd-deterministic",
    cl::desc("On a GPU target, --backward: always the dQ kernel (no "
             "atomics; dQ bitwise reproducible)"),
    cl::init(false), cl::cat(faCategory));
static cl::opt<int64_t> bwdDkDvWarpsOpt(
    "bwd-dkdv-warps",
    cl::desc("On a GPU target, --backward: warps of a dK/dV CTA, each owning "
             "16 keys: 4 or 8 (D <= 128); 0: the default (8 with "
             "--bwd-atomic-dq on sm_90a where the tile splits evenly, else "
             "4)"),
    cl::init(0), cl::cat(faCategory));
static cl::opt<bool> bwdWgmmaOpt(
    "bwd-wgmma",
    cl::desc("On a GPU target, --backward on sm_90a: the dK/dV kernel of "
             "--bwd-atomic-dq in 8 warps multiplies with wgmma (default "
             "true; false: mma.sync)"),
    cl::init(true), cl::cat(faCategory));
static cl::opt<bool>
    referenceOpt("reference",
                 cl::desc("Lower through fa-decompose (the materialized "
                          "reference) instead of the tiled form"),
                 cl::cat(faCategory));
static cl::opt<std::string> layoutOpt(
    "layout",
    cl::desc("Memory layout of Q, K, V, O and lse handed to the kernel: "
             "bhsd (row-major, the default) or bshd (heads and sequence "
             "swapped, as PyTorch often stores them, at a nonzero offset: "
             "exercises the strided ABI)"),
    cl::init("bhsd"), cl::cat(faCategory));
static cl::opt<bool>
    peakMemoryOpt("print-peak-memory",
                  cl::desc("Print the process's peak RSS after the run"),
                  cl::cat(faCategory));

//===----------------------------------------------------------------------===//
// Helpers
//===----------------------------------------------------------------------===//

/// The forward kernel's options, as the --fwd-* flags and the tile flags
/// set them.
static CudaForwardTile forwardTileFlags() {
  return {blockQOpt,         blockKVOpt,           kvStagesOpt,
          fwdWgmmaOpt,       fwdOverlapOpt,        fwdWarpSpecializeOpt,
          fwdTmaOpt,         fwdPingpongOpt,       fwdWsOverlapOpt,
          fwdPersistentOpt,  fwdKeyRangesOpt,      fwdHeadGroupOpt,
          fwdCausalOrderOpt, fwdBoundedSoftmaxOpt, fwdExp2FmaOpt,
          fwdTanhFmaOpt,     fwdBiasTilesOpt};
}

namespace {

/// The bias of a call as fa-jit uploads it to `data`: contiguous, size-1
/// dims broadcast with stride 0.
::fa::runtime::KernelCall::Tensor contiguousBias(const NpyArray &bias,
                                                 uint64_t data) {
  ::fa::runtime::KernelCall::Tensor t;
  t.data = data;
  int64_t stride = 1;
  for (int i = 3; i >= 0; --i) {
    t.strides[i] = bias.shape[i] == 1 ? 0 : stride;
    stride *= bias.shape[i];
  }
  return t;
}

/// Reports an error the fa-jit way; returns false for the caller to pass on.
bool fail(const llvm::Twine &message) {
  llvm::errs() << "fa-jit: error: " << message << "\n";
  return false;
}

enum Dim { kB, kHq, kHkv, kNq, kNk, kD, kDv, kNumDims };
constexpr const char *kDimNames[kNumDims] = {"B",  "Hq", "Hkv", "Nq",
                                             "Nk", "D",  "Dv"};
constexpr int64_t kUnknown = ShapedType::kDynamic;
using Dims = std::array<int64_t, kNumDims>;

/// Which attention dim each tensor dim is.
const std::vector<Dim> kQDims = {kB, kHq, kNq, kD};
const std::vector<Dim> kKDims = {kB, kHkv, kNk, kD};
const std::vector<Dim> kVDims = {kB, kHkv, kNk, kDv};
const std::vector<Dim> kODims = {kB, kHq, kNq, kDv};
const std::vector<Dim> kLseDims = {kB, kHq, kNq};

/// `value` printed with a printf format for one double.
std::string formatDouble(const char *format, double value) {
  char buffer[64];
  std::snprintf(buffer, sizeof(buffer), format, value);
  return buffer;
}

std::string formatShape(llvm::ArrayRef<int64_t> shape) {
  std::string s = "[";
  for (auto [i, d] : llvm::enumerate(shape)) {
    if (i)
      s += ", ";
    s += d == kUnknown ? "?" : std::to_string(d);
  }
  return s + "]";
}

std::optional<DType> toDType(Type t) {
  if (t.isF32())
    return DType::F32;
  if (t.isF16())
    return DType::F16;
  if (t.isBF16())
    return DType::BF16;
  return std::nullopt;
}

/// The .npy dtype of a capture's element type, where .npy I/O has one.
std::optional<DType> toCaptureDType(Type t) {
  if (t.isF64())
    return DType::F64;
  if (t.isSignlessInteger(32))
    return DType::I32;
  if (t.isSignlessInteger(64))
    return DType::I64;
  return toDType(t);
}

std::string typeString(Type t) {
  std::string s;
  llvm::raw_string_ostream os(s);
  t.print(os);
  return s;
}

bool isAttentionDType(DType dtype) {
  return dtype == DType::F32 || dtype == DType::F16 || dtype == DType::BF16;
}

std::optional<DType> parseDType(llvm::StringRef name) {
  return llvm::StringSwitch<std::optional<DType>>(name)
      .Case("f32", DType::F32)
      .Case("f16", DType::F16)
      .Case("bf16", DType::BF16)
      .Default(std::nullopt);
}

Type toMLIRType(MLIRContext &ctx, DType dtype) {
  Builder b(&ctx);
  switch (dtype) {
  case DType::F16:
    return b.getF16Type();
  case DType::BF16:
    return b.getBF16Type();
  default:
    return b.getF32Type();
  }
}

/// Parses comma-separated integers; fails on anything else.
bool parseInts(llvm::StringRef text, llvm::SmallVectorImpl<int64_t> &values) {
  llvm::SmallVector<llvm::StringRef> parts;
  text.split(parts, ',');
  for (llvm::StringRef part : parts) {
    int64_t v;
    if (part.trim().getAsInteger(10, v))
      return false;
    values.push_back(v);
  }
  return true;
}

/// Elements of `shape`, or -1 when that overflows or is absurdly large.
int64_t countElements(llvm::ArrayRef<int64_t> shape) {
  int64_t n = 1;
  for (int64_t d : shape)
    if (d < 0 || __builtin_mul_overflow(n, d, &n) || n > (int64_t(1) << 34))
      return -1;
  return n;
}

/// An array of `shape` filled with the bits of NaN, so that anything the
/// kernel leaves unwritten fails --check.
NpyArray makeOutput(DType dtype, std::vector<int64_t> shape) {
  std::vector<double> nans(countElements(shape),
                           std::numeric_limits<double>::quiet_NaN());
  return fromDoubles(dtype, std::move(shape), nans.data());
}

NpyArray randomNormal(DType dtype, std::vector<int64_t> shape,
                      std::mt19937_64 &rng) {
  std::normal_distribution<double> normal(0.0, 1.0);
  std::vector<double> values(countElements(shape));
  for (double &v : values)
    v = normal(rng);
  return fromDoubles(dtype, std::move(shape), values.data());
}

/// A copy of an array in another memory layout, and the strided view of it
/// that the kernel gets.
struct StridedBuffer {
  std::vector<uint8_t> storage;
  HostKernelArg arg;
};

/// Elements of padding before a relaid array, so that its offset is not 0.
constexpr int64_t kLayoutPad = 3;

/// Visits every index of `shape` in row-major order with its offset in a
/// row-major array and in the view `strides`.
template <typename Fn>
void forEachIndex(llvm::ArrayRef<int64_t> shape,
                  llvm::ArrayRef<int64_t> strides, Fn fn) {
  int64_t rank = shape.size(), total = countElements(shape);
  llvm::SmallVector<int64_t> index(rank, 0);
  for (int64_t linear = 0; linear < total; ++linear) {
    int64_t strided = 0;
    for (int64_t i = 0; i < rank; ++i)
      strided += index[i] * strides[i];
    fn(linear, strided);
    for (int64_t i = rank - 1; i >= 0; --i) {
      if (++index[i] < shape[i])
        break;
      index[i] = 0;
    }
  }
}

/// `array` ([B, H, N, ...]) stored as [B, N, H, ...] after kLayoutPad
/// elements.
StridedBuffer toHeadsInnerLayout(const NpyArray &array) {
  StridedBuffer buffer;
  size_t eb = getDTypeSize(array.dtype);
  llvm::SmallVector<int64_t> memShape(array.shape.begin(), array.shape.end());
  std::swap(memShape[1], memShape[2]);
  llvm::SmallVector<int64_t> memStrides(memShape.size(), 1);
  for (int64_t i = memShape.size() - 2; i >= 0; --i)
    memStrides[i] = memStrides[i + 1] * memShape[i + 1];
  std::swap(memStrides[1], memStrides[2]);
  buffer.storage.assign((kLayoutPad + array.getNumElements()) * eb, 0);
  forEachIndex(array.shape, memStrides, [&](int64_t linear, int64_t strided) {
    std::memcpy(&buffer.storage[(kLayoutPad + strided) * eb],
                &array.data[linear * eb], eb);
  });
  buffer.arg.data = buffer.storage.data();
  buffer.arg.offset = kLayoutPad;
  buffer.arg.sizes.assign(array.shape.begin(), array.shape.end());
  buffer.arg.strides.assign(memStrides.begin(), memStrides.end());
  return buffer;
}

/// Copies a buffer made by toHeadsInnerLayout back into `array`.
void fromHeadsInnerLayout(const StridedBuffer &buffer, NpyArray &array) {
  size_t eb = getDTypeSize(array.dtype);
  forEachIndex(array.shape, buffer.arg.strides,
               [&](int64_t linear, int64_t strided) {
                 std::memcpy(&array.data[linear * eb],
                             &buffer.storage[(kLayoutPad + strided) * eb], eb);
               });
}

int64_t peakRssMegabytes() {
  struct rusage usage;
  if (getrusage(RUSAGE_SELF, &usage) != 0)
    return -1;
  return usage.ru_maxrss / 1024; // Linux reports kilobytes.
}

/// Prints MLIR diagnostics as `fa-jit: error: FILE:LINE:COL: message`.
void printDiagnostic(Diagnostic &diag) {
  llvm::raw_ostream &os = llvm::errs();
  auto print = [&](Diagnostic &d, llvm::StringRef severity) {
    os << "fa-jit: " << severity << ": ";
    if (auto loc = d.getLocation()->findInstanceOf<FileLineColLoc>()) {
      os << loc.getFilename().getValue() << ":";
      // A parsed module sits at line 0: name the file only.
      if (loc.getLine() != 0)
        os << loc.getLine() << ":" << loc.getColumn() << ":";
      os << " ";
    }
    os << d << "\n";
  };
  switch (diag.getSeverity()) {
  case DiagnosticSeverity::Error:
    print(diag, "error");
    break;
  case DiagnosticSeverity::Warning:
    print(diag, "warning");
    break;
  default:
    print(diag, "note");
    break;
  }
  for (Diagnostic &note : diag.getNotes())
    print(note, "note");
}

/// The flags that describe a variant; they cannot be combined with a file.
/// (--dbias can: it asks for the gradient of the file's bias.)
llvm::SmallVector<llvm::StringRef> givenVariantFlags() {
  llvm::SmallVector<llvm::StringRef> given;
  for (cl::Option *opt : std::initializer_list<cl::Option *>{
           &dtypeOpt, &causalOpt, &windowOpt, &softcapOpt, &scaleOpt, &alibiOpt,
           &biasOpt, &lseOpt, &dropoutOpt})
    if (opt->getNumOccurrences())
      given.push_back(opt->ArgStr);
  return given;
}

struct FlagVariant {
  DType dtype = DType::F32;
  Dims dims;
  /// The bias .npy, when given; otherwise a random f32 [1, Hq, Nq, Nk].
  const NpyArray *biasFile = nullptr;
  bool bias = false;
  bool lse = false;
};

/// Builds `func.func @attention` around one fa.attention from the flags. B,
/// Nq and Nk stay dynamic, as a compiled kernel serves every batch size and
/// sequence length; heads and head dims are static.
OwningOpRef<ModuleOp> buildFromFlags(MLIRContext &ctx,
                                     const FlagVariant &variant) {
  const Dims &d = variant.dims;
  OpBuilder b(&ctx);
  Location loc = b.getUnknownLoc();
  OwningOpRef<ModuleOp> module = ModuleOp::create(loc);
  b.setInsertionPointToEnd(module->getBody());
  Type et = toMLIRType(ctx, variant.dtype), f32 = b.getF32Type();
  int64_t dyn = ShapedType::kDynamic;
  auto tensor = [&](llvm::ArrayRef<int64_t> shape, Type t) -> Type {
    return RankedTensorType::get(shape, t);
  };
  llvm::SmallVector<Type> argTypes = {tensor({dyn, d[kHq], dyn, d[kD]}, et),
                                      tensor({dyn, d[kHkv], dyn, d[kD]}, et),
                                      tensor({dyn, d[kHkv], dyn, d[kDv]}, et)};
  if (variant.bias) {
    // A dim of 1 must be static for the kernel to broadcast it.
    llvm::SmallVector<int64_t> shape = {1, d[kHq], dyn, dyn};
    Type biasType = f32;
    if (const NpyArray *file = variant.biasFile) {
      for (int i = 0; i < 4; ++i)
        shape[i] = file->shape[i] == 1 ? 1 : (i == 1 ? d[kHq] : dyn);
      biasType = toMLIRType(ctx, file->dtype);
    }
    argTypes.push_back(tensor(shape, biasType));
  }
  if (alibiOpt)
    argTypes.push_back(tensor({d[kHq]}, f32));
  if (dropoutOpt.getNumOccurrences())
    argTypes.push_back(b.getI64Type());
  llvm::SmallVector<Type> resultTypes = {
      tensor({dyn, d[kHq], dyn, d[kDv]}, et)};
  if (variant.lse)
    resultTypes.push_back(tensor({dyn, d[kHq], dyn}, f32));

  auto func = func::FuncOp::create(b, loc, "attention",
                                   b.getFunctionType(argTypes, resultTypes));
  Block *entry = func.addEntryBlock();
  b.setInsertionPointToStart(entry);
  unsigned next = 3;
  Value bias = variant.bias ? entry->getArgument(next++) : Value();
  Value slopes = alibiOpt ? entry->getArgument(next++) : Value();
  Value seed =
      dropoutOpt.getNumOccurrences() ? entry->getArgument(next++) : Value();

  FloatAttr scale, softcap, dropout;
  if (scaleOpt.getNumOccurrences())
    scale = b.getF32FloatAttr(scaleOpt);
  if (softcapOpt.getNumOccurrences())
    softcap = b.getF32FloatAttr(softcapOpt);
  if (dropoutOpt.getNumOccurrences())
    dropout = b.getF32FloatAttr(dropoutOpt);
  CausalKindAttr causal;
  if (causalOpt.getNumOccurrences())
    causal = CausalKindAttr::get(&ctx, causalOpt == "top-left"
                                           ? CausalKind::TopLeft
                                           : CausalKind::BottomRight);
  DenseI64ArrayAttr window;
  if (windowOpt.getNumOccurrences()) {
    llvm::SmallVector<int64_t> lr;
    (void)parseInts(windowOpt, lr);
    window = b.getDenseI64ArrayAttr(lr);
  }
  auto op = AttentionOp::create(
      b, loc, resultTypes[0], variant.lse ? resultTypes[1] : Type(),
      entry->getArgument(0), entry->getArgument(1), entry->getArgument(2), bias,
      slopes, seed, /*captures=*/ValueRange(), scale, causal, window, softcap,
      dropout);
  func::ReturnOp::create(b, loc, op->getResults());
  return module;
}

/// A short description of the op's variant for the summary line. The
/// backward's forward always has lse: `backward` leaves it out.
std::string describeVariant(AttentionOp op, const Dims &dims, bool backward,
                            bool gradBias = false) {
  llvm::SmallVector<std::string> parts;
  if (dims[kHkv] != dims[kHq])
    parts.push_back(dims[kHkv] == 1 ? "mqa" : "gqa");
  if (auto causal = op.getCausalAttr())
    parts.push_back("causal=" + stringifyCausalKind(causal.getValue()).str());
  if (auto window = op.getWindowAttr())
    parts.push_back("window=" + std::to_string(window[0]) + "," +
                    std::to_string(window[1]));
  if (auto softcap = op.getSoftcapAttr())
    parts.push_back("softcap=" +
                    formatDouble("%g", softcap.getValueAsDouble()));
  if (auto scale = op.getScaleAttr())
    parts.push_back("scale=" + formatDouble("%g", scale.getValueAsDouble()));
  if (op.getAlibiSlopes())
    parts.push_back("alibi");
  if (op.getBias())
    parts.push_back(gradBias ? "bias,dbias" : "bias");
  if (!op.getScoreMod().empty())
    parts.push_back("score_mod");
  if (!op.getMaskMod().empty())
    parts.push_back("mask_mod");
  if (op.getDropoutPAttr())
    parts.push_back("dropout");
  if (op.getLse() && !backward)
    parts.push_back("lse");
  return parts.empty() ? "plain" : llvm::join(parts, ",");
}

/// Fills `dims` from `shape` (that of tensor `name` with dims `which`),
/// failing when a known dim disagrees.
bool mergeShape(Dims &dims, llvm::ArrayRef<int64_t> shape,
                const std::vector<Dim> &which, llvm::StringRef name) {
  llvm::SmallVector<int64_t> expected;
  for (Dim d : which)
    expected.push_back(dims[d]);
  bool ok = shape.size() == which.size();
  for (size_t i = 0; ok && i < which.size(); ++i)
    ok = expected[i] == kUnknown || expected[i] == shape[i];
  if (!ok)
    return fail(name + ": expected shape " + formatShape(expected) + ", got " +
                formatShape(shape));
  for (size_t i = 0; i < which.size(); ++i)
    dims[which[i]] = shape[i];
  return true;
}

bool checkDType(const NpyArray &array, DType expected, llvm::StringRef name) {
  if (array.dtype == expected)
    return true;
  return fail(name + ": expected dtype " + getDTypeName(expected) + ", got " +
              getDTypeName(array.dtype));
}

/// The static dims of the op's tensors.
Dims staticDims(AttentionOp op) {
  Dims dims;
  dims.fill(kUnknown);
  auto add = [&](Value v, const std::vector<Dim> &which) {
    if (!v)
      return;
    auto type = cast<RankedTensorType>(v.getType());
    for (auto [i, d] : llvm::enumerate(which))
      if (dims[d] == kUnknown && !type.isDynamicDim(i))
        dims[d] = type.getDimSize(i);
  };
  add(op.getQuery(), kQDims);
  add(op.getKey(), kKDims);
  add(op.getValue(), kVDims);
  add(op.getOutput(), kODims);
  add(op.getLse(), kLseDims);
  return dims;
}

/// Builds the reference's callbacks from the op's regions, which read
/// `captures` (the op's, as doubles).
bool buildRegionCallbacks(AttentionOp op,
                          llvm::ArrayRef<RegionCapture> captureViews,
                          AttentionOptions &options) {
  std::string error;
  llvm::SmallVector<RegionCapture> captures(captureViews);
  if (!op.getScoreMod().empty()) {
    FailureOr<RegionEvaluator> eval =
        RegionEvaluator::compile(op.getScoreMod(), error);
    if (failed(eval))
      return fail("--check: score_mod: " + error);
    options.scoreMod = [eval = *eval, captures](double s, int64_t b, int64_t h,
                                                int64_t i, int64_t j) {
      double args[5] = {s, double(b), double(h), double(i), double(j)};
      return eval.evaluate(args, captures);
    };
  }
  if (!op.getMaskMod().empty()) {
    FailureOr<RegionEvaluator> eval =
        RegionEvaluator::compile(op.getMaskMod(), error);
    if (failed(eval))
      return fail("--check: mask_mod: " + error);
    options.maskMod = [eval = *eval, captures](int64_t b, int64_t h, int64_t i,
                                               int64_t j) {
      double args[4] = {double(b), double(h), double(i), double(j)};
      return eval.evaluate(args, captures) != 0.0;
    };
  }
  return true;
}

/// The low-precision reference's arithmetic for inputs of `dtype`.
Precision precisionOf(DType dtype) {
  switch (dtype) {
  case DType::F16:
    return Precision::F16;
  case DType::BF16:
    return Precision::BF16;
  case DType::F32:
    return Precision::F32;
  default:
    return Precision::Exact;
  }
}

//===----------------------------------------------------------------------===//
// The driver
//===----------------------------------------------------------------------===//

/// One fa-jit run. Each step reports its own errors and returns false on
/// failure.
class Driver {
public:
  Driver() : ctx(makeRegistry()), diagHandler(&ctx, handleDiagnostic) {
    ctx.loadAllAvailableDialects();
    // A failing pass would dump its whole op in generic form: too noisy.
    ctx.printOpOnDiagnostic(false);
  }

  bool parseFlags();
  bool parseSource();
  bool readInputs();
  bool loadOp();
  bool emit();
  bool resolveDims();
  bool prepareData();
  bool compileAndRun();
  bool compileAndRunOnGpu();
  bool writeOutputs();
  bool check();

private:
  static DialectRegistry makeRegistry() {
    DialectRegistry registry;
    registerDialects(registry);
    return registry;
  }
  static LogicalResult handleDiagnostic(Diagnostic &diag) {
    printDiagnostic(diag);
    return success();
  }
  std::vector<int64_t> shapeOf(const std::vector<Dim> &which) const {
    std::vector<int64_t> shape;
    for (Dim d : which)
      shape.push_back(dims[d]);
    return shape;
  }
  bool buildOpFromFlags();

  MLIRContext ctx;
  ScopedDiagnosticHandler diagHandler;
  llvm::SourceMgr sourceMgr;

  // From the flags.
  std::optional<DType> flagDType;
  Dims shapeDims;

  // The op and its kernel. In the backward, `op` is the forward of the
  // variant (with lse), built from `gradOp`, and `gradKernelModule` holds
  // @fa_backward.
  OwningOpRef<ModuleOp> source, gradSource, forwardSource;
  AttentionOp op;
  AttentionGradOp gradOp;
  bool backward = false;
  DType dtype = DType::F32;
  OwningOpRef<ModuleOp> kernelModule, gradKernelModule;
  HostPipelineOptions pipelineOptions;

  // Sizes and data. `inputs` holds Q, K, V and, in the backward, dO.
  Dims dims;
  llvm::SmallVector<std::string> inputPaths;
  std::vector<NpyArray> inputs;
  /// The bias file, when --inputs gives one.
  std::optional<NpyArray> biasInput;
  std::string biasPath;
  /// The --captures files, in the op's order.
  std::vector<NpyArray> captures;
  llvm::SmallVector<std::string> capturePaths;
  NpyArray bias, slopes, out, lse;
  /// The backward's results; dbias when the op has a grad_bias result.
  NpyArray dq, dk, dv, dbias;
  /// The GPU chip to compile for; empty for the host.
  std::string chip;
};

bool Driver::parseFlags() {
  if (targetOpt != "host" && targetOpt != "auto" &&
      !::fa::target::lookupGpuTarget(targetOpt))
    return fail("--target must be host, auto or a GPU chip (" +
                ::fa::target::listGpuTargets() + "), got '" + targetOpt + "'");
  chip = targetOpt == "host" ? std::string() : std::string(targetOpt);
  if (targetOpt == "auto") {
    ::fa::runtime::Expected<::fa::runtime::Device> device =
        ::fa::runtime::Device::get(0);
    // Where a GPU must be used, falling back to the host would turn every
    // GPU test into a host test: fail with the driver's reason instead.
    if (device.failed() && ::fa::runtime::gpuRequired())
      return fail("--target=auto: a GPU is present (or FA_REQUIRE_GPU=1) but " +
                  device.getMessage());
    chip = device.ok() ? device.value().getChip() : std::string();
  }
  if (!emitOpt.empty() && emitOpt != "kernel" && emitOpt != "mlir" &&
      emitOpt != "llvm" && emitOpt != "ptx")
    return fail("--emit must be kernel, mlir, llvm or ptx, got '" + emitOpt +
                "'");
  if (emitOpt == "ptx" && chip.empty())
    return fail("--emit=ptx needs a GPU target (--target=sm_80, sm_90a, or "
                "auto on a machine with a GPU)");
  if (!chip.empty() && !emitOpt.empty() && emitOpt != "ptx")
    return fail("--emit=" + emitOpt +
                " shows the host pipeline; for a GPU "
                "target use --emit=ptx");
  if (causalOpt.getNumOccurrences() && causalOpt != "top-left" &&
      causalOpt != "bottom-right")
    return fail("--causal must be top-left or bottom-right, got '" + causalOpt +
                "'");
  if (windowOpt.getNumOccurrences()) {
    llvm::SmallVector<int64_t> lr;
    if (!parseInts(windowOpt, lr) || lr.size() != 2 || lr[0] < 0 || lr[1] < 0)
      return fail("--window expects L,R with L, R >= 0, got '" + windowOpt +
                  "'");
  }
  if (dtypeOpt.getNumOccurrences()) {
    flagDType = parseDType(dtypeOpt);
    if (!flagDType)
      return fail("--dtype must be f32, f16 or bf16, got '" + dtypeOpt + "'");
  }
  shapeDims.fill(kUnknown);
  if (shapeOpt.getNumOccurrences()) {
    llvm::SmallVector<int64_t> v;
    if (!parseInts(shapeOpt, v) || (v.size() != 6 && v.size() != 7) ||
        llvm::any_of(v, [](int64_t x) { return x < 1; }))
      return fail("--shape expects B,Hq,Hkv,Nq,Nk,D[,Dv] of positive sizes, "
                  "got '" +
                  shapeOpt + "'");
    for (size_t i = 0; i < v.size(); ++i)
      shapeDims[i] = v[i];
    if (v.size() == 6)
      shapeDims[kDv] = v[kD];
  }
  if (gqaOpt.getNumOccurrences()) {
    int64_t hq = shapeDims[kHq];
    if (gqaOpt < 1)
      return fail("--gqa expects a group size >= 1, got " +
                  std::to_string(gqaOpt));
    if (hq == kUnknown)
      return fail("--gqa needs Hq: give --shape=B,Hq,Hkv,Nq,Nk,D");
    if (hq % gqaOpt != 0)
      return fail("--gqa=" + std::to_string(gqaOpt) + " does not divide Hq (" +
                  std::to_string(hq) + ")");
    int64_t hkv = hq / gqaOpt;
    if (shapeDims[kHkv] != hq && shapeDims[kHkv] != hkv)
      return fail("--gqa=" + std::to_string(gqaOpt) + " gives Hkv = " +
                  std::to_string(hkv) + ", but --shape gives Hkv = " +
                  std::to_string(shapeDims[kHkv]));
    shapeDims[kHkv] = hkv;
  }
  if (layoutOpt != "bhsd" && layoutOpt != "bshd")
    return fail("--layout must be bhsd or bshd, got '" + layoutOpt + "'");
  if (blockQOpt < 0 || blockKVOpt < 0 || kvStagesOpt < 0)
    return fail("--block-q, --block-kv and --kv-stages must be >= 0");
  if (hostVectorBitsOpt != 0 && hostVectorBitsOpt != 128 &&
      hostVectorBitsOpt != 256 && hostVectorBitsOpt != 512)
    return fail("--host-vector-bits must be 0, 128, 256 or 512, got " +
                std::to_string(hostVectorBitsOpt));
  size_t commas = llvm::count(llvm::StringRef(gradOutputsOpt), ',');
  if (!gradOutputsOpt.empty() && commas != 2 && commas != 3)
    return fail("--grad-outputs expects dq.npy,dk.npy,dv.npy[,dbias.npy], "
                "got '" +
                gradOutputsOpt + "'");
  pipelineOptions.reference = referenceOpt;
  pipelineOptions.blockQ = blockQOpt;
  pipelineOptions.blockKV = blockKVOpt;
  pipelineOptions.vectorBits =
      hostVectorBitsOpt > 0 ? hostVectorBitsOpt : getHostVectorBits();
  return true;
}

bool Driver::parseSource() {
  backward = backwardOpt;
  if (inputFile.empty())
    return true;
  llvm::SmallVector<llvm::StringRef> flags = givenVariantFlags();
  if (!flags.empty())
    return fail("--" + flags.front() +
                " cannot be combined with an input file; the file gives "
                "the variant");
  std::string error;
  std::unique_ptr<llvm::MemoryBuffer> buffer = openInputFile(inputFile, &error);
  if (!buffer)
    return fail(error);
  sourceMgr.AddNewSourceBuffer(std::move(buffer), llvm::SMLoc());
  source = parseSourceFile<ModuleOp>(sourceMgr, &ctx);
  if (!source)
    return false;
  FailureOr<Operation *> found = findSingleAttentionOp(*source);
  if (failed(found))
    return false;
  backward |= isa<AttentionGradOp>(*found);
  return true;
}

bool Driver::readInputs() {
  if (!capturesOpt.empty()) {
    llvm::SmallVector<llvm::StringRef> paths;
    llvm::StringRef(capturesOpt).split(paths, ',');
    for (llvm::StringRef path : paths) {
      NpyArray array;
      std::string error;
      if (!readNpy(path.str(), array, error))
        return fail(error);
      capturePaths.push_back(path.str());
      captures.push_back(std::move(array));
    }
  }
  if (inputsOpt.empty())
    return true;
  llvm::SmallVector<llvm::StringRef> parts;
  llvm::StringRef(inputsOpt).split(parts, ',');
  // Q, K, V, [dO,] then the bias if any.
  size_t tensors = backward ? 4 : 3;
  if (parts.size() != tensors && parts.size() != tensors + 1)
    return fail(backward
                    ? "--inputs expects q.npy,k.npy,v.npy,do.npy[,bias.npy] "
                      "with the backward, got '" +
                          inputsOpt + "'"
                    : "--inputs expects q.npy,k.npy,v.npy[,bias.npy], "
                      "got '" +
                          inputsOpt + "'");
  for (auto [i, path] : llvm::enumerate(parts)) {
    NpyArray array;
    std::string error;
    if (!readNpy(path.str(), array, error))
      return fail(error);
    if (i < tensors) {
      inputPaths.push_back(path.str());
      inputs.push_back(std::move(array));
    } else {
      biasPath = path.str();
      biasInput = std::move(array);
    }
  }
  return true;
}

bool Driver::buildOpFromFlags() {
  FlagVariant variant;
  if (flagDType)
    variant.dtype = *flagDType;
  else if (!inputs.empty() && isAttentionDType(inputs[0].dtype))
    variant.dtype = inputs[0].dtype;
  // Heads and head dims: --shape, else the files, else the default.
  if (!shapeOpt.getNumOccurrences() && inputs.empty())
    shapeDims = {1, 4, 4, 128, 128, 64, 64};
  variant.dims = shapeDims;
  if (!shapeOpt.getNumOccurrences() && !inputs.empty()) {
    const char *names[3] = {"Q", "K", "V"};
    const std::vector<Dim> *which[3] = {&kQDims, &kKDims, &kVDims};
    for (int t = 0; t < 3; ++t) {
      if (inputs[t].shape.size() != 4)
        return fail(inputPaths[t] + ": expected a rank-4 " + names[t] +
                    ", got shape " + formatShape(inputs[t].shape));
      // First come, first served: resolveDims reports the file that
      // disagrees.
      for (int i = 0; i < 4; ++i)
        if (variant.dims[(*which[t])[i]] == kUnknown)
          variant.dims[(*which[t])[i]] = inputs[t].shape[i];
    }
  }
  variant.bias = biasOpt || biasInput;
  if (biasInput) {
    if (biasInput->shape.size() != 4)
      return fail(biasPath + ": expected a rank-4 bias, got shape " +
                  formatShape(biasInput->shape));
    if (!isAttentionDType(biasInput->dtype))
      return fail(biasPath + ": expected dtype f32, f16 or bf16, got " +
                  getDTypeName(biasInput->dtype));
    variant.biasFile = &*biasInput;
  }
  variant.lse = lseOpt || !lseOutputOpt.empty();
  source = buildFromFlags(ctx, variant);
  return succeeded(verify(*source));
}

bool Driver::loadOp() {
  if (!source && !buildOpFromFlags())
    return false;
  FailureOr<Operation *> found = findSingleAttentionOp(*source);
  if (failed(found))
    return false;
  if (backward) {
    // The backward needs the forward's O and lse: derive whichever op the
    // source does not hold, so that both share one variant.
    gradOp = dyn_cast<AttentionGradOp>(*found);
    if (gradOp && dbiasOpt && !gradOp.getGradBias())
      return fail("--dbias: the file's fa.attention_grad has no grad_bias "
                  "result");
    if (!gradOp) {
      gradSource = buildGradOfForward(cast<AttentionOp>(*found), dbiasOpt);
      gradOp = cast<AttentionGradOp>(*findSingleAttentionOp(*gradSource));
    }
    forwardSource = buildForwardOfGrad(gradOp);
    op = cast<AttentionOp>(*findSingleAttentionOp(*forwardSource));
    if (failed(verify(gradOp)) || failed(verify(op)))
      return false;
  } else {
    op = cast<AttentionOp>(*found);
    // --check always judges lse too (a wrong scale or a dropped key shows
    // there first): an op without one runs as the same variant with it.
    if (checkOpt && !op.getLse()) {
      OwningOpRef<ModuleOp> grad = buildGradOfForward(op, /*gradBias=*/false);
      forwardSource = buildForwardOfGrad(
          cast<AttentionGradOp>(*findSingleAttentionOp(*grad)));
      op = cast<AttentionOp>(*findSingleAttentionOp(*forwardSource));
      if (failed(verify(op)))
        return false;
    }
  }
  std::optional<DType> elementType = toDType(op.getElementType());
  if (!elementType)
    return fail("unsupported element type");
  dtype = *elementType;
  if (biasInput && !op.getBias())
    return fail("--inputs: " + biasPath +
                " is a bias, but the op has no bias operand");
  if (!lseOutputOpt.empty() && !op.getLse())
    return fail("--lse-output: the op has no lse result");
  if (captures.size() != op.getCaptures().size())
    return fail("--captures: the op has " +
                std::to_string(op.getCaptures().size()) + " captures, got " +
                std::to_string(captures.size()) + " files");
  if (!gradOutputsOpt.empty() && !backward)
    return fail("--grad-outputs needs the backward (--backward, or a file "
                "holding fa.attention_grad)");
  if (dbiasOpt && (!backward || !op.getBias()))
    return fail("--dbias needs the backward (--backward) and a bias (--bias "
                "or a bias file)");
  bool hasGradBias = backward && gradOp.getGradBias();
  if (llvm::count(llvm::StringRef(gradOutputsOpt), ',') == 3 && !hasGradBias)
    return fail("--grad-outputs: the op has no dBias result (give --dbias)");

  kernelModule = buildHostKernelModule(op);
  if (!kernelModule || failed(verify(*kernelModule)))
    return false;
  if (backward) {
    gradKernelModule = buildHostKernelModule(gradOp);
    if (!gradKernelModule || failed(verify(*gradKernelModule)))
      return false;
  }
  return true;
}

bool Driver::emit() {
  if (emitOpt == "ptx") {
    // The backward's three kernels are one PTX module.
    if (backward) {
      FailureOr<CudaBackwardImage> image =
          compileCudaBackward(gradOp, chip,
                              {bwdPrefetchOpt, bwdAtomicDQOpt, bwdDkDvWarpsOpt,
                               bwdWgmmaOpt, bwdDeterministicOpt});
      if (failed(image))
        return fail("fa-pipeline-cuda failed");
      llvm::outs() << image->ptx;
      return true;
    }
    FailureOr<CudaKernelImage> image =
        compileCudaKernel(op, chip, forwardTileFlags());
    if (failed(image))
      return fail("fa-pipeline-cuda failed");
    llvm::outs() << image->ptx;
    return true;
  }
  ModuleOp module = backward ? *gradKernelModule : *kernelModule;
  if (emitOpt != "kernel" &&
      failed(lowerHostKernelModule(module, pipelineOptions)))
    return fail("fa-pipeline-host failed");
  if (emitOpt == "llvm") {
    if (failed(printHostLLVMIR(module, llvm::outs())))
      return fail("cannot translate the kernel to LLVM IR");
    return true;
  }
  module->print(llvm::outs());
  llvm::outs() << "\n";
  return true;
}

bool Driver::resolveDims() {
  // The op's static dims, then --shape, then the files.
  dims = staticDims(op);
  for (int i = 0; i < kNumDims; ++i) {
    if (shapeDims[i] == kUnknown)
      continue;
    if (dims[i] != kUnknown && dims[i] != shapeDims[i])
      return fail(llvm::Twine("--shape gives ") + kDimNames[i] + "=" +
                  llvm::Twine(shapeDims[i]) + " but the op has " +
                  kDimNames[i] + "=" + llvm::Twine(dims[i]));
    dims[i] = shapeDims[i];
  }
  const std::vector<Dim> *inputDims[4] = {&kQDims, &kKDims, &kVDims, &kODims};
  for (size_t t = 0; t < inputs.size(); ++t)
    if (!checkDType(inputs[t], dtype, inputPaths[t]) ||
        !mergeShape(dims, inputs[t].shape, *inputDims[t], inputPaths[t]))
      return false;
  for (int i = 0; i < kNumDims; ++i) {
    if (dims[i] == kUnknown)
      return fail(llvm::Twine("the op's ") + kDimNames[i] +
                  " is dynamic; give the sizes with --shape or --inputs");
    if (dims[i] < 1)
      return fail(llvm::Twine("size ") + kDimNames[i] + " must be positive");
  }
  if (dims[kHq] % dims[kHkv] != 0)
    return fail("Hq (" + llvm::Twine(dims[kHq]) +
                ") must be a multiple of Hkv (" + llvm::Twine(dims[kHkv]) +
                ")");
  // The scores may be materialized: keep B*Hq*Nq*Nk in check too.
  for (const std::vector<int64_t> &shape :
       {shapeOf(kQDims), shapeOf(kKDims), shapeOf(kVDims), shapeOf(kODims),
        std::vector<int64_t>{dims[kB], dims[kHq], dims[kNq], dims[kNk]}})
    if (countElements(shape) < 0)
      return fail("the problem is too large: " + formatShape(shape));
  return true;
}

bool Driver::prepareData() {
  // Inputs, random where no file gives them: Q, K, V, the bias, then dO, so
  // that a seed gives the backward the inputs of the forward.
  std::mt19937_64 rng(seedOpt);
  bool randomGradOutput = backward && inputs.size() < 4;
  const std::vector<Dim> *inputDims[3] = {&kQDims, &kKDims, &kVDims};
  for (size_t t = inputs.size(); t < 3; ++t)
    inputs.push_back(randomNormal(dtype, shapeOf(*inputDims[t]), rng));
  if (Value biasValue = op.getBias()) {
    // Static dims as declared (1 broadcasts), dynamic ones full size.
    auto type = cast<RankedTensorType>(biasValue.getType());
    const int64_t full[4] = {dims[kB], dims[kHq], dims[kNq], dims[kNk]};
    std::vector<int64_t> shape;
    for (int i = 0; i < 4; ++i)
      shape.push_back(type.isDynamicDim(i) ? full[i] : type.getDimSize(i));
    if (countElements(shape) < 0)
      return fail("the bias is too large: " + formatShape(shape));
    DType biasDType = *toDType(type.getElementType());
    if (biasInput) {
      if (!checkDType(*biasInput, biasDType, biasPath))
        return false;
      if (biasInput->shape != shape)
        return fail(biasPath + ": expected shape " + formatShape(shape) +
                    ", got " + formatShape(biasInput->shape));
      bias = std::move(*biasInput);
    } else {
      bias = randomNormal(biasDType, shape, rng);
    }
  }
  if (Value slopesValue = op.getAlibiSlopes()) {
    bool perBatch =
        cast<RankedTensorType>(slopesValue.getType()).getRank() == 2;
    std::vector<int64_t> shape = {dims[kHq]};
    if (perBatch)
      shape.insert(shape.begin(), dims[kB]);
    // Per-batch slopes differ by batch (divided by b + 1), so that a kernel
    // that reads the wrong batch's row fails --check.
    std::vector<double> values;
    for (int64_t b = 0; b < (perBatch ? dims[kB] : 1); ++b)
      for (int64_t h = 0; h < dims[kHq]; ++h)
        values.push_back(std::exp2(-8.0 * double(h + 1) / double(dims[kHq])) /
                         double(b + 1));
    slopes = fromDoubles(DType::F32, shape, values.data());
  }
  for (auto [capture, path, value] :
       llvm::zip(captures, capturePaths, op.getCaptures())) {
    auto type = cast<RankedTensorType>(value.getType());
    std::optional<DType> captureDType = toCaptureDType(type.getElementType());
    if (!captureDType)
      return fail("--captures: fa-jit reads f16, bf16, f32, f64, i32 and i64 "
                  "captures, the op has " +
                  typeString(type));
    if (!checkDType(capture, *captureDType, path))
      return false;
    bool shapeOk = static_cast<int64_t>(capture.shape.size()) == type.getRank();
    for (int64_t i = 0; shapeOk && i < type.getRank(); ++i)
      shapeOk = type.isDynamicDim(i) || type.getDimSize(i) == capture.shape[i];
    if (!shapeOk)
      return fail(path + ": expected a capture of type " + typeString(type) +
                  ", got shape " + formatShape(capture.shape));
  }
  if (randomGradOutput)
    inputs.push_back(randomNormal(dtype, shapeOf(kODims), rng));
  out = makeOutput(dtype, shapeOf(kODims));
  if (op.getLse())
    lse = makeOutput(DType::F32, shapeOf(kLseDims));
  if (backward) {
    dq = makeOutput(dtype, shapeOf(kQDims));
    dk = makeOutput(dtype, shapeOf(kKDims));
    dv = makeOutput(dtype, shapeOf(kVDims));
    if (gradOp.getGradBias())
      dbias = makeOutput(bias.dtype, bias.shape);
  }
  return true;
}

bool Driver::compileAndRun() {
  if (!chip.empty())
    return compileAndRunOnGpu();
  if (benchOpt)
    return fail("--bench times GPU kernels; give --target=auto or a chip");
  auto start = std::chrono::steady_clock::now();
  llvm::Expected<std::unique_ptr<HostKernel>> kernel =
      HostKernel::compile(*kernelModule, pipelineOptions);
  if (!kernel)
    return fail(llvm::toString(kernel.takeError()));
  std::unique_ptr<HostKernel> gradKernel;
  if (backward) {
    llvm::Expected<std::unique_ptr<HostKernel>> compiledGrad =
        HostKernel::compile(*gradKernelModule, pipelineOptions);
    if (!compiledGrad)
      return fail(llvm::toString(compiledGrad.takeError()));
    gradKernel = std::move(*compiledGrad);
  }
  auto compiled = std::chrono::steady_clock::now();

  // Q, K, V, O, lse (and dO, dQ, dK, dV) in the requested layout; bias,
  // slopes and dBias stay row-major.
  bool headsInner = layoutOpt == "bshd";
  // Runs `kernel` on `before`, the bias and slopes, the seed, then `after`
  // (the outputs).
  auto run = [&](HostKernel &kernel, llvm::ArrayRef<NpyArray *> before,
                 llvm::ArrayRef<NpyArray *> after) {
    std::vector<StridedBuffer> relaid;
    // No reallocation: a growing vector copies StridedBuffers (their move
    // is not noexcept) and the views taken so far would dangle.
    relaid.reserve(before.size() + after.size());
    llvm::SmallVector<HostKernelArg> args;
    llvm::SmallVector<std::pair<NpyArray *, int64_t>> relaidOutputs;
    auto add = [&](NpyArray *array, bool layout) {
      layout &= array != &dbias;
      if (layout && headsInner) {
        relaid.push_back(toHeadsInnerLayout(*array));
        args.push_back(relaid.back().arg);
        return;
      }
      args.push_back(
          HostKernelArg::contiguous(array->data.data(), array->shape));
    };
    for (NpyArray *array : before)
      add(array, true);
    if (op.getBias())
      add(&bias, false);
    if (op.getAlibiSlopes())
      add(&slopes, false);
    if (op.getDropoutSeed())
      args.push_back(HostKernelArg::i64(static_cast<int64_t>(seedOpt)));
    for (NpyArray &capture : captures)
      add(&capture, false);
    for (NpyArray *array : after) {
      size_t before = relaid.size();
      add(array, true);
      if (relaid.size() != before)
        relaidOutputs.push_back({array, relaid.size() - 1});
    }
    if (llvm::Error error = kernel.run(args))
      return fail(llvm::toString(std::move(error)));
    for (auto [array, index] : relaidOutputs)
      fromHeadsInnerLayout(relaid[index], *array);
    return true;
  };

  auto started = std::chrono::steady_clock::now();
  llvm::SmallVector<NpyArray *> results = {&out};
  if (op.getLse())
    results.push_back(&lse);
  if (!run(**kernel, {&inputs[0], &inputs[1], &inputs[2]}, results))
    return false;
  auto ran = std::chrono::steady_clock::now(), gradRan = ran;
  if (backward) {
    llvm::SmallVector<NpyArray *> grads = {&dq, &dk, &dv};
    if (gradOp.getGradBias())
      grads.push_back(&dbias);
    if (!run(*gradKernel,
             {&inputs[0], &inputs[1], &inputs[2], &out, &inputs[3], &lse},
             grads))
      return false;
    gradRan = std::chrono::steady_clock::now();
  }

  using Ms = std::chrono::duration<double, std::milli>;
  llvm::outs() << "fa-jit: ran "
               << (backward ? "fa.attention_grad" : "fa.attention")
               << " on host: " << getDTypeName(dtype);
  for (int i = 0; i < kNumDims; ++i)
    llvm::outs() << " " << kDimNames[i] << "=" << dims[i];
  llvm::outs() << " variant="
               << describeVariant(op, dims, backward,
                                  backward && gradOp.getGradBias())
               << llvm::formatv(" compile={0:f1}ms",
                                Ms(compiled - start).count());
  // The backward's run is the gradient kernel; forward= is the pass that
  // gave it O and lse.
  if (backward)
    llvm::outs() << llvm::formatv(" forward={0:f1}ms run={1:f1}ms\n",
                                  Ms(ran - started).count(),
                                  Ms(gradRan - ran).count());
  else
    llvm::outs() << llvm::formatv(" run={0:f1}ms\n", Ms(ran - started).count());
  if (peakMemoryOpt)
    llvm::outs() << "peak_rss_mb=" << peakRssMegabytes() << "\n";
  return true;
}

bool Driver::compileAndRunOnGpu() {
  namespace rt = ::fa::runtime;
  if (layoutOpt != "bhsd")
    return fail("--layout=" + layoutOpt + " is host-only for now");
  rt::Expected<rt::Device> device = rt::Device::get(0);
  if (device.failed())
    return fail("--target=" + chip + ": " + device.getMessage());
  auto start = std::chrono::steady_clock::now();

  // The kernel: from the cache (memory, then $FA_CACHE_DIR), else compiled.
  // The backward's three kernels share one cache entry.
  bool compiledNow = false, gradCompiledNow = false;
  std::string error;
  // The bias is uploaded contiguous: where TMA cannot copy its blocks
  // (fa-bias-tiles; the runtime's rule, as fa::Kernel asks it per call),
  // one load a score.
  CudaForwardTile tile = forwardTileFlags();
  if (Value biasOperand = op.getBias()) {
    auto type = cast<ShapedType>(biasOperand.getType());
    rt::KernelCall probe;
    probe.batch = dims[kB];
    probe.headsQ = dims[kHq];
    probe.seqQ = dims[kNq];
    probe.seqKV = dims[kNk];
    probe[rt::AbiTensor::Bias] = contiguousBias(bias, 0);
    uint32_t panel = uint32_t(128 / (type.getElementTypeBitWidth() / 8));
    if (rt::getTensorMapRequest(
            rt::KernelParam::tensorMap(rt::AbiTensor::Bias, panel, 128), probe)
            .failed())
      tile.biasTiles = false;
  }
  std::shared_ptr<const rt::CachedKernel> cached =
      getOrCompileCudaKernel(op, chip, compiledNow, error, tile);
  if (!cached)
    return fail(error);
  const rt::CachedKernel &kernel = *cached;
  std::shared_ptr<const rt::CachedKernel> gradCached;
  if (backward) {
    gradCached = getOrCompileCudaBackward(gradOp, chip, gradCompiledNow, error,
                                          {bwdPrefetchOpt, bwdAtomicDQOpt,
                                           bwdDkDvWarpsOpt, bwdWgmmaOpt,
                                           bwdDeterministicOpt});
    if (!gradCached)
      return fail(error);
  }
  auto compiled = std::chrono::steady_clock::now();

  rt::Expected<rt::Module> module =
      rt::Module::load(device.value(), kernel.image);
  if (module.failed())
    return fail(module.getMessage());
  rt::Expected<CudaFunctions> functions =
      loadCudaFunctions(kernel, module.value());
  if (functions.failed())
    return fail(functions.getMessage());
  std::optional<rt::Module> gradModule;
  std::optional<CudaFunctions> gradFunctions;
  if (backward) {
    rt::Expected<rt::Module> loaded =
        rt::Module::load(device.value(), gradCached->image);
    if (loaded.failed())
      return fail(loaded.getMessage());
    gradModule.emplace(loaded.take());
    rt::Expected<CudaFunctions> functions =
        loadCudaFunctions(*gradCached, *gradModule);
    if (functions.failed())
      return fail(functions.getMessage());
    gradFunctions.emplace(functions.take());
  }

  // Inputs and outputs, contiguous [B, H, N, D] on the device.
  auto upload = [&](const NpyArray &array, rt::DeviceBuffer &buffer) {
    rt::Expected<rt::DeviceBuffer> allocated = rt::DeviceBuffer::allocate(
        device.value(), std::max<size_t>(array.data.size(), 4));
    if (allocated.failed())
      return fail(allocated.getMessage());
    buffer = std::move(allocated.value());
    if (array.data.empty())
      return true;
    rt::Status st = buffer.copyFromHost(array.data.data(), array.data.size());
    return st.ok() || fail(st.getMessage());
  };
  auto download = [&](const rt::DeviceBuffer &buffer, NpyArray &array) {
    rt::Status st = buffer.copyToHost(array.data.data(), array.data.size());
    return st.ok() || fail(st.getMessage());
  };
  rt::DeviceBuffer qBuf, kBuf, vBuf, oBuf, lseBuf, biasBuf, slopesBuf;
  if (!upload(inputs[0], qBuf) || !upload(inputs[1], kBuf) ||
      !upload(inputs[2], vBuf) || !upload(out, oBuf) || !upload(lse, lseBuf))
    return false;
  if ((op.getBias() && !upload(bias, biasBuf)) ||
      (op.getAlibiSlopes() && !upload(slopes, slopesBuf)))
    return false;
  std::vector<rt::DeviceBuffer> captureBufs(captures.size());
  for (auto [capture, buffer] : llvm::zip(captures, captureBufs))
    if (!upload(capture, buffer))
      return false;

  int64_t b = dims[kB], hq = dims[kHq], hkv = dims[kHkv], nq = dims[kNq],
          nk = dims[kNk], d = dims[kD], dvDim = dims[kDv];
  // The call's values by what they are (the kernel's ABI picks them).
  rt::KernelCall call;
  call.set(rt::AbiTensor::Q, qBuf.getPointer(), {hq * nq * d, nq * d, d});
  call.set(rt::AbiTensor::K, kBuf.getPointer(), {hkv * nk * d, nk * d, d});
  call.set(rt::AbiTensor::V, vBuf.getPointer(),
           {hkv * nk * dvDim, nk * dvDim, dvDim});
  call.set(rt::AbiTensor::O, oBuf.getPointer(),
           {hq * nq * dvDim, nq * dvDim, dvDim});
  call.set(rt::AbiTensor::Lse, lseBuf.getPointer(), {hq * nq, nq});
  call.batch = b;
  call.headsQ = hq;
  call.headsKV = hkv;
  call.seqQ = nq;
  call.seqKV = nk;
  call.scale = static_cast<float>(op.getScaleOrDefault());
  call.scaleLog2 = static_cast<float>(op.getScaleOrDefault() * M_LOG2E);
  if (op.getBias())
    call[rt::AbiTensor::Bias] = contiguousBias(bias, biasBuf.getPointer());
  if (op.getAlibiSlopes())
    call.set(rt::AbiTensor::Slopes, slopesBuf.getPointer(),
             {slopes.shape.size() == 2 ? hq : 0});
  if (op.getDropoutSeed())
    call.seed = static_cast<int64_t>(seedOpt);
  call.persistentCtas = persistentCtasOpt;
  // The captures, contiguous (row-major strides).
  for (auto [capture, buffer] : llvm::zip(captures, captureBufs)) {
    CudaCapture c;
    c.data = buffer.getPointer();
    c.strides.resize(capture.shape.size());
    int64_t stride = 1;
    for (size_t i = capture.shape.size(); i-- > 0;) {
      c.strides[i] = stride;
      stride *= capture.shape[i];
    }
    call.captures.push_back(std::move(c));
  }
  auto launch = [&]() {
    return launchCudaForward(kernel, functions.value(), call, nullptr);
  };
  auto started = std::chrono::steady_clock::now();
  if (rt::Status st = launch(); st.failed())
    return fail(st.getMessage());
  if (rt::Status st = device.value().synchronize(); st.failed())
    return fail(st.getMessage());
  auto ran = std::chrono::steady_clock::now(), gradRan = ran;
  if (!download(oBuf, out) || (op.getLse() && !download(lseBuf, lse)))
    return false;

  // The backward on the forward's O and lse, still on the device. Its
  // outputs start as NaN (from the host) so that anything unwritten shows.
  rt::DeviceBuffer doBuf, dqBuf, dkBuf, dvBuf, dbiasBuf, workspace;
  CudaBackwardCall gradCall;
  bool hasGradBias = backward && gradOp.getGradBias();
  if (backward) {
    if (!upload(inputs[3], doBuf) || !upload(dq, dqBuf) || !upload(dk, dkBuf) ||
        !upload(dv, dvBuf) || (hasGradBias && !upload(dbias, dbiasBuf)))
      return false;
    // The forward's call, and the backward's own tensors.
    static_cast<rt::KernelCall &>(gradCall) = call;
    gradCall.set(rt::AbiTensor::DO, doBuf.getPointer(),
                 {hq * nq * dvDim, nq * dvDim, dvDim});
    gradCall.set(rt::AbiTensor::DQ, dqBuf.getPointer(),
                 {hq * nq * d, nq * d, d});
    gradCall.set(rt::AbiTensor::DK, dkBuf.getPointer(),
                 {hkv * nk * d, nk * d, d});
    gradCall.set(rt::AbiTensor::DV, dvBuf.getPointer(),
                 {hkv * nk * dvDim, nk * dvDim, dvDim});
    if (hasGradBias) {
      rt::KernelCall::Tensor &t = gradCall[rt::AbiTensor::DBias];
      t.data = dbiasBuf.getPointer();
      int64_t stride = 1;
      for (int i = 3; i >= 0; --i) {
        t.strides[i] = stride;
        stride *= dbias.shape[i];
      }
    }
    // Our own workspace (Dsum, the dQ accumulator) keeps the launch
    // asynchronous (for --bench).
    rt::Expected<rt::DeviceBuffer> allocated = rt::DeviceBuffer::allocate(
        device.value(),
        std::max<uint64_t>(getCudaBackwardWorkspaceBytes(*gradCached, gradCall),
                           4));
    if (allocated.failed())
      return fail(allocated.getMessage());
    workspace = std::move(allocated.value());
    gradCall.workspace = workspace.getPointer();
  }
  auto launchGrad = [&]() {
    return launchCudaBackward(*gradCached, *gradFunctions, gradCall, nullptr);
  };
  auto gradStarted = ran;
  if (backward) {
    gradStarted = std::chrono::steady_clock::now();
    if (rt::Status st = launchGrad(); st.failed())
      return fail(st.getMessage());
    if (rt::Status st = device.value().synchronize(); st.failed())
      return fail(st.getMessage());
    gradRan = std::chrono::steady_clock::now();
    if (!download(dqBuf, dq) || !download(dkBuf, dk) || !download(dvBuf, dv) ||
        (hasGradBias && !download(dbiasBuf, dbias)))
      return false;
  }

  using Ms = std::chrono::duration<double, std::milli>;
  llvm::outs() << "fa-jit: ran "
               << (backward ? "fa.attention_grad" : "fa.attention") << " on "
               << chip << " (" << device.value().getName()
               << "): " << getDTypeName(dtype);
  for (int i = 0; i < kNumDims; ++i)
    llvm::outs() << " " << kDimNames[i] << "=" << dims[i];
  bool anyCompiled = compiledNow || gradCompiledNow;
  llvm::outs() << " variant="
               << describeVariant(op, dims, backward, hasGradBias)
               << llvm::formatv(" compile={0:f1}ms ({1})",
                                Ms(compiled - start).count(),
                                anyCompiled ? "compiled" : "cached");
  if (backward)
    llvm::outs() << llvm::formatv(" forward={0:f1}ms run={1:f1}ms\n",
                                  Ms(ran - started).count(),
                                  Ms(gradRan - gradStarted).count());
  else
    llvm::outs() << llvm::formatv(" run={0:f1}ms\n", Ms(ran - started).count());

  if (benchOpt) {
    rt::Expected<rt::Event> e0 = rt::Event::create(device.value());
    rt::Expected<rt::Event> e1 = rt::Event::create(device.value());
    if (e0.failed() || e1.failed())
      return fail("cannot create CUDA events");
    // The backward times its kernels (Dsum, dK/dV, dQ, dBias) together.
    auto timed = [&]() { return backward ? launchGrad() : launch(); };
    for (int i = 0; i < 5; ++i)
      if (rt::Status st = timed(); st.failed())
        return fail(st.getMessage());
    std::vector<float> times;
    for (int i = 0; i < std::max(1, benchItersOpt.getValue()); ++i) {
      if (e0.value().record().failed() || timed().failed() ||
          e1.value().record().failed() || e1.value().synchronize().failed())
        return fail("timing the kernel failed");
      rt::Expected<float> ms = rt::Event::elapsedMs(e0.value(), e1.value());
      if (ms.failed())
        return fail(ms.getMessage());
      times.push_back(ms.value());
    }
    std::sort(times.begin(), times.end());
    double median = times[times.size() / 2];
    // Two products per score: Q K^T over D and P V over Dv; the backward
    // recomputes S and has dP (Dv), dV (Dv), dK and dQ (D).
    double flops = 2.0 * b * hq * double(nq) * double(nk) *
                   (backward ? 3 * d + 2 * dvDim : d + dvDim);
    if (op.getCausalAttr())
      flops /= 2;
    llvm::outs() << llvm::formatv("bench: median_ms={0:f4} tflops={1:f1}\n",
                                  median, flops / (median * 1e9));
  }
  return true;
}

bool Driver::writeOutputs() {
  std::string error;
  if (!outputOpt.empty() && !writeNpy(outputOpt, out, error))
    return fail(error);
  if (!lseOutputOpt.empty() && !writeNpy(lseOutputOpt, lse, error))
    return fail(error);
  if (!gradOutputsOpt.empty()) {
    llvm::SmallVector<llvm::StringRef> paths;
    llvm::StringRef(gradOutputsOpt).split(paths, ',');
    const NpyArray *grads[4] = {&dq, &dk, &dv, &dbias};
    for (auto [path, array] : llvm::zip(paths, grads))
      if (!writeNpy(path.str(), *array, error))
        return fail(error);
  }
  return true;
}

bool Driver::check() {
  // The reference on the same inputs, as rounded to their dtypes.
  std::vector<double> q = toDoubles(inputs[0]), k = toDoubles(inputs[1]),
                      v = toDoubles(inputs[2]), biasValues, slopeValues;
  AttentionOptions options;
  if (auto scale = op.getScaleAttr())
    options.scale = scale.getValueAsDouble();
  if (auto softcap = op.getSoftcapAttr())
    options.softcap = softcap.getValueAsDouble();
  if (op.getBias()) {
    biasValues = toDoubles(bias);
    options.bias = {biasValues.data(), bias.shape};
  }
  if (op.getAlibiSlopes()) {
    slopeValues = toDoubles(slopes);
    options.alibiSlopes = {slopeValues.data(), slopes.shape};
  }
  if (auto causal = op.getCausalAttr())
    options.causal = causal.getValue() == CausalKind::TopLeft
                         ? CausalMask::TopLeft
                         : CausalMask::BottomRight;
  if (auto window = op.getWindowAttr())
    options.window = SlidingWindow{window[0], window[1]};
  // The reference draws the kernel's Philox stream from the same seed.
  if (auto dropout = op.getDropoutPAttr()) {
    options.dropoutP = dropout.getValueAsDouble();
    options.dropoutSeed = seedOpt;
  }
  std::vector<std::vector<double>> captureValues;
  llvm::SmallVector<RegionCapture> captureViews;
  for (const NpyArray &capture : captures)
    captureValues.push_back(toDoubles(capture));
  for (auto [capture, values] : llvm::zip(captures, captureValues))
    captureViews.push_back(
        {values.data(), llvm::SmallVector<int64_t, 4>(capture.shape.begin(),
                                                      capture.shape.end())});
  if (!buildRegionCallbacks(op, captureViews, options))
    return false;
  options.numThreads = 0;
  // The same definition computed as a plain kernel would in the inputs'
  // precision: how far from float64 a correct kernel may be.
  AttentionOptions lowOptions = options;
  lowOptions.precision = precisionOf(dtype);
  bool passed = true;
  auto compare = [&](llvm::StringRef name, const NpyArray &got,
                     const std::vector<double> &ref,
                     const std::vector<double> &low, int64_t rowLength,
                     ErrorScale scale = ErrorScale::Relative) {
    std::vector<double> values = toDoubles(got);
    AccuracyCheck c = checkAccuracy(values.data(), ref.data(), low.data(),
                                    ref.size(), rowLength, scale, toleranceOpt);
    llvm::outs() << name
                 << llvm::format(
                        " rel_err=%.3e row_err=%.3e lowp_row_err=%.3e "
                        "bound=%.3e %s\n",
                        relativeError(values.data(), ref.data(), ref.size()),
                        c.error, c.baseline, c.bound, c.passed ? "ok" : "FAIL");
    if (!c.passed)
      fail("--check failed: " + name + " row " + std::to_string(c.worstRow) +
           ": row_err " + formatDouble("%.3e", c.error) + " > bound " +
           formatDouble("%.3e", c.bound));
    passed &= c.passed;
  };
  std::string error;
  if (backward) {
    std::vector<double> dOut = toDoubles(inputs[3]);
    bool hasGradBias = static_cast<bool>(gradOp.getGradBias());
    std::vector<double> grads[2][4]; // [exact, low][dQ, dK, dV, dBias]
    for (int low = 0; low < 2; ++low)
      if (!attentionGradReference(
              {q.data(), inputs[0].shape}, {k.data(), inputs[1].shape},
              {v.data(), inputs[2].shape}, {dOut.data(), inputs[3].shape},
              low ? lowOptions : options, grads[low][0], grads[low][1],
              grads[low][2], error, hasGradBias ? &grads[low][3] : nullptr))
        return fail("--check: the reference failed: " + error);
    compare("dQ", dq, grads[0][0], grads[1][0], inputs[0].shape[3]);
    compare("dK", dk, grads[0][1], grads[1][1], inputs[1].shape[3]);
    compare("dV", dv, grads[0][2], grads[1][2], inputs[2].shape[3]);
    if (hasGradBias)
      compare("dBias", dbias, grads[0][3], grads[1][3], bias.shape.back());
    return passed;
  }
  std::vector<double> refOut, refLse, lowOut, lowLse;
  for (int low = 0; low < 2; ++low)
    if (!attentionReference(
            {q.data(), inputs[0].shape}, {k.data(), inputs[1].shape},
            {v.data(), inputs[2].shape}, low ? lowOptions : options,
            low ? lowOut : refOut, low ? lowLse : refLse, error))
      return fail("--check: the reference failed: " + error);
  compare("O", out, refOut, lowOut, inputs[2].shape[3]);
  // lse is checked whenever O is: it is what catches a wrong scale or a
  // missing key best. The kernel computes it when the op does not return it.
  if (!lse.shape.empty())
    compare("lse", lse, refLse, lowLse, 1, ErrorScale::Absolute);
  return passed;
}

int runFaJit() {
  Driver driver;
  if (!driver.parseFlags() || !driver.parseSource() || !driver.readInputs() ||
      !driver.loadOp())
    return 1;
  if (!emitOpt.empty())
    return driver.emit() ? 0 : 1;
  if (!driver.resolveDims() || !driver.prepareData() ||
      !driver.compileAndRun() || !driver.writeOutputs())
    return 1;
  return !checkOpt || driver.check() ? 0 : 1;
}

} // namespace

int main(int argc, char **argv) {
  llvm::InitLLVM initLLVM(argc, argv);
  cl::HideUnrelatedOptions(faCategory);
  cl::ParseCommandLineOptions(
      argc, argv,
      "fa-jit: compile one fa.attention or fa.attention_grad for the host, "
      "run it and check it\n\n"
      "The op comes from FILE.mlir (one fa.attention or fa.attention_grad in "
      "any function; --shape gives its dynamic sizes) or, without a file, "
      "from the variant flags (B, Nq and Nk dynamic; heads and head dims "
      "static; --backward for its gradient).\n\n"
      "  fa-jit FILE.mlir [--shape=...] [--inputs=...] [--check]\n"
      "  fa-jit --shape=B,Hq,Hkv,Nq,Nk,D[,Dv] --dtype=bf16 --causal=... "
      "[--backward] [--check]\n");
  return runFaJit();
}
