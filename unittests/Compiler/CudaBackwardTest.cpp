//===- CudaBackwardTest.cpp - The GPU backward against the reference ------===//
//
// Compiles an fa.attention and its fa.attention_grad with CudaJit, runs the
// forward (for O and lse) then the backward on random inputs on the GPU, and
// compares dQ, dK, dV with FASupport's float64 attentionGradReference, which
// recomputes everything from Q, K, V and dO alone. Skips without a GPU (and
// fails instead when FA_REQUIRE_GPU=1, as scripts/gpu/run.sh sets it).
//
// Bounds on ||out - ref|| / ||ref||: bf16 1e-2, f16 2e-3. Q, K, V and dO are
// exact in both (the reference reads the rounded values); the errors are the
// kernels' roundings to the element type of O (which Dsum reads), of P for
// dV += P^T dO, of dS for dK and dQ, and of the outputs, each a relative
// 2^-9 (bf16) or 2^-12 (f16) per element at most (about 0.6 of that RMS),
// plus ex2.approx and tanh.approx (softcap, 2^-11 relative). Independent
// roundings add in quadrature over the sums: measured on H100 (sm_90a and
// sm_80 PTX) at most 3.0e-3 (bf16) and 3.4e-4 (f16) over these cases. The
// bounds leave 3-6x of room for other seeds and shapes, while a wrong tile,
// mask, row or scale gives errors of order 1.
//
//===----------------------------------------------------------------------===//

#include "Accuracy.h"
#include "GpuTest.h"

#include "fa/Compiler/CudaJit.h"
#include "fa/Compiler/Registration.h"
#include "fa/Runtime/Cuda.h"
#include "fa/Runtime/KernelCache.h"
#include "fa/Support/Npy.h"
#include "fa/Support/Reference.h"
#include "mlir/IR/BuiltinOps.h"
#include "mlir/IR/DialectRegistry.h"
#include "mlir/IR/MLIRContext.h"
#include "mlir/Parser/Parser.h"

#include "gtest/gtest.h"

#include <array>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <optional>
#include <random>

namespace rt = fa::runtime;
using fa::support::CausalMask;

namespace {

/// One variant and shape: f16 or bf16, D = Dv, [B, Hq|Hkv, Nq|Nk, D].
struct Case {
  Case(const char *name, bool bf16, int64_t d,
       std::array<int64_t, 5> shape /* B, Hq, Hkv, Nq, Nk */)
      : name(name), bf16(bf16), d(d), b(shape[0]), hq(shape[1]), hkv(shape[2]),
        nq(shape[3]), nk(shape[4]) {}
  Case &withCausal(CausalMask kind) {
    causal = kind;
    return *this;
  }
  Case &withWindow(int64_t left, int64_t right) {
    window = {left, right};
    return *this;
  }
  Case &withSoftcap(double cap) {
    softcap = cap;
    return *this;
  }
  /// Compile for sm_80 (PTX the driver JITs for any later GPU) instead of
  /// the device's own chip.
  Case &forSm80() {
    sm80 = true;
    return *this;
  }
  /// Pass a (poisoned) workspace instead of letting the launcher allocate
  /// one, and check that a second run gives the same bits of dK, dV, dBias
  /// and, without atomicDQ, dQ.
  Case &withWorkspace() {
    ownWorkspace = true;
    return *this;
  }
  /// Dropout of probability `p` (the forward's and the backward's Philox
  /// stream, seed 4242).
  Case &withDropout(double p) {
    dropout = p;
    return *this;
  }
  /// dQ added by the dK/dV kernel (bwd-atomic-dq) instead of its own
  /// kernel.
  Case &atomicDQ() {
    atomic = true;
    return *this;
  }
  /// The dK/dV kernel's warps (bwd-dkdv-warps: 4 or 8; 0 the default).
  Case &withDkDvWarps(int64_t warps) {
    dkdvWarps = warps;
    return *this;
  }
  /// dQ by the dq kernel where atomic dQ is the default
  /// (bwd-deterministic).
  Case &deterministicDQ() {
    deterministic = true;
    return *this;
  }
  /// Whether dQ is atomic: asked for, or by default where the dK/dV kernel
  /// is the wgmma one (sm_90a, plain path, D = 64 or 128, 8 warps).
  bool atomicDQEffective() const {
    if (atomic || deterministic)
      return atomic;
    return wgmma && !sm80 && (d == 64 || d == 128) && !scored() && !softcap &&
           (dkdvWarps == 0 || dkdvWarps == 8);
  }
  /// The dK/dV kernel multiplies with mma.sync where it would use wgmma
  /// (bwd-wgmma=false).
  Case &withMmaSync() {
    wgmma = false;
    return *this;
  }
  /// An additive bias of this shape (each dim 1 or the full size) and
  /// element type, and its gradient when `grad`.
  enum class BiasType { F32, F16, BF16 };
  Case &withBias(std::array<int64_t, 4> shape, BiasType type, bool grad) {
    biasShape = shape;
    biasType = type;
    dbias = grad;
    return *this;
  }
  /// ALiBi slopes [Hq] or, `perBatch`, [B, Hq].
  Case &withAlibi(bool perBatch) {
    alibi = perBatch ? 2 : 1;
    return *this;
  }
  /// score_mod: a tanh cap of 20 plus a relative position term,
  /// 20 tanh(s / 20) + (j - i) / 100.
  Case &withScoreMod() {
    scoreMod = true;
    return *this;
  }
  /// mask_mod: documents of 40 rows, i / 40 == j / 40 (rows without keys
  /// of their document are fully masked).
  Case &withMaskMod() {
    maskMod = true;
    return *this;
  }

  const char *name;
  bool bf16;
  int64_t d, b, hq, hkv, nq, nk;
  CausalMask causal = CausalMask::None;
  std::optional<std::pair<int64_t, int64_t>> window;
  std::optional<double> softcap;
  bool sm80 = false;
  bool ownWorkspace = false;
  bool atomic = false;
  bool deterministic = false;
  int64_t dkdvWarps = 0;
  bool wgmma = true;
  std::optional<std::array<int64_t, 4>> biasShape;
  BiasType biasType = BiasType::F32;
  bool dbias = false;
  int alibi = 0;
  bool scoreMod = false, maskMod = false;
  std::optional<double> dropout;
  static constexpr int64_t kSeed = 4242;
  bool scored() const {
    return biasShape || alibi || scoreMod || maskMod || dropout;
  }

  friend std::ostream &operator<<(std::ostream &os, const Case &c) {
    return os << c.name;
  }
};

/// A tensor on the host in f16/bf16 bits, with the rounded values in double
/// for the reference.
struct HostTensor {
  bool bf16;
  std::vector<int64_t> shape;
  std::vector<uint16_t> bits;
  std::vector<double> values;

