//===- Reference.cpp - float64 attention reference ------------------------===//
//
// One query row at a time: the row's scores go to an Nk buffer, then a
// max-subtracted softmax weights V's rows into the output. Keys that causal
// or window masks exclude are never scored; they would be -inf, adding 0.
//
// The backward pass rescores each row the same way (so its P is exactly the
// forward's) and forms dS from P and dO . V_j. Its workers own a (b, kv head)
// each, so dK and dV need no locks; a bias that several of them share gets
// its gradient in a second pass over query rows, whose workers own the bias
// rows. Either way each sum runs in an order that does not depend on the
// thread count, so every thread count gives the same bits.
//
// The low-precision reference is the same algorithm with the roundings a
// plain kernel makes (docs/accuracy.md): every arithmetic step goes through
// Arith, whose roundings are the identity for the exact reference.
//
//===----------------------------------------------------------------------===//

#include "fa/Support/Reference.h"

#include <algorithm>
#include <atomic>
#include <cmath>
#include <cstring>
#include <limits>
#include <thread>
#include <utility>

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

/// The roundings of the low-precision reference: f32 for the kernel's
/// arithmetic, the element type for what it stores or feeds a matmul. Both
/// are the identity for the exact reference.
struct Arith {
  Precision precision = Precision::Exact;
  bool exact() const { return precision == Precision::Exact; }
  double f32(double x) const {
    return exact() ? x : static_cast<double>(static_cast<float>(x));
  }
  double elem(double x) const { return roundTo(x, precision); }
};

/// Everything one row needs, validated and with strides precomputed.
struct Problem {
  Arith arith;
  int64_t batch, headsQ, headsKV, seqQ, seqK, headDim, headDimV;
  int64_t groupSize; // Hq / Hkv
  const double *q, *k, *v;
  double scale;
  const AttentionOptions *options;
  const double *slopes = nullptr;
  int64_t slopesBatchStride = 0;
  const double *bias = nullptr;
  int64_t biasStrides[4] = {0, 0, 0, 0};
  // Forward outputs.
  double *out = nullptr;
  double *lse = nullptr;
  // Backward input and outputs.
  const double *dOut = nullptr;
  double *dq = nullptr, *dk = nullptr, *dv = nullptr, *dBias = nullptr;
};

/// The dropout factor of (b, h, i, j): 1 without dropout, else 0 or
/// 1 / (1 - p).
double dropoutFactor(const Problem &p, int64_t b, int64_t h, int64_t i,
                     int64_t j) {
  const AttentionOptions &o = *p.options;
  if (!o.dropoutP)
    return 1.0;
  return fa::support::dropoutKeeps(o.dropoutSeed, b, h, i, j, *o.dropoutP)
             ? 1.0 / (1.0 - *o.dropoutP)
             : 0.0;
}

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

/// dot(a, b, n) as a kernel's plain loop computes it under `arith`: one f32
/// rounding per product added.
double loopDot(const Arith &arith, const double *a, const double *b,
               int64_t n) {
  if (arith.exact())
    return dot(a, b, n);
  float sum = 0;
  for (int64_t d = 0; d < n; ++d)
    sum = std::fma(static_cast<float>(a[d]), static_cast<float>(b[d]), sum);
  return sum;
}

/// dot(a, b, n) as a matmul computes it under `arith`: f16 and bf16 operands
/// go through tensor-core steps, each adding 16 exact products to the f32
/// accumulator with one rounding; f32 ones through a plain loop. (D = dO . O
/// is no matmul: loopDot, whose sums run in another order than dP's, which
/// shows where the two cancel.)
double rowDot(const Arith &arith, const double *a, const double *b, int64_t n) {
  if (arith.exact() || arith.precision == Precision::F32)
    return loopDot(arith, a, b, n);
  float sum = 0;
  for (int64_t d = 0; d < n; d += 16) {
    double step = 0;
    for (int64_t e = d; e < std::min(n, d + 16); ++e)
      step += a[e] * b[e];
    sum = static_cast<float>(sum + step);
  }
  return sum;
}

