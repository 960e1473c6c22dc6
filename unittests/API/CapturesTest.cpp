//===- CapturesTest.cpp - captured tensors through fa.h -------------------===//
//
// Tensors read by score_mod / mask_mod (spec.captures, passed as views to
// forward and backward), checked against the float64 reference with the
// same tables read in C++.
//
//===----------------------------------------------------------------------===//

#include "Accuracy.h"
#include "GpuTest.h"
#include "TestTensors.h"

#include "fa/Runtime/Cuda.h"
#include "fa/Support/Reference.h"
#include "fa/fa.h"

#include "gtest/gtest.h"

#include <random>

namespace {

using fa::testing::backwardIsAccurate;
using fa::testing::errorOf;
using fa::testing::forwardIsAccurate;
using fa::testing::HostTensor;
using fa::testing::precisionOf;

constexpr int64_t kB = 2, kH = 4, kN = 45, kD = 16;

/// Per-token document ids (documents of 1 to 9 tokens) and a per-head table
/// stored with a stride of 2 (every other float), so that the view's strides
/// are honoured.
struct Tables {
  std::vector<int32_t> doc;
  std::vector<float> tabStorage;
  Tables() {
    std::mt19937 rng(3);
    int32_t id = 0;
    while (static_cast<int64_t>(doc.size()) < kN) {
      int64_t len = 1 + rng() % 9;
      for (int64_t i = 0; i < len && static_cast<int64_t>(doc.size()) < kN; ++i)
        doc.push_back(id);
      ++id;
    }
    for (int64_t h = 0; h < kH; ++h) {
      tabStorage.push_back(0.1f * static_cast<float>(h + 1));
      tabStorage.push_back(1e9f); // never read
    }
  }
  float tab(int64_t h) const { return tabStorage[2 * h]; }
  std::vector<fa::TensorView> views() {
    return {{doc.data(), fa::DType::I32, {kN}, {}, fa::Device::CPU},
            {tabStorage.data(), fa::DType::F32, {kH}, {2}, fa::Device::CPU}};
  }
  /// The variant in the reference: score -= tab[h] * |i - j|; keep j <= i
  /// in the same document.
  fa::support::AttentionOptions options() const {
    fa::support::AttentionOptions o;
    o.scoreMod = [this](double s, int64_t, int64_t h, int64_t i, int64_t j) {
      return s - tab(h) * std::abs(static_cast<double>(i - j));
    };
    o.maskMod = [this](int64_t, int64_t, int64_t i, int64_t j) {
      return j <= i && doc[i] == doc[j];
    };
    return o;
  }
};

fa::AttentionSpec captureSpec() {
  fa::AttentionSpec spec;
  spec.dtype = fa::DType::F32;
  spec.headDim = kD;
  spec.returnLse = true;
  spec.captures = {{fa::DType::I32, 1}, {fa::DType::F32, 1}};
  spec.scoreMod = R"mlir(
    %t = tensor.extract %cap1[%h] : tensor<?xf32>
    %d = arith.subi %q_idx, %kv_idx : index
    %di = arith.index_cast %d : index to i64
    %df = arith.sitofp %di : i64 to f32
    %a = math.absf %df : f32
    %p = arith.mulf %t, %a : f32
    %r = arith.subf %score, %p : f32
    fa.yield %r : f32
  )mlir";
  spec.maskMod = R"mlir(
    %di = tensor.extract %cap0[%q_idx] : tensor<?xi32>
    %dj = tensor.extract %cap0[%kv_idx] : tensor<?xi32>
    %same = arith.cmpi eq, %di, %dj : i32
    %causal = arith.cmpi ule, %kv_idx, %q_idx : index
    %keep = arith.andi %same, %causal : i1
    fa.yield %keep : i1
  )mlir";
  return spec;
}

