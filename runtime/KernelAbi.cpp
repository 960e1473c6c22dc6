//===- KernelAbi.cpp - How to call one of FA's GPU kernels ----------------===//

#include "fa/Runtime/KernelAbi.h"

#include <algorithm>
#include <cctype>
#include <cstdio>
#include <cstring>
#include <iterator>
#include <limits>
#include <utility>

using namespace fa::runtime;

//===----------------------------------------------------------------------===//
// The description
//===----------------------------------------------------------------------===//

KernelParam KernelParam::pointer(AbiTensor tensor) {
  KernelParam p;
  p.kind = Kind::Pointer;
  p.type = MachineType::Ptr;
  p.tensor = tensor;
  return p;
}

KernelParam KernelParam::capturePointer(uint32_t capture) {
  KernelParam p = pointer(AbiTensor::Capture);
  p.capture = capture;
  return p;
}

KernelParam KernelParam::dqAccum(uint32_t columns) {
  KernelParam p = pointer(AbiTensor::DQAccum);
  p.dim = columns;
  return p;
}

KernelParam KernelParam::stride(AbiTensor tensor, uint32_t dim,
                                MachineType type) {
  KernelParam p;
  p.kind = Kind::Stride;
  p.type = type;
  p.tensor = tensor;
  p.dim = dim;
  return p;
}

KernelParam KernelParam::captureStride(uint32_t capture, uint32_t dim,
                                       MachineType type) {
  KernelParam p = stride(AbiTensor::Capture, dim, type);
  p.capture = capture;
  return p;
}

KernelParam KernelParam::ofSize(AbiSize size, MachineType type) {
  KernelParam p;
  p.kind = Kind::Size;
  p.type = type;
  p.size = size;
  return p;
}

KernelParam KernelParam::ofScalar(AbiScalar scalar, MachineType type) {
  KernelParam p;
  p.kind = Kind::Scalar;
  p.type = type;
  p.scalar = scalar;
  return p;
}

KernelParam KernelParam::tensorMap(AbiTensor tensor, uint32_t columns,
                                   uint32_t boxRows) {
  KernelParam p;
  p.kind = Kind::TensorMap;
  p.type = MachineType::TensorMap;
  p.tensor = tensor;
  p.dim = columns;
  p.boxRows = boxRows;
  return p;
}

bool KernelParam::sameValue(const KernelParam &other) const {
  if (kind != other.kind)
    return false;
  switch (kind) {
  case Kind::Pointer:
  case Kind::Stride:
    return tensor == other.tensor && dim == other.dim &&
           (tensor != AbiTensor::Capture || capture == other.capture);
  case Kind::Size:
    return size == other.size;
  case Kind::Scalar:
    return scalar == other.scalar;
  case Kind::TensorMap:
    return tensor == other.tensor && dim == other.dim &&
           boxRows == other.boxRows;
  }
  return false;
}

bool KernelAbi::operator==(const KernelAbi &other) const {
  return name == other.name && grid == other.grid && threads == other.threads &&
         sharedBytes == other.sharedBytes && params == other.params;
}

const char *fa::runtime::getName(AbiTensor tensor) {
  switch (tensor) {
  case AbiTensor::Q:
    return "q";
  case AbiTensor::K:
    return "k";
  case AbiTensor::V:
    return "v";
  case AbiTensor::O:
    return "o";
  case AbiTensor::Lse:
    return "lse";
  case AbiTensor::DO:
    return "do";
  case AbiTensor::DQ:
    return "dq";
  case AbiTensor::DK:
    return "dk";
  case AbiTensor::DV:
    return "dv";
  case AbiTensor::Dsum:
    return "dsum";
  case AbiTensor::Bias:
    return "bias";
  case AbiTensor::Slopes:
    return "slopes";
  case AbiTensor::DBias:
    return "dbias";
  case AbiTensor::DQAccum:
    return "dq_accum";
  case AbiTensor::KeyRanges:
    return "key_ranges";
  case AbiTensor::Capture:
    return "capture";
  }
  return "?";
}

const char *fa::runtime::getName(AbiSize size) {
  switch (size) {
  case AbiSize::Nq:
    return "Nq";
  case AbiSize::Nk:
    return "Nk";
  case AbiSize::Group:
    return "group";
  case AbiSize::B:
    return "B";
  case AbiSize::Hq:
    return "Hq";
  case AbiSize::Hkv:
    return "Hkv";
  }
  return "?";
}

const char *fa::runtime::getName(AbiScalar scalar) {
  switch (scalar) {
  case AbiScalar::ScaleLog2:
    return "scale_log2";
  case AbiScalar::Scale:
    return "scale";
  case AbiScalar::Seed:
    return "seed";
  }
  return "?";
}

const char *fa::runtime::getName(MachineType type) {
  switch (type) {
  case MachineType::I32:
    return "i32";
  case MachineType::I64:
    return "i64";
  case MachineType::F32:
    return "f32";
  case MachineType::Ptr:
    return "ptr";
  case MachineType::TensorMap:
    return "tmap";
  }
  return "?";
}

size_t fa::runtime::getByteSize(MachineType type) {
  switch (type) {
  case MachineType::I32:
  case MachineType::F32:
    return 4;
  case MachineType::I64:
  case MachineType::Ptr:
    return 8;
  case MachineType::TensorMap:
    return 128;
  }
  return 0;
}

unsigned fa::runtime::getRank(AbiTensor tensor) {
  switch (tensor) {
  case AbiTensor::Lse:
  case AbiTensor::Dsum:
    return 3;
  case AbiTensor::Slopes:
    return 2;
  case AbiTensor::KeyRanges:
    return 1;
  case AbiTensor::Capture:
    return 0;
  default:
    return 4;
  }
}

