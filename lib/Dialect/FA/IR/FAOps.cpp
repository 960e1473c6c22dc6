//===- FAOps.cpp - FA operations --------------------------------*- C++ -*-===//
//
// Verifiers for fa.attention and fa.attention_grad. Both ops share one
// variant description (operands, attributes, regions), verified by the
// templates below; every message names the operand and the expected form.
//
//===----------------------------------------------------------------------===//

#include "fa/Dialect/FA/IR/FAOps.h"
#include "mlir/IR/Builders.h"
#include "mlir/IR/BuiltinTypes.h"
#include "mlir/IR/OpImplementation.h"
#include "mlir/IR/TypeUtilities.h"

#include <cmath>

using namespace mlir;
using namespace mlir::fa;

namespace {

/// Dimensions that must agree when both are static.
LogicalResult checkDim(Operation *op, int64_t a, StringRef aName, int64_t b,
                       StringRef bName) {
  if (ShapedType::isDynamic(a) || ShapedType::isDynamic(b) || a == b)
    return success();
  return op->emitOpError() << aName << " (" << a << ") does not match " << bName
                           << " (" << b << ")";
}

bool isAttentionElementType(Type t) {
  return t.isF16() || t.isBF16() || t.isF32();
}

LogicalResult checkAttentionTensor(Operation *op, RankedTensorType type,
                                   StringRef name, StringRef layout) {
  if (type.getRank() != 4)
    return op->emitOpError()
           << name << " must be a rank-4 tensor " << layout << ", got " << type;
  if (!isAttentionElementType(type.getElementType()))
    return op->emitOpError()
           << name << " element type must be f16, bf16 or f32, got "
           << type.getElementType();
  return success();
}

/// Checks that `actual` is compatible with the shape and element type
/// derived from the inputs.
LogicalResult checkResultType(Operation *op, Type actual, StringRef name,
                              ArrayRef<int64_t> shape, Type elementType) {
  auto expected = RankedTensorType::get(shape, elementType);
  auto actualTensor = dyn_cast<RankedTensorType>(actual);
  if (!actualTensor || actualTensor.getElementType() != elementType ||
      failed(verifyCompatibleShape(actualTensor.getShape(), shape)))
    return op->emitOpError() << name << " must be compatible with " << expected
                             << ", got " << actual;
  return success();
}

LogicalResult checkPositiveFinite(Operation *op, FloatAttr attr,
                                  StringRef name) {
  if (!attr)
    return success();
  double v = attr.getValueAsDouble();
  if (!std::isfinite(v) || v <= 0.0)
    return op->emitOpError()
           << name << " must be finite and positive, got " << v;
  return success();
}

/// Checks that the region, when present, takes `argTypes` and yields one
/// `yieldType`.
LogicalResult checkRegion(Operation *op, Region &region, StringRef name,
                          ArrayRef<Type> argTypes, Type yieldType) {
  if (region.empty())
    return success();
  Block &block = region.front();
  if (block.getArgumentTypes() != TypeRange(argTypes)) {
    // Printed unquoted, unlike types streamed into a diagnostic.
    std::string signature;
    llvm::raw_string_ostream os(signature);
    llvm::interleaveComma(argTypes, os);
    return op->emitOpError()
           << name << " region must have arguments (" << signature << ")";
  }
  auto yield = dyn_cast<YieldOp>(block.getTerminator());
  if (!yield || yield.getValues().size() != 1 ||
      yield.getValues().front().getType() != yieldType)
    return op->emitOpError() << name << " region must yield one " << yieldType;
  return success();
}

/// Captures are read element by element with tensor.extract, by every
/// lowering (host memrefs, GPU global loads, the float64 reference).
LogicalResult checkCaptures(Operation *op, ValueRange captures) {
  for (auto [i, capture] : llvm::enumerate(captures)) {
    auto type = cast<RankedTensorType>(capture.getType());
    Type et = type.getElementType();
    bool intOk = et.isSignlessInteger(8) || et.isSignlessInteger(16) ||
                 et.isSignlessInteger(32) || et.isSignlessInteger(64);
    bool floatOk = et.isF16() || et.isBF16() || et.isF32() || et.isF64();
    if (type.getRank() < 1 || (!intOk && !floatOk))
      return op->emitOpError()
             << "capture #" << i
             << " must be a tensor of rank >= 1 with i8, i16, i32, i64, f16, "
                "bf16, f32 or f64 elements, got "
             << type;
  }
  return success();
}

/// The argument types of a region: `base`, then the captures' types.
SmallVector<Type> regionArgTypes(ArrayRef<Type> base, ValueRange captures) {
  SmallVector<Type> types(base);
  llvm::append_range(types, captures.getTypes());
  return types;
}

/// Shapes read off Q, K and V, with dynamic dimensions as kDynamic.
struct AttentionShape {
  int64_t batch, headsQ, headsKV, seqQ, seqKV, headDim, headDimV;
};

template <typename OpT> FailureOr<AttentionShape> verifyInputs(OpT op) {
  Operation *o = op.getOperation();
  RankedTensorType q = op.getQuery().getType();
  RankedTensorType k = op.getKey().getType();
  RankedTensorType v = op.getValue().getType();
  if (failed(checkAttentionTensor(o, q, "query", "[B, Hq, Nq, D]")) ||
      failed(checkAttentionTensor(o, k, "key", "[B, Hkv, Nk, D]")) ||
      failed(checkAttentionTensor(o, v, "value", "[B, Hkv, Nk, Dv]")))
    return failure();
  Type et = q.getElementType();
  if (k.getElementType() != et || v.getElementType() != et)
    return o->emitOpError()
           << "key and value element types must match query (" << et
           << "), got " << k.getElementType() << " and " << v.getElementType();

  AttentionShape s{q.getDimSize(0), q.getDimSize(1), k.getDimSize(1),
                   q.getDimSize(2), k.getDimSize(2), q.getDimSize(3),
                   v.getDimSize(3)};
  if (ShapedType::isDynamic(s.headDim) || ShapedType::isDynamic(s.headDimV) ||
      ShapedType::isDynamic(k.getDimSize(3)))
    return o->emitOpError()
           << "head dims (D, Dv) must be static; a kernel is compiled per "
              "head dim";
  if (failed(checkDim(o, k.getDimSize(0), "key batch size", s.batch,
                      "query batch size")) ||
      failed(checkDim(o, v.getDimSize(0), "value batch size", s.batch,
                      "query batch size")) ||
      failed(checkDim(o, v.getDimSize(0), "value batch size", k.getDimSize(0),
                      "key batch size")) ||
      failed(checkDim(o, k.getDimSize(3), "key head dim", s.headDim,
                      "query head dim")) ||
      failed(checkDim(o, v.getDimSize(1), "value heads", s.headsKV,
                      "key heads")) ||
      failed(checkDim(o, v.getDimSize(2), "value sequence length", s.seqKV,
                      "key sequence length")))
    return failure();
  // K and V agree on Hkv; take it from V when only V knows it statically.
  if (ShapedType::isDynamic(s.headsKV))
    s.headsKV = v.getDimSize(1);
  if (!ShapedType::isDynamic(s.headsQ) && !ShapedType::isDynamic(s.headsKV) &&
      (s.headsKV == 0 || s.headsQ % s.headsKV != 0))
    return o->emitOpError()
           << "query heads (" << s.headsQ
           << ") must be a multiple of key/value heads (" << s.headsKV << ")";
  // Fill in dimensions that only one side knows statically.
  if (ShapedType::isDynamic(s.batch))
    s.batch = ShapedType::isDynamic(k.getDimSize(0)) ? v.getDimSize(0)
                                                     : k.getDimSize(0);
  if (ShapedType::isDynamic(s.seqKV))
    s.seqKV = v.getDimSize(2);
  return s;
}

template <typename OpT>
LogicalResult verifyVariant(OpT op, const AttentionShape &s) {
  Operation *o = op.getOperation();
  if (failed(checkPositiveFinite(o, op.getScaleAttr(), "scale")) ||
      failed(checkPositiveFinite(o, op.getSoftcapAttr(), "softcap")))
    return failure();

  if (auto window = op.getWindowAttr()) {
    if (window.size() != 2)
      return op.emitOpError()
             << "window must have two entries [left, right], got "
             << window.size();
    if (window[0] < 0 || window[1] < 0)
      return op.emitOpError() << "window sizes must be non-negative, got ["
                              << window[0] << ", " << window[1] << "]";
  }

  if (auto p = op.getDropoutPAttr()) {
    double v = p.getValueAsDouble();
    if (!(v >= 0.0 && v < 1.0))
      return op.emitOpError() << "dropout_p must be in [0, 1), got " << v;
    if (!op.getDropoutSeed())
      return op.emitOpError() << "dropout_p requires a dropout_seed operand";
  } else if (op.getDropoutSeed()) {
    return op.emitOpError() << "dropout_seed requires a dropout_p attribute";
  }

  if (Value bias = op.getBias()) {
    auto type = cast<RankedTensorType>(bias.getType());
    if (type.getRank() != 4)
      return op.emitOpError()
             << "bias must be a rank-4 tensor broadcastable to [B, Hq, Nq, "
                "Nk], got "
             << type;
    if (!isAttentionElementType(type.getElementType()))
      return op.emitOpError()
             << "bias element type must be f16, bf16 or f32, got "
             << type.getElementType();
    const int64_t full[4] = {s.batch, s.headsQ, s.seqQ, s.seqKV};
    const char *names[4] = {"B", "Hq", "Nq", "Nk"};
    for (int i = 0; i < 4; ++i) {
      int64_t d = type.getDimSize(i);
      if (ShapedType::isDynamic(d) || d == 1 ||
          ShapedType::isDynamic(full[i]) || d == full[i])
        continue;
      return op.emitOpError()
             << "bias dim " << i << " (" << d << ") is neither 1 nor "
             << names[i] << " (" << full[i] << ")";
    }
  }

  if (Value slopes = op.getAlibiSlopes()) {
    auto type = cast<RankedTensorType>(slopes.getType());
    if ((type.getRank() != 1 && type.getRank() != 2) ||
        !type.getElementType().isF32())
      return op.emitOpError()
             << "alibi_slopes must be an f32 tensor of shape [Hq] or [B, "
                "Hq], got "
             << type;
    if (failed(checkDim(o, type.getDimSize(type.getRank() - 1),
                        "alibi_slopes heads", s.headsQ, "query heads")))
      return failure();
    if (type.getRank() == 2 &&
        failed(checkDim(o, type.getDimSize(0), "alibi_slopes batch size",
                        s.batch, "query batch size")))
      return failure();
  }
  return checkCaptures(o, op.getCaptures());
}

template <typename OpT> LogicalResult verifyVariantRegions(OpT op) {
  Builder b(op.getContext());
  Type f32 = b.getF32Type(), idx = b.getIndexType(), i1 = b.getI1Type();
  ValueRange captures = op.getCaptures();
  if (failed(checkRegion(op, op.getScoreMod(), "score_mod",
                         regionArgTypes({f32, idx, idx, idx, idx}, captures),
                         f32)))
    return failure();
  return checkRegion(op, op.getMaskMod(), "mask_mod",
                     regionArgTypes({idx, idx, idx, idx}, captures), i1);
}

/// The regions of the backward form: the variant's, plus score_mod_grad.
template <typename OpT> LogicalResult verifyGradRegions(OpT op) {
  if (failed(verifyVariantRegions(op)))
    return failure();
  if (op.getScoreModGrad().empty())
    return success();
  if (op.getScoreMod().empty())
    return op.emitOpError("score_mod_grad needs a score_mod");
  Builder b(op.getContext());
  Type f32 = b.getF32Type(), idx = b.getIndexType();
  return checkRegion(
      op, op.getScoreModGrad(), "score_mod_grad",
      regionArgTypes({f32, idx, idx, idx, idx}, op.getCaptures()), f32);
}

template <typename OpT> int64_t headGroupSize(OpT op) {
  int64_t hq = op.getQuery().getType().getDimSize(1);
  int64_t hkv = op.getKey().getType().getDimSize(1);
  if (ShapedType::isDynamic(hkv))
    hkv = op.getValue().getType().getDimSize(1);
  if (ShapedType::isDynamic(hq) || ShapedType::isDynamic(hkv) || hkv == 0)
    return ShapedType::kDynamic;
  return hq / hkv;
}

template <typename OpT> double scaleOrDefault(OpT op) {
  if (auto scale = op.getScaleAttr())
    return scale.getValueAsDouble();
  return 1.0 / std::sqrt(double(op.getQuery().getType().getDimSize(3)));
}

} // namespace