/// The keys that the causal and window masks leave row i, as [begin, end).
std::pair<int64_t, int64_t> keyRange(const Problem &p, int64_t i) {
  const AttentionOptions &options = *p.options;
  const int64_t diagonal = i + p.seqK - p.seqQ;
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
  return {jBegin, std::max(jEnd, jBegin)};
}

/// Scores row (b, h, i) against the keys [jBegin, jEnd) into
/// scores[j - jBegin], -inf where a mask excludes the key, and returns their
/// max. When `preMod` is set, preMod[j - jBegin] also gets the score before
/// score_mod and dPreMod[j - jBegin] its derivative with respect to q.k: the
/// scale times softcap's derivative.
double scoreRow(const Problem &p, int64_t b, int64_t h, int64_t i,
                int64_t jBegin, int64_t jEnd, double *scores,
                double *preMod = nullptr, double *dPreMod = nullptr) {
  const AttentionOptions &options = *p.options;
  const Arith &a = p.arith;
  const int64_t diagonal = i + p.seqK - p.seqQ;
  const double *qRow = p.q + ((b * p.headsQ + h) * p.seqQ + i) * p.headDim;
  const double *kHead =
      p.k + (b * p.headsKV + h / p.groupSize) * p.seqK * p.headDim;
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
    double s = a.f32(a.f32(p.scale) *
                     rowDot(a, qRow, kHead + j * p.headDim, p.headDim));
    double ds = a.f32(p.scale);
    if (options.softcap) {
      double t = a.f32(std::tanh(a.f32(s / *options.softcap)));
      s = a.f32(*options.softcap * t);
      ds = a.f32(ds * a.f32(1.0 - t * t));
    }
    if (p.slopes)
      s = a.f32(s - slope * std::fabs(static_cast<double>(diagonal - j)));
    if (biasRow)
      s = a.f32(s + biasRow[j * p.biasStrides[3]]);
    if (preMod) {
      preMod[j - jBegin] = s;
      dPreMod[j - jBegin] = ds;
    }
    if (options.scoreMod)
      s = a.f32(options.scoreMod(s, b, h, i, j));
    scores[j - jBegin] = s;
    if (s > rowMax)
      rowMax = s;
  }
  return rowMax;
}

/// Given row (b, h, i)'s scores of keys [jBegin, jEnd) (scoreRow's) and
/// their max, writes O's row (Dv values) to `outRow` and returns lse. A row
/// whose every score is -inf gets O = 0 and lse = -inf.
double softmaxTimesV(const Problem &p, int64_t b, int64_t h, int64_t i,
                     int64_t jBegin, int64_t jEnd, const double *scores,
                     double rowMax, double *outRow) {
  const Arith &a = p.arith;
  // Every score is -inf: softmax would be 0/0; the row is defined as empty.
  if (rowMax == kNegInf) {
    std::fill(outRow, outRow + p.headDimV, 0.0);
    return kNegInf;
  }
  const double *vHead =
      p.v + (b * p.headsKV + h / p.groupSize) * p.seqK * p.headDimV;
  std::fill(outRow, outRow + p.headDimV, 0.0);
  double sum = 0;
  for (int64_t j = jBegin; j < jEnd; ++j) {
    double s = scores[j - jBegin];
    if (s == kNegInf)
      continue;
    double weight = a.f32(std::exp(a.f32(s - rowMax)));
    sum = a.f32(sum + weight);
    // Dropout acts on the probabilities that multiply V, not on their sum. A
    // kernel rounds P to the element type for its matmul with V.
    double kept = a.f32(a.elem(weight) * dropoutFactor(p, b, h, i, j));
    const double *vRow = vHead + j * p.headDimV;
    for (int64_t d = 0; d < p.headDimV; ++d)
      outRow[d] = a.f32(outRow[d] + kept * vRow[d]);
  }
  for (int64_t d = 0; d < p.headDimV; ++d)
    outRow[d] = a.elem(a.f32(outRow[d] / sum));
  return a.f32(rowMax + a.f32(std::log(sum)));
}

