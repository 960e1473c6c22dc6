//===- Npy.h - NumPy .npy files ---------------------------------*- C++ -*-===//
//
// Reads and writes NumPy .npy files (the format of np.save / np.load) for the
// dtypes FA exchanges with Python: f16, bf16, f32, f64 and the i32/i64 ids.
// The library has no dependencies and reports errors through return values,
// so it builds with -fno-exceptions.
//
// ml_dtypes' bfloat16 has no NumPy type code: np.save writes it as the raw
// 2-byte void type '<V2'. readNpy reports '<V2' (and '|V2') as BF16 and
// writeNpy writes BF16 as '<V2', so np.load(path).view(ml_dtypes.bfloat16)
// recovers the array in Python.
//
//===----------------------------------------------------------------------===//

#ifndef FA_SUPPORT_NPY_H
#define FA_SUPPORT_NPY_H

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

namespace fa::support {

enum class DType { F16, BF16, F32, F64, I32, I64 };

/// Bytes per element of `dtype`.
size_t getDTypeSize(DType dtype);

/// A short name for messages: "f16", "bf16", "f32", "f64", "i32", "i64".
const char *getDTypeName(DType dtype);

/// The descr writeNpy puts in the header: "<f2", "<V2", "<f4", "<f8", "<i4",
/// "<i8".
const char *getNpyDescr(DType dtype);

/// An n-dimensional array in C (row-major) order. `data` holds the elements'
/// little-endian bytes, getDTypeSize(dtype) bytes each.
struct NpyArray {
  DType dtype = DType::F32;
  std::vector<int64_t> shape; // Empty for a 0-d (scalar) array.
  std::vector<uint8_t> data;

  /// The product of `shape` (1 for a 0-d array).
  int64_t getNumElements() const;
  /// Whether data.size() is what dtype and shape call for.
  bool isConsistent() const;
};

/// Reads the .npy file at `path` (format version 1.0, 2.0 or 3.0) into `out`.
/// On failure returns false and sets `error` to a message that starts with
/// `path`; `out` is then unspecified.
bool readNpy(const std::string &path, NpyArray &out, std::string &error);

/// Writes `array` to `path` as a format 1.0 .npy file, byte for byte what
/// np.save writes for the same array. On failure returns false and sets
/// `error` to a message that starts with `path`.
bool writeNpy(const std::string &path, const NpyArray &array,
              std::string &error);

//===----------------------------------------------------------------------===//
// Element conversions. All roundings are to nearest, ties to even; overflow
// gives infinity; NaN stays NaN (keeping its sign); subnormals are exact.
//===----------------------------------------------------------------------===//

/// IEEE binary16 bits to float (exact).
float halfToFloat(uint16_t bits);
/// float to IEEE binary16 bits.
uint16_t floatToHalf(float value);
/// double to IEEE binary16 bits, rounded once (not through float).
uint16_t doubleToHalf(double value);

/// bfloat16 bits to float (exact).
float bfloat16ToFloat(uint16_t bits);
/// float to bfloat16 bits.
uint16_t floatToBFloat16(float value);
/// double to bfloat16 bits, rounded once (not through float).
uint16_t doubleToBFloat16(double value);

/// Every element of `array` as a double, in C order. Exact except for i64
/// values beyond 2^53. Requires array.isConsistent().
std::vector<double> toDoubles(const NpyArray &array);

/// An array of `dtype` and `shape` holding `values` (getNumElements() of
/// them, C order), rounded to `dtype`. Integer dtypes round to nearest and
/// saturate; NaN becomes 0.
NpyArray fromDoubles(DType dtype, std::vector<int64_t> shape,
                     const double *values);

} // namespace fa::support

#endif // FA_SUPPORT_NPY_H
