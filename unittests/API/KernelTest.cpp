//===- KernelTest.cpp - fa::compile / fa::Kernel against the reference ----===//
//
// Built like a user's program (fa.h and libfa.so); the float64 reference
// comes from FASupport, which shares no code with the compiler.
//
//===----------------------------------------------------------------------===//

#include "Accuracy.h"
#include "GpuTest.h"
#include "TestTensors.h"

#include "fa/Runtime/Cuda.h"
#include "fa/Support/Reference.h"
#include "fa/fa.h"

#include "gtest/gtest.h"

#include <cmath>
#include <cstring>
#include <random>

namespace {

using fa::testing::bnhdToBhnd;
using fa::testing::errorOf;
using fa::testing::forwardIsAccurate;
using fa::testing::HostTensor;
using fa::testing::precisionOf;

struct Case {
  int64_t b, hq, hkv, nq, nk, d;
};

/// Runs `kernel` on random inputs of `c` and compares O (and lse) with the
/// reference computed with `options`.
void checkAgainstReference(const fa::Kernel &kernel, const Case &c,
                           fa::support::AttentionOptions options,
                           HostTensor *bias = nullptr,
                           HostTensor *slopes = nullptr) {
  const fa::AttentionSpec &spec = kernel.spec();
  std::mt19937 rng(42);
  HostTensor q(spec.dtype, {c.b, c.hq, c.nq, c.d});
  HostTensor k(spec.dtype, {c.b, c.hkv, c.nk, c.d});
  HostTensor v(spec.dtype, {c.b, c.hkv, c.nk, c.d});
  HostTensor o(spec.dtype, {c.b, c.hq, c.nq, c.d});
  HostTensor lse(fa::DType::F32, {c.b, c.hq, c.nq});
  q.randomize(rng);
  k.randomize(rng);
  v.randomize(rng);
  fa::TensorView lseView = lse.view(), biasView, slopesView;
  if (bias) {
    biasView = bias->view();
    options.bias = bias->ref();
  }
  if (slopes) {
    slopesView = slopes->view();
    options.alibiSlopes = slopes->ref();
  }
  kernel.forward(q.view(), k.view(), v.view(), o.view(),
                 spec.returnLse ? &lseView : nullptr,
                 bias ? &biasView : nullptr, slopes ? &slopesView : nullptr);

  std::vector<double> gotO = o.read(), gotLse = lse.read();
  EXPECT_TRUE(forwardIsAccurate(q.ref(), k.ref(), v.ref(), options,
                                precisionOf(spec.dtype), gotO,
                                spec.returnLse ? &gotLse : nullptr));
}

TEST(KernelTest, CausalGQAInBF16) {
  fa::AttentionSpec spec;
  spec.dtype = fa::DType::BF16;
  spec.headDim = 64;
  spec.causal = fa::Causal::BottomRight;
  spec.returnLse = true;
  fa::Kernel kernel = fa::compile(spec);
  fa::support::AttentionOptions options;
  options.causal = fa::support::CausalMask::BottomRight;
  // One kernel, several batch sizes, head counts and lengths.
  checkAgainstReference(kernel, {2, 8, 2, 100, 130, 64}, options);
  checkAgainstReference(kernel, {1, 4, 4, 17, 17, 64}, options);
  checkAgainstReference(kernel, {3, 2, 1, 65, 33, 64}, options);
}

TEST(KernelTest, WindowSoftcapBiasAlibiInF32) {
  fa::AttentionSpec spec;
  spec.dtype = fa::DType::F32;
  spec.headDim = 32;
  spec.numHeadsQ = 4;
  spec.numHeadsKV = 2;
  spec.window = {{8, 2}};
  spec.softcap = 20.0;
  spec.scale = 0.3;
  spec.alibi = true;
  spec.bias = true;
  spec.biasBroadcast = {true, false, false, false};
  spec.returnLse = true;
  fa::Kernel kernel = fa::compile(spec);

  Case c{2, 4, 2, 40, 50, 32};
  std::mt19937 rng(7);
  HostTensor bias(fa::DType::F32, {1, 4, 40, 50});
  bias.randomize(rng);
  HostTensor slopes(fa::DType::F32, {4});
  for (int h = 0; h < 4; ++h)
    slopes.set(h, std::pow(2.0, -2.0 * (h + 1)));
  fa::support::AttentionOptions options;
  options.window = fa::support::SlidingWindow{8, 2};
  options.softcap = 20.0;
  options.scale = 0.3;
  checkAgainstReference(kernel, c, options, &bias, &slopes);
}

TEST(KernelTest, ScoreModAndMaskModFromText) {
  fa::AttentionSpec spec;
  spec.dtype = fa::DType::F16;
  spec.headDim = 16;
  // Relative-position bias and a document mask (documents of 8 tokens).
  spec.scoreMod = R"mlir(
    %qi = arith.index_cast %q_idx : index to i64
    %ki = arith.index_cast %kv_idx : index to i64
    %d = arith.subi %qi, %ki : i64
    %df = arith.sitofp %d : i64 to f32
    %c = arith.constant 0.05 : f32
    %m = arith.mulf %df, %c : f32
    %r = arith.subf %score, %m : f32
    fa.yield %r : f32
  )mlir";
  spec.maskMod = R"mlir(
    %c8 = arith.constant 8 : index
    %dq = arith.divui %q_idx, %c8 : index
    %dk = arith.divui %kv_idx, %c8 : index
    %same = arith.cmpi eq, %dq, %dk : index
    fa.yield %same : i1
  )mlir";
  fa::Kernel kernel = fa::compile(spec);
  fa::support::AttentionOptions options;
  options.scoreMod = [](double s, int64_t, int64_t, int64_t i, int64_t j) {
    return s - 0.05 * static_cast<double>(i - j);
  };
  options.maskMod = [](int64_t, int64_t, int64_t i, int64_t j) {
    return i / 8 == j / 8;
  };
  checkAgainstReference(kernel, {1, 2, 2, 30, 30, 16}, options);
}