/// Computes O[b, h, i, :] and lse[b, h, i]. `scores` has room for Nk values.
void computeRow(const Problem &p, int64_t b, int64_t h, int64_t i,
                double *scores) {
  auto [jBegin, jEnd] = keyRange(p, i);
  const double rowMax = scoreRow(p, b, h, i, jBegin, jEnd, scores);
  double *outRow = p.out + ((b * p.headsQ + h) * p.seqQ + i) * p.headDimV;
  p.lse[(b * p.headsQ + h) * p.seqQ + i] =
      softmaxTimesV(p, b, h, i, jBegin, jEnd, scores, rowMax, outRow);
}

/// d scoreMod / d score at `score`, by a central difference with step
/// 1e-6 * max(1, |score|), divided by the step as actually represented.
double scoreModDerivative(const ScoreModFn &scoreMod, double score, int64_t b,
                          int64_t h, int64_t i, int64_t j) {
  const double step = 1e-6 * std::max(1.0, std::fabs(score));
  const double above = score + step, below = score - step;
  return (scoreMod(above, b, h, i, j) - scoreMod(below, b, h, i, j)) /
         (above - below);
}

/// One worker's rows of Nk values for gradientRow.
struct GradientBuffers {
  std::vector<double> probs, preMod, dPreMod, dScore, outRow;
  GradientBuffers(int64_t seqK, int64_t headDimV)
      : probs(seqK), preMod(seqK), dPreMod(seqK), dScore(seqK),
        outRow(headDimV) {}
};