//===----------------------------------------------------------------------===//
// AttentionOp
//===----------------------------------------------------------------------===//

LogicalResult AttentionOp::verify() {
  FailureOr<AttentionShape> s = verifyInputs(*this);
  if (failed(s) || failed(verifyVariant(*this, *s)))
    return failure();
  if (failed(checkResultType(*this, getOutput().getType(), "output",
                             {s->batch, s->headsQ, s->seqQ, s->headDimV},
                             getElementType())))
    return failure();
  if (Value lse = getLse())
    return checkResultType(*this, lse.getType(), "lse",
                           {s->batch, s->headsQ, s->seqQ},
                           Float32Type::get(getContext()));
  return success();
}

LogicalResult AttentionOp::verifyRegions() {
  return verifyVariantRegions(*this);
}

int64_t AttentionOp::getHeadGroupSize() { return headGroupSize(*this); }
double AttentionOp::getScaleOrDefault() { return scaleOrDefault(*this); }

//===----------------------------------------------------------------------===//
// AttentionGradOp
//===----------------------------------------------------------------------===//

LogicalResult AttentionGradOp::verify() {
  FailureOr<AttentionShape> s = verifyInputs(*this);
  if (failed(s) || failed(verifyVariant(*this, *s)))
    return failure();
  Type et = getElementType();
  SmallVector<int64_t> oShape = {s->batch, s->headsQ, s->seqQ, s->headDimV};
  if (failed(checkResultType(*this, getOutput().getType(), "output", oShape,
                             et)) ||
      failed(checkResultType(*this, getGradOutput().getType(), "grad_output",
                             oShape, et)) ||
      failed(checkResultType(*this, getLse().getType(), "lse",
                             {s->batch, s->headsQ, s->seqQ},
                             Float32Type::get(getContext()))))
    return failure();
  if (failed(checkResultType(*this, getGradQuery().getType(), "grad_query",
                             getQuery().getType().getShape(), et)) ||
      failed(checkResultType(*this, getGradKey().getType(), "grad_key",
                             getKey().getType().getShape(), et)) ||
      failed(checkResultType(*this, getGradValue().getType(), "grad_value",
                             getValue().getType().getShape(), et)))
    return failure();
  if (Value gradBias = getGradBias()) {
    Value bias = getBias();
    if (!bias)
      return emitOpError("grad_bias needs a bias operand");
    auto biasType = cast<RankedTensorType>(bias.getType());
    if (gradBias.getType() != biasType)
      return emitOpError() << "grad_bias must have the bias's type " << biasType
                           << ", got " << gradBias.getType();
  }
  return success();
}

