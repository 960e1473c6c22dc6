//===- LimitsTest.cpp - Empty sequences and host threads ------------------===//
//
// Nk = 0 (O = 0, lse = -inf, dQ = 0) and Nq = 0 (nothing to write but dK =
// dV = 0), on the host and on the GPU, with the null data pointers empty
// tensors may have; more heads x batch than CUDA's grid.y allows (65535:
// the launches fold them into grid.y and grid.z) on the GPU; NaN inputs,
// which make NaN exactly the rows that see them; and host results that do
// not depend on the number of threads, bit for bit.
//
//===----------------------------------------------------------------------===//

#include "Accuracy.h"
#include "GpuTest.h"
#include "TestTensors.h"

#include "fa/Runtime/Cuda.h"
#include "fa/fa.h"

#include "gtest/gtest.h"

#include <cmath>
#include <limits>
#include <memory>
#include <random>

namespace {

using fa::testing::forwardIsAccurate;
using fa::testing::HostTensor;
using fa::testing::precisionOf;
namespace rt = fa::runtime;

/// Where a test's tensors live: host memory, or copies on a GPU.
class Place {
public:
  /// The host, or the first GPU (null when there is none).
  explicit Place(const rt::Device *device) : device(device) {}

  /// `t` as a view on this place; an empty tensor gets no data at all.
  fa::TensorView view(HostTensor &t) {
    fa::TensorView v = t.view();
    if (t.bytes.empty())
      v.data = nullptr;
    if (!device)
      return v;
    v.device = fa::Device::CUDA;
    if (t.bytes.empty())
      return v;
    buffers.push_back(std::make_unique<rt::DeviceBuffer>(
        rt::DeviceBuffer::allocate(*device, t.bytes.size()).take()));
    buffers.back()->copyFromHost(t.bytes.data(), t.bytes.size()).check();
    v.data = reinterpret_cast<void *>(buffers.back()->getPointer());
    hosts.push_back(&t);
    return v;
  }