/// Adds row (b, h, i)'s share of the gradients: dQ[b, h, i, :] (which only
/// this row writes), dK and dV of kv head h / G when `toQKV`, dBias when
/// `toBias`. A fully masked row adds nothing.
void gradientRow(const Problem &p, int64_t b, int64_t h, int64_t i,
                 GradientBuffers &buffers, bool toQKV, bool toBias) {
  const AttentionOptions &options = *p.options;
  const Arith &a = p.arith;
  auto [jBegin, jEnd] = keyRange(p, i);
  double *probs = buffers.probs.data();
  double *preMod = buffers.preMod.data();
  double *dPreMod = buffers.dPreMod.data();
  double *dScore = buffers.dScore.data();
  const double rowMax =
      scoreRow(p, b, h, i, jBegin, jEnd, probs, preMod, dPreMod);
  if (rowMax == kNegInf)
    return;
  const int64_t n = jEnd - jBegin;

  const int64_t rowIndex = (b * p.headsQ + h) * p.seqQ + i;
  const int64_t kvIndex = b * p.headsKV + h / p.groupSize;
  const double *dORow = p.dOut + rowIndex * p.headDimV;
  const double *vHead = p.v + kvIndex * p.seqK * p.headDimV;

  // The low-precision reference takes D_i = dO_i . O_i with O_i as the
  // forward stored it (rounded), and P = exp(s - lse) as a kernel recomputes
  // it; the exact one D_i = sum_j P_j dP_j, with P normalized by its sum.
  double rowD = 0;
  if (!a.exact()) {
    double *outRow = buffers.outRow.data();
    const double lse =
        softmaxTimesV(p, b, h, i, jBegin, jEnd, probs, rowMax, outRow);
    rowD = loopDot(a, dORow, outRow, p.headDimV);
    for (int64_t j = 0; j < n; ++j)
      probs[j] =
          probs[j] == kNegInf ? 0.0 : a.f32(std::exp(a.f32(probs[j] - lse)));
  } else {
    // P = softmax(s), in place; masked keys get P = 0.
    double sum = 0;
    for (int64_t j = 0; j < n; ++j) {
      probs[j] = probs[j] == kNegInf ? 0.0 : std::exp(probs[j] - rowMax);
      sum += probs[j];
    }
    for (int64_t j = 0; j < n; ++j)
      probs[j] /= sum;
  }

  // dP_j = dO_i . V_j, D_i = sum_j P_j dP_j; then the gradient with respect
  // to the score before score_mod: P_j (dP_j - D_i) d scoreMod / d score.
  for (int64_t j = 0; j < n; ++j) {
    if (probs[j] == 0.0)
      continue;
    // With dropout O = (P * Z) V, so dP_j = Z_j (dO_i . V_j).
    dScore[j] =
        a.f32(dropoutFactor(p, b, h, i, jBegin + j) *
              rowDot(a, dORow, vHead + (jBegin + j) * p.headDimV, p.headDimV));
    if (a.exact())
      rowD += probs[j] * dScore[j];
  }
  for (int64_t j = 0; j < n; ++j) {
    if (probs[j] == 0.0) {
      dScore[j] = 0.0;
      continue;
    }
    dScore[j] = a.f32(probs[j] * a.f32(dScore[j] - rowD));
    if (options.scoreMod)
      dScore[j] =
          a.f32(dScore[j] * scoreModDerivative(options.scoreMod, preMod[j], b,
                                               h, i, jBegin + j));
  }

  if (toBias) {
    double *dBiasRow = p.dBias + b * p.biasStrides[0] + h * p.biasStrides[1] +
                       i * p.biasStrides[2];
    for (int64_t j = 0; j < n; ++j)
      if (probs[j] != 0.0) {
        double &dBias = dBiasRow[(jBegin + j) * p.biasStrides[3]];
        dBias = a.f32(dBias + dScore[j]);
      }
  }
  if (!toQKV)
    return;
  const double *qRow = p.q + rowIndex * p.headDim;
  const double *kHead = p.k + kvIndex * p.seqK * p.headDim;
  double *dqRow = p.dq + rowIndex * p.headDim;
  double *dkHead = p.dk + kvIndex * p.seqK * p.headDim;
  double *dvHead = p.dv + kvIndex * p.seqK * p.headDimV;
  for (int64_t j = 0; j < n; ++j) {
    if (probs[j] == 0.0)
      continue;
    // A kernel rounds the score gradient and P to the element type for their
    // matmuls; dropout's 1 / (1 - p) applies to the rounded P (as in O).
    const double dDot = a.elem(a.f32(dScore[j] * dPreMod[j]));
    const double *kRow = kHead + (jBegin + j) * p.headDim;
    double *dkRow = dkHead + (jBegin + j) * p.headDim;
    for (int64_t d = 0; d < p.headDim; ++d) {
      dqRow[d] = a.f32(dqRow[d] + dDot * kRow[d]);
      dkRow[d] = a.f32(dkRow[d] + dDot * qRow[d]);
    }
    double *dvRow = dvHead + (jBegin + j) * p.headDimV;
    const double kept =
        a.f32(a.elem(probs[j]) * dropoutFactor(p, b, h, i, jBegin + j));
    for (int64_t d = 0; d < p.headDimV; ++d)
      dvRow[d] = a.f32(dvRow[d] + kept * dORow[d]);
  }
}

bool product(const std::vector<int64_t> &shape, int64_t &result) {
  result = 1;
  for (int64_t dim : shape)
    if (dim < 0 || __builtin_mul_overflow(result, dim, &result))
      return false;
  return true;
}

/// Checks that `tensor` has rank 4, a representable element count and data
/// unless it is empty. Sets `error` otherwise.
bool checkRank4(const char *name, const TensorRef &tensor, std::string &error) {
  int64_t count;
  if (tensor.shape.size() != 4 || !product(tensor.shape, count)) {
    error = std::string(name) + " has shape " + formatShape(tensor.shape) +
            ", expected rank 4";
    return false;
  }
  if (count != 0 && !tensor.data) {
    error = std::string(name) + " has no data";
    return false;
  }
  return true;
}

