//===- Npy.cpp - NumPy .npy files -----------------------------------------===//
//
// The format (numpy/lib/_format_impl.py): the magic "\x93NUMPY", a major and
// a minor version byte, the header length (2 bytes little-endian in 1.0, 4 in
// 2.0 and 3.0), then the header, a Python dict literal with exactly the keys
// 'descr', 'fortran_order' and 'shape', padded with spaces and a final '\n'
// so that the data starts at a multiple of 64 bytes. The data follows as raw
// elements.
//
//===----------------------------------------------------------------------===//

#include "fa/Support/Npy.h"

#include <algorithm>
#include <cassert>
#include <cerrno>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <limits>

// `data` holds little-endian bytes and is copied to and from host values with
// memcpy, which is only right on a little-endian host.
#if !defined(__BYTE_ORDER__) || __BYTE_ORDER__ != __ORDER_LITTLE_ENDIAN__
#error "fa/Support/Npy.cpp assumes a little-endian host"
#endif

using namespace fa::support;

size_t fa::support::getDTypeSize(DType dtype) {
  switch (dtype) {
  case DType::F16:
  case DType::BF16:
    return 2;
  case DType::F32:
  case DType::I32:
    return 4;
  case DType::F64:
  case DType::I64:
    return 8;
  }
  return 0;
}

const char *fa::support::getDTypeName(DType dtype) {
  switch (dtype) {
  case DType::F16:
    return "f16";
  case DType::BF16:
    return "bf16";
  case DType::F32:
    return "f32";
  case DType::F64:
    return "f64";
  case DType::I32:
    return "i32";
  case DType::I64:
    return "i64";
  }
  return "?";
}

const char *fa::support::getNpyDescr(DType dtype) {
  switch (dtype) {
  case DType::F16:
    return "<f2";
  case DType::BF16:
    return "<V2";
  case DType::F32:
    return "<f4";
  case DType::F64:
    return "<f8";
  case DType::I32:
    return "<i4";
  case DType::I64:
    return "<i8";
  }
  return "?";
}

namespace {

/// The size in bytes of an array of `shape` with `itemSize`-byte elements;
/// false for a negative dimension or a size beyond int64.
bool computeNumBytes(const std::vector<int64_t> &shape, size_t itemSize,
                     uint64_t &numBytes) {
  const uint64_t limit = std::numeric_limits<int64_t>::max();
  uint64_t total = itemSize;
  for (int64_t dim : shape) {
    if (dim < 0)
      return false;
    if (dim != 0 && total > limit / static_cast<uint64_t>(dim))
      return false;
    total *= static_cast<uint64_t>(dim);
  }
  numBytes = total;
  return true;
}

/// The shape as Python's repr of a tuple prints it: "()", "(5,)", "(2, 3)".
std::string formatShape(const std::vector<int64_t> &shape) {
  std::string result = "(";
  for (size_t i = 0; i < shape.size(); ++i) {
    if (i != 0)
      result += ", ";
    result += std::to_string(shape[i]);
  }
  if (shape.size() == 1)
    result += ",";
  return result + ")";
}

/// Parses the header dict. It accepts what ast.literal_eval accepts for the
/// headers numpy writes (and Python 2's "5L" dimensions), nothing fancier.
class HeaderParser {
public:
  HeaderParser(const std::string &text, bool allowLongSuffix)
      : text(text), allowLongSuffix(allowLongSuffix) {}

  bool parse();

  std::string error;
  // The descr when it is a string; otherwise `descr` holds the literal's
  // text and `descrIsString` is false (a structured dtype's list).
  std::string descr;
  bool descrIsString = false;
  bool fortranOrder = false;
  std::vector<int64_t> shape;

private:
  bool fail(const std::string &message) {
    error = message;
    return false;
  }
  void skipSpace() {
    while (pos < text.size() && (text[pos] == ' ' || text[pos] == '\t' ||
                                 text[pos] == '\r' || text[pos] == '\n'))
      ++pos;
  }
  bool peek(char c) {
    skipSpace();
    return pos < text.size() && text[pos] == c;
  }
  bool consume(char c) {
    if (!peek(c))
      return false;
    ++pos;
    return true;
  }
  bool parseString(std::string &result);
  bool skipLiteral();
  bool parseBool(bool &result);
  bool parseShape();