TEST(KernelTest, AcceptsAnyStrides) {
  // Q, K, V and O stored as [B, N, H, D] (the usual activation layout) and
  // viewed as [B, H, N, D] through strides.
  fa::AttentionSpec spec;
  spec.dtype = fa::DType::F32;
  spec.headDim = 8;
  fa::Kernel kernel = fa::compile(spec);
  const int64_t b = 2, h = 3, n = 11, d = 8;
  std::mt19937 rng(3);
  HostTensor q(fa::DType::F32, {b, n, h, d}), k(fa::DType::F32, {b, n, h, d}),
      v(fa::DType::F32, {b, n, h, d}), o(fa::DType::F32, {b, n, h, d});
  q.randomize(rng);
  k.randomize(rng);
  v.randomize(rng);
  std::vector<int64_t> strides = {n * h * d, d, h * d, 1};
  auto bhnd = [&](HostTensor &t) {
    return fa::TensorView{
        t.bytes.data(), fa::DType::F32, {b, h, n, d}, strides, fa::Device::CPU};
  };
  kernel.forward(bhnd(q), bhnd(k), bhnd(v), bhnd(o));

  // The reference takes contiguous [B, H, N, D].
  auto toBHND = [&](const std::vector<double> &x) {
    return bnhdToBhnd(x, b, h, n, d);
  };
  std::vector<double> qr = toBHND(q.values), kr = toBHND(k.values),
                      vr = toBHND(v.values);
  EXPECT_TRUE(forwardIsAccurate({qr.data(), {b, h, n, d}},
                                {kr.data(), {b, h, n, d}},
                                {vr.data(), {b, h, n, d}}, {},
                                fa::support::Precision::F32, toBHND(o.read())));
}