/// Validates q, k, v and the options and fills in everything in `p` but the
/// outputs and dO. Sets `error` (without a prefix) when they are invalid.
bool setUpProblem(const TensorRef &q, const TensorRef &k, const TensorRef &v,
                  const AttentionOptions &options, Problem &p,
                  std::string &error) {
  auto fail = [&](const std::string &message) {
    error = message;
    return false;
  };
  if (!checkRank4("Q", q, error) || !checkRank4("K", k, error) ||
      !checkRank4("V", v, error))
    return false;
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
  if (options.dropoutP &&
      !(*options.dropoutP >= 0.0 && *options.dropoutP < 1.0))
    return fail("dropout p = " + std::to_string(*options.dropoutP) +
                " is not in [0, 1)");
  if (options.numThreads < 0)
    return fail("numThreads is negative");
  p.q = q.data;
  p.k = k.data;
  p.v = v.data;
  p.options = &options;
  p.arith.precision = options.precision;

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
  return true;
}

/// Runs `worker` on min(numThreads, numItems) threads, the calling one among
/// them; numThreads = 0 means one per hardware thread. Each worker takes its
/// items from a shared counter.
template <typename Worker>
void runWorkers(int64_t numThreads, int64_t numItems, Worker worker) {
  if (numThreads == 0)
    numThreads = std::max(1u, std::thread::hardware_concurrency());
  numThreads = std::min(numThreads, numItems);
  if (numThreads <= 1) {
    worker();
    return;
  }
  std::vector<std::thread> threads;
  for (int64_t t = 1; t < numThreads; ++t)
    threads.emplace_back(worker);
  worker();
  for (std::thread &thread : threads)
    thread.join();
}

/// The gradients as a kernel stores them: rounded to their element types.
void roundGradients(const AttentionOptions &options, std::vector<double> &dq,
                    std::vector<double> &dk, std::vector<double> &dv,
                    std::vector<double> *dBias) {
  if (options.precision == Precision::Exact)
    return;
  for (std::vector<double> *grad : {&dq, &dk, &dv})
    for (double &x : *grad)
      x = roundTo(x, options.precision);
  if (dBias)
    for (double &x : *dBias)
      x = roundTo(x, options.biasPrecision.value_or(options.precision));
}

} // namespace

double fa::support::roundTo(double x, Precision precision) {
  switch (precision) {
  case Precision::Exact:
    return x;
  case Precision::F32:
    return static_cast<float>(x);
  case Precision::F16:
    return static_cast<double>(static_cast<_Float16>(x));
  case Precision::BF16: {
    // To f32, then to nearest even on the upper 16 bits (NaN stays NaN).
    float f = static_cast<float>(x);
    if (std::isnan(f))
      return x;
    uint32_t bits;
    std::memcpy(&bits, &f, sizeof bits);
    bits = (bits + 0x7FFFu + ((bits >> 16) & 1u)) & 0xFFFF0000u;
    std::memcpy(&f, &bits, sizeof f);
    return f;
  }
  }
  return x;
}

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
  Problem p;
  std::string message;
  if (!setUpProblem(q, k, v, options, p, message))
    return fail(message);

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
  runWorkers(options.numThreads, numItems, [&]() {
    std::vector<double> scores(static_cast<size_t>(p.seqK));
    for (int64_t item = nextItem++; item < numItems; item = nextItem++) {
      const int64_t bh = item / blocksPerHead;
      const int64_t rowBegin = (item % blocksPerHead) * kRowsPerItem;
      const int64_t rowEnd = std::min(rowBegin + kRowsPerItem, p.seqQ);
      for (int64_t i = rowBegin; i < rowEnd; ++i)
        computeRow(p, bh / p.headsQ, bh % p.headsQ, i, scores.data());
    }
  });
  return true;
}