namespace {
/// Whether a tensor map may be of `tensor`: the [B, H, N, D] tensors of 2-byte
/// elements, and the bias.
bool isTensorMapTensor(AbiTensor tensor) {
  switch (tensor) {
  case AbiTensor::Bias:
  case AbiTensor::Q:
  case AbiTensor::K:
  case AbiTensor::V:
  case AbiTensor::O:
  case AbiTensor::DO:
  case AbiTensor::DQ:
  case AbiTensor::DK:
  case AbiTensor::DV:
    return true;
  default:
    return false;
  }
}

/// Whether `tensor` (of isTensorMapTensor) has the queries' rows and heads.
bool isQueryTensor(AbiTensor tensor) {
  return tensor == AbiTensor::Q || tensor == AbiTensor::O ||
         tensor == AbiTensor::DO || tensor == AbiTensor::DQ;
}

/// The name of the tensor of a pointer or stride parameter ("capture2").
std::string tensorName(const KernelParam &p) {
  std::string name = getName(p.tensor);
  if (p.tensor == AbiTensor::Capture)
    name += std::to_string(p.capture);
  return name;
}
} // namespace

std::string fa::runtime::printKernelParam(const KernelParam &p) {
  std::string value;
  switch (p.kind) {
  case KernelParam::Kind::Pointer:
    value = tensorName(p);
    if (p.tensor == AbiTensor::DQAccum)
      value += "(" + std::to_string(p.dim) + ")";
    break;
  case KernelParam::Kind::Stride:
    value = "stride(" + tensorName(p) + ", " + std::to_string(p.dim) + ")";
    break;
  case KernelParam::Kind::Size:
    value = getName(p.size);
    break;
  case KernelParam::Kind::Scalar:
    value = getName(p.scalar);
    break;
  case KernelParam::Kind::TensorMap:
    value = "tensor_map(" + tensorName(p) + ", " + std::to_string(p.dim) +
            ", " + std::to_string(p.boxRows) + ")";
    break;
  }
  return value + " : " + getName(p.type);
}

std::string fa::runtime::printGridAxis(const GridAxis &axis) {
  switch (axis.kind) {
  case GridAxis::Kind::One:
    return "1";
  case GridAxis::Kind::TilesNq:
    return "tiles(Nq, " + std::to_string(axis.rows) + ")";
  case GridAxis::Kind::TilesNk:
    return "tiles(Nk, " + std::to_string(axis.rows) + ")";
  case GridAxis::Kind::Hq:
    return "Hq";
  case GridAxis::Kind::Hkv:
    return "Hkv";
  case GridAxis::Kind::B:
    return "B";
  case GridAxis::Kind::Persistent:
    return "persistent(Nq, " + std::to_string(axis.rows) + ", " +
           std::to_string(axis.ctasPerSM) + ")";
  }
  return "?";
}

std::string fa::runtime::printGridRule(const GridRule &rule) {
  return "[" + printGridAxis(rule.x) + ", " + printGridAxis(rule.y) + ", " +
         printGridAxis(rule.z) + "]";
}

std::string fa::runtime::printKernelAbi(const KernelAbi &abi) {
  std::string text = "grid = " + printGridRule(abi.grid) +
                     ", threads = " + std::to_string(abi.threads) +
                     ", shared = " + std::to_string(abi.sharedBytes) +
                     ", params = [";
  for (size_t i = 0; i < abi.params.size(); ++i)
    text += (i ? ", " : "") + printKernelParam(abi.params[i]);
  return text + "]";
}