  const std::string &text;
  bool allowLongSuffix;
  size_t pos = 0;
};

bool HeaderParser::parseString(std::string &result) {
  skipSpace();
  if (pos >= text.size() || (text[pos] != '\'' && text[pos] != '"'))
    return fail("expected a quoted string at offset " + std::to_string(pos));
  char quote = text[pos++];
  size_t end = text.find(quote, pos);
  if (end == std::string::npos)
    return fail("unterminated string");
  result = text.substr(pos, end - pos);
  if (result.find('\\') != std::string::npos)
    return fail("escape sequences in strings are not supported");
  pos = end + 1;
  return true;
}

/// Skips one bracketed literal or string (a structured dtype's descr).
bool HeaderParser::skipLiteral() {
  skipSpace();
  int depth = 0;
  while (pos < text.size()) {
    char c = text[pos];
    if (c == '\'' || c == '"') {
      std::string ignored;
      if (!parseString(ignored))
        return false;
    } else {
      if (c == '[' || c == '(' || c == '{')
        ++depth;
      else if (c == ']' || c == ')' || c == '}')
        --depth;
      else if (depth == 0 && c == ',')
        return true;
      if (depth < 0)
        return true;
      ++pos;
    }
    if (depth == 0)
      return true;
  }
  return fail("unterminated value");
}

bool HeaderParser::parseBool(bool &result) {
  skipSpace();
  if (text.compare(pos, 4, "True") == 0) {
    result = true;
    pos += 4;
    return true;
  }
  if (text.compare(pos, 5, "False") == 0) {
    result = false;
    pos += 5;
    return true;
  }
  return fail("'fortran_order' is not True or False");
}

bool HeaderParser::parseShape() {
  if (!consume('('))
    return fail("'shape' is not a tuple");
  shape.clear();
  bool sawComma = false;
  while (!consume(')')) {
    skipSpace();
    bool negative = false;
    if (pos < text.size() && text[pos] == '-') {
      negative = true;
      ++pos;
    }
    if (pos >= text.size() || text[pos] < '0' || text[pos] > '9')
      return fail("'shape' holds something other than integers");
    int64_t dim = 0;
    while (pos < text.size() && text[pos] >= '0' && text[pos] <= '9') {
      int digit = text[pos++] - '0';
      if (dim > (std::numeric_limits<int64_t>::max() - digit) / 10)
        return fail("a dimension in 'shape' does not fit in 64 bits");
      dim = dim * 10 + digit;
    }
    if (allowLongSuffix && pos < text.size() &&
        (text[pos] == 'L' || text[pos] == 'l'))
      ++pos;
    if (negative)
      return fail("'shape' has the negative dimension -" + std::to_string(dim));
    shape.push_back(dim);
    sawComma = consume(',');
    if (!sawComma && !peek(')'))
      return fail("expected ',' or ')' in 'shape'");
  }
  // "(5)" is the integer 5 in Python, not a tuple.
  if (shape.size() == 1 && !sawComma)
    return fail("'shape' is not a tuple");
  return true;
}

bool HeaderParser::parse() {
  if (!consume('{'))
    return fail("the header is not a dict");
  bool seenDescr = false, seenFortran = false, seenShape = false;
  while (!consume('}')) {
    std::string key;
    if (!parseString(key))
      return false;
    if (!consume(':'))
      return fail("expected ':' after '" + key + "'");
    if (key == "descr" && !seenDescr) {
      seenDescr = true;
      skipSpace();
      if (pos < text.size() && (text[pos] == '\'' || text[pos] == '"')) {
        descrIsString = true;
        if (!parseString(descr))
          return false;
      } else {
        size_t start = pos;
        if (!skipLiteral())
          return false;
        descr = text.substr(start, pos - start);
      }
    } else if (key == "fortran_order" && !seenFortran) {
      seenFortran = true;
      if (!parseBool(fortranOrder))
        return false;
    } else if (key == "shape" && !seenShape) {
      seenShape = true;
      if (!parseShape())
        return false;
    } else if (key == "descr" || key == "fortran_order" || key == "shape") {
      return fail("duplicate key '" + key + "'");
    } else {
      return fail("unexpected key '" + key + "'");
    }
    if (!consume(',') && !peek('}'))
      return fail("expected ',' or '}' after the value of '" + key + "'");
  }
  skipSpace();
  if (pos != text.size())
    return fail("unexpected text after the dict");
  if (!seenDescr)
    return fail("missing key 'descr'");
  if (!seenFortran)
    return fail("missing key 'fortran_order'");
  if (!seenShape)
    return fail("missing key 'shape'");
  return true;
}

/// Maps a descr to a DType: "" when supported, else why not.
std::string parseDescr(const HeaderParser &header, DType &dtype) {
  if (!header.descrIsString)
    return "unsupported dtype " + header.descr +
           " (structured dtypes are not supported)";
  const std::string &descr = header.descr;
  const char *supported =
      "; supported: '<f2', '<V2' (ml_dtypes bfloat16), '<f4', '<f8', "
      "'<i4', '<i8'";
  if (descr.size() < 2)
    return "unsupported dtype '" + descr + "'" + supported;
  // '|' is "not applicable" and '=' native; the host is little-endian.
  char order = descr[0];
  if (order == '>' || order == '!')
    return "big-endian dtype '" + descr +
           "' is not supported (save a little-endian array)";
  std::string code = descr.substr(1);
  if (order != '<' && order != '|' && order != '=')
    code.clear();
  if (code == "f2")
    dtype = DType::F16;
  else if (code == "V2")
    dtype = DType::BF16;
  else if (code == "f4")
    dtype = DType::F32;
  else if (code == "f8")
    dtype = DType::F64;
  else if (code == "i4")
    dtype = DType::I32;
  else if (code == "i8")
    dtype = DType::I64;
  else
    return "unsupported dtype '" + descr + "'" + supported;
  return "";
}

/// Closes the file when it goes out of scope.
struct FileCloser {
  std::FILE *file;
  ~FileCloser() {
    if (file)
      std::fclose(file);
  }
};

uint32_t readLittleEndian(const uint8_t *bytes, int count) {
  uint32_t value = 0;
  for (int i = count - 1; i >= 0; --i)
    value = value << 8 | bytes[i];
  return value;
}

} // namespace

