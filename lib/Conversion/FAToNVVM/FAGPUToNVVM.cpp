//===- FAGPUToNVVM.cpp - The frame of fagpu kernels, element-wise ops -----===//
//
// A gpu.func of fagpu ops becomes an llvm.func with the forward kernel's
// ABI (FlashKernelBuilder's parameters), its memref arguments bound to
// pointers and strides, and its body converted op by op with the patterns
// of each instruction family. Element-wise arith and math ops on register
// tiles become the same op on each value a thread holds.
//
//===----------------------------------------------------------------------===//

#include "FAGPUToNVVM.h"
#include "fa/Transforms/GpuKernels.h"
#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Bufferization/IR/Bufferization.h"
#include "mlir/Dialect/LLVMIR/NVVMDialect.h"
#include "mlir/Dialect/Math/IR/Math.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/Dialect/SCF/Transforms/Patterns.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"
#include "mlir/IR/Matchers.h"
#include "mlir/Interfaces/SideEffectInterfaces.h"

#include <algorithm>

using namespace mlir;
using namespace mlir::fa;
using namespace mlir::fa::nvvm;

Value mlir::fa::nvvm::toI32(OpBuilder &b, Location loc, Value index) {
  if (index.getType().isInteger(32))
    return index;
  return arith::IndexCastOp::create(b, loc, b.getI32Type(), index);
}

LaneIds mlir::fa::nvvm::getLaneIds(KernelBuilder &kb, OpBuilder &b,
                                   Location loc, bool rebuilt) {
  LaneIds ids;
  ids.tid = NVVM::ThreadIdXOp::create(b, loc, b.getI32Type());
  if (rebuilt)
    ids.tid = kb.opaque(ids.tid);
  ids.warp = kb.shr(ids.tid, 5);
  ids.lane = kb.andi(ids.tid, 31);
  ids.g = kb.shr(ids.lane, 2);
  ids.tq = kb.andi(ids.lane, 3);
  return ids;
}

AccCoords mlir::fa::nvvm::getAccCoords(KernelBuilder &kb, OpBuilder &b,
                                       Location loc, RankedTensorType type,
                                       Value row0, Value col0, bool rebuilt) {
  unsigned warps = fagpu::getLayoutWarps(type);
  LaneIds place = getLaneIds(kb, b, loc, rebuilt);
  AccCoords coords;
  coords.mTiles = type.getDimSize(0) / (16 * warps);
  coords.nTiles = type.getRank() == 2 ? type.getDimSize(1) / 8 : 0;
  coords.rowStep = 16 * warps;
  Value warpRow = kb.add(row0, kb.mul(place.warp, kb.c32(16)));
  for (int64_t mt = 0; mt < coords.mTiles; ++mt) {
    Value row = kb.add(kb.add(warpRow, kb.c32(mt * 16 * warps)), place.g);
    coords.rowOfRowSlot.append({row, kb.add(row, kb.c32(8))});
  }
  Value laneCol = kb.shl(place.tq, 1);
  for (int64_t nt = 0; nt < coords.nTiles; ++nt) {
    Value col = kb.add(col0, kb.add(kb.c32(nt * 8), laneCol));
    coords.colOfColSlot.append({col, kb.add(col, kb.c32(1))});
  }
  return coords;
}

void RowwisePlacer::setInsertionPoint(OpBuilder &b, ValueRange operands) {
  anchor = nullptr;
  for (Value v : operands)
    if (Operation *def = v.getDefiningOp())
      if (Operation *inBlock = block->findAncestorOpInBlock(*def))
        if (!anchor || anchor->isBeforeInBlock(inBlock))
          anchor = inBlock;
  if (!anchor)
    return;
  auto it = lastAfter.find(anchor);
  b.setInsertionPointAfter(it == lastAfter.end() ? anchor : it->second);
}

void RowwisePlacer::placed(Operation *op) {
  if (anchor)
    lastAfter[anchor] = op;
}

void mlir::fa::nvvm::populateFAGPUTypeConversions(TypeConverter &converter) {
  converter.addConversion([](Type type) { return type; });
  converter.addConversion(
      [](RankedTensorType type,
         SmallVectorImpl<Type> &results) -> std::optional<LogicalResult> {
        if (!fagpu::getLayoutWarps(type))
          return std::nullopt;
        Type value = isa<fagpu::OperandLayoutAttr>(type.getEncoding())
                         ? IntegerType::get(type.getContext(), 32)
                         : type.getElementType();
        results.append(fagpu::getRegistersPerThread(type), value);
        return success();
      });
  converter.addConversion(
      [](fagpu::TokenType, SmallVectorImpl<Type> &) { return success(); });
  converter.addConversion([](fagpu::SharedType type) -> Type {
    return LLVM::LLVMPointerType::get(type.getContext(), kShared);
  });
  converter.addConversion([](fagpu::BarriersType type) -> Type {
    return LLVM::LLVMPointerType::get(type.getContext(), kShared);
  });
}