LogicalResult AttentionGradOp::verifyRegions() {
  return verifyGradRegions(*this);
}

int64_t AttentionGradOp::getHeadGroupSize() { return headGroupSize(*this); }
double AttentionGradOp::getScaleOrDefault() { return scaleOrDefault(*this); }

//===----------------------------------------------------------------------===//
// ScoreTileOp
//===----------------------------------------------------------------------===//

LogicalResult ScoreTileOp::verify() {
  auto q = cast<RankedTensorType>(getQuery().getType());
  auto k = cast<RankedTensorType>(getKey().getType());
  auto result = cast<RankedTensorType>(getResult().getType());
  if (q.getRank() != 2 || k.getRank() != 2)
    return emitOpError() << "query and key tiles must be rank 2, got " << q
                         << " and " << k;
  if (!isAttentionElementType(q.getElementType()) ||
      k.getElementType() != q.getElementType())
    return emitOpError() << "query and key tiles must share an f16, bf16 or "
                            "f32 element type, got "
                         << q.getElementType() << " and " << k.getElementType();
  if (failed(checkDim(*this, k.getDimSize(1), "key head dim", q.getDimSize(1),
                      "query head dim")) ||
      failed(checkResultType(*this, result, "result",
                             {q.getDimSize(0), k.getDimSize(0)},
                             Float32Type::get(getContext()))) ||
      (getDerivative() &&
       failed(checkResultType(*this, getDerivative().getType(), "derivative",
                              result.getShape(),
                              Float32Type::get(getContext())))) ||
      failed(checkPositiveFinite(*this, getScaleAttr(), "scale")) ||
      failed(checkPositiveFinite(*this, getSoftcapAttr(), "softcap")))
    return failure();
  if (auto window = getWindowAttr())
    if (window.size() != 2 || window[0] < 0 || window[1] < 0)
      return emitOpError() << "window must be two non-negative sizes";
  // bias and alibi_slopes are the whole operands of the fa.attention.
  if (Value bias = getBias()) {
    auto type = cast<RankedTensorType>(bias.getType());
    if (type.getRank() != 4 || !isAttentionElementType(type.getElementType()))
      return emitOpError() << "bias must be a rank-4 f16, bf16 or f32 tensor, "
                              "got "
                           << type;
  }
  if (Value slopes = getAlibiSlopes()) {
    auto type = cast<RankedTensorType>(slopes.getType());
    if ((type.getRank() != 1 && type.getRank() != 2) ||
        !type.getElementType().isF32())
      return emitOpError()
             << "alibi_slopes must be an f32 tensor of shape [Hq] or [B, "
                "Hq], got "
             << type;
  }
  return checkCaptures(*this, getCaptures());
}

LogicalResult ScoreTileOp::verifyRegions() {
  if (failed(verifyGradRegions(*this)))
    return failure();
  if (getBiasDerivative() && !getDerivative())
    return emitOpError("bias_derivative needs a derivative result");
  if (getDerivative() && !getScoreMod().empty() && getScoreModGrad().empty())
    return emitOpError("a derivative of a score_mod needs a score_mod_grad "
                       "region; run fa-differentiate-score-mod");
  return success();
}

#define GET_OP_CLASSES
#include "fa/Dialect/FA/IR/FAOps.cpp.inc"
