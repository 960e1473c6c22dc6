//===- TileGpu.cpp - fa-tile's GPU flavour --------------------------------===//
//
// An outlined forward kernel (fa-fuse's gpu.func holding one fa.attention)
// becomes its CTA's program in the kernel-level IR: the CTA's (batch, head,
// query tile), the Q tile and each K/V tile copied into shared memory
// (synchronously: fa-async-copy makes the copies asynchronous and rings the
// buffers), S = Q K^T and O += P V on tensor cores, the variant's masks on
// the tiles that cross a mask edge, the softmax in the log2 domain on the
// accumulator fragments as two passes over the K/V tiles (row max, then row
// sum and P V: fa-online-softmax fuses them, as on the host), and the
// epilogue (O / l, lse).
//
//===----------------------------------------------------------------------===//

#include "fa/Dialect/FAGPU/IR/FAGPU.h"
#include "fa/Transforms/Builders.h"
#include "fa/Transforms/GpuKernels.h"
#include "fa/Transforms/Passes.h"
#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Bufferization/IR/Bufferization.h"
#include "mlir/Dialect/Math/IR/Math.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/IR/Builders.h"

#include <cmath>
#include <limits>

using namespace mlir;
using namespace mlir::fa;

namespace {

class KernelTiler {
public:
  KernelTiler(gpu::GPUFuncOp kernel, AttentionOp op, int64_t blockQ,
              int64_t blockKV)
      : b(kernel.getContext()), loc(op.getLoc()), kernel(kernel), op(op),
        blockQ(blockQ), blockKV(blockKV), wgmma(kernel->hasAttr(kWgmmaAttr)),
        headD(op.getQuery().getType().getDimSize(3)),
        headDv(op.getValue().getType().getDimSize(3)),
        d(getForwardTileCols(headD, wgmma)),
        dv(getForwardTileCols(headDv, wgmma)), et(op.getElementType()),
        f32(b.getF32Type()) {
    MLIRContext *ctx = b.getContext();
    // fa-fuse's threads per CTA.
    DenseI32ArrayAttr block = kernel.getKnownBlockSizeAttr();
    unsigned warps = (block ? block[0] : kForwardThreads) / 32;
    acc = fagpu::AccLayoutAttr::get(ctx, warps);
    operand = fagpu::OperandLayoutAttr::get(ctx, warps);
    rows = fagpu::RowsLayoutAttr::get(ctx, warps, /*partial=*/false);
    partial = fagpu::RowsLayoutAttr::get(ctx, warps, /*partial=*/true);
  }
  void build();

private:
  Value index(int64_t v) { return arith::ConstantIndexOp::create(b, loc, v); }
  /// fa-fuse's head group of a causal kernel (fagpu.block_coords).
  IntegerAttr headGroup() {
    return op.getCausalAttr()
               ? kernel->getAttrOfType<IntegerAttr>(kHeadGroupAttr)
               : IntegerAttr();
  }
  RankedTensorType tile(int64_t cols, Attribute layout, Type type = {}) {
    return RankedTensorType::get({blockQ, cols}, type ? type : f32, layout);
  }
  RankedTensorType rowsType(Attribute layout, Type type = {}) {
    return RankedTensorType::get({blockQ}, type ? type : f32, layout);
  }
  Value splat(RankedTensorType type, double value) {
    return arith::ConstantOp::create(
        b, loc, DenseElementsAttr::get(type, b.getFloatAttr(f32, value)));
  }

