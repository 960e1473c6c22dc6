//===- Reference.h - float64 attention reference ----------------*- C++ -*-===//
//
// An independent float64 implementation of attention, forward and
// backward, the ground truth FA's compiled kernels are checked against. It
// follows the definition step by step and shares no code with the compiler.
//
// Q is [B, Hq, Nq, D], K is [B, Hkv, Nk, D], V is [B, Hkv, Nk, Dv], all
// row-major; query head h reads kv head h / (Hq / Hkv). With off = Nk - Nq,
// for each b, h, i, j:
//   s = scale * dot(Q[b,h,i,:], K[b,hkv,j,:])   (scale: 1/sqrt(D) unless set)
//   softcap:    s = softcap * tanh(s / softcap)
//   alibi:      s -= slope[b?][h] * |i + off - j|   (slopes [Hq] or [B, Hq])
//   bias:       s += bias[b,h,i,j]   (rank 4; each dim 1 or the full size)
//   score_mod:  s = scoreMod(s, b, h, i, j)
//   masks, each keeping only:
//     causal top-left      j <= i
//     causal bottom-right  j <= i + off
//     window [left, right] i + off - left <= j <= i + off + right
//     mask_mod             maskMod(b, h, i, j) is true
//   a masked score is -inf.
// Then O[b,h,i,:] = softmax_j(s) @ V[b,hkv] and lse[b,h,i] = log(sum_j
// exp(s)), both max-subtracted; a row with every score -inf gets O = 0 and
// lse = -inf.
//
// The backward pass, given dO, rescores each row and with P = softmax_j(s):
//   dP_j = dot(dO[b,h,i,:], V[b,hkv,j,:]),  D = sum_j P_j dP_j,
//   dS_j = P_j (dP_j - D),
//   dT_j = dS_j * scoreMod'(t_j)   (t_j: the score before score_mod),
//   dDot_j = dT_j * scale * (softcap ? 1 - tanh^2(scale q.k / softcap) : 1),
//   dQ[b,h,i,:] += dDot_j K[b,hkv,j,:],  dK[b,hkv,j,:] += dDot_j Q[b,h,i,:],
//   dV[b,hkv,j,:] += P_j dO[b,h,i,:],    dBias[b,h,i,j] += dT_j
// (dBias summed over its broadcast dims). scoreMod' is a central difference
// in float64 (step 1e-6 * max(1, |t|)), independent of any symbolic
// derivative. Masked keys and fully masked rows add nothing.
//
// Memory stays O(Nk) per thread: one row of scores at a time, never the
// Nq x Nk matrix.
//
//===----------------------------------------------------------------------===//

#ifndef FA_SUPPORT_REFERENCE_H
#define FA_SUPPORT_REFERENCE_H

#include <array>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <vector>

