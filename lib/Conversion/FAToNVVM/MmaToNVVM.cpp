//===- MmaToNVVM.cpp - fagpu products and fragments to mma.sync -----------===//
//
// Operand fragments come from swizzled shared tiles through ldmatrix.x4
// (transposed for a B stored [k][n]), products are mma.sync m16n8k16 with
// f32 accumulators, and an accumulator becomes the next product's A operand
// in registers (KernelBuilder::accToA). A thread's values are ordered
// m-tile, then n-tile (accumulators) or k-step (operands), then the 4 of
// the fragment.
//
//===----------------------------------------------------------------------===//

#include "FAGPUToNVVM.h"
#include "mlir/Dialect/LLVMIR/NVVMDialect.h"

using namespace mlir;
using namespace mlir::fa;
using namespace mlir::fa::nvvm;

namespace {

/// M-tiles of a register tile's rows.
int64_t mTilesOf(RankedTensorType type) {
  return type.getDimSize(0) / (16 * fagpu::getLayoutWarps(type));
}

/// The A fragment of m-tile `mt`, k-step `kk` of the shared `tile` (rows of
/// `width` columns), for the calling lane.
SmallVector<Value, 4> loadAFragment(KernelBuilder &kb, OpBuilder &b,
                                    Location loc, Value tile, int64_t mt,
                                    int64_t kk, unsigned warps) {
  LaneIds place = getLaneIds(kb, b, loc);
  Value rowLane = kb.add(kb.mul(place.warp, kb.c32(16)), kb.aRow(place.lane));
  Value at =
      kb.swizzledAt(rowLane, mt * 16 * warps, kb.aCol(place.lane), kk * 16);
  auto r = kb.ldmatrix4(kb.smemAt(tile, at), /*transpose=*/false);
  return {r.begin(), r.end()};
}

struct LoadOperandLowering : public OpConversionPattern<fagpu::LoadOperandOp> {
  using OpConversionPattern::OpConversionPattern;
  LogicalResult
  matchAndRewrite(fagpu::LoadOperandOp op, OpAdaptor adaptor,
                  ConversionPatternRewriter &rewriter) const override {
    Location loc = op.getLoc();
    auto shared = cast<fagpu::SharedType>(op.getSource().getType());
    auto type = cast<RankedTensorType>(op.getType());
    KernelBuilder kb(rewriter, loc, shared.getElementType(), shared.getCols());
    kb.setWgmmaSlabs(shared.getWgmma() ? shared.getRows() : 0);
    Value tile = getStage(kb, rewriter, loc, adaptor.getSource(),
                          adaptor.getStage(), shared);
    SmallVector<Value> values;
    for (int64_t mt = 0; mt < mTilesOf(type); ++mt)
      for (int64_t kk = 0; kk < shared.getCols() / 16; ++kk)
        values.append(loadAFragment(kb, rewriter, loc, tile, mt, kk,
                                    fagpu::getLayoutWarps(type)));
    rewriter.replaceOpWithMultiple(op, {values});
    return success();
  }
};

/// fagpu's wgmma tiles are 64-column slabs of 128-byte rows,
/// [cols / 64][rows][64] in the 128-byte swizzle: 8-row atoms 1024 bytes
/// apart, slabs rows * 128 bytes apart (one TMA box writes a whole tile).
constexpr int64_t kWgmmaAtomBytes = 1024;
int64_t wgmmaSlabBytes(fagpu::SharedType tile) { return tile.getRows() * 128; }

/// The byte offset of k-step `kk` (16 columns) in a K-major operand's rows:
/// 32 bytes within a 128-byte row, a slab past each 64 columns.
int64_t wgmmaKMajorStep(fagpu::SharedType tile, int64_t kk) {
  return kk / 4 * wgmmaSlabBytes(tile) + kk % 4 * 32;
}

/// `op` as warpgroup MMAs: per m-tile (its 64 rows are one warpgroup's) a
/// chain of m64nNk16 wgmmas over K, B read by the tensor cores from its
/// shared tile through descriptors (K-major when stored [n][k], else
/// MN-major), A from registers or from its shared tile (K-major). The
/// chain is committed as one group and, unless the op is `async`, waited
/// for here: the product is complete where the op is, as mma.sync's. An
/// async product's registers are read at its fagpu.mma_wait.
SmallVector<Value> lowerWgmma(fagpu::MmaOp op, ValueRange aValues, Value bBase,
                              Value bStage, ValueRange acc,
                              ConversionPatternRewriter &rewriter) {
  Location loc = op.getLoc();
  auto type = cast<RankedTensorType>(op.getType());
  auto bType = cast<fagpu::SharedType>(op.getB().getType());
  bool bStoredNK = op.getBTransposed();
  int64_t k = bStoredNK ? bType.getCols() : bType.getRows();
  int64_t kSteps = op.getDepth().value_or(k) / 16;
  int64_t mTiles = mTilesOf(type), nTiles = type.getDimSize(1) / 8;
  KernelBuilder kb(rewriter, loc, bType.getElementType(), bType.getCols());
  kb.setWgmmaSlabs(bType.getRows());
  Value bTile = getStage(kb, rewriter, loc, bBase, bStage, bType);
  // B's descriptor: 8-row atoms along N (K-major) or K (MN-major, whose
  // 64-column slabs along N are the leading dimension); a k-step of
  // MN-major B is two atoms of rows.
  Value bDesc =
      kb.wgmmaDesc(bTile, kb.c32(0), bStoredNK ? 16 : wgmmaSlabBytes(bType),
                   kWgmmaAtomBytes);
  auto bStep = [&](int64_t kk) {
    return bStoredNK ? wgmmaKMajorStep(bType, kk) : kk * 2 * kWgmmaAtomBytes;
  };
  Value aDesc;
  auto aType = dyn_cast<fagpu::SharedType>(op.getA().getType());
  SmallVector<Value> aRegs;
  unsigned warps = fagpu::getLayoutWarps(type);
  if (aType) {
    // This warpgroup's 64 rows (8 atoms) of each m-tile's 16 x warps.
    LaneIds place = getLaneIds(kb, rewriter, loc);
    Value rows = kb.mul(kb.shr(place.warp, 2), kb.c32(8 * kWgmmaAtomBytes));
    aDesc = kb.wgmmaDesc(aValues.front(), rows, 16, kWgmmaAtomBytes);
  } else {
    aRegs.assign(aValues.begin(), aValues.end());
  }
  // Registers wgmma reads are written before the fence (the A fragments,
  // a rescaled accumulator), not sunk past it.
  SmallVector<Value> accIn(acc.begin(), acc.end());
  kb.pinBefore(aRegs);
  kb.pinBefore(accIn);
  // Without an accumulator the first k-step writes fresh registers.
  SmallVector<KernelBuilder::Tiles> c(mTiles);
  for (int64_t mt = 0; mt < mTiles; ++mt) {
    c[mt].resize(nTiles);
    for (int64_t nt = 0; nt < nTiles; ++nt)
      if (!accIn.empty())
        c[mt][nt].assign(accIn.begin() + (mt * nTiles + nt) * 4,
                         accIn.begin() + (mt * nTiles + nt + 1) * 4);
      else
        c[mt][nt].assign(4, Value());
  }
  kb.wgmmaFence();
  for (int64_t mt = 0; mt < mTiles; ++mt) {
    for (int64_t kk = 0; kk < kSteps; ++kk) {
      ArrayRef<Value> a;
      Value aAt;
      if (aDesc)
        aAt = kb.wgmmaDescAt(aDesc, mt * 2 * warps * kWgmmaAtomBytes +
                                        wgmmaKMajorStep(aType, kk));
      else
        a = ArrayRef<Value>(aRegs).slice((mt * (k / 16) + kk) * 4, 4);
      kb.wgmma(c[mt], a, aAt, kb.wgmmaDescAt(bDesc, bStep(kk)),
               /*transA=*/false, /*transB=*/!bStoredNK,
               /*accumulate=*/!accIn.empty() || kk > 0);
    }
  }
  if (op.getAsync()) {
    kb.wgmmaCommit();
  } else {
    SmallVector<KernelBuilder::Tiles *> accs;
    for (KernelBuilder::Tiles &tiles : c)
      accs.push_back(&tiles);
    kb.wgmmaCommitAndWait(0, accs);
  }
  SmallVector<Value> values;
  for (auto &tiles : c)
    for (auto &t : tiles)
      values.append(t.begin(), t.end());
  return values;
}

struct MmaLowering : public OpConversionPattern<fagpu::MmaOp> {
  using OpConversionPattern::OpConversionPattern;
  LogicalResult
  matchAndRewrite(fagpu::MmaOp op, OneToNOpAdaptor adaptor,
                  ConversionPatternRewriter &rewriter) const override {
    if (op.getWgmma()) {
      SmallVector<Value> values =
          lowerWgmma(op, adaptor.getA(), adaptor.getB().front(),
                     adaptor.getBStage().front(), adaptor.getAcc(), rewriter);
      rewriter.replaceOpWithMultiple(op, {values});
      return success();
    }
    Location loc = op.getLoc();
    auto type = cast<RankedTensorType>(op.getType());
    auto bType = cast<fagpu::SharedType>(op.getB().getType());
    unsigned warps = fagpu::getLayoutWarps(type);
    int64_t mTiles = mTilesOf(type), nTiles = type.getDimSize(1) / 8;
    bool transposed = op.getBTransposed();
    int64_t k = transposed ? bType.getCols() : bType.getRows();
    Type et = bType.getElementType();
    // The B tile's rows set the swizzle; an A tile in shared memory has
    // rows of K columns.
    KernelBuilder kb(rewriter, loc, et, bType.getCols());
    KernelBuilder ka(rewriter, loc, et, k);
    Value bTile = getStage(kb, rewriter, loc, adaptor.getB().front(),
                           adaptor.getBStage().front(), bType);
    ValueRange aValues = adaptor.getA();
    bool aShared = isa<fagpu::SharedType>(op.getA().getType());

    // c[mt][nt]: 4 values each.
    SmallVector<KernelBuilder::Tiles> c(mTiles);
    ValueRange acc = adaptor.getAcc();
    for (int64_t mt = 0; mt < mTiles; ++mt) {
      if (acc.empty()) {
        c[mt] = kb.zeroTiles(nTiles);
        continue;
      }
      c[mt].resize(nTiles);
      for (int64_t nt = 0; nt < nTiles; ++nt)
        c[mt][nt].assign(acc.begin() + (mt * nTiles + nt) * 4,
                         acc.begin() + (mt * nTiles + nt + 1) * 4);
    }
    LaneIds place = getLaneIds(kb, rewriter, loc);
    // Lane parts of the B fragment addresses: two n-tiles of 8 rows of an
    // [n][k] tile, or of 8 columns of a [k][n] one, per ldmatrix.x4.
    Value rowLane = transposed ? kb.bRow(place.lane) : kb.aRow(place.lane);
    Value colLane = transposed ? kb.bCol(place.lane) : kb.aCol(place.lane);
    int64_t kSteps = op.getDepth().value_or(k) / 16;
    for (int64_t kk = 0; kk < kSteps; ++kk) {
      SmallVector<SmallVector<Value, 4>> a(mTiles);
      for (int64_t mt = 0; mt < mTiles; ++mt) {
        if (aShared) {
          a[mt] =
              loadAFragment(ka, rewriter, loc, aValues.front(), mt, kk, warps);
        } else {
          auto begin = aValues.begin() + (mt * (k / 16) + kk) * 4;
          a[mt].assign(begin, begin + 4);
        }
      }
      for (int64_t pair = 0; pair < nTiles / 2; ++pair) {
        Value at = transposed
                       ? kb.swizzledAt(rowLane, pair * 16, colLane, kk * 16)
                       : kb.swizzledAt(rowLane, kk * 16, colLane, pair * 16);
        auto r = kb.ldmatrix4(kb.smemAt(bTile, at), /*transpose=*/!transposed);
        for (int64_t mt = 0; mt < mTiles; ++mt) {
          c[mt][2 * pair] = kb.mma(a[mt], {r[0], r[1]}, c[mt][2 * pair]);
          c[mt][2 * pair + 1] =
              kb.mma(a[mt], {r[2], r[3]}, c[mt][2 * pair + 1]);
        }
      }
    }
    SmallVector<Value> values;
    for (auto &tiles : c)
      for (auto &t : tiles)
        values.append(t.begin(), t.end());
    rewriter.replaceOpWithMultiple(op, {values});
    return success();
  }
};

/// The wait for an async wgmma: its group, and those started before it,
/// complete; the registers are pinned after the wait so that no read of
/// them moves above it.
struct MmaWaitLowering : public OpConversionPattern<fagpu::MmaWaitOp> {
  using OpConversionPattern::OpConversionPattern;
  LogicalResult
  matchAndRewrite(fagpu::MmaWaitOp op, OneToNOpAdaptor adaptor,
                  ConversionPatternRewriter &rewriter) const override {
    KernelBuilder kb(rewriter, op.getLoc(), rewriter.getF32Type(), 0);
    // The `after` values first: each through an asm placed before the
    // wait's, so that what computes them cannot sink below the wait.
    SmallVector<SmallVector<Value>> results(1);
    for (ValueRange ready : adaptor.getReady()) {
      results.emplace_back(ready.begin(), ready.end());
      kb.pinBefore(results.back());
    }
    results.front().assign(adaptor.getSource().begin(),
                           adaptor.getSource().end());
    kb.wgmmaWait(op.getPending(), results.front());
    // The A registers the product read stay live up to here: no value
    // computed while it ran takes their place.
    SmallVector<Value> reads(adaptor.getReads().begin(),
                             adaptor.getReads().end());
    kb.pinBefore(reads);
    SmallVector<ValueRange> replacements(results.begin(), results.end());
    rewriter.replaceOpWithMultiple(op, replacements);
    return success();
  }
};

struct ToOperandLowering : public OpConversionPattern<fagpu::ToOperandOp> {
  using OpConversionPattern::OpConversionPattern;
  LogicalResult
  matchAndRewrite(fagpu::ToOperandOp op, OneToNOpAdaptor adaptor,
                  ConversionPatternRewriter &rewriter) const override {
    auto type = cast<RankedTensorType>(op.getType());
    KernelBuilder kb(rewriter, op.getLoc(), type.getElementType(), 0);
    int64_t mTiles = mTilesOf(type), nTiles = type.getDimSize(1) / 8;
    ValueRange acc = adaptor.getSource();
    SmallVector<Value> values;
    for (int64_t mt = 0; mt < mTiles; ++mt) {
      KernelBuilder::Tiles tiles(nTiles);
      for (int64_t nt = 0; nt < nTiles; ++nt)
        tiles[nt].assign(acc.begin() + (mt * nTiles + nt) * 4,
                         acc.begin() + (mt * nTiles + nt + 1) * 4);
      for (int64_t j = 0; j < nTiles / 2; ++j)
        values.append(kb.accToA(tiles, j));
    }
    rewriter.replaceOpWithMultiple(op, {values});
    return success();
  }
};

} // namespace

void mlir::fa::nvvm::populateFAGPUMmaToNVVMPatterns(
    const TypeConverter &converter, RewritePatternSet &patterns) {
  patterns.add<LoadOperandLowering, MmaLowering, MmaWaitLowering,
               ToOperandLowering>(converter, patterns.getContext());
}
