//===- attention.cpp - Using FA from a C++ program ------------------------===//
//
// Compiles a causal GQA attention once and runs it on two batches of
// different shapes, checking one output row by hand, then takes gradients
// with the backward. Build it against
// include/fa/fa.h and link libfa.so; nothing else is needed.
//
//===----------------------------------------------------------------------===//

#include "fa/fa.h"

#include <array>
#include <cmath>
#include <cstdio>
#include <random>
#include <vector>

namespace {

/// Attention of one query row against keys [0, last] of one head, in double.
std::vector<double> attendRow(const float *q, const float *k, const float *v,
                              int64_t last, int64_t d, double scale) {
  std::vector<double> scores(last + 1), out(d, 0.0);
  double max = -INFINITY, sum = 0.0;
  for (int64_t j = 0; j <= last; ++j) {
    double s = 0.0;
    for (int64_t e = 0; e < d; ++e)
      s += double(q[e]) * k[j * d + e];
    scores[j] = s * scale;
    max = std::max(max, scores[j]);
  }
  for (int64_t j = 0; j <= last; ++j)
    sum += scores[j] = std::exp(scores[j] - max);
  for (int64_t j = 0; j <= last; ++j)
    for (int64_t e = 0; e < d; ++e)
      out[e] += scores[j] / sum * v[j * d + e];
  return out;
}

} // namespace

int main() {
  fa::AttentionSpec spec;
  spec.dtype = fa::DType::F32;
  spec.headDim = 64;
  spec.causal = fa::Causal::TopLeft;
  spec.returnLse = true; // the backward needs it
  fa::Kernel kernel = fa::compile(spec);
  std::printf("compiled fa %s kernel for %s\n", fa::version().c_str(),
              kernel.target().c_str());

  std::mt19937 rng(0);
  std::normal_distribution<float> normal;
  double worst = 0.0;
  for (auto [b, hq, hkv, n] :
       {std::array<int64_t, 4>{2, 8, 2, 100}, {1, 4, 4, 333}}) {
    const int64_t d = 64;
    std::vector<float> q(b * hq * n * d), k(b * hkv * n * d),
        v(b * hkv * n * d), o(b * hq * n * d);
    for (auto *t : {&q, &k, &v})
      for (float &x : *t)
        x = normal(rng);
    fa::TensorView qv{q.data(), fa::DType::F32, {b, hq, n, d}};
    fa::TensorView kv{k.data(), fa::DType::F32, {b, hkv, n, d}};
    fa::TensorView vv{v.data(), fa::DType::F32, {b, hkv, n, d}};
    fa::TensorView ov{o.data(), fa::DType::F32, {b, hq, n, d}};
    std::vector<float> lse(b * hq * n);
    fa::TensorView lsev{lse.data(), fa::DType::F32, {b, hq, n}};
    kernel.forward(qv, kv, vv, ov, &lsev);

    // The last row of the last head sees every key of its K/V head.
    int64_t h = hq - 1, i = n - 1, hk = h / (hq / hkv), bi = b - 1;
    std::vector<double> ref = attendRow(
        &q[((bi * hq + h) * n + i) * d], &k[(bi * hkv + hk) * n * d],
        &v[(bi * hkv + hk) * n * d], i, d, 1.0 / std::sqrt(double(d)));
    double err = 0.0, norm = 0.0;
    for (int64_t e = 0; e < d; ++e) {
      double got = o[((bi * hq + h) * n + i) * d + e];
      err += (got - ref[e]) * (got - ref[e]);
      norm += ref[e] * ref[e];
    }
    double rel = std::sqrt(err / norm);
    worst = std::max(worst, rel);
    std::printf("B=%lld Hq=%lld Hkv=%lld N=%lld: last row rel_err=%.3g\n",
                (long long)b, (long long)hq, (long long)hkv, (long long)n, rel);
  }

  // Gradients of loss = sum(O): dO = 1. Each softmax row sums to 1, so a
  // column of dV summed over the keys counts the query rows (of every query
  // head in the group) that read it: Nq * Hq / Hkv.
  {
    const int64_t b = 1, hq = 4, hkv = 2, n = 50, d = 64;
    std::vector<float> q(b * hq * n * d), k(b * hkv * n * d),
        v(b * hkv * n * d), o(b * hq * n * d), dout(o.size(), 1.0f),
        lse(b * hq * n), dq(q.size()), dk(k.size()), dv(v.size());
    for (auto *t : {&q, &k, &v})
      for (float &x : *t)
        x = normal(rng);
    auto view = [](std::vector<float> &t, int64_t h) {
      return fa::TensorView{t.data(), fa::DType::F32, {b, h, n, d}};
    };
    fa::TensorView lsev{lse.data(), fa::DType::F32, {b, hq, n}};
    kernel.forward(view(q, hq), view(k, hkv), view(v, hkv), view(o, hq), &lsev);
    kernel.backward(view(q, hq), view(k, hkv), view(v, hkv), view(o, hq),
                    view(dout, hq), lsev, view(dq, hq), view(dk, hkv),
                    view(dv, hkv));
    double err = 0.0;
    for (int64_t h = 0; h < hkv; ++h)
      for (int64_t e = 0; e < d; ++e) {
        double sum = 0.0;
        for (int64_t j = 0; j < n; ++j)
          sum += dv[(h * n + j) * d + e];
        err = std::max(err, std::abs(sum / (n * hq / hkv) - 1.0));
      }
    worst = std::max(worst, err);
    std::printf("backward: dV column sums rel_err=%.3g\n", err);
  }

  // A wrong call is an fa::Error, thrown before anything runs.
  try {
    std::vector<float> q(64);
    fa::TensorView bad{q.data(), fa::DType::F32, {1, 1, 1, 64}};
    fa::TensorView k{q.data(), fa::DType::F16, {1, 1, 1, 64}};
    kernel.forward(bad, k, k, bad);
  } catch (const fa::Error &e) {
    std::printf("rejected: %s\n", e.what());
  }
  return worst < 1e-5 ? 0 : 1;
}
