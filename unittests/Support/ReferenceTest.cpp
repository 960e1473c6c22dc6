//===- ReferenceTest.cpp - Tests for the float64 attention reference ------===//
//
// Every expectation is derived by hand from attention's definition: small
// cases whose softmax weights are known in closed form (one key, equal
// scores, scores set by a bias), plus a naive implementation that
// materializes the whole score matrix for random problems.
//
//===----------------------------------------------------------------------===//

#include "fa/Support/Reference.h"

#include "gtest/gtest.h"

#include <cmath>
#include <functional>
#include <limits>
#include <random>
#include <tuple>
#include <utility>

using namespace fa::support;

namespace {

const double kInf = std::numeric_limits<double>::infinity();

/// A tensor that owns its data.
struct Tensor {
  std::vector<int64_t> shape;
  std::vector<double> data;

  explicit Tensor(std::vector<int64_t> shape, double fill = 0.0)
      : shape(shape), data(count(shape), fill) {}

  static size_t count(const std::vector<int64_t> &shape) {
    size_t n = 1;
    for (int64_t dim : shape)
      n *= static_cast<size_t>(dim);
    return n;
  }
  TensorRef ref() const { return TensorRef{data.data(), shape}; }
  double &at(std::initializer_list<int64_t> index) {
    size_t offset = 0, i = 0;
    for (int64_t value : index)
      offset = offset * shape[i++] + value;
    return data[offset];
  }
};

Tensor random(std::vector<int64_t> shape, unsigned seed) {
  Tensor tensor(shape);
  std::mt19937_64 rng(seed);
  std::uniform_real_distribution<double> dist(-1.0, 1.0);
  for (double &value : tensor.data)
    value = dist(rng);
  return tensor;
}

struct Result {
  std::vector<double> out, lse;
  int64_t heads, seqQ, headDimV;
  const double *o(int64_t b, int64_t h, int64_t i) const {
    return &out[((b * heads + h) * seqQ + i) * headDimV];
  }
  double l(int64_t b, int64_t h, int64_t i) const {
    return lse[(b * heads + h) * seqQ + i];
  }
};

Result run(const Tensor &q, const Tensor &k, const Tensor &v,
           const AttentionOptions &options = {}) {
  Result result;
  result.heads = q.shape[1];
  result.seqQ = q.shape[2];
  result.headDimV = v.shape[3];
  std::string error;
  EXPECT_TRUE(attentionReference(q.ref(), k.ref(), v.ref(), options, result.out,
                                 result.lse, error))
      << error;
  return result;
}

double dotRows(const Tensor &a, int64_t aOffset, const Tensor &b,
               int64_t bOffset, int64_t n) {
  double sum = 0;
  for (int64_t d = 0; d < n; ++d)
    sum += a.data[aOffset + d] * b.data[bOffset + d];
  return sum;
}

/// Expects O[b, h, i, :] to be sum_j weights[j] * V[b, kvHead, j, :] with
/// the weights normalized here.
void expectWeightedRows(const Result &result, const Tensor &v, int64_t b,
                        int64_t h, int64_t i, int64_t kvHead,
                        const std::vector<double> &weights) {
  double total = 0;
  for (double w : weights)
    total += w;
  const int64_t dv = v.shape[3];
  for (int64_t d = 0; d < dv; ++d) {
    double expected = 0;
    for (size_t j = 0; j < weights.size(); ++j)
      expected += weights[j] / total *
                  v.data[((b * v.shape[1] + kvHead) * v.shape[2] + j) * dv + d];
    EXPECT_NEAR(result.o(b, h, i)[d], expected, 1e-13)
        << "b=" << b << " h=" << h << " i=" << i << " d=" << d;
  }
}

TEST(Reference, SingleKeyReturnsItsValueRow) {
  Tensor q = random({2, 3, 4, 5}, 1), k = random({2, 3, 1, 5}, 2),
         v = random({2, 3, 1, 6}, 3);
  Result r = run(q, k, v);
  ASSERT_EQ(r.out.size(), 2u * 3 * 4 * 6);
  for (int64_t b = 0; b < 2; ++b)
    for (int64_t h = 0; h < 3; ++h)
      for (int64_t i = 0; i < 4; ++i) {
        for (int64_t d = 0; d < 6; ++d)
          EXPECT_DOUBLE_EQ(r.o(b, h, i)[d], v.at({b, h, 0, d}));
        // lse of one score is the score: q.k / sqrt(5).
        double s =
            dotRows(q, ((b * 3 + h) * 4 + i) * 5, k, (b * 3 + h) * 5, 5) /
            std::sqrt(5.0);
        EXPECT_NEAR(r.l(b, h, i), s, 1e-14);
      }
}

TEST(Reference, EqualScoresAverageV) {
  // Q = 0 makes every score 0: uniform weights, lse = log(Nk).
  Tensor q({1, 2, 3, 4}), k = random({1, 2, 5, 4}, 4),
                          v = random({1, 2, 5, 3}, 5);
  Result r = run(q, k, v);
  for (int64_t h = 0; h < 2; ++h)
    for (int64_t i = 0; i < 3; ++i) {
      expectWeightedRows(r, v, 0, h, i, h, {1, 1, 1, 1, 1});
      EXPECT_NEAR(r.l(0, h, i), std::log(5.0), 1e-14);
    }
}

TEST(Reference, TwoKeysSoftmaxByHand) {
  // D = 1, q = 2, keys 3 and -1, scale 1: scores 6 and -2.
  Tensor q({1, 1, 1, 1}, 2.0), k({1, 1, 2, 1}), v = random({1, 1, 2, 2}, 6);
  k.data = {3.0, -1.0};
  AttentionOptions options;
  options.scale = 1.0;
  Result r = run(q, k, v, options);
  expectWeightedRows(r, v, 0, 0, 0, 0, {std::exp(6.0), std::exp(-2.0)});
  EXPECT_NEAR(r.l(0, 0, 0), std::log(std::exp(6.0) + std::exp(-2.0)), 1e-14);
}

TEST(Reference, DefaultScaleIsInverseSqrtD) {
  // q = k = ones(4): q.k = 4, scaled by 1/2.
  Tensor q({1, 1, 1, 4}, 1.0), k({1, 1, 1, 4}, 1.0), v({1, 1, 1, 1}, 7.0);
  Result r = run(q, k, v);
  EXPECT_DOUBLE_EQ(r.l(0, 0, 0), 2.0);
  EXPECT_DOUBLE_EQ(r.o(0, 0, 0)[0], 7.0);
}

TEST(Reference, LargeScoresStayFinite) {
  // Scores of 1000 overflow exp() unless the max is subtracted.
  Tensor q({1, 1, 1, 1}, 1.0), k({1, 1, 2, 1}, 1.0), v({1, 1, 2, 1});
  v.data = {1.0, 3.0};
  AttentionOptions options;
  options.scale = 1000.0;
  Result r = run(q, k, v, options);
  EXPECT_DOUBLE_EQ(r.o(0, 0, 0)[0], 2.0);
  EXPECT_NEAR(r.l(0, 0, 0), 1000.0 + std::log(2.0), 1e-12);
}

TEST(Reference, CausalTopLeft) {
  Tensor q = random({1, 1, 4, 3}, 7), k = random({1, 1, 4, 3}, 8),
         v = random({1, 1, 4, 2}, 9);
  AttentionOptions options;
  options.causal = CausalMask::TopLeft;
  Result r = run(q, k, v, options);
  auto score = [&](int64_t i, int64_t j) {
    return dotRows(q, i * 3, k, j * 3, 3) / std::sqrt(3.0);
  };
  // Row 0 sees key 0 only; row 1 sees keys 0 and 1.
  expectWeightedRows(r, v, 0, 0, 0, 0, {1.0});
  EXPECT_NEAR(r.l(0, 0, 0), score(0, 0), 1e-14);
  expectWeightedRows(r, v, 0, 0, 1, 0,
                     {std::exp(score(1, 0)), std::exp(score(1, 1))});
  EXPECT_NEAR(r.l(0, 0, 1),
              std::log(std::exp(score(1, 0)) + std::exp(score(1, 1))), 1e-14);
}

TEST(Reference, CausalAlignmentWhenNqDiffersFromNk) {
  // Nq = 2, Nk = 5, Q = 0 so the kept keys are weighted equally.
  Tensor q({1, 1, 2, 2}), k = random({1, 1, 5, 2}, 10),
                          v = random({1, 1, 5, 2}, 11);
  AttentionOptions options;
  options.causal = CausalMask::TopLeft;
  Result r = run(q, k, v, options);
  expectWeightedRows(r, v, 0, 0, 0, 0, {1});
  expectWeightedRows(r, v, 0, 0, 1, 0, {1, 1});
  EXPECT_NEAR(r.l(0, 0, 1), std::log(2.0), 1e-14);
  // Bottom-right: row i keeps j <= i + 3.
  options.causal = CausalMask::BottomRight;
  r = run(q, k, v, options);
  expectWeightedRows(r, v, 0, 0, 0, 0, {1, 1, 1, 1});
  expectWeightedRows(r, v, 0, 0, 1, 0, {1, 1, 1, 1, 1});
  EXPECT_NEAR(r.l(0, 0, 0), std::log(4.0), 1e-14);
  EXPECT_NEAR(r.l(0, 0, 1), std::log(5.0), 1e-14);
}

TEST(Reference, FullyMaskedRowsAreZeroWithLseMinusInf) {
  // Bottom-right causal with Nq = 4 > Nk = 2: rows 0 and 1 keep j <= i - 2,
  // which is nothing.
  Tensor q = random({1, 1, 4, 2}, 12), k = random({1, 1, 2, 2}, 13),
         v = random({1, 1, 2, 3}, 14);
  AttentionOptions options;
  options.causal = CausalMask::BottomRight;
  Result r = run(q, k, v, options);
  for (int64_t i = 0; i < 2; ++i) {
    EXPECT_EQ(r.l(0, 0, i), -kInf);
    for (int64_t d = 0; d < 3; ++d)
      EXPECT_EQ(r.o(0, 0, i)[d], 0.0);
  }
  expectWeightedRows(r, v, 0, 0, 2, 0, {1.0});
  for (double value : r.out)
    EXPECT_FALSE(std::isnan(value));

  // The same from a mask_mod that keeps nothing, and from a score_mod that
  // sends every score to -inf.
  AttentionOptions none;
  none.maskMod = [](int64_t, int64_t, int64_t, int64_t) { return false; };
  r = run(q, k, v, none);
  for (double value : r.lse)
    EXPECT_EQ(value, -kInf);
  for (double value : r.out)
    EXPECT_EQ(value, 0.0);
  AttentionOptions minusInf;
  minusInf.scoreMod = [](double, int64_t, int64_t, int64_t, int64_t) {
    return -kInf;
  };
  r = run(q, k, v, minusInf);
  for (double value : r.lse)
    EXPECT_EQ(value, -kInf);
  for (double value : r.out)
    EXPECT_EQ(value, 0.0);
}

TEST(Reference, SlidingWindow) {
  // Nq = Nk = 5, window [1, 0]: row i keeps j in [i - 1, i].
  Tensor q({1, 1, 5, 2}), k = random({1, 1, 5, 2}, 15),
                          v = random({1, 1, 5, 2}, 16);
  AttentionOptions options;
  options.window = SlidingWindow{1, 0};
  Result r = run(q, k, v, options);
  expectWeightedRows(r, v, 0, 0, 0, 0, {1});
  expectWeightedRows(r, v, 0, 0, 3, 0, {0, 0, 1, 1});
  EXPECT_NEAR(r.l(0, 0, 0), 0.0, 1e-15);
  EXPECT_NEAR(r.l(0, 0, 3), std::log(2.0), 1e-14);
  // Window [0, 2] with Nq = 2, Nk = 5: the diagonal is i + 3, so row 0 keeps
  // j in [3, 5] (clipped to 4) and row 1 keeps j = 4.
  Tensor q2({1, 1, 2, 2});
  options.window = SlidingWindow{0, 2};
  r = run(q2, k, v, options);
  expectWeightedRows(r, v, 0, 0, 0, 0, {0, 0, 0, 1, 1});
  expectWeightedRows(r, v, 0, 0, 1, 0, {0, 0, 0, 0, 1});
  // A window that lies past the keys masks the whole row.
  options.window = SlidingWindow{-10, 20};
  r = run(q2, k, v, options);
  EXPECT_EQ(r.l(0, 0, 0), -kInf);
  // Extreme bounds must not overflow: this keeps everything.
  options.window = SlidingWindow{std::numeric_limits<int64_t>::max(),
                                 std::numeric_limits<int64_t>::max()};
  r = run(q2, k, v, options);
  EXPECT_NEAR(r.l(0, 0, 0), std::log(5.0), 1e-14);
}

TEST(Reference, WindowAndCausalCombine) {
  Tensor q({1, 1, 6, 1}), k({1, 1, 6, 1}), v = random({1, 1, 6, 1}, 17);
  AttentionOptions options;
  options.causal = CausalMask::TopLeft;
  options.window = SlidingWindow{2, 3};
  Result r = run(q, k, v, options);
  // Row 4 keeps j in [2, 4] (the causal mask cuts the window's right side).
  expectWeightedRows(r, v, 0, 0, 4, 0, {0, 0, 1, 1, 1});
}

TEST(Reference, GroupedQueryHeadsShareKV) {
  // Hq = 4, Hkv = 2: query heads 0, 1 read kv head 0; heads 2, 3 kv head 1.
  Tensor q({2, 4, 1, 2}), k = random({2, 2, 3, 2}, 18),
                          v = random({2, 2, 3, 2}, 19);
  Result r = run(q, k, v);
  for (int64_t b = 0; b < 2; ++b)
    for (int64_t h = 0; h < 4; ++h)
      expectWeightedRows(r, v, b, h, 0, h / 2, {1, 1, 1});
  // With one key, the output is that kv head's value row.
  Tensor k1 = random({1, 2, 1, 2}, 20), v1 = random({1, 2, 1, 2}, 21);
  Tensor q1 = random({1, 6, 1, 2}, 22);
  r = run(q1, k1, v1);
  for (int64_t h = 0; h < 6; ++h)
    for (int64_t d = 0; d < 2; ++d)
      EXPECT_DOUBLE_EQ(r.o(0, h, 0)[d], v1.at({0, h / 3, 0, d}));
}

TEST(Reference, BiasSetsTheWeights) {
  // Q = 0 and bias[j] = log(w_j): the weights are w / sum(w).
  Tensor q({2, 2, 3, 2}), k = random({2, 2, 4, 2}, 23),
                          v = random({2, 2, 4, 3}, 24);
  const std::vector<double> w = {1, 2, 3, 4};
  Tensor bias({1, 1, 1, 4});
  for (int64_t j = 0; j < 4; ++j)
    bias.data[j] = std::log(w[j]);
  AttentionOptions options;
  options.bias = bias.ref();
  Result r = run(q, k, v, options);
  for (int64_t b = 0; b < 2; ++b)
    for (int64_t h = 0; h < 2; ++h)
      for (int64_t i = 0; i < 3; ++i) {
        expectWeightedRows(r, v, b, h, i, h, w);
        EXPECT_NEAR(r.l(b, h, i), std::log(10.0), 1e-14);
      }
}

TEST(Reference, BiasBroadcastsEachDim) {
  // A [B, 1, Nq, 1] bias is constant along each row: O is unchanged and lse
  // shifts by bias[b, i].
  Tensor q = random({2, 3, 2, 4}, 25), k = random({2, 3, 5, 4}, 26),
         v = random({2, 3, 5, 2}, 27);
  Result plain = run(q, k, v);
  Tensor bias({2, 1, 2, 1});
  bias.data = {0.5, -1.0, 2.0, 3.0};
  AttentionOptions options;
  options.bias = bias.ref();
  Result r = run(q, k, v, options);
  for (int64_t b = 0; b < 2; ++b)
    for (int64_t h = 0; h < 3; ++h)
      for (int64_t i = 0; i < 2; ++i) {
        EXPECT_NEAR(r.l(b, h, i), plain.l(b, h, i) + bias.at({b, 0, i, 0}),
                    1e-13);
        for (int64_t d = 0; d < 2; ++d)
          EXPECT_NEAR(r.o(b, h, i)[d], plain.o(b, h, i)[d], 1e-13);
      }

  // A full [B, Hq, Nq, Nk] bias: each (b, h, i) row has its own weights.
  Tensor q0({2, 3, 2, 4});
  Tensor full({2, 3, 2, 5});
  for (size_t n = 0; n < full.data.size(); ++n)
    full.data[n] = std::log(1.0 + n % 7);
  options.bias = full.ref();
  r = run(q0, k, v, options);
  for (int64_t b = 0; b < 2; ++b)
    for (int64_t h = 0; h < 3; ++h)
      for (int64_t i = 0; i < 2; ++i) {
        std::vector<double> w;
        for (int64_t j = 0; j < 5; ++j)
          w.push_back(std::exp(full.at({b, h, i, j})));
        expectWeightedRows(r, v, b, h, i, h, w);
      }
}

TEST(Reference, Alibi) {
  // Nq = 1, Nk = 3: the diagonal is j = 2, distances 2, 1, 0; Q = 0.
  Tensor q({2, 2, 1, 2}), k = random({2, 2, 3, 2}, 28),
                          v = random({2, 2, 3, 2}, 29);
  Tensor slopes({2});
  slopes.data = {0.5, 0.25};
  AttentionOptions options;
  options.alibiSlopes = slopes.ref();
  Result r = run(q, k, v, options);
  for (int64_t b = 0; b < 2; ++b)
    for (int64_t h = 0; h < 2; ++h) {
      double m = slopes.data[h];
      std::vector<double> w = {std::exp(-2 * m), std::exp(-m), 1.0};
      expectWeightedRows(r, v, b, h, 0, h, w);
      EXPECT_NEAR(r.l(b, h, 0), std::log(w[0] + w[1] + w[2]), 1e-14);
    }

  // Per-batch slopes [B, Hq].
  Tensor batchSlopes({2, 2});
  batchSlopes.data = {0.5, 0.25, 1.0, 2.0};
  options.alibiSlopes = batchSlopes.ref();
  r = run(q, k, v, options);
  for (int64_t b = 0; b < 2; ++b)
    for (int64_t h = 0; h < 2; ++h) {
      double m = batchSlopes.at({b, h});
      expectWeightedRows(r, v, b, h, 0, h,
                         {std::exp(-2 * m), std::exp(-m), 1.0});
    }
}

TEST(Reference, AlibiDistanceIsAbsolute) {
  // Nq = Nk = 3 (diagonal j = i): row 0 sees distances 0, 1, 2 to the right.
  Tensor q({1, 1, 3, 1}), k({1, 1, 3, 1}), v = random({1, 1, 3, 1}, 30);
  Tensor slopes({1}, 1.0);
  AttentionOptions options;
  options.alibiSlopes = slopes.ref();
  Result r = run(q, k, v, options);
  const double e = std::exp(-1.0), e2 = std::exp(-2.0);
  expectWeightedRows(r, v, 0, 0, 0, 0, {1, e, e2});
  expectWeightedRows(r, v, 0, 0, 1, 0, {e, 1, e});
  expectWeightedRows(r, v, 0, 0, 2, 0, {e2, e, 1});
}

TEST(Reference, Softcap) {
  // D = 1, q = 2, keys 3 and -1, scale 1: raw scores 6 and -2.
  Tensor q({1, 1, 1, 1}, 2.0), k({1, 1, 2, 1}), v = random({1, 1, 2, 2}, 31);
  k.data = {3.0, -1.0};
  AttentionOptions options;
  options.scale = 1.0;
  options.softcap = 5.0;
  Result r = run(q, k, v, options);
  double s0 = 5.0 * std::tanh(6.0 / 5.0), s1 = 5.0 * std::tanh(-2.0 / 5.0);
  expectWeightedRows(r, v, 0, 0, 0, 0, {std::exp(s0), std::exp(s1)});
  EXPECT_NEAR(r.l(0, 0, 0), std::log(std::exp(s0) + std::exp(s1)), 1e-14);
}

TEST(Reference, StepOrder) {
  // One key, so lse is the final score. Softcap comes before alibi and
  // bias (neither is capped); score_mod sees the biased score.
  Tensor q({1, 1, 1, 1}, 1.0), k({1, 1, 1, 1}, 10.0), v({1, 1, 1, 1}, 1.0);
  Tensor bias({1, 1, 1, 1}, 3.0), slopes({1}, 0.5);
  AttentionOptions options;
  options.scale = 1.0;
  options.softcap = 1.0;
  options.bias = bias.ref();
  Result r = run(q, k, v, options);
  EXPECT_NEAR(r.l(0, 0, 0), std::tanh(10.0) + 3.0, 1e-15);
  options.scoreMod = [](double s, int64_t, int64_t, int64_t, int64_t) {
    return 2.0 * s;
  };
  r = run(q, k, v, options);
  EXPECT_NEAR(r.l(0, 0, 0), 2.0 * (std::tanh(10.0) + 3.0), 1e-14);
  // With Nq = 1, Nk = 2 the alibi distances are 1 and 0.
  Tensor k2({1, 1, 2, 1}, 10.0), v2({1, 1, 2, 1}, 1.0);
  Tensor bias2({1, 1, 1, 1}, 3.0);
  options.bias = bias2.ref();
  options.alibiSlopes = slopes.ref();
  options.scoreMod = nullptr;
  r = run(q, k2, v2, options);
  double s0 = std::tanh(10.0) - 0.5 + 3.0, s1 = std::tanh(10.0) + 3.0;
  EXPECT_NEAR(r.l(0, 0, 0), std::log(std::exp(s0) + std::exp(s1)), 1e-14);
}

TEST(Reference, ScoreModGetsIndices) {
  // Q = 0; score_mod adds log(j + 1) + 10 (b + h + i): weights j + 1 and lse
  // log(sum(j + 1)) + 10 (b + h + i).
  Tensor q({2, 2, 3, 2}), k = random({2, 1, 4, 2}, 32),
                          v = random({2, 1, 4, 2}, 33);
  AttentionOptions options;
  options.scoreMod = [](double s, int64_t b, int64_t h, int64_t i, int64_t j) {
    return s + std::log(j + 1.0) + 10.0 * (b + h + i);
  };
  Result r = run(q, k, v, options);
  for (int64_t b = 0; b < 2; ++b)
    for (int64_t h = 0; h < 2; ++h)
      for (int64_t i = 0; i < 3; ++i) {
        expectWeightedRows(r, v, b, h, i, 0, {1, 2, 3, 4});
        EXPECT_NEAR(r.l(b, h, i), std::log(10.0) + 10.0 * (b + h + i), 1e-12);
      }
}

TEST(Reference, MaskModGetsIndices) {
  // Keep even keys for b = 0 and key h for b = 1.
  Tensor q({2, 2, 2, 2}), k = random({2, 2, 4, 2}, 34),
                          v = random({2, 2, 4, 2}, 35);
  AttentionOptions options;
  options.maskMod = [](int64_t b, int64_t h, int64_t, int64_t j) {
    return b == 0 ? j % 2 == 0 : j == h;
  };
  Result r = run(q, k, v, options);
  for (int64_t h = 0; h < 2; ++h)
    for (int64_t i = 0; i < 2; ++i) {
      expectWeightedRows(r, v, 0, h, i, h, {1, 0, 1, 0});
      std::vector<double> w(4, 0.0);
      w[h] = 1;
      expectWeightedRows(r, v, 1, h, i, h, w);
    }
}

/// Attention straight from the definition: the whole [Nq, Nk] score matrix,
/// then a softmax per row.
void naiveAttention(const Tensor &q, const Tensor &k, const Tensor &v,
                    const Tensor *bias, const Tensor *slopes, double softcap,
                    CausalMask causal, int64_t left, int64_t right,
                    std::vector<double> &out, std::vector<double> &lse) {
  const int64_t B = q.shape[0], Hq = q.shape[1], Nq = q.shape[2],
                D = q.shape[3], Hkv = k.shape[1], Nk = k.shape[2],
                Dv = v.shape[3];
  out.assign(B * Hq * Nq * Dv, 0.0);
  lse.assign(B * Hq * Nq, 0.0);
  for (int64_t b = 0; b < B; ++b)
    for (int64_t h = 0; h < Hq; ++h) {
      const int64_t hk = h / (Hq / Hkv);
      std::vector<std::vector<double>> s(Nq, std::vector<double>(Nk));
      for (int64_t i = 0; i < Nq; ++i)
        for (int64_t j = 0; j < Nk; ++j) {
          double x = 0;
          for (int64_t d = 0; d < D; ++d)
            x += q.data[((b * Hq + h) * Nq + i) * D + d] *
                 k.data[((b * Hkv + hk) * Nk + j) * D + d];
          x /= std::sqrt(double(D));
          if (softcap != 0)
            x = softcap * std::tanh(x / softcap);
          if (slopes)
            x -= slopes->data[h] * std::abs(double(i + Nk - Nq - j));
          if (bias)
            x += bias->data[(h * Nq + i) * Nk + j]; // bias is [1, Hq, Nq, Nk]
          bool keep = true;
          if (causal == CausalMask::TopLeft)
            keep = j <= i;
          if (causal == CausalMask::BottomRight)
            keep = j <= i + Nk - Nq;
          keep = keep && i + Nk - Nq - left <= j && j <= i + Nk - Nq + right;
          s[i][j] = keep ? x : -kInf;
        }
      for (int64_t i = 0; i < Nq; ++i) {
        double m = -kInf;
        for (int64_t j = 0; j < Nk; ++j)
          m = std::max(m, s[i][j]);
        double *o = &out[((b * Hq + h) * Nq + i) * Dv];
        if (m == -kInf) {
          lse[(b * Hq + h) * Nq + i] = -kInf;
          continue;
        }
        double sum = 0;
        for (int64_t j = 0; j < Nk; ++j)
          sum += std::exp(s[i][j] - m);
        for (int64_t j = 0; j < Nk; ++j)
          for (int64_t d = 0; d < Dv; ++d)
            o[d] += std::exp(s[i][j] - m) / sum *
                    v.data[((b * Hkv + hk) * Nk + j) * Dv + d];
        lse[(b * Hq + h) * Nq + i] = m + std::log(sum);
      }
    }
}

TEST(Reference, MatchesNaiveImplementation) {
  Tensor q = random({2, 4, 7, 5}, 36), k = random({2, 2, 9, 5}, 37),
         v = random({2, 2, 9, 3}, 38), bias = random({1, 4, 7, 9}, 39);
  Tensor slopes({4});
  slopes.data = {0.5, 0.25, 0.125, 0.0625};
  for (CausalMask causal :
       {CausalMask::None, CausalMask::TopLeft, CausalMask::BottomRight}) {
    for (int64_t left : {int64_t(1000), int64_t(3)}) {
      SCOPED_TRACE(testing::Message()
                   << "causal=" << int(causal) << " left=" << left);
      AttentionOptions options;
      options.causal = causal;
      options.softcap = 0.75;
      options.bias = bias.ref();
      options.alibiSlopes = slopes.ref();
      options.window = SlidingWindow{left, 1};
      Result r = run(q, k, v, options);
      std::vector<double> out, lse;
      naiveAttention(q, k, v, &bias, &slopes, 0.75, causal, left, 1, out, lse);
      EXPECT_LT(relativeError(r.out.data(), out.data(), out.size()), 1e-14);
      EXPECT_LT(relativeError(r.lse.data(), lse.data(), lse.size()), 1e-14);
    }
  }
}

TEST(Reference, ThreadsGiveIdenticalResults) {
  Tensor q = random({2, 4, 37, 8}, 40), k = random({2, 2, 41, 8}, 41),
         v = random({2, 2, 41, 8}, 42);
  AttentionOptions options;
  options.causal = CausalMask::BottomRight;
  Result one = run(q, k, v, options);
  for (int threads : {0, 3}) {
    options.numThreads = threads;
    Result many = run(q, k, v, options);
    EXPECT_EQ(many.out, one.out);
    EXPECT_EQ(many.lse, one.lse);
  }
}

TEST(Reference, LongSequenceRowByRow) {
  // N = 32768 with a narrow window: only O(N) memory, and Q = 0 gives
  // uniform weights over the kept keys [i - 8, i].
  const int64_t n = 32768;
  Tensor q({1, 1, n, 2}), k = random({1, 1, n, 2}, 43),
                          v = random({1, 1, n, 1}, 44);
  AttentionOptions options;
  options.causal = CausalMask::TopLeft;
  options.window = SlidingWindow{8, 0};
  Result r = run(q, k, v, options);
  for (int64_t i : {int64_t(0), int64_t(5), int64_t(1000), n - 1}) {
    int64_t first = std::max<int64_t>(0, i - 8);
    double mean = 0;
    for (int64_t j = first; j <= i; ++j)
      mean += v.data[j];
    mean /= double(i - first + 1);
    EXPECT_NEAR(r.o(0, 0, i)[0], mean, 1e-14);
    EXPECT_NEAR(r.l(0, 0, i), std::log(double(i - first + 1)), 1e-14);
  }
}

TEST(Reference, RejectsInvalidProblems) {
  Tensor q({1, 3, 2, 4}), k({1, 2, 2, 4}), v({1, 2, 2, 4});
  std::vector<double> out, lse;
  std::string error;
  EXPECT_FALSE(
      attentionReference(q.ref(), k.ref(), v.ref(), {}, out, lse, error));
  EXPECT_EQ(error, "attention reference: Hq = 3 is not a multiple of Hkv = 2");

  Tensor q2({1, 2, 2, 4}), kBad({1, 2, 3, 4});
  EXPECT_FALSE(
      attentionReference(q2.ref(), kBad.ref(), v.ref(), {}, out, lse, error));
  EXPECT_EQ(error, "attention reference: shapes Q [1, 2, 2, 4], K [1, 2, 3, "
                   "4], V [1, 2, 2, 4] do not match [B, Hq, Nq, D], [B, Hkv, "
                   "Nk, D], [B, Hkv, Nk, Dv]");

  Tensor rank3({2, 2, 4});
  EXPECT_FALSE(
      attentionReference(rank3.ref(), k.ref(), v.ref(), {}, out, lse, error));
  EXPECT_EQ(error,
            "attention reference: Q has shape [2, 2, 4], expected rank 4");

  AttentionOptions options;
  Tensor bias({1, 2, 3, 2});
  options.bias = bias.ref();
  EXPECT_FALSE(
      attentionReference(q2.ref(), k.ref(), v.ref(), options, out, lse, error));
  EXPECT_EQ(error, "attention reference: bias has shape [1, 2, 3, 2], "
                   "expected rank 4 with each dim 1 or the full [B, Hq, Nq, "
                   "Nk] = [1, 2, 2, 2]");

  options = {};
  Tensor slopes({3});
  options.alibiSlopes = slopes.ref();
  EXPECT_FALSE(
      attentionReference(q2.ref(), k.ref(), v.ref(), options, out, lse, error));
  EXPECT_EQ(error, "attention reference: alibi slopes have shape [3], "
                   "expected [Hq] or [B, Hq] = [1, 2]");

  options = {};
  options.softcap = 0.0;
  EXPECT_FALSE(
      attentionReference(q2.ref(), k.ref(), v.ref(), options, out, lse, error));
  EXPECT_EQ(error, "attention reference: softcap is 0");
}

//===----------------------------------------------------------------------===//
// attentionGradReference, checked against central differences of the
// forward reference's loss sum(O * dO).
//===----------------------------------------------------------------------===//

struct Gradients {
  std::vector<double> dq, dk, dv, dBias;
};

Gradients runGradient(const Tensor &q, const Tensor &k, const Tensor &v,
                      const Tensor &dOut, const AttentionOptions &options) {
  Gradients g;
  std::string error;
  EXPECT_TRUE(attentionGradReference(q.ref(), k.ref(), v.ref(), dOut.ref(),
                                     options, g.dq, g.dk, g.dv, error,
                                     &g.dBias))
      << error;
  return g;
}

/// sum(O * dO), O from the forward reference.
double loss(const Tensor &q, const Tensor &k, const Tensor &v,
            const Tensor &dOut, const AttentionOptions &options) {
  std::vector<double> out, lse;
  std::string error;
  EXPECT_TRUE(
      attentionReference(q.ref(), k.ref(), v.ref(), options, out, lse, error))
      << error;
  double sum = 0;
  for (size_t n = 0; n < out.size(); ++n)
    sum += out[n] * dOut.data[n];
  return sum;
}

/// Expects `grad` to be finite and to match (loss(x + e) - loss(x - e)) / 2e,
/// e = 1e-6, over every element x of `tensor` (perturbed in place, then
/// restored), with a relative error over the whole tensor below 1e-6.
void expectFiniteDifferences(const char *name, Tensor &tensor,
                             const std::vector<double> &grad,
                             const std::function<double()> &lossFn) {
  ASSERT_EQ(grad.size(), tensor.data.size()) << name;
  std::vector<double> numeric(grad.size());
  for (size_t n = 0; n < grad.size(); ++n) {
    const double x = tensor.data[n], above = x + 1e-6, below = x - 1e-6;
    tensor.data[n] = above;
    const double lossAbove = lossFn();
    tensor.data[n] = below;
    const double lossBelow = lossFn();
    tensor.data[n] = x;
    numeric[n] = (lossAbove - lossBelow) / (above - below);
    EXPECT_TRUE(std::isfinite(grad[n])) << name << "[" << n << "]";
  }
  EXPECT_LT(relativeError(grad.data(), numeric.data(), grad.size()), 1e-6)
      << name;
}

/// Checks dQ, dK, dV (and dBias when `bias` is set, which becomes
/// options.bias) against central differences, with a random dO.
Gradients checkGradients(Tensor q, Tensor k, Tensor v, AttentionOptions options,
                         Tensor *bias = nullptr) {
  Tensor dOut = random({q.shape[0], q.shape[1], q.shape[2], v.shape[3]}, 99);
  if (bias)
    options.bias = bias->ref();
  Gradients g = runGradient(q, k, v, dOut, options);
  auto lossFn = [&] { return loss(q, k, v, dOut, options); };
  expectFiniteDifferences("dQ", q, g.dq, lossFn);
  expectFiniteDifferences("dK", k, g.dk, lossFn);
  expectFiniteDifferences("dV", v, g.dv, lossFn);
  if (bias)
    expectFiniteDifferences("dBias", *bias, g.dBias, lossFn);
  else
    EXPECT_TRUE(g.dBias.empty());
  return g;
}

TEST(ReferenceGrad, Plain) {
  checkGradients(random({2, 2, 5, 4}, 50), random({2, 2, 7, 4}, 51),
                 random({2, 2, 7, 3}, 52), {});
}

TEST(ReferenceGrad, SingleKeyByHand) {
  // One key: P = 1 whatever the score, so dQ = dK = 0 and dV of kv head g is
  // the sum of dO over its query heads' rows.
  Tensor q = random({2, 4, 3, 2}, 53), k = random({2, 2, 1, 2}, 54),
         v = random({2, 2, 1, 3}, 55), dOut = random({2, 4, 3, 3}, 56);
  Gradients g = runGradient(q, k, v, dOut, {});
  for (double value : g.dq)
    EXPECT_EQ(value, 0.0);
  for (double value : g.dk)
    EXPECT_EQ(value, 0.0);
  for (int64_t b = 0; b < 2; ++b)
    for (int64_t hk = 0; hk < 2; ++hk)
      for (int64_t d = 0; d < 3; ++d) {
        double expected = 0;
        for (int64_t h = 2 * hk; h < 2 * hk + 2; ++h)
          for (int64_t i = 0; i < 3; ++i)
            expected += dOut.at({b, h, i, d});
        EXPECT_NEAR(g.dv[(b * 2 + hk) * 3 + d], expected, 1e-14);
      }
}

TEST(ReferenceGrad, CausalWithNqDifferentFromNk) {
  for (CausalMask causal : {CausalMask::TopLeft, CausalMask::BottomRight})
    for (auto [nq, nk] : {std::pair<int64_t, int64_t>{4, 7}, {7, 4}, {6, 6}}) {
      SCOPED_TRACE(testing::Message()
                   << "causal=" << int(causal) << " Nq=" << nq << " Nk=" << nk);
      AttentionOptions options;
      options.causal = causal;
      checkGradients(random({2, 2, nq, 4}, 57), random({2, 2, nk, 4}, 58),
                     random({2, 2, nk, 3}, 59), options);
    }
}

TEST(ReferenceGrad, Window) {
  Tensor q = random({1, 2, 5, 4}, 60), k = random({1, 2, 8, 4}, 61),
         v = random({1, 2, 8, 3}, 62);
  AttentionOptions options;
  options.window = SlidingWindow{2, 1};
  checkGradients(q, k, v, options);
  options.causal = CausalMask::BottomRight;
  options.window = SlidingWindow{3, 2};
  checkGradients(q, k, v, options);
  options.causal = CausalMask::None;
  options.window = SlidingWindow{0, 0};
  checkGradients(q, k, v, options);
}

TEST(ReferenceGrad, Softcap) {
  Tensor q = random({2, 2, 5, 4}, 63), k = random({2, 2, 6, 4}, 64),
         v = random({2, 2, 6, 3}, 65);
  AttentionOptions options;
  options.softcap = 5.0;
  checkGradients(q, k, v, options);
  // Scores of a few units through a cap of 0.75 reach tanh's flat part.
  options.scale = 3.0;
  options.softcap = 0.75;
  checkGradients(q, k, v, options);
}

TEST(ReferenceGrad, Alibi) {
  Tensor q = random({2, 2, 5, 4}, 66), k = random({2, 2, 7, 4}, 67),
         v = random({2, 2, 7, 3}, 68);
  Tensor slopes({2}), batchSlopes({2, 2});
  slopes.data = {0.5, 0.25};
  batchSlopes.data = {0.5, 0.25, 1.0, 2.0};
  AttentionOptions options;
  options.alibiSlopes = slopes.ref();
  checkGradients(q, k, v, options);
  options.alibiSlopes = batchSlopes.ref();
  options.causal = CausalMask::BottomRight;
  checkGradients(q, k, v, options);
}

TEST(ReferenceGrad, BiasWithBroadcastDims) {
  // GQA with B = 2, so that broadcasting over b or h shares bias elements
  // between (b, kv head) work items.
  Tensor q = random({2, 4, 5, 3}, 69), k = random({2, 2, 6, 3}, 70),
         v = random({2, 2, 6, 2}, 71);
  const std::vector<std::vector<int64_t>> shapes = {
      {2, 4, 5, 6}, {1, 4, 5, 6}, {2, 1, 5, 6}, {2, 4, 1, 6},
      {1, 1, 5, 6}, {1, 1, 1, 6}, {2, 1, 1, 1}};
  unsigned seed = 72;
  for (const std::vector<int64_t> &shape : shapes) {
    SCOPED_TRACE(testing::Message()
                 << "bias [" << shape[0] << ", " << shape[1] << ", " << shape[2]
                 << ", " << shape[3] << "]");
    Tensor bias = random(shape, seed++);
    AttentionOptions options;
    options.causal = CausalMask::BottomRight;
    checkGradients(q, k, v, options, &bias);
  }
  // A bias constant along each row leaves the softmax unchanged: its
  // gradient is 0.
  Tensor rowBias = random({1, 4, 5, 1}, 80);
  Gradients g = checkGradients(q, k, v, {}, &rowBias);
  for (double value : g.dBias)
    EXPECT_NEAR(value, 0.0, 1e-14);
}

TEST(ReferenceGrad, ScoreMod) {
  Tensor q = random({2, 2, 5, 4}, 81), k = random({2, 2, 6, 4}, 82),
         v = random({2, 2, 6, 3}, 83), bias = random({1, 2, 1, 6}, 84);
  AttentionOptions options;
  options.scoreMod = [](double s, int64_t, int64_t, int64_t, int64_t) {
    return s * 0.5 + std::tanh(s);
  };
  checkGradients(q, k, v, options, &bias);
  // Index-dependent, after a softcap.
  options.scale = 2.0;
  options.softcap = 1.5;
  options.scoreMod = [](double s, int64_t b, int64_t h, int64_t i, int64_t j) {
    return (1.0 + 0.25 * h) * s * s * 0.5 + 0.1 * (b + i - j);
  };
  checkGradients(q, k, v, options, &bias);
}

TEST(ReferenceGrad, MaskMod) {
  AttentionOptions options;
  options.maskMod = [](int64_t b, int64_t h, int64_t i, int64_t j) {
    return (b + h + i + j) % 3 != 0;
  };
  checkGradients(random({2, 2, 5, 4}, 85), random({2, 2, 6, 4}, 86),
                 random({2, 2, 6, 3}, 87), options);
}

TEST(ReferenceGrad, GroupedAndMultiQuery) {
  AttentionOptions options;
  options.causal = CausalMask::TopLeft;
  for (int64_t headsKV : {2, 1}) {
    SCOPED_TRACE(testing::Message() << "Hkv=" << headsKV);
    checkGradients(random({2, 4, 6, 4}, 88), random({2, headsKV, 7, 4}, 89),
                   random({2, headsKV, 7, 5}, 90), options);
  }
}

TEST(ReferenceGrad, Dropout) {
  // The mask is a fixed function of (seed, b, h, i, j), so the loss stays
  // differentiable and finite differences check the Z factors of dV and dP.
  AttentionOptions options;
  options.dropoutP = 0.3;
  options.dropoutSeed = 0x123456789abcdefull;
  options.causal = CausalMask::BottomRight;
  checkGradients(random({2, 4, 6, 4}, 120), random({2, 2, 8, 4}, 121),
                 random({2, 2, 8, 3}, 122), options);
}

TEST(ReferenceGrad, EverythingAtOnce) {
  Tensor q = random({2, 4, 7, 5}, 91), k = random({2, 2, 9, 5}, 92),
         v = random({2, 2, 9, 3}, 93), bias = random({1, 4, 7, 9}, 94);
  Tensor slopes({2, 4});
  slopes.data = {0.5, 0.25, 0.125, 0.0625, 1.0, 0.5, 0.25, 0.125};
  AttentionOptions options;
  options.causal = CausalMask::BottomRight;
  options.window = SlidingWindow{4, 1};
  options.softcap = 0.9;
  options.alibiSlopes = slopes.ref();
  options.scoreMod = [](double s, int64_t, int64_t, int64_t, int64_t) {
    return s * 0.5 + std::tanh(s);
  };
  options.maskMod = [](int64_t, int64_t h, int64_t i, int64_t j) {
    return (h + i + j) % 4 != 1;
  };
  checkGradients(q, k, v, options, &bias);
}

TEST(ReferenceGrad, FullyMaskedRowsAddNothing) {
  // Bottom-right causal with Nq = 6 > Nk = 3 masks rows 0-2; mask_mod masks
  // row 4 of head 1 too.
  Tensor q = random({1, 2, 6, 4}, 95), k = random({1, 2, 3, 4}, 96),
         v = random({1, 2, 3, 3}, 97);
  AttentionOptions options;
  options.causal = CausalMask::BottomRight;
  options.maskMod = [](int64_t, int64_t h, int64_t i, int64_t) {
    return !(h == 1 && i == 4);
  };
  Gradients g = checkGradients(q, k, v, options);
  for (int64_t h = 0; h < 2; ++h)
    for (int64_t i = 0; i < 6; ++i) {
      if (i >= 3 && !(h == 1 && i == 4))
        continue;
      for (int64_t d = 0; d < 4; ++d)
        EXPECT_EQ(g.dq[(h * 6 + i) * 4 + d], 0.0) << "h=" << h << " i=" << i;
    }

  // Nothing kept at all, by mask_mod or by a score_mod of -inf: every
  // gradient is 0.
  Tensor dOut = random({1, 2, 6, 3}, 98), bias = random({1, 2, 6, 3}, 99);
  AttentionOptions none;
  none.maskMod = [](int64_t, int64_t, int64_t, int64_t) { return false; };
  AttentionOptions minusInf;
  minusInf.scoreMod = [](double, int64_t, int64_t, int64_t, int64_t) {
    return -kInf;
  };
  for (AttentionOptions *empty : {&none, &minusInf}) {
    empty->bias = bias.ref();
    g = runGradient(q, k, v, dOut, *empty);
    for (const std::vector<double> *grad : {&g.dq, &g.dk, &g.dv, &g.dBias})
      for (double value : *grad)
        EXPECT_EQ(value, 0.0);
    EXPECT_EQ(g.dBias.size(), bias.data.size());
  }
}

TEST(ReferenceGrad, ThreadsGiveIdenticalResults) {
  Tensor q = random({2, 4, 9, 8}, 100), k = random({2, 2, 8, 8}, 101),
         v = random({2, 2, 8, 8}, 102), dOut = random({2, 4, 9, 8}, 103);
  // Bias gradients in pass 1 (full), in the row-parallel pass 2 (shared by
  // (b, kv head) items) and in the serial pass 2 (shared by rows too).
  for (std::vector<int64_t> shape : std::vector<std::vector<int64_t>>{
           {2, 4, 9, 8}, {1, 1, 9, 8}, {1, 4, 1, 8}}) {
    SCOPED_TRACE(testing::Message()
                 << "bias [" << shape[0] << ", " << shape[1] << ", " << shape[2]
                 << ", " << shape[3] << "]");
    Tensor bias = random(shape, 104);
    AttentionOptions options;
    options.causal = CausalMask::BottomRight;
    options.bias = bias.ref();
    options.scoreMod = [](double s, int64_t, int64_t, int64_t, int64_t) {
      return s * 0.5 + std::tanh(s);
    };
    Gradients one = runGradient(q, k, v, dOut, options);
    for (int threads : {4, 0}) {
      options.numThreads = threads;
      Gradients many = runGradient(q, k, v, dOut, options);
      EXPECT_EQ(many.dq, one.dq);
      EXPECT_EQ(many.dk, one.dk);
      EXPECT_EQ(many.dv, one.dv);
      EXPECT_EQ(many.dBias, one.dBias);
    }
  }
}

TEST(ReferenceGrad, WithoutBiasOrDBias) {
  Tensor q = random({1, 2, 3, 4}, 105), k = random({1, 2, 4, 4}, 106),
         v = random({1, 2, 4, 2}, 107), dOut = random({1, 2, 3, 2}, 108);
  std::vector<double> dq, dk, dv, dBias = {1.0, 2.0};
  std::string error;
  // No bias: dBias is emptied.
  ASSERT_TRUE(attentionGradReference(q.ref(), k.ref(), v.ref(), dOut.ref(), {},
                                     dq, dk, dv, error, &dBias));
  EXPECT_TRUE(dBias.empty());
  // A bias but no dBias requested: the same dQ, dK, dV as with one.
  Tensor bias = random({1, 2, 3, 4}, 109);
  AttentionOptions options;
  options.bias = bias.ref();
  ASSERT_TRUE(attentionGradReference(q.ref(), k.ref(), v.ref(), dOut.ref(),
                                     options, dq, dk, dv, error));
  Gradients g = runGradient(q, k, v, dOut, options);
  EXPECT_EQ(dq, g.dq);
  EXPECT_EQ(dk, g.dk);
  EXPECT_EQ(dv, g.dv);
  EXPECT_EQ(dq.size(), q.data.size());
  EXPECT_EQ(dk.size(), k.data.size());
  EXPECT_EQ(dv.size(), v.data.size());
}

TEST(ReferenceGrad, RejectsInvalidProblems) {
  Tensor q({1, 2, 2, 4}), k({1, 2, 3, 4}), v({1, 2, 3, 5});
  std::vector<double> dq, dk, dv;
  std::string error;
  Tensor dOut({1, 2, 2, 4});
  EXPECT_FALSE(attentionGradReference(q.ref(), k.ref(), v.ref(), dOut.ref(), {},
                                      dq, dk, dv, error));
  EXPECT_EQ(error, "attention gradient reference: dO has shape [1, 2, 2, 4], "
                   "expected [B, Hq, Nq, Dv] = [1, 2, 2, 5]");

  Tensor dOut3({2, 2, 5});
  EXPECT_FALSE(attentionGradReference(q.ref(), k.ref(), v.ref(), dOut3.ref(),
                                      {}, dq, dk, dv, error));
  EXPECT_EQ(error,
            "attention gradient reference: dO has shape [2, 2, 5], expected "
            "rank 4");

  Tensor dOutGood({1, 2, 2, 5});
  TensorRef noData{nullptr, dOutGood.shape};
  EXPECT_FALSE(attentionGradReference(q.ref(), k.ref(), v.ref(), noData, {}, dq,
                                      dk, dv, error));
  EXPECT_EQ(error, "attention gradient reference: dO has no data");

  // The forward's checks, under this function's name.
  Tensor q3({1, 3, 2, 4});
  EXPECT_FALSE(attentionGradReference(q3.ref(), k.ref(), v.ref(),
                                      dOutGood.ref(), {}, dq, dk, dv, error));
  EXPECT_EQ(
      error,
      "attention gradient reference: Hq = 3 is not a multiple of Hkv = 2");
}

// Known-answer vectors of Philox4x32-10 from Random123's kat_vectors.
TEST(Philox, KnownAnswers) {
  using Words = std::array<uint32_t, 4>;
  EXPECT_EQ(philox4x32({0, 0, 0, 0}, {0, 0}),
            (Words{0x6627e8d5, 0xe169c58d, 0xbc57ac4c, 0x9b00dbd8}));
  EXPECT_EQ(philox4x32({0xffffffff, 0xffffffff, 0xffffffff, 0xffffffff},
                       {0xffffffff, 0xffffffff}),
            (Words{0x408f276d, 0x41c83b0e, 0xa20bc7c6, 0x6d5451fd}));
  EXPECT_EQ(philox4x32({0x243f6a88, 0x85a308d3, 0x13198a2e, 0x03707344},
                       {0xa4093822, 0x299f31d0}),
            (Words{0xd16cfe09, 0x94fdcceb, 0x5001e420, 0x24126ea1}));
}

TEST(Reference, DropoutKeepsAboutOneMinusP) {
  // Over 64 x 64 positions the kept fraction is 1 - p within 5 sigma, and
  // another seed keeps other positions.
  for (double p : {0.1, 0.5, 0.9}) {
    int kept = 0, same = 0;
    for (int64_t i = 0; i < 64; ++i)
      for (int64_t j = 0; j < 64; ++j) {
        bool a = dropoutKeeps(7, 1, 2, i, j, p);
        kept += a;
        same += a == dropoutKeeps(8, 1, 2, i, j, p);
      }
    const double n = 4096, sigma = std::sqrt(n * p * (1 - p));
    EXPECT_NEAR(kept, n * (1 - p), 5 * sigma) << "p=" << p;
    EXPECT_LT(same, n - 5 * sigma) << "p=" << p;
  }
  EXPECT_TRUE(dropoutKeeps(7, 0, 0, 0, 0, 0.0));
}

TEST(Reference, DropoutScalesKeptProbabilities) {
  // One query row over keys with equal scores: P = 1/4 each, so O is the sum
  // of the kept V rows times 1/4 / (1 - p); lse is that of the undropped row.
  Tensor q({1, 1, 1, 1}), k({1, 1, 4, 1}), v({1, 1, 4, 1});
  v.data = {1.0, 10.0, 100.0, 1000.0};
  AttentionOptions options;
  options.dropoutP = 0.5;
  options.dropoutSeed = 42;
  std::vector<double> out, lse;
  std::string error;
  ASSERT_TRUE(
      attentionReference(q.ref(), k.ref(), v.ref(), options, out, lse, error))
      << error;
  double expected = 0;
  for (int64_t j = 0; j < 4; ++j)
    if (dropoutKeeps(42, 0, 0, 0, j, 0.5))
      expected += v.data[j] * 0.25 / 0.5;
  EXPECT_DOUBLE_EQ(out[0], expected);
  EXPECT_DOUBLE_EQ(lse[0], std::log(4.0));
}

TEST(RelativeError, Basics) {
  const double ref[] = {1.0, 1.0};
  const double same[] = {1.0, 1.0};
  const double off[] = {1.0, 2.0};
  EXPECT_EQ(relativeError(same, ref, 2), 0.0);
  EXPECT_DOUBLE_EQ(relativeError(off, ref, 2), 1.0 / std::sqrt(2.0));
}

TEST(RelativeError, MatchingInfinities) {
  const double ref[] = {-kInf, 3.0, 4.0};
  const double out[] = {-kInf, 3.0, 5.0};
  // Index 0 matches exactly and adds nothing: 1 / ||(3, 4)|| = 1/5.
  EXPECT_DOUBLE_EQ(relativeError(out, ref, 3), 0.2);
  const double finite[] = {-1e300, 3.0, 4.0};
  EXPECT_EQ(relativeError(finite, ref, 3), kInf);
  const double ref2[] = {-1e300, 3.0, 4.0};
  EXPECT_EQ(relativeError(ref, ref2, 3), kInf);
  const double plus[] = {kInf, 3.0, 4.0};
  EXPECT_EQ(relativeError(plus, ref, 3), kInf);
  const double nan[] = {std::nan(""), 3.0, 4.0};
  EXPECT_EQ(relativeError(nan, ref2, 3), kInf);
  EXPECT_EQ(relativeError(ref2, nan, 3), kInf);
}

TEST(RelativeError, ZeroReferenceGivesAbsoluteNorm) {
  const double ref[] = {0.0, 0.0, -kInf};
  const double out[] = {3.0, 4.0, -kInf};
  EXPECT_DOUBLE_EQ(relativeError(out, ref, 3), 5.0);
  const double zeros[] = {0.0, 0.0, -kInf};
  EXPECT_EQ(relativeError(zeros, ref, 3), 0.0);
  EXPECT_EQ(relativeError(out, ref, 0), 0.0);
}

TEST(RelativeError, NoOverflowForHugeValues) {
  const double ref[] = {1e300, 1e300};
  const double out[] = {-1e300, 1e300};
  // ||(2e300, 0)|| / ||(1e300, 1e300)|| = 2 / sqrt(2).
  EXPECT_DOUBLE_EQ(relativeError(out, ref, 2), std::sqrt(2.0));
}

TEST(RoundTo, NearestEvenInEachType) {
  EXPECT_EQ(roundTo(1.0 + 0x1p-30, Precision::Exact), 1.0 + 0x1p-30);
  EXPECT_EQ(roundTo(1.0 + 0x1p-30, Precision::F32), 1.0);
  // bf16 keeps 8 significant bits: 1 + 2^-8 is a tie, to even (1); 1 +
  // 3 * 2^-8 ties to 1 + 2^-6.
  EXPECT_EQ(roundTo(1.0 + 0x1p-8, Precision::BF16), 1.0);
  EXPECT_EQ(roundTo(1.0 + 3 * 0x1p-8, Precision::BF16), 1.0 + 0x1p-6);
  EXPECT_EQ(roundTo(1.0 + 0x1p-8 + 0x1p-12, Precision::BF16), 1.0 + 0x1p-7);
  // f16 keeps 11: 1 + 2^-11 ties to 1, 1 + 3 * 2^-11 to 1 + 2^-9.
  EXPECT_EQ(roundTo(1.0 + 0x1p-11, Precision::F16), 1.0);
  EXPECT_EQ(roundTo(1.0 + 3 * 0x1p-11, Precision::F16), 1.0 + 0x1p-9);
  EXPECT_EQ(roundTo(-kInf, Precision::BF16), -kInf);
  EXPECT_EQ(roundTo(1e6, Precision::F16), kInf);
  EXPECT_TRUE(std::isnan(roundTo(std::nan(""), Precision::BF16)));
}

TEST(RowError, WorstRowOverTheRmsRowNorm) {
  // Rows (3, 4) and (0, 0): RMS row norm sqrt((25 + 0) / 2).
  const double exact[] = {3.0, 4.0, 0.0, 0.0};
  const double got[] = {3.0, 4.0, 0.0, 1.0};
  EXPECT_DOUBLE_EQ(rowError(got, exact, 4, 2), 1.0 / std::sqrt(12.5));
  EXPECT_DOUBLE_EQ(rowError(got, exact, 4, 2, ErrorScale::Absolute), 1.0);
  EXPECT_EQ(rowError(exact, exact, 4, 2), 0.0);
  // An all-zero reference: absolute errors, the worst row (3, 4).
  const double zeros[] = {0.0, 0.0, 0.0, 0.0};
  EXPECT_DOUBLE_EQ(rowError(got, zeros, 4, 2), 5.0);
}

TEST(RowError, OneWrongRowInManyIsNotAveragedAway) {
  std::vector<double> exact(1000 * 4, 1.0), got = exact;
  got[4 * 500] = 0.0; // One element of one row of 1000.
  // Relative L2 over the tensor: 1 / sqrt(4000); the worst row: 1 / 2.
  EXPECT_LT(relativeError(got.data(), exact.data(), got.size()), 0.016);
  EXPECT_DOUBLE_EQ(rowError(got.data(), exact.data(), got.size(), 4), 0.5);
}

TEST(RowError, Infinities) {
  const double exact[] = {-kInf, 2.0};
  const double same[] = {-kInf, 2.0};
  const double finite[] = {-1e30, 2.0};
  EXPECT_EQ(rowError(same, exact, 2, 1, ErrorScale::Absolute), 0.0);
  EXPECT_EQ(rowError(finite, exact, 2, 1, ErrorScale::Absolute), kInf);
  const double nan[] = {-kInf, std::nan("")};
  EXPECT_EQ(rowError(nan, exact, 2, 1, ErrorScale::Absolute), kInf);
}

TEST(CheckAccuracy, TwiceTheLowPrecisionErrorPlusEpsilon) {
  const double exact[] = {1.0, 1.0, 1.0, 1.0};
  const double low[] = {1.0, 1.01, 1.0, 1.0};
  // Row norms sqrt(2): the low-precision error 0.01 / sqrt(2).
  const double base = 0.01 / std::sqrt(2.0);
  const double within[] = {1.0, 1.0, 1.0 + 0.019, 1.0};
  const double over[] = {1.0, 1.0, 1.0 + 0.0205, 1.0};
  AccuracyCheck ok = checkAccuracy(within, exact, low, 4, 2);
  EXPECT_NEAR(ok.baseline, base, 1e-15);
  EXPECT_NEAR(ok.bound, 2 * base + kAccuracyEpsilon, 1e-15);
  EXPECT_TRUE(ok.passed);
  EXPECT_EQ(ok.worstRow, 1);
  AccuracyCheck bad = checkAccuracy(over, exact, low, 4, 2);
  EXPECT_FALSE(bad.passed);
  EXPECT_EQ(bad.worstRow, 1);
  // A fixed bound replaces 2 * baseline + epsilon.
  EXPECT_TRUE(
      checkAccuracy(over, exact, low, 4, 2, ErrorScale::Relative, 0.1).passed);
  // An exact low-precision reference leaves the epsilon alone.
  AccuracyCheck tight = checkAccuracy(within, exact, exact, 4, 2);
  EXPECT_EQ(tight.bound, kAccuracyEpsilon);
  EXPECT_FALSE(tight.passed);
}

/// Forward and backward of a random GQA problem with every score term,
/// exact and in `precision`.
struct Both {
  std::vector<double> out[2], lse[2], dq[2], dk[2], dv[2], dBias[2];
};
Both bothReferences(Precision precision, Precision inputs) {
  auto rounded = [&](std::vector<int64_t> shape, unsigned seed) {
    Tensor t = random(shape, seed);
    for (double &x : t.data)
      x = roundTo(x, inputs);
    return t;
  };
  Tensor q = rounded({2, 4, 37, 16}, 1), k = rounded({2, 2, 53, 16}, 2),
         v = rounded({2, 2, 53, 8}, 3), dOut = rounded({2, 4, 37, 8}, 4),
         bias = rounded({1, 4, 37, 53}, 5), slopes = rounded({4}, 6);
  AttentionOptions options;
  options.causal = CausalMask::BottomRight;
  options.softcap = 5.0;
  options.bias = bias.ref();
  options.alibiSlopes = slopes.ref();
  options.scoreMod = [](double s, int64_t, int64_t, int64_t i, int64_t j) {
    return s + 0.01 * static_cast<double>(i - j);
  };
  options.dropoutP = 0.2;
  options.dropoutSeed = 9;
  Both r;
  std::string error;
  for (int low = 0; low < 2; ++low) {
    options.precision = low ? precision : Precision::Exact;
    EXPECT_TRUE(attentionReference(q.ref(), k.ref(), v.ref(), options,
                                   r.out[low], r.lse[low], error))
        << error;
    EXPECT_TRUE(attentionGradReference(q.ref(), k.ref(), v.ref(), dOut.ref(),
                                       options, r.dq[low], r.dk[low], r.dv[low],
                                       error, &r.dBias[low]))
        << error;
  }
  return r;
}

TEST(LowPrecisionReference, ErrorsAreThoseOfTheType) {
  // f32: within a few units of f32 rounding; f16 and bf16: of the order of
  // their unit roundoff (2^-11 and 2^-8), far from exact and far from wrong.
  struct Expect {
    Precision precision;
    double low, high;
  };
  for (Expect e :
       {Expect{Precision::F32, 0, 1e-5}, Expect{Precision::F16, 1e-5, 2e-3},
        Expect{Precision::BF16, 1e-4, 2e-2}}) {
    Both r = bothReferences(e.precision, e.precision);
    for (auto [name, values, length] :
         {std::tuple{"O", r.out, 8}, std::tuple{"dQ", r.dq, 16},
          std::tuple{"dK", r.dk, 16}, std::tuple{"dV", r.dv, 8}}) {
      double err = rowError(values[1].data(), values[0].data(),
                            values[0].size(), length);
      EXPECT_LE(err, e.high) << name;
      EXPECT_GE(err, e.low) << name;
    }
    double lseErr = rowError(r.lse[1].data(), r.lse[0].data(), r.lse[0].size(),
                             1, ErrorScale::Absolute);
    EXPECT_LE(lseErr, 1e-5); // lse is f32 in every precision.
  }
}

TEST(LowPrecisionReference, ExactPrecisionIsTheExactReference) {
  Both r = bothReferences(Precision::Exact, Precision::BF16);
  EXPECT_EQ(r.out[0], r.out[1]);
  EXPECT_EQ(r.lse[0], r.lse[1]);
  EXPECT_EQ(r.dq[0], r.dq[1]);
  EXPECT_EQ(r.dBias[0], r.dBias[1]);
}

TEST(LowPrecisionReference, ResultsAreRoundedToTheType) {
  Both r = bothReferences(Precision::BF16, Precision::BF16);
  for (const std::vector<double> *values :
       {&r.out[1], &r.dq[1], &r.dk[1], &r.dv[1], &r.dBias[1]})
    for (double x : *values)
      ASSERT_EQ(x, roundTo(x, Precision::BF16));
  for (double x : r.lse[1])
    ASSERT_EQ(x, roundTo(x, Precision::F32));
}

} // namespace