Status fa::runtime::verifyKernelAbi(const KernelAbi &abi) {
  auto error = [](const std::string &what) {
    return Status::error("kernel ABI: " + what);
  };
  if (abi.threads < 1 || abi.threads > 1024)
    return error("threads must be 1 to 1024, got " +
                 std::to_string(abi.threads));
  using K = GridAxis::Kind;
  const GridRule &g = abi.grid;
  if (g.x.kind != K::One && g.x.kind != K::TilesNq && g.x.kind != K::TilesNk &&
      g.x.kind != K::Persistent)
    return error("grid x must be tiles(Nq, R), tiles(Nk, R), persistent(Nq, "
                 "R, C) or 1, got " +
                 printGridAxis(g.x));
  if ((g.x.kind == K::One) != (g.x.rows == 0))
    return error("grid x: tiles need rows > 0");
  if ((g.x.kind == K::Persistent) != (g.x.ctasPerSM != 0))
    return error("grid x: a persistent grid needs C > 0 CTAs an SM");
  if (g.x.kind == K::Persistent) {
    if (g.y.kind != K::One || g.z.kind != K::One)
      return error("grid y and z of a persistent grid must be 1");
    for (AbiSize size : {AbiSize::Hq, AbiSize::B})
      if (findParam(abi, KernelParam::ofSize(size)) < 0)
        return error(std::string("grid x is persistent, which needs ") +
                     getName(size) + " as a parameter");
  }
  if (g.y.kind != K::One && g.y.kind != K::Hq && g.y.kind != K::Hkv &&
      g.y.kind != K::TilesNk)
    return error("grid y must be Hq, Hkv, tiles(Nk, R) or 1, got " +
                 printGridAxis(g.y));
  if (g.y.kind == K::TilesNk && g.y.rows == 0)
    return error("grid y: tiles need rows > 0");
  if (g.z.kind != K::One && g.z.kind != K::B)
    return error("grid z must be B or 1, got " + printGridAxis(g.z));
  if ((g.y.rows && g.y.kind != K::TilesNk) || g.z.rows)
    return error("grid y (but tiles) and z have no rows");

  std::vector<uint32_t> captureStrides; // per capture: a bit per dim
  std::vector<bool> capturePointers;
  for (size_t i = 0; i < abi.params.size(); ++i) {
    const KernelParam &p = abi.params[i];
    std::string what =
        "parameter " + std::to_string(i) + " (" + printKernelParam(p) + ")";
    for (size_t j = 0; j < i; ++j)
      if (abi.params[j].sameValue(p))
        return error(what + " repeats parameter " + std::to_string(j));
    bool capture = p.tensor == AbiTensor::Capture;
    switch (p.kind) {
    case KernelParam::Kind::Pointer:
      if (p.type != MachineType::Ptr)
        return error(what + ": a pointer is passed as ptr");
      if ((p.tensor == AbiTensor::DQAccum) != (p.dim != 0))
        return error(what + ": only dq_accum has a row length, and it must "
                            "be positive");
      break;
    case KernelParam::Kind::Stride:
      if (p.type != MachineType::I64 && p.type != MachineType::I32)
        return error(what + ": a stride is passed as i64 or i32");
      if (!capture && p.dim >= getRank(p.tensor))
        return error(what + ": " + getName(p.tensor) + " has " +
                     std::to_string(getRank(p.tensor)) + " dims");
      if (capture && p.dim >= 32)
        return error(what + ": captures have at most 32 dims");
      break;
    case KernelParam::Kind::Size:
      if (p.type != MachineType::I32 && p.type != MachineType::I64)
        return error(what + ": a size is passed as i32 or i64");
      break;
    case KernelParam::Kind::Scalar:
      if (p.type !=
          (p.scalar == AbiScalar::Seed ? MachineType::I64 : MachineType::F32))
        return error(what + ": " + getName(p.scalar) + " is passed as " +
                     (p.scalar == AbiScalar::Seed ? "i64" : "f32"));
      break;
    case KernelParam::Kind::TensorMap:
      if (p.type != MachineType::TensorMap)
        return error(what + ": a tensor map is passed as tmap");
      if (!isTensorMapTensor(p.tensor))
        return error(what + ": a tensor map is of q, k, v, o, do, dq, dk, dv "
                            "or bias");
      if (p.tensor == AbiTensor::Bias && p.dim != 32 && p.dim != 64)
        return error(what +
                     ": a bias's tensor map has boxes of 32 or 64 "
                     "columns (128 bytes), got " +
                     std::to_string(p.dim));
      if (p.dim == 0 || p.dim % 8 != 0 || p.dim > 16384)
        return error(what +
                     ": a tensor map's columns must be a positive "
                     "multiple of 8, at most 16384, got " +
                     std::to_string(p.dim));
      if (p.boxRows < 1 || p.boxRows > 256)
        return error(what +
                     ": a tensor map's box rows must be 1 to 256, "
                     "got " +
                     std::to_string(p.boxRows));
      break;
    }
    if (capture && (p.kind == KernelParam::Kind::Pointer ||
                    p.kind == KernelParam::Kind::Stride)) {
      if (p.capture >= 1024)
        return error(what + ": at most 1024 captures");
      if (p.capture >= capturePointers.size()) {
        capturePointers.resize(p.capture + 1);
        captureStrides.resize(p.capture + 1);
      }
      if (p.kind == KernelParam::Kind::Pointer)
        capturePointers[p.capture] = true;
      else
        captureStrides[p.capture] |= uint32_t(1) << p.dim;
    }
  }
  for (size_t c = 0; c < capturePointers.size(); ++c) {
    if (!capturePointers[c])
      return error("capture " + std::to_string(c) + " has no pointer");
    uint32_t dims = captureStrides[c];
    if (dims == 0 || (dims & (dims + 1)) != 0)
      return error("capture " + std::to_string(c) +
                   " needs the strides of dims 0 to its rank - 1");
  }
  // The folded grid's kernel reads H and B.
  for (const GridAxis *axis : {&g.y, &g.z}) {
    if (axis->kind == K::One)
      continue;
    AbiSize size = axis->kind == K::Hq    ? AbiSize::Hq
                   : axis->kind == K::Hkv ? AbiSize::Hkv
                                          : AbiSize::B;
    if (findParam(abi, KernelParam::ofSize(size)) < 0)
      return error(std::string("grid ") + (axis == &g.y ? "y" : "z") + " is " +
                   getName(size) + ", which the kernel must take");
  }
  return Status::success();
}

int64_t fa::runtime::findParam(const KernelAbi &abi, const KernelParam &param) {
  for (size_t i = 0; i < abi.params.size(); ++i)
    if (abi.params[i].sameValue(param))
      return int64_t(i);
  return -1;
}

std::vector<uint32_t> fa::runtime::getCaptureRanks(const KernelAbi &abi) {
  std::vector<uint32_t> ranks;
  for (const KernelParam &p : abi.params) {
    if (p.tensor != AbiTensor::Capture ||
        (p.kind != KernelParam::Kind::Pointer &&
         p.kind != KernelParam::Kind::Stride))
      continue;
    if (p.capture >= ranks.size())
      ranks.resize(p.capture + 1);
    if (p.kind == KernelParam::Kind::Stride)
      ++ranks[p.capture];
  }
  return ranks;
}

