//===- FAGPUDialect.cpp - FA's kernel-level IR ----------------------------===//

#include "fa/Dialect/FAGPU/IR/FAGPU.h"
#include "mlir/IR/Builders.h"
#include "mlir/IR/DialectImplementation.h"
#include "llvm/ADT/TypeSwitch.h"

using namespace mlir;
using namespace mlir::fagpu;

#include "fa/Dialect/FAGPU/IR/FAGPUOpsDialect.cpp.inc"

#include "fa/Dialect/FAGPU/IR/FAGPUEnums.cpp.inc"

#define GET_ATTRDEF_CLASSES
#include "fa/Dialect/FAGPU/IR/FAGPUAttrs.cpp.inc"

#define GET_TYPEDEF_CLASSES
#include "fa/Dialect/FAGPU/IR/FAGPUOpsTypes.cpp.inc"

void FAGPUDialect::initialize() {
  addOperations<
#define GET_OP_LIST
#include "fa/Dialect/FAGPU/IR/FAGPUOps.cpp.inc"
      >();
  addAttributes<
#define GET_ATTRDEF_LIST
#include "fa/Dialect/FAGPU/IR/FAGPUAttrs.cpp.inc"
      >();
  addTypes<
#define GET_TYPEDEF_LIST
#include "fa/Dialect/FAGPU/IR/FAGPUOpsTypes.cpp.inc"
      >();
}

//===----------------------------------------------------------------------===//
// !fagpu.shared
//===----------------------------------------------------------------------===//

Type SharedType::parse(AsmParser &parser) {
  SmallVector<int64_t> shape;
  Type elementType;
  if (parser.parseLess() ||
      parser.parseDimensionList(shape, /*allowDynamic=*/false) ||
      parser.parseType(elementType))
    return {};
  bool wgmma = false;
  if (succeeded(parser.parseOptionalComma())) {
    if (parser.parseKeyword("wgmma"))
      return {};
    wgmma = true;
  }
  if (parser.parseGreater())
    return {};
  return getChecked([&] { return parser.emitError(parser.getNameLoc()); },
                    parser.getContext(), shape, elementType, wgmma);
}

void SharedType::print(AsmPrinter &printer) const {
  printer << "<";
  for (int64_t size : getShape())
    printer << size << "x";
  printer << getElementType();
  if (getWgmma())
    printer << ", wgmma";
  printer << ">";
}

LogicalResult SharedType::verify(function_ref<InFlightDiagnostic()> emitError,
                                 ArrayRef<int64_t> shape, Type elementType,
                                 bool wgmma) {
  if (shape.size() != 3)
    return emitError() << "a shared tile ring is stages x rows x columns (got "
                       << shape.size() << " dims)";
  if (shape[0] < 1 || shape[1] < 1 || shape[2] < 1)
    return emitError() << "a shared tile ring's dims must be positive";
  // f32 (a bias block) only in the 128-byte swizzle, which TMA writes.
  if (!elementType.isF16() && !elementType.isBF16() &&
      !(wgmma && elementType.isF32()))
    return emitError() << "a shared tile holds f16 or bf16, or f32 in wgmma's "
                          "layout (got "
                       << elementType << ")";
  int64_t bytes = elementType.getIntOrFloatBitWidth() / 8;
  // ldmatrix and the swizzle move 16-byte chunks: 8 columns of 16 bits.
  if (shape[2] * bytes % 16 != 0)
    return emitError() << "a shared tile's columns must be a multiple of "
                       << 16 / bytes << " (16-byte chunks; got " << shape[2]
                       << ")";
  // The 128-byte swizzle repeats every 8 rows of a 128-byte panel.
  if (wgmma && (shape[1] % 8 != 0 || shape[2] * bytes % 128 != 0))
    return emitError() << "a wgmma shared tile's rows must be a multiple of 8 "
                          "and its columns of "
                       << 128 / bytes << " (got " << shape[1] << " x "
                       << shape[2] << ")";
  return success();
}

LogicalResult BarriersType::verify(function_ref<InFlightDiagnostic()> emitError,
                                   int64_t stages) {
  if (stages < 1)
    return emitError() << "a barrier ring needs at least one stage (got "
                       << stages << ")";
  return success();
}

int64_t SharedType::getStageBytes() const {
  return getRows() * getCols() * getElementType().getIntOrFloatBitWidth() / 8;
}

//===----------------------------------------------------------------------===//
// Layouts
//===----------------------------------------------------------------------===//

unsigned mlir::fagpu::getLayoutWarps(Type type) {
  auto tensor = dyn_cast<RankedTensorType>(type);
  if (!tensor)
    return 0;
  Attribute layout = tensor.getEncoding();
  if (auto acc = dyn_cast_or_null<AccLayoutAttr>(layout))
    return acc.getWarps();
  if (auto operand = dyn_cast_or_null<OperandLayoutAttr>(layout))
    return operand.getWarps();
  if (auto rows = dyn_cast_or_null<RowsLayoutAttr>(layout))
    return rows.getWarps();
  return 0;
}

int64_t mlir::fagpu::getRegistersPerThread(RankedTensorType type) {
  int64_t mTiles = type.getDimSize(0) / (16 * getLayoutWarps(type));
  Attribute layout = type.getEncoding();
  if (isa<RowsLayoutAttr>(layout))
    return mTiles * 2;
  if (isa<AccLayoutAttr>(layout))
    return mTiles * (type.getDimSize(1) / 8) * 4;
  return mTiles * (type.getDimSize(1) / 16) * 4;
}
