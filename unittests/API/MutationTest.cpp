//===- MutationTest.cpp - The accuracy checks catch wrong answers ---------===//
//
// Proves that the accuracy criterion (docs/accuracy.md) rejects answers that
// are slightly wrong. Each case runs a correct kernel of one variant, checks
// that its result passes against that variant's references, then checks the
// same result against the references of a mutated variant (the scale 1% off,
// the last key dropped, the causal alignment swapped, softcap or window off
// by one, another dropout seed, the GQA head mapping shifted by one) and
// requires it to fail; so does the result with one row zeroed. Forward (O
// and lse) and backward (dQ, dK, dV), on the host and, where there is one,
// on the GPU. Each case prints what it checked and the errors against the
// bounds.
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
#include <cstdio>
#include <functional>
#include <optional>
#include <random>
#include <string>
#include <vector>

namespace {

namespace rt = fa::runtime;
using fa::testing::HostTensor;

// bf16, the loosest dtype: the criterion must catch every mutation here.
constexpr fa::DType kDType = fa::DType::BF16;
// Nk = 4096: one key of 4096 moves O by about 1/sqrt(Nk) = 1.6%, within an
// absolute bf16 bound of 2e-2; Nq differs from Nk so that the two causal
// alignments differ.
constexpr int64_t kB = 1, kHq = 4, kHkv = 2, kNq = 128, kNk = 4096, kD = 64;

/// A variant as the kernel compiles it and as the reference computes it;
/// the last two fields exist in the reference alone (mutations).
struct Variant {
  fa::Causal causal = fa::Causal::None;
  std::optional<std::pair<int64_t, int64_t>> window;
  std::optional<double> softcap, scale;
  double dropoutP = 0;
  int64_t dropoutSeed = 0;
  /// The reference ignores key Nk - 1.
  bool dropLastKey = false;
  /// The reference's query head h reads kv head (h / G + 1) mod Hkv.
  bool shiftHeads = false;

  fa::AttentionSpec spec() const {
    fa::AttentionSpec s;
    s.dtype = kDType;
    s.headDim = kD;
    s.causal = causal;
    s.window = window;
    s.softcap = softcap;
    s.scale = scale;
    s.dropoutP = dropoutP;
    s.returnLse = true;
    return s;
  }
  fa::support::AttentionOptions options() const {
    fa::support::AttentionOptions o;
    o.causal = causal == fa::Causal::TopLeft ? fa::support::CausalMask::TopLeft
               : causal == fa::Causal::BottomRight
                   ? fa::support::CausalMask::BottomRight
                   : fa::support::CausalMask::None;
    if (window)
      o.window = fa::support::SlidingWindow{window->first, window->second};
    o.softcap = softcap;
    o.scale = scale;
    if (dropoutP > 0) {
      o.dropoutP = dropoutP;
      o.dropoutSeed = static_cast<uint64_t>(dropoutSeed);
    }
    if (dropLastKey)
      o.maskMod = [](int64_t, int64_t, int64_t, int64_t j) {
        return j != kNk - 1;
      };
    o.numThreads = 0;
    return o;
  }
};

struct Mutation {
  const char *name;
  Variant base, mutated;
  /// Q's standard deviation: softcap needs scores near the cap to matter.
  double qScale = 1.0;
};

std::vector<Mutation> mutations() {
  const double scale = 1.0 / std::sqrt(double(kD));
  Variant causal{fa::Causal::BottomRight};
  Variant window;
  window.window = {{64, 16}};
  Variant softcap;
  softcap.softcap = 30.0;
  Variant dropout;
  dropout.dropoutP = 0.1;
  dropout.dropoutSeed = 1;

  std::vector<Mutation> list;
  Variant m;
  m.scale = 1.01 * scale;
  list.push_back({"scale x 1.01", {}, m});
  m = {};
  m.dropLastKey = true;
  list.push_back({"last key dropped", {}, m});
  m = causal;
  m.causal = fa::Causal::TopLeft;
  list.push_back({"causal bottom-right -> top-left", causal, m});
  m = softcap;
  m.softcap = 31.0;
  list.push_back({"softcap 30 -> 31", softcap, m, 8.0});
  m.softcap = 29.0;
  list.push_back({"softcap 30 -> 29", softcap, m, 8.0});
  m = window;
  m.window = {{65, 16}};
  list.push_back({"window left 64 -> 65", window, m});
  m.window = {{64, 15}};
  list.push_back({"window right 16 -> 15", window, m});
  m = dropout;
  m.dropoutSeed = 2;
  list.push_back({"dropout seed 1 -> 2", dropout, m});
  m = {};
  m.shiftHeads = true;
  list.push_back({"GQA head mapping shifted by one", {}, m});
  return list;
}

/// K or V with its heads rolled by one: head g holds head (g + 1) mod Hkv.
std::vector<double> rollHeads(const HostTensor &t) {
  const int64_t heads = t.shape[1], size = t.shape[2] * t.shape[3];
  std::vector<double> rolled(t.values.size());
  for (int64_t b = 0; b < t.shape[0]; ++b)
    for (int64_t g = 0; g < heads; ++g)
      std::copy_n(t.values.begin() + (b * heads + (g + 1) % heads) * size, size,
                  rolled.begin() + (b * heads + g) * size);
  return rolled;
}

/// Inputs and outputs of one forward and backward run.
struct Tensors {
  HostTensor q{kDType, {kB, kHq, kNq, kD}}, k{kDType, {kB, kHkv, kNk, kD}},
      v{kDType, {kB, kHkv, kNk, kD}}, o{kDType, {kB, kHq, kNq, kD}},
      dout{kDType, {kB, kHq, kNq, kD}}, lse{fa::DType::F32, {kB, kHq, kNq}},
      dq{kDType, q.shape}, dk{kDType, k.shape}, dv{kDType, v.shape};
};

class MutationTest : public ::testing::TestWithParam<std::string> {
protected:
  void SetUp() override {
    if (GetParam() == "host")
      return;
    rt::Expected<rt::Device> found = rt::Device::get(0);
    if (found.failed())
      FA_GPU_UNAVAILABLE(found.getMessage());
    device.emplace(found.take());
  }