  HostTensor(bool bf16, std::vector<int64_t> shape)
      : bf16(bf16), shape(std::move(shape)) {
    size_t n = 1;
    for (int64_t s : this->shape)
      n *= size_t(s);
    bits.resize(n);
    values.resize(n);
  }
  void randomize(std::mt19937 &rng) {
    std::normal_distribution<double> normal(0.0, 1.0);
    for (size_t i = 0; i < bits.size(); ++i) {
      float x = float(normal(rng));
      bits[i] =
          bf16 ? fa::support::floatToBFloat16(x) : fa::support::floatToHalf(x);
      values[i] = toDouble(bits[i]);
    }
  }
  double toDouble(uint16_t b) const {
    return bf16 ? fa::support::bfloat16ToFloat(b) : fa::support::halfToFloat(b);
  }
  fa::support::TensorRef ref() const { return {values.data(), shape}; }
  size_t bytes() const { return bits.size() * 2; }
};

/// Element strides (batch, head, row) of a contiguous [B, H, N, D] tensor.
void contiguous(const std::vector<int64_t> &shape, int64_t *strides) {
  strides[2] = shape[3];
  strides[1] = shape[2] * shape[3];
  strides[0] = shape[1] * shape[2] * shape[3];
}

/// The variant as fa op attributes, e.g. {causal = #fa.causal<top_left>}.
std::string attributes(const Case &c) {
  std::vector<std::string> parts;
  if (c.causal == CausalMask::TopLeft)
    parts.push_back("causal = #fa.causal<top_left>");
  if (c.causal == CausalMask::BottomRight)
    parts.push_back("causal = #fa.causal<bottom_right>");
  if (c.window)
    parts.push_back("window = array<i64: " + std::to_string(c.window->first) +
                    ", " + std::to_string(c.window->second) + ">");
  if (c.softcap)
    parts.push_back("softcap = " + std::to_string(*c.softcap) + " : f32");
  if (c.dropout)
    parts.push_back("dropout_p = " + std::to_string(*c.dropout) + " : f32");
  std::string text;
  for (const std::string &p : parts)
    text += (text.empty() ? "" : ", ") + p;
  return text.empty() ? "" : "{" + text + "}";
}

/// The bias's MLIR type, e.g. tensor<1x4x?x?xbf16> (broadcast dims static).
std::string biasTypeText(const Case &c) {
  std::string text = "tensor<";
  for (int i = 0; i < 4; ++i)
    text +=
        ((*c.biasShape)[i] == 1 ? std::string("1") : std::string("?")) + "x";
  const char *et[] = {"f32", "f16", "bf16"};
  return text + et[int(c.biasType)] + ">";
}

/// The variant's regions (after the op's types).
std::string regionsText(const Case &c) {
  std::string text;
  if (c.scoreMod)
    text += " score_mod {\n"
            "  ^bb0(%x: f32, %b: index, %h: index, %i: index, %j: index):\n"
            "    %c = arith.constant 20.0 : f32\n"
            "    %y = arith.divf %x, %c : f32\n"
            "    %t = math.tanh %y : f32\n"
            "    %z = arith.mulf %t, %c : f32\n"
            "    %d = arith.subi %j, %i : index\n"
            "    %di = arith.index_cast %d : index to i64\n"
            "    %df = arith.sitofp %di : i64 to f32\n"
            "    %w = arith.constant 0.01 : f32\n"
            "    %rp = arith.mulf %df, %w : f32\n"
            "    %r = arith.addf %z, %rp : f32\n"
            "    fa.yield %r : f32\n  }";
  if (c.maskMod)
    text += " mask_mod {\n"
            "  ^bb0(%b: index, %h: index, %i: index, %j: index):\n"
            "    %c = arith.constant 40 : index\n"
            "    %di = arith.divui %i, %c : index\n"
            "    %dj = arith.divui %j, %c : index\n"
            "    %same = arith.cmpi eq, %di, %dj : index\n"
            "    fa.yield %same : i1\n  }";
  return text;
}

/// fa.attention and fa.attention_grad of the variant, in one function.
std::string moduleText(const Case &c) {
  std::string et = c.bf16 ? "bf16" : "f16";
  auto type = [&](int64_t h) {
    return "tensor<?x" + std::to_string(h) + "x?x" + std::to_string(c.d) + "x" +
           et + ">";
  };
  std::string q = type(c.hq), kv = type(c.hkv),
              lse = "tensor<?x" + std::to_string(c.hq) + "x?xf32>";
  std::string attrs = attributes(c);
  std::string args, operands, dbias, dbiasName;
  if (c.biasShape) {
    args += ", %bias: " + biasTypeText(c);
    operands += " bias(%bias : " + biasTypeText(c) + ")";
    if (c.dbias) {
      dbias = ", " + biasTypeText(c);
      dbiasName = ", %db";
    }
  }
  if (c.alibi) {
    std::string t = c.alibi == 1 ? "tensor<" + std::to_string(c.hq) + "xf32>"
                                 : "tensor<?x" + std::to_string(c.hq) + "xf32>";
    args += ", %slopes: " + t;
    operands += " alibi_slopes(%slopes : " + t + ")";
  }
  if (c.dropout) {
    args += ", %seed: i64";
    operands += " dropout_seed(%seed)";
  }
  std::string regions = regionsText(c);
  return "func.func @f(%q: " + q + ", %k: " + kv + ", %v: " + kv +
         ", %do: " + q + args + ") -> (" + q + ", " + kv + ", " + kv + dbias +
         ") {\n" + "  %o, %lse = fa.attention %q, %k, %v" + operands + " " +
         attrs + " : " + q + ", " + kv + ", " + kv + " -> " + q + ", " + lse +
         regions + "\n" + "  %dq, %dk, %dv" + dbiasName +
         " = fa.attention_grad %q, %k, %v, %o, %do, %lse" + operands + " " +
         attrs + " : " + q + ", " + kv + ", " + kv + ", " + q + ", " + q +
         ", " + lse + " -> " + q + ", " + kv + ", " + kv + dbias + regions +
         "\n" + "  return %dq, %dk, %dv" + dbiasName + " : " + q + ", " + kv +
         ", " + kv + dbias + "\n}\n";
}

/// The forward and backward kernels of `c` for `chip`, from the kernel cache
/// (compiled on a miss).
struct Compiled {
  std::shared_ptr<const rt::CachedKernel> forward, backward;
};
Compiled compile(const Case &c, const std::string &chip) {
  mlir::DialectRegistry registry;
  mlir::fa::registerDialects(registry);
  mlir::MLIRContext context(registry);
  mlir::OwningOpRef<mlir::ModuleOp> module =
      mlir::parseSourceString<mlir::ModuleOp>(moduleText(c), &context);
  EXPECT_TRUE(module) << moduleText(c);
  if (!module)
    return {};
  mlir::fa::AttentionOp forwardOp;
  mlir::fa::AttentionGradOp gradOp;
  module->walk([&](mlir::fa::AttentionOp op) { forwardOp = op; });
  module->walk([&](mlir::fa::AttentionGradOp op) { gradOp = op; });
  bool compiled = false;
  std::string error;
  Compiled result;
  result.forward =
      mlir::fa::getOrCompileCudaKernel(forwardOp, chip, compiled, error);
  EXPECT_TRUE(result.forward) << error;
  result.backward = mlir::fa::getOrCompileCudaBackward(
      gradOp, chip, compiled, error,
      {/*prefetch=*/true, c.atomic, c.dkdvWarps, c.wgmma, c.deterministic});
  EXPECT_TRUE(result.backward) << error;
  return result;
}

class CudaBackwardTest : public ::testing::TestWithParam<Case> {
protected:
  void SetUp() override {
    rt::Driver &driver = rt::Driver::get();
    if (!driver.available())
      FA_GPU_UNAVAILABLE(driver.unavailableReason());
    rt::Expected<rt::Device> found = rt::Device::get(0);
    ASSERT_TRUE(found.ok()) << found.getMessage();
    device.emplace(found.take());
  }

