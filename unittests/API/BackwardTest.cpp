//===- BackwardTest.cpp - fa::Kernel::backward against the reference ------===//
//
// dQ, dK, dV of the host backward against FASupport's float64
// attentionGradReference, which recomputes everything from Q, K, V and dO.
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
#include <random>
#include <thread>

namespace {

using fa::testing::backwardIsAccurate;
using fa::testing::errorOf;
using fa::testing::HostTensor;
using fa::testing::precisionOf;

struct GradCase {
  int64_t b, hq, hkv, nq, nk, d, dv;
};

/// Runs forward (for O and lse) and backward on random inputs of `c` with
/// `kernel` (compiled with returnLse) and compares dQ, dK, dV with the
/// reference computed with `options`.
void checkBackward(const fa::Kernel &kernel, const GradCase &c,
                   fa::support::AttentionOptions options,
                   HostTensor *bias = nullptr, HostTensor *slopes = nullptr,
                   int64_t dropoutSeed = 0) {
  fa::DType dtype = kernel.spec().dtype;
  std::mt19937 rng(11);
  HostTensor q(dtype, {c.b, c.hq, c.nq, c.d}),
      k(dtype, {c.b, c.hkv, c.nk, c.d}), v(dtype, {c.b, c.hkv, c.nk, c.dv}),
      o(dtype, {c.b, c.hq, c.nq, c.dv}), dout(dtype, {c.b, c.hq, c.nq, c.dv});
  HostTensor lse(fa::DType::F32, {c.b, c.hq, c.nq});
  HostTensor dq(dtype, q.shape), dk(dtype, k.shape), dv(dtype, v.shape);
  q.randomize(rng);
  k.randomize(rng);
  v.randomize(rng);
  dout.randomize(rng);
  fa::TensorView lseView = lse.view(), biasView, slopesView;
  if (bias) {
    biasView = bias->view();
    options.bias = bias->ref();
  }
  if (slopes) {
    slopesView = slopes->view();
    options.alibiSlopes = slopes->ref();
  }
  const fa::TensorView *biasArg = bias ? &biasView : nullptr;
  const fa::TensorView *slopesArg = slopes ? &slopesView : nullptr;
  kernel.forward(q.view(), k.view(), v.view(), o.view(), &lseView, biasArg,
                 slopesArg, dropoutSeed);
  kernel.backward(q.view(), k.view(), v.view(), o.view(), dout.view(),
                  lse.view(), dq.view(), dk.view(), dv.view(), biasArg,
                  slopesArg, dropoutSeed);

  if (bias)
    options.biasPrecision = precisionOf(bias->dtype);
  EXPECT_TRUE(backwardIsAccurate(q.ref(), k.ref(), v.ref(), dout.ref(), options,
                                 precisionOf(dtype), dq.read(), dk.read(),
                                 dv.read()));
}

fa::AttentionSpec specOf(fa::DType dtype, int64_t d) {
  fa::AttentionSpec spec;
  spec.dtype = dtype;
  spec.headDim = d;
  spec.returnLse = true;
  return spec;
}

TEST(BackwardTest, PlainInF32) {
  fa::Kernel kernel = fa::compile(specOf(fa::DType::F32, 16));
  checkBackward(kernel, {2, 2, 2, 33, 33, 16, 16}, {});
}

TEST(BackwardTest, CausalGQAInEveryDType) {
  for (fa::DType dtype : {fa::DType::F32, fa::DType::F16, fa::DType::BF16}) {
    fa::AttentionSpec spec = specOf(dtype, 32);
    spec.causal = fa::Causal::BottomRight;
    fa::Kernel kernel = fa::compile(spec);
    fa::support::AttentionOptions options;
    options.causal = fa::support::CausalMask::BottomRight;
    // One kernel, several shapes: Nq < Nk, Nq > Nk (masked rows), MQA.
    checkBackward(kernel, {2, 4, 2, 40, 70, 32, 32}, options);
    checkBackward(kernel, {1, 3, 1, 50, 20, 32, 32}, options);
  }
}

TEST(BackwardTest, SoftcapWindowBiasAlibiInF32) {
  fa::AttentionSpec spec = specOf(fa::DType::F32, 16);
  spec.headDimV = 8;
  spec.softcap = 5.0;
  spec.scale = 0.4;
  spec.window = {{10, 3}}; // with top-left causal: keep i - 3 <= j <= i
  spec.causal = fa::Causal::TopLeft;
  spec.bias = true;
  spec.biasBroadcast = {true, false, false, false};
  spec.alibi = true;
  fa::Kernel kernel = fa::compile(spec);
  std::mt19937 rng(3);
  HostTensor bias(fa::DType::F32, {1, 4, 30, 37});
  bias.randomize(rng, 0.5);
  HostTensor slopes(fa::DType::F32, {4});
  for (int h = 0; h < 4; ++h)
    slopes.set(h, std::pow(2.0, -(h + 1)));
  fa::support::AttentionOptions options;
  options.softcap = 5.0;
  options.scale = 0.4;
  options.window = fa::support::SlidingWindow{10, 3};
  options.causal = fa::support::CausalMask::TopLeft;
  checkBackward(kernel, {2, 4, 2, 30, 37, 16, 8}, options, &bias, &slopes);
}

TEST(BackwardTest, BiasGradientSummedOverBroadcastDims) {
  for (fa::DType biasDType : {fa::DType::F32, fa::DType::BF16}) {
    fa::AttentionSpec spec = specOf(fa::DType::F32, 16);
    spec.causal = fa::Causal::BottomRight;
    spec.bias = true;
    spec.biasDType = biasDType;
    spec.biasBroadcast = {true, false, false, false};
    fa::Kernel kernel = fa::compile(spec);
    const int64_t b = 2, hq = 4, hkv = 2, nq = 19, nk = 23, d = 16;
    std::mt19937 rng(4);
    HostTensor q(fa::DType::F32, {b, hq, nq, d}),
        k(fa::DType::F32, {b, hkv, nk, d}), v(fa::DType::F32, {b, hkv, nk, d}),
        o(fa::DType::F32, {b, hq, nq, d}), dout(fa::DType::F32, o.shape),
        dq(fa::DType::F32, q.shape), dk(fa::DType::F32, k.shape),
        dv(fa::DType::F32, v.shape);
    HostTensor lse(fa::DType::F32, {b, hq, nq});
    HostTensor bias(biasDType, {1, hq, nq, nk}), dbias(biasDType, bias.shape);
    for (HostTensor *t : {&q, &k, &v, &dout, &bias})
      t->randomize(rng);
    fa::TensorView lseView = lse.view(), biasView = bias.view(),
                   dbiasView = dbias.view();
    kernel.forward(q.view(), k.view(), v.view(), o.view(), &lseView, &biasView);
    kernel.backward(q.view(), k.view(), v.view(), o.view(), dout.view(),
                    lse.view(), dq.view(), dk.view(), dv.view(), &biasView,
                    nullptr, 0, nullptr, &dbiasView);

    fa::support::AttentionOptions options;
    options.causal = fa::support::CausalMask::BottomRight;
    options.bias = bias.ref();
    options.biasPrecision = precisionOf(biasDType);
    std::vector<double> gotDbias = dbias.read();
    EXPECT_TRUE(backwardIsAccurate(q.ref(), k.ref(), v.ref(), dout.ref(),
                                   options, fa::support::Precision::F32,
                                   dq.read(), dk.read(), dv.read(), &gotDbias));
  }
  // dbias needs a bias, of the compiled shape.
  fa::Kernel plain = fa::compile(specOf(fa::DType::F32, 8));
  HostTensor t(fa::DType::F32, {1, 1, 4, 8}), l(fa::DType::F32, {1, 1, 4}),
      g(fa::DType::F32, {1, 1, 4, 8}), db(fa::DType::F32, {1, 1, 4, 4});
  fa::TensorView dbView = db.view();
  EXPECT_EQ(errorOf([&] {
              plain.backward(t.view(), t.view(), t.view(), t.view(), t.view(),
                             l.view(), g.view(), g.view(), g.view(), nullptr,
                             nullptr, 0, nullptr, &dbView);
            }),
            "fa::Kernel::backward: dbias needs a bias, but the kernel was "
            "compiled without one");
}

TEST(BackwardTest, ScoreModAndMaskMod) {
  fa::AttentionSpec spec = specOf(fa::DType::F32, 16);
  // score * (1 + h / 4) - 0.05 * (i - j): d score_mod / d score depends on h.
  spec.scoreMod = R"mlir(
    %hi = arith.index_cast %h : index to i64
    %hf = arith.sitofp %hi : i64 to f32
    %quarter = arith.constant 0.25 : f32
    %one = arith.constant 1.0 : f32
    %hs = arith.mulf %hf, %quarter : f32
    %factor = arith.addf %hs, %one : f32
    %scaled = arith.mulf %score, %factor : f32
    %qi = arith.index_cast %q_idx : index to i64
    %ki = arith.index_cast %kv_idx : index to i64
    %d = arith.subi %qi, %ki : i64
    %df = arith.sitofp %d : i64 to f32
    %c = arith.constant 0.05 : f32
    %m = arith.mulf %df, %c : f32
    %r = arith.subf %scaled, %m : f32
    fa.yield %r : f32
  )mlir";
  // Documents of 8 tokens.
  spec.maskMod = R"mlir(
    %c8 = arith.constant 8 : index
    %dq = arith.divui %q_idx, %c8 : index
    %dk = arith.divui %kv_idx, %c8 : index
    %same = arith.cmpi eq, %dq, %dk : index
    fa.yield %same : i1
  )mlir";
  fa::Kernel kernel = fa::compile(spec);
  fa::support::AttentionOptions options;
  options.scoreMod = [](double s, int64_t, int64_t h, int64_t i, int64_t j) {
    return s * (1.0 + 0.25 * static_cast<double>(h)) -
           0.05 * static_cast<double>(i - j);
  };
  options.maskMod = [](int64_t, int64_t, int64_t i, int64_t j) {
    return i / 8 == j / 8;
  };
  checkBackward(kernel, {1, 3, 3, 29, 29, 16, 16}, options);
}

