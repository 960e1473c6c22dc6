//===- KeyRanges.cpp - Bound the forward's key loop by its mask_mod -------===//
//--------===//
//
// A mask_mod such as a document mask hides most K/V tiles of a query tile,
// yet the forward visits every tile the causal and window masks leave. Where
// the mask_mod reads neither b nor h, its visible key tiles are the same for
// every (batch, head): a small key-range kernel finds them once per query
// tile before the forward, which then loops only over them
// (fagpu.visible_keys ... within). Its CTAs each take a query tile and a
// chunk of keys (a CTA a query tile walking every key tile was 12-23% of a
// document mask's forward) and merge their ranges with atomics. Layout:
// KernelAbi.h, "Key ranges".
//
//===----------------------------------------------------------------------===//

#include "fa/Dialect/FAGPU/IR/FAGPU.h"
#include "fa/Transforms/Builders.h"
#include "fa/Transforms/GpuKernels.h"
#include "fa/Transforms/Passes.h"
#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Bufferization/IR/Bufferization.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"
#include "mlir/IR/Builders.h"
#include "mlir/IR/SymbolTable.h"

namespace mlir::fa {
#define GEN_PASS_DEF_FAKEYRANGES
#include "fa/Transforms/Passes.h.inc"
} // namespace mlir::fa

using namespace mlir;
using namespace mlir::fa;
using ::fa::runtime::kKeyRangeBlock;
using ::fa::runtime::kKeyRangeChunk;
using ::fa::runtime::kKeyRangeInts;
using ::fa::runtime::kKeyRangeWarps;

