//===- Reference.cpp - float64 attention reference ------------------------===//
//
// One query row at a time: the row's scores go to an Nk buffer, then a
// max-subtracted softmax weights V's rows into the output. Keys that causal
// or window masks exclude are never scored; they would be -inf, adding 0.
//
//===----------------------------------------------------------------------===//

#include "fa/Support/Reference.h"

#include <algorithm>
#include <atomic>
#include <cmath>
#include <limits>
#include <thread>

using namespace fa::support;

namespace {

constexpr double kNegInf = -std::numeric_limits<double>::infinity();

int64_t saturatingAdd(int64_t a, int64_t b) {
  int64_t result;
  if (__builtin_add_overflow(a, b, &result))
    return b > 0 ? std::numeric_limits<int64_t>::max()
                 : std::numeric_limits<int64_t>::min();
  return result;
}

int64_t saturatingSub(int64_t a, int64_t b) {
  int64_t result;
  if (__builtin_sub_overflow(a, b, &result))
    return b < 0 ? std::numeric_limits<int64_t>::max()
                 : std::numeric_limits<int64_t>::min();
  return result;
}

std::string formatShape(const std::vector<int64_t> &shape) {
  std::string result = "[";
  for (size_t i = 0; i < shape.size(); ++i)
    result += (i ? ", " : "") + std::to_string(shape[i]);
  return result + "]";
}

/// Everything one row needs, validated and with strides precomputed.
struct Problem {
  int64_t batch, headsQ, headsKV, seqQ, seqK, headDim, headDimV;
  int64_t groupSize; // Hq / Hkv
  const double *q, *k, *v;
  double scale;
  const AttentionOptions *options;
  const double *slopes = nullptr;
  int64_t slopesBatchStride = 0;
  const double *bias = nullptr;
  int64_t biasStrides[4] = {0, 0, 0, 0};
  double *out;
  double *lse;
};

/// The dot product with four partial sums, so that it pipelines.
double dot(const double *a, const double *b, int64_t n) {
  double s0 = 0, s1 = 0, s2 = 0, s3 = 0;
  int64_t d = 0;
  for (; d + 4 <= n; d += 4) {
    s0 += a[d] * b[d];
    s1 += a[d + 1] * b[d + 1];
    s2 += a[d + 2] * b[d + 2];
    s3 += a[d + 3] * b[d + 3];
  }
  for (; d < n; ++d)
    s0 += a[d] * b[d];
  return (s0 + s1) + (s2 + s3);
}

/// Computes O[b, h, i, :] and lse[b, h, i]. `scores` has room for Nk values
/// and `acc` for Dv.
void computeRow(const Problem &p, int64_t b, int64_t h, int64_t i,
                double *scores, double *acc) {
  const AttentionOptions &options = *p.options;
  const int64_t kvHead = h / p.groupSize;
  const int64_t diagonal = i + p.seqK - p.seqQ;

  // The keys the causal and window masks leave, as [jBegin, jEnd).
  int64_t jBegin = 0, jEnd = p.seqK;
  if (options.causal == CausalMask::TopLeft)
    jEnd = std::min(jEnd, i + 1);
  else if (options.causal == CausalMask::BottomRight)
    jEnd = std::min(jEnd, diagonal + 1);
  if (options.window) {
    jBegin = std::max(jBegin, saturatingSub(diagonal, options.window->left));
    jEnd = std::min(
        jEnd, saturatingAdd(saturatingAdd(diagonal, options.window->right), 1));
  }
  jEnd = std::max(jEnd, jBegin);

  const double *qRow = p.q + ((b * p.headsQ + h) * p.seqQ + i) * p.headDim;
  const double *kHead = p.k + (b * p.headsKV + kvHead) * p.seqK * p.headDim;
  const double *vHead = p.v + (b * p.headsKV + kvHead) * p.seqK * p.headDimV;
  const double slope = p.slopes ? p.slopes[b * p.slopesBatchStride + h] : 0.0;
  const double *biasRow = p.bias
                              ? p.bias + b * p.biasStrides[0] +
                                    h * p.biasStrides[1] + i * p.biasStrides[2]
                              : nullptr;

  double rowMax = kNegInf;
  for (int64_t j = jBegin; j < jEnd; ++j) {
    if (options.maskMod && !options.maskMod(b, h, i, j)) {
      scores[j - jBegin] = kNegInf;
      continue;
    }
    double s = p.scale * dot(qRow, kHead + j * p.headDim, p.headDim);
    if (options.softcap)
      s = *options.softcap * std::tanh(s / *options.softcap);
    if (p.slopes)
      s -= slope * std::fabs(static_cast<double>(diagonal - j));
    if (biasRow)
      s += biasRow[j * p.biasStrides[3]];
    if (options.scoreMod)
      s = options.scoreMod(s, b, h, i, j);
    scores[j - jBegin] = s;
    if (s > rowMax)
      rowMax = s;
  }

  double *outRow = p.out + ((b * p.headsQ + h) * p.seqQ + i) * p.headDimV;
  double *lse = p.lse + (b * p.headsQ + h) * p.seqQ + i;
  // Every score is -inf: softmax would be 0/0; the row is defined as empty.
  if (rowMax == kNegInf) {
    std::fill(outRow, outRow + p.headDimV, 0.0);
    *lse = kNegInf;
    return;
  }

  std::fill(acc, acc + p.headDimV, 0.0);
  double sum = 0;
  for (int64_t j = jBegin; j < jEnd; ++j) {
    double s = scores[j - jBegin];
    if (s == kNegInf)
      continue;
    double weight = std::exp(s - rowMax);
    sum += weight;
    const double *vRow = vHead + j * p.headDimV;
    for (int64_t d = 0; d < p.headDimV; ++d)
      acc[d] += weight * vRow[d];
  }
  for (int64_t d = 0; d < p.headDimV; ++d)
    outRow[d] = acc[d] / sum;
  *lse = rowMax + std::log(sum);
}

bool product(const std::vector<int64_t> &shape, int64_t &result) {
  result = 1;
  for (int64_t dim : shape)
    if (dim < 0 || __builtin_mul_overflow(result, dim, &result))
      return false;
  return true;
}

} // namespace