TEST(CapturesTest, ForwardAndBackwardReadThem) {
  fa::Kernel kernel = fa::compile(captureSpec());
  EXPECT_NE(kernel.mlir().find("captures(%capture0, %capture1 : tensor<?xi32>, "
                               "tensor<?xf32>)"),
            std::string::npos);
  Tables tables;
  std::vector<fa::TensorView> captures = tables.views();
  std::mt19937 rng(5);
  HostTensor q(fa::DType::F32, {kB, kH, kN, kD}),
      k(fa::DType::F32, {kB, kH, kN, kD}), v(fa::DType::F32, {kB, kH, kN, kD}),
      o(fa::DType::F32, {kB, kH, kN, kD}),
      dout(fa::DType::F32, {kB, kH, kN, kD});
  HostTensor lse(fa::DType::F32, {kB, kH, kN});
  HostTensor dq(fa::DType::F32, q.shape), dk(fa::DType::F32, k.shape),
      dv(fa::DType::F32, v.shape);
  for (HostTensor *t : {&q, &k, &v, &dout})
    t->randomize(rng);
  fa::TensorView lseView = lse.view();
  kernel.forward(q.view(), k.view(), v.view(), o.view(), &lseView, nullptr,
                 nullptr, 0, nullptr, captures);
  kernel.backward(q.view(), k.view(), v.view(), o.view(), dout.view(),
                  lse.view(), dq.view(), dk.view(), dv.view(), nullptr, nullptr,
                  0, nullptr, nullptr, captures);

  fa::support::AttentionOptions options = tables.options();
  const fa::support::Precision precision = precisionOf(q.dtype);
  std::vector<double> gotLse = lse.read();
  EXPECT_TRUE(forwardIsAccurate(q.ref(), k.ref(), v.ref(), options, precision,
                                o.read(), &gotLse));
  EXPECT_TRUE(backwardIsAccurate(q.ref(), k.ref(), v.ref(), dout.ref(), options,
                                 precision, dq.read(), dk.read(), dv.read()));

  // The tables matter: other document ids give another O.
  std::vector<int32_t> oneDoc(kN, 0);
  captures[0].data = oneDoc.data();
  HostTensor o2(fa::DType::F32, o.shape);
  kernel.forward(q.view(), k.view(), v.view(), o2.view(), &lseView, nullptr,
                 nullptr, 0, nullptr, captures);
  EXPECT_FALSE(forwardIsAccurate(q.ref(), k.ref(), v.ref(), options, precision,
                                 o2.read()));
}

TEST(CapturesTest, ForwardAndBackwardReadThemOnTheGpu) {
  // The same variant in bf16 at D = 64 on the GPU: the ids have exactly N
  // entries (ragged tiles read them clamped in range), the table a stride
  // of 2.
  namespace rt = fa::runtime;
  rt::Expected<rt::Device> device = rt::Device::get(0);
  if (device.failed())
    FA_GPU_UNAVAILABLE(device.getMessage());
  fa::DType dtype = fa::DType::BF16;
  const int64_t d = 64;
  fa::AttentionSpec spec = captureSpec();
  spec.dtype = dtype;
  spec.headDim = d;
  fa::Kernel kernel = fa::compile(spec, "auto");
  ASSERT_NE(kernel.target(), "host");
  Tables tables;
  std::mt19937 rng(7);
  HostTensor q(dtype, {kB, kH, kN, d}), k(dtype, {kB, kH, kN, d}),
      v(dtype, {kB, kH, kN, d}), o(dtype, {kB, kH, kN, d}),
      dout(dtype, {kB, kH, kN, d}), dq(dtype, q.shape), dk(dtype, k.shape),
      dv(dtype, v.shape);
  HostTensor lse(fa::DType::F32, {kB, kH, kN});
  for (HostTensor *t : {&q, &k, &v, &dout})
    t->randomize(rng);
  std::vector<HostTensor *> all = {&q, &k, &v, &o, &dout, &lse, &dq, &dk, &dv};
  std::vector<rt::DeviceBuffer> buffers;
  auto upload = [&](const void *data, size_t bytes) {
    rt::Expected<rt::DeviceBuffer> buffer =
        rt::DeviceBuffer::allocate(device.value(), bytes);
    EXPECT_TRUE(buffer.ok()) << buffer.getMessage();
    EXPECT_TRUE(buffer.value().copyFromHost(data, bytes).ok());
    buffers.push_back(std::move(buffer.value()));
    return reinterpret_cast<void *>(buffers.back().getPointer());
  };
  buffers.reserve(all.size() + 2);
  std::vector<fa::TensorView> views;
  for (HostTensor *t : all) {
    fa::TensorView view = t->view();
    view.data = upload(t->bytes.data(), t->bytes.size());
    view.device = fa::Device::CUDA;
    views.push_back(view);
  }
  std::vector<fa::TensorView> captures = tables.views();
  captures[0].data =
      upload(tables.doc.data(), tables.doc.size() * sizeof(int32_t));
  captures[1].data = upload(tables.tabStorage.data(),
                            tables.tabStorage.size() * sizeof(float));
  for (fa::TensorView &c : captures)
    c.device = fa::Device::CUDA;
  kernel.forward(views[0], views[1], views[2], views[3], &views[5], nullptr,
                 nullptr, 0, nullptr, captures);
  kernel.backward(views[0], views[1], views[2], views[3], views[4], views[5],
                  views[6], views[7], views[8], nullptr, nullptr, 0, nullptr,
                  nullptr, captures);
  ASSERT_TRUE(device.value().synchronize().ok());
  for (int i : {3, 5, 6, 7, 8})
    ASSERT_TRUE(
        buffers[i].copyToHost(all[i]->bytes.data(), all[i]->bytes.size()).ok());

  fa::support::AttentionOptions options = tables.options();
  const fa::support::Precision precision = precisionOf(q.dtype);
  std::vector<double> gotLse = lse.read();
  EXPECT_TRUE(forwardIsAccurate(q.ref(), k.ref(), v.ref(), options, precision,
                                o.read(), &gotLse));
  EXPECT_TRUE(backwardIsAccurate(q.ref(), k.ref(), v.ref(), dout.ref(), options,
                                 precision, dq.read(), dk.read(), dv.read()));
}