  /// Runs `variant`'s forward and backward on random inputs, on the host or
  /// the GPU.
  void run(const Mutation &mutation, Tensors &r) {
    const Variant &variant = mutation.base;
    fa::Kernel kernel =
        fa::compile(variant.spec(), device ? device->getChip() : "host");
    std::mt19937 rng(17);
    r.q.randomize(rng, mutation.qScale);
    r.k.randomize(rng);
    r.v.randomize(rng);
    r.dout.randomize(rng);
    std::vector<HostTensor *> all = {&r.q,   &r.k,  &r.v,  &r.o, &r.dout,
                                     &r.lse, &r.dq, &r.dk, &r.dv};
    std::vector<rt::DeviceBuffer> buffers;
    std::vector<fa::TensorView> views;
    for (HostTensor *t : all) {
      views.push_back(t->view());
      if (!device)
        continue;
      rt::Expected<rt::DeviceBuffer> buffer =
          rt::DeviceBuffer::allocate(*device, t->bytes.size());
      ASSERT_TRUE(buffer.ok()) << buffer.getMessage();
      ASSERT_TRUE(
          buffer.value().copyFromHost(t->bytes.data(), t->bytes.size()).ok());
      buffers.push_back(buffer.take());
      views.back().data = reinterpret_cast<void *>(buffers.back().getPointer());
      views.back().device = fa::Device::CUDA;
    }
    kernel.forward(views[0], views[1], views[2], views[3], &views[5], nullptr,
                   nullptr, variant.dropoutSeed);
    kernel.backward(views[0], views[1], views[2], views[3], views[4], views[5],
                    views[6], views[7], views[8], nullptr, nullptr,
                    variant.dropoutSeed);
    if (!device)
      return;
    ASSERT_TRUE(device->synchronize().ok());
    for (int i : {3, 5, 6, 7, 8})
      ASSERT_TRUE(buffers[i]
                      .copyToHost(all[i]->bytes.data(), all[i]->bytes.size())
                      .ok());
  }

  /// The exact and low-precision references of `variant` on r's inputs.
  struct References {
    std::vector<double> fwd[2][2];  // [exact, low][O, lse]
    std::vector<double> grad[2][3]; // [exact, low][dQ, dK, dV]
  };
  References references(const Tensors &r, const Variant &variant) {
    std::vector<double> k = r.k.values, v = r.v.values;
    if (variant.shiftHeads) {
      k = rollHeads(r.k);
      v = rollHeads(r.v);
    }
    fa::support::TensorRef kRef{k.data(), r.k.shape}, vRef{v.data(), r.v.shape};
    References refs;
    std::string error;
    for (int low = 0; low < 2; ++low) {
      fa::support::AttentionOptions options = variant.options();
      options.precision = low ? fa::testing::precisionOf(kDType)
                              : fa::support::Precision::Exact;
      EXPECT_TRUE(fa::support::attentionReference(r.q.ref(), kRef, vRef,
                                                  options, refs.fwd[low][0],
                                                  refs.fwd[low][1], error))
          << error;
      EXPECT_TRUE(fa::support::attentionGradReference(
          r.q.ref(), kRef, vRef, r.dout.ref(), options, refs.grad[low][0],
          refs.grad[low][1], refs.grad[low][2], error))
          << error;
    }
    return refs;
  }