bool fa::support::attentionReference(const TensorRef &q, const TensorRef &k,
                                     const TensorRef &v,
                                     const AttentionOptions &options,
                                     std::vector<double> &out,
                                     std::vector<double> &lse,
                                     std::string &error) {
  auto fail = [&](const std::string &message) {
    error = "attention reference: " + message;
    return false;
  };
  struct Named {
    const char *name;
    const TensorRef *tensor;
  };
  for (Named t : {Named{"Q", &q}, Named{"K", &k}, Named{"V", &v}}) {
    int64_t count;
    if (t.tensor->shape.size() != 4 || !product(t.tensor->shape, count))
      return fail(std::string(t.name) + " has shape " +
                  formatShape(t.tensor->shape) + ", expected rank 4");
    if (count != 0 && !t.tensor->data)
      return fail(std::string(t.name) + " has no data");
  }
  Problem p;
  p.batch = q.shape[0];
  p.headsQ = q.shape[1];
  p.seqQ = q.shape[2];
  p.headDim = q.shape[3];
  p.headsKV = k.shape[1];
  p.seqK = k.shape[2];
  p.headDimV = v.shape[3];
  if (k.shape[0] != p.batch || v.shape[0] != p.batch ||
      k.shape[3] != p.headDim || v.shape[1] != p.headsKV ||
      v.shape[2] != p.seqK)
    return fail("shapes Q " + formatShape(q.shape) + ", K " +
                formatShape(k.shape) + ", V " + formatShape(v.shape) +
                " do not match [B, Hq, Nq, D], [B, Hkv, Nk, D], "
                "[B, Hkv, Nk, Dv]");
  if (p.headsKV == 0 || p.headsQ % p.headsKV != 0)
    return fail("Hq = " + std::to_string(p.headsQ) +
                " is not a multiple of Hkv = " + std::to_string(p.headsKV));
  p.groupSize = p.headsQ / p.headsKV;
  if (!options.scale && p.headDim == 0)
    return fail("D is 0, so the default scale 1/sqrt(D) is undefined");
  p.scale = options.scale ? *options.scale
                          : 1.0 / std::sqrt(static_cast<double>(p.headDim));
  if (options.softcap && *options.softcap == 0.0)
    return fail("softcap is 0");
  if (options.numThreads < 0)
    return fail("numThreads is negative");
  p.q = q.data;
  p.k = k.data;
  p.v = v.data;
  p.options = &options;

  if (options.alibiSlopes.data) {
    const std::vector<int64_t> &shape = options.alibiSlopes.shape;
    if (shape == std::vector<int64_t>{p.headsQ})
      p.slopesBatchStride = 0;
    else if (shape == std::vector<int64_t>{p.batch, p.headsQ})
      p.slopesBatchStride = p.headsQ;
    else
      return fail("alibi slopes have shape " + formatShape(shape) +
                  ", expected [Hq] or [B, Hq] = [" + std::to_string(p.batch) +
                  ", " + std::to_string(p.headsQ) + "]");
    p.slopes = options.alibiSlopes.data;
  }

  if (options.bias.data) {
    const std::vector<int64_t> &shape = options.bias.shape;
    const int64_t full[4] = {p.batch, p.headsQ, p.seqQ, p.seqK};
    bool ok = shape.size() == 4;
    for (size_t d = 0; ok && d < 4; ++d)
      ok = shape[d] == 1 || shape[d] == full[d];
    if (!ok)
      return fail("bias has shape " + formatShape(shape) +
                  ", expected rank 4 with each dim 1 or the full [B, Hq, "
                  "Nq, Nk] = " +
                  formatShape({full[0], full[1], full[2], full[3]}));
    // A broadcast dim has stride 0: every index reads element 0.
    int64_t stride = 1;
    for (int d = 3; d >= 0; --d) {
      p.biasStrides[d] = shape[d] == 1 ? 0 : stride;
      stride *= shape[d];
    }
    p.bias = options.bias.data;
  }

  int64_t outSize;
  if (!product({p.batch, p.headsQ, p.seqQ, p.headDimV}, outSize))
    return fail("the output [B, Hq, Nq, Dv] is too large");
  out.assign(static_cast<size_t>(outSize), 0.0);
  lse.assign(static_cast<size_t>(p.batch * p.headsQ * p.seqQ), 0.0);
  p.out = out.data();
  p.lse = lse.data();

  // Work items are blocks of rows of one (b, h), taken from a shared counter
  // so that threads balance causal rows of unequal length.
  constexpr int64_t kRowsPerItem = 16;
  const int64_t blocksPerHead = (p.seqQ + kRowsPerItem - 1) / kRowsPerItem;
  const int64_t numItems = p.batch * p.headsQ * blocksPerHead;
  std::atomic<int64_t> nextItem{0};
  auto worker = [&]() {
    std::vector<double> scores(static_cast<size_t>(p.seqK));
    std::vector<double> acc(static_cast<size_t>(p.headDimV));
    for (int64_t item = nextItem++; item < numItems; item = nextItem++) {
      const int64_t bh = item / blocksPerHead;
      const int64_t rowBegin = (item % blocksPerHead) * kRowsPerItem;
      const int64_t rowEnd = std::min(rowBegin + kRowsPerItem, p.seqQ);
      for (int64_t i = rowBegin; i < rowEnd; ++i)
        computeRow(p, bh / p.headsQ, bh % p.headsQ, i, scores.data(),
                   acc.data());
    }
  };

  int64_t numThreads = options.numThreads;
  if (numThreads == 0)
    numThreads = std::max(1u, std::thread::hardware_concurrency());
  numThreads = std::min(numThreads, numItems);
  if (numThreads <= 1) {
    worker();
    return true;
  }
  std::vector<std::thread> threads;
  for (int64_t t = 1; t < numThreads; ++t)
    threads.emplace_back(worker);
  worker();
  for (std::thread &thread : threads)
    thread.join();
  return true;
}

double fa::support::relativeError(const double *out, const double *ref,
                                  size_t n) {
  // Scale by the largest magnitude so that nothing overflows when squared or
  // subtracted.
  double maxAbs = 0;
  for (size_t i = 0; i < n; ++i) {
    if (std::isfinite(out[i]) && std::isfinite(ref[i]))
      maxAbs = std::max({maxAbs, std::fabs(out[i]), std::fabs(ref[i])});
    else if (!(std::isinf(ref[i]) && out[i] == ref[i]))
      return std::numeric_limits<double>::infinity();
  }
  if (maxAbs == 0)
    return 0;
  double diffSq = 0, refSq = 0;
  for (size_t i = 0; i < n; ++i) {
    if (!std::isfinite(ref[i]))
      continue;
    double diff = out[i] / maxAbs - ref[i] / maxAbs;
    double scaledRef = ref[i] / maxAbs;
    diffSq += diff * diff;
    refSq += scaledRef * scaledRef;
  }
  if (refSq == 0)
    return std::sqrt(diffSq) * maxAbs;
  return std::sqrt(diffSq / refSq);
}