  OpBuilder b;
  Location loc;
  gpu::GPUFuncOp kernel;
  AttentionOp op;
  int64_t blockQ, blockKV;
  /// Warpgroup MMAs reading every tile from shared memory (fa.wgmma).
  bool wgmma;
  /// Head dims of Q and K, and of V and O.
  int64_t headD, headDv;
  /// Their shared tiles' columns (getForwardTileCols: with wgmma, zero
  /// columns past the head dim, which S skips and P V does not compute).
  int64_t d, dv;
  Type et, f32;
  Attribute acc, operand, rows, partial;
};

void KernelTiler::build() {
  Block &entry = kernel.getBody().front();
  Value q = entry.getArgument(0), k = entry.getArgument(1),
        v = entry.getArgument(2), o = entry.getArgument(3);
  Value lse = op.getLse() ? entry.getArgument(4) : Value();
  // Each argument's role in the kernel's ABI; the bias, slopes and
  // captures are the buffers their tensors were read from.
  auto bufferOf = [](Value tensor) -> Value {
    auto read = tensor ? tensor.getDefiningOp<bufferization::ToTensorOp>()
                       : bufferization::ToTensorOp();
    return read ? read.getBuffer() : Value();
  };
  Value bias = bufferOf(op.getBias()), slopes = bufferOf(op.getAlibiSlopes());
  SmallVector<Value> captureBuffers;
  for (Value capture : op.getCaptures())
    captureBuffers.push_back(bufferOf(capture));
  auto setRole = [&](Value buffer, StringRef role) {
    auto arg = cast<BlockArgument>(buffer);
    kernel.setArgAttr(arg.getArgNumber(), kAbiRoleAttrName,
                      b.getStringAttr(role));
  };
  setRole(q, "q");
  setRole(k, "k");
  setRole(v, "v");
  setRole(o, "o");
  if (lse)
    setRole(lse, "lse");
  if (bias)
    setRole(bias, "bias");
  if (slopes)
    setRole(slopes, "slopes");
  for (auto [i, buffer] : llvm::enumerate(captureBuffers))
    setRole(buffer, ("capture" + Twine(i)).str());
  // fa-key-ranges' bounds of the key loop (its role is set).
  Value keyRanges = getArgumentWithRole(kernel, "key_ranges");
  // Dropout's seed: an i64 argument.
  Value seed = op.getDropoutSeed();
  double dropoutP = seed ? op.getDropoutPAttr().getValueAsDouble() : 0.0;
  if (seed)
    setRole(seed, "seed");
  // The outlined op and its buffer traffic go; the CTA's program replaces
  // them.
  SmallVector<Operation *> old;
  for (Operation &inner : llvm::reverse(entry))
    old.push_back(&inner);
  b.setInsertionPointToEnd(&entry);
  CausalKindAttr causal = op.getCausalAttr();
  DenseI64ArrayAttr window = op.getWindowAttr();
  double negInf = -std::numeric_limits<double>::infinity();
  // The variant's score terms (softcap, score_mod, mask_mod) as the host
  // route defines them (buildScore), on every tile; its causal and window
  // masks are fagpu.mask's, on the tiles that cross an edge. Without terms
  // the scale folds into the softmax's exponent.
  ScoreVariant variant = ScoreVariant::get(op, op.getScaleOrDefault());
  variant.causal = {};
  variant.window = {};
  // With key ranges the mask_mod is a mask too: only on the tiles outside
  // the run where it keeps every key (fagpu.full_keys).
  Region *maskMod = nullptr;
  if (keyRanges)
    std::swap(maskMod, variant.maskMod);
  bool scored =
      variant.softcap || variant.scoreMod || variant.maskMod || bias || slopes;
  double scaleLog2 = (scored ? 1.0 : op.getScaleOrDefault()) * M_LOG2E;
  // wgmma reads Q from shared memory as the tensor cores need it: no
  // registers for its fragments.
  bool qInRegisters = !wgmma && (blockQ / 64) * d <= 128;

  Type idx = b.getIndexType();
  Value c0 = index(0), c2 = index(2), cBlockQ = index(blockQ),
        cBlockKV = index(blockKV);
  // A bias broadcast over the batch is read by the batch's CTAs of a
  // (head, tile) together: from memory once, from L2 by the others.
  auto biasType = bias ? cast<MemRefType>(bias.getType()) : MemRefType();
  bool batchFastest = biasType && biasType.getDimSize(0) == 1 &&
                      op.getQuery().getType().getDimSize(0) != 1;
  IntegerAttr group = batchFastest ? IntegerAttr() : headGroup();
  auto coords = fagpu::BlockCoordsOp::create(
      b, loc, idx, idx, idx, Value(), Value(),
      /*heavy_first=*/!!causal, /*paired=*/false, /*sorted_tail=*/false,
      /*rematerialize=*/false, group, batchFastest);
  Value batch = coords.getBatch(), head = coords.getHead();
  Value headKV = fagpu::KVHeadOp::create(b, loc, idx, head, q, k);
  Value q0 = arith::MulIOp::create(b, loc, coords.getTile(), cBlockQ);
  Value nq = memref::DimOp::create(b, loc, q, c2);
  Value nk = memref::DimOp::create(b, loc, k, c2);
  // The regions read the captures as tensors.
  variant.captures.clear();
  for (Value buffer : captureBuffers)
    variant.captures.push_back(bufferization::ToTensorOp::create(
        b, loc, memref::getTensorTypeFromMemRefType(buffer.getType()), buffer,
        /*restrict=*/true));
  // A dim of static size 1 broadcasts: index 0.
  auto broadcastIndex = [&](Value buffer, unsigned dim, Value index) {
    return cast<MemRefType>(buffer.getType()).getDimSize(dim) == 1 ? c0 : index;
  };
  // ALiBi's slope of this head: [Hq] or [B, Hq].
  Value slope;
  if (slopes) {
    SmallVector<Value> at;
    if (cast<MemRefType>(slopes.getType()).getRank() == 2)
      at.push_back(broadcastIndex(slopes, 0, batch));
    at.push_back(head);
    slope = memref::LoadOp::create(b, loc, slopes, at);
  }

  // Shared memory: the Q tile, then one K and one V tile (fa-async-copy
  // makes rings of them).
  auto sharedType = [&](int64_t rowsOf, int64_t cols) {
    return fagpu::SharedType::get(b.getContext(), {1, rowsOf, cols}, et, wgmma);
  };
  int64_t qBytes = blockQ * d * 2, kBytes = blockKV * d * 2;
  Value sQ = fagpu::AllocSharedOp::create(b, loc, sharedType(blockQ, d), 0);
  Value sK =
      fagpu::AllocSharedOp::create(b, loc, sharedType(blockKV, d), qBytes);
  Value sV = fagpu::AllocSharedOp::create(b, loc, sharedType(blockKV, dv),
                                          qBytes + kBytes);
  fagpu::CopyOp::create(b, loc, q, batch, head, q0, nq, sQ, c0);
  // Q's A fragments stay in registers where they fit (up to 32 of them),
  // else S reads them from shared memory per k-step.
  Value qA = sQ;
  if (qInRegisters)
    qA = fagpu::LoadOperandOp::create(b, loc, tile(d, operand, et), sQ, c0);
  auto keys = fagpu::VisibleKeysOp::create(
      b, loc, idx, idx, q0, nq, nk, keyRanges, blockQ, blockKV, causal, window);
  fagpu::FullKeysOp full;
  if (maskMod)
    full = fagpu::FullKeysOp::create(b, loc, idx, idx, q0, keyRanges, blockQ);

  RankedTensorType accS = tile(blockKV, acc), accO = tile(headDv, acc);
  RankedTensorType rowT = rowsType(rows), partialT = rowsType(partial);
  Value ninf = splat(rowT, negInf), zeroRows = splat(rowT, 0.0);
  Value scaleRows = splat(rowT, scaleLog2), scaleTile = splat(accS, scaleLog2);
  // One K/V tile's scores (and its copies): the dot products, the score
  // terms, then the masks. Marked for fa-online-softmax, which fuses the
  // two loops below on it.
  auto scoreTile = [&](Value kv0, bool withV) -> Value {
    fagpu::CopyOp::create(b, loc, k, batch, headKV, kv0, nk, sK, c0);
    if (withV)
      fagpu::CopyOp::create(b, loc, v, batch, headKV, kv0, nk, sV, c0);
    // With wgmma's padded tiles, S sums over the head dim only.
    Value s = fagpu::MmaOp::create(
        b, loc, accS, qA, sK, c0, Value(), /*b_transposed=*/true, wgmma,
        /*async=*/false,
        headD < d ? b.getI64IntegerAttr(headD) : IntegerAttr());
    if (scored) {
      auto map = fagpu::MapOp::create(b, loc, accS, ValueRange{s}, q0, kv0);
      OpBuilder::InsertionGuard guard(b);
      Block &body = map.getBody().front();
      b.setInsertionPointToStart(&body);
      Value trueI = body.getArgument(1), trueJ = body.getArgument(2);
      Value i = trueI, j = trueJ;
      if (bias || !captureBuffers.empty())
        std::tie(i, j) = clampPositions(b, loc, i, j, nq, nk);
      // The bottom-right row only for ALiBi (causal and window are the
      // kernel's masks here): a body of the score alone then reads no
      // position (fagpu.map's isElementwise).
      ScorePositions pos{batch, head, i, j, Value()};
      if (slope)
        pos.queryAligned = arith::AddIOp::create(
            b, loc, i, arith::SubIOp::create(b, loc, nk, nq));
      Value biasValue;
      if (bias)
        biasValue = memref::LoadOp::create(
            b, loc, bias,
            ValueRange{broadcastIndex(bias, 0, batch),
                       broadcastIndex(bias, 1, head),
                       broadcastIndex(bias, 2, i), broadcastIndex(bias, 3, j)});
      Value x = buildScore(b, loc, variant, body.getArgument(0), biasValue,
                           slope, pos);
      fagpu::YieldOp::create(b, loc, x);
      if (i != trueI)
        unclampArithmetic(body, {{i, trueI}, {j, trueJ}});
      // The score_mod's products and sums may fuse (one fma, as CUDA and
      // Triton contract by default).
      body.walk([](arith::ArithFastMathInterface op) {
        if (isa<arith::AddFOp, arith::SubFOp, arith::MulFOp>(op))
          op->setAttr("fastmath", arith::FastMathFlagsAttr::get(
                                      op->getContext(),
                                      op.getFastMathFlagsAttr().getValue() |
                                          arith::FastMathFlags::contract));
      });
      s = map.getResult();
    }
    // Masks (keys past Nk, causal, window) only on tiles that cross an
    // edge, and the mask_mod with key ranges only outside its full run:
    // the test is the same for the whole CTA.
    Value cut =
        fagpu::TileNeedsMaskOp::create(b, loc, b.getI1Type(), q0, kv0, nq, nk,
                                       blockQ, blockKV, causal, window);
    if (maskMod) {
      auto cmp = [&](arith::CmpIPredicate pred, Value x, Value y) -> Value {
        return arith::CmpIOp::create(b, loc, pred, x, y);
      };
      Value outside = arith::OrIOp::create(
          b, loc, cmp(arith::CmpIPredicate::ult, kv0, full.getBegin()),
          cmp(arith::CmpIPredicate::ugt,
              arith::AddIOp::create(b, loc, kv0, cBlockKV), full.getEnd()));
      cut = arith::OrIOp::create(b, loc, cut, outside);
    }
    auto masked = scf::IfOp::create(b, loc, accS, cut, /*withElse=*/true);
    OpBuilder::InsertionGuard guard(b);
    b.setInsertionPointToStart(masked.thenBlock());
    Value x =
        fagpu::MaskOp::create(b, loc, accS, s, q0, kv0, nq, nk, causal, window);
    if (maskMod) {
      auto map = fagpu::MapOp::create(b, loc, accS, ValueRange{x}, q0, kv0);
      OpBuilder::InsertionGuard guard(b);
      Block &body = map.getBody().front();
      b.setInsertionPointToStart(&body);
      auto [i, j] = clampPositions(b, loc, body.getArgument(1),
                                   body.getArgument(2), nq, nk);
      SmallVector<Value> args = {batch, head, i, j};
      llvm::append_range(args, variant.captures);
      Value keep = inlineVariantRegion(b, *maskMod, args);
      fagpu::YieldOp::create(
          b, loc,
          arith::SelectOp::create(
              b, loc, keep, body.getArgument(0),
              arith::ConstantOp::create(b, loc, b.getF32FloatAttr(negInf))));
      x = map.getResult();
    }
    scf::YieldOp::create(b, loc, x);
    b.setInsertionPointToStart(masked.elseBlock());
    scf::YieldOp::create(b, loc, s);
    masked->setAttr(kSoftmaxScoresAttr, b.getUnitAttr());
    return masked.getResult(0);
  };

  // The softmax in two passes over the K/V tiles, in the log2 domain:
  // m = max_j c s (the scale c is positive, so it commutes with max), then
  // p = exp2(c s - m) as one fma, l = sum_j p and acc = sum_j p V.
  auto maxLoop = scf::ForOp::create(
      b, loc, keys.getBegin(), keys.getEnd(), cBlockKV, ValueRange{ninf},
      [&](OpBuilder &, Location, Value kv0, ValueRange iters) {
        Value s = scoreTile(kv0, /*withV=*/false);
        Value tileMax = fagpu::ReduceRowsOp::create(b, loc, rowT,
                                                    fagpu::ReduceKind::Max, s);
        tileMax = arith::MulFOp::create(b, loc, tileMax, scaleRows);
        Value mNew = arith::MaximumFOp::create(b, loc, iters[0], tileMax);
        scf::YieldOp::create(b, loc, mNew);
      });
  maxLoop->setAttr(kRowMaxLoopAttr, b.getStringAttr("exp2"));
  Value rowMax = maxLoop.getResult(0);
  Value inits[] = {splat(partialT, 0.0), splat(accO, 0.0)};
  auto loop = scf::ForOp::create(
      b, loc, keys.getBegin(), keys.getEnd(), cBlockKV, inits,
      [&](OpBuilder &, Location, Value kv0, ValueRange iters) {
        Value l = iters[0], accIn = iters[1];
        Value s = scoreTile(kv0, /*withV=*/true);
        // A row fully masked so far has m = -inf: use 0, p = 0.
        Value none = arith::CmpFOp::create(b, loc, arith::CmpFPredicate::OEQ,
                                           rowMax, ninf);
        Value mSafe = arith::SelectOp::create(b, loc, none, zeroRows, rowMax);
        Value negM = arith::NegFOp::create(
            b, loc, fagpu::BroadcastRowsOp::create(b, loc, accS, mSafe));
        Value p = math::Exp2Op::create(
            b, loc, math::FmaOp::create(b, loc, s, scaleTile, negM));
        Value lNew =
            fagpu::UpdateRowSumOp::create(b, loc, partialT, l, p, TypeAttr());
        // Dropout after the row sum (l is undropped), before P is rounded
        // for P V: Philox on (j, i, h, b). Kept values stay 1; the epilogue
        // applies 1 / (1 - p) in f32.
        if (seed) {
          auto map = fagpu::MapOp::create(b, loc, accS, ValueRange{p}, q0, kv0);
          OpBuilder::InsertionGuard guard(b);
          Block &body = map.getBody().front();
          b.setInsertionPointToStart(&body);
          auto word = [&](Value position) -> Value {
            return arith::IndexCastUIOp::create(b, loc, b.getI32Type(),
                                                position);
          };
          Value keep = buildPhiloxDropout(b, loc, seed, dropoutP,
                                          {word(body.getArgument(2)),
                                           word(body.getArgument(1)),
                                           word(head), word(batch)},
                                          /*scaled=*/false);
          fagpu::YieldOp::create(
              b, loc, arith::MulFOp::create(b, loc, body.getArgument(0), keep));
          p = map.getResult();
        }
        Value pA =
            fagpu::ToOperandOp::create(b, loc, tile(blockKV, operand, et), p);
        Value accOut = fagpu::MmaOp::create(b, loc, accO, pA, sV, c0, accIn,
                                            /*b_transposed=*/false, wgmma,
                                            /*async=*/false, /*depth=*/nullptr);
        scf::YieldOp::create(b, loc, ValueRange{lNew, accOut});
      });
  loop->setAttr(kRowSumLoopAttr, b.getUnitAttr());

  // O = acc / l (0 for an empty row), times dropout's 1 / (1 - p); lse =
  // (m + log2 l) ln 2 (-inf there).
  // The CTA's place is read again: the prologue's would stay live across
  // the loop.
  auto again = fagpu::BlockCoordsOp::create(
      b, loc, idx, idx, idx, Value(), Value(),
      /*heavy_first=*/!!causal, /*paired=*/false, /*sorted_tail=*/false,
      /*rematerialize=*/true, coords.getHeadGroupAttr(), batchFastest);
  Value row0 = arith::MulIOp::create(b, loc, again.getTile(), cBlockQ);
  Value l = fagpu::ReduceRowsOp::create(b, loc, rowT, fagpu::ReduceKind::Sum,
                                        loop.getResult(0));
  Value empty =
      arith::CmpFOp::create(b, loc, arith::CmpFPredicate::OEQ, l, zeroRows);
  Value inv = arith::SelectOp::create(
      b, loc, empty, zeroRows,
      arith::DivFOp::create(b, loc, splat(rowT, 1.0 / (1.0 - dropoutP)), l));
  Value out =
      arith::MulFOp::create(b, loc, loop.getResult(1),
                            fagpu::BroadcastRowsOp::create(b, loc, accO, inv));
  fagpu::StoreOp::create(b, loc, out, o, again.getBatch(), again.getHead(),
                         row0, nq);
  if (lse) {
    Value log2l = math::Log2Op::create(b, loc, l);
    Value value = arith::MulFOp::create(
        b, loc, arith::AddFOp::create(b, loc, rowMax, log2l),
        splat(rowT, M_LN2));
    value = arith::SelectOp::create(b, loc, empty, ninf, value);
    fagpu::StoreOp::create(b, loc, value, lse, again.getBatch(),
                           again.getHead(), row0, nq);
  }
  gpu::ReturnOp::create(b, loc);
  for (Operation *inner : old)
    inner->erase();
}

/// Whether `op` reads Q, K and V from the kernel's arguments 0-2 and stores O
/// and lse into 3 and 4 (fa-fuse's bufferization.to_tensor and
/// materialize_in_destination), and reads its other operands (the bias,
/// slopes and captures, the seed) from arguments too: each has a role in
/// the ABI.
bool isOutlinedAsFuse(gpu::GPUFuncOp kernel, AttentionOp op) {
  Block &entry = kernel.getBody().front();
  auto argument = [&](Value value) -> int64_t {
    if (auto read = value.getDefiningOp<bufferization::ToTensorOp>())
      value = read.getBuffer();
    auto arg = dyn_cast<BlockArgument>(value);
    return arg && arg.getOwner() == &entry ? int64_t(arg.getArgNumber()) : -1;
  };
  auto storedTo = [&](Value result) -> int64_t {
    if (!result.hasOneUse())
      return -1;
    auto store = dyn_cast<bufferization::MaterializeInDestinationOp>(
        *result.user_begin());
    return store ? argument(store.getDest()) : -1;
  };
  auto isArgument = [&](Value value) { return !value || argument(value) >= 0; };
  return argument(op.getQuery()) == 0 && argument(op.getKey()) == 1 &&
         argument(op.getValue()) == 2 && storedTo(op.getOutput()) == 3 &&
         (!op.getLse() || storedTo(op.getLse()) == 4) &&
         isArgument(op.getBias()) && isArgument(op.getAlibiSlopes()) &&
         isArgument(op.getDropoutSeed()) &&
         llvm::all_of(op.getCaptures(), isArgument);
}

} // namespace