namespace {

/// arith and math on register tiles: the op on each value.
struct ElementwiseLowering : public ConversionPattern {
  ElementwiseLowering(const TypeConverter &converter, MLIRContext *ctx,
                      const KernelBinding &binding)
      : ConversionPattern(converter, MatchAnyOpTypeTag(), /*benefit=*/1, ctx),
        binding(binding) {}
  const KernelBinding &binding;
  LogicalResult
  matchAndRewrite(Operation *op, ArrayRef<ValueRange> operands,
                  ConversionPatternRewriter &rewriter) const override {
    Dialect *dialect = op->getDialect();
    if (!dialect || !isa<arith::ArithDialect, math::MathDialect>(dialect) ||
        op->getNumResults() != 1)
      return failure();
    auto type = dyn_cast<RankedTensorType>(op->getResult(0).getType());
    if (!type || !fagpu::getLayoutWarps(type) ||
        isa<fagpu::OperandLayoutAttr>(type.getEncoding()))
      return rewriter.notifyMatchFailure(op, "not a value register tile");
    int64_t n = fagpu::getRegistersPerThread(type);
    Type scalar = type.getElementType();
    SmallVector<Value> results;
    if (auto constant = dyn_cast<arith::ConstantOp>(op)) {
      auto dense = dyn_cast<DenseElementsAttr>(constant.getValue());
      if (!dense || !dense.isSplat())
        return rewriter.notifyMatchFailure(op, "not a splat");
      Value value = arith::ConstantOp::create(
          rewriter, op->getLoc(),
          cast<TypedAttr>(dense.getSplatValue<Attribute>()));
      results.assign(n, value);
    } else {
      if (!op->hasTrait<OpTrait::Elementwise>() || op->getNumRegions())
        return rewriter.notifyMatchFailure(op, "not element-wise");
      for (ValueRange values : operands)
        if (int64_t(values.size()) != n)
          return rewriter.notifyMatchFailure(op, "mixed layouts");
      // A tile scaled by row values (RowwisePlacer). A row value's own
      // function (negf) stays where it is used.
      bool rowwise = op->getNumOperands() > 1 &&
                     llvm::any_of(op->getOperands(), [](Value v) {
                       return v.getDefiningOp<fagpu::BroadcastRowsOp>();
                     });
      RowwisePlacer placer(rewriter.getInsertionBlock());
      for (int64_t i = 0; i < n; ++i) {
        OpBuilder::InsertionGuard guard(rewriter);
        SmallVector<Value> scalars;
        for (ValueRange values : operands)
          scalars.push_back(values[i]);
        if (rowwise)
          placer.setInsertionPoint(rewriter, scalars);
        // NVPTX has no libcall for log2: lg2.approx (2^-22 relative).
        if (isa<math::Log2Op>(op) && scalar.isF32()) {
          KernelBuilder kb(rewriter, op->getLoc(), scalar, 0);
          results.push_back(kb.approx("lg2.approx.f32", operands[0][i]));
          continue;
        }
        // P's exponentials: `fa.exp2_fma` of every 8 on the FMA pipe, the
        // others on the MUFU, which softcap's tanh also uses.
        if (isa<math::Exp2Op>(op) && scalar.isF32() && type.getRank() == 2 &&
            i % 8 < binding.exp2Fma) {
          KernelBuilder kb(rewriter, op->getLoc(), scalar, 0);
          results.push_back(kb.exp2Fma(operands[0][i]));
          continue;
        }
        OperationState state(op->getLoc(), op->getName());
        state.addOperands(scalars);
        state.addTypes(scalar);
        state.addAttributes(op->getAttrs());
        Operation *scalarOp = rewriter.create(state);
        placer.placed(scalarOp);
        results.push_back(scalarOp->getResult(0));
      }
    }
    rewriter.replaceOpWithMultiple(op, {results});
    return success();
  }
};

/// fagpu.map: the body once per value a thread holds, at that value's row
/// and column; math ops become PTX instructions (KernelBuilder's, as in
/// the builder's kernels: NVPTX has no libcalls for most of them).
///
/// A position term a i + b j + c converted to float (a relative position,
/// ALiBi's distance) is converted once, at the thread's first element, and
/// each element adds its constant a di + b dj: an add on the FMA pipe
/// instead of a conversion per element, which runs at the rate of exp2's
/// MUFU and beside it. Exact while the terms stay below 2^24; above, one
/// rounding more of a value that f32 cannot hold exactly anyway.
struct MapLowering : public BoundPattern<fagpu::MapOp> {
  using BoundPattern::BoundPattern;
  LogicalResult
  matchAndRewrite(fagpu::MapOp op, OneToNOpAdaptor adaptor,
                  ConversionPatternRewriter &rewriter) const override {
    Location loc = op.getLoc();
    auto type = cast<RankedTensorType>(op.getType());
    KernelBuilder kb(rewriter, loc, type.getElementType(), 0);
    AccCoords at =
        getAccCoords(kb, rewriter, loc, type,
                     toI32(rewriter, loc, adaptor.getRowOffset()[0]),
                     toI32(rewriter, loc, adaptor.getColOffset()[0]));
    Block &body = op.getBody().front();
    auto yield = cast<fagpu::YieldOp>(body.getTerminator());
    unsigned numInputs = op.getInputs().size();
    Value rowArg = body.getArgument(numInputs);
    Value colArg = body.getArgument(numInputs + 1);

    // cap * tanh(x) with a constant cap (softcap's): the tanh's fma takes
    // the cap, one multiply fewer a score.
    auto cappedTanh =
        [](Operation *op) -> std::optional<std::pair<math::TanhOp, double>> {
      auto mul = dyn_cast_or_null<arith::MulFOp>(op);
      if (!mul)
        return std::nullopt;
      for (unsigned i = 0; i < 2; ++i) {
        FloatAttr cap;
        auto tanh = mul->getOperand(1 - i).getDefiningOp<math::TanhOp>();
        if (tanh && tanh->hasOneUse() &&
            matchPattern(mul->getOperand(i), m_Constant(&cap)))
          return std::make_pair(tanh, cap.getValueAsDouble());
      }
      return std::nullopt;
    };
    // A body op at the element `mapping` binds (the thread's value `slot`):
    // math ops as PTX; `fa.tanh_fma` of every 8 tanh values take the FMA
    // pipe's reciprocal.
    auto lower = [&](Operation &inner, IRMapping &mapping, int64_t slot) {
      if (isa<math::TanhOp>(inner) && inner.hasOneUse() &&
          cappedTanh(*inner.user_begin()))
        return; // with its multiply, below
      bool rcpOnFma = slot % 8 < binding.tanhFma;
      if (auto capped = cappedTanh(&inner)) {
        mapping.map(
            inner.getResult(0),
            kb.accurateTanh(mapping.lookupOrDefault(capped->first.getOperand()),
                            capped->second, rcpOnFma));
        return;
      }
      if (auto tanh = dyn_cast<math::TanhOp>(inner)) {
        mapping.map(tanh,
                    kb.accurateTanh(mapping.lookupOrDefault(tanh.getOperand()),
                                    1.0, rcpOnFma));
        return;
      }
      SmallVector<Value> operands;
      for (Value operand : inner.getOperands())
        operands.push_back(mapping.lookupOrDefault(operand));
      if (Value r = kb.lowerScalarMath(&inner, operands))
        mapping.map(inner.getResult(0), r);
      else
        rewriter.clone(inner, mapping);
    };

    // The conversions of position terms at the first element.
    IRMapping first;
    first.map(rowArg, kb.toIndex(at.row(0, 0)));
    first.map(colArg, kb.toIndex(at.col(0, 0)));
    PositionConversions converted = kb.convertPositionTerms(
        body, PositionTerms(body, rowArg, colArg), first);

    SmallVector<Value> values;
    for (int64_t mt = 0; mt < at.mTiles; ++mt)
      for (int64_t nt = 0; nt < at.nTiles; ++nt)
        for (int64_t e = 0; e < 4; ++e) {
          int64_t slot = (mt * at.nTiles + nt) * 4 + e;
          IRMapping mapping;
          for (unsigned i = 0; i < numInputs; ++i)
            mapping.map(body.getArgument(i), adaptor.getInputs()[i][slot]);
          mapping.map(rowArg, kb.toIndex(at.row(mt, e)));
          mapping.map(colArg, kb.toIndex(at.col(nt, e)));
          for (Operation &inner : body.without_terminator()) {
            if (Value v =
                    converted.lookup(rewriter, loc, &inner, at.rowOffset(mt, e),
                                     at.colOffset(nt, e))) {
              mapping.map(inner.getResult(0), v);
              continue;
            }
            lower(inner, mapping, slot);
          }
          values.push_back(mapping.lookupOrDefault(yield.getValue()));
        }
    rewriter.replaceOpWithMultiple(op, {values});
    return success();
  }
};

/// fagpu.block_coords {paired, sorted_tail}: item 2 p0 + u past the pairs of
/// the full rounds but the last (p0 = max(P / C - 1, 0) C) is the u-th of
/// the remaining pairs' tiles sorted by decreasing work. Those pairs are
/// (head, batch) pair s = p0 / hT from j0 = p0 % hT on and all of the
/// `full` pairs after it: levels j < j0 hold `full` tiles, the others
/// full + 1 (s first). Heavy tiles T - 1 - j come first, j ascending, then
/// light ones j - T % 2 (T where that is -1), j descending. Returns the
/// (tile, head-batch pair) of `item`: `pairedTile` and `pairedHeads` where
/// it is not in the tail.
static std::pair<Value, Value> sortedTail(OpBuilder &b, Location loc,
                                          KernelBuilder &kb, Value item,
                                          Value tiles, Value pairedTile,
                                          Value pairedHeads, Value heads,
                                          Value batches) {
  using P = arith::CmpIPredicate;
  Value one = kb.c32(1);
  Value halves = kb.shr(kb.add(tiles, one), 1);
  Value headPairs = kb.mul(heads, batches);
  Value pairs = kb.mul(halves, headPairs);
  // Read through an opaque mov, so that the decode is not hoisted out of the
  // item loop: its invariants kept live there spilled 4-8 bytes at D = 32.
  Value ctas = kb.opaque(NVVM::GridDimXOp::create(b, loc, b.getI32Type()));
  Value rounds = kb.divu(pairs, ctas);
  Value early = kb.mul(
      kb.sel(kb.cmp(P::eq, rounds, kb.c32(0)), rounds, kb.sub(rounds, one)),
      ctas);
  Value u = kb.sub(item, kb.shl(early, 1));
  Value start = kb.divu(early, halves), j0 = kb.remu(early, halves);
  Value full = kb.sub(kb.sub(headPairs, one), start);
  Value fullOr1 = kb.maxs(full, one), withStart = kb.add(full, one);
  Value heavies = kb.sub(pairs, early);
  // Heavy tiles: `full` a level below j0, then full + 1 (start first).
  Value below = kb.mul(j0, full);
  Value inBelow = kb.cmp(P::ult, u, below);
  Value rest = kb.sub(u, below);
  Value jHeavy = kb.sel(inBelow, kb.divu(u, fullOr1),
                        kb.add(j0, kb.divu(rest, withStart)));
  Value hHeavy =
      kb.sel(inBelow, kb.add(kb.add(start, one), kb.remu(u, fullOr1)),
             kb.add(start, kb.remu(rest, withStart)));
  Value heavy = kb.sub(kb.sub(tiles, one), jHeavy);
  // Light tiles, j descending: full + 1 a level from hT - 1 down to j0.
  Value v = kb.sub(u, heavies);
  Value above = kb.mul(kb.sub(halves, j0), withStart);
  Value inAbove = kb.cmp(P::ult, v, above);
  Value w = kb.sub(v, above);
  Value jLight =
      kb.sel(inAbove, kb.sub(kb.sub(halves, one), kb.divu(v, withStart)),
             kb.sub(kb.sub(j0, one), kb.divu(w, fullOr1)));
  Value hLight = kb.sel(inAbove, kb.add(start, kb.remu(v, withStart)),
                        kb.add(kb.add(start, one), kb.remu(w, fullOr1)));
  Value light = kb.sub(jLight, kb.andi(tiles, 1));
  light = kb.sel(kb.cmp(P::slt, light, kb.c32(0)), tiles, light);
  Value isHeavy = kb.cmp(P::ult, u, heavies);
  Value inTail = kb.cmp(P::uge, item, kb.shl(early, 1));
  return {kb.sel(inTail, kb.sel(isHeavy, heavy, light), pairedTile),
          kb.sel(inTail, kb.sel(isHeavy, hHeavy, hLight), pairedHeads)};
}

/// The prologue's place; rematerialized, the tile id is read again through
/// an opaque mov and the head and batch from ctaid.y and z (or the folded
/// grid's linear index), so nothing computed from them stays live across a
/// loop (4 registers of i64 head and batch spilled at D = 128).
struct BlockCoordsLowering : public BoundPattern<fagpu::BlockCoordsOp> {
  using BoundPattern::BoundPattern;
  LogicalResult
  matchAndRewrite(fagpu::BlockCoordsOp op, OpAdaptor adaptor,
                  ConversionPatternRewriter &rewriter) const override {
    Location loc = op.getLoc();
    KernelBuilder kb(rewriter, loc, rewriter.getF16Type(), 0);
    if (Value work = adaptor.getWork()) {
      // A persistent kernel's item: the tile fastest, then head, batch.
      Value item = toI32(rewriter, loc, work);
      Value tiles = toI32(rewriter, loc, adaptor.getTiles());
      Value tile, heads;
      if (op.getPaired()) {
        // Items 2u, 2u + 1: tiles T - 1 - j and j - T % 2 of pair u / hT
        // (hT = ceil(T / 2), j = u % hT); -1 is tile T, past the queries.
        Value c0 = kb.c32(0);
        Value unit = kb.shr(item, 1);
        Value halves = kb.shr(kb.add(tiles, kb.c32(1)), 1);
        Value j = kb.remu(unit, halves);
        heads = kb.divu(unit, halves);
        Value heavy = kb.sub(kb.sub(tiles, kb.c32(1)), j);
        Value light = kb.sub(j, kb.andi(tiles, 1));
        light =
            kb.sel(kb.cmp(arith::CmpIPredicate::slt, light, c0), tiles, light);
        tile = kb.sel(kb.cmp(arith::CmpIPredicate::eq, kb.andi(item, 1), c0),
                      heavy, light);
        if (op.getSortedTail())
          std::tie(tile, heads) =
              sortedTail(rewriter, loc, kb, item, tiles, tile, heads,
                         binding.heads, binding.batches);
      } else {
        tile = kb.remu(item, tiles);
        heads = kb.divu(item, tiles);
        if (op.getHeavyFirst())
          tile = kb.sub(kb.sub(tiles, kb.c32(1)), tile);
      }
      rewriter.replaceOp(op, {kb.toIndex(kb.divu(heads, binding.heads)),
                              kb.toIndex(kb.remu(heads, binding.heads)),
                              kb.toIndex(tile)});
      return success();
    }
    bool again = op.getRematerialize();
    if (op.getBatchFastest()) {
      auto [tile, head, batch] =
          kb.batchFastestPlace(binding.batches, op.getHeavyFirst(), again);
      rewriter.replaceOp(
          op, {kb.toIndex(batch), kb.toIndex(head), kb.toIndex(tile)});
      return success();
    }
    if (std::optional<uint64_t> group = op.getHeadGroup()) {
      auto [tile, head, batch] =
          kb.heavyFirstPlace(*group, binding.heads, binding.batches, again);
      rewriter.replaceOp(
          op, {kb.toIndex(batch), kb.toIndex(head), kb.toIndex(tile)});
      return success();
    }
    Value tile = again ? kb.opaque(NVVM::BlockIdXOp::create(
                             rewriter, loc, rewriter.getI32Type()))
                       : binding.tile;
    if (op.getHeavyFirst())
      tile = kb.lastTileFirst(tile, again);
    Value head = binding.head, batch = binding.batch;
    if (again)
      std::tie(head, batch) = kb.headAndBatchAgain(binding.heads);
    rewriter.replaceOp(op,
                       {kb.toIndex(batch), kb.toIndex(head), kb.toIndex(tile)});
    return success();
  }
};

/// A persistent CTA's first item and stride: ctaid.x and nctaid.x.
struct WorkSlotLowering : public OpConversionPattern<fagpu::WorkSlotOp> {
  using OpConversionPattern::OpConversionPattern;
  LogicalResult
  matchAndRewrite(fagpu::WorkSlotOp op, OpAdaptor,
                  ConversionPatternRewriter &rewriter) const override {
    Location loc = op.getLoc();
    KernelBuilder kb(rewriter, loc, rewriter.getF16Type(), 0);
    Type i32 = rewriter.getI32Type();
    rewriter.replaceOp(
        op, {kb.toIndex(NVVM::BlockIdXOp::create(rewriter, loc, i32)),
             kb.toIndex(NVVM::GridDimXOp::create(rewriter, loc, i32))});
    return success();
  }
};

/// The linear block index over y and z (KernelAbi.h, "The grid").
struct KeyChunkLowering : public OpConversionPattern<fagpu::KeyChunkOp> {
  using OpConversionPattern::OpConversionPattern;
  LogicalResult
  matchAndRewrite(fagpu::KeyChunkOp op, OpAdaptor,
                  ConversionPatternRewriter &rewriter) const override {
    KernelBuilder kb(rewriter, op.getLoc(), rewriter.getF16Type(), 0);
    rewriter.replaceOp(op, kb.toIndex(kb.linearBlockYZ()));
    return success();
  }
};

struct KVHeadLowering : public BoundPattern<fagpu::KVHeadOp> {
  using BoundPattern::BoundPattern;
  LogicalResult
  matchAndRewrite(fagpu::KVHeadOp op, OpAdaptor adaptor,
                  ConversionPatternRewriter &rewriter) const override {
    KernelBuilder kb(rewriter, op.getLoc(), rewriter.getF16Type(), 0);
    Value head = toI32(rewriter, op.getLoc(), adaptor.getHead());
    rewriter.replaceOp(op, kb.toIndex(kb.divu(head, binding.group)));
    return success();
  }
};

/// An element of a bias, slopes or capture buffer: base + sum(index *
/// stride), read-only for the kernel's lifetime (ld.global.nc). memref.load
/// of the buffer, or tensor.extract of its bufferization.to_tensor (the
/// captures a score_mod reads as tensors).
Value loadElement(ConversionPatternRewriter &rewriter, Location loc,
                  const KernelBinding::Buffer &buffer, Type type,
                  ValueRange indices) {
  KernelBuilder kb(rewriter, loc, rewriter.getF16Type(), 0);
  Type i64 = rewriter.getI64Type();
  Value offset;
  for (auto [index, stride] : llvm::zip(indices, buffer.strides)) {
    Value term = arith::MulIOp::create(
        rewriter, loc, arith::IndexCastOp::create(rewriter, loc, i64, index),
        stride);
    offset = offset ? arith::AddIOp::create(rewriter, loc, offset, term) : term;
  }
  Value address = offset ? kb.gep(buffer.ptr, offset, type) : buffer.ptr;
  return LLVM::LoadOp::create(rewriter, loc, type, address, /*alignment=*/0,
                              /*isVolatile=*/false, /*isNonTemporal=*/false,
                              /*isInvariant=*/true);
}

struct LoadLowering : public BoundPattern<memref::LoadOp> {
  using BoundPattern::BoundPattern;
  LogicalResult
  matchAndRewrite(memref::LoadOp op, OpAdaptor adaptor,
                  ConversionPatternRewriter &rewriter) const override {
    if (!binding.elements.count(op.getMemRef()))
      return rewriter.notifyMatchFailure(op, "not an element buffer");
    rewriter.replaceOp(op, loadElement(rewriter, op.getLoc(),
                                       binding.buffers.lookup(op.getMemRef()),
                                       op.getType(), adaptor.getIndices()));
    return success();
  }
};

/// fagpu.load_tile: each thread's accumulator elements of a tile in the
/// 128-byte swizzle ([panels][rows][128 bytes], the 16-byte chunk c of row
/// r at c ^ (r % 8)). A thread's two adjacent columns are one load. Its
/// rows are r0 + multiples of 8 and its columns c0 + 8 n, c0 = 2 (lane %
/// 4): the chunk of n-tile n is K(n) ^ u with K(n) a constant and u = (c0
/// bytes / 16) ^ (r0 % 8) the thread's, so each load is one of 8 chunk
/// addresses plus an immediate.
struct LoadTileLowering : public OpConversionPattern<fagpu::LoadTileOp> {
  using OpConversionPattern::OpConversionPattern;
  LogicalResult
  matchAndRewrite(fagpu::LoadTileOp op, OpAdaptor adaptor,
                  ConversionPatternRewriter &rewriter) const override {
    Location loc = op.getLoc();
    auto type = cast<RankedTensorType>(op.getType());
    auto tile = cast<fagpu::SharedType>(op.getSource().getType());
    Type element = type.getElementType();
    int64_t bytes = element.getIntOrFloatBitWidth() / 8;
    int64_t panelCols = 128 / bytes;
    KernelBuilder kb(rewriter, loc, rewriter.getF16Type(), 0);
    AccCoords at = getAccCoords(kb, rewriter, loc, type, kb.c32(0), kb.c32(0));
    Value base = getStage(kb, rewriter, loc, adaptor.getSource(),
                          adaptor.getStage(), tile);
    Value r0 = at.row(0, 0), c0Bytes = kb.mul(at.col(0, 0), kb.c32(bytes));
    // u << 4 and the thread's byte in its chunk.
    Value u = kb.shl(kb.xori(kb.shr(c0Bytes, 4), kb.andi(r0, 7)), 4);
    Value rowBase =
        kb.smemAt(base, kb.add(kb.mul(r0, kb.c32(128)), kb.andi(c0Bytes, 15)));
    SmallVector<Value, 8> chunkAt(8);
    auto chunk = [&](int64_t k) {
      if (!chunkAt[k])
        chunkAt[k] = kb.smemAt(rowBase, kb.xori(u, kb.c32(k << 4)));
      return chunkAt[k];
    };
    auto pair = VectorType::get({2}, element);
    SmallVector<Value> values(fagpu::getRegistersPerThread(type));
    for (int64_t mt = 0; mt < at.mTiles; ++mt)
      for (int64_t nt = 0; nt < at.nTiles; ++nt)
        for (int64_t half = 0; half < 2; ++half) {
          int64_t e = 2 * half;
          int64_t col = at.colOffset(nt, e);
          int64_t panel = col / panelCols;
          int64_t k = (col % panelCols) * bytes / 16;
          int64_t offset =
              panel * tile.getRows() * 128 + at.rowOffset(mt, e) * 128;
          Value address = kb.smemAt(chunk(k), kb.c32(offset));
          Value loaded = LLVM::LoadOp::create(rewriter, loc, pair, address,
                                              /*alignment=*/2 * bytes);
          int64_t slot = (mt * at.nTiles + nt) * 4 + e;
          for (int64_t i = 0; i < 2; ++i)
            values[slot + i] = LLVM::ExtractElementOp::create(
                rewriter, loc, loaded, kb.c32(i));
        }
    rewriter.replaceOpWithMultiple(op, {values});
    return success();
  }
};

/// A register tile of one scalar: the scalar in each of its registers.
struct SplatLowering : public OpConversionPattern<tensor::SplatOp> {
  using OpConversionPattern::OpConversionPattern;
  LogicalResult
  matchAndRewrite(tensor::SplatOp op, OpAdaptor adaptor,
                  ConversionPatternRewriter &rewriter) const override {
    auto type = op.getType();
    if (!fagpu::getLayoutWarps(type) ||
        isa<fagpu::OperandLayoutAttr>(type.getEncoding()))
      return rewriter.notifyMatchFailure(op, "not a value register tile");
    SmallVector<Value> values(fagpu::getRegistersPerThread(type),
                              adaptor.getInput());
    rewriter.replaceOpWithMultiple(op, {values});
    return success();
  }
};

struct ExtractLowering : public BoundPattern<tensor::ExtractOp> {
  using BoundPattern::BoundPattern;
  LogicalResult
  matchAndRewrite(tensor::ExtractOp op, OpAdaptor adaptor,
                  ConversionPatternRewriter &rewriter) const override {
    auto toTensor = op.getTensor().getDefiningOp<bufferization::ToTensorOp>();
    if (!toTensor || !binding.elements.count(toTensor.getBuffer()))
      return rewriter.notifyMatchFailure(op, "not a bound buffer's element");
    rewriter.replaceOp(op,
                       loadElement(rewriter, op.getLoc(),
                                   binding.buffers.lookup(toTensor.getBuffer()),
                                   op.getType(), adaptor.getIndices()));
    return success();
  }
};

/// The sizes of the kernel's buffers are its size parameters.
struct DimLowering : public BoundPattern<memref::DimOp> {
  using BoundPattern::BoundPattern;
  LogicalResult
  matchAndRewrite(memref::DimOp op, OpAdaptor,
                  ConversionPatternRewriter &rewriter) const override {
    std::optional<int64_t> dim = op.getConstantIndex();
    if (!dim)
      return rewriter.notifyMatchFailure(op, "dynamic dim");
    Value size = binding.sizes.lookup({op.getSource(), *dim});
    if (!size)
      return rewriter.notifyMatchFailure(op, "not a size the kernel takes");
    rewriter.replaceOpWithNewOp<arith::IndexCastOp>(op, rewriter.getIndexType(),
                                                    size);
    return success();
  }
};

/// Moves each narrowed pair (KernelBuilder::pack: a two-element vector, its
/// fptrunc and the bitcast to i32) to just before its first user in its
/// block. to_operand lowers to every pack of P at once; rounded where each
/// mma reads it instead, P's f32 and bf16 copies are not all live together
/// and ptxas keeps two m-tiles of D = 128 at 128 x 64 in registers.
void sinkPacksToFirstUse(Operation *fn) {
  SmallVector<LLVM::BitcastOp> packs;
  fn->walk([&](LLVM::BitcastOp cast) {
    if (cast.getArg().getDefiningOp<LLVM::FPTruncOp>())
      packs.push_back(cast);
  });
  for (LLVM::BitcastOp cast : packs) {
    Block *block = cast->getBlock();
    Operation *first = nullptr;
    for (Operation *user : cast->getUsers()) {
      Operation *inBlock = block->findAncestorOpInBlock(*user);
      if (!inBlock) {
        first = nullptr;
        break;
      }
      if (!first || inBlock->isBeforeInBlock(first))
        first = inBlock;
    }
    if (!first || first == cast->getNextNode())
      continue;
    // The pack's ops, each used only by the next: defined after its
    // operands, so each can move down to `first`.
    SmallVector<Operation *> chain{cast};
    for (size_t i = 0; i < chain.size(); ++i)
      for (Value operand : chain[i]->getOperands()) {
        Operation *def = operand.getDefiningOp();
        if (def && def->getBlock() == block && def->hasOneUse() &&
            isa<LLVM::FPTruncOp, LLVM::InsertElementOp, LLVM::PoisonOp>(def))
          chain.push_back(def);
      }
    llvm::sort(chain, [](Operation *a, Operation *b) {
      return a->isBeforeInBlock(b);
    });
    for (Operation *op : chain)
      op->moveBefore(first);
  }
}

} // namespace