  /// The forward's check (O and lse) of r's outputs against `refs`; `zero`
  /// zeroes row 5 of O first.
  ::testing::AssertionResult forward(const Tensors &r, const References &refs,
                                     bool zero = false) {
    std::vector<double> o = r.o.read();
    if (zero)
      std::fill_n(o.begin() + 5 * kD, kD, 0.0);
    ::testing::AssertionResult result = ::testing::AssertionSuccess();
    fa::testing::combine(result, fa::testing::accurate("O", o, refs.fwd[0][0],
                                                       refs.fwd[1][0], kD));
    fa::testing::combine(
        result, fa::testing::accurate("lse", r.lse.read(), refs.fwd[0][1],
                                      refs.fwd[1][1], 1,
                                      fa::support::ErrorScale::Absolute));
    return result;
  }

  /// The backward's check (dQ, dK, dV) against `refs`; `zero` (0, 1 or 2)
  /// zeroes row 5 of dQ, dK or dV first.
  ::testing::AssertionResult backward(const Tensors &r, const References &refs,
                                      int zero = -1) {
    std::vector<double> grads[3] = {r.dq.read(), r.dk.read(), r.dv.read()};
    if (zero >= 0)
      std::fill_n(grads[zero].begin() + 5 * kD, kD, 0.0);
    const char *names[3] = {"dQ", "dK", "dV"};
    ::testing::AssertionResult result = ::testing::AssertionSuccess();
    for (int t = 0; t < 3; ++t)
      fa::testing::combine(result, fa::testing::accurate(names[t], grads[t],
                                                         refs.grad[0][t],
                                                         refs.grad[1][t], kD));
    return result;
  }

  void report(const char *pass, const char *name,
              const ::testing::AssertionResult &result) {
    std::printf("[ mutation ] %-4s %-8s %-32s %s%s\n", GetParam().c_str(), pass,
                name, result ? "NOT CAUGHT" : "caught", result.message());
  }

  std::optional<rt::Device> device;
};

TEST_P(MutationTest, ChecksRejectEveryMutation) {
  bool rowsZeroed = false;
  for (const Mutation &mutation : mutations()) {
    SCOPED_TRACE(mutation.name);
    Tensors r;
    ASSERT_NO_FATAL_FAILURE(run(mutation, r));
    // The kernel is right about the variant it runs...
    References right = references(r, mutation.base);
    EXPECT_TRUE(forward(r, right)) << "the unmutated variant";
    EXPECT_TRUE(backward(r, right)) << "the unmutated variant";
    // ... and wrong about the mutated one.
    References wrong = references(r, mutation.mutated);
    ::testing::AssertionResult fwd = forward(r, wrong),
                               bwd = backward(r, wrong);
    report("fwd", mutation.name, fwd);
    report("bwd", mutation.name, bwd);
    EXPECT_FALSE(fwd) << "forward: " << mutation.name << " not caught";
    EXPECT_FALSE(bwd) << "backward: " << mutation.name << " not caught";
    if (rowsZeroed)
      continue;
    // One wrong row among 512 (O, dQ) or 8192 (dK, dV) is a wrong answer.
    rowsZeroed = true;
    ::testing::AssertionResult zeroO = forward(r, right, /*zero=*/true);
    report("fwd", "row 5 of O zeroed", zeroO);
    EXPECT_FALSE(zeroO) << "a zeroed row of O not caught";
    const char *names[3] = {"row 5 of dQ zeroed", "row 5 of dK zeroed",
                            "row 5 of dV zeroed"};
    for (int t = 0; t < 3; ++t) {
      ::testing::AssertionResult zeroGrad = backward(r, right, t);
      report("bwd", names[t], zeroGrad);
      EXPECT_FALSE(zeroGrad) << names[t] << " not caught";
    }
  }
}

INSTANTIATE_TEST_SUITE_P(Targets, MutationTest,
                         ::testing::Values("host", "gpu"),
                         [](const auto &info) { return info.param; });

} // namespace