TEST(BackwardTest, DropoutWithTheForwardsSeed) {
  fa::AttentionSpec spec = specOf(fa::DType::F32, 16);
  spec.dropoutP = 0.2;
  spec.causal = fa::Causal::BottomRight;
  fa::Kernel kernel = fa::compile(spec);
  fa::support::AttentionOptions options;
  options.dropoutP = 0.2;
  options.dropoutSeed = 99;
  options.causal = fa::support::CausalMask::BottomRight;
  checkBackward(kernel, {2, 2, 1, 21, 27, 16, 16}, options, nullptr, nullptr,
                99);
}

TEST(BackwardTest, CopiesShareTheLazilyCompiledBackward) {
  fa::Kernel kernel = fa::compile(specOf(fa::DType::F32, 8));
  fa::Kernel copy = kernel;
  checkBackward(kernel, {1, 2, 2, 9, 9, 8, 8}, {});
  checkBackward(copy, {2, 1, 1, 5, 12, 8, 8}, {});
}

TEST(BackwardTest, ThreadsShareOneLazyCompile) {
  // Four threads call backward on a kernel that has none yet: one compiles
  // it, all run it, and all get the same bits.
  fa::Kernel kernel = fa::compile(specOf(fa::DType::F32, 8));
  const int64_t b = 1, h = 2, n = 12, d = 8;
  std::mt19937 rng(6);
  HostTensor q(fa::DType::F32, {b, h, n, d}), k(fa::DType::F32, q.shape),
      v(fa::DType::F32, q.shape), o(fa::DType::F32, q.shape),
      dout(fa::DType::F32, q.shape), lse(fa::DType::F32, {b, h, n});
  for (HostTensor *t : {&q, &k, &v, &dout})
    t->randomize(rng);
  fa::TensorView lseView = lse.view();
  kernel.forward(q.view(), k.view(), v.view(), o.view(), &lseView);
  std::vector<std::vector<HostTensor>> grads(4);
  std::vector<std::string> errors(4);
  std::vector<std::thread> threads;
  for (int t = 0; t < 4; ++t) {
    for (int i = 0; i < 3; ++i)
      grads[t].emplace_back(fa::DType::F32, q.shape);
    threads.emplace_back([&, t] {
      errors[t] = errorOf([&] {
        kernel.backward(q.view(), k.view(), v.view(), o.view(), dout.view(),
                        lse.view(), grads[t][0].view(), grads[t][1].view(),
                        grads[t][2].view());
      });
    });
  }
  for (std::thread &thread : threads)
    thread.join();
  for (int t = 0; t < 4; ++t) {
    EXPECT_EQ(errors[t], "(no fa::Error)");
    for (int i = 0; i < 3; ++i)
      EXPECT_EQ(grads[t][i].bytes, grads[0][i].bytes);
  }
}