namespace {

/// The roles by thread id: the consumers keep the ids [0, consumers) they
/// had without the producer; each role sets its registers per thread
/// first. The producer's copies land before it exits.
struct WarpSpecializeLowering : public BoundPattern<fagpu::WarpSpecializeOp> {
  using BoundPattern::BoundPattern;
  LogicalResult
  matchAndRewrite(fagpu::WarpSpecializeOp op, OpAdaptor,
                  ConversionPatternRewriter &rewriter) const override {
    Location loc = op.getLoc();
    Value tid = NVVM::ThreadIdXOp::create(rewriter, loc, rewriter.getI32Type());
    Value consumer =
        arith::CmpIOp::create(rewriter, loc, arith::CmpIPredicate::ult, tid,
                              arith::ConstantIntOp::create(
                                  rewriter, loc, op.getConsumerThreads(), 32));
    auto ifOp = scf::IfOp::create(rewriter, loc, consumer, /*withElse=*/true);
    auto fill = [&](Block *block, Region &region, int64_t registers,
                    NVVM::SetMaxRegisterAction action) {
      OpBuilder::InsertionGuard guard(rewriter);
      rewriter.setInsertionPointToStart(block);
      NVVM::SetMaxRegisterOp::create(rewriter, loc, registers, action);
      Operation *yield = block->getTerminator();
      bool producer = action == NVVM::SetMaxRegisterAction::decrease;
      if (producer && binding.singleThreadProducer) {
        // setmaxnreg is the warpgroup's; the copies are one thread's, and
        // the mbarriers track them.
        Value first = arith::CmpIOp::create(
            rewriter, loc, arith::CmpIPredicate::eq, tid,
            arith::ConstantIntOp::create(rewriter, loc, op.getConsumerThreads(),
                                         32));
        auto one = scf::IfOp::create(rewriter, loc, first, /*withElse=*/false);
        yield = one.thenBlock()->getTerminator();
      }
      rewriter.inlineBlockBefore(&region.front(), yield);
      if (producer && !binding.singleThreadProducer) {
        rewriter.setInsertionPoint(yield);
        NVVM::CpAsyncCommitGroupOp::create(rewriter, loc);
        NVVM::CpAsyncWaitGroupOp::create(rewriter, loc, 0);
      }
    };
    fill(ifOp.thenBlock(), op.getConsumers(), op.getConsumerRegisters(),
         NVVM::SetMaxRegisterAction::increase);
    fill(ifOp.elseBlock(), op.getProducer(), op.getProducerRegisters(),
         NVVM::SetMaxRegisterAction::decrease);
    rewriter.eraseOp(op);
    return success();
  }
};

} // namespace