bool fa::support::attentionGradReference(
    const TensorRef &q, const TensorRef &k, const TensorRef &v,
    const TensorRef &dOut, const AttentionOptions &options,
    std::vector<double> &dq, std::vector<double> &dk, std::vector<double> &dv,
    std::string &error, std::vector<double> *dBias) {
  auto fail = [&](const std::string &message) {
    error = "attention gradient reference: " + message;
    return false;
  };
  Problem p;
  std::string message;
  if (!setUpProblem(q, k, v, options, p, message))
    return fail(message);
  if (!checkRank4("dO", dOut, message))
    return fail(message);
  const std::vector<int64_t> outShape = {p.batch, p.headsQ, p.seqQ, p.headDimV};
  if (dOut.shape != outShape)
    return fail("dO has shape " + formatShape(dOut.shape) +
                ", expected [B, Hq, Nq, Dv] = " + formatShape(outShape));
  p.dOut = dOut.data;

  // Q, K and V's element counts were checked to fit in int64_t.
  auto count = [](const TensorRef &t) {
    return static_cast<size_t>(t.shape[0] * t.shape[1] * t.shape[2] *
                               t.shape[3]);
  };
  dq.assign(count(q), 0.0);
  dk.assign(count(k), 0.0);
  dv.assign(count(v), 0.0);
  p.dq = dq.data();
  p.dk = dk.data();
  p.dv = dv.data();
  // Bias elements that two (b, kv head) items read get their gradient in a
  // second pass.
  bool biasPass = false;
  if (dBias) {
    dBias->clear();
    if (p.bias) {
      dBias->assign(count(options.bias), 0.0);
      p.dBias = dBias->data();
      biasPass = (p.biasStrides[0] == 0 && p.batch > 1) ||
                 (p.biasStrides[1] == 0 && p.headsKV > 1);
    }
  }

  // Pass 1: each item is one (b, kv head), all the query heads of its group
  // and all their rows, so it alone writes its dK, dV and dQ rows (and the
  // bias rows it reads, unless biasPass).
  const int64_t numItems = p.batch * p.headsKV;
  std::atomic<int64_t> nextItem{0};
  runWorkers(options.numThreads, numItems, [&]() {
    GradientBuffers buffers(p.seqK, p.headDimV);
    for (int64_t item = nextItem++; item < numItems; item = nextItem++) {
      const int64_t b = item / p.headsKV, kvHead = item % p.headsKV;
      for (int64_t h = kvHead * p.groupSize; h < (kvHead + 1) * p.groupSize;
           ++h)
        for (int64_t i = 0; i < p.seqQ; ++i)
          gradientRow(p, b, h, i, buffers, /*toQKV=*/true,
                      /*toBias=*/p.dBias && !biasPass);
    }
  });
  if (!biasPass) {
    roundGradients(options, dq, dk, dv, dBias);
    return true;
  }

  // Pass 2: rescore every row for dBias alone. Each item is query row i of
  // every (b, h), so it alone writes bias row i; when the bias broadcasts
  // over rows too, one worker does them all.
  nextItem = 0;
  const int64_t numThreads =
      p.biasStrides[2] == 0 && p.seqQ > 1 ? 1 : options.numThreads;
  runWorkers(numThreads, p.seqQ, [&]() {
    GradientBuffers buffers(p.seqK, p.headDimV);
    for (int64_t i = nextItem++; i < p.seqQ; i = nextItem++)
      for (int64_t b = 0; b < p.batch; ++b)
        for (int64_t h = 0; h < p.headsQ; ++h)
          gradientRow(p, b, h, i, buffers, /*toQKV=*/false, /*toBias=*/true);
  });
  roundGradients(options, dq, dk, dv, dBias);
  return true;
}