TEST(KernelTest, RejectsBadArgumentsBeforeRunning) {
  fa::AttentionSpec spec;
  spec.dtype = fa::DType::F16;
  spec.headDim = 16;
  fa::Kernel kernel = fa::compile(spec);
  HostTensor q(fa::DType::F16, {1, 2, 4, 16}), k(fa::DType::F16, {1, 2, 4, 16}),
      v(fa::DType::F16, {1, 2, 4, 16}), o(fa::DType::F16, {1, 2, 4, 16});
  HostTensor qf32(fa::DType::F32, {1, 2, 4, 16});
  HostTensor k3(fa::DType::F16, {1, 3, 4, 16}),
      v3(fa::DType::F16, {1, 3, 4, 16});
  HostTensor q8(fa::DType::F16, {1, 2, 4, 8});

  EXPECT_EQ(errorOf([&] {
              kernel.forward(qf32.view(), k.view(), v.view(), o.view());
            }),
            "fa::Kernel::forward: q must have dtype f16, got f32");
  EXPECT_EQ(
      errorOf([&] { kernel.forward(q8.view(), k.view(), v.view(), o.view()); }),
      "fa::Kernel::forward: q head dim (q.shape[3]): expected 16, got 8");
  EXPECT_EQ(errorOf([&] {
              kernel.forward(q.view(), k3.view(), v3.view(), o.view());
            }),
            "fa::Kernel::forward: q heads (2) must be a multiple of k/v heads "
            "(3)");
  fa::TensorView rank3 = q.view();
  rank3.shape = {2, 4, 16};
  EXPECT_EQ(
      errorOf([&] { kernel.forward(rank3, k.view(), v.view(), o.view()); }),
      "fa::Kernel::forward: q must have rank 4, got shape [2, 4, 16]");
  fa::TensorView onGpu = k.view();
  onGpu.device = fa::Device::CUDA;
  EXPECT_EQ(
      errorOf([&] { kernel.forward(q.view(), onGpu, v.view(), o.view()); }),
      "fa::Kernel::forward: k is a CUDA tensor, but the kernel was "
      "compiled for the host");
  fa::TensorView broadcastOut = o.view();
  broadcastOut.strides = {0, 0, 0, 1};
  EXPECT_EQ(errorOf([&] {
              kernel.forward(q.view(), k.view(), v.view(), broadcastOut);
            }),
            "fa::Kernel::forward: out is an output but has stride 0 in dim 1 "
            "(its elements would overlap)");
  HostTensor lse(fa::DType::F32, {1, 2, 4});
  fa::TensorView lseView = lse.view();
  EXPECT_EQ(errorOf([&] {
              kernel.forward(q.view(), k.view(), v.view(), o.view(), &lseView);
            }),
            "fa::Kernel::forward: the kernel was compiled without the lse; "
            "recompile with spec.returnLse = true");
  // O written over Q would race with the reads of Q.
  EXPECT_EQ(
      errorOf([&] { kernel.forward(q.view(), k.view(), v.view(), q.view()); })
          .rfind("fa::Kernel::forward: argument 3 of @fa_forward (an "
                 "output) overlaps argument 0",
                 0),
      0u);
}

TEST(KernelTest, RejectsBadSpecs) {
  fa::AttentionSpec spec;
  spec.headDim = 0;
  EXPECT_EQ(errorOf([&] { fa::compile(spec); }),
            "fa::compile: head dims must be positive, got D = 0, Dv = 0");
  spec.headDim = 64;
  spec.atomicDQ = spec.deterministic = true;
  EXPECT_EQ(errorOf([&] { fa::compile(spec, "sm_90a"); }),
            "fa::compile: atomicDQ and deterministic exclude each other");
  spec.atomicDQ = spec.deterministic = false;
  EXPECT_EQ(errorOf([&] { fa::compile(spec, "tpu"); }),
            "fa::compile: target 'tpu' is not supported (host, auto, cuda:N, "
            "or a GPU chip: sm_80, sm_86, sm_87, sm_89, sm_90, sm_90a, sm_100, "
            "sm_120)");
  // A chip the target model does not know is refused before compiling.
  EXPECT_EQ(errorOf([&] { fa::compile(spec, "sm_75"); }),
            "fa::compile: target 'sm_75' is not supported (host, auto, "
            "cuda:N, or a GPU chip: sm_80, sm_86, sm_87, sm_89, sm_90, sm_90a, "
            "sm_100, "
            "sm_120)");
  EXPECT_EQ(errorOf([&] { fa::compile(spec, "cuda:x"); }),
            "fa::compile: target 'cuda:x': expected cuda:N with N a device "
            "number");
  spec.softcap = -1.0;
  EXPECT_EQ(errorOf([&] {
              fa::compile(spec);
            }).rfind("fa::compile: invalid attention spec\n<spec>:2:", 0),
            0u);
  EXPECT_NE(errorOf([&] { fa::compile(spec); })
                .find("error: 'fa.attention' op softcap must be finite and "
                      "positive, got -1.000000e+00"),
            std::string::npos);
  spec.softcap.reset();
  spec.scoreMod = "%r = arith.cmpf olt, %score, %score : f32\n"
                  "fa.yield %r : i1";
  EXPECT_EQ(errorOf([&] { fa::compile(spec); }),
            "fa::compile: invalid attention spec\n<spec>:2:8: error: "
            "'fa.attention' op score_mod region must yield one 'f32'\n");
}