void mlir::fa::nvvm::populateFAGPUElementwiseToNVVMPatterns(
    const TypeConverter &converter, const KernelBinding &binding,
    RewritePatternSet &patterns) {
  MLIRContext *ctx = patterns.getContext();
  patterns.add<SplatLowering, LoadTileLowering>(converter, ctx);
  patterns.add<ElementwiseLowering, MapLowering>(converter, ctx, binding);
  patterns.add<BlockCoordsLowering, KVHeadLowering, DimLowering, LoadLowering,
               ExtractLowering, WarpSpecializeLowering>(converter, ctx,
                                                        binding);
  patterns.add<WorkSlotLowering, KeyChunkLowering>(converter, ctx);
}

bool mlir::fa::nvvm::isFAGPUKernel(gpu::GPUFuncOp kernel) {
  return kernel.isKernel() &&
         kernel
             .walk([](Operation *op) {
               return isa<fagpu::FAGPUDialect>(op->getDialect())
                          ? WalkResult::interrupt()
                          : WalkResult::advance();
             })
             .wasInterrupted();
}

SmallVector<std::string> mlir::fa::nvvm::getAbiRoles(gpu::GPUFuncOp kernel) {
  SmallVector<std::string> roles;
  for (unsigned i = 0, e = kernel.getNumArguments(); i < e; ++i) {
    auto role = kernel.getArgAttrOfType<StringAttr>(i, kAbiRoleAttrName);
    const char *positional[] = {"q", "k", "v", "o", "lse"};
    roles.push_back(role ? role.str() : (i < 5 ? positional[i] : ""));
  }
  return roles;
}

