//===- KeyRanges.cpp - Bound the forward's key loop by its mask_mod -------===//
//--------===//
//
// A mask_mod such as a document mask hides most K/V tiles of a query tile,
// yet the forward visits every tile the causal and window masks leave. Where
// the mask_mod reads neither b nor h, its visible key tiles are the same for
// every (batch, head): a small key-range kernel finds them once per query
// tile before the forward, which then loops only over them
// (fagpu.visible_keys ... within). Layout: KernelAbi.h, "Key ranges".
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
#include "mlir/IR/Builders.h"
#include "mlir/IR/SymbolTable.h"

namespace mlir::fa {
#define GEN_PASS_DEF_FAKEYRANGES
#include "fa/Transforms/Passes.h.inc"
} // namespace mlir::fa

using namespace mlir;
using namespace mlir::fa;
using ::fa::runtime::kKeyRangeBlock;
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
  auto coords = fagpu::BlockCoordsOp::create(b, loc, idx, idx, idx,
                                             /*heavy_first=*/false,
                                             /*rematerialize=*/false);
  Value tile = coords.getTile();
  Value q0 = arith::MulIOp::create(b, loc, tile, index(blockQ));
  Value nq = memref::DimOp::create(b, loc, q, index(2));
  Value nk = memref::DimOp::create(b, loc, k, index(2));
  // Only the key tiles the causal and window masks leave.
  auto keys = fagpu::VisibleKeysOp::create(
      b, loc, idx, idx, q0, nq, nk, /*key_ranges=*/Value(), blockQ,
      kKeyRangeBlock, op.getCausalAttr(), op.getWindowAttr());
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
  auto splat = [&](RankedTensorType type) -> Value {
    return arith::ConstantOp::create(
        b, loc, DenseElementsAttr::get(type, b.getFloatAttr(f32, 0.0)));
  };
  Value zeroTile = splat(tileType), zeroRows = splat(rowsType);
  // Per row, 1 + the first and 1 + the last key tile where the mask_mod
  // keeps a key (0: none yet). Tile numbers below 2^23 (keys below 2^30)
  // are exact in f32.
  auto loop = scf::ForOp::create(
      b, loc, keys.getBegin(), keys.getEnd(), index(kKeyRangeBlock),
      ValueRange{zeroRows, zeroRows},
      [&](OpBuilder &, Location, Value kv0, ValueRange iters) {
        Value number = arith::AddIOp::create(
            b, loc, arith::DivUIOp::create(b, loc, kv0, index(kKeyRangeBlock)),
            index(1));
        Value numberF = arith::UIToFPOp::create(
            b, loc, f32,
            arith::IndexCastUIOp::create(b, loc, b.getI32Type(), number));
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
          // Rows and keys past Nq and Nk read the last one's captures.
          Value one = index(1);
          Value ic = arith::MinUIOp::create(
              b, loc, i, arith::SubIOp::create(b, loc, nq, one));
          Value jc = arith::MinUIOp::create(
              b, loc, j, arith::SubIOp::create(b, loc, nk, one));
          SmallVector<Value> args = {index(0), index(0), ic, jc};
          llvm::append_range(args, captures);
          Value keep = inlineVariantRegion(b, op.getMaskMod(), args);
          keep = arith::AndIOp::create(b, loc, keep, inside);
          Value zero = arith::ConstantOp::create(b, loc, b.getF32FloatAttr(0));
          fagpu::YieldOp::create(
              b, loc, arith::SelectOp::create(b, loc, keep, numberF, zero));
        }
        Value seen = fagpu::ReduceRowsOp::create(
            b, loc, rowsType, fagpu::ReduceKind::Max, map.getResult());
        Value last = arith::MaximumFOp::create(b, loc, iters[1], seen);
        Value none = arith::CmpFOp::create(b, loc, arith::CmpFPredicate::OEQ,
                                           iters[0], zeroRows);
        Value first = arith::SelectOp::create(b, loc, none, seen, iters[0]);
        scf::YieldOp::create(b, loc, ValueRange{first, last});
      });
  fagpu::StoreKeyRangeOp::create(b, loc, loop.getResult(0), loop.getResult(1),
                                 ranges, tile);
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
      bool ranged =
          llvm::any_of(llvm::seq(kernel.getNumArguments()), [&](unsigned i) {
            auto role =
                kernel.getArgAttrOfType<StringAttr>(i, kAbiRoleAttrName);
            return role && role.getValue() == "key_ranges";
          });
      if (op && !ranged && hasKeyRanges(op) &&
          unsupportedForwardReason(op).empty() &&
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

      // Each launch: the ranges allocated, the key-range kernel launched
      // first, both kernels given them.
      SmallVector<gpu::LaunchFuncOp> launches;
      module.walk([&](gpu::LaunchFuncOp launch) {
        if (launch.getKernelModuleName() == kernels.getName() &&
            launch.getKernelName() == forward.getName())
          launches.push_back(launch);
      });
      for (gpu::LaunchFuncOp launch : launches) {
        OpBuilder b(launch);
        Location loc = launch.getLoc();
        ValueRange given = launch.getKernelOperands();
        Value tiles = launch.getGridSizeX();
        Value count = arith::MulIOp::create(
            b, loc, tiles,
            arith::ConstantIndexOp::create(b, loc, kKeyRangeWarps * 2));
        Value buffer =
            memref::AllocOp::create(b, loc, rangesType, ValueRange{count});
        SmallVector<Value> operands(given.take_front(4));
        operands.push_back(buffer);
        for (unsigned i : captureArgs)
          operands.push_back(given[i]);
        Value one = arith::ConstantIndexOp::create(b, loc, 1);
        Value threads =
            arith::ConstantIndexOp::create(b, loc, kKeyRangeWarps * 32);
        Value noShared =
            arith::ConstantIntOp::create(b, loc, b.getI32Type(), 0);
        gpu::LaunchFuncOp::create(b, loc, ranges, {tiles, one, one},
                                  {threads, one, one}, noShared, operands);
        launch.getKernelOperandsMutable().append(buffer);
        b.setInsertionPointAfter(launch);
        memref::DeallocOp::create(b, loc, buffer);
      }
    }
  }
};

} // namespace