LogicalResult mlir::fa::tileForwardKernel(gpu::GPUFuncOp kernel) {
  AttentionOp op = getOutlinedAttention(kernel);
  // An op the GPU does not support is left to convert-fa-to-nvvm, which
  // names the reason.
  if (!op || !unsupportedForwardReason(op).empty())
    return success();
  auto blockQ = kernel->getAttrOfType<IntegerAttr>(kBlockQAttr);
  auto blockKV = kernel->getAttrOfType<IntegerAttr>(kBlockKVAttr);
  if (!blockQ || !blockKV)
    return kernel.emitOpError("fa-tile: the kernel has no '")
           << kBlockQAttr << "' and '" << kBlockKVAttr
           << "' (outline it with fa-fuse)";
  if (std::string why = unsupportedTileReason(
          blockQ.getInt(), blockKV.getInt(),
          kernel->hasAttr(kWgmmaAttr) && kernel->hasAttr(kWarpSpecializeAttr));
      !why.empty())
    return kernel.emitOpError("fa-tile: ") << why;
  if (!isOutlinedAsFuse(kernel, op))
    return op.emitOpError(
        "fa-tile: the kernel's fa.attention must read its operands from the "
        "kernel's arguments and store its results into them (Q, K, V, O and "
        "lse first, as fa-fuse outlines it)");
  // The variant's default K/V stages, for fa-async-copy (whose option
  // overrides it).
  if (!kernel->hasAttr(kKVStagesAttr))
    kernel->setAttr(kKVStagesAttr,
                    Builder(kernel.getContext())
                        .getI64IntegerAttr(defaultKVStages(
                            op, blockQ.getInt(), blockKV.getInt(),
                            kernel->hasAttr(kWgmmaAttr),
                            kernel->hasAttr(kWarpSpecializeAttr))));
  KernelTiler(kernel, op, blockQ.getInt(), blockKV.getInt()).build();
  return success();
}
