//===- TestTensors.h - Host tensors for the API tests -----------*- C++ -*-===//
//
// Shared by the API tests: host tensors stored in a dtype with their rounded
// values kept in double for the float64 reference, layout and error helpers.
//
//===----------------------------------------------------------------------===//

#ifndef FA_UNITTESTS_API_TESTTENSORS_H
#define FA_UNITTESTS_API_TESTTENSORS_H

#include "fa/Support/Npy.h"
#include "fa/Support/Reference.h"
#include "fa/fa.h"

#include <cstring>
#include <random>
#include <string>
#include <vector>

namespace fa::testing {

/// A host tensor stored in `dtype`, with its values as the kernel sees them
/// (rounded to the dtype) kept in double for the reference.
struct HostTensor {
  fa::DType dtype;
  std::vector<int64_t> shape;
  std::vector<uint8_t> bytes;
  std::vector<double> values;

  HostTensor(fa::DType dtype, std::vector<int64_t> shape)
      : dtype(dtype), shape(std::move(shape)) {
    int64_t n = 1;
    for (int64_t d : this->shape)
      n *= d;
    bytes.resize(n * elementSize());
    values.resize(n);
  }
  size_t elementSize() const { return dtype == fa::DType::F32 ? 4 : 2; }
  void set(size_t i, double x) {
    if (dtype == fa::DType::F32) {
      float f = static_cast<float>(x);
      std::memcpy(&bytes[4 * i], &f, 4);
      values[i] = f;
      return;
    }
    uint16_t bits = dtype == fa::DType::BF16
                        ? fa::support::floatToBFloat16(static_cast<float>(x))
                        : fa::support::floatToHalf(static_cast<float>(x));
    std::memcpy(&bytes[2 * i], &bits, 2);
    values[i] = dtype == fa::DType::BF16 ? fa::support::bfloat16ToFloat(bits)
                                         : fa::support::halfToFloat(bits);
  }
  double get(size_t i) const {
    if (dtype == fa::DType::F32) {
      float f;
      std::memcpy(&f, &bytes[4 * i], 4);
      return f;
    }
    uint16_t bits;
    std::memcpy(&bits, &bytes[2 * i], 2);
    return dtype == fa::DType::BF16 ? fa::support::bfloat16ToFloat(bits)
                                    : fa::support::halfToFloat(bits);
  }
  void randomize(std::mt19937 &rng, double stddev = 1.0) {
    std::normal_distribution<double> normal(0.0, stddev);
    for (size_t i = 0; i < values.size(); ++i)
      set(i, normal(rng));
  }
  fa::TensorView view() {
    return {bytes.data(), dtype, shape, {}, fa::Device::CPU};
  }
  fa::support::TensorRef ref() const { return {values.data(), shape}; }
  std::vector<double> read() const {
    std::vector<double> out(values.size());
    for (size_t i = 0; i < out.size(); ++i)
      out[i] = get(i);
    return out;
  }
};

/// A contiguous [B, N, H, D] tensor reordered to contiguous [B, H, N, D]
/// (the reference's layout).
inline std::vector<double> bnhdToBhnd(const std::vector<double> &x, int64_t b,
                                      int64_t h, int64_t n, int64_t d) {
  std::vector<double> y(x.size());
  for (int64_t i0 = 0; i0 < b; ++i0)
    for (int64_t i1 = 0; i1 < h; ++i1)
      for (int64_t i2 = 0; i2 < n; ++i2)
        for (int64_t i3 = 0; i3 < d; ++i3)
          y[((i0 * h + i1) * n + i2) * d + i3] =
              x[((i0 * n + i2) * h + i1) * d + i3];
  return y;
}

/// Relative L2 error bound of O for each dtype (O is rounded to it).
inline double boundFor(fa::DType dtype) {
  switch (dtype) {
  case fa::DType::F32:
    return 1e-5;
  case fa::DType::F16:
    return 5e-3;
  case fa::DType::BF16:
    return 2e-2;
  default:
    // Attention tensors are only f32, f16 or bf16 (the others are captures).
    return 0;
  }
}

/// The message of the fa::Error that `fn` throws.
template <typename Fn> std::string errorOf(Fn fn) {
  try {
    fn();
  } catch (const fa::Error &e) {
    return e.what();
  }
  return "(no fa::Error)";
}

} // namespace fa::testing

#endif // FA_UNITTESTS_API_TESTTENSORS_H