TEST(BackwardTest, RejectsBadArgumentsBeforeRunning) {
  fa::Kernel kernel = fa::compile(specOf(fa::DType::F16, 16));
  HostTensor q(fa::DType::F16, {1, 4, 6, 16}), k(fa::DType::F16, {1, 2, 5, 16}),
      v(fa::DType::F16, {1, 2, 5, 16}), o(fa::DType::F16, {1, 4, 6, 16}),
      dout(fa::DType::F16, {1, 4, 6, 16}), dq(fa::DType::F16, {1, 4, 6, 16}),
      dk(fa::DType::F16, {1, 2, 5, 16}), dv(fa::DType::F16, {1, 2, 5, 16});
  HostTensor lse(fa::DType::F32, {1, 4, 6});
  HostTensor wrongDtype(fa::DType::F32, {1, 4, 6, 16});
  HostTensor lse16(fa::DType::F16, {1, 4, 6});
  HostTensor dkWrongHeads(fa::DType::F16, {1, 4, 5, 16});
  HostTensor doutShort(fa::DType::F16, {1, 4, 5, 16});
  HostTensor lse3(fa::DType::F32, {1, 3, 6});
  auto backward = [&](const fa::TensorView &q_, const fa::TensorView &out_,
                      const fa::TensorView &dout_, const fa::TensorView &lse_,
                      const fa::TensorView &dq_, const fa::TensorView &dk_,
                      const fa::TensorView *bias = nullptr) {
    return errorOf([&] {
      kernel.backward(q_, k.view(), v.view(), out_, dout_, lse_, dq_, dk_,
                      dv.view(), bias);
    });
  };
  EXPECT_EQ(backward(wrongDtype.view(), o.view(), dout.view(), lse.view(),
                     dq.view(), dk.view()),
            "fa::Kernel::backward: q must have dtype f16, got f32");
  EXPECT_EQ(backward(q.view(), wrongDtype.view(), dout.view(), lse.view(),
                     dq.view(), dk.view()),
            "fa::Kernel::backward: out must have dtype f16, got f32");
  EXPECT_EQ(backward(q.view(), o.view(), doutShort.view(), lse.view(),
                     dq.view(), dk.view()),
            "fa::Kernel::backward: dout sequence length (dout.shape[2]): "
            "expected 6, got 5");
  EXPECT_EQ(backward(q.view(), o.view(), dout.view(), lse16.view(), dq.view(),
                     dk.view()),
            "fa::Kernel::backward: lse must have dtype f32, got f16");
  EXPECT_EQ(backward(q.view(), o.view(), dout.view(), lse3.view(), dq.view(),
                     dk.view()),
            "fa::Kernel::backward: lse heads (lse.shape[1]): expected 4, got "
            "3");
  EXPECT_EQ(backward(q.view(), o.view(), dout.view(), lse.view(),
                     wrongDtype.view(), dk.view()),
            "fa::Kernel::backward: dq must have dtype f16, got f32");
  EXPECT_EQ(backward(q.view(), o.view(), dout.view(), lse.view(), dq.view(),
                     dkWrongHeads.view()),
            "fa::Kernel::backward: dk heads (dk.shape[1]): expected 2, got 4");
  fa::TensorView broadcastDq = dq.view();
  broadcastDq.strides = {0, 0, 0, 1};
  EXPECT_EQ(backward(q.view(), o.view(), dout.view(), lse.view(), broadcastDq,
                     dk.view()),
            "fa::Kernel::backward: dq is an output but has stride 0 in dim 1 "
            "(its elements would overlap)");
  fa::TensorView bias = lse.view();
  EXPECT_EQ(backward(q.view(), o.view(), dout.view(), lse.view(), dq.view(),
                     dk.view(), &bias),
            "fa::Kernel::backward: the kernel was compiled without a bias; "
            "recompile with spec.bias = true");
  // dQ written over dO would race with the reads of dO.
  EXPECT_EQ(backward(q.view(), o.view(), dout.view(), lse.view(), dout.view(),
                     dk.view())
                .rfind("fa::Kernel::backward: argument 6 of @fa_backward (an "
                       "output) overlaps argument 4",
                       0),
            0u);
}

