//===- KernelAbiAttr.cpp - #fa.kernel_abi -----------------------*- C++ -*-===//
//
// The attribute's text is fa::runtime::printKernelAbi's (the kernel cache
// stores the same); its parser reads it with MLIR's tokens, and its verifier
// is fa::runtime::verifyKernelAbi.
//
//===----------------------------------------------------------------------===//

#include "fa/Dialect/FA/IR/FAOps.h"
#include "mlir/IR/DialectImplementation.h"

using namespace mlir;
using namespace mlir::fa;
namespace rt = ::fa::runtime;

namespace {

ParseResult parseGridAxis(AsmParser &parser, rt::GridAxis &axis) {
  uint64_t one = 0;
  OptionalParseResult integer = parser.parseOptionalInteger(one);
  if (integer.has_value()) {
    if (failed(*integer))
      return failure();
    if (one != 1)
      return parser.emitError(parser.getCurrentLocation(),
                              "a grid axis is tiles(N, R), Hq, Hkv, B or 1");
    axis = rt::GridAxis::one();
    return success();
  }
  StringRef word;
  SMLoc loc = parser.getCurrentLocation();
  if (parser.parseKeyword(&word))
    return failure();
  if (word == "Hq")
    axis = rt::GridAxis::hq();
  else if (word == "Hkv")
    axis = rt::GridAxis::hkv();
  else if (word == "B")
    axis = rt::GridAxis::batch();
  else if (word == "tiles") {
    StringRef over;
    uint32_t rows = 0;
    SMLoc overLoc;
    if (parser.parseLParen() ||
        (overLoc = parser.getCurrentLocation(), parser.parseKeyword(&over)) ||
        parser.parseComma() || parser.parseInteger(rows) ||
        parser.parseRParen())
      return failure();
    if (over != "Nq" && over != "Nk")
      return parser.emitError(overLoc, "tiles are of Nq or Nk");
    axis = over == "Nq" ? rt::GridAxis::tilesNq(rows)
                        : rt::GridAxis::tilesNk(rows);
  } else {
    return parser.emitError(loc, "a grid axis is tiles(N, R), Hq, Hkv, B or "
                                 "1, not '")
           << word << "'";
  }
  return success();
}

/// A tensor name, "q" to "capture<i>".
bool parseTensorName(StringRef name, rt::AbiTensor &tensor, uint32_t &capture) {
  if (name.consume_front("capture")) {
    if (name.empty() || name.size() > 4 ||
        (name.size() > 1 && name.front() == '0') ||
        name.getAsInteger(10, capture))
      return false;
    tensor = rt::AbiTensor::Capture;
    return true;
  }
  for (size_t i = 0; i + 1 < rt::kNumAbiTensors; ++i)
    if (name == rt::getName(rt::AbiTensor(i))) {
      tensor = rt::AbiTensor(i);
      return true;
    }
  return false;
}

ParseResult parseKernelParam(AsmParser &parser, rt::KernelParam &p) {
  StringRef word;
  SMLoc loc = parser.getCurrentLocation();
  if (parser.parseKeyword(&word))
    return failure();
  if (word == "tensor_map") {
    StringRef tensor;
    SMLoc tensorLoc;
    p.kind = rt::KernelParam::Kind::TensorMap;
    if (parser.parseLParen() ||
        (tensorLoc = parser.getCurrentLocation(),
         parser.parseKeyword(&tensor)) ||
        parser.parseComma() || parser.parseInteger(p.dim) ||
        parser.parseComma() || parser.parseInteger(p.boxRows) ||
        parser.parseRParen())
      return failure();
    if (!parseTensorName(tensor, p.tensor, p.capture))
      return parser.emitError(tensorLoc, "unknown tensor '") << tensor << "'";
  } else if (word == "stride") {
    StringRef tensor;
    SMLoc tensorLoc;
    p.kind = rt::KernelParam::Kind::Stride;
    if (parser.parseLParen() ||
        (tensorLoc = parser.getCurrentLocation(),
         parser.parseKeyword(&tensor)) ||
        parser.parseComma() || parser.parseInteger(p.dim) ||
        parser.parseRParen())
      return failure();
    if (!parseTensorName(tensor, p.tensor, p.capture))
      return parser.emitError(tensorLoc, "unknown tensor '") << tensor << "'";
  } else if (parseTensorName(word, p.tensor, p.capture)) {
    p.kind = rt::KernelParam::Kind::Pointer;
    if (p.tensor == rt::AbiTensor::DQAccum &&
        (parser.parseLParen() || parser.parseInteger(p.dim) ||
         parser.parseRParen()))
      return failure();
  } else {
    bool found = false;
    for (size_t i = 0; i < rt::kNumAbiSizes && !found; ++i)
      if (word == rt::getName(rt::AbiSize(i))) {
        p.kind = rt::KernelParam::Kind::Size;
        p.size = rt::AbiSize(i);
        found = true;
      }
    for (rt::AbiScalar s :
         {rt::AbiScalar::ScaleLog2, rt::AbiScalar::Scale, rt::AbiScalar::Seed})
      if (!found && word == rt::getName(s)) {
        p.kind = rt::KernelParam::Kind::Scalar;
        p.scalar = s;
        found = true;
      }
    if (!found)
      return parser.emitError(loc, "unknown kernel parameter '") << word << "'";
  }
  StringRef type;
  SMLoc typeLoc;
  if (parser.parseColon() ||
      (typeLoc = parser.getCurrentLocation(), parser.parseKeyword(&type)))
    return failure();
  for (rt::MachineType t :
       {rt::MachineType::I32, rt::MachineType::I64, rt::MachineType::F32,
        rt::MachineType::Ptr, rt::MachineType::TensorMap})
    if (type == rt::getName(t)) {
      p.type = t;
      return success();
    }
  return parser.emitError(typeLoc, "a parameter's type is ptr, i32, i64, "
                                   "f32 or tmap, not '")
         << type << "'";
}

} // namespace