int64_t NpyArray::getNumElements() const {
  int64_t count = 1;
  for (int64_t dim : shape)
    count *= dim;
  return count;
}

bool NpyArray::isConsistent() const {
  uint64_t numBytes;
  return computeNumBytes(shape, getDTypeSize(dtype), numBytes) &&
         numBytes == data.size();
}

bool fa::support::readNpy(const std::string &path, NpyArray &out,
                          std::string &error) {
  auto fail = [&](const std::string &message) {
    error = path + ": " + message;
    return false;
  };
  FileCloser closer{std::fopen(path.c_str(), "rb")};
  std::FILE *file = closer.file;
  if (!file)
    return fail(std::string("cannot open file: ") + std::strerror(errno));
  // The size bounds every length the file claims before anything is
  // allocated from it.
  if (std::fseek(file, 0, SEEK_END) != 0)
    return fail(std::string("cannot seek: ") + std::strerror(errno));
  long endOffset = std::ftell(file);
  if (endOffset < 0)
    return fail(std::string("cannot determine the file size: ") +
                std::strerror(errno));
  std::rewind(file);
  uint64_t fileSize = static_cast<uint64_t>(endOffset);

  uint8_t prefix[12];
  size_t prefixRead = std::fread(prefix, 1, 8, file);
  if (std::ferror(file))
    return fail(std::string("read error: ") + std::strerror(errno));
  static const uint8_t magic[6] = {0x93, 'N', 'U', 'M', 'P', 'Y'};
  if (prefixRead < 6 || std::memcmp(prefix, magic, 6) != 0)
    return fail("not a NumPy .npy file (bad magic string)");
  if (prefixRead < 8)
    return fail("truncated header (the file ends inside the version)");
  int major = prefix[6], minor = prefix[7];
  if (minor != 0 || major < 1 || major > 3)
    return fail("unsupported .npy format version " + std::to_string(major) +
                "." + std::to_string(minor) + " (supported: 1.0, 2.0, 3.0)");
  int lengthBytes = major == 1 ? 2 : 4;
  if (std::fread(prefix + 8, 1, lengthBytes, file) !=
      static_cast<size_t>(lengthBytes))
    return fail("truncated header (the file ends inside the header length)");
  uint64_t headerLength = readLittleEndian(prefix + 8, lengthBytes);
  uint64_t dataOffset = 8 + lengthBytes + headerLength;
  if (dataOffset > fileSize)
    return fail("truncated header (the header needs " +
                std::to_string(headerLength) + " bytes, the file has " +
                std::to_string(fileSize - 8 - lengthBytes) + " after the " +
                "header length)");
  std::string headerText(headerLength, '\0');
  if (std::fread(&headerText[0], 1, headerLength, file) != headerLength)
    return fail(std::string("read error: ") + std::strerror(errno));

  // Versions 1.0 and 2.0 may come from Python 2, whose longs print as "5L".
  HeaderParser header(headerText, /*allowLongSuffix=*/major <= 2);
  if (!header.parse())
    return fail("malformed header: " + header.error);
  DType dtype;
  std::string descrError = parseDescr(header, dtype);
  if (!descrError.empty())
    return fail(descrError);
  if (header.fortranOrder)
    return fail("Fortran-order arrays are not supported (save a "
                "C-contiguous array)");

  uint64_t numBytes;
  if (!computeNumBytes(header.shape, getDTypeSize(dtype), numBytes))
    return fail("shape " + formatShape(header.shape) + " is too large");
  uint64_t available = fileSize - dataOffset;
  std::string what = "shape " + formatShape(header.shape) + " of " +
                     getDTypeName(dtype) + " needs " +
                     std::to_string(numBytes) + " data bytes";
  if (available < numBytes)
    return fail("truncated data (" + what + ", the file has " +
                std::to_string(available) + ")");
  if (available > numBytes)
    return fail("unexpected data after the array (" + what + ", the file has " +
                std::to_string(available) + ")");

  out.dtype = dtype;
  out.shape = header.shape;
  out.data.resize(numBytes);
  if (numBytes != 0 &&
      std::fread(out.data.data(), 1, numBytes, file) != numBytes)
    return fail(std::string("read error: ") + std::strerror(errno));
  return true;
}