uint32_t fa::runtime::getDQAccumColumns(const KernelAbi &abi) {
  for (const KernelParam &p : abi.params)
    if (p.kind == KernelParam::Kind::Pointer && p.tensor == AbiTensor::DQAccum)
      return p.dim;
  return 0;
}

bool fa::runtime::takesKeyRanges(const KernelAbi &abi) {
  return findParam(abi, KernelParam::pointer(AbiTensor::KeyRanges)) >= 0;
}

uint64_t fa::runtime::getKeyRangesBytes(const GridRule &rule,
                                        const KernelCall &call) {
  // A persistent forward's x counts its items; the ranges are per query
  // tile.
  GridAxis x = rule.x.kind == GridAxis::Kind::Persistent
                   ? GridAxis::tilesNq(rule.x.rows)
                   : rule.x;
  Expected<int64_t> tiles = getExtent(x, call);
  uint64_t count = tiles.failed() || *tiles < 0 ? 0 : uint64_t(*tiles);
  return std::max<uint64_t>(256, count * kKeyRangeWarps * kKeyRangeInts *
                                     sizeof(int32_t));
}

//===----------------------------------------------------------------------===//
// The text parser
//===----------------------------------------------------------------------===//

namespace {
/// Tokens of the text: identifiers, unsigned integers and punctuation.
class AbiLexer {
public:
  explicit AbiLexer(std::string_view text) : text(text) {}

  /// The next token ("" at the end), without consuming it.
  std::string_view peek() {
    skipSpaces();
    if (at >= text.size())
      return {};
    size_t end = at;
    auto isWord = [](char c) {
      return std::isalnum(static_cast<unsigned char>(c)) || c == '_';
    };
    if (isWord(text[at]))
      while (end < text.size() && isWord(text[end]))
        ++end;
    else
      ++end;
    return text.substr(at, end - at);
  }
  std::string_view next() {
    std::string_view token = peek();
    at += token.size();
    return token;
  }
  bool consume(std::string_view token) {
    if (peek() != token)
      return false;
    next();
    return true;
  }
  Status expected(const std::string &what) {
    std::string_view found = peek();
    return Status::error(
        "kernel ABI: expected " + what + " at offset " + std::to_string(at) +
        ", found " +
        (found.empty() ? "the end" : "'" + std::string(found) + "'"));
  }
  Status expect(std::string_view token) {
    if (consume(token))
      return Status::success();
    return expected("'" + std::string(token) + "'");
  }
  /// A decimal integer below 2^32.
  Expected<uint32_t> integer() {
    std::string_view token = peek();
    if (token.empty() || token.size() > 10 ||
        token.find_first_not_of("0123456789") != std::string_view::npos)
      return expected("an integer");
    uint64_t value = std::strtoull(std::string(token).c_str(), nullptr, 10);
    if (value > std::numeric_limits<uint32_t>::max())
      return expected("an integer below 2^32");
    next();
    return uint32_t(value);
  }
  bool atEnd() { return peek().empty(); }

private:
  void skipSpaces() {
    while (at < text.size() &&
           std::isspace(static_cast<unsigned char>(text[at])))
      ++at;
  }
  std::string_view text;
  size_t at = 0;
};

#define FA_ABI_TRY(expr)                                                       \
  do {                                                                         \
    Status faAbiStatus = (expr);                                               \
    if (faAbiStatus.failed())                                                  \
      return faAbiStatus;                                                      \
  } while (false)

/// A tensor name: "q", ..., "capture<i>"; sets `capture`.
bool parseTensor(std::string_view name, AbiTensor &tensor, uint32_t &capture) {
  std::string_view prefix = "capture";
  if (name.size() > prefix.size() && name.substr(0, prefix.size()) == prefix) {
    std::string_view digits = name.substr(prefix.size());
    if (digits.size() > 4 ||
        digits.find_first_not_of("0123456789") != std::string_view::npos ||
        (digits.size() > 1 && digits[0] == '0'))
      return false;
    tensor = AbiTensor::Capture;
    capture = uint32_t(std::atoi(std::string(digits).c_str()));
    return true;
  }
  for (size_t i = 0; i + 1 < kNumAbiTensors; ++i)
    if (name == getName(AbiTensor(i))) {
      tensor = AbiTensor(i);
      return true;
    }
  return false;
}

Expected<GridAxis> parseAxis(AbiLexer &lex) {
  if (lex.consume("1"))
    return GridAxis::one();
  if (lex.consume("Hq"))
    return GridAxis::hq();
  if (lex.consume("Hkv"))
    return GridAxis::hkv();
  if (lex.consume("B"))
    return GridAxis::batch();
  bool persistent = lex.consume("persistent");
  if (!persistent && !lex.consume("tiles"))
    return lex.expected(
        "a grid axis (tiles(N, R), persistent(Nq, R, C), Hq, Hkv, B or 1)");
  FA_ABI_TRY(lex.expect("("));
  GridAxis axis;
  if (persistent) {
    FA_ABI_TRY(lex.expect("Nq"));
    FA_ABI_TRY(lex.expect(","));
    Expected<uint32_t> rows = lex.integer();
    if (rows.failed())
      return rows.getStatus();
    FA_ABI_TRY(lex.expect(","));
    Expected<uint32_t> ctas = lex.integer();
    if (ctas.failed())
      return ctas.getStatus();
    FA_ABI_TRY(lex.expect(")"));
    return GridAxis::persistent(*rows, *ctas);
  }
  if (lex.consume("Nq"))
    axis.kind = GridAxis::Kind::TilesNq;
  else if (lex.consume("Nk"))
    axis.kind = GridAxis::Kind::TilesNk;
  else
    return lex.expected("Nq or Nk");
  FA_ABI_TRY(lex.expect(","));
  Expected<uint32_t> rows = lex.integer();
  if (rows.failed())
    return rows.getStatus();
  axis.rows = *rows;
  FA_ABI_TRY(lex.expect(")"));
  return axis;
}

Expected<KernelParam> parseParam(AbiLexer &lex) {
  KernelParam p;
  std::string_view word = lex.next();
  if (word == "tensor_map") {
    FA_ABI_TRY(lex.expect("("));
    p.kind = KernelParam::Kind::TensorMap;
    if (!parseTensor(lex.next(), p.tensor, p.capture))
      return Status::error("kernel ABI: unknown tensor in tensor_map(...)");
    for (uint32_t *field : {&p.dim, &p.boxRows}) {
      FA_ABI_TRY(lex.expect(","));
      Expected<uint32_t> value = lex.integer();
      if (value.failed())
        return value.getStatus();
      *field = *value;
    }
    FA_ABI_TRY(lex.expect(")"));
  } else if (word == "stride") {
    FA_ABI_TRY(lex.expect("("));
    p.kind = KernelParam::Kind::Stride;
    if (!parseTensor(lex.next(), p.tensor, p.capture))
      return Status::error("kernel ABI: unknown tensor in stride(...)");
    FA_ABI_TRY(lex.expect(","));
    Expected<uint32_t> dim = lex.integer();
    if (dim.failed())
      return dim.getStatus();
    p.dim = *dim;
    FA_ABI_TRY(lex.expect(")"));
  } else if (parseTensor(word, p.tensor, p.capture)) {
    p.kind = KernelParam::Kind::Pointer;
    if (p.tensor == AbiTensor::DQAccum) {
      FA_ABI_TRY(lex.expect("("));
      Expected<uint32_t> columns = lex.integer();
      if (columns.failed())
        return columns.getStatus();
      p.dim = *columns;
      FA_ABI_TRY(lex.expect(")"));
    }
  } else {
    bool found = false;
    for (size_t i = 0; i < kNumAbiSizes && !found; ++i)
      if (word == getName(AbiSize(i))) {
        p.kind = KernelParam::Kind::Size;
        p.size = AbiSize(i);
        found = true;
      }
    for (AbiScalar s :
         {AbiScalar::ScaleLog2, AbiScalar::Scale, AbiScalar::Seed})
      if (!found && word == getName(s)) {
        p.kind = KernelParam::Kind::Scalar;
        p.scalar = s;
        found = true;
      }
    if (!found)
      return Status::error("kernel ABI: unknown parameter '" +
                           std::string(word) + "'");
  }
  FA_ABI_TRY(lex.expect(":"));
  std::string_view type = lex.next();
  bool found = false;
  for (MachineType t : {MachineType::I32, MachineType::I64, MachineType::F32,
                        MachineType::Ptr, MachineType::TensorMap})
    if (type == getName(t)) {
      p.type = t;
      found = true;
    }
  if (!found)
    return Status::error("kernel ABI: unknown machine type '" +
                         std::string(type) + "'");
  return p;
}
} // namespace