TEST(BackwardTest, GpuBackwardChecksItsViews) {
  fa::AttentionSpec spec = specOf(fa::DType::BF16, 64);
  spec.causal = fa::Causal::BottomRight;
  fa::Kernel kernel = fa::compile(spec, "sm_80");
  HostTensor t(fa::DType::BF16, {1, 2, 8, 64}), lse(fa::DType::F32, {1, 2, 8});
  EXPECT_EQ(errorOf([&] {
              kernel.backward(t.view(), t.view(), t.view(), t.view(), t.view(),
                              lse.view(), t.view(), t.view(), t.view());
            }),
            "fa::Kernel::backward: q is a CPU tensor, but the kernel was "
            "compiled for a GPU");
  // Without a GPU, the backward compiles (PTX) on the first call and fails
  // to load, before any view is read.
  namespace rt = fa::runtime;
  rt::Expected<rt::Device> device = rt::Device::get(0);
  if (device.ok())
    return;
  fa::TensorView x = t.view(), l = lse.view();
  x.device = l.device = fa::Device::CUDA;
  EXPECT_EQ(errorOf([&] { kernel.backward(x, x, x, x, x, l, x, x, x); }),
            "fa::Kernel::backward: " + device.getMessage());
}

TEST(BackwardTest, RunsOnTheGpu) {
  namespace rt = fa::runtime;
  rt::Expected<rt::Device> device = rt::Device::get(0);
  if (device.failed())
    FA_GPU_UNAVAILABLE(device.getMessage());
  for (fa::DType dtype : {fa::DType::BF16, fa::DType::F16}) {
    fa::AttentionSpec spec = specOf(dtype, 64);
    spec.causal = fa::Causal::BottomRight;
    fa::Kernel kernel = fa::compile(spec, "auto");
    ASSERT_NE(kernel.target(), "host");
    const int64_t b = 2, hq = 4, hkv = 2, nq = 100, nk = 150, d = 64;
    std::mt19937 rng(5);
    HostTensor q(dtype, {b, hq, nq, d}), k(dtype, {b, hkv, nk, d}),
        v(dtype, {b, hkv, nk, d}), o(dtype, {b, hq, nq, d}),
        dout(dtype, {b, hq, nq, d}), dq(dtype, q.shape), dk(dtype, k.shape),
        dv(dtype, v.shape);
    HostTensor lse(fa::DType::F32, {b, hq, nq});
    for (HostTensor *t : {&q, &k, &v, &dout})
      t->randomize(rng);
    std::vector<rt::DeviceBuffer> buffers;
    auto upload = [&](HostTensor &t) {
      rt::Expected<rt::DeviceBuffer> buffer =
          rt::DeviceBuffer::allocate(device.value(), t.bytes.size());
      EXPECT_TRUE(buffer.ok()) << buffer.getMessage();
      EXPECT_TRUE(
          buffer.value().copyFromHost(t.bytes.data(), t.bytes.size()).ok());
      buffers.push_back(std::move(buffer.value()));
      fa::TensorView view = t.view();
      view.data = reinterpret_cast<void *>(buffers.back().getPointer());
      view.device = fa::Device::CUDA;
      return view;
    };
    std::vector<HostTensor *> all = {&q,   &k,  &v,  &o, &dout,
                                     &lse, &dq, &dk, &dv};
    std::vector<fa::TensorView> views;
    buffers.reserve(all.size());
    for (HostTensor *t : all)
      views.push_back(upload(*t));
    kernel.forward(views[0], views[1], views[2], views[3], &views[5]);
    kernel.backward(views[0], views[1], views[2], views[3], views[4], views[5],
                    views[6], views[7], views[8]);
    ASSERT_TRUE(device.value().synchronize().ok());
    for (int i : {6, 7, 8})
      ASSERT_TRUE(buffers[i]
                      .copyToHost(all[i]->bytes.data(), all[i]->bytes.size())
                      .ok());

    fa::support::AttentionOptions options;
    options.causal = fa::support::CausalMask::BottomRight;
    EXPECT_TRUE(backwardIsAccurate(q.ref(), k.ref(), v.ref(), dout.ref(),
                                   options, precisionOf(dtype), dq.read(),
                                   dk.read(), dv.read()));
  }
}