bool fa::support::writeNpy(const std::string &path, const NpyArray &array,
                           std::string &error) {
  auto fail = [&](const std::string &message) {
    error = path + ": " + message;
    return false;
  };
  uint64_t numBytes;
  if (!computeNumBytes(array.shape, getDTypeSize(array.dtype), numBytes))
    return fail("cannot write shape " + formatShape(array.shape) +
                " (a negative dimension or too large)");
  if (numBytes != array.data.size())
    return fail("shape " + formatShape(array.shape) + " of " +
                getDTypeName(array.dtype) + " needs " +
                std::to_string(numBytes) + " data bytes but the array has " +
                std::to_string(array.data.size()));

  // Exactly numpy's _write_array_header: sorted keys, repr'd values, room to
  // grow the first dimension to 21 digits in place, then spaces and '\n' up
  // to a multiple of 64 bytes (a whole extra 64 when already aligned).
  std::string header =
      std::string("{'descr': '") + getNpyDescr(array.dtype) +
      "', 'fortran_order': False, 'shape': " + formatShape(array.shape) + ", }";
  if (!array.shape.empty())
    header.append(21 - std::to_string(array.shape[0]).size(), ' ');
  size_t headerLength = header.size() + 1;
  size_t padding = 64 - (10 + headerLength) % 64;
  headerLength += padding;
  if (headerLength > 0xffff)
    return fail("the header of shape " + formatShape(array.shape) +
                " is too long for format 1.0");
  header.append(padding, ' ');
  header += '\n';

  std::string prefix = "\x93NUMPY\x01";
  prefix += '\0';
  prefix += static_cast<char>(headerLength & 0xff);
  prefix += static_cast<char>(headerLength >> 8);

  std::FILE *file = std::fopen(path.c_str(), "wb");
  if (!file)
    return fail(std::string("cannot open for writing: ") +
                std::strerror(errno));
  bool ok =
      std::fwrite(prefix.data(), 1, prefix.size(), file) == prefix.size() &&
      std::fwrite(header.data(), 1, header.size(), file) == header.size() &&
      (numBytes == 0 ||
       std::fwrite(array.data.data(), 1, numBytes, file) == numBytes);
  int writeErrno = errno;
  if (std::fclose(file) != 0 && ok) {
    ok = false;
    writeErrno = errno;
  }
  if (!ok)
    return fail(std::string("write failed: ") + std::strerror(writeErrno));
  return true;
}