  /// Brings every GPU copy back into its host tensor.
  void download() {
    if (!device)
      return;
    device->synchronize().check();
    for (size_t i = 0; i < hosts.size(); ++i)
      buffers[i]
          ->copyToHost(hosts[i]->bytes.data(), hosts[i]->bytes.size())
          .check();
  }

private:
  const rt::Device *device;
  std::vector<std::unique_ptr<rt::DeviceBuffer>> buffers;
  std::vector<HostTensor *> hosts;
};

HostTensor filled(fa::DType dtype, std::vector<int64_t> shape, double x) {
  HostTensor t(dtype, std::move(shape));
  for (size_t i = 0; i < t.values.size(); ++i)
    t.set(i, x);
  return t;
}

/// Nk = 0: every row sees no key, so O = 0 and lse = -inf, and dQ = 0.
void checkEmptyKeys(const fa::Kernel &kernel, const rt::Device *device) {
  fa::DType dtype = kernel.spec().dtype;
  int64_t d = kernel.spec().headDim;
  const int64_t b = 2, hq = 4, hkv = 2, nq = 70;
  std::mt19937 rng(3);
  HostTensor q(dtype, {b, hq, nq, d}), k(dtype, {b, hkv, 0, d}),
      v(dtype, {b, hkv, 0, d});
  q.randomize(rng);
  double nan = std::numeric_limits<double>::quiet_NaN();
  HostTensor o = filled(dtype, {b, hq, nq, d}, nan);
  HostTensor lse = filled(fa::DType::F32, {b, hq, nq}, nan);
  HostTensor dout(dtype, o.shape), dq = filled(dtype, q.shape, nan),
                                   dk(dtype, k.shape), dv(dtype, v.shape);
  dout.randomize(rng);
  Place place(device);
  fa::TensorView lseView = place.view(lse);
  fa::TensorView qv = place.view(q), kv = place.view(k), vv = place.view(v),
                 ov = place.view(o);
  kernel.forward(qv, kv, vv, ov, &lseView);
  kernel.backward(qv, kv, vv, ov, place.view(dout), lseView, place.view(dq),
                  place.view(dk), place.view(dv));
  place.download();
  for (size_t i = 0; i < o.values.size(); ++i)
    ASSERT_EQ(o.get(i), 0.0) << "O element " << i;
  for (size_t i = 0; i < lse.values.size(); ++i)
    ASSERT_EQ(lse.get(i), -std::numeric_limits<double>::infinity())
        << "lse element " << i;
  for (size_t i = 0; i < dq.values.size(); ++i)
    ASSERT_EQ(dq.get(i), 0.0) << "dQ element " << i;
}

/// Nq = 0: nothing to write in the forward; dK = dV = 0.
void checkEmptyQueries(const fa::Kernel &kernel, const rt::Device *device) {
  fa::DType dtype = kernel.spec().dtype;
  int64_t d = kernel.spec().headDim;
  const int64_t b = 2, hq = 4, hkv = 2, nk = 70;
  std::mt19937 rng(4);
  HostTensor q(dtype, {b, hq, 0, d}), k(dtype, {b, hkv, nk, d}),
      v(dtype, {b, hkv, nk, d});
  k.randomize(rng);
  v.randomize(rng);
  double nan = std::numeric_limits<double>::quiet_NaN();
  HostTensor o(dtype, q.shape), lse(fa::DType::F32, {b, hq, 0}),
      dout(dtype, q.shape), dq(dtype, q.shape);
  HostTensor dk = filled(dtype, k.shape, nan), dv = filled(dtype, v.shape, nan);
  Place place(device);
  fa::TensorView lseView = place.view(lse);
  fa::TensorView qv = place.view(q), kv = place.view(k), vv = place.view(v),
                 ov = place.view(o);
  kernel.forward(qv, kv, vv, ov, &lseView);
  kernel.backward(qv, kv, vv, ov, place.view(dout), lseView, place.view(dq),
                  place.view(dk), place.view(dv));
  place.download();
  for (size_t i = 0; i < dk.values.size(); ++i) {
    ASSERT_EQ(dk.get(i), 0.0) << "dK element " << i;
    ASSERT_EQ(dv.get(i), 0.0) << "dV element " << i;
  }
}

/// A NaN in Q's row 70 of head 0 and in K's key 100 of head 1 (top-left
/// causal, Nq = Nk = 150): O and lse are NaN exactly in the rows that see
/// one (row 70 of head 0; rows 100.. of head 1), and every other row is
/// bitwise that of a run without the NaNs (a row depends only on its
/// query and the keys it sees).
void checkNaNRows(const fa::Kernel &kernel, const rt::Device *device) {
  fa::DType dtype = kernel.spec().dtype;
  int64_t d = kernel.spec().headDim;
  const int64_t h = 2, n = 150, nanRow = 70, nanKey = 100;
  std::mt19937 rng(5);
  HostTensor q(dtype, {1, h, n, d}), k(dtype, {1, h, n, d}),
      v(dtype, {1, h, n, d});
  for (HostTensor *t : {&q, &k, &v})
    t->randomize(rng);
  auto run = [&](HostTensor &qIn, HostTensor &kIn) {
    HostTensor o(dtype, {1, h, n, d}), lse(fa::DType::F32, {1, h, n});
    Place place(device);
    fa::TensorView lseView = place.view(lse);
    kernel.forward(place.view(qIn), place.view(kIn), place.view(v),
                   place.view(o), &lseView);
    place.download();
    return std::make_pair(o, lse);
  };
  auto [cleanO, cleanLse] = run(q, k);
  double nan = std::numeric_limits<double>::quiet_NaN();
  q.set(nanRow * d + 3, nan);
  k.set((n + nanKey) * d + 5, nan);
  auto [o, lse] = run(q, k);
  for (int64_t head = 0; head < h; ++head) {
    for (int64_t row = 0; row < n; ++row) {
      bool nanExpected = head == 0 ? row == nanRow : row >= nanKey;
      int64_t r = head * n + row;
      EXPECT_EQ(std::isnan(lse.get(r)), nanExpected)
          << "lse of head " << head << " row " << row;
      if (!nanExpected)
        EXPECT_EQ(lse.get(r), cleanLse.get(r))
            << "lse of head " << head << " row " << row;
      for (int64_t c = 0; c < d; ++c) {
        size_t i = r * d + c;
        if (nanExpected)
          ASSERT_TRUE(std::isnan(o.get(i)))
              << "O of head " << head << " row " << row << " column " << c;
        else
          ASSERT_EQ(o.get(i), cleanO.get(i))
              << "O of head " << head << " row " << row << " column " << c;
      }
    }
  }
}

fa::AttentionSpec specOf(fa::DType dtype, int64_t d, fa::Causal causal) {
  fa::AttentionSpec spec;
  spec.dtype = dtype;
  spec.headDim = d;
  spec.causal = causal;
  spec.returnLse = true;
  return spec;
}

TEST(LimitsTest, EmptyKeysOnTheHost) {
  for (fa::Causal causal : {fa::Causal::None, fa::Causal::BottomRight})
    checkEmptyKeys(fa::compile(specOf(fa::DType::F32, 32, causal)), nullptr);
}

TEST(LimitsTest, EmptyQueriesOnTheHost) {
  for (fa::Causal causal : {fa::Causal::None, fa::Causal::TopLeft})
    checkEmptyQueries(fa::compile(specOf(fa::DType::F32, 32, causal)), nullptr);
}

TEST(LimitsTest, EmptyKeysOnTheGpu) {
  rt::Expected<rt::Device> device = rt::Device::get(0);
  if (device.failed())
    FA_GPU_UNAVAILABLE(device.getMessage());
  for (fa::Causal causal : {fa::Causal::None, fa::Causal::BottomRight}) {
    fa::Kernel kernel =
        fa::compile(specOf(fa::DType::BF16, 64, causal), "auto");
    ASSERT_NE(kernel.target(), "host");
    checkEmptyKeys(kernel, &device.value());
  }
}

TEST(LimitsTest, EmptyQueriesOnTheGpu) {
  rt::Expected<rt::Device> device = rt::Device::get(0);
  if (device.failed())
    FA_GPU_UNAVAILABLE(device.getMessage());
  for (fa::Causal causal : {fa::Causal::None, fa::Causal::TopLeft}) {
    fa::Kernel kernel =
        fa::compile(specOf(fa::DType::BF16, 64, causal), "auto");
    ASSERT_NE(kernel.target(), "host");
    checkEmptyQueries(kernel, &device.value());
  }
}

TEST(LimitsTest, NaNInputsGiveNaNRowsOnTheHost) {
  checkNaNRows(fa::compile(specOf(fa::DType::F32, 64, fa::Causal::TopLeft)),
               nullptr);
}

TEST(LimitsTest, NaNInputsGiveNaNRowsOnTheGpu) {
  rt::Expected<rt::Device> device = rt::Device::get(0);
  if (device.failed())
    FA_GPU_UNAVAILABLE(device.getMessage());
  fa::Kernel kernel =
      fa::compile(specOf(fa::DType::BF16, 64, fa::Causal::TopLeft), "auto");
  ASSERT_NE(kernel.target(), "host");
  checkNaNRows(kernel, &device.value());
}

/// 70000 query (and key/value) heads, twice over the batch: 140000 (b, h)
/// pairs, past CUDA's 65535 limit of grid.y (the forward's grid was
/// 1x70000x1, CUDA_ERROR_INVALID_VALUE) for the forward and each backward
/// kernel; small N and D. Against the float64 reference.
TEST(LimitsTest, SeventyThousandHeadsOnTheGpu) {
  rt::Expected<rt::Device> device = rt::Device::get(0);
  if (device.failed())
    FA_GPU_UNAVAILABLE(device.getMessage());
  fa::AttentionSpec spec = specOf(fa::DType::BF16, 32, fa::Causal::None);
  fa::Kernel kernel = fa::compile(spec, "auto");
  ASSERT_NE(kernel.target(), "host");
  const int64_t b = 2, h = 70000, nq = 5, nk = 7, d = 32;
  std::mt19937 rng(70000);
  HostTensor q(spec.dtype, {b, h, nq, d}), k(spec.dtype, {b, h, nk, d}),
      v(spec.dtype, {b, h, nk, d}), dout(spec.dtype, {b, h, nq, d});
  for (HostTensor *t : {&q, &k, &v, &dout})
    t->randomize(rng);
  double nan = std::numeric_limits<double>::quiet_NaN();
  HostTensor o = filled(spec.dtype, q.shape, nan),
             lse = filled(fa::DType::F32, {b, h, nq}, nan),
             dq = filled(spec.dtype, q.shape, nan),
             dk = filled(spec.dtype, k.shape, nan),
             dv = filled(spec.dtype, v.shape, nan);
  Place place(&device.value());
  fa::TensorView lseView = place.view(lse);
  fa::TensorView qv = place.view(q), kv = place.view(k), vv = place.view(v),
                 ov = place.view(o);
  kernel.forward(qv, kv, vv, ov, &lseView);
  kernel.backward(qv, kv, vv, ov, place.view(dout), lseView, place.view(dq),
                  place.view(dk), place.view(dv));
  place.download();
  fa::support::AttentionOptions options;
  std::vector<double> gotLse = lse.read();
  EXPECT_TRUE(forwardIsAccurate(q.ref(), k.ref(), v.ref(), options,
                                precisionOf(spec.dtype), o.read(), &gotLse));
  EXPECT_TRUE(fa::testing::backwardIsAccurate(
      q.ref(), k.ref(), v.ref(), dout.ref(), options, precisionOf(spec.dtype),
      dq.read(), dk.read(), dv.read()));
}

TEST(LimitsTest, HostThreadsAreSetAndRestored) {
  int defaultThreads = fa::numThreads();
  EXPECT_GE(defaultThreads, 1);
  fa::setNumThreads(3);
  EXPECT_EQ(fa::numThreads(), 3);
  fa::setNumThreads(0);
  EXPECT_EQ(fa::numThreads(), defaultThreads);
}

TEST(LimitsTest, HostResultsDoNotDependOnTheThreads) {
  // Causal GQA with a bias and its gradient: the backward's Dsum prologue
  // and its three loops (dK/dV, dQ, dBias) all shared among the threads.
  fa::AttentionSpec spec = specOf(fa::DType::F32, 32, fa::Causal::BottomRight);
  spec.bias = true;
  spec.biasBroadcast = {true, false, false, false};
  fa::Kernel kernel = fa::compile(spec);
  const int64_t b = 2, hq = 4, hkv = 2, nq = 150, nk = 130, d = 32;
  std::mt19937 rng(8);
  HostTensor q(fa::DType::F32, {b, hq, nq, d}),
      k(fa::DType::F32, {b, hkv, nk, d}), v(fa::DType::F32, {b, hkv, nk, d}),
      bias(fa::DType::F32, {1, hq, nq, nk}),
      dout(fa::DType::F32, {b, hq, nq, d});
  for (HostTensor *t : {&q, &k, &v, &bias, &dout})
    t->randomize(rng);
  struct Results {
    std::vector<uint8_t> o, lse, dq, dk, dv, dbias;
  };
  auto run = [&](int threads) {
    fa::setNumThreads(threads);
    HostTensor o(fa::DType::F32, {b, hq, nq, d}),
        lse(fa::DType::F32, {b, hq, nq}), dq(fa::DType::F32, q.shape),
        dk(fa::DType::F32, k.shape), dv(fa::DType::F32, v.shape),
        dbias(fa::DType::F32, bias.shape);
    fa::TensorView lseView = lse.view(), biasView = bias.view(),
                   dbiasView = dbias.view();
    kernel.forward(q.view(), k.view(), v.view(), o.view(), &lseView, &biasView);
    kernel.backward(q.view(), k.view(), v.view(), o.view(), dout.view(),
                    lse.view(), dq.view(), dk.view(), dv.view(), &biasView,
                    nullptr, 0, nullptr, &dbiasView);
    fa::setNumThreads(0);
    if (threads == 1) {
      fa::support::AttentionOptions options;
      options.causal = fa::support::CausalMask::BottomRight;
      options.bias = bias.ref();
      std::vector<double> gotLse = lse.read();
      EXPECT_TRUE(forwardIsAccurate(q.ref(), k.ref(), v.ref(), options,
                                    precisionOf(fa::DType::F32), o.read(),
                                    &gotLse));
    }
    return Results{o.bytes,  lse.bytes, dq.bytes,
                   dk.bytes, dv.bytes,  dbias.bytes};
  };
  Results one = run(1);
  for (int threads : {2, 3, 7}) {
    Results many = run(threads);
    EXPECT_EQ(one.o, many.o) << threads << " threads";
    EXPECT_EQ(one.lse, many.lse) << threads << " threads";
    EXPECT_EQ(one.dq, many.dq) << threads << " threads";
    EXPECT_EQ(one.dk, many.dk) << threads << " threads";
    EXPECT_EQ(one.dv, many.dv) << threads << " threads";
    EXPECT_EQ(one.dbias, many.dbias) << threads << " threads";
  }
}

} // namespace