FailureOr<LLVM::LLVMFuncOp>
mlir::fa::nvvm::lowerFAGPUKernel(gpu::GPUFuncOp kernel, StringRef name,
                                 ::fa::runtime::KernelAbi &abi) {
  MLIRContext *ctx = kernel.getContext();
  Location loc = kernel.getLoc();
  Block &body = kernel.getBody().front();
  unsigned numBuffers = body.getNumArguments();
  SmallVector<std::string> roles = getAbiRoles(kernel);
  auto isValid = [&](unsigned i) {
    Type type = body.getArgument(i).getType();
    return roles[i] == "seed" ? type.isInteger(64) : isa<MemRefType>(type);
  };
  if (numBuffers < 4 || roles[0] != "q" || roles[1] != "k" || roles[2] != "v" ||
      roles[3] != "o" || !llvm::all_of(llvm::seq(numBuffers), isValid))
    return kernel.emitOpError("convert-fa-to-nvvm: an fagpu kernel takes Q, "
                              "K, V, O and optionally lse, bias, slopes, "
                              "captures and key ranges (memrefs) and a seed "
                              "(i64)");
  auto qType = cast<MemRefType>(body.getArgument(0).getType());

  // The forward kernel's ABI (FlashKernelBuilder's) but the scale, which
  // the IR carries: q, k, v, o, lse; strides (b, h, n) of q, k, v, o and
  // (b, h) of lse; sizes; then the bias and its strides, the slopes and
  // their batch stride, and each capture's pointer and strides, where the
  // kernel reads them.
  using namespace ::fa::runtime;
  auto blockQ = kernel->getAttrOfType<IntegerAttr>(kBlockQAttr);
  if (!blockQ)
    return kernel.emitOpError("convert-fa-to-nvvm: the kernel has no '")
           << kBlockQAttr << "' (outline it with fa-fuse)";
  abi = KernelAbi();
  abi.name = name.str();
  // A persistent kernel's items are shared by as many CTAs as the SMs hold
  // (the launcher's to count); a key-range kernel's work is the same for
  // every (batch, head).
  std::optional<fagpu::WarpSpecializeOp> specialized;
  kernel.walk([&](fagpu::WarpSpecializeOp op) { specialized = op; });
  bool persistent =
      kernel.walk([](fagpu::WorkSlotOp) { return WalkResult::interrupt(); })
          .wasInterrupted();
  if (persistent)
    abi.grid = {
        GridAxis::persistent(blockQ.getInt(),
                             specialized ? specialized->getCtasPerSm() : 1),
        GridAxis::one(), GridAxis::one()};
  else if (kernel->hasAttr(kKeyRangesAttr))
    abi.grid = {GridAxis::tilesNq(blockQ.getInt()),
                GridAxis::tilesNk(kKeyRangeChunk), GridAxis::one()};
  else
    abi.grid = {GridAxis::tilesNq(blockQ.getInt()), GridAxis::hq(),
                GridAxis::batch()};
  DenseI32ArrayAttr block = kernel.getKnownBlockSizeAttr();
  abi.threads = block ? uint32_t(block[0]) : uint32_t(kThreads);
  int64_t sharedBytes = 0;
  kernel.walk([&](fagpu::AllocSharedOp alloc) {
    auto type = cast<fagpu::SharedType>(alloc.getType());
    sharedBytes =
        std::max(sharedBytes, int64_t(alloc.getOffset()) +
                                  type.getStages() * type.getStageBytes());
  });
  kernel.walk([&](fagpu::AllocBarriersOp alloc) {
    sharedBytes = std::max(sharedBytes, int64_t(alloc.getOffset()) +
                                            8 * alloc.getType().getStages());
  });
  abi.sharedBytes = sharedBytes;
  const AbiTensor tensors[5] = {AbiTensor::Q, AbiTensor::K, AbiTensor::V,
                                AbiTensor::O, AbiTensor::Lse};
  for (AbiTensor t : tensors)
    abi.params.push_back(KernelParam::pointer(t));
  for (AbiTensor t : tensors)
    for (uint32_t dim = 0; dim < (t == AbiTensor::Lse ? 2u : 3u); ++dim)
      abi.params.push_back(KernelParam::stride(t, dim));
  for (AbiSize size :
       {AbiSize::Nq, AbiSize::Nk, AbiSize::Group, AbiSize::Hq, AbiSize::B})
    abi.params.push_back(KernelParam::ofSize(size));
  // Where each further buffer's parameters are: the pointer, then one
  // stride per dim (the slopes' head stride is 1).
  struct Extra {
    unsigned arg;
    KernelParam pointer;
    SmallVector<KernelParam, 4> strides;
  };
  SmallVector<Extra> extras;
  std::optional<unsigned> seedArg;
  for (unsigned i = 4; i < numBuffers; ++i) {
    StringRef role = roles[i];
    if (role == "lse")
      continue;
    if (role == "seed") {
      seedArg = i;
      abi.params.push_back(
          KernelParam::ofScalar(AbiScalar::Seed, MachineType::I64));
      continue;
    }
    auto type = cast<MemRefType>(body.getArgument(i).getType());
    Extra extra{i, KernelParam::pointer(AbiTensor::Bias), {}};
    if (role == "bias" && type.getRank() == 4) {
      for (uint32_t dim = 0; dim < 4; ++dim)
        extra.strides.push_back(KernelParam::stride(AbiTensor::Bias, dim));
    } else if (role == "slopes" && type.getRank() <= 2) {
      extra.pointer = KernelParam::pointer(AbiTensor::Slopes);
      extra.strides.push_back(KernelParam::stride(AbiTensor::Slopes, 0));
    } else if (role == "key_ranges" && type.getRank() == 1) {
      extra.pointer = KernelParam::pointer(AbiTensor::KeyRanges);
    } else if (role.starts_with("capture")) {
      unsigned index = 0;
      if (role.drop_front(7).getAsInteger(10, index))
        return kernel.emitOpError("convert-fa-to-nvvm: bad argument role '")
               << role << "'";
      extra.pointer = KernelParam::capturePointer(index);
      for (int64_t dim = 0; dim < type.getRank(); ++dim)
        extra.strides.push_back(KernelParam::captureStride(index, dim));
    } else {
      return kernel.emitOpError("convert-fa-to-nvvm: argument ")
             << i << " of the fagpu kernel has no role the ABI knows ('" << role
             << "')";
    }
    abi.params.push_back(extra.pointer);
    llvm::append_range(abi.params, extra.strides);
    extras.push_back(std::move(extra));
  }
  // The tensor maps bulk copies read (Q, K, V), last.
  SmallVector<std::pair<unsigned, KernelParam>, 3> tensorMaps;
  WalkResult maps = kernel.walk([&](fagpu::AsyncCopyOp copy) {
    if (!copy.getBulk())
      return WalkResult::advance();
    auto arg = dyn_cast<BlockArgument>(copy.getSource());
    bool bias = arg && arg.getOwner() == &body &&
                arg.getArgNumber() < roles.size() &&
                roles[arg.getArgNumber()] == "bias" && copy.getCol();
    if (!arg || arg.getOwner() != &body || (arg.getArgNumber() > 2 && !bias)) {
      copy.emitOpError("convert-fa-to-nvvm: a bulk copy reads Q, K or V, or "
                       "a block of the bias");
      return WalkResult::interrupt();
    }
    // The map's D is the tensor's: past it (a wgmma tile's padding) TMA
    // fills zeros. A bias block's boxes are one 128-byte panel each.
    auto tile = cast<fagpu::SharedType>(copy.getDest().getType());
    int64_t elementBytes = tile.getElementType().getIntOrFloatBitWidth() / 8;
    KernelParam map =
        bias ? KernelParam::tensorMap(AbiTensor::Bias,
                                      uint32_t(128 / elementBytes),
                                      uint32_t(getBulkBoxRows(tile)))
             : KernelParam::tensorMap(
                   tensors[arg.getArgNumber()],
                   uint32_t(getSourceCols(copy.getSource(), tile)),
                   uint32_t(getBulkBoxRows(tile)));
    auto *same = llvm::find_if(tensorMaps, [&](auto &entry) {
      return entry.first == arg.getArgNumber();
    });
    if (same == tensorMaps.end()) {
      tensorMaps.push_back({arg.getArgNumber(), map});
      abi.params.push_back(map);
    } else if (same->second != map) {
      copy.emitOpError("convert-fa-to-nvvm: bulk copies of one buffer into "
                       "tiles of different shapes");
      return WalkResult::interrupt();
    }
    return WalkResult::advance();
  });
  if (maps.wasInterrupted())
    return failure();

  OpBuilder b(kernel);
  KernelBuilder kb(b, loc, qType.getElementType(), qType.getDimSize(3));
  kb.setThreads(abi.threads);
  LLVM::LLVMFuncOp fn =
      kb.createKernel(name.str() + ".nvvm", abi, /*flushDenormals=*/true);
  Block *entry = &fn.front();
  b.setInsertionPointToStart(entry);
  AbiArgs args(abi, entry);

  KernelBinding binding;
  binding.smem = LLVM::AddressOfOp::create(
      b, loc, LLVM::LLVMPointerType::get(ctx, kShared), "fa_smem");
  binding.group = args.size(AbiSize::Group);
  binding.threads = abi.threads;
  binding.persistent = persistent;
  if (auto fma = kernel->getAttrOfType<IntegerAttr>(kExp2FmaAttr))
    binding.exp2Fma = fma.getInt();
  if (auto fma = kernel->getAttrOfType<IntegerAttr>(kTanhFmaAttr))
    binding.tanhFma = fma.getInt();
  kernel.walk([&](fagpu::WarpSpecializeOp op) {
    // The launch's registers per thread, which setmaxnreg then moves
    // between the roles.
    fn->setAttr(NVVM::NVVMDialect::getMaxnregAttrName(),
                b.getI32IntegerAttr(op.getLaunchRegisters()));
    binding.threads = op.getConsumerThreads();
    op.getProducer().walk(
        [&](Operation *inner) { binding.producerOps.insert(inner); });
    bool copies = false, bulk = true;
    op.getProducer().walk([&](fagpu::AsyncCopyOp copy) {
      copies = true;
      bulk &= copy.getBulk();
    });
    binding.singleThreadProducer = copies && bulk;
  });
  // Waits on barriers only bulk copies fill need no proxy fence.
  {
    DenseSet<Value> bulkFilled, otherFilled;
    kernel.walk([&](fagpu::AsyncCopyOp copy) {
      if (Value barriers = copy.getBarriers())
        (copy.getBulk() ? bulkFilled : otherFilled).insert(barriers);
    });
    kernel.walk([&](fagpu::BarrierWaitOp wait) {
      if (bulkFilled.contains(wait.getBarriers()) &&
          !otherFilled.contains(wait.getBarriers()))
        binding.unfencedWaits.insert(wait);
    });
  }
  binding.asyncProxyReads = kernel
                                .walk([](fagpu::MmaOp mma) {
                                  return mma.getWgmma()
                                             ? WalkResult::interrupt()
                                             : WalkResult::advance();
                                })
                                .wasInterrupted();
  SmallVector<Operation *> casts;
  auto bind = [&](unsigned i, Value ptr) {
    BlockArgument old = body.getArgument(i);
    auto cast = UnrealizedConversionCastOp::create(b, loc, old.getType(),
                                                   ValueRange{ptr});
    casts.push_back(cast);
    Value memref = cast.getResult(0);
    old.replaceAllUsesWith(memref);
    return memref;
  };
  if (seedArg)
    body.getArgument(*seedArg).replaceAllUsesWith(
        args.get(KernelParam::ofScalar(AbiScalar::Seed, MachineType::I64)));
  for (unsigned i = 0; i < numBuffers; ++i) {
    if (i >= 4 && roles[i] != "lse")
      continue;
    AbiTensor t = i < 4 ? tensors[i] : AbiTensor::Lse;
    Value memref = bind(i, args.pointer(t));
    KernelBinding::Buffer buffer{args.pointer(t), {}};
    for (uint32_t dim = 0; dim < (t == AbiTensor::Lse ? 2u : 3u); ++dim)
      buffer.strides.push_back(args.stride(t, dim));
    binding.buffers[memref] = buffer;
    for (auto &[arg, map] : tensorMaps)
      if (arg == i)
        binding.tensorMaps[memref] = args.get(map);
    // Q, O and lse have Nq rows, K and V Nk.
    bool keys = t == AbiTensor::K || t == AbiTensor::V;
    binding.sizes[{memref, 2}] = args.size(keys ? AbiSize::Nk : AbiSize::Nq);
    // A persistent kernel counts its work items from Q's batch and heads.
    if (t == AbiTensor::Q) {
      binding.sizes[{memref, 0}] = args.size(AbiSize::B);
      binding.sizes[{memref, 1}] = args.size(AbiSize::Hq);
    }
  }
  for (const Extra &extra : extras) {
    Value ptr = args.get(extra.pointer);
    Value memref = bind(extra.arg, ptr);
    KernelBinding::Buffer buffer{ptr, {}};
    for (const KernelParam &stride : extra.strides)
      buffer.strides.push_back(args.get(stride));
    // Slopes: [Hq] (the head stride is 1) or [B, Hq] (the batch stride,
    // then 1).
    if (roles[extra.arg] == "slopes") {
      Value one = arith::ConstantIntOp::create(b, loc, b.getI64Type(), 1);
      auto rank = cast<MemRefType>(memref.getType()).getRank();
      if (rank == 1)
        buffer.strides.assign({one});
      else
        buffer.strides.push_back(one);
    }
    binding.buffers[memref] = buffer;
    binding.elements.insert(memref);
    for (auto &[arg, map] : tensorMaps)
      if (arg == extra.arg) {
        binding.tensorMaps[memref] = args.get(map);
        // A bias block copy's bound: the bias's rows (the map's own).
        binding.sizes[{memref, 2}] = args.size(AbiSize::Nq);
      }
  }
  // The prologue: CTAs past the folded grid's heads x batches return (a
  // key-range kernel's y x z is its key chunks).
  Value rowsY = args.size(AbiSize::Hq), rowsZ = args.size(AbiSize::B);
  if (kernel->hasAttr(kKeyRangesAttr)) {
    Value chunk = kb.c32(kKeyRangeChunk);
    rowsY = kb.divu(kb.add(args.size(AbiSize::Nk), kb.sub(chunk, kb.c32(1))),
                    chunk);
    rowsZ = kb.c32(1);
  }
  KernelBuilder::ThreadPlace place = kb.getThreadPlace(rowsY, rowsZ);
  binding.batch = place.batch;
  binding.head = place.head;
  binding.tile = place.tile;
  binding.heads = args.size(AbiSize::Hq);
  binding.batches = args.size(AbiSize::B);
  Block *start = b.getInsertionBlock();
  start->getOperations().splice(start->end(), body.getOperations());
  auto ret = cast<gpu::ReturnOp>(start->getTerminator());
  b.setInsertionPoint(ret);
  LLVM::ReturnOp::create(b, ret.getLoc(), ValueRange{});
  ret.erase();
  kernel.erase();

  // The kernel passes the row counts of its buffers, no other size.
  WalkResult sizes = fn.walk([&](memref::DimOp dim) {
    std::optional<int64_t> index = dim.getConstantIndex();
    if (index && binding.sizes.count({dim.getSource(), *index}))
      return WalkResult::advance();
    dim.emitOpError("convert-fa-to-nvvm: the kernel has no parameter for ")
        << (index ? "dim " + std::to_string(*index) : "a dynamic dim")
        << " of this buffer";
    return WalkResult::interrupt();
  });
  if (sizes.wasInterrupted())
    return failure();

  TypeConverter converter;
  populateFAGPUTypeConversions(converter);
  RewritePatternSet patterns(ctx);
  populateFAGPUCopyToNVVMPatterns(converter, binding, patterns);
  populateFAGPUMmaToNVVMPatterns(converter, patterns);
  populateFAGPURowsToNVVMPatterns(converter, binding, patterns);
  populateFAGPUElementwiseToNVVMPatterns(converter, binding, patterns);
  ConversionTarget target(*ctx);
  target.addIllegalDialect<fagpu::FAGPUDialect>();
  target.addLegalDialect<LLVM::LLVMDialect, NVVM::NVVMDialect>();
  target.addDynamicallyLegalDialect<arith::ArithDialect, math::MathDialect>(
      [&](Operation *op) { return converter.isLegal(op); });
  target.addIllegalOp<memref::DimOp, memref::LoadOp, tensor::ExtractOp,
                      tensor::SplatOp, gpu::BarrierOp>();
  target.addLegalOp<UnrealizedConversionCastOp>();
  scf::populateSCFStructuralTypeConversionsAndLegality(converter, patterns,
                                                       target);
  if (failed(applyPartialConversion(fn, target, std::move(patterns))))
    return failure();
  // Loops count in i32 (positions are 32-bit, KernelAbi.h): an index
  // counter and its bound would hold two registers each across the loop.
  SmallVector<scf::ForOp> loops;
  fn.walk([&](scf::ForOp loop) {
    if (loop.getInductionVar().getType().isIndex())
      loops.push_back(loop);
  });
  for (scf::ForOp loop : loops) {
    OpBuilder lb(loop);
    Location l = loop.getLoc();
    auto narrow = [&](Value v) {
      return arith::IndexCastOp::create(lb, l, lb.getI32Type(), v);
    };
    loop.getLowerBoundMutable().assign(narrow(loop.getLowerBound()));
    loop.getUpperBoundMutable().assign(narrow(loop.getUpperBound()));
    loop.getStepMutable().assign(narrow(loop.getStep()));
    Value iv = loop.getInductionVar();
    iv.setType(lb.getI32Type());
    lb.setInsertionPointToStart(loop.getBody());
    auto wide = arith::IndexCastOp::create(lb, l, lb.getIndexType(), iv);
    iv.replaceAllUsesExcept(wide, wide);
  }
  sinkPacksToFirstUse(fn);
  // The captures' tensors, whose elements are loads now.
  fn.walk([](bufferization::ToTensorOp op) {
    if (op->use_empty())
      op.erase();
  });
  for (Operation *cast : casts) {
    if (!cast->use_empty())
      return cast->emitOpError("convert-fa-to-nvvm: a buffer of the fagpu "
                               "kernel is used by an op with no lowering");
    cast->erase();
  }
  return fn;
}