//===----------------------------------------------------------------------===//
// Element conversions
//===----------------------------------------------------------------------===//

namespace {

/// Rounds `value` to a binary format with `expBits` exponent bits and
/// `mantBits` stored mantissa bits (IEEE layout, no sign-magnitude tricks),
/// ties to even, in one step from the double.
uint16_t roundToNarrow(double value, int expBits, int mantBits) {
  uint64_t bits;
  std::memcpy(&bits, &value, sizeof(bits));
  const uint16_t sign =
      static_cast<uint16_t>((bits >> 63) << (expBits + mantBits));
  const uint16_t expMask =
      static_cast<uint16_t>(((1u << expBits) - 1) << mantBits);
  const int exponent = static_cast<int>((bits >> 52) & 0x7ff);
  const uint64_t mantissa = bits & ((uint64_t(1) << 52) - 1);
  if (exponent == 0x7ff) {
    if (mantissa == 0)
      return sign | expMask;
    // A quiet NaN that keeps the payload's top bits.
    return static_cast<uint16_t>(sign | expMask | (1u << (mantBits - 1)) |
                                 (mantissa >> (52 - mantBits)));
  }
  // Zero, or a double subnormal: far below half of either target's smallest
  // subnormal.
  if (exponent == 0)
    return sign;
  const int bias = (1 << (expBits - 1)) - 1;
  const int unbiased = exponent - 1023;
  if (unbiased > bias)
    return sign | expMask;
  // The result is a whole number of quanta; below the normal range the
  // quantum stops shrinking (subnormals).
  const int leadExp = std::max(unbiased, 1 - bias);
  const int shift = 52 - mantBits + (leadExp - unbiased);
  if (shift >= 64)
    return sign;
  const uint64_t significand = mantissa | (uint64_t(1) << 52);
  uint64_t quanta = significand >> shift;
  const uint64_t remainder = significand & ((uint64_t(1) << shift) - 1);
  const uint64_t half = uint64_t(1) << (shift - 1);
  if (remainder > half || (remainder == half && (quanta & 1)))
    ++quanta;
  // Adding the count carries a rounded-up mantissa into the exponent, and a
  // subnormal rounded up to 2^mantBits into the smallest normal.
  const uint64_t magnitude =
      (static_cast<uint64_t>(leadExp + bias - 1) << mantBits) + quanta;
  if (magnitude >= expMask)
    return sign | expMask;
  return static_cast<uint16_t>(sign | magnitude);
}

} // namespace

float fa::support::halfToFloat(uint16_t bits) {
  const bool negative = bits & 0x8000;
  const int exponent = (bits >> 10) & 0x1f;
  const uint32_t mantissa = bits & 0x3ff;
  if (exponent == 0x1f) {
    // Infinity or NaN, payload kept.
    uint32_t floatBits =
        (negative ? 0x80000000u : 0u) | 0x7f800000u | (mantissa << 13);
    float result;
    std::memcpy(&result, &floatBits, sizeof(result));
    return result;
  }
  float magnitude =
      exponent == 0
          ? std::ldexp(static_cast<float>(mantissa), -24)
          : std::ldexp(static_cast<float>(mantissa | 0x400), exponent - 25);
  return negative ? -magnitude : magnitude;
}