TEST(BackwardTest, RunsOnTheGpuWithBiasAlibiAndDBias) {
  namespace rt = fa::runtime;
  rt::Expected<rt::Device> device = rt::Device::get(0);
  if (device.failed())
    FA_GPU_UNAVAILABLE(device.getMessage());
  // A bf16 bias broadcast over the batch [1, Hq, Nq, Nk] and its gradient
  // (summed over the batch by the dbias kernel), ALiBi [Hq].
  fa::DType dtype = fa::DType::BF16;
  fa::AttentionSpec spec = specOf(dtype, 64);
  spec.causal = fa::Causal::BottomRight;
  spec.bias = true;
  spec.biasDType = fa::DType::BF16;
  spec.biasBroadcast = {true, false, false, false};
  spec.alibi = true;
  fa::Kernel kernel = fa::compile(spec, "auto");
  ASSERT_NE(kernel.target(), "host");
  const int64_t b = 2, hq = 4, hkv = 2, nq = 100, nk = 150, d = 64;
  std::mt19937 rng(6);
  HostTensor q(dtype, {b, hq, nq, d}), k(dtype, {b, hkv, nk, d}),
      v(dtype, {b, hkv, nk, d}), o(dtype, {b, hq, nq, d}),
      dout(dtype, {b, hq, nq, d}), dq(dtype, q.shape), dk(dtype, k.shape),
      dv(dtype, v.shape), bias(fa::DType::BF16, {1, hq, nq, nk}),
      dbias(fa::DType::BF16, bias.shape);
  HostTensor lse(fa::DType::F32, {b, hq, nq}), slopes(fa::DType::F32, {hq});
  for (HostTensor *t : {&q, &k, &v, &dout, &bias})
    t->randomize(rng);
  for (int64_t h = 0; h < hq; ++h)
    slopes.set(h, 0.05 * double(h + 1));
  std::vector<rt::DeviceBuffer> buffers;
  std::vector<HostTensor *> all = {&q,  &k,  &v,  &o,    &dout,   &lse,
                                   &dq, &dk, &dv, &bias, &slopes, &dbias};
  buffers.reserve(all.size());
  std::vector<fa::TensorView> views;
  for (HostTensor *t : all) {
    rt::Expected<rt::DeviceBuffer> buffer =
        rt::DeviceBuffer::allocate(device.value(), t->bytes.size());
    ASSERT_TRUE(buffer.ok()) << buffer.getMessage();
    ASSERT_TRUE(
        buffer.value().copyFromHost(t->bytes.data(), t->bytes.size()).ok());
    buffers.push_back(std::move(buffer.value()));
    fa::TensorView view = t->view();
    view.data = reinterpret_cast<void *>(buffers.back().getPointer());
    view.device = fa::Device::CUDA;
    views.push_back(view);
  }
  kernel.forward(views[0], views[1], views[2], views[3], &views[5], &views[9],
                 &views[10]);
  kernel.backward(views[0], views[1], views[2], views[3], views[4], views[5],
                  views[6], views[7], views[8], &views[9], &views[10], 0,
                  nullptr, &views[11]);
  ASSERT_TRUE(device.value().synchronize().ok());
  for (int i : {6, 7, 8, 11})
    ASSERT_TRUE(
        buffers[i].copyToHost(all[i]->bytes.data(), all[i]->bytes.size()).ok());

  fa::support::AttentionOptions options;
  options.causal = fa::support::CausalMask::BottomRight;
  options.bias = bias.ref();
  options.alibiSlopes = slopes.ref();
  options.biasPrecision = precisionOf(bias.dtype);
  std::vector<double> gotDbias = dbias.read();
  EXPECT_TRUE(backwardIsAccurate(q.ref(), k.ref(), v.ref(), dout.ref(), options,
                                 precisionOf(dtype), dq.read(), dk.read(),
                                 dv.read(), &gotDbias));
}