TEST(KernelTest, GpuKernelsCompileWithoutAGpuAndCheckTheirViews) {
  fa::AttentionSpec spec;
  spec.dtype = fa::DType::BF16;
  spec.headDim = 64;
  spec.causal = fa::Causal::BottomRight;
  // PTX needs no GPU; the module is loaded on the first call.
  fa::Kernel kernel = fa::compile(spec, "sm_90a");
  EXPECT_EQ(kernel.target(), "sm_90a");
  EXPECT_NE(kernel.ptx().find(".target sm_90a"), std::string::npos);
  EXPECT_EQ(errorOf([&] { fa::compile(fa::AttentionSpec()).ptx(); }),
            "fa::Kernel::ptx: the kernel was compiled for the host, which runs "
            "no PTX; compile for a GPU target (sm_80, sm_90a, or auto on a "
            "machine with a GPU) to get it");
  HostTensor q(fa::DType::BF16, {1, 2, 8, 64});
  EXPECT_EQ(
      errorOf([&] { kernel.forward(q.view(), q.view(), q.view(), q.view()); }),
      "fa::Kernel::forward: q is a CPU tensor, but the kernel was "
      "compiled for a GPU");
  // Bias and ALiBi take the scored kernel.
  spec.bias = true;
  spec.alibi = true;
  EXPECT_NE(fa::compile(spec, "sm_80").ptx().find(".entry fa_forward_0"),
            std::string::npos);
  // Dropout too, with the seed after the slopes' stride: the last of 32
  // (the plain forward's 24, the bias's pointer and 4 strides, the slopes'
  // pointer and stride).
  spec.dropoutP = 0.1;
  EXPECT_NE(fa::compile(spec, "sm_80")
                .ptx()
                .find(".param .u64 fa_forward_0_param_31\n)"),
            std::string::npos);
}

TEST(KernelTest, RunsOnTheGpuWithBiasAndAlibiViews) {
  namespace rt = fa::runtime;
  rt::Expected<rt::Device> device = rt::Device::get(0);
  if (device.failed())
    FA_GPU_UNAVAILABLE(device.getMessage());
  // A bf16 bias [1, Hq, 1, Nk] seen through a padded row stride, and
  // per-batch slopes [B, Hq]: the scored kernel's strided operands.
  const int64_t b = 2, hq = 4, hkv = 2, nq = 77, nk = 131, d = 64, pad = 5;
  fa::AttentionSpec spec;
  spec.dtype = fa::DType::BF16;
  spec.headDim = d;
  spec.causal = fa::Causal::BottomRight;
  spec.bias = true;
  spec.biasDType = fa::DType::BF16;
  spec.biasBroadcast = {true, false, true, false};
  spec.alibi = true;
  spec.alibiPerBatch = true;
  fa::Kernel kernel = fa::compile(spec, "auto");
  ASSERT_NE(kernel.target(), "host");

  std::mt19937 rng(11);
  HostTensor q(fa::DType::BF16, {b, hq, nq, d}),
      k(fa::DType::BF16, {b, hkv, nk, d}), v(fa::DType::BF16, {b, hkv, nk, d}),
      o(fa::DType::BF16, {b, hq, nq, d}),
      bias(fa::DType::BF16, {1, hq, 1, nk + pad}),
      slopes(fa::DType::F32, {b, hq});
  q.randomize(rng);
  k.randomize(rng);
  v.randomize(rng);
  bias.randomize(rng);
  for (int64_t i = 0; i < b * hq; ++i)
    slopes.set(i, 0.05 * double(i + 1));
  auto upload = [&](HostTensor &t) {
    rt::Expected<rt::DeviceBuffer> buffer =
        rt::DeviceBuffer::allocate(device.value(), t.bytes.size());
    EXPECT_TRUE(buffer.ok()) << buffer.getMessage();
    EXPECT_TRUE(
        buffer.value().copyFromHost(t.bytes.data(), t.bytes.size()).ok());
    return std::move(buffer.value());
  };
  rt::DeviceBuffer dq = upload(q), dk = upload(k), dv = upload(v),
                   dout = upload(o), dbias = upload(bias),
                   dslopes = upload(slopes);
  auto view = [](rt::DeviceBuffer &buffer, fa::DType dtype,
                 std::vector<int64_t> shape,
                 std::vector<int64_t> strides = {}) {
    return fa::TensorView{reinterpret_cast<void *>(buffer.getPointer()), dtype,
                          std::move(shape), std::move(strides),
                          fa::Device::CUDA};
  };
  fa::TensorView biasView = view(dbias, fa::DType::BF16, {1, hq, 1, nk},
                                 {hq * (nk + pad), nk + pad, nk + pad, 1});
  fa::TensorView slopesView = view(dslopes, fa::DType::F32, {b, hq});
  kernel.forward(view(dq, fa::DType::BF16, {b, hq, nq, d}),
                 view(dk, fa::DType::BF16, {b, hkv, nk, d}),
                 view(dv, fa::DType::BF16, {b, hkv, nk, d}),
                 view(dout, fa::DType::BF16, {b, hq, nq, d}), nullptr,
                 &biasView, &slopesView);
  ASSERT_TRUE(device.value().synchronize().ok());
  ASSERT_TRUE(dout.copyToHost(o.bytes.data(), o.bytes.size()).ok());

  // The reference reads the bias without the padding.
  std::vector<double> biasValues;
  for (int64_t h = 0; h < hq; ++h)
    for (int64_t j = 0; j < nk; ++j)
      biasValues.push_back(bias.values[h * (nk + pad) + j]);
  fa::support::AttentionOptions options;
  options.causal = fa::support::CausalMask::BottomRight;
  options.bias = {biasValues.data(), {1, hq, 1, nk}};
  options.alibiSlopes = {slopes.values.data(), {b, hq}};
  EXPECT_TRUE(forwardIsAccurate({q.values.data(), {b, hq, nq, d}},
                                {k.values.data(), {b, hkv, nk, d}},
                                {v.values.data(), {b, hkv, nk, d}}, options,
                                fa::support::Precision::BF16, o.read()));
}