uint16_t fa::support::floatToHalf(float value) {
  // float -> double is exact, so this rounds once.
  return roundToNarrow(value, 5, 10);
}

uint16_t fa::support::doubleToHalf(double value) {
  return roundToNarrow(value, 5, 10);
}

float fa::support::bfloat16ToFloat(uint16_t bits) {
  uint32_t floatBits = static_cast<uint32_t>(bits) << 16;
  float result;
  std::memcpy(&result, &floatBits, sizeof(result));
  return result;
}

uint16_t fa::support::floatToBFloat16(float value) {
  return roundToNarrow(value, 8, 7);
}

uint16_t fa::support::doubleToBFloat16(double value) {
  return roundToNarrow(value, 8, 7);
}

std::vector<double> fa::support::toDoubles(const NpyArray &array) {
  assert(array.isConsistent() && "data does not match dtype and shape");
  const size_t count = array.data.size() / getDTypeSize(array.dtype);
  std::vector<double> result(count);
  const uint8_t *bytes = array.data.data();
  auto convert = [&](auto element, auto toDouble) {
    for (size_t i = 0; i < count; ++i) {
      std::memcpy(&element, bytes + i * sizeof(element), sizeof(element));
      result[i] = toDouble(element);
    }
  };
  switch (array.dtype) {
  case DType::F16:
    convert(uint16_t(), [](uint16_t bits) { return halfToFloat(bits); });
    break;
  case DType::BF16:
    convert(uint16_t(), [](uint16_t bits) { return bfloat16ToFloat(bits); });
    break;
  case DType::F32:
    convert(float(), [](float value) { return value; });
    break;
  case DType::F64:
    convert(double(), [](double value) { return value; });
    break;
  case DType::I32:
    convert(int32_t(), [](int32_t value) { return value; });
    break;
  case DType::I64:
    convert(int64_t(),
            [](int64_t value) { return static_cast<double>(value); });
    break;
  }
  return result;
}

namespace {

/// Rounds to the nearest integer in [lo, hi], saturating; NaN gives 0.
template <typename IntT> IntT roundToInt(double value) {
  if (std::isnan(value))
    return 0;
  double rounded = std::nearbyint(value);
  // Both bounds are powers of two (or their negation), exact in a double.
  const double lo = static_cast<double>(std::numeric_limits<IntT>::min());
  const double hiExclusive = -lo;
  if (rounded < lo)
    return std::numeric_limits<IntT>::min();
  if (rounded >= hiExclusive)
    return std::numeric_limits<IntT>::max();
  return static_cast<IntT>(rounded);
}

} // namespace

NpyArray fa::support::fromDoubles(DType dtype, std::vector<int64_t> shape,
                                  const double *values) {
  NpyArray array;
  array.dtype = dtype;
  array.shape = std::move(shape);
  const int64_t count = array.getNumElements();
  const size_t itemSize = getDTypeSize(dtype);
  array.data.resize(static_cast<size_t>(count) * itemSize);
  uint8_t *bytes = array.data.data();
  auto store = [&](auto element, int64_t i) {
    std::memcpy(bytes + i * itemSize, &element, sizeof(element));
  };
  for (int64_t i = 0; i < count; ++i) {
    switch (dtype) {
    case DType::F16:
      store(doubleToHalf(values[i]), i);
      break;
    case DType::BF16:
      store(doubleToBFloat16(values[i]), i);
      break;
    case DType::F32:
      store(static_cast<float>(values[i]), i);
      break;
    case DType::F64:
      store(values[i], i);
      break;
    case DType::I32:
      store(roundToInt<int32_t>(values[i]), i);
      break;
    case DType::I64:
      store(roundToInt<int64_t>(values[i]), i);
      break;
    }
  }
  return array;
}