  /// A device copy of `host`.
  rt::DeviceBuffer upload(const void *host, size_t bytes) {
    rt::Expected<rt::DeviceBuffer> buffer =
        rt::DeviceBuffer::allocate(*device, bytes);
    buffer.getStatus().check();
    buffer->copyFromHost(host, bytes).check();
    return buffer.take();
  }
  /// Device memory filled with 0xff (NaN in f16, bf16 and f32), so that an
  /// element a kernel does not write shows as an error.
  rt::DeviceBuffer poisoned(size_t bytes) {
    rt::Expected<rt::DeviceBuffer> buffer =
        rt::DeviceBuffer::allocate(*device, bytes);
    buffer.getStatus().check();
    buffer->fill(0xff).check();
    return buffer.take();
  }

  std::optional<rt::Device> device;
};

TEST_P(CudaBackwardTest, MatchesReference) {
  const Case &c = GetParam();
  std::string chip = c.sm80 ? "sm_80" : device->getChip();

  Compiled kernels = compile(c, chip);
  ASSERT_TRUE(kernels.forward && kernels.backward);
  const rt::CachedKernel *forward = kernels.forward.get(),
                         *backward = kernels.backward.get();

  rt::Expected<rt::Module> forwardModule =
      rt::Module::load(*device, forward->image);
  ASSERT_TRUE(forwardModule.ok()) << forwardModule.getMessage();
  rt::Expected<mlir::fa::CudaFunctions> forwardFns =
      mlir::fa::loadCudaFunctions(*forward, *forwardModule);
  ASSERT_TRUE(forwardFns.ok()) << forwardFns.getMessage();
  rt::Expected<rt::Module> backwardModule =
      rt::Module::load(*device, backward->image);
  ASSERT_TRUE(backwardModule.ok()) << backwardModule.getMessage();
  rt::Expected<mlir::fa::CudaFunctions> backwardFns =
      mlir::fa::loadCudaFunctions(*backward, *backwardModule);
  ASSERT_TRUE(backwardFns.ok()) << backwardFns.getMessage();

  // Random inputs, device buffers; outputs poisoned.
  std::mt19937 rng(1234);
  HostTensor q(c.bf16, {c.b, c.hq, c.nq, c.d}),
      k(c.bf16, {c.b, c.hkv, c.nk, c.d}), v(c.bf16, {c.b, c.hkv, c.nk, c.d}),
      dO(c.bf16, {c.b, c.hq, c.nq, c.d});
  q.randomize(rng);
  k.randomize(rng);
  v.randomize(rng);
  dO.randomize(rng);
  // The bias (f32 or rounded to f16/bf16; bytes for the device, values for
  // the reference), its gradient (poisoned) and the ALiBi slopes.
  std::vector<int64_t> biasShape;
  std::vector<uint8_t> biasBytes;
  std::vector<double> biasValues;
  size_t biasElementBytes = c.biasType == Case::BiasType::F32 ? 4 : 2;
  if (c.biasShape) {
    int64_t full[4] = {c.b, c.hq, c.nq, c.nk};
    for (int i = 0; i < 4; ++i)
      biasShape.push_back((*c.biasShape)[i] == 1 ? 1 : full[i]);
    size_t n =
        size_t(biasShape[0] * biasShape[1] * biasShape[2] * biasShape[3]);
    biasBytes.resize(n * biasElementBytes);
    biasValues.resize(n);
    std::normal_distribution<double> normal(0.0, 1.0);
    for (size_t i = 0; i < n; ++i) {
      float x = float(normal(rng));
      if (c.biasType == Case::BiasType::F32) {
        std::memcpy(&biasBytes[4 * i], &x, 4);
        biasValues[i] = x;
        continue;
      }
      bool bf16 = c.biasType == Case::BiasType::BF16;
      uint16_t bits =
          bf16 ? fa::support::floatToBFloat16(x) : fa::support::floatToHalf(x);
      std::memcpy(&biasBytes[2 * i], &bits, 2);
      biasValues[i] = bf16 ? fa::support::bfloat16ToFloat(bits)
                           : fa::support::halfToFloat(bits);
    }
  }
  std::vector<int64_t> slopesShape;
  std::vector<float> slopes;
  std::vector<double> slopesValues;
  if (c.alibi) {
    slopesShape = c.alibi == 1 ? std::vector<int64_t>{c.hq}
                               : std::vector<int64_t>{c.b, c.hq};
    for (int64_t bi = 0; bi < (c.alibi == 1 ? 1 : c.b); ++bi)
      for (int64_t h = 0; h < c.hq; ++h) {
        slopes.push_back(float(std::exp2(-8.0 * double(h + 1) / double(c.hq)) *
                               (1.0 + 0.25 * double(bi))));
        slopesValues.push_back(slopes.back());
      }
  }
  fa::support::AttentionOptions options;
  options.causal = c.causal;
  if (c.window)
    options.window =
        fa::support::SlidingWindow{c.window->first, c.window->second};
  options.softcap = c.softcap;
  options.numThreads = 0;
  if (c.biasShape)
    options.bias = {biasValues.data(), biasShape};
  if (c.alibi)
    options.alibiSlopes = {slopesValues.data(), slopesShape};
  if (c.dropout) {
    options.dropoutP = *c.dropout;
    options.dropoutSeed = Case::kSeed;
  }
  if (c.scoreMod)
    options.scoreMod = [](double s, int64_t, int64_t, int64_t i, int64_t j) {
      return 20.0 * std::tanh(s / 20.0) + double(float(0.01)) * double(j - i);
    };
  if (c.maskMod)
    options.maskMod = [](int64_t, int64_t, int64_t i, int64_t j) {
      return i / 40 == j / 40;
    };
  const fa::support::Precision precision =
      c.bf16 ? fa::support::Precision::BF16 : fa::support::Precision::F16;
  size_t lseBytes = size_t(c.b * c.hq * c.nq) * 4;
  rt::DeviceBuffer qBuf = upload(q.bits.data(), q.bytes()),
                   kBuf = upload(k.bits.data(), k.bytes()),
                   vBuf = upload(v.bits.data(), v.bytes()),
                   dOBuf = upload(dO.bits.data(), dO.bytes()),
                   oBuf = poisoned(q.bytes()), lseBuf = poisoned(lseBytes),
                   dqBuf = poisoned(q.bytes()), dkBuf = poisoned(k.bytes()),
                   dvBuf = poisoned(v.bytes());
  double scale = 1.0 / std::sqrt(double(c.d));
  rt::DeviceBuffer biasBuf, dbiasBuf, slopesBuf;
  int64_t biasStrides[4] = {}, dbiasStrides[4] = {};
  if (c.biasShape) {
    biasBuf = upload(biasBytes.data(), biasBytes.size());
    int64_t stride = 1;
    for (int i = 3; i >= 0; --i) {
      biasStrides[i] = biasShape[i] == 1 ? 0 : stride;
      dbiasStrides[i] = stride;
      stride *= biasShape[i];
    }
    if (c.dbias)
      dbiasBuf = poisoned(biasBytes.size());
  }
  if (c.alibi)
    slopesBuf = upload(slopes.data(), slopes.size() * 4);

  using rt::AbiTensor;
  rt::KernelCall fwd;
  const HostTensor *fwdTensors[4] = {&q, &k, &v, &q};
  const AbiTensor fwdNames[4] = {AbiTensor::Q, AbiTensor::K, AbiTensor::V,
                                 AbiTensor::O};
  rt::DeviceBuffer *fwdBufs[4] = {&qBuf, &kBuf, &vBuf, &oBuf};
  for (int i = 0; i < 4; ++i) {
    fwd[fwdNames[i]].data = fwdBufs[i]->getPointer();
    contiguous(fwdTensors[i]->shape, fwd[fwdNames[i]].strides);
  }
  fwd.set(AbiTensor::Lse, lseBuf.getPointer(), {c.hq * c.nq, c.nq});
  fwd.batch = c.b;
  fwd.headsQ = c.hq;
  fwd.headsKV = c.hkv;
  fwd.seqQ = c.nq;
  fwd.seqKV = c.nk;
  fwd.scaleLog2 = float(scale * M_LOG2E);
  fwd.scale = float(scale);
  if (c.biasShape) {
    fwd[AbiTensor::Bias].data = biasBuf.getPointer();
    std::copy(biasStrides, biasStrides + 4, fwd[AbiTensor::Bias].strides);
  }
  if (c.alibi)
    fwd.set(AbiTensor::Slopes, slopesBuf.getPointer(),
            {c.alibi == 2 ? c.hq : 0});
  if (c.dropout)
    fwd.seed = Case::kSeed;
  rt::Status status =
      mlir::fa::launchCudaForward(*forward, *forwardFns, fwd, nullptr);
  ASSERT_TRUE(status.ok()) << status.getMessage();
  if (std::getenv("FA_BWD_LOWP_INPUTS")) {
    // Diagnosis: the backward from the low-precision reference's O and lse.
    fa::support::AttentionOptions o = options;
    o.precision = precision;
    std::vector<double> out, lse;
    std::string error;
    ASSERT_TRUE(fa::support::attentionReference(q.ref(), k.ref(), v.ref(), o,
                                                out, lse, error))
        << error;
    std::vector<uint16_t> outBits(out.size());
    for (size_t i = 0; i < out.size(); ++i)
      outBits[i] = c.bf16 ? fa::support::floatToBFloat16(float(out[i]))
                          : fa::support::floatToHalf(float(out[i]));
    std::vector<float> lseF(lse.begin(), lse.end());
    oBuf.copyFromHost(outBits.data(), outBits.size() * 2).check();
    lseBuf.copyFromHost(lseF.data(), lseF.size() * 4).check();
  }

  // The forward's values, and the backward's own tensors.
  mlir::fa::CudaBackwardCall bwd;
  static_cast<rt::KernelCall &>(bwd) = fwd;
  bwd[AbiTensor::DO].data = dOBuf.getPointer();
  contiguous(dO.shape, bwd[AbiTensor::DO].strides);
  const HostTensor *gradTensors[3] = {&q, &k, &v};
  const AbiTensor gradNames[3] = {AbiTensor::DQ, AbiTensor::DK, AbiTensor::DV};
  rt::DeviceBuffer *gradBufs[3] = {&dqBuf, &dkBuf, &dvBuf};
  for (int i = 0; i < 3; ++i) {
    bwd[gradNames[i]].data = gradBufs[i]->getPointer();
    contiguous(gradTensors[i]->shape, bwd[gradNames[i]].strides);
  }
  if (c.dbias) {
    bwd[AbiTensor::DBias].data = dbiasBuf.getPointer();
    std::copy(dbiasStrides, dbiasStrides + 4, bwd[AbiTensor::DBias].strides);
  }
  rt::DeviceBuffer workspace;
  if (c.ownWorkspace) {
    workspace =
        poisoned(mlir::fa::getCudaBackwardWorkspaceBytes(*backward, bwd));
    bwd.workspace = workspace.getPointer();
  }
  status = mlir::fa::launchCudaBackward(*backward, *backwardFns, bwd, nullptr);
  ASSERT_TRUE(status.ok()) << status.getMessage();
  status = device->synchronize();
  ASSERT_TRUE(status.ok()) << status.getMessage();

  auto read = [&](const rt::DeviceBuffer &buf, const HostTensor &like) {
    std::vector<uint16_t> bits(like.bits.size());
    buf.copyToHost(bits.data(), bits.size() * 2).check();
    std::vector<double> out(bits.size());
    for (size_t i = 0; i < bits.size(); ++i)
      out[i] = like.toDouble(bits[i]);
    return std::make_pair(bits, out);
  };
  auto [dqBits, dq] = read(dqBuf, q);
  auto [dkBits, dk] = read(dkBuf, k);
  auto [dvBits, dv] = read(dvBuf, v);
  // dBias in the bias's element type.
  auto readBias = [&]() {
    std::vector<uint8_t> bytes(biasBytes.size());
    dbiasBuf.copyToHost(bytes.data(), bytes.size()).check();
    std::vector<double> out(biasValues.size());
    for (size_t i = 0; i < out.size(); ++i) {
      if (c.biasType == Case::BiasType::F32) {
        float x;
        std::memcpy(&x, &bytes[4 * i], 4);
        out[i] = x;
        continue;
      }
      uint16_t bits;
      std::memcpy(&bits, &bytes[2 * i], 2);
      out[i] = c.biasType == Case::BiasType::BF16
                   ? fa::support::bfloat16ToFloat(bits)
                   : fa::support::halfToFloat(bits);
    }
    return std::make_pair(bytes, out);
  };
  std::vector<uint8_t> dbiasBytes;
  std::vector<double> dbias;
  if (c.dbias)
    std::tie(dbiasBytes, dbias) = readBias();

  // A second run gives the same bits of dK, dV and dBias (no atomics), and
  // of dQ without atomic dQ (whose adds happen in any order).
  if (c.ownWorkspace) {
    dqBuf.fill(0xff).check();
    dkBuf.fill(0xff).check();
    dvBuf.fill(0xff).check();
    status =
        mlir::fa::launchCudaBackward(*backward, *backwardFns, bwd, nullptr);
    ASSERT_TRUE(status.ok()) << status.getMessage();
    ASSERT_TRUE(device->synchronize().ok());
    if (!c.atomicDQEffective()) {
      EXPECT_EQ(read(dqBuf, q).first, dqBits) << "dQ differs between runs";
    }
    EXPECT_EQ(read(dkBuf, k).first, dkBits) << "dK differs between runs";
    EXPECT_EQ(read(dvBuf, v).first, dvBits) << "dV differs between runs";
    if (c.dbias) {
      dbiasBuf.fill(0xff).check();
      ASSERT_TRUE(
          mlir::fa::launchCudaBackward(*backward, *backwardFns, bwd, nullptr)
              .ok());
      ASSERT_TRUE(device->synchronize().ok());
      EXPECT_EQ(readBias().first, dbiasBytes) << "dBias differs between runs";
    }
  }

  options.biasPrecision =
      c.biasType == Case::BiasType::F32    ? fa::support::Precision::F32
      : c.biasType == Case::BiasType::BF16 ? fa::support::Precision::BF16
                                           : fa::support::Precision::F16;
  ::testing::AssertionResult accurate = fa::testing::backwardIsAccurate(
      q.ref(), k.ref(), v.ref(), dO.ref(), options, precision, dq, dk, dv);
  std::printf("[ backward ] %-28s %-6s %s\n", c.name, chip.c_str(),
              accurate.message());
  EXPECT_TRUE(accurate);
  if (c.dbias) {
    // dBias against both references, each error relative to the sums of |dS|
    // over the broadcast dims rather than to dBias itself: where the bias
    // broadcasts over keys, softmax's shift invariance makes sum_j dS_ij =
    // D_i - D_i = 0 exactly, so the exact dBias is rounding noise (~1e-17)
    // and any error relative to it is meaningless. |dS| comes from the
    // reference run with the bias expanded to [B, Hq, Nq, Nk].
    std::string error;
    std::vector<double> refDbias[2], ignored[3];
    for (int low = 0; low < 2; ++low) {
      fa::support::AttentionOptions o = options;
      o.precision = low ? precision : fa::support::Precision::Exact;
      ASSERT_TRUE(fa::support::attentionGradReference(
          q.ref(), k.ref(), v.ref(), dO.ref(), o, ignored[0], ignored[1],
          ignored[2], error, &refDbias[low]))
          << error;
    }
    int64_t full[4] = {c.b, c.hq, c.nq, c.nk};
    std::vector<double> fullBias(size_t(c.b * c.hq * c.nq * c.nk));
    auto biasIndex = [](const int64_t *at, const int64_t *shape) {
      int64_t index = 0;
      for (int i = 0; i < 4; ++i)
        index = index * shape[i] + (shape[i] == 1 ? 0 : at[i]);
      return size_t(index);
    };
    auto forEach = [&](auto fn) {
      int64_t at[4];
      for (at[0] = 0; at[0] < c.b; ++at[0])
        for (at[1] = 0; at[1] < c.hq; ++at[1])
          for (at[2] = 0; at[2] < c.nq; ++at[2])
            for (at[3] = 0; at[3] < c.nk; ++at[3])
              fn(at);
    };
    forEach([&](const int64_t *at) {
      fullBias[biasIndex(at, full)] =
          biasValues[biasIndex(at, biasShape.data())];
    });
    fa::support::AttentionOptions fullOptions = options;
    fullOptions.bias = {fullBias.data(), {c.b, c.hq, c.nq, c.nk}};
    std::vector<double> refDs;
    ASSERT_TRUE(fa::support::attentionGradReference(
        q.ref(), k.ref(), v.ref(), dO.ref(), fullOptions, ignored[0],
        ignored[1], ignored[2], error, &refDs))
        << error;
    std::vector<double> absSum(refDbias[0].size(), 0.0);
    forEach([&](const int64_t *at) {
      absSum[biasIndex(at, biasShape.data())] +=
          std::fabs(refDs[biasIndex(at, full)]);
    });
    // The worst row (along the bias's last dim) of |x - exact| / |dS| sums.
    const size_t rowLength = size_t(biasShape.back());
    double scaleSq = 0;
    for (double x : absSum)
      scaleSq += x * x;
    const double scale =
        scaleSq == 0 ? 1.0
                     : std::sqrt(scaleSq / double(absSum.size() / rowLength));
    auto rowError = [&](const std::vector<double> &x) {
      double worst = 0;
      for (size_t r = 0; r < x.size() / rowLength; ++r) {
        double diffSq = 0;
        for (size_t e = r * rowLength; e < (r + 1) * rowLength; ++e)
          diffSq += (x[e] - refDbias[0][e]) * (x[e] - refDbias[0][e]);
        worst = std::max(worst, std::sqrt(diffSq) / scale);
      }
      return worst;
    };
    double errDb = rowError(dbias), lowDb = rowError(refDbias[1]);
    double dbBound = 2 * lowDb + fa::support::kAccuracyEpsilon;
    std::printf("[ backward ] %-28s %-6s dBias: row_err %.3e, low-precision "
                "reference %.3e, bound %.3e\n",
                c.name, chip.c_str(), errDb, lowDb, dbBound);
    EXPECT_LE(errDb, dbBound) << "dBias";
    for (double x : dbias)
      ASSERT_TRUE(std::isfinite(x)) << "dBias has a non-finite element";
  }
}

using CM = CausalMask;
constexpr bool kBF16 = true, kF16 = false;

/// Times the forward and the backward on larger shapes when
/// FA_BENCH_BACKWARD=1 (skipped otherwise): milliseconds and TFLOP/s, with
/// backward FLOPs = 2.5 x forward = 2.5 x 4 B H Nq Nk D (half when causal).
TEST_F(CudaBackwardTest, Throughput) {
  if (const char *bench = std::getenv("FA_BENCH_BACKWARD");
      !bench || std::string(bench) != "1")
    GTEST_SKIP() << "set FA_BENCH_BACKWARD=1 to time the backward";
  for (Case c : {Case("bf16_d128_causal", kBF16, 128, {2, 16, 16, 4096, 4096})
                     .withCausal(CM::BottomRight),
                 Case("bf16_d128", kBF16, 128, {2, 16, 16, 4096, 4096}),
                 Case("bf16_d64_causal", kBF16, 64, {2, 16, 16, 4096, 4096})
                     .withCausal(CM::BottomRight),
                 Case("f16_d64", kF16, 64, {2, 16, 16, 4096, 4096})}) {
    Compiled kernels = compile(c, device->getChip());
    ASSERT_TRUE(kernels.forward && kernels.backward);
    rt::Expected<rt::Module> fm =
        rt::Module::load(*device, kernels.forward->image);
    ASSERT_TRUE(fm.ok()) << fm.getMessage();
    rt::Expected<mlir::fa::CudaFunctions> ff =
        mlir::fa::loadCudaFunctions(*kernels.forward, *fm);
    ASSERT_TRUE(ff.ok()) << ff.getMessage();
    rt::Expected<rt::Module> bm =
        rt::Module::load(*device, kernels.backward->image);
    ASSERT_TRUE(bm.ok()) << bm.getMessage();
    rt::Expected<mlir::fa::CudaFunctions> bf =
        mlir::fa::loadCudaFunctions(*kernels.backward, *bm);
    ASSERT_TRUE(bf.ok()) << bf.getMessage();

    std::mt19937 rng(7);
    HostTensor q(c.bf16, {c.b, c.hq, c.nq, c.d});
    q.randomize(rng);
    rt::DeviceBuffer qBuf = upload(q.bits.data(), q.bytes()),
                     kBuf = upload(q.bits.data(), q.bytes()),
                     vBuf = upload(q.bits.data(), q.bytes()),
                     dOBuf = upload(q.bits.data(), q.bytes()),
                     oBuf = poisoned(q.bytes()),
                     lseBuf = poisoned(size_t(c.b * c.hq * c.nq) * 4),
                     dqBuf = poisoned(q.bytes()), dkBuf = poisoned(q.bytes()),
                     dvBuf = poisoned(q.bytes());
    double scale = 1.0 / std::sqrt(double(c.d));
    using rt::AbiTensor;
    mlir::fa::CudaBackwardCall bwd;
    rt::DeviceBuffer *bufs[9] = {&qBuf,   &kBuf,  &vBuf,  &oBuf, &dOBuf,
                                 &lseBuf, &dqBuf, &dkBuf, &dvBuf};
    const AbiTensor names[9] = {AbiTensor::Q,  AbiTensor::K,  AbiTensor::V,
                                AbiTensor::O,  AbiTensor::DO, AbiTensor::Lse,
                                AbiTensor::DQ, AbiTensor::DK, AbiTensor::DV};
    for (int i = 0; i < 9; ++i) {
      bwd[names[i]].data = bufs[i]->getPointer();
      if (names[i] != AbiTensor::Lse)
        contiguous(q.shape, bwd[names[i]].strides);
    }
    bwd[AbiTensor::Lse].strides[0] = c.hq * c.nq;
    bwd[AbiTensor::Lse].strides[1] = c.nq;
    bwd.batch = c.b;
    bwd.headsQ = bwd.headsKV = c.hq;
    bwd.seqQ = c.nq;
    bwd.seqKV = c.nk;
    bwd.scaleLog2 = float(scale * M_LOG2E);
    bwd.scale = float(scale);
    const rt::KernelCall &fwd = bwd;
    rt::DeviceBuffer ws = poisoned(
        mlir::fa::getCudaBackwardWorkspaceBytes(*kernels.backward, bwd));
    bwd.workspace = ws.getPointer();

    auto time = [&](auto &&launch) {
      for (int i = 0; i < 2; ++i)
        launch().check();
      rt::Expected<rt::Event> start = rt::Event::create(*device),
                              stop = rt::Event::create(*device);
      start->record().check();
      const int iterations = 10;
      for (int i = 0; i < iterations; ++i)
        launch().check();
      stop->record().check();
      rt::Expected<float> ms = rt::Event::elapsedMs(*start, *stop);
      ms.getStatus().check();
      return *ms / iterations;
    };
    float fwdMs = time([&] {
      return mlir::fa::launchCudaForward(*kernels.forward, *ff, fwd, nullptr);
    });
    float bwdMs = time([&] {
      return mlir::fa::launchCudaBackward(*kernels.backward, *bf, bwd, nullptr);
    });
    double flops = 4.0 * c.b * c.hq * c.nq * c.nk * c.d *
                   (c.causal == CM::None ? 1.0 : 0.5);
    std::printf("[ bench ] %-18s B=%lld H=%lld N=%lld: forward %.3f ms "
                "(%.0f TFLOP/s), backward %.3f ms (%.0f TFLOP/s)\n",
                c.name, (long long)c.b, (long long)c.hq, (long long)c.nq, fwdMs,
                flops / fwdMs / 1e9, bwdMs, 2.5 * flops / bwdMs / 1e9);
  }
}

/// Without a GPU: the kernels compile, and the backward's cache entry holds
/// its three entry points with the launch contract the launcher checks.
class CudaBackwardCompileTest : public ::testing::TestWithParam<Case> {};

TEST_P(CudaBackwardCompileTest, CacheEntry) {
  const Case &c = GetParam();
  Compiled kernels = compile(c, c.sm80 ? "sm_80" : "sm_90a");
  ASSERT_TRUE(kernels.forward && kernels.backward);
  const rt::CachedKernel &backward = *kernels.backward;
  bool atomic = c.atomicDQEffective();
  using rt::AbiSize;
  using rt::AbiTensor;
  using rt::KernelParam;
  ASSERT_EQ(backward.kernels.size(), c.dbias ? 4u : 3u);
  const rt::KernelAbi &dsum = backward.kernels[0];
  EXPECT_EQ(dsum.name, "fa_backward_dsum_0");
  EXPECT_EQ(rt::printGridRule(dsum.grid), "[tiles(Nq, 64), Hq, B]");
  // The kernels share their parameters: the scored path's where the op has
  // score terms or dropout, the seed with dropout, the accumulator with
  // atomic dQ.
  auto has = [&](const KernelParam &p) { return rt::findParam(dsum, p) >= 0; };
  EXPECT_EQ(has(KernelParam::pointer(AbiTensor::Bias)), c.scored());
  EXPECT_EQ(has(KernelParam::pointer(AbiTensor::DBias)), c.scored());
  EXPECT_EQ(
      has(KernelParam::ofScalar(rt::AbiScalar::Seed, rt::MachineType::I64)),
      bool(c.dropout));
  EXPECT_EQ(rt::getDQAccumColumns(dsum), atomic ? uint32_t(c.d) : 0u);
  for (AbiSize size : {AbiSize::Hq, AbiSize::Hkv, AbiSize::B})
    EXPECT_TRUE(has(KernelParam::ofSize(size))) << rt::getName(size);
  const rt::KernelAbi &dkdv = backward.kernels[1];
  EXPECT_EQ(dkdv.name, "fa_backward_dkdv_0");
  // The plain path at D = 64 and 128 on sm_90a multiplies with wgmma in 8
  // warps (either dQ mode) unless told not to; everything else with
  // mma.sync.
  bool wgmmaShape = c.wgmma && !c.sm80 && (c.d == 64 || c.d == 128) &&
                    !c.scored() && !c.softcap;
  // dkdv runs 8 warps over 128 keys there and with atomic dQ on sm_90a,
  // where its Q tile (D x 64 rows, or 32 on the scored path and at D = 96,
  // 16 at D = 128 with softcap or scores) and each warp's dQ columns split
  // evenly; else 4 warps over 64 keys.
  bool eightWarps = c.dkdvWarps
                        ? c.dkdvWarps == 8
                        : (atomic || wgmmaShape) && !c.sm80 && c.d <= 128 &&
                              c.d != 96 && !(c.d == 32 && c.scored());
  EXPECT_EQ(rt::printGridRule(dkdv.grid), eightWarps
                                              ? "[tiles(Nk, 128), Hkv, B]"
                                              : "[tiles(Nk, 64), Hkv, B]");
  EXPECT_EQ(dkdv.threads, eightWarps ? 256u : 128u);
  bool wgmma = wgmmaShape && eightWarps;
  EXPECT_EQ(backward.image.find("wgmma.mma_async") != std::string::npos, wgmma);
  const char *dq = atomic ? "fa_backward_dq_convert_0" : "fa_backward_dq_0";
  EXPECT_EQ(backward.kernels[2].name, dq);
  EXPECT_EQ(rt::printGridRule(backward.kernels[2].grid),
            "[tiles(Nq, 64), Hq, B]");
  for (const rt::KernelAbi &k : backward.kernels) {
    EXPECT_TRUE(rt::verifyKernelAbi(k).ok()) << k.name;
    if (k.name != "fa_backward_dkdv_0") {
      EXPECT_EQ(k.threads, 128u);
    }
    // dsum and dq_convert need no shared memory.
    EXPECT_EQ(k.sharedBytes > 0u, k.name != "fa_backward_dq_convert_0" &&
                                      k.name != "fa_backward_dsum_0")
        << k.name;
    EXPECT_EQ(k.params, dsum.params) << k.name;
  }
  if (c.dbias) {
    EXPECT_EQ(backward.kernels[3].name, "fa_backward_dbias_0");
  }
  for (std::string entry : {std::string("fa_backward_dsum_0"),
                            std::string("fa_backward_dkdv_0"), std::string(dq)})
    EXPECT_NE(backward.image.find(".entry " + entry + "("), std::string::npos)
        << entry;
  // Only the atomic mode's dK/dV kernel adds into global memory.
  // Only atomic dQ's dK/dV kernel adds into global memory: one atomic per
  // element on sm_80, one bulk reduction per tile on sm_90a.
  bool bulk = !c.sm80;
  if (!atomic) {
    EXPECT_EQ(backward.image.find("atom."), std::string::npos);
    EXPECT_EQ(backward.image.find("cp.reduce.async.bulk"), std::string::npos);
  } else {
    EXPECT_EQ(backward.image.find("atom.global.add.f32") != std::string::npos,
              !bulk);
    EXPECT_EQ(backward.image.find("cp.reduce.async.bulk.global.shared::cta."
                                  "bulk_group.add.f32") != std::string::npos,
              bulk);
  }
}

// Odd N, Nq != Nk both ways, both causal alignments (bottom-right with
// Nq > Nk leaves rows fully masked: lse = -inf), windows, softcap, GQA 4:1
// and MQA, B * H > 1, D = 32, 64, 96 and 128; then the scored path, dropout
// and D = 256.
const Case kCases[] = {
    Case("bf16_d64_plain", kBF16, 64, {2, 4, 4, 257, 257}).atomicDQ(),
    Case("f16_d64_plain_sm80", kF16, 64, {2, 2, 2, 200, 130})
        .forSm80()
        .withWorkspace(),
    Case("bf16_d128_mqa_causal_br", kBF16, 128, {2, 4, 1, 200, 300})
        .withCausal(CM::BottomRight)
        .withWorkspace()
        .atomicDQ(),
    Case("bf16_d128_gqa_atomic_4_warps", kBF16, 128, {2, 4, 2, 300, 333})
        .withCausal(CM::BottomRight)
        .atomicDQ()
        .withDkDvWarps(4),
    Case("bf16_d128_gqa_atomic_mma_sync", kBF16, 128, {2, 4, 2, 300, 333})
        .withCausal(CM::BottomRight)
        .atomicDQ()
        .withMmaSync(),
    Case("f16_d64_gqa_window_atomic", kF16, 64, {2, 4, 2, 333, 300})
        .withWindow(70, 9)
        .atomicDQ(),
    Case("f16_d64_gqa_causal_br_nq_gt_nk", kF16, 64, {1, 8, 2, 300, 170})
        .withCausal(CM::BottomRight)
        .atomicDQ(),
    Case("f16_d128_causal_tl", kF16, 128, {2, 2, 2, 130, 257})
        .withCausal(CM::TopLeft)
        .withWorkspace()
        .withDkDvWarps(8)
        .deterministicDQ(),
    Case("bf16_d128_causal_tl_nq_gt_nk", kBF16, 128, {1, 2, 1, 257, 100})
        .withCausal(CM::TopLeft),
    Case("bf16_d32_window", kBF16, 32, {3, 4, 2, 17, 17})
        .withWindow(5, 3)
        .atomicDQ(),
    Case("f16_d96_window_causal_br", kF16, 96, {2, 4, 4, 257, 129})
        .withCausal(CM::BottomRight)
        .withWindow(32, 0)
        .withWorkspace(),
    Case("bf16_d64_softcap_mqa_nq1", kBF16, 64, {2, 4, 1, 1, 257})
        .withSoftcap(30)
        .atomicDQ(),
    Case("f16_d128_softcap_causal_tl_nk1", kF16, 128, {1, 4, 2, 257, 1})
        .withCausal(CM::TopLeft)
        .withSoftcap(20),
    Case("bf16_d128_one_by_one", kBF16, 128, {1, 1, 1, 1, 1}).atomicDQ(),
    Case("bf16_d64_window_diagonal", kBF16, 64, {2, 2, 2, 64, 64})
        .withWindow(0, 0)
        .deterministicDQ(),
    Case("f16_d32_causal_tl_long", kF16, 32, {2, 2, 2, 513, 513})
        .withCausal(CM::TopLeft)
        .atomicDQ(),
    Case("bf16_d96_mqa_softcap_window", kBF16, 96, {1, 8, 1, 100, 300})
        .withWindow(64, 16)
        .withSoftcap(25)
        .withWorkspace(),
    Case("bf16_d64_masked_rows", kBF16, 64, {2, 2, 1, 257, 17})
        .withCausal(CM::BottomRight)
        .withDkDvWarps(8),
    Case("f16_d128_gqa_plain_sm80", kF16, 128, {2, 8, 2, 255, 257})
        .forSm80()
        .atomicDQ(),
    Case("f16_d64_softcap_window_tl", kF16, 64, {2, 4, 2, 190, 211})
        .withCausal(CM::TopLeft)
        .withWindow(40, 7)
        .withSoftcap(15),
    Case("bf16_d128_softcap_gqa_long", kBF16, 128, {1, 4, 1, 700, 640})
        .withSoftcap(30)
        .withCausal(CM::BottomRight)
        .atomicDQ(),
    // The scored path: bias (every broadcast shape, f16/bf16/f32, with its
    // gradient), ALiBi [Hq] and [B, Hq], score_mod, mask_mod; odd N, Nq !=
    // Nk, GQA and MQA.
    Case("bf16_d64_bias_full_dbias", kBF16, 64, {2, 4, 2, 131, 200})
        .withBias({0, 0, 0, 0}, Case::BiasType::BF16, true)
        .withWorkspace(),
    Case("f16_d128_bias_heads_f32_dbias", kF16, 128, {2, 4, 1, 200, 131})
        .withBias({1, 0, 1, 0}, Case::BiasType::F32, true)
        .withCausal(CM::BottomRight)
        .withWorkspace(),
    Case("bf16_d96_bias_rows_dbias", kBF16, 96, {2, 2, 2, 77, 150})
        .withBias({0, 1, 0, 1}, Case::BiasType::F16, true)
        .withWindow(30, 10)
        .atomicDQ(),
    Case("f16_d32_bias_scalar_dbias", kF16, 32, {3, 2, 1, 65, 63})
        .withBias({1, 1, 1, 1}, Case::BiasType::F32, true),
    Case("bf16_d64_bias_batch_dbias_sm80", kBF16, 64, {2, 8, 2, 100, 257})
        .withBias({0, 1, 1, 0}, Case::BiasType::BF16, true)
        .withAlibi(false)
        .forSm80()
        .atomicDQ(),
    Case("f16_d64_alibi_heads_causal_gqa", kF16, 64, {2, 8, 2, 257, 257})
        .withAlibi(false)
        .withCausal(CM::BottomRight)
        .withDkDvWarps(8),
    Case("bf16_d128_alibi_batch_softcap", kBF16, 128, {2, 4, 4, 150, 99})
        .withAlibi(true)
        .withSoftcap(30)
        .atomicDQ(),
    Case("bf16_d128_score_mod_bias_dbias", kBF16, 128, {1, 4, 2, 190, 211})
        .withScoreMod()
        .withBias({1, 0, 0, 0}, Case::BiasType::F32, true)
        .withSoftcap(25)
        .withAlibi(true)
        .withWorkspace()
        .atomicDQ(),
    Case("f16_d64_mask_mod_documents", kF16, 64, {2, 4, 2, 300, 170})
        .withMaskMod()
        .withCausal(CM::TopLeft)
        .atomicDQ(),
    Case("bf16_d96_mask_mod_score_mod_mqa", kBF16, 96, {2, 4, 1, 129, 257})
        .withMaskMod()
        .withScoreMod()
        .withAlibi(false),
    // Dropout: the forward's Philox stream, with GQA, both dQ modes, a bias
    // and its gradient, ALiBi, softcap.
    Case("bf16_d64_dropout_causal_gqa", kBF16, 64, {2, 4, 2, 257, 190})
        .withDropout(0.2)
        .withCausal(CM::BottomRight)
        .withWorkspace()
        .atomicDQ(),
    Case("f16_d128_dropout_bias_dbias", kF16, 128, {2, 4, 4, 130, 257})
        .withDropout(0.1)
        .withBias({1, 0, 0, 0}, Case::BiasType::F32, true)
        .withSoftcap(30)
        .withWorkspace(),
    Case("bf16_d96_dropout_alibi_window", kBF16, 96, {1, 8, 2, 300, 300})
        .withDropout(0.5)
        .withAlibi(true)
        .withWindow(64, 8),
    Case("f16_d32_dropout_one", kF16, 32, {1, 1, 1, 1, 17})
        .withDropout(0.3)
        .atomicDQ(),
    // D = 256: dK and dV in two passes of 128 columns; odd N, GQA, masks,
    // both dQ modes and both chips, the scored path with dBias, dropout.
    Case("bf16_d256_causal_tl_gqa", kBF16, 256, {2, 4, 2, 257, 200})
        .withCausal(CM::TopLeft)
        .withWorkspace(),
    Case("f16_d256_window_softcap", kF16, 256, {1, 2, 2, 300, 129})
        .withWindow(40, 8)
        .withSoftcap(20)
        .atomicDQ(),
    Case("bf16_d256_mqa_sm80", kBF16, 256, {2, 4, 1, 65, 131})
        .forSm80()
        .atomicDQ(),
    Case("f16_d256_bias_alibi_dbias", kF16, 256, {2, 4, 2, 130, 190})
        .withBias({1, 0, 0, 0}, Case::BiasType::F32, true)
        .withAlibi(false)
        .withCausal(CM::BottomRight)
        .withWorkspace(),
    Case("bf16_d256_dropout_mask_mod", kBF16, 256, {1, 4, 2, 190, 257})
        .withDropout(0.15)
        .withMaskMod()
        .atomicDQ(),
    Case("f16_d128_all_dbias", kF16, 128, {2, 4, 2, 200, 200})
        .withBias({0, 0, 0, 0}, Case::BiasType::F16, true)
        .withAlibi(true)
        .withScoreMod()
        .withMaskMod()
        .withSoftcap(30)
        .withCausal(CM::BottomRight)
        .withWorkspace(),
};

std::string caseName(const ::testing::TestParamInfo<Case> &info) {
  return info.param.name;
}

INSTANTIATE_TEST_SUITE_P(Variants, CudaBackwardTest,
                         ::testing::ValuesIn(kCases), caseName);
INSTANTIATE_TEST_SUITE_P(Variants, CudaBackwardCompileTest,
                         ::testing::ValuesIn(kCases), caseName);

} // namespace