TEST(KernelTest, RunsOnTheGpuWithStridedViews) {
  namespace rt = fa::runtime;
  rt::Expected<rt::Device> device = rt::Device::get(0);
  if (device.failed())
    FA_GPU_UNAVAILABLE(device.getMessage());
  fa::AttentionSpec spec;
  spec.dtype = fa::DType::BF16;
  spec.headDim = 128;
  spec.causal = fa::Causal::BottomRight;
  spec.returnLse = true;
  fa::Kernel kernel = fa::compile(spec, "auto");
  ASSERT_NE(kernel.target(), "host");

  // Q, K, V and O stored as [B, N, H, D], seen as [B, H, N, D].
  const int64_t b = 2, hq = 4, hkv = 2, nq = 100, nk = 150, d = 128;
  std::mt19937 rng(5);
  HostTensor q(fa::DType::BF16, {b, nq, hq, d}),
      k(fa::DType::BF16, {b, nk, hkv, d}), v(fa::DType::BF16, {b, nk, hkv, d}),
      o(fa::DType::BF16, {b, nq, hq, d});
  HostTensor lse(fa::DType::F32, {b, hq, nq});
  q.randomize(rng);
  k.randomize(rng);
  v.randomize(rng);
  auto upload = [&](HostTensor &t) {
    rt::Expected<rt::DeviceBuffer> buffer =
        rt::DeviceBuffer::allocate(device.value(), t.bytes.size());
    EXPECT_TRUE(buffer.ok()) << buffer.getMessage();
    EXPECT_TRUE(
        buffer.value().copyFromHost(t.bytes.data(), t.bytes.size()).ok());
    return std::move(buffer.value());
  };
  rt::DeviceBuffer dq = upload(q), dk = upload(k), dv = upload(v),
                   dout = upload(o), dlse = upload(lse);
  auto bnhd = [](rt::DeviceBuffer &buffer, int64_t h, int64_t n) {
    return fa::TensorView{reinterpret_cast<void *>(buffer.getPointer()),
                          fa::DType::BF16,
                          {2, h, n, 128},
                          {n * h * 128, 128, h * 128, 1},
                          fa::Device::CUDA};
  };
  fa::TensorView lseView{reinterpret_cast<void *>(dlse.getPointer()),
                         fa::DType::F32,
                         {b, hq, nq},
                         {},
                         fa::Device::CUDA};
  kernel.forward(bnhd(dq, hq, nq), bnhd(dk, hkv, nk), bnhd(dv, hkv, nk),
                 bnhd(dout, hq, nq), &lseView);
  ASSERT_TRUE(device.value().synchronize().ok());
  ASSERT_TRUE(dout.copyToHost(o.bytes.data(), o.bytes.size()).ok());
  ASSERT_TRUE(dlse.copyToHost(lse.bytes.data(), lse.bytes.size()).ok());

  auto toBHND = [&](const std::vector<double> &x, int64_t h, int64_t n) {
    return bnhdToBhnd(x, b, h, n, d);
  };
  std::vector<double> qr = toBHND(q.values, hq, nq),
                      kr = toBHND(k.values, hkv, nk),
                      vr = toBHND(v.values, hkv, nk);
  fa::support::AttentionOptions options;
  options.causal = fa::support::CausalMask::BottomRight;
  std::vector<double> gotLse = lse.read();
  EXPECT_TRUE(forwardIsAccurate(
      {qr.data(), {b, hq, nq, d}}, {kr.data(), {b, hkv, nk, d}},
      {vr.data(), {b, hkv, nk, d}}, options, fa::support::Precision::BF16,
      toBHND(o.read(), hq, nq), &gotLse));
}

} // namespace