namespace {

/// The key-range kernel of `forward` (reading `op`'s mask_mod), whose
/// arguments are the forward's Q, K, V, O (for their sizes), the key
/// ranges, then the captures (`captureArgs`, the forward's arguments).
gpu::GPUFuncOp buildKeyRangeKernel(gpu::GPUFuncOp forward, AttentionOp op,
                                   ArrayRef<unsigned> captureArgs,
                                   MemRefType rangesType) {
  MLIRContext *ctx = forward.getContext();
  Location loc = op.getLoc();
  OpBuilder b(ctx);
  ArrayRef<Type> forwardArgs = forward.getArgumentTypes();
  SmallVector<Type> argTypes(forwardArgs.take_front(4));
  argTypes.push_back(rangesType);
  for (unsigned i : captureArgs)
    argTypes.push_back(forwardArgs[i]);
  auto kernel =
      gpu::GPUFuncOp::create(b, loc, forward.getName().str() + "_key_ranges",
                             b.getFunctionType(argTypes, {}));
  kernel->setAttr(gpu::GPUDialect::getKernelFuncAttrName(), b.getUnitAttr());
  kernel.setKnownBlockSizeAttr(
      b.getDenseI32ArrayAttr({int32_t(kKeyRangeWarps * 32), 1, 1}));
  int64_t blockQ = forward->getAttrOfType<IntegerAttr>(kBlockQAttr).getInt();
  kernel->setAttr(kBlockQAttr, b.getI64IntegerAttr(blockQ));
  kernel->setAttr(kKeyRangesAttr, b.getUnitAttr());
  const char *roles[] = {"q", "k", "v", "o", "key_ranges"};
  for (auto [i, role] : llvm::enumerate(roles))
    kernel.setArgAttr(i, kAbiRoleAttrName, b.getStringAttr(role));
  for (size_t i = 0; i < captureArgs.size(); ++i)
    kernel.setArgAttr(5 + i, kAbiRoleAttrName,
                      b.getStringAttr("capture" + std::to_string(i)));

  Block &entry = kernel.getBody().front();
  b.setInsertionPointToStart(&entry);
  auto index = [&](int64_t v) -> Value {
    return arith::ConstantIndexOp::create(b, loc, v);
  };
  Value q = entry.getArgument(0), k = entry.getArgument(1);
  Value ranges = entry.getArgument(4);
  Type idx = b.getIndexType(), f32 = b.getF32Type();
  auto coords = fagpu::BlockCoordsOp::create(
      b, loc, idx, idx, idx, Value(), Value(),
      /*heavy_first=*/false, /*paired=*/false, /*sorted_tail=*/false,
      /*rematerialize=*/false, IntegerAttr());
  Value tile = coords.getTile();
  Value q0 = arith::MulIOp::create(b, loc, tile, index(blockQ));
  Value nq = memref::DimOp::create(b, loc, q, index(2));
  Value nk = memref::DimOp::create(b, loc, k, index(2));
  // Only the key tiles the causal and window masks leave, of this CTA's
  // chunk.
  auto keys = fagpu::VisibleKeysOp::create(
      b, loc, idx, idx, q0, nq, nk, /*key_ranges=*/Value(), blockQ,
      kKeyRangeBlock, op.getCausalAttr(), op.getWindowAttr());
  Value chunk = fagpu::KeyChunkOp::create(b, loc, idx);
  Value chunkKeys = index(kKeyRangeChunk);
  Value chunk0 = arith::MulIOp::create(b, loc, chunk, chunkKeys);
  Value begin = arith::MaxUIOp::create(b, loc, keys.getBegin(), chunk0);
  Value end = arith::MinUIOp::create(
      b, loc, keys.getEnd(), arith::AddIOp::create(b, loc, chunk0, chunkKeys));
  SmallVector<Value> captures;
  for (size_t i = 0; i < captureArgs.size(); ++i) {
    Value buffer = entry.getArgument(5 + i);
    captures.push_back(bufferization::ToTensorOp::create(
        b, loc, memref::getTensorTypeFromMemRefType(buffer.getType()), buffer,
        /*restrict=*/true));
  }

  auto acc = fagpu::AccLayoutAttr::get(ctx, kKeyRangeWarps);
  auto rows = fagpu::RowsLayoutAttr::get(ctx, kKeyRangeWarps,
                                         /*partial=*/false);
  auto tileType = RankedTensorType::get({blockQ, kKeyRangeBlock}, f32, acc);
  auto rowsType = RankedTensorType::get({blockQ}, f32, rows);
  auto splat = [&](RankedTensorType type, double v) -> Value {
    return arith::ConstantOp::create(
        b, loc, DenseElementsAttr::get(type, b.getFloatAttr(f32, v)));
  };
  Value zeroTile = splat(tileType, 0.0), zeroRows = splat(rowsType, 0.0);
  auto constant = [&](double v) -> Value {
    return arith::ConstantOp::create(b, loc, b.getF32FloatAttr(v));
  };
  // Per row, 1 + the first and 1 + the last key tile where the mask_mod
  // keeps a key, 1 + the first and 1 + the last where it keeps every key
  // (0: none yet), and how many such full tiles there were. Tile numbers
  // below 2^23 (keys below 2^30) are exact in f32.
  Value inits[] = {zeroRows, zeroRows, zeroRows, zeroRows, zeroRows};
  auto loop = scf::ForOp::create(
      b, loc, begin, end, index(kKeyRangeBlock), inits,
      [&](OpBuilder &, Location, Value kv0, ValueRange iters) {
        Value number = arith::AddIOp::create(
            b, loc, arith::DivUIOp::create(b, loc, kv0, index(kKeyRangeBlock)),
            index(1));
        Value numberF = arith::UIToFPOp::create(
            b, loc, f32,
            arith::IndexCastUIOp::create(b, loc, b.getI32Type(), number));
        // Per key: its tile's number where the mask_mod keeps it, -1 where
        // it hides it, 0 past Nq or Nk (kept by none, hidden by none).
        auto map = fagpu::MapOp::create(b, loc, tileType, ValueRange{zeroTile},
                                        q0, kv0);
        {
          OpBuilder::InsertionGuard guard(b);
          Block &body = map.getBody().front();
          b.setInsertionPointToStart(&body);
          Value i = body.getArgument(1), j = body.getArgument(2);
          auto lt = [&](Value x, Value bound) -> Value {
            return arith::CmpIOp::create(b, loc, arith::CmpIPredicate::ult, x,
                                         bound);
          };
          Value inside = arith::AndIOp::create(b, loc, lt(i, nq), lt(j, nk));
          auto [ic, jc] = clampPositions(b, loc, i, j, nq, nk);
          SmallVector<Value> args = {index(0), index(0), ic, jc};
          llvm::append_range(args, captures);
          Value keep = inlineVariantRegion(b, op.getMaskMod(), args);
          Value seen =
              arith::SelectOp::create(b, loc, keep, numberF, constant(-1.0));
          fagpu::YieldOp::create(
              b, loc,
              arith::SelectOp::create(b, loc, inside, seen, constant(0.0)));
        }
        Value most = fagpu::ReduceRowsOp::create(
            b, loc, rowsType, fagpu::ReduceKind::Max, map.getResult());
        // Minus each row's least value (max of the negated tile; ptxas
        // folds the negation into the max).
        Value minusLeast = fagpu::ReduceRowsOp::create(
            b, loc, rowsType, fagpu::ReduceKind::Max,
            arith::NegFOp::create(b, loc, map.getResult()));
        Value seen = arith::MaximumFOp::create(b, loc, most, zeroRows);
        Value last = arith::MaximumFOp::create(b, loc, iters[1], seen);
        Value none = arith::CmpFOp::create(b, loc, arith::CmpFPredicate::OEQ,
                                           iters[0], zeroRows);
        Value first = arith::SelectOp::create(b, loc, none, seen, iters[0]);
        // A full tile: no key of the row hidden.
        Value full = arith::CmpFOp::create(b, loc, arith::CmpFPredicate::OLE,
                                           minusLeast, zeroRows);
        Value numbers = tensor::SplatOp::create(b, loc, numberF, rowsType);
        Value noFull = arith::CmpFOp::create(b, loc, arith::CmpFPredicate::OEQ,
                                             iters[2], zeroRows);
        Value fullFirst = arith::SelectOp::create(
            b, loc, arith::AndIOp::create(b, loc, full, noFull), numbers,
            iters[2]);
        Value fullLast =
            arith::SelectOp::create(b, loc, full, numbers, iters[3]);
        Value count = arith::AddFOp::create(
            b, loc, iters[4],
            arith::SelectOp::create(b, loc, full, splat(rowsType, 1.0),
                                    zeroRows));
        scf::YieldOp::create(
            b, loc, ValueRange{first, last, fullFirst, fullLast, count});
      });
  // A row's full tiles are a run when there are last - first + 1 of them;
  // else it has none (keys the forward masks one by one).
  Value fullFirst = loop.getResult(2), fullLast = loop.getResult(3);
  Value run = arith::CmpFOp::create(
      b, loc, arith::CmpFPredicate::OEQ,
      arith::AddFOp::create(b, loc,
                            arith::SubFOp::create(b, loc, fullLast, fullFirst),
                            splat(rowsType, 1.0)),
      loop.getResult(4));
  fullFirst = arith::SelectOp::create(b, loc, run, fullFirst, zeroRows);
  fullLast = arith::SelectOp::create(b, loc, run, fullLast, zeroRows);
  fagpu::MergeKeyRangeOp::create(b, loc, loop.getResult(0), loop.getResult(1),
                                 fullFirst, fullLast, ranges, tile);
  gpu::ReturnOp::create(b, loc);
  return kernel;
}

struct FAKeyRangesPass
    : public mlir::fa::impl::FAKeyRangesBase<FAKeyRangesPass> {
  using Base::Base;
  void runOnOperation() override {
    ModuleOp module = getOperation();
    SmallVector<std::pair<gpu::GPUFuncOp, AttentionOp>> forwards;
    module.walk([&](gpu::GPUFuncOp kernel) {
      AttentionOp op = getOutlinedAttention(kernel);
      // A forward that has its ranges already keeps them.
      if (op && !getArgumentWithRole(kernel, "key_ranges") &&
          hasKeyRanges(op) && unsupportedForwardReason(op).empty() &&
          kernel->hasAttr(kBlockQAttr) && kernel->hasAttr(kBlockKVAttr) &&
          kKeyRangeBlock %
                  kernel->getAttrOfType<IntegerAttr>(kBlockKVAttr).getInt() ==
              0)
        forwards.push_back({kernel, op});
    });
    for (auto [forward, op] : forwards) {
      auto kernels = forward->getParentOfType<gpu::GPUModuleOp>();
      // The forward's arguments its captures are read from (fa-fuse's).
      SmallVector<unsigned> captureArgs;
      for (Value capture : op.getCaptures()) {
        auto read = capture.getDefiningOp<bufferization::ToTensorOp>();
        auto arg =
            read ? dyn_cast<BlockArgument>(read.getBuffer()) : BlockArgument();
        if (!arg || arg.getOwner()->getParentOp() != forward) {
          op.emitOpError("fa-key-ranges: the kernel's captures must be its "
                         "arguments (outline it with fa-fuse)");
          return signalPassFailure();
        }
        captureArgs.push_back(arg.getArgNumber());
      }
      auto rangesType = MemRefType::get({ShapedType::kDynamic},
                                        IntegerType::get(&getContext(), 32));
      gpu::GPUFuncOp ranges =
          buildKeyRangeKernel(forward, op, captureArgs, rangesType);
      SymbolTable(kernels).insert(ranges, std::next(Block::iterator(forward)));
      // The forward takes the ranges last.
      unsigned rangesArg = forward.getNumArguments();
      if (failed(forward.insertArgument(rangesArg, rangesType, {},
                                        forward.getLoc())))
        return signalPassFailure();
      forward.setArgAttr(rangesArg, kAbiRoleAttrName,
                         StringAttr::get(&getContext(), "key_ranges"));

      // Each launch: the ranges allocated and zeroed, the key-range kernel
      // launched first over the query tiles and key chunks, both kernels
      // given them.
      for (gpu::LaunchFuncOp launch : getLaunchesOf(module, forward)) {
        OpBuilder b(launch);
        Location loc = launch.getLoc();
        ValueRange given = launch.getKernelOperands();
        Value tiles = launch.getGridSizeX();
        Value count =
            arith::MulIOp::create(b, loc, tiles,
                                  arith::ConstantIndexOp::create(
                                      b, loc, kKeyRangeWarps * kKeyRangeInts));
        Value buffer =
            memref::AllocOp::create(b, loc, rangesType, ValueRange{count});
        gpu::MemsetOp::create(
            b, loc, Type(), ValueRange{}, buffer,
            arith::ConstantIntOp::create(b, loc, b.getI32Type(), 0));
        Value keyLen = memref::DimOp::create(
            b, loc, given[1], arith::ConstantIndexOp::create(b, loc, 2));
        Value chunks = arith::CeilDivUIOp::create(
            b, loc, keyLen,
            arith::ConstantIndexOp::create(b, loc, kKeyRangeChunk));
        SmallVector<Value> operands(given.take_front(4));
        operands.push_back(buffer);
        for (unsigned i : captureArgs)
          operands.push_back(given[i]);
        Value one = arith::ConstantIndexOp::create(b, loc, 1);
        Value threads =
            arith::ConstantIndexOp::create(b, loc, kKeyRangeWarps * 32);
        Value noShared =
            arith::ConstantIntOp::create(b, loc, b.getI32Type(), 0);
        gpu::LaunchFuncOp::create(b, loc, ranges, {tiles, chunks, one},
                                  {threads, one, one}, noShared, operands);
        launch.getKernelOperandsMutable().append(buffer);
        b.setInsertionPointAfter(launch);
        memref::DeallocOp::create(b, loc, buffer);
      }
    }
  }
};

} // namespace
