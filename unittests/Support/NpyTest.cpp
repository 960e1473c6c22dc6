//===- NpyTest.cpp - Tests for NumPy .npy files ---------------------------===//
//
// The fixtures under Inputs/ come from numpy and ml_dtypes themselves
// (Inputs/make_fixtures.py); the values expected here are the ones that
// script saves, stated again independently.
//
//===----------------------------------------------------------------------===//

#include "fa/Support/Npy.h"

#include "gtest/gtest.h"

#include <cmath>
#include <cstring>
#include <fstream>
#include <limits>
#include <sstream>

using namespace fa::support;

namespace {

const double kInf = std::numeric_limits<double>::infinity();

std::string inputPath(const std::string &name) {
  return std::string(FA_SUPPORT_INPUTS_DIR) + "/" + name;
}

std::string tempPath(const std::string &name) {
  return ::testing::TempDir() + "FASupportNpyTest_" + name;
}

std::string readBytes(const std::string &path) {
  std::ifstream file(path, std::ios::binary);
  std::ostringstream contents;
  contents << file.rdbuf();
  return contents.str();
}

void writeBytes(const std::string &path, const std::string &bytes) {
  std::ofstream file(path, std::ios::binary);
  file.write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
}

/// Reads `path`, failing the test (with readNpy's message) if it cannot.
NpyArray load(const std::string &path) {
  NpyArray array;
  std::string error;
  EXPECT_TRUE(readNpy(path, array, error)) << error;
  return array;
}

/// The message readNpy gives for `path`, or "" if it reads.
std::string loadError(const std::string &path) {
  NpyArray array;
  std::string error;
  if (readNpy(path, array, error))
    return "";
  return error;
}

/// A version-1.0 file with `header` as the header text (unpadded) and `data`.
std::string makeNpy(const std::string &header, const std::string &data = "") {
  std::string bytes = "\x93NUMPY\x01";
  bytes += '\0';
  std::string text = header + "\n";
  bytes += static_cast<char>(text.size() & 0xff);
  bytes += static_cast<char>(text.size() >> 8);
  return bytes + text + data;
}

const char *kSupported = "; supported: '<f2', '<V2' (ml_dtypes bfloat16), "
                         "'<f4', '<f8', '<i4', '<i8'";

//===----------------------------------------------------------------------===//
// Reading files numpy wrote
//===----------------------------------------------------------------------===//

TEST(NpyRead, Float32) {
  NpyArray array = load(inputPath("f32.npy"));
  EXPECT_EQ(array.dtype, DType::F32);
  EXPECT_EQ(array.shape, (std::vector<int64_t>{2, 3}));
  EXPECT_EQ(array.data.size(), 24u);
  std::vector<double> expected = {1.5, -2.25, 0.0, 3.0, double(0.1f), -7.0};
  EXPECT_EQ(toDoubles(array), expected);
}

TEST(NpyRead, Float16) {
  NpyArray array = load(inputPath("f16.npy"));
  EXPECT_EQ(array.dtype, DType::F16);
  EXPECT_EQ(array.shape, (std::vector<int64_t>{10}));
  std::vector<double> values = toDoubles(array);
  ASSERT_EQ(values.size(), 10u);
  EXPECT_EQ(values[0], 1.0);
  EXPECT_EQ(values[1], -2.0);
  EXPECT_EQ(values[2], 65504.0);
  EXPECT_EQ(values[3], std::ldexp(1.0, -14));
  EXPECT_EQ(values[4], std::ldexp(1.0, -24));
  EXPECT_EQ(values[5], kInf);
  EXPECT_EQ(values[6], -kInf);
  EXPECT_TRUE(std::isnan(values[7]));
  EXPECT_EQ(values[8], 0.0);
  EXPECT_TRUE(std::signbit(values[8]));
  // 1/3 in binary16: 0x3555 = (1 + 341/1024) / 4.
  EXPECT_EQ(values[9], (1.0 + 341.0 / 1024.0) / 4.0);
  uint16_t first;
  std::memcpy(&first, array.data.data(), 2);
  EXPECT_EQ(first, 0x3c00);
}

TEST(NpyRead, BFloat16FromMlDtypes) {
  // ml_dtypes' bfloat16 is saved with descr '<V2'.
  EXPECT_NE(readBytes(inputPath("bf16.npy")).find("'descr': '<V2'"),
            std::string::npos);
  NpyArray array = load(inputPath("bf16.npy"));
  EXPECT_EQ(array.dtype, DType::BF16);
  EXPECT_EQ(array.shape, (std::vector<int64_t>{3, 3}));
  std::vector<double> values = toDoubles(array);
  ASSERT_EQ(values.size(), 9u);
  EXPECT_EQ(values[0], 1.0);
  EXPECT_EQ(values[1], -2.5);
  // The largest finite bfloat16, (2 - 2^-7) * 2^127.
  EXPECT_EQ(values[2], std::ldexp(2.0 - std::ldexp(1.0, -7), 127));
  // The smallest subnormal, 2^-133.
  EXPECT_EQ(values[3], std::ldexp(1.0, -133));
  EXPECT_EQ(values[4], kInf);
  EXPECT_TRUE(std::isnan(values[5]));
  // 0.1 rounds to 0x3dcd = 205/128 * 2^-4.
  EXPECT_EQ(values[6], 205.0 / 128.0 / 16.0);
  EXPECT_EQ(values[7], 0.0);
  EXPECT_TRUE(std::signbit(values[7]));
  EXPECT_EQ(values[8], 256.0);
}

TEST(NpyRead, Float64) {
  NpyArray array = load(inputPath("f64.npy"));
  EXPECT_EQ(array.dtype, DType::F64);
  EXPECT_EQ(array.shape, (std::vector<int64_t>{2, 2}));
  std::vector<double> expected = {
      0.1, -1e300, std::numeric_limits<double>::denorm_min(), 2.5};
  EXPECT_EQ(toDoubles(array), expected);
}

TEST(NpyRead, Int32) {
  NpyArray array = load(inputPath("i32.npy"));
  EXPECT_EQ(array.dtype, DType::I32);
  EXPECT_EQ(array.shape, (std::vector<int64_t>{2, 3}));
  EXPECT_EQ(toDoubles(array), (std::vector<double>{-3, -2, -1, 0, 1, 2}));
}

TEST(NpyRead, Int64) {
  NpyArray array = load(inputPath("i64.npy"));
  EXPECT_EQ(array.dtype, DType::I64);
  EXPECT_EQ(array.shape, (std::vector<int64_t>{4}));
  ASSERT_EQ(array.data.size(), 32u);
  int64_t values[4];
  std::memcpy(values, array.data.data(), sizeof(values));
  EXPECT_EQ(values[0], 0);
  EXPECT_EQ(values[1], -1);
  EXPECT_EQ(values[2], int64_t(1) << 40);
  EXPECT_EQ(values[3], -(int64_t(1) << 62));
  EXPECT_EQ(toDoubles(array), (std::vector<double>{0, -1, std::ldexp(1.0, 40),
                                                   -std::ldexp(1.0, 62)}));
}

TEST(NpyRead, Shapes) {
  NpyArray scalar = load(inputPath("scalar_f32.npy"));
  EXPECT_TRUE(scalar.shape.empty());
  EXPECT_EQ(scalar.getNumElements(), 1);
  EXPECT_EQ(toDoubles(scalar), (std::vector<double>{4.5}));

  NpyArray vector = load(inputPath("vector_f32.npy"));
  EXPECT_EQ(vector.shape, (std::vector<int64_t>{5}));
  EXPECT_EQ(toDoubles(vector), (std::vector<double>{0, 1, 2, 3, 4}));

  NpyArray empty = load(inputPath("empty_f32.npy"));
  EXPECT_EQ(empty.shape, (std::vector<int64_t>{0, 3}));
  EXPECT_EQ(empty.getNumElements(), 0);
  EXPECT_TRUE(empty.data.empty());

  NpyArray rank5 = load(inputPath("rank5_f64.npy"));
  EXPECT_EQ(rank5.shape, (std::vector<int64_t>{100, 1, 2, 1, 1}));
  std::vector<double> values = toDoubles(rank5);
  ASSERT_EQ(values.size(), 200u);
  for (size_t i = 0; i < values.size(); ++i)
    EXPECT_EQ(values[i], double(i));
}

TEST(NpyRead, FormatVersions2And3) {
  for (const char *name : {"v2_f32.npy", "v3_f32.npy"}) {
    SCOPED_TRACE(name);
    NpyArray array = load(inputPath(name));
    EXPECT_EQ(array.dtype, DType::F32);
    EXPECT_EQ(array.shape, (std::vector<int64_t>{2, 3}));
    EXPECT_EQ(toDoubles(array), (std::vector<double>{0, 1, 2, 3, 4, 5}));
  }
}

TEST(NpyRead, HeaderVariants) {
  // Key order, double quotes, no trailing comma, extra whitespace, Python 2
  // longs and a plain void descr are all things np.load accepts.
  std::string data(8, '\0');
  struct Case {
    const char *header;
    DType dtype;
    std::vector<int64_t> shape;
  } cases[] = {
      {"{'shape': (2,), 'fortran_order': False, 'descr': '<f4'}",
       DType::F32,
       {2}},
      {"{\"descr\": \"<i4\", \"fortran_order\": False, \"shape\": (2 , ) }",
       DType::I32,
       {2}},
      {"{'descr': '<i8', 'fortran_order': False, 'shape': (1L, 1L), }",
       DType::I64,
       {1, 1}},
      {"{'descr': '|V2', 'fortran_order': False, 'shape': (4,), }",
       DType::BF16,
       {4}},
      {"{'descr':'<f2','fortran_order':False,'shape':(2,2)}",
       DType::F16,
       {2, 2}},
  };
  for (const Case &c : cases) {
    SCOPED_TRACE(c.header);
    std::string path = tempPath("variant.npy");
    writeBytes(path, makeNpy(c.header, data));
    NpyArray array = load(path);
    EXPECT_EQ(array.dtype, c.dtype);
    EXPECT_EQ(array.shape, c.shape);
  }
}

//===----------------------------------------------------------------------===//
// Writing
//===----------------------------------------------------------------------===//

TEST(NpyWrite, MatchesNumpyByteForByte) {
  for (const char *name :
       {"f32.npy", "f16.npy", "bf16.npy", "f64.npy", "i32.npy", "i64.npy",
        "scalar_f32.npy", "vector_f32.npy", "empty_f32.npy", "rank5_f64.npy"}) {
    SCOPED_TRACE(name);
    NpyArray array = load(inputPath(name));
    std::string path = tempPath(name);
    std::string error;
    ASSERT_TRUE(writeNpy(path, array, error)) << error;
    EXPECT_EQ(readBytes(path), readBytes(inputPath(name)));
  }
}

TEST(NpyWrite, RoundTripsEveryDType) {
  // Values exact in their dtypes, so toDoubles gives them back.
  const double floats[] = {0.5, -1.25, 3.0, 1024.0, -0.0, 7.0};
  const double ints[] = {8.0, -1.0, 3.0, 1024.0, 0.0, -7.0};
  for (DType dtype : {DType::F16, DType::BF16, DType::F32, DType::F64,
                      DType::I32, DType::I64}) {
    SCOPED_TRACE(getDTypeName(dtype));
    bool isInt = dtype == DType::I32 || dtype == DType::I64;
    const double *values = isInt ? ints : floats;
    NpyArray array = fromDoubles(dtype, {3, 1, 2}, values);
    ASSERT_TRUE(array.isConsistent());
    std::string path =
        tempPath(std::string("roundtrip_") + getDTypeName(dtype) + ".npy");
    std::string error;
    ASSERT_TRUE(writeNpy(path, array, error)) << error;
    EXPECT_NE(readBytes(path).find(std::string("'descr': '") +
                                   getNpyDescr(dtype) + "'"),
              std::string::npos);
    NpyArray back = load(path);
    EXPECT_EQ(back.dtype, dtype);
    EXPECT_EQ(back.shape, (std::vector<int64_t>{3, 1, 2}));
    EXPECT_EQ(back.data, array.data);
    EXPECT_EQ(toDoubles(back), (std::vector<double>(values, values + 6)));
  }
}

TEST(NpyWrite, DataStartsOn64ByteBoundary) {
  // Shapes whose headers differ in length, including long ones.
  std::vector<std::vector<int64_t>> shapes = {
      {}, {1}, {7, 3}, {1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1}, {123456789, 0}};
  for (const std::vector<int64_t> &shape : shapes) {
    NpyArray array;
    array.dtype = DType::F64;
    array.shape = shape;
    array.data.resize(array.getNumElements() * 8);
    std::string path = tempPath("aligned.npy");
    std::string error;
    ASSERT_TRUE(writeNpy(path, array, error)) << error;
    std::string bytes = readBytes(path);
    EXPECT_EQ((bytes.size() - array.data.size()) % 64, 0u);
    EXPECT_EQ(bytes[bytes.size() - array.data.size() - 1], '\n');
    NpyArray back = load(path);
    EXPECT_EQ(back.shape, shape);
  }
}

TEST(NpyWrite, Errors) {
  std::string error;
  NpyArray array;
  array.dtype = DType::F32;
  array.shape = {2, 3};
  array.data.resize(20);
  std::string path = tempPath("bad_write.npy");
  EXPECT_FALSE(writeNpy(path, array, error));
  EXPECT_EQ(error, path + ": shape (2, 3) of f32 needs 24 data bytes but the "
                          "array has 20");

  array.shape = {-1};
  EXPECT_FALSE(writeNpy(path, array, error));
  EXPECT_EQ(error, path + ": cannot write shape (-1,) (a negative dimension "
                          "or too large)");

  array.shape = {5};
  std::string missingDir = tempPath("no/such/dir.npy");
  EXPECT_FALSE(writeNpy(missingDir, array, error));
  EXPECT_EQ(error, missingDir +
                       ": cannot open for writing: No such file or directory");
}

//===----------------------------------------------------------------------===//
// Read errors
//===----------------------------------------------------------------------===//

TEST(NpyReadError, MissingFile) {
  std::string path = tempPath("does_not_exist.npy");
  EXPECT_EQ(loadError(path),
            path + ": cannot open file: No such file or directory");
}

TEST(NpyReadError, BadMagic) {
  std::string path = tempPath("bad_magic.npy");
  for (const char *contents : {"hello, world", "\x93NUM", ""}) {
    writeBytes(path, contents);
    EXPECT_EQ(loadError(path),
              path + ": not a NumPy .npy file (bad magic string)");
  }
}

TEST(NpyReadError, UnsupportedVersion) {
  std::string bytes = readBytes(inputPath("f32.npy"));
  bytes[6] = 4;
  std::string path = tempPath("version4.npy");
  writeBytes(path, bytes);
  EXPECT_EQ(loadError(path), path + ": unsupported .npy format version 4.0 "
                                    "(supported: 1.0, 2.0, 3.0)");
  bytes[6] = 1;
  bytes[7] = 1;
  writeBytes(path, bytes);
  EXPECT_EQ(loadError(path), path + ": unsupported .npy format version 1.1 "
                                    "(supported: 1.0, 2.0, 3.0)");
}

TEST(NpyReadError, TruncatedHeader) {
  std::string bytes = readBytes(inputPath("f32.npy"));
  std::string path = tempPath("truncated_header.npy");
  writeBytes(path, bytes.substr(0, 7));
  EXPECT_EQ(loadError(path),
            path + ": truncated header (the file ends inside the version)");
  writeBytes(path, bytes.substr(0, 9));
  EXPECT_EQ(loadError(path), path + ": truncated header (the file ends "
                                    "inside the header length)");
  // numpy's header for this file is 118 bytes long.
  writeBytes(path, bytes.substr(0, 50));
  EXPECT_EQ(loadError(path), path + ": truncated header (the header needs "
                                    "118 bytes, the file has 40 after the "
                                    "header length)");
}

TEST(NpyReadError, TruncatedData) {
  std::string bytes = readBytes(inputPath("f32.npy"));
  std::string path = tempPath("truncated_data.npy");
  writeBytes(path, bytes.substr(0, bytes.size() - 4));
  EXPECT_EQ(loadError(path), path + ": truncated data (shape (2, 3) of f32 "
                                    "needs 24 data bytes, the file has 20)");
  writeBytes(path, bytes.substr(0, 128));
  EXPECT_EQ(loadError(path), path + ": truncated data (shape (2, 3) of f32 "
                                    "needs 24 data bytes, the file has 0)");
}

TEST(NpyReadError, TrailingData) {
  std::string path = tempPath("trailing_data.npy");
  writeBytes(path, readBytes(inputPath("f32.npy")) + "abc");
  EXPECT_EQ(loadError(path),
            path + ": unexpected data after the array (shape (2, 3) of f32 "
                   "needs 24 data bytes, the file has 27)");
}

TEST(NpyReadError, FortranOrder) {
  std::string path = inputPath("fortran_f32.npy");
  EXPECT_EQ(loadError(path), path + ": Fortran-order arrays are not "
                                    "supported (save a C-contiguous array)");
}

TEST(NpyReadError, BigEndian) {
  std::string path = inputPath("bigendian_f32.npy");
  EXPECT_EQ(loadError(path), path + ": big-endian dtype '>f4' is not "
                                    "supported (save a little-endian array)");
}

TEST(NpyReadError, UnsupportedDTypes) {
  std::string path = inputPath("complex64.npy");
  EXPECT_EQ(loadError(path), path + ": unsupported dtype '<c8'" + kSupported);
  // ml_dtypes' 1-byte float8 types are saved as '<V1'.
  path = inputPath("float8.npy");
  EXPECT_EQ(loadError(path), path + ": unsupported dtype '<V1'" + kSupported);
  path = inputPath("structured.npy");
  EXPECT_EQ(loadError(path),
            path + ": unsupported dtype [('a', '<f4'), ('b', '<i4')] "
                   "(structured dtypes are not supported)");
}

TEST(NpyReadError, MalformedHeaders) {
  struct Case {
    const char *header;
    const char *message;
  } cases[] = {
      {"['descr', '<f4']", "the header is not a dict"},
      {"{'descr' '<f4', 'fortran_order': False, 'shape': (2,)}",
       "expected ':' after 'descr'"},
      {"{'descr': '<f4', 'shape': (2,), }", "missing key 'fortran_order'"},
      {"{'fortran_order': False, 'shape': (2,), }", "missing key 'descr'"},
      {"{'descr': '<f4', 'fortran_order': False, }", "missing key 'shape'"},
      {"{'descr': '<f4', 'fortran_order': False, 'shape': (2,), 'x': 1}",
       "unexpected key 'x'"},
      {"{'descr': '<f4', 'descr': '<f4', 'fortran_order': False, "
       "'shape': (2,)}",
       "duplicate key 'descr'"},
      {"{'descr': '<f4', 'fortran_order': False, 'shape': (2)}",
       "'shape' is not a tuple"},
      {"{'descr': '<f4', 'fortran_order': False, 'shape': [2]}",
       "'shape' is not a tuple"},
      {"{'descr': '<f4', 'fortran_order': False, 'shape': (2, -1)}",
       "'shape' has the negative dimension -1"},
      {"{'descr': '<f4', 'fortran_order': False, 'shape': (2.5,)}",
       "expected ',' or ')' in 'shape'"},
      {"{'descr': '<f4', 'fortran_order': False, 'shape': (x,)}",
       "'shape' holds something other than integers"},
      {"{'descr': '<f4', 'fortran_order': 0, 'shape': (2,)}",
       "'fortran_order' is not True or False"},
      {"{'descr': '<f4', 'fortran_order': False, 'shape': (2,)} x",
       "unexpected text after the dict"},
      {"{'descr': '<f4 , 'fortran_order': False, 'shape': (2,)}",
       "expected ',' or '}' after the value of 'descr'"},
      {"{'descr': '<f4', 'fortran_order': False, 'shape': "
       "(99999999999999999999,)}",
       "a dimension in 'shape' does not fit in 64 bits"},
  };
  std::string path = tempPath("malformed.npy");
  for (const Case &c : cases) {
    SCOPED_TRACE(c.header);
    writeBytes(path, makeNpy(c.header, std::string(8, '\0')));
    EXPECT_EQ(loadError(path), path + ": malformed header: " + c.message);
  }
}

TEST(NpyReadError, HugeShape) {
  std::string path = tempPath("huge.npy");
  writeBytes(path, makeNpy("{'descr': '<f4', 'fortran_order': False, "
                           "'shape': (4611686018427387904, 4)}"));
  EXPECT_EQ(loadError(path),
            path + ": shape (4611686018427387904, 4) is too large");
  // Fits in 64 bits but not in the file: rejected before any allocation.
  writeBytes(path, makeNpy("{'descr': '<f8', 'fortran_order': False, "
                           "'shape': (1000000000000,)}"));
  EXPECT_EQ(loadError(path),
            path + ": truncated data (shape (1000000000000,) of f64 needs "
                   "8000000000000 data bytes, the file has 0)");
}

//===----------------------------------------------------------------------===//
// Element conversions
//===----------------------------------------------------------------------===//

TEST(NpyConvert, HalfToFloatKnownValues) {
  EXPECT_EQ(halfToFloat(0x3c00), 1.0f);
  EXPECT_EQ(halfToFloat(0xc000), -2.0f);
  EXPECT_EQ(halfToFloat(0x7bff), 65504.0f);
  EXPECT_EQ(halfToFloat(0x0400), std::ldexp(1.0f, -14));
  EXPECT_EQ(halfToFloat(0x0001), std::ldexp(1.0f, -24));
  EXPECT_EQ(halfToFloat(0x03ff), std::ldexp(1023.0f, -24));
  EXPECT_EQ(halfToFloat(0x7c00), std::numeric_limits<float>::infinity());
  EXPECT_EQ(halfToFloat(0xfc00), -std::numeric_limits<float>::infinity());
  EXPECT_TRUE(std::isnan(halfToFloat(0x7e00)));
  EXPECT_TRUE(std::isnan(halfToFloat(0xfc01)));
  EXPECT_TRUE(std::signbit(halfToFloat(0x8000)));
}

TEST(NpyConvert, HalfRoundTripsEveryBitPattern) {
  for (uint32_t bits = 0; bits <= 0xffff; ++bits) {
    float value = halfToFloat(static_cast<uint16_t>(bits));
    if (std::isnan(value)) {
      EXPECT_TRUE((bits & 0x7c00) == 0x7c00 && (bits & 0x3ff) != 0);
      uint16_t back = floatToHalf(value);
      EXPECT_TRUE((back & 0x7c00) == 0x7c00 && (back & 0x3ff) != 0) << bits;
      EXPECT_EQ(back & 0x8000, static_cast<int>(bits & 0x8000));
      continue;
    }
    EXPECT_EQ(floatToHalf(value), static_cast<uint16_t>(bits)) << bits;
    EXPECT_EQ(doubleToHalf(value), static_cast<uint16_t>(bits)) << bits;
  }
}

TEST(NpyConvert, FloatToHalfRoundsToNearestEven) {
  const double ulpAtOne = std::ldexp(1.0, -10);
  // Halfway between 1 and 1 + ulp: to even (1); halfway above 1 + ulp: up.
  EXPECT_EQ(floatToHalf(1.0f + std::ldexp(1.0f, -11)), 0x3c00);
  EXPECT_EQ(floatToHalf(1.0f + 3 * std::ldexp(1.0f, -11)), 0x3c02);
  EXPECT_EQ(floatToHalf(1.0f + std::ldexp(1.0f, -11) + std::ldexp(1.0f, -20)),
            0x3c01);
  EXPECT_EQ(doubleToHalf(1.0 + ulpAtOne * 0.49), 0x3c00);
  EXPECT_EQ(doubleToHalf(-(1.0 + ulpAtOne * 0.51)), 0xbc01);
  // Overflow: 65520 is halfway to 65536, which is not finite: to even = inf.
  EXPECT_EQ(floatToHalf(65519.0f), 0x7bff);
  EXPECT_EQ(floatToHalf(65520.0f), 0x7c00);
  EXPECT_EQ(floatToHalf(-1e10f), 0xfc00);
  EXPECT_EQ(floatToHalf(std::numeric_limits<float>::infinity()), 0x7c00);
  // Subnormals: 2^-25 is halfway between 0 and 2^-24.
  EXPECT_EQ(floatToHalf(std::ldexp(1.0f, -25)), 0x0000);
  EXPECT_EQ(floatToHalf(std::ldexp(1.0f, -25) * 1.0001f), 0x0001);
  EXPECT_EQ(floatToHalf(3 * std::ldexp(1.0f, -25)), 0x0002);
  EXPECT_EQ(floatToHalf(std::ldexp(1.0f, -14) - std::ldexp(1.0f, -25)), 0x0400);
  EXPECT_EQ(floatToHalf(1e-30f), 0x0000);
  EXPECT_EQ(floatToHalf(-1e-30f), 0x8000);
  EXPECT_EQ(floatToHalf(-0.0f), 0x8000);
  EXPECT_EQ(doubleToHalf(std::numeric_limits<double>::denorm_min()), 0);
  EXPECT_EQ(doubleToHalf(1e300), 0x7c00);
  uint16_t nan = floatToHalf(std::numeric_limits<float>::quiet_NaN());
  EXPECT_EQ(nan & 0x7c00, 0x7c00);
  EXPECT_NE(nan & 0x03ff, 0);
}

TEST(NpyConvert, DoubleRoundsOnce) {
  // 1 + 2^-11 + 2^-40 is just above the halfway point between two halves,
  // so it rounds up; through float it would lose 2^-40 and tie to even.
  double value = 1.0 + std::ldexp(1.0, -11) + std::ldexp(1.0, -40);
  EXPECT_EQ(doubleToHalf(value), 0x3c01);
  EXPECT_EQ(floatToHalf(static_cast<float>(value)), 0x3c00);
  value = 1.0 + std::ldexp(1.0, -8) + std::ldexp(1.0, -40);
  EXPECT_EQ(doubleToBFloat16(value), 0x3f81);
  EXPECT_EQ(floatToBFloat16(static_cast<float>(value)), 0x3f80);
}

TEST(NpyConvert, BFloat16) {
  EXPECT_EQ(bfloat16ToFloat(0x3f80), 1.0f);
  EXPECT_EQ(bfloat16ToFloat(0xc020), -2.5f);
  EXPECT_EQ(bfloat16ToFloat(0x0001), std::ldexp(1.0f, -133));
  EXPECT_EQ(bfloat16ToFloat(0x7f80), std::numeric_limits<float>::infinity());
  EXPECT_TRUE(std::isnan(bfloat16ToFloat(0x7fc0)));
  EXPECT_EQ(floatToBFloat16(1.0f + std::ldexp(1.0f, -8)), 0x3f80);
  EXPECT_EQ(floatToBFloat16(1.0f + 3 * std::ldexp(1.0f, -8)), 0x3f82);
  EXPECT_EQ(floatToBFloat16(0.1f), 0x3dcd);
  // The largest float rounds past the largest bfloat16 (0x7f7f).
  EXPECT_EQ(floatToBFloat16(std::numeric_limits<float>::max()), 0x7f80);
  EXPECT_EQ(floatToBFloat16(std::ldexp(255.0f, 120)), 0x7f7f);
  EXPECT_EQ(floatToBFloat16(std::numeric_limits<float>::denorm_min()), 0);
  EXPECT_EQ(floatToBFloat16(std::ldexp(1.0f, -133)), 0x0001);
  EXPECT_EQ(floatToBFloat16(std::ldexp(3.0f, -134)), 0x0002);
  EXPECT_EQ(floatToBFloat16(std::numeric_limits<float>::quiet_NaN()), 0x7fc0);
  EXPECT_EQ(floatToBFloat16(-std::numeric_limits<float>::quiet_NaN()), 0xffc0);
  for (uint32_t bits = 0; bits <= 0xffff; ++bits) {
    float value = bfloat16ToFloat(static_cast<uint16_t>(bits));
    if (std::isnan(value)) {
      EXPECT_TRUE(std::isnan(bfloat16ToFloat(floatToBFloat16(value))));
      continue;
    }
    EXPECT_EQ(floatToBFloat16(value), static_cast<uint16_t>(bits)) << bits;
    EXPECT_EQ(doubleToBFloat16(value), static_cast<uint16_t>(bits)) << bits;
  }
}

TEST(NpyConvert, FromDoublesToIntegers) {
  const double values[] = {
      2.5, 3.5, -2.5, -1e30, 1e30, std::numeric_limits<double>::quiet_NaN()};
  NpyArray i32 = fromDoubles(DType::I32, {6}, values);
  int32_t ints[6];
  std::memcpy(ints, i32.data.data(), sizeof(ints));
  EXPECT_EQ(ints[0], 2);
  EXPECT_EQ(ints[1], 4);
  EXPECT_EQ(ints[2], -2);
  EXPECT_EQ(ints[3], std::numeric_limits<int32_t>::min());
  EXPECT_EQ(ints[4], std::numeric_limits<int32_t>::max());
  EXPECT_EQ(ints[5], 0);
  NpyArray i64 = fromDoubles(DType::I64, {6}, values);
  int64_t longs[6];
  std::memcpy(longs, i64.data.data(), sizeof(longs));
  EXPECT_EQ(longs[3], std::numeric_limits<int64_t>::min());
  EXPECT_EQ(longs[4], std::numeric_limits<int64_t>::max());
}

} // namespace