Expected<KernelAbi> fa::runtime::parseKernelAbi(std::string_view text) {
  AbiLexer lex(text);
  KernelAbi abi;
  FA_ABI_TRY(lex.expect("grid"));
  FA_ABI_TRY(lex.expect("="));
  FA_ABI_TRY(lex.expect("["));
  GridAxis *axes[3] = {&abi.grid.x, &abi.grid.y, &abi.grid.z};
  for (int i = 0; i < 3; ++i) {
    if (i)
      FA_ABI_TRY(lex.expect(","));
    Expected<GridAxis> axis = parseAxis(lex);
    if (axis.failed())
      return axis.getStatus();
    *axes[i] = *axis;
  }
  FA_ABI_TRY(lex.expect("]"));
  for (auto [field, value] :
       {std::pair<const char *, uint32_t *>{"threads", &abi.threads},
        {"shared", &abi.sharedBytes}}) {
    FA_ABI_TRY(lex.expect(","));
    FA_ABI_TRY(lex.expect(field));
    FA_ABI_TRY(lex.expect("="));
    Expected<uint32_t> number = lex.integer();
    if (number.failed())
      return number.getStatus();
    *value = *number;
  }
  FA_ABI_TRY(lex.expect(","));
  FA_ABI_TRY(lex.expect("params"));
  FA_ABI_TRY(lex.expect("="));
  FA_ABI_TRY(lex.expect("["));
  if (!lex.consume("]")) {
    do {
      Expected<KernelParam> param = parseParam(lex);
      if (param.failed())
        return param.getStatus();
      abi.params.push_back(*param);
    } while (lex.consume(","));
    FA_ABI_TRY(lex.expect("]"));
  }
  if (!lex.atEnd())
    return lex.expected("the end");
  FA_ABI_TRY(verifyKernelAbi(abi));
  return abi;
}

//===----------------------------------------------------------------------===//
// Launching
//===----------------------------------------------------------------------===//

void KernelCall::set(AbiTensor tensor, uint64_t data,
                     std::initializer_list<int64_t> strides) {
  Tensor &t = (*this)[tensor];
  t.data = data;
  size_t i = 0;
  for (int64_t stride : strides)
    if (i < 4)
      t.strides[i++] = stride;
}