namespace fa::support {

/// A read-only row-major float64 tensor: `data` holds the product of `shape`
/// elements.
struct TensorRef {
  const double *data = nullptr;
  std::vector<int64_t> shape;
};

/// score_mod: the new score from the score and (b, h, i, j).
using ScoreModFn = std::function<double(double score, int64_t b, int64_t h,
                                        int64_t i, int64_t j)>;
/// The arithmetic the reference is computed in: Exact is float64 throughout;
/// the others compute as a plain kernel would with inputs of that element type
/// (docs/accuracy.md): scores, softmax and every sum in f32, P and the score
/// gradient rounded to the type before their matmuls, results rounded to it.
enum class Precision { Exact, F32, F16, BF16 };

/// `x` rounded to nearest (ties to even) in `precision` (Exact: unchanged).
double roundTo(double x, Precision precision);

/// mask_mod: whether (b, h, i, j) is kept.
using MaskModFn =
    std::function<bool(int64_t b, int64_t h, int64_t i, int64_t j)>;

enum class CausalMask { None, TopLeft, BottomRight };

/// A window keeps i + off - left <= j <= i + off + right (off = Nk - Nq).
/// Bounds may be negative; any int64 is safe.
struct SlidingWindow {
  int64_t left = 0;
  int64_t right = 0;
};

struct AttentionOptions {
  /// Multiplies q.k; 1/sqrt(D) when unset.
  std::optional<double> scale;
  /// Applies softcap * tanh(s / softcap) when set; must be nonzero.
  std::optional<double> softcap;
  /// ALiBi slopes, shape [Hq] or [B, Hq]; none when `data` is null.
  TensorRef alibiSlopes;
  /// An additive bias of rank 4, each dim 1 (broadcast) or the full
  /// [B, Hq, Nq, Nk]; none when `data` is null.
  TensorRef bias;
  ScoreModFn scoreMod;
  CausalMask causal = CausalMask::None;
  std::optional<SlidingWindow> window;
  MaskModFn maskMod;
  /// Dropout of probabilities with this p in [0, 1): a probability is kept,
  /// scaled by 1 / (1 - p), when dropoutKeeps(seed, b, h, i, j, p) (the
  /// softmax's sum and lse are taken before dropout).
  std::optional<double> dropoutP;
  uint64_t dropoutSeed = 0;
  /// Exact (float64), or the low-precision reference of that element type.
  Precision precision = Precision::Exact;
  /// The low-precision reference's type of dBias when the bias's differs
  /// from the inputs'; unset: `precision`.
  std::optional<Precision> biasPrecision;
  /// Worker threads over (b, h, row blocks) forward and (b, kv head)
  /// backward; 0 means one per hardware thread. With more than one, scoreMod
  /// and maskMod run concurrently.
  int numThreads = 1;
};

/// Computes O ([B, Hq, Nq, Dv], resized into `out`) and lse ([B, Hq, Nq],
/// resized into `lse`). Returns false, with `error` saying why, when the
/// shapes are inconsistent or an option is invalid.
bool attentionReference(const TensorRef &q, const TensorRef &k,
                        const TensorRef &v, const AttentionOptions &options,
                        std::vector<double> &out, std::vector<double> &lse,
                        std::string &error);

/// Gradients of attention (as attentionReference defines it) with respect to
/// q, k and v, given the output gradient dO ([B, Hq, Nq, Dv]). Computes
/// everything in float64 from q, k, v and dO alone (O, P and lse are
/// recomputed exactly, never taken from a kernel). dK/dV of a kv head shared
/// by several query heads (GQA) are summed over them. Resizes dq/dk/dv to
/// q/k/v's sizes. When `dBias` is set it gets the gradient with respect to
/// options.bias, of the bias's shape (summed over broadcast dims), or is
/// emptied when there is no bias. Threads split the work by (b, kv head);
/// every thread count gives the same bits. Returns false, with `error` saying
/// why, when the shapes are inconsistent or an option is invalid.
bool attentionGradReference(const TensorRef &q, const TensorRef &k,
                            const TensorRef &v, const TensorRef &dOut,
                            const AttentionOptions &options,
                            std::vector<double> &dq, std::vector<double> &dk,
                            std::vector<double> &dv, std::string &error,
                            std::vector<double> *dBias = nullptr);

/// Whether dropout keeps probability (b, h, i, j): Philox4x32-10 with key
/// (seed low 32 bits, seed high 32 bits) on the counter (j, i, h, b), each
/// truncated to 32 bits; kept when the first output word x has
/// (x >> 8) * 2^-24 >= p rounded to float. This is fa.attention's
/// definition, written here independently of the compiler.
bool dropoutKeeps(uint64_t seed, int64_t b, int64_t h, int64_t i, int64_t j,
                  double p);

/// Philox4x32-10 (Salmon et al., SC'11) of `counter` under `key`.
std::array<uint32_t, 4> philox4x32(std::array<uint32_t, 4> counter,
                                   std::array<uint32_t, 2> key);

/// ||out - ref||_2 / ||ref||_2 over `n` elements. An infinity in ref matched
/// by the same infinity in out (a masked row's lse) contributes 0; any other
/// non-finite value in either gives +inf. When ||ref||_2 is 0 this returns
/// ||out||_2, the absolute error.
double relativeError(const double *out, const double *ref, size_t n);

/// How far a result is from the exact reference, against how far a plain
/// low-precision computation is (docs/accuracy.md).
struct AccuracyCheck {
  /// max over rows of ||got_i - exact_i|| / norm.
  double error = 0;
  /// The same for the low-precision reference.
  double baseline = 0;
  /// 2 * baseline + kAccuracyEpsilon (or a fixed override).
  double bound = 0;
  /// The row of `got` with the largest error.
  int64_t worstRow = 0;
  bool passed = true;
};

/// The absolute slack of the bound, for results whose low-precision
/// reference is (nearly) exact.
constexpr double kAccuracyEpsilon = 1e-5;

/// How a tensor's row errors are normalized.
enum class ErrorScale {
  /// By the root mean square of the exact rows' L2 norms (1 when 0).
  Relative,
  /// Not at all: for lse, whose error is absolute (in nats).
  Absolute,
};

/// Judges `got` (n values, rows of `rowLength` along the last dimension)
/// against the exact reference and the low-precision one: it passes when its
/// worst row error is at most twice the low-precision reference's plus
/// kAccuracyEpsilon, or, when `fixedBound` > 0, at most that. An infinity in
/// `exact` matched by the same infinity counts 0; any other non-finite value
/// makes the error infinite.
AccuracyCheck checkAccuracy(const double *got, const double *exact,
                            const double *lowPrecision, size_t n,
                            int64_t rowLength,
                            ErrorScale scale = ErrorScale::Relative,
                            double fixedBound = 0);

/// The worst row error of `got` against `exact` alone (AccuracyCheck::error).
double rowError(const double *got, const double *exact, size_t n,
                int64_t rowLength, ErrorScale scale = ErrorScale::Relative);

} // namespace fa::support

#endif // FA_SUPPORT_REFERENCE_H
