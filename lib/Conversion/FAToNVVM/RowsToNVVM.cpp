//===- RowsToNVVM.cpp - fagpu row values, masks and stores to NVVM --------===//
//
// Row reductions fold a thread's values of each row and then the 4 lanes of
// its quad with shuffles; masks compare each value's (row, key) with the
// variant's bounds (KernelBuilder::keepKey); stores write rows below the
// bound, two elements per 32-bit store; key ranges are written per warp and
// read per query tile (KernelAbi.h).
//
//===----------------------------------------------------------------------===//

#include "FAGPUToNVVM.h"
#include "mlir/Dialect/LLVMIR/NVVMDialect.h"
#include "mlir/Dialect/SCF/IR/SCF.h"

#include <limits>

using namespace mlir;
using namespace mlir::fa;
using namespace mlir::fa::nvvm;

namespace {

constexpr double kNegInf = -std::numeric_limits<double>::infinity();

/// Which of a thread's row values (two per m-tile) value `slot` of its
/// accumulator tile of `nTiles` n-tiles lies in: slot (mt, nt, e) is in
/// row mt * 2 + e / 2.
int64_t rowOfSlot(int64_t slot, int64_t nTiles) {
  return (slot / (nTiles * 4)) * 2 + (slot % 4) / 2;
}

struct ReduceRowsLowering : public OpConversionPattern<fagpu::ReduceRowsOp> {
  using OpConversionPattern::OpConversionPattern;
  LogicalResult
  matchAndRewrite(fagpu::ReduceRowsOp op, OneToNOpAdaptor adaptor,
                  ConversionPatternRewriter &rewriter) const override {
    KernelBuilder kb(rewriter, op.getLoc(), rewriter.getF16Type(), 0);
    auto source = cast<RankedTensorType>(op.getSource().getType());
    auto result = cast<RankedTensorType>(op.getType());
    bool isMax = op.getKind() == fagpu::ReduceKind::Max;
    bool partial =
        cast<fagpu::RowsLayoutAttr>(result.getEncoding()).getPartial();
    ValueRange values = adaptor.getSource();
    SmallVector<Value> rows;
    if (source.getRank() == 1) {
      for (Value v : values)
        rows.push_back(kb.quadReduce(v, /*isMax=*/false));
    } else {
      int64_t nTiles = source.getDimSize(1) / 8;
      int64_t mTiles = int64_t(values.size()) / (nTiles * 4);
      for (int64_t mt = 0; mt < mTiles; ++mt) {
        Value row[2] = {kb.cf(isMax ? kNegInf : 0.0),
                        kb.cf(isMax ? kNegInf : 0.0)};
        for (int64_t nt = 0; nt < nTiles; ++nt)
          for (int64_t e = 0; e < 4; ++e) {
            Value x = values[(mt * nTiles + nt) * 4 + e];
            row[e / 2] =
                isMax ? kb.fmax(row[e / 2], x) : kb.fadd(row[e / 2], x);
          }
        for (Value v : row)
          rows.push_back(partial ? v : kb.quadReduce(v, isMax));
      }
    }
    rewriter.replaceOpWithMultiple(op, {rows});
    return success();
  }
};

struct UpdateRowSumLowering
    : public OpConversionPattern<fagpu::UpdateRowSumOp> {
  using OpConversionPattern::OpConversionPattern;
  LogicalResult
  matchAndRewrite(fagpu::UpdateRowSumOp op, OneToNOpAdaptor adaptor,
                  ConversionPatternRewriter &rewriter) const override {
    std::optional<Type> rounded = op.getRounded();
    KernelBuilder kb(rewriter, op.getLoc(),
                     rounded ? *rounded : rewriter.getF16Type(), 0);
    auto type = cast<RankedTensorType>(op.getValues().getType());
    int64_t nTiles = type.getDimSize(1) / 8;
    SmallVector<Value> values(adaptor.getValues());
    // Rounded as to_operand packs them, two columns of a row at a time.
    if (rounded)
      for (size_t slot = 0; slot + 1 < values.size(); slot += 2)
        std::tie(values[slot], values[slot + 1]) =
            kb.round(values[slot], values[slot + 1]);
    SmallVector<Value> rows(adaptor.getSum());
    for (auto [slot, value] : llvm::enumerate(values)) {
      Value &row = rows[rowOfSlot(slot, nTiles)];
      row = kb.fadd(row, value);
    }
    rewriter.replaceOpWithMultiple(op, {rows});
    return success();
  }
};

/// Each value times its row's factor, placed right after the factor
/// (RowwisePlacer): a row's rescale then never waits for the other rows'.
struct ScaleRowsLowering : public OpConversionPattern<fagpu::ScaleRowsOp> {
  using OpConversionPattern::OpConversionPattern;
  LogicalResult
  matchAndRewrite(fagpu::ScaleRowsOp op, OneToNOpAdaptor adaptor,
                  ConversionPatternRewriter &rewriter) const override {
    KernelBuilder kb(rewriter, op.getLoc(), rewriter.getF16Type(), 0);
    auto type = cast<RankedTensorType>(op.getType());
    ValueRange source = adaptor.getSource(), factors = adaptor.getFactors();
    // Row values hold one register per row, an accumulator tile one per
    // slot.
    bool tile = type.getRank() == 2;
    int64_t nTiles = tile ? type.getDimSize(1) / 8 : 0;
    RowwisePlacer placer(rewriter.getInsertionBlock());
    SmallVector<Value> results;
    for (int64_t i = 0; i < int64_t(source.size()); ++i) {
      OpBuilder::InsertionGuard guard(rewriter);
      Value factor = factors[tile ? rowOfSlot(i, nTiles) : i];
      placer.setInsertionPoint(rewriter, {source[i], factor});
      results.push_back(kb.fmul(source[i], factor));
      placer.placed(results.back().getDefiningOp());
    }
    rewriter.replaceOpWithMultiple(op, {results});
    return success();
  }
};

struct BroadcastRowsLowering
    : public OpConversionPattern<fagpu::BroadcastRowsOp> {
  using OpConversionPattern::OpConversionPattern;
  LogicalResult
  matchAndRewrite(fagpu::BroadcastRowsOp op, OneToNOpAdaptor adaptor,
                  ConversionPatternRewriter &rewriter) const override {
    auto type = cast<RankedTensorType>(op.getType());
    int64_t nTiles = type.getDimSize(1) / 8;
    ValueRange rows = adaptor.getSource();
    SmallVector<Value> values;
    for (int64_t slot = 0, e = int64_t(rows.size()) / 2 * nTiles * 4; slot < e;
         ++slot)
      values.push_back(rows[rowOfSlot(slot, nTiles)]);
    rewriter.replaceOpWithMultiple(op, {values});
    return success();
  }
};

struct MaskLowering : public BoundPattern<fagpu::MaskOp> {
  using BoundPattern::BoundPattern;
  LogicalResult
  matchAndRewrite(fagpu::MaskOp op, OneToNOpAdaptor adaptor,
                  ConversionPatternRewriter &rewriter) const override {
    Location loc = op.getLoc();
    KernelBuilder kb(rewriter, loc, rewriter.getF16Type(), 0);
    auto type = cast<RankedTensorType>(op.getType());
    auto i32 = [&](ValueRange v) { return toI32(rewriter, loc, v.front()); };
    Value nq = i32(adaptor.getQueryLen()), nk = i32(adaptor.getKeyLen());
    Value diag = kb.sub(nk, nq);
    // In a persistent kernel, rebuilt where the mask is: hoisted out of its
    // loops, a column per accumulator pair would hold a register across
    // both (D = 256 spilled 56 bytes).
    AccCoords at =
        getAccCoords(kb, rewriter, loc, type, i32(adaptor.getQueryOffset()),
                     i32(adaptor.getKeyOffset()), binding.persistent);
    Masks masks{op.getCausalAttr(), op.getWindowAttr()};
    ValueRange scores = adaptor.getScores();
    SmallVector<Value> values;
    for (int64_t mt = 0; mt < at.mTiles; ++mt)
      for (int64_t nt = 0; nt < at.nTiles; ++nt)
        for (int64_t e = 0; e < 4; ++e) {
          Value keep = kb.keepKey(masks, at.row(mt, e), at.col(nt, e), nk, diag,
                                  /*checkBound=*/true);
          values.push_back(kb.sel(keep, scores[(mt * at.nTiles + nt) * 4 + e],
                                  kb.cf(kNegInf)));
        }
    rewriter.replaceOpWithMultiple(op, {values});
    return success();
  }
};

/// The kernel's buffer `memref`, or null after an error on `op` that `what`
/// is not one.
const KernelBinding::Buffer *findBuffer(Operation *op,
                                        const KernelBinding &binding,
                                        Value memref, StringRef what) {
  auto it = binding.buffers.find(memref);
  if (it != binding.buffers.end())
    return &it->second;
  op->emitOpError("convert-fa-to-nvvm: ")
      << what << " not a buffer of the kernel";
  return nullptr;
}

/// The key ranges of a query tile (KernelAbi.h, "Key ranges"): an i32 read
/// once per kernel, the same for every thread (ld.global.nc).
Value loadRange(KernelBuilder &kb, OpBuilder &b, Location loc, Value ptr,
                Value index) {
  return LLVM::LoadOp::create(b, loc, b.getI32Type(),
                              kb.gep(ptr, kb.ext64(index), b.getI32Type()),
                              /*alignment=*/4, /*isVolatile=*/false,
                              /*isNonTemporal=*/false, /*isInvariant=*/true);
}

/// Key rows [begin, end) of the query tile at `q0` from its key ranges
/// (KernelAbi.h, "Key ranges"): each warp's tiles of field `field` (0:
/// those it sees; 2: its full run, none where the run's length is not word
/// 4), as the union of the warps' tiles or their intersection. Empty (begin
/// == end) where a warp has none or the intersection is empty.
std::pair<Value, Value> loadKeyRange(KernelBuilder &kb, OpBuilder &b,
                                     Location loc, Value ptr, Value q0,
                                     int64_t blockQ, uint32_t field,
                                     bool intersect) {
  using ::fa::runtime::kKeyRangeBlock;
  using ::fa::runtime::kKeyRangeInts;
  using ::fa::runtime::kKeyRangeWarps;
  Value base = kb.mul(kb.divu(q0, kb.c32(blockQ)),
                      kb.c32(kKeyRangeWarps * kKeyRangeInts));
  Value none = kb.c32(std::numeric_limits<int32_t>::max());
  Value zero = kb.c32(0), minusOne = kb.c32(-1);
  Value first, last;
  for (uint32_t w = 0; w < kKeyRangeWarps; ++w) {
    uint32_t at = w * kKeyRangeInts + field;
    // ~first (0: none) and last + 1.
    Value f = loadRange(kb, b, loc, ptr, kb.add(base, kb.c32(at)));
    Value l = loadRange(kb, b, loc, ptr, kb.add(base, kb.c32(at + 1)));
    f = kb.sel(kb.cmp(arith::CmpIPredicate::eq, f, zero), none,
               kb.xori(f, minusOne));
    l = kb.sub(l, kb.c32(1));
    if (field == 2) {
      Value length = loadRange(kb, b, loc, ptr,
                               kb.add(base, kb.c32(w * kKeyRangeInts + 4)));
      Value run = kb.cmp(arith::CmpIPredicate::eq,
                         kb.add(kb.sub(l, f), kb.c32(1)), length);
      f = kb.sel(run, f, none);
      l = kb.sel(run, l, minusOne);
    }
    first = !first ? f : intersect ? kb.maxs(first, f) : kb.mins(first, f);
    last = !last ? l : intersect ? kb.mins(last, l) : kb.maxs(last, l);
  }
  // Tiles [first, last + 1) of kKeyRangeBlock keys; last + 1 >= 0.
  Value end = kb.add(last, kb.c32(1));
  Value block = kb.c32(kKeyRangeBlock);
  return {kb.mul(kb.mins(first, end), block), kb.mul(end, block)};
}

struct VisibleKeysLowering : public BoundPattern<fagpu::VisibleKeysOp> {
  using BoundPattern::BoundPattern;
  LogicalResult
  matchAndRewrite(fagpu::VisibleKeysOp op, OpAdaptor adaptor,
                  ConversionPatternRewriter &rewriter) const override {
    Location loc = op.getLoc();
    KernelBuilder kb(rewriter, loc, rewriter.getF16Type(), 0);
    Value q0 = toI32(rewriter, loc, adaptor.getQueryOffset());
    KernelBuilder::KeyRange range = kb.visibleKeys(
        {op.getCausalAttr(), op.getWindowAttr()}, q0, op.getBlockQ(),
        toI32(rewriter, loc, adaptor.getQueryLen()),
        toI32(rewriter, loc, adaptor.getKeyLen()), op.getBlockKv());
    if (Value ranges = op.getKeyRanges()) {
      const KernelBinding::Buffer *buffer =
          findBuffer(op, binding, ranges, "the key ranges are");
      if (!buffer)
        return failure();
      // The union of the warps' tiles; block_kv divides kKeyRangeBlock, so
      // begin stays on a K/V tile.
      auto [begin, end] =
          loadKeyRange(kb, rewriter, loc, buffer->ptr, q0, op.getBlockQ(),
                       /*field=*/0, /*intersect=*/false);
      range.begin = kb.maxs(range.begin, begin);
      range.end = kb.mins(range.end, end);
    }
    rewriter.replaceOp(op, {kb.toIndex(range.begin), kb.toIndex(range.end)});
    return success();
  }
};

struct FullKeysLowering : public BoundPattern<fagpu::FullKeysOp> {
  using BoundPattern::BoundPattern;
  LogicalResult
  matchAndRewrite(fagpu::FullKeysOp op, OpAdaptor adaptor,
                  ConversionPatternRewriter &rewriter) const override {
    Location loc = op.getLoc();
    const KernelBinding::Buffer *buffer =
        findBuffer(op, binding, op.getKeyRanges(), "the key ranges are");
    if (!buffer)
      return failure();
    KernelBuilder kb(rewriter, loc, rewriter.getF16Type(), 0);
    // The intersection of the warps' runs.
    auto [begin, end] = loadKeyRange(
        kb, rewriter, loc, buffer->ptr,
        toI32(rewriter, loc, adaptor.getQueryOffset()), op.getBlockQ(),
        /*field=*/2, /*intersect=*/true);
    rewriter.replaceOp(op, {kb.toIndex(begin), kb.toIndex(end)});
    return success();
  }
};

/// Each warp folds its rows' key tiles (1 + tile, 0 for none) with
/// redux.sync: the union of the tiles they see, the intersection of their
/// runs of full tiles. Its lane 0 merges them into the warp's record with
/// atomics (KernelAbi.h, "Key ranges"), other chunks' CTAs doing the same.
struct MergeKeyRangeLowering : public BoundPattern<fagpu::MergeKeyRangeOp> {
  using BoundPattern::BoundPattern;
  LogicalResult
  matchAndRewrite(fagpu::MergeKeyRangeOp op, OneToNOpAdaptor adaptor,
                  ConversionPatternRewriter &rewriter) const override {
    using ::fa::runtime::kKeyRangeInts;
    using ::fa::runtime::kKeyRangeWarps;
    Location loc = op.getLoc();
    const KernelBinding::Buffer *ranges =
        findBuffer(op, binding, op.getRanges(), "the key ranges are");
    if (!ranges)
      return failure();
    KernelBuilder kb(rewriter, loc, rewriter.getF32Type(), 0);
    Type i32 = rewriter.getI32Type();
    Value none = kb.c32(std::numeric_limits<int32_t>::max());
    // A first's 0 (none) folds as past every tile, a last's as -1; the
    // fold starts at its identity.
    auto tiles = [&](ValueRange values, bool isFirst, bool takeMax) -> Value {
      Value folded = takeMax ? kb.c32(-1) : none;
      for (Value v : values) {
        Value n = arith::FPToSIOp::create(rewriter, loc, i32, v);
        Value tile = kb.sub(n, kb.c32(1));
        if (isFirst)
          tile = kb.sel(kb.cmp(arith::CmpIPredicate::eq, n, kb.c32(0)), none,
                        tile);
        folded = takeMax ? kb.maxs(folded, tile) : kb.mins(folded, tile);
      }
      auto kind = takeMax ? NVVM::ReduxKind::MAX : NVVM::ReduxKind::MIN;
      return NVVM::ReduxOp::create(
          rewriter, loc, i32, folded,
          NVVM::ReduxKindAttr::get(rewriter.getContext(), kind), kb.c32(-1));
    };
    Value first = tiles(adaptor.getFirst(), /*isFirst=*/true,
                        /*takeMax=*/false);
    Value last = tiles(adaptor.getLast(), /*isFirst=*/false, /*takeMax=*/true);
    Value fullFirst = tiles(adaptor.getFullFirst(), /*isFirst=*/true,
                            /*takeMax=*/true);
    Value fullLast = tiles(adaptor.getFullLast(), /*isFirst=*/false,
                           /*takeMax=*/false);
    LaneIds place = getLaneIds(kb, rewriter, loc, /*rebuilt=*/true);
    Value tile = toI32(rewriter, loc, adaptor.getTile().front());
    Value slot =
        kb.mul(kb.add(kb.mul(tile, kb.c32(kKeyRangeWarps)), place.warp),
               kb.c32(kKeyRangeInts));
    auto merge = [&](unsigned word, LLVM::AtomicBinOp kind, Value value) {
      LLVM::AtomicRMWOp::create(
          rewriter, loc, kind,
          kb.gep(ranges->ptr, kb.ext64(kb.add(slot, kb.c32(word))), i32), value,
          LLVM::AtomicOrdering::monotonic);
    };
    Value lane0 = kb.cmp(arith::CmpIPredicate::eq, place.lane, kb.c32(0));
    Value minusOne = kb.c32(-1), one = kb.c32(1);
    OpBuilder::InsertionGuard guard(rewriter);
    {
      OpBuilder::InsertionGuard seen(rewriter);
      kb.enterIf(arith::AndIOp::create(
          rewriter, loc, lane0,
          kb.cmp(arith::CmpIPredicate::sge, last, kb.c32(0))));
      merge(0, LLVM::AtomicBinOp::umax, kb.xori(first, minusOne));
      merge(1, LLVM::AtomicBinOp::umax, kb.add(last, one));
    }
    kb.enterIf(arith::AndIOp::create(
        rewriter, loc, lane0,
        kb.cmp(arith::CmpIPredicate::sle, fullFirst, fullLast)));
    merge(2, LLVM::AtomicBinOp::umax, kb.xori(fullFirst, minusOne));
    merge(3, LLVM::AtomicBinOp::umax, kb.add(fullLast, one));
    merge(4, LLVM::AtomicBinOp::add, kb.add(kb.sub(fullLast, fullFirst), one));
    static_assert(kKeyRangeInts == 5);
    rewriter.eraseOp(op);
    return success();
  }
};

struct TileNeedsMaskLowering
    : public OpConversionPattern<fagpu::TileNeedsMaskOp> {
  using OpConversionPattern::OpConversionPattern;
  LogicalResult
  matchAndRewrite(fagpu::TileNeedsMaskOp op, OpAdaptor adaptor,
                  ConversionPatternRewriter &rewriter) const override {
    Location loc = op.getLoc();
    KernelBuilder kb(rewriter, loc, rewriter.getF16Type(), 0);
    Value nq = toI32(rewriter, loc, adaptor.getQueryLen());
    Value nk = toI32(rewriter, loc, adaptor.getKeyLen());
    rewriter.replaceOp(
        op, kb.tileNeedsMask({op.getCausalAttr(), op.getWindowAttr()},
                             toI32(rewriter, loc, adaptor.getQueryOffset()),
                             op.getBlockQ(),
                             toI32(rewriter, loc, adaptor.getKeyOffset()),
                             op.getBlockKv(), nk, kb.sub(nk, nq)));
    return success();
  }
};

struct StoreLowering : public BoundPattern<fagpu::StoreOp> {
  using BoundPattern::BoundPattern;
  LogicalResult
  matchAndRewrite(fagpu::StoreOp op, OneToNOpAdaptor adaptor,
                  ConversionPatternRewriter &rewriter) const override {
    Location loc = op.getLoc();
    const KernelBinding::Buffer *found =
        findBuffer(op, binding, op.getDest(), "the destination is");
    if (!found)
      return failure();
    const KernelBinding::Buffer &buffer = *found;
    auto dest = cast<MemRefType>(op.getDest().getType());
    auto type = cast<RankedTensorType>(op.getValue().getType());
    KernelBuilder kb(rewriter, loc, dest.getElementType(), 0);
    auto i32 = [&](ValueRange v) { return toI32(rewriter, loc, v.front()); };
    Value batch = i32(adaptor.getBatch()), head = i32(adaptor.getHead());
    Value bound = i32(adaptor.getBound());
    AccCoords at =
        getAccCoords(kb, rewriter, loc, type, i32(adaptor.getRow()), kb.c32(0),
                     /*rebuilt=*/true);
    // Stores follow the loop: their lane ids are rebuilt (getLaneIds).
    LaneIds place = getLaneIds(kb, rewriter, loc, /*rebuilt=*/true);
    ValueRange values = adaptor.getValue();
    for (int64_t mt = 0; mt < at.mTiles; ++mt)
      for (int64_t r = 0; r < 2; ++r) {
        Value row = at.row(mt, 2 * r);
        Value inRange = kb.cmp(arith::CmpIPredicate::slt, row, bound);
        if (type.getRank() == 1) {
          // Row values: one lane of the quad writes.
          Value first = kb.cmp(arith::CmpIPredicate::eq, place.tq, kb.c32(0));
          inRange = arith::AndIOp::create(rewriter, loc, inRange, first);
        }
        // Predicated stores, not a branch per row: a persistent kernel's
        // item loop ends here, and a divergent branch before its back edge
        // made ptxas keep the K/V rings' positions and descriptors in
        // per-thread registers (an R2UR before every wgmma).
        if (type.getRank() == 1) {
          Value at64 = kb.add(kb.add(kb.mul(kb.ext64(batch), buffer.strides[0]),
                                     kb.mul(kb.ext64(head), buffer.strides[1])),
                              kb.ext64(row));
          kb.storeIf(inRange, kb.gep(buffer.ptr, at64, rewriter.getF32Type()),
                     values[mt * 2 + r]);
          continue;
        }
        Value base = kb.headBase(buffer.ptr, batch, head, buffer.strides[0],
                                 buffer.strides[1]);
        Type et = dest.getElementType();
        Value rowBase =
            kb.gep(base, kb.mul(kb.ext64(row), buffer.strides[2]), et);
        for (int64_t nt = 0; nt < at.nTiles; ++nt) {
          int64_t i = (mt * at.nTiles + nt) * 4 + 2 * r;
          Value ptr = kb.gep(rowBase, kb.ext64(at.col(nt, 0)), et);
          kb.storeIf(inRange, ptr, kb.pack(values[i], values[i + 1]));
        }
      }
    rewriter.eraseOp(op);
    return success();
  }
};

} // namespace

void mlir::fa::nvvm::populateFAGPURowsToNVVMPatterns(
    const TypeConverter &converter, const KernelBinding &binding,
    RewritePatternSet &patterns) {
  MLIRContext *ctx = patterns.getContext();
  patterns.add<ReduceRowsLowering, UpdateRowSumLowering, ScaleRowsLowering,
               BroadcastRowsLowering, TileNeedsMaskLowering>(converter, ctx);
  patterns.add<MaskLowering>(converter, ctx, binding);
  patterns.add<StoreLowering, VisibleKeysLowering, FullKeysLowering,
               MergeKeyRangeLowering>(converter, ctx, binding);
}