Expected<int64_t> KernelCall::getSize(AbiSize size) const {
  switch (size) {
  case AbiSize::Nq:
    return seqQ;
  case AbiSize::Nk:
    return seqKV;
  case AbiSize::B:
    return batch;
  case AbiSize::Hq:
    return headsQ;
  case AbiSize::Hkv:
    return headsKV;
  case AbiSize::Group:
    if (headsKV <= 0 || headsQ % headsKV != 0)
      return Status::error(
          "Hq = " + std::to_string(headsQ) +
          " is not a multiple of Hkv = " + std::to_string(headsKV));
    return headsQ / headsKV;
  }
  return Status::error("unknown size");
}

Expected<int64_t> fa::runtime::getExtent(const GridAxis &axis,
                                         const KernelCall &call) {
  switch (axis.kind) {
  case GridAxis::Kind::One:
    return int64_t(1);
  case GridAxis::Kind::TilesNq:
  case GridAxis::Kind::TilesNk: {
    int64_t n = axis.kind == GridAxis::Kind::TilesNq ? call.seqQ : call.seqKV;
    if (n < 0 || axis.rows == 0)
      return Status::error("negative sequence length");
    return (n + int64_t(axis.rows) - 1) / int64_t(axis.rows);
  }
  case GridAxis::Kind::Persistent: {
    // The work items.
    if (call.seqQ < 0 || call.headsQ < 0 || call.batch < 0 || axis.rows == 0)
      return Status::error("negative size");
    int64_t tiles = (call.seqQ + int64_t(axis.rows) - 1) / int64_t(axis.rows);
    if (tiles && call.headsQ && call.batch &&
        (tiles > int64_t(kMaxGridX) / call.headsQ ||
         tiles * call.headsQ > int64_t(kMaxGridX) / call.batch))
      return Status::error("the persistent kernel's work items, tiles(Nq, " +
                           std::to_string(axis.rows) +
                           ") * Hq * B = " + std::to_string(tiles) + " * " +
                           std::to_string(call.headsQ) + " * " +
                           std::to_string(call.batch) + ", exceed 2^31 - 1");
    return tiles * call.headsQ * call.batch;
  }
  case GridAxis::Kind::Hq:
  case GridAxis::Kind::Hkv:
  case GridAxis::Kind::B: {
    int64_t n = axis.kind == GridAxis::Kind::Hq    ? call.headsQ
                : axis.kind == GridAxis::Kind::Hkv ? call.headsKV
                                                   : call.batch;
    if (n < 0)
      return Status::error("negative size");
    return n;
  }
  }
  return Status::error("unknown grid axis");
}

Expected<GridSize> fa::runtime::getLaunchGrid(const GridRule &rule,
                                              const KernelCall &call,
                                              uint32_t multiprocessors) {
  int64_t extents[3];
  const GridAxis *axes[3] = {&rule.x, &rule.y, &rule.z};
  for (int i = 0; i < 3; ++i) {
    Expected<int64_t> extent = getExtent(*axes[i], call);
    if (extent.failed())
      return extent.getStatus();
    extents[i] = *extent;
  }
  if (!extents[0] || !extents[1] || !extents[2])
    return GridSize{};
  if (rule.x.kind == GridAxis::Kind::Persistent && call.persistentCtas > 0)
    extents[0] = std::min<int64_t>(extents[0], call.persistentCtas);
  else if (rule.x.kind == GridAxis::Kind::Persistent && multiprocessors)
    extents[0] = std::min<int64_t>(extents[0],
                                   int64_t(multiprocessors) * rule.x.ctasPerSM);
  if (extents[0] > int64_t(kMaxGridX))
    return Status::error(
        "grid x is " + printGridAxis(rule.x) + " = " +
        std::to_string(extents[0]) + " CTAs, above CUDA's limit of " +
        std::to_string(kMaxGridX) + " (2^31 - 1): the sequence is too long");
  // Below 2^31 each: the product fits.
  if (extents[1] > int64_t(kMaxGridX) || extents[2] > int64_t(kMaxGridX) ||
      extents[1] * extents[2] > int64_t(kMaxGridYZ) * kMaxGridYZ)
    return Status::error(
        std::string("grid y * z is ") + printGridAxis(rule.y) + " * " +
        printGridAxis(rule.z) + " = " + std::to_string(extents[1]) + " * " +
        std::to_string(extents[2]) + " CTAs, above CUDA's limit of 65535^2");
  GridSize grid;
  grid.x = uint32_t(extents[0]);
  if (extents[1] <= int64_t(kMaxGridYZ) && extents[2] <= int64_t(kMaxGridYZ)) {
    grid.y = uint32_t(extents[1]);
    grid.z = uint32_t(extents[2]);
    return grid;
  }
  // Folded only when needed: the kernels read ctaid.y and ctaid.z as they
  // are otherwise.
  int64_t linear = extents[1] * extents[2];
  grid.y = uint32_t(std::min<int64_t>(linear, kMaxGridYZ));
  grid.z = uint32_t((linear + kMaxGridYZ - 1) / kMaxGridYZ);
  return grid;
}

namespace {
/// The sizes of a tensor map's tensor: its rows N, heads H and batch B.
struct TensorMapSizes {
  int64_t rows, heads, batch;
  bool empty() const { return !rows || !heads || !batch; }
};
TensorMapSizes getTensorMapSizes(const KernelParam &p, const KernelCall &call) {
  // The bias: no data where it has no queries or no keys.
  if (p.tensor == AbiTensor::Bias)
    return {call.seqKV ? call.seqQ : 0, call.headsQ, call.batch};
  bool query = isQueryTensor(p.tensor);
  return {query ? call.seqQ : call.seqKV, query ? call.headsQ : call.headsKV,
          call.batch};
}
} // namespace