std::array<uint32_t, 4> fa::support::philox4x32(std::array<uint32_t, 4> c,
                                                std::array<uint32_t, 2> key) {
  for (int round = 0; round < 10; ++round) {
    if (round > 0) {
      key[0] += 0x9E3779B9u;
      key[1] += 0xBB67AE85u;
    }
    const uint64_t m0 = uint64_t{0xD2511F53u} * c[0];
    const uint64_t m1 = uint64_t{0xCD9E8D57u} * c[2];
    c = {static_cast<uint32_t>(m1 >> 32) ^ c[1] ^ key[0],
         static_cast<uint32_t>(m1),
         static_cast<uint32_t>(m0 >> 32) ^ c[3] ^ key[1],
         static_cast<uint32_t>(m0)};
  }
  return c;
}

bool fa::support::dropoutKeeps(uint64_t seed, int64_t b, int64_t h, int64_t i,
                               int64_t j, double p) {
  const std::array<uint32_t, 4> x = philox4x32(
      {static_cast<uint32_t>(j), static_cast<uint32_t>(i),
       static_cast<uint32_t>(h), static_cast<uint32_t>(b)},
      {static_cast<uint32_t>(seed), static_cast<uint32_t>(seed >> 32)});
  const double uniform = static_cast<double>(x[0] >> 8) * 0x1p-24;
  return uniform >= static_cast<double>(static_cast<float>(p));
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

namespace {

/// rowError, and in `worstRow` the row it comes from (the first row with a
/// mismatched non-finite value, when it is infinite).
double worstRowError(const double *got, const double *exact, size_t n,
                     int64_t rowLength, ErrorScale scale, int64_t &worstRow) {
  worstRow = 0;
  if (n == 0 || rowLength <= 0)
    return 0;
  const size_t length = static_cast<size_t>(rowLength);
  const size_t rows = n / length;
  // Row norms are summed as ratios to the largest magnitude, so that nothing
  // overflows when squared.
  double maxAbs = 0;
  for (size_t e = 0; e < n; ++e) {
    if (std::isfinite(got[e]) && std::isfinite(exact[e])) {
      maxAbs = std::max({maxAbs, std::fabs(got[e]), std::fabs(exact[e])});
    } else if (!(std::isinf(exact[e]) && got[e] == exact[e])) {
      worstRow = static_cast<int64_t>(e / length);
      return std::numeric_limits<double>::infinity();
    }
  }
  if (maxAbs == 0)
    return 0;
  double norm = 1;
  if (scale == ErrorScale::Relative) {
    double sumSq = 0;
    for (size_t e = 0; e < n; ++e)
      if (std::isfinite(exact[e]))
        sumSq += (exact[e] / maxAbs) * (exact[e] / maxAbs);
    double rms = std::sqrt(sumSq / static_cast<double>(rows)) * maxAbs;
    norm = rms > 0 ? rms : 1.0;
  }
  double worst = 0;
  for (size_t r = 0; r < rows; ++r) {
    double sumSq = 0;
    for (size_t e = r * length; e < (r + 1) * length; ++e) {
      if (!std::isfinite(exact[e]))
        continue;
      double diff = got[e] / maxAbs - exact[e] / maxAbs;
      sumSq += diff * diff;
    }
    double error = std::sqrt(sumSq) * maxAbs / norm;
    if (error > worst) {
      worst = error;
      worstRow = static_cast<int64_t>(r);
    }
  }
  return worst;
}

} // namespace

double fa::support::rowError(const double *got, const double *exact, size_t n,
                             int64_t rowLength, ErrorScale scale) {
  int64_t row;
  return worstRowError(got, exact, n, rowLength, scale, row);
}

AccuracyCheck fa::support::checkAccuracy(const double *got, const double *exact,
                                         const double *lowPrecision, size_t n,
                                         int64_t rowLength, ErrorScale scale,
                                         double fixedBound) {
  AccuracyCheck check;
  check.error = worstRowError(got, exact, n, rowLength, scale, check.worstRow);
  check.baseline = rowError(lowPrecision, exact, n, rowLength, scale);
  check.bound =
      fixedBound > 0 ? fixedBound : 2 * check.baseline + kAccuracyEpsilon;
  check.passed = check.error <= check.bound;
  return check;
}