/// Views on cuda:1 run on device 1 (its primary context, the caller's
/// current context kept), the backward in a workspace of the caller's; the
/// gradients against both references. Skipped with fewer than two GPUs.
TEST(BackwardTest, SecondGpuWithAWorkspace) {
  namespace rt = fa::runtime;
  rt::Expected<rt::Device> first = rt::Device::get(0);
  if (first.failed())
    FA_GPU_UNAVAILABLE(first.getMessage());
  int count = rt::Driver::get().getDeviceCount();
  if (count < 2)
    GTEST_SKIP() << "needs 2 CUDA devices, found " << count;
  rt::Device device = rt::Device::get(1).take();
  fa::DType dtype = fa::DType::BF16;
  fa::AttentionSpec spec = specOf(dtype, 64);
  spec.causal = fa::Causal::BottomRight;
  spec.returnLse = true;
  fa::Kernel kernel = fa::compile(spec, "cuda:1");
  const int64_t b = 2, hq = 4, hkv = 2, nq = 100, nk = 150, d = 64;
  std::mt19937 rng(8);
  HostTensor q(dtype, {b, hq, nq, d}), k(dtype, {b, hkv, nk, d}),
      v(dtype, {b, hkv, nk, d}), o(dtype, {b, hq, nq, d}),
      dout(dtype, {b, hq, nq, d}), dq(dtype, q.shape), dk(dtype, k.shape),
      dv(dtype, v.shape);
  HostTensor lse(fa::DType::F32, {b, hq, nq});
  for (HostTensor *t : {&q, &k, &v, &dout})
    t->randomize(rng);
  std::vector<rt::DeviceBuffer> buffers;
  std::vector<HostTensor *> all = {&q, &k, &v, &o, &dout, &lse, &dq, &dk, &dv};
  buffers.reserve(all.size() + 1);
  std::vector<fa::TensorView> views;
  for (HostTensor *t : all) {
    rt::Expected<rt::DeviceBuffer> buffer =
        rt::DeviceBuffer::allocate(device, t->bytes.size());
    ASSERT_TRUE(buffer.ok()) << buffer.getMessage();
    ASSERT_TRUE(
        buffer.value().copyFromHost(t->bytes.data(), t->bytes.size()).ok());
    buffers.push_back(std::move(buffer.value()));
    fa::TensorView view = t->view();
    view.data = reinterpret_cast<void *>(buffers.back().getPointer());
    view.device = fa::Device::CUDA;
    view.deviceIndex = 1;
    views.push_back(view);
  }
  size_t bytes = kernel.backwardWorkspaceBytes(b, hq, nq);
  buffers.push_back(rt::DeviceBuffer::allocate(device, bytes).take());
  fa::TensorView workspace{
      reinterpret_cast<void *>(buffers.back().getPointer()),
      fa::DType::I8,
      {int64_t(bytes)},
      {},
      fa::Device::CUDA,
      1};

  // The caller's current context is device 0's, and stays so.
  ASSERT_TRUE(first.value().makeCurrent().ok());
  kernel.forward(views[0], views[1], views[2], views[3], &views[5]);
  kernel.backward(views[0], views[1], views[2], views[3], views[4], views[5],
                  views[6], views[7], views[8], nullptr, nullptr, 0, nullptr,
                  nullptr, {}, &workspace);
  rt::cu::Context current = nullptr;
  ASSERT_EQ(rt::Driver::get().api().cuCtxGetCurrent(&current),
            rt::cu::CUDA_SUCCESS);
  EXPECT_EQ(current, first.value().getContext());
  ASSERT_TRUE(device.synchronize().ok());
  for (int i : {6, 7, 8})
    ASSERT_TRUE(
        buffers[i].copyToHost(all[i]->bytes.data(), all[i]->bytes.size()).ok());
  fa::support::AttentionOptions options;
  options.causal = fa::support::CausalMask::BottomRight;
  EXPECT_TRUE(backwardIsAccurate(q.ref(), k.ref(), v.ref(), dout.ref(), options,
                                 precisionOf(dtype), dq.read(), dk.read(),
                                 dv.read()));

  // Q on device 1, K on device 0: named, nothing runs.
  fa::TensorView k0 = views[1];
  k0.deviceIndex = 0;
  EXPECT_EQ(errorOf([&] {
              kernel.forward(views[0], k0, views[2], views[3], &views[5]);
            }),
            "fa::Kernel::forward: k is on cuda:0 but q is on cuda:1");
}

} // namespace