namespace {
/// The bias's map (the file comment), into `request` (its data set).
/// Whether TMA can stride dim `dim` of `tensor` by `elements` elements of
/// `bytes` each (a multiple of 16 bytes below 2^40; 0 only where
/// `zeroAllowed`). The message is built only for an error: this runs on
/// every call.
Status checkTmaStride(const char *tensor, int dim, int64_t elements,
                      int64_t bytes, bool zeroAllowed) {
  constexpr int64_t kMaxStride = int64_t(1) << 40;
  auto stride = [&] {
    return "stride(" + std::string(tensor) + ", " + std::to_string(dim) +
           ") = " + std::to_string(elements);
  };
  if (elements < 0 || (!zeroAllowed && elements == 0) ||
      elements >= kMaxStride / bytes)
    return Status::error(stride() +
                         (zeroAllowed
                              ? " elements is negative or 2^40 bytes or more, "
                                "which TMA cannot stride"
                              : " elements is not positive or is 2^40 bytes "
                                "or more, which TMA cannot stride"));
  if (elements * bytes % 16 != 0)
    return Status::error(stride() + " elements is " +
                         std::to_string(elements * bytes) +
                         " bytes, not a multiple of 16, as TMA needs");
  return Status::success();
}

Expected<TensorMapRequest> getBiasTensorMapRequest(const KernelParam &param,
                                                   const KernelCall &call,
                                                   TensorMapRequest request) {
  const KernelCall::Tensor &t = call[AbiTensor::Bias];
  int64_t bytes = 128 / param.dim;
  request.elementBytes = uint32_t(bytes);
  if (t.strides[3] != 1)
    return Status::error("stride(bias, 3) = " + std::to_string(t.strides[3]) +
                         " elements; TMA copies of bias blocks need 1");
  for (auto [value, name] : {std::pair<int64_t, const char *>{call.seqQ, "Nq"},
                             {call.seqKV, "Nk"},
                             {call.headsQ, "Hq"},
                             {call.batch, "B"}})
    if (value < 0)
      return Status::error(std::string(name) + " = " + std::to_string(value) +
                           " is negative");
  uint64_t dims[5] = {uint64_t(call.seqKV), uint64_t(call.seqQ),
                      uint64_t(call.headsQ), uint64_t(call.batch), 1};
  uint32_t box[5] = {param.dim, param.boxRows, 1, 1, 1};
  std::copy(std::begin(dims), std::end(dims), request.dims);
  std::copy(std::begin(box), std::end(box), request.box);
  for (int i = 0; i < 3; ++i) {
    int dim = 2 - i;
    int64_t elements = t.strides[dim];
    if (elements == 0 && dim < 2) {
      // Broadcast: one head (batch) the kernel reads at 0.
      request.dims[dim == 1 ? 2 : 3] = 1;
      request.strides[i] = 16;
      continue;
    }
    if (Status st = checkTmaStride("bias", dim, elements, bytes,
                                   /*zeroAllowed=*/false);
        st.failed())
      return st;
    request.strides[i] = uint64_t(elements * bytes);
  }
  request.strides[3] = 16;
  return request;
}
} // namespace

Expected<TensorMapRequest>
fa::runtime::getTensorMapRequest(const KernelParam &param,
                                 const KernelCall &call) {
  if (param.kind != KernelParam::Kind::TensorMap ||
      !isTensorMapTensor(param.tensor) || param.dim == 0 ||
      param.dim % 8 != 0 || param.dim > 16384 || param.boxRows == 0)
    return Status::error(printKernelParam(param) + " is not a tensor map");
  TensorMapSizes sizes = getTensorMapSizes(param, call);
  bool query = isQueryTensor(param.tensor);
  for (auto [value, name] :
       {std::pair<int64_t, const char *>{sizes.rows, query ? "Nq" : "Nk"},
        {sizes.heads, query ? "Hq" : "Hkv"},
        {sizes.batch, "B"}})
    if (value < 0)
      return Status::error(std::string(name) + " = " + std::to_string(value) +
                           " is negative");
  const KernelCall::Tensor &t = call[param.tensor];
  if (t.data % 16 != 0) {
    char address[32];
    std::snprintf(address, sizeof(address), "0x%llx",
                  static_cast<unsigned long long>(t.data));
    return Status::error(std::string(getName(param.tensor)) + "'s data at " +
                         address + " is not 16-byte aligned, as TMA needs");
  }
  TensorMapRequest request;
  request.data = t.data;
  if (param.tensor == AbiTensor::Bias)
    return getBiasTensorMapRequest(param, call, request);
  // Whole panels: one box of every panel. Otherwise the box is one panel
  // of a (D, N, 1, H, B) map, which the kernel copies once per panel, and
  // the columns past D are out of bounds: zeros.
  bool whole = param.dim % 64 == 0;
  uint64_t panels = whole ? param.dim / 64 : 1;
  uint64_t dims[5] = {whole ? 64 : param.dim, uint64_t(sizes.rows), panels,
                      uint64_t(sizes.heads), uint64_t(sizes.batch)};
  uint32_t box[5] = {64, param.boxRows, uint32_t(panels), 1, 1};
  std::copy(std::begin(dims), std::end(dims), request.dims);
  std::copy(std::begin(box), std::end(box), request.box);
  // The byte strides of dims 1 to 4: rows, panels (128 bytes), heads, batch.
  const int tensorDims[4] = {2, -1, 1, 0};
  for (int i = 0; i < 4; ++i) {
    if (tensorDims[i] < 0) {
      request.strides[i] = 128;
      continue;
    }
    int64_t elements = t.strides[tensorDims[i]];
    if (Status st = checkTmaStride(getName(param.tensor), tensorDims[i],
                                   elements, 2, /*zeroAllowed=*/true);
        st.failed())
      return st;
    request.strides[i] = uint64_t(elements) * 2;
  }
  return request;
}

