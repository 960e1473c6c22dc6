//===- CopyToNVVM.cpp - fagpu shared tiles and copies to cp.async ---------===//
//
// Shared tiles are offsets into `fa_smem`; a tile copy is the CTA's cp.async
// of 16-byte chunks into the swizzled tile (rows past the bound zero-filled,
// KernelBuilder::copyTile); commits and waits are cp.async groups, which a
// thread tracks itself, so tokens lower to nothing.
//
//===----------------------------------------------------------------------===//

#include "FAGPUToNVVM.h"
#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/LLVMIR/NVVMDialect.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/Dialect/Utils/StaticValueUtils.h"

using namespace mlir;
using namespace mlir::fa;
using namespace mlir::fa::nvvm;

Value mlir::fa::nvvm::getStage(KernelBuilder &kb, OpBuilder &b, Location loc,
                               Value base, Value stage,
                               fagpu::SharedType type) {
  std::optional<int64_t> constant = getConstantIntValue(stage);
  if (constant && *constant == 0)
    return base;
  Value offset =
      constant ? kb.c32(*constant * type.getStageBytes())
               : kb.mul(toI32(b, loc, stage), kb.c32(type.getStageBytes()));
  return kb.smemAt(base, offset);
}

namespace {

/// Barrier `stage` of a ring (8 bytes each).
Value barrierAt(OpBuilder &b, Location loc, Value ring, Value stage) {
  std::optional<int64_t> constant = getConstantIntValue(stage);
  if (constant && *constant == 0)
    return ring;
  KernelBuilder kb(b, loc, b.getF16Type(), 0);
  return kb.smemAt(ring, constant ? kb.c32(8 * *constant)
                                  : kb.mul(toI32(b, loc, stage), kb.c32(8)));
}

/// cp.async writes shared memory through the generic proxy; wgmma reads it
/// through the async proxy, which sees the writes only after this fence
/// (and the barrier after it, for other threads' writes).
void fenceToAsyncProxy(OpBuilder &b, Location loc,
                       const KernelBinding &binding) {
  if (binding.asyncProxyReads)
    NVVM::FenceProxyOp::create(
        b, loc, NVVM::ProxyKind::async_shared,
        NVVM::SharedSpaceAttr::get(b.getContext(),
                                   NVVM::SharedSpace::shared_cta));
}

struct AllocSharedLowering : public BoundPattern<fagpu::AllocSharedOp> {
  using BoundPattern::BoundPattern;
  LogicalResult
  matchAndRewrite(fagpu::AllocSharedOp op, OpAdaptor,
                  ConversionPatternRewriter &rewriter) const override {
    KernelBuilder kb(rewriter, op.getLoc(), rewriter.getF16Type(), 0);
    int64_t offset = op.getOffset();
    rewriter.replaceOp(op, offset ? kb.smemAt(binding.smem, kb.c32(offset))
                                  : binding.smem);
    return success();
  }
};

/// Starts the copy of `op` (fagpu.copy or fagpu.async_copy).
template <typename CopyOp>
LogicalResult issueCopy(CopyOp op, typename CopyOp::Adaptor adaptor,
                        ConversionPatternRewriter &rewriter,
                        const KernelBinding &binding, Value dest) {
  Location loc = op.getLoc();
  auto type = cast<fagpu::SharedType>(op.getDest().getType());
  auto it = binding.buffers.find(op.getSource());
  if (it == binding.buffers.end())
    return op.emitOpError(
        "convert-fa-to-nvvm: the source is not a buffer of the kernel");
  if (op.getCol())
    return op.emitOpError("convert-fa-to-nvvm: a copy with a column (a bias "
                          "block) must be bulk (fa-warp-specialize with TMA)");
  const KernelBinding::Buffer &buffer = it->second;
  KernelBuilder kb(rewriter, loc, type.getElementType(), type.getCols());
  kb.setWgmmaSlabs(type.getWgmma() ? type.getRows() : 0);
  kb.setThreads(binding.threads);
  Value tile = getStage(kb, rewriter, loc, dest, adaptor.getStage(), type);
  Value base = kb.headBase(buffer.ptr, toI32(rewriter, loc, adaptor.getBatch()),
                           toI32(rewriter, loc, adaptor.getHead()),
                           buffer.strides[0], buffer.strides[1]);
  Value tid = NVVM::ThreadIdXOp::create(rewriter, loc, rewriter.getI32Type());
  if (binding.producerOps.contains(op)) {
    // The producer warpgroup's threads, numbered from 0.
    kb.setThreads(kProducerThreads);
    tid = kb.sub(tid, kb.c32(binding.threads));
  }
  // Columns past the source's (a wgmma tile's padding) are zero-filled.
  kb.copyTile(type.getRows(), tile, base,
              toI32(rewriter, loc, adaptor.getRow()),
              toI32(rewriter, loc, adaptor.getBound()), buffer.strides[2], tid,
              /*threadAddresses=*/true, getSourceCols(op.getSource(), type));
  return success();
}

/// A bulk copy: one thread expects the tile's bytes on the barrier and
/// issues one TMA copy, a box of the whole tile at (column 0, row, panel 0,
/// head, batch) of the source's 5-D tensor map (KernelAbi.h), which lands
/// in the tile's panels; the map zero-fills rows past the source's. Where
/// the source's D is not a multiple of 64, the map's box is one panel and
/// the thread issues one copy per panel, at (64 p, row, 0, head, batch):
/// the map zero-fills the columns past D too.
LogicalResult issueBulkCopy(fagpu::AsyncCopyOp op,
                            fagpu::AsyncCopyOp::Adaptor adaptor,
                            ConversionPatternRewriter &rewriter,
                            const KernelBinding &binding) {
  Location loc = op.getLoc();
  auto type = cast<fagpu::SharedType>(op.getDest().getType());
  auto it = binding.tensorMaps.find(op.getSource());
  if (it == binding.tensorMaps.end())
    return op.emitOpError(
        "convert-fa-to-nvvm: the source of a bulk copy has no tensor map");
  KernelBuilder kb(rewriter, loc, type.getElementType(), type.getCols());
  Value tile =
      getStage(kb, rewriter, loc, adaptor.getDest(), adaptor.getStage(), type);
  Value barrier = barrierAt(rewriter, loc, adaptor.getBarriers(),
                            adaptor.getBarrierStage());
  OpBuilder::InsertionGuard guard(rewriter);
  if (!binding.singleThreadProducer || !binding.producerOps.contains(op))
    kb.enterThread(binding.producerOps.contains(op) ? binding.threads : 0);
  int64_t elementBytes = type.getElementType().getIntOrFloatBitWidth() / 8;
  int64_t rowBytes = type.getCols() * elementBytes;
  NVVM::MBarrierArriveExpectTxOp::create(
      rewriter, loc, Type(), barrier, kb.c32(type.getRows() * rowBytes),
      NVVM::MemScopeKind::CTA, /*relaxed=*/false, /*predicate=*/Value());
  Value row = toI32(rewriter, loc, adaptor.getRow());
  Value head = toI32(rewriter, loc, adaptor.getHead());
  Value batch = toI32(rewriter, loc, adaptor.getBatch());
  // A bias block: one box a 128-byte panel, at (col + p panel, row, head,
  // batch) of its 4-D map.
  Value col =
      adaptor.getCol() ? toI32(rewriter, loc, adaptor.getCol()) : Value();
  if (col) {
    // A dim the bias broadcasts (stride 0) is one head (batch) in its map.
    auto buffer = binding.buffers.find(op.getSource());
    if (buffer == binding.buffers.end())
      return op.emitOpError(
          "convert-fa-to-nvvm: the source is not a buffer of the kernel");
    auto broadcastAt = [&](Value coord, Value stride) {
      Value zero =
          arith::ConstantIntOp::create(rewriter, loc, rewriter.getI64Type(), 0);
      Value broadcast = arith::CmpIOp::create(
          rewriter, loc, arith::CmpIPredicate::eq, stride, zero);
      return kb.sel(broadcast, kb.c32(0), coord);
    };
    batch = broadcastAt(batch, buffer->second.strides[0]);
    head = broadcastAt(head, buffer->second.strides[1]);
  }
  int64_t panelCols = 128 / elementBytes;
  int64_t cols = col ? type.getCols() : getSourceCols(op.getSource(), type);
  int64_t boxes = col              ? type.getCols() / panelCols
                  : cols % 64 == 0 ? 1
                                   : type.getCols() / 64;
  for (int64_t p = 0; p < boxes; ++p) {
    // The instruction takes a shared::cluster address; the CTA's own shared
    // memory is part of its (one-CTA) cluster's.
    Value at = LLVM::AddrSpaceCastOp::create(
        rewriter, loc,
        LLVM::LLVMPointerType::get(rewriter.getContext(),
                                   int(NVVM::NVVMMemorySpace::SharedCluster)),
        p ? kb.smemAt(tile, kb.c32(p * getBulkBoxRows(type) * 128)) : tile);
    SmallVector<Value, 5> coords;
    if (col)
      coords = {p ? kb.add(col, kb.c32(panelCols * p)) : col, row, head, batch,
                kb.c32(0)};
    else
      coords = {kb.c32(64 * p), row, kb.c32(0), head, batch};
    NVVM::CpAsyncBulkTensorGlobalToSharedClusterOp::create(
        rewriter, loc, at, it->second, coords, barrier,
        /*im2colOffsets=*/ValueRange(), /*multicastMask=*/Value(),
        /*l2CacheHint=*/Value(), NVVM::TMALoadMode::TILE, /*isCTAOnly=*/false,
        /*group=*/NVVM::CTAGroupKindAttr(), /*predicate=*/Value());
  }
  return success();
}

struct AsyncCopyLowering : public BoundPattern<fagpu::AsyncCopyOp> {
  using BoundPattern::BoundPattern;
  LogicalResult
  matchAndRewrite(fagpu::AsyncCopyOp op, OpAdaptor adaptor,
                  ConversionPatternRewriter &rewriter) const override {
    if (op.getBulk()) {
      if (failed(issueBulkCopy(op, adaptor, rewriter, binding)))
        return failure();
      rewriter.replaceOpWithMultiple(op, {ValueRange{}});
      return success();
    }
    if (Value predicate = adaptor.getPredicate()) {
      auto ifOp = scf::IfOp::create(rewriter, op.getLoc(), predicate,
                                    /*withElseRegion=*/false);
      OpBuilder::InsertionGuard guard(rewriter);
      rewriter.setInsertionPointToStart(ifOp.thenBlock());
      if (failed(issueCopy(op, adaptor, rewriter, binding, adaptor.getDest())))
        return failure();
    } else if (failed(issueCopy(op, adaptor, rewriter, binding,
                                adaptor.getDest()))) {
      return failure();
    }
    // Each thread's copies arrive on the barrier once they land (noinc:
    // the barrier's arrivals count them).
    if (Value barriers = adaptor.getBarriers())
      NVVM::CpAsyncMBarrierArriveOp::create(
          rewriter, op.getLoc(),
          barrierAt(rewriter, op.getLoc(), barriers, adaptor.getBarrierStage()),
          /*noinc=*/true);
    rewriter.replaceOpWithMultiple(op, {ValueRange{}});
    return success();
  }
};

/// Thread 0 initializes each barrier of the ring; the CTA barrier the IR
/// has after the allocation publishes them.
struct AllocBarriersLowering : public BoundPattern<fagpu::AllocBarriersOp> {
  using BoundPattern::BoundPattern;
  LogicalResult
  matchAndRewrite(fagpu::AllocBarriersOp op, OpAdaptor,
                  ConversionPatternRewriter &rewriter) const override {
    Location loc = op.getLoc();
    KernelBuilder kb(rewriter, loc, rewriter.getF16Type(), 0);
    Value ring = kb.smemAt(binding.smem, kb.c32(op.getOffset()));
    {
      OpBuilder::InsertionGuard guard(rewriter);
      kb.enterThread(0);
      Value arrivals = kb.c32(op.getArrivals());
      for (int64_t i = 0; i < op.getType().getStages(); ++i)
        NVVM::MBarrierInitOp::create(
            rewriter, loc, i ? kb.smemAt(ring, kb.c32(8 * i)) : ring, arrivals,
            /*predicate=*/Value());
    }
    rewriter.replaceOp(op, ring);
    return success();
  }
};

/// mbarrier.try_wait.parity until the phase completes; a consumer's wait
/// also fences the generic proxy's writes it acquired (cp.async's) to
/// wgmma's reads.
struct BarrierWaitLowering : public BoundPattern<fagpu::BarrierWaitOp> {
  using BoundPattern::BoundPattern;
  LogicalResult
  matchAndRewrite(fagpu::BarrierWaitOp op, OpAdaptor adaptor,
                  ConversionPatternRewriter &rewriter) const override {
    Location loc = op.getLoc();
    Value barrier =
        barrierAt(rewriter, loc, adaptor.getBarriers(), adaptor.getStage());
    // The suspend-time hint CUTLASS uses (ns).
    Value ticks = arith::ConstantIntOp::create(rewriter, loc, 0x989680, 32);
    NVVM::MBarrierTryWaitParityOp::create(
        rewriter, loc, barrier, toI32(rewriter, loc, adaptor.getParity()),
        ticks);
    if (!binding.producerOps.contains(op) &&
        !binding.unfencedWaits.contains(op))
      fenceToAsyncProxy(rewriter, loc, binding);
    rewriter.eraseOp(op);
    return success();
  }
};

struct BarrierArriveLowering
    : public OpConversionPattern<fagpu::BarrierArriveOp> {
  using OpConversionPattern::OpConversionPattern;
  LogicalResult
  matchAndRewrite(fagpu::BarrierArriveOp op, OpAdaptor adaptor,
                  ConversionPatternRewriter &rewriter) const override {
    Location loc = op.getLoc();
    KernelBuilder kb(rewriter, loc, rewriter.getF16Type(), 0);
    // The warpgroup's thread 0 arrives (predicated: a persistent kernel's
    // item loop holds these); per warp, each warp's lane 0 once the warp's
    // lanes are past their reads.
    bool perWarp = op.getPerWarp();
    if (perWarp)
      NVVM::SyncWarpOp::create(rewriter, loc, kb.c32(-1));
    Value lane =
        kb.andi(NVVM::ThreadIdXOp::create(rewriter, loc, rewriter.getI32Type()),
                perWarp ? 31 : 127);
    kb.ptxIf(
        kb.cmp(arith::CmpIPredicate::eq, lane, kb.c32(0)),
        "mbarrier.arrive.shared.b64 _, [$1];", "l",
        barrierAt(rewriter, loc, adaptor.getBarriers(), adaptor.getStage()));
    rewriter.eraseOp(op);
    return success();
  }
};

/// Consumer warpgroup w's turns are named barrier 1 + w, of 256 threads:
/// its own 128 sync there, the previous warpgroup's 128 arrive.
Value turnBarrier(KernelBuilder &kb, Value warpgroup) {
  return kb.add(warpgroup, kb.c32(1));
}

Value consumerWarpgroup(KernelBuilder &kb, OpBuilder &b, Location loc) {
  Value tid = NVVM::ThreadIdXOp::create(b, loc, b.getI32Type());
  return kb.shr(tid, 7);
}

/// `then` under `cond` where `cond` is given.
template <typename Fn>
void guarded(OpBuilder &b, Location loc, Value cond, Fn then) {
  OpBuilder::InsertionGuard guard(b);
  if (cond) {
    auto ifOp = scf::IfOp::create(b, loc, cond, /*withElse=*/false);
    b.setInsertionPointToStart(ifOp.thenBlock());
  }
  then();
}

struct TakeTurnLowering : public OpConversionPattern<fagpu::TakeTurnOp> {
  using OpConversionPattern::OpConversionPattern;
  LogicalResult
  matchAndRewrite(fagpu::TakeTurnOp op, OpAdaptor,
                  ConversionPatternRewriter &rewriter) const override {
    Location loc = op.getLoc();
    KernelBuilder kb(rewriter, loc, rewriter.getF16Type(), 0);
    Value wg = consumerWarpgroup(kb, rewriter, loc);
    // Warpgroup 0's first turn is its own; the end is warpgroup 0's alone.
    Value cond;
    if (op.getFirst() || op.getEnd())
      cond = arith::CmpIOp::create(rewriter, loc,
                                   op.getFirst() ? arith::CmpIPredicate::ne
                                                 : arith::CmpIPredicate::eq,
                                   wg, kb.c32(0));
    guarded(rewriter, loc, cond, [&] {
      NVVM::BarrierOp::create(rewriter, loc, TypeRange{}, turnBarrier(kb, wg),
                              kb.c32(256), {}, Value());
    });
    rewriter.eraseOp(op);
    return success();
  }
};

struct PassTurnLowering : public OpConversionPattern<fagpu::PassTurnOp> {
  using OpConversionPattern::OpConversionPattern;
  LogicalResult
  matchAndRewrite(fagpu::PassTurnOp op, OpAdaptor,
                  ConversionPatternRewriter &rewriter) const override {
    Location loc = op.getLoc();
    KernelBuilder kb(rewriter, loc, rewriter.getF16Type(), 0);
    int64_t warpgroups = op.getWarpgroups();
    Value wg = consumerWarpgroup(kb, rewriter, loc);
    Value last = arith::CmpIOp::create(rewriter, loc, arith::CmpIPredicate::eq,
                                       wg, kb.c32(warpgroups - 1));
    // The last warpgroup's last pass would never be taken; the start is
    // the last warpgroup's alone.
    Value cond = op.getLast()
                     ? arith::XOrIOp::create(
                           rewriter, loc, last,
                           arith::ConstantIntOp::create(rewriter, loc, 1, 1))
                           .getResult()
                 : op.getStart() ? last
                                 : Value();
    guarded(rewriter, loc, cond, [&] {
      Value next = arith::SelectOp::create(rewriter, loc, last, kb.c32(0),
                                           kb.add(wg, kb.c32(1)));
      NVVM::BarrierArriveOp::create(rewriter, loc, turnBarrier(kb, next),
                                    kb.c32(256));
    });
    rewriter.eraseOp(op);
    return success();
  }
};

/// A synchronous copy: everyone is done with the stage, the copy lands, and
/// everyone sees it.
struct CopyLowering : public BoundPattern<fagpu::CopyOp> {
  using BoundPattern::BoundPattern;
  LogicalResult
  matchAndRewrite(fagpu::CopyOp op, OpAdaptor adaptor,
                  ConversionPatternRewriter &rewriter) const override {
    Location loc = op.getLoc();
    NVVM::Barrier0Op::create(rewriter, loc);
    if (failed(issueCopy(op, adaptor, rewriter, binding, adaptor.getDest())))
      return failure();
    NVVM::CpAsyncCommitGroupOp::create(rewriter, loc);
    NVVM::CpAsyncWaitGroupOp::create(rewriter, loc, 0);
    fenceToAsyncProxy(rewriter, loc, binding);
    NVVM::Barrier0Op::create(rewriter, loc);
    rewriter.eraseOp(op);
    return success();
  }
};

struct AsyncCommitLowering : public OpConversionPattern<fagpu::AsyncCommitOp> {
  using OpConversionPattern::OpConversionPattern;
  LogicalResult
  matchAndRewrite(fagpu::AsyncCommitOp op, OneToNOpAdaptor,
                  ConversionPatternRewriter &rewriter) const override {
    NVVM::CpAsyncCommitGroupOp::create(rewriter, op.getLoc());
    rewriter.replaceOpWithMultiple(op, {ValueRange{}});
    return success();
  }
};

struct AsyncWaitLowering : public BoundPattern<fagpu::AsyncWaitOp> {
  using BoundPattern::BoundPattern;
  LogicalResult
  matchAndRewrite(fagpu::AsyncWaitOp op, OneToNOpAdaptor,
                  ConversionPatternRewriter &rewriter) const override {
    NVVM::CpAsyncWaitGroupOp::create(rewriter, op.getLoc(), op.getPending());
    fenceToAsyncProxy(rewriter, op.getLoc(), binding);
    rewriter.eraseOp(op);
    return success();
  }
};

struct BarrierLowering : public OpConversionPattern<gpu::BarrierOp> {
  using OpConversionPattern::OpConversionPattern;
  LogicalResult
  matchAndRewrite(gpu::BarrierOp op, OpAdaptor,
                  ConversionPatternRewriter &rewriter) const override {
    rewriter.replaceOpWithNewOp<NVVM::Barrier0Op>(op);
    return success();
  }
};

} // namespace

void mlir::fa::nvvm::populateFAGPUCopyToNVVMPatterns(
    const TypeConverter &converter, const KernelBinding &binding,
    RewritePatternSet &patterns) {
  MLIRContext *ctx = patterns.getContext();
  patterns.add<AllocSharedLowering, AsyncCopyLowering, CopyLowering,
               AsyncWaitLowering, AllocBarriersLowering, BarrierWaitLowering>(
      converter, ctx, binding);
  patterns.add<AsyncCommitLowering, BarrierLowering, BarrierArriveLowering,
               TakeTurnLowering, PassTurnLowering>(converter, ctx);
}