TEST(CapturesTest, RejectsBadCaptureViews) {
  fa::Kernel kernel = fa::compile(captureSpec());
  Tables tables;
  HostTensor q(fa::DType::F32, {1, kH, 8, kD}), o(fa::DType::F32, q.shape);
  HostTensor lse(fa::DType::F32, {1, kH, 8});
  fa::TensorView lseView = lse.view();
  auto forward = [&](const std::vector<fa::TensorView> &captures) {
    return errorOf([&] {
      kernel.forward(q.view(), q.view(), q.view(), o.view(), &lseView, nullptr,
                     nullptr, 0, nullptr, captures);
    });
  };
  std::vector<fa::TensorView> views = tables.views();
  EXPECT_EQ(forward({views[0]}), "fa::Kernel::forward: the kernel was "
                                 "compiled with 2 captures, got 1");
  std::vector<fa::TensorView> wrongDType = views;
  wrongDType[0].dtype = fa::DType::I64;
  EXPECT_EQ(forward(wrongDType),
            "fa::Kernel::forward: capture 0 must have dtype i32, got i64");
  std::vector<fa::TensorView> wrongRank = views;
  wrongRank[1].shape = {2, 2};
  wrongRank[1].strides = {};
  EXPECT_EQ(
      forward(wrongRank),
      "fa::Kernel::forward: capture 1 must have rank 1, got shape [2, 2]");
  std::vector<fa::TensorView> onGpu = views;
  onGpu[1].device = fa::Device::CUDA;
  EXPECT_EQ(forward(onGpu), "fa::Kernel::forward: capture 1 is a CUDA tensor, "
                            "but the kernel was compiled for the host");
  std::vector<fa::TensorView> noData = views;
  noData[0].data = nullptr;
  EXPECT_EQ(forward(noData),
            "fa::Kernel::forward: capture 0 has no data (null pointer)");
  HostTensor dq(fa::DType::F32, q.shape);
  EXPECT_EQ(errorOf([&] {
              kernel.backward(q.view(), q.view(), q.view(), o.view(), o.view(),
                              lse.view(), dq.view(), dq.view(), dq.view());
            }),
            "fa::Kernel::backward: the kernel was compiled with 2 captures, "
            "got 0");
}

TEST(CapturesTest, RejectsBadCaptureSpecs) {
  fa::AttentionSpec spec = captureSpec();
  spec.captures[1].rank = 0;
  EXPECT_EQ(errorOf([&] { fa::compile(spec); }),
            "fa::compile: capture 1 must have rank >= 1, got 0");
  spec = captureSpec();
  spec.dtype = fa::DType::I32;
  EXPECT_EQ(errorOf([&] { fa::compile(spec); }),
            "fa::compile: dtype must be f16, bf16 or f32, got i32");
  // A region that reads a capture the spec does not declare.
  spec = captureSpec();
  spec.captures.pop_back();
  EXPECT_EQ(errorOf([&] {
              fa::compile(spec);
            }).rfind("fa::compile: invalid attention spec\n<spec>:", 0),
            0u);
}

TEST(CapturesTest, CompilesForTheGpu) {
  // No device needed: the kernel takes each capture's pointer and strides
  // after its own 24 parameters (one pointer and one stride each), then the
  // key ranges (the mask_mod reads neither b nor h: fa-key-ranges) and the
  // TMA maps of Q, K and V (the warp-specialized kernel).
  fa::AttentionSpec spec = captureSpec();
  spec.dtype = fa::DType::BF16;
  spec.headDim = 64;
  fa::Kernel kernel = fa::compile(spec, "sm_90a");
  EXPECT_NE(kernel.ptx().find(".param .u64 fa_forward_0_param_27,"),
            std::string::npos);
  EXPECT_NE(kernel.ptx().find(
                ".param .u64 .ptr .global .align 1 fa_forward_0_param_28,"),
            std::string::npos);
  EXPECT_NE(
      kernel.ptx().find(".param .align 64 .b8 fa_forward_0_param_31[128]"),
      std::string::npos);
  EXPECT_EQ(kernel.ptx().find("fa_forward_0_param_32"), std::string::npos);
  EXPECT_NE(kernel.ptx().find(".entry fa_forward_0_key_ranges("),
            std::string::npos);
  EXPECT_NE(kernel.ptx().find("ld.global.nc.b32"), std::string::npos);
}

} // namespace