Expected<ParamBuffer> ParamBuffer::build(const KernelAbi &abi,
                                         const KernelCall &call,
                                         TensorMapEncoder encoder) {
  // The captures first: a count or rank that differs is the clearest error.
  std::vector<uint32_t> ranks = getCaptureRanks(abi);
  bool same = ranks.size() == call.captures.size();
  for (size_t i = 0; same && i < ranks.size(); ++i)
    same = ranks[i] == call.captures[i].strides.size();
  if (!same) {
    auto list = [](const std::vector<size_t> &r) {
      std::string text;
      for (size_t i = 0; i < r.size(); ++i)
        text += (i ? ", " : "") + std::to_string(r[i]);
      return text;
    };
    std::vector<size_t> kernelRanks(ranks.begin(), ranks.end()), callRanks;
    for (const KernelCall::Capture &c : call.captures)
      callRanks.push_back(c.strides.size());
    return Status::error("kernel " + abi.name + " takes " +
                         std::to_string(ranks.size()) + " captures (ranks " +
                         list(kernelRanks) + "), but the call passes " +
                         std::to_string(call.captures.size()) + " (ranks " +
                         list(callRanks) + ")");
  }
  ParamBuffer buffer;
  buffer.slots.reserve(abi.params.size());
  buffer.mapIndex.assign(abi.params.size(), -1);
  int32_t numMaps = 0;
  for (size_t i = 0; i < abi.params.size(); ++i)
    if (abi.params[i].kind == KernelParam::Kind::TensorMap)
      buffer.mapIndex[i] = numMaps++;
  // Zero bytes, for maps of tensors without data.
  buffer.maps.resize(size_t(numMaps), TensorMapBytes{});
  for (size_t i = 0; i < abi.params.size(); ++i) {
    const KernelParam &p = abi.params[i];
    auto bad = [&](const std::string &why) {
      return Status::error("kernel " + abi.name + ", parameter " +
                           std::to_string(i) + " (" + printKernelParam(p) +
                           "): " + why);
    };
    uint64_t bits = 0;
    int64_t integer = 0;
    bool isInteger = true;
    bool capture = p.tensor == AbiTensor::Capture;
    switch (p.kind) {
    case KernelParam::Kind::Pointer:
      integer = int64_t(capture ? call.captures[p.capture].data
                                : call[p.tensor].data);
      break;
    case KernelParam::Kind::Stride:
      if (capture ? p.dim >= call.captures[p.capture].strides.size()
                  : p.dim >= 4)
        return bad("no such dim");
      integer = capture ? call.captures[p.capture].strides[p.dim]
                        : call[p.tensor].strides[p.dim];
      break;
    case KernelParam::Kind::Size: {
      Expected<int64_t> size = call.getSize(p.size);
      if (size.failed())
        return bad(size.getMessage());
      integer = *size;
      break;
    }
    case KernelParam::Kind::Scalar:
      if (p.scalar == AbiScalar::Seed) {
        integer = call.seed;
      } else {
        float value =
            p.scalar == AbiScalar::Scale ? call.scale : call.scaleLog2;
        uint32_t raw;
        std::memcpy(&raw, &value, sizeof(raw));
        bits = raw;
        isInteger = false;
      }
      break;
    case KernelParam::Kind::TensorMap: {
      if (p.type != MachineType::TensorMap)
        return bad("a tensor map is passed as tmap");
      TensorMapSizes sizes = getTensorMapSizes(p, call);
      if (sizes.empty() && sizes.rows >= 0 && sizes.heads >= 0 &&
          sizes.batch >= 0) {
        // No data: the kernel reads nothing from the map.
        buffer.slots.push_back(0);
        continue;
      }
      if (!encoder)
        return bad("a tensor map needs the CUDA driver's encoder");
      Expected<TensorMapRequest> request = getTensorMapRequest(p, call);
      if (request.failed())
        return bad(request.getMessage());
      Status encoded =
          encoder(*request, &buffer.maps[size_t(buffer.mapIndex[i])]);
      if (encoded.failed())
        return bad(encoded.getMessage());
      buffer.slots.push_back(0);
      continue;
    }
    }
    if (p.type == MachineType::TensorMap)
      return bad("only a tensor map is passed as tmap");
    if (isInteger) {
      switch (p.type) {
      case MachineType::I32:
        if (integer < std::numeric_limits<int32_t>::min() ||
            integer > std::numeric_limits<int32_t>::max())
          return bad(std::to_string(integer) + " does not fit in i32");
        bits = uint32_t(int32_t(integer));
        break;
      case MachineType::I64:
      case MachineType::Ptr:
        bits = uint64_t(integer);
        break;
      case MachineType::F32:
        return bad("an integer passed as f32");
      case MachineType::TensorMap:
        break; // Returned above.
      }
    } else if (p.type != MachineType::F32) {
      return bad("a float passed as " + std::string(getName(p.type)));
    }
    buffer.slots.push_back(bits);
  }
  for (size_t i = 0; i < buffer.slots.size(); ++i)
    buffer.args.push_back(
        buffer.mapIndex[i] >= 0
            ? static_cast<void *>(&buffer.maps[size_t(buffer.mapIndex[i])])
            : &buffer.slots[i]);
  return buffer;
}
