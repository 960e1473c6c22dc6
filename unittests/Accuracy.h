//===- Accuracy.h - The accuracy criterion as GoogleTest checks -*- C++ -*-===//
//
// Every test that judges a kernel's numbers does it through these: the
// result against the float64 reference, allowed twice the error of a plain
// computation in the inputs' precision (docs/accuracy.md), row by row.
//
//===----------------------------------------------------------------------===//

#ifndef FA_UNITTESTS_ACCURACY_H
#define FA_UNITTESTS_ACCURACY_H

#include "fa/Support/Reference.h"
#include "fa/fa.h"

#include "gtest/gtest.h"

#include <cstdio>
#include <string>
#include <vector>

namespace fa::testing {

/// The low-precision reference's arithmetic for tensors of `dtype`.
inline fa::support::Precision precisionOf(fa::DType dtype) {
  switch (dtype) {
  case fa::DType::F16:
    return fa::support::Precision::F16;
  case fa::DType::BF16:
    return fa::support::Precision::BF16;
  default:
    return fa::support::Precision::F32;
  }
}

/// Whether `got` passes docs/accuracy.md's criterion against `exact` and
/// `low` (rows of `rowLength`); the message names the tensor, its worst row
/// error, the low-precision reference's and the bound.
inline ::testing::AssertionResult
accurate(const char *name, const std::vector<double> &got,
         const std::vector<double> &exact, const std::vector<double> &low,
         int64_t rowLength,
         fa::support::ErrorScale scale = fa::support::ErrorScale::Relative) {
  if (got.size() != exact.size() || low.size() != exact.size())
    return ::testing::AssertionFailure()
           << name << ": " << got.size() << " values, the references have "
           << exact.size() << " and " << low.size();
  fa::support::AccuracyCheck c = fa::support::checkAccuracy(
      got.data(), exact.data(), low.data(), got.size(), rowLength, scale);
  char line[160];
  std::snprintf(line, sizeof line,
                "%s: row_err %.3e, low-precision reference %.3e, bound %.3e "
                "(worst row %lld)",
                name, c.error, c.baseline, c.bound,
                static_cast<long long>(c.worstRow));
  return c.passed ? ::testing::AssertionSuccess() << line
                  : ::testing::AssertionFailure() << line;
}

/// Appends `check`'s message to `result`, which fails once any check has.
inline void combine(::testing::AssertionResult &result,
                    const ::testing::AssertionResult &check) {
  if (!check)
    result = ::testing::AssertionFailure()
             << result.message() << "\n  " << check.message();
  else
    result << "\n  " << check.message();
}

/// O (and lse when given) of a forward with `options` on q, k, v against
/// both references.
inline ::testing::AssertionResult forwardIsAccurate(
    const fa::support::TensorRef &q, const fa::support::TensorRef &k,
    const fa::support::TensorRef &v, fa::support::AttentionOptions options,
    fa::support::Precision precision, const std::vector<double> &out,
    const std::vector<double> *lse = nullptr) {
  std::vector<double> refs[2][2]; // [exact, low][O, lse]
  std::string error;
  for (int low = 0; low < 2; ++low) {
    options.precision = low ? precision : fa::support::Precision::Exact;
    if (!fa::support::attentionReference(q, k, v, options, refs[low][0],
                                         refs[low][1], error))
      return ::testing::AssertionFailure() << error;
  }
  ::testing::AssertionResult result = ::testing::AssertionSuccess();
  combine(result, accurate("O", out, refs[0][0], refs[1][0], v.shape[3]));
  if (lse)
    combine(result, accurate("lse", *lse, refs[0][1], refs[1][1], 1,
                             fa::support::ErrorScale::Absolute));
  return result;
}

/// dQ, dK, dV (and dBias when given) of a backward with `options` on q, k, v
/// and dO against both references.
inline ::testing::AssertionResult backwardIsAccurate(
    const fa::support::TensorRef &q, const fa::support::TensorRef &k,
    const fa::support::TensorRef &v, const fa::support::TensorRef &dOut,
    fa::support::AttentionOptions options, fa::support::Precision precision,
    const std::vector<double> &dq, const std::vector<double> &dk,
    const std::vector<double> &dv, const std::vector<double> *dBias = nullptr) {
  std::vector<double> refs[2][4]; // [exact, low][dQ, dK, dV, dBias]
  std::string error;
  for (int low = 0; low < 2; ++low) {
    options.precision = low ? precision : fa::support::Precision::Exact;
    if (!fa::support::attentionGradReference(
            q, k, v, dOut, options, refs[low][0], refs[low][1], refs[low][2],
            error, dBias ? &refs[low][3] : nullptr))
      return ::testing::AssertionFailure() << error;
  }
  ::testing::AssertionResult result = ::testing::AssertionSuccess();
  combine(result, accurate("dQ", dq, refs[0][0], refs[1][0], q.shape[3]));
  combine(result, accurate("dK", dk, refs[0][1], refs[1][1], k.shape[3]));
  combine(result, accurate("dV", dv, refs[0][2], refs[1][2], v.shape[3]));
  if (dBias)
    combine(result, accurate("dBias", *dBias, refs[0][3], refs[1][3],
                             options.bias.shape.back()));
  return result;
}

} // namespace fa::testing

#endif // FA_UNITTESTS_ACCURACY_H