Attribute KernelAbiAttr::parse(AsmParser &parser, Type) {
  rt::GridRule grid;
  uint32_t threads = 0, shared = 0;
  SmallVector<rt::KernelParam> params;
  if (parser.parseLess() || parser.parseKeyword("grid") ||
      parser.parseEqual() || parser.parseLSquare() ||
      parseGridAxis(parser, grid.x) || parser.parseComma() ||
      parseGridAxis(parser, grid.y) || parser.parseComma() ||
      parseGridAxis(parser, grid.z) || parser.parseRSquare() ||
      parser.parseComma() || parser.parseKeyword("threads") ||
      parser.parseEqual() || parser.parseInteger(threads) ||
      parser.parseComma() || parser.parseKeyword("shared") ||
      parser.parseEqual() || parser.parseInteger(shared) ||
      parser.parseComma() || parser.parseKeyword("params") ||
      parser.parseEqual() ||
      parser.parseCommaSeparatedList(
          AsmParser::Delimiter::Square,
          [&] { return parseKernelParam(parser, params.emplace_back()); }) ||
      parser.parseGreater())
    return {};
  return getChecked([&] { return parser.emitError(parser.getNameLoc()); },
                    parser.getContext(), grid, threads, shared,
                    ArrayRef<rt::KernelParam>(params));
}

void KernelAbiAttr::print(AsmPrinter &printer) const {
  printer << "<" << rt::printKernelAbi(getAbi()) << ">";
}

LogicalResult
KernelAbiAttr::verify(function_ref<InFlightDiagnostic()> emitError,
                      rt::GridRule grid, uint32_t threads, uint32_t shared,
                      ArrayRef<rt::KernelParam> params) {
  rt::KernelAbi abi;
  abi.grid = grid;
  abi.threads = threads;
  abi.sharedBytes = shared;
  abi.params.assign(params.begin(), params.end());
  rt::Status status = rt::verifyKernelAbi(abi);
  if (status.failed())
    return emitError() << status.getMessage();
  return success();
}

rt::KernelAbi KernelAbiAttr::getAbi(StringRef name) const {
  rt::KernelAbi abi;
  abi.name = name.str();
  abi.grid = getGrid();
  abi.threads = getThreads();
  abi.sharedBytes = getSharedBytes();
  abi.params.assign(getParams().begin(), getParams().end());
  return abi;
}
