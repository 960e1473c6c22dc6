//===- BiasTiles.cpp - A K/V tile's bias block through shared memory ------===//
//
// fa-tile's forward kernel reads a bias in its scores' map, one element a
// score, at the element's (query row, key) clamped into [0, Nq) x [0, Nk):
// each thread computes a 64-bit address a score and waits on a global load
// in the middle of the softmax. Here that read becomes a block copy of the
// tile's [block_q, block_kv] bias, beside K's copy at the top of the K/V
// loop, into a shared tile (`fagpu.copy` with a column), and a
// `fagpu.load_tile` that gives each thread its elements of it in the
// accumulator's layout, as a second input of the map. fa-warp-specialize
// then rings the copy with K's (a TMA box a panel, on K's barriers).
//
// Rows past Nq and keys past Nk read zeros rather than the clamped
// element: those rows are never stored and those keys are masked.
//
//===----------------------------------------------------------------------===//

#include "fa/Dialect/FAGPU/IR/FAGPU.h"
#include "fa/Transforms/GpuKernels.h"
#include "fa/Transforms/Passes.h"
#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/GPU/IR/GPUDialect.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/IR/Builders.h"

namespace mlir::fa {
#define GEN_PASS_DEF_FABIASTILES
#include "fa/Transforms/Passes.h.inc"
} // namespace mlir::fa

using namespace mlir;
using namespace mlir::fa;

namespace {

/// `index`, or `index` clamped by `arith.minui` (fa-tile's clamp into the
/// buffer).
bool isPosition(Value index, Value position) {
  if (index == position)
    return true;
  auto clamp = index.getDefiningOp<arith::MinUIOp>();
  return clamp && (clamp.getLhs() == position || clamp.getRhs() == position);
}

/// The bias read of `map`'s body: a load of the bias buffer at (b, h,
/// row, key) with b and h defined outside the map; null where there is
/// none or another kind of read.
memref::LoadOp matchBiasRead(fagpu::MapOp map, Value bias) {
  Block &body = map.getBody().front();
  unsigned inputs = map.getInputs().size();
  Value row = body.getArgument(inputs), col = body.getArgument(inputs + 1);
  memref::LoadOp read;
  bool other = false;
  body.walk([&](memref::LoadOp load) {
    ValueRange at = load.getIndices();
    bool outer = llvm::none_of(at.take_front(2), [&](Value v) {
      return map.getBody().isAncestor(v.getParentRegion());
    });
    if (load.getMemRef() == bias && !read && outer && isPosition(at[2], row) &&
        isPosition(at[3], col))
      read = load;
    else
      other |= load.getMemRef() == bias;
  });
  return other ? memref::LoadOp() : read;
}

LogicalResult stageBias(gpu::GPUFuncOp kernel, Value bias, StringRef chip) {
  std::optional<ForwardCopies> copies = matchForwardCopies(kernel);
  if (!copies)
    return kernel.emitOpError("fa-bias-tiles: expected fa-tile's forward "
                              "kernel: a copy of Q, then a loop over K/V "
                              "tiles that starts with their copies");
  scf::ForOp loop = copies->loop;
  Value key = loop.getInductionVar();
  SmallVector<std::pair<fagpu::MapOp, memref::LoadOp>> found;
  bool elsewhere = false;
  kernel.walk([&](fagpu::MapOp map) {
    bool reads = map.getBody()
                     .walk([&](memref::LoadOp load) {
                       return load.getMemRef() == bias ? WalkResult::interrupt()
                                                       : WalkResult::advance();
                     })
                     .wasInterrupted();
    if (!reads)
      return;
    memref::LoadOp read = matchBiasRead(map, bias);
    if (read && map->getParentOp() == loop && map.getColOffset() == key)
      found.push_back({map, read});
    else
      elsewhere = true;
  });
  if (elsewhere || found.size() != 1)
    return success(); // Not the one tile read this pass knows: left alone.
  auto [map, read] = found.front();
  auto scores = cast<RankedTensorType>(map.getType());
  Type element = read.getType();
  // Whole 128-byte panels (what the swizzle and one box a panel need): 64
  // keys of f16 or bf16, 32 of f32.
  int64_t bytes = element.getIntOrFloatBitWidth() / 8;
  int64_t tileBytes = scores.getDimSize(0) * scores.getDimSize(1) * bytes;
  if (scores.getDimSize(1) * bytes % 128 != 0)
    return success();
  // And room beside the kernel's K/V stages and its producer's barriers.
  auto recorded = kernel->getAttrOfType<IntegerAttr>(kKVStagesAttr);
  ForwardTile forward{scores.getDimSize(0), scores.getDimSize(1),
                      recorded ? recorded.getInt() : 1};
  auto cols = [&](unsigned arg) {
    return getForwardTileCols(
        cast<MemRefType>(kernel.getArgumentTypes()[arg]).getDimSize(3),
        /*wgmma=*/true);
  };
  std::optional<int64_t> maxShared = maxSharedBytesPerBlock(chip);
  if (maxShared && warpSpecializedSharedBytes(forward, cols(0), cols(2),
                                              tileBytes) > *maxShared)
    return success();
  MLIRContext *ctx = kernel.getContext();
  auto tileType = fagpu::SharedType::get(
      ctx, {1, scores.getDimSize(0), scores.getDimSize(1)}, element,
      /*wgmma=*/true);
  // After the kernel's other tiles.
  int64_t offset = 0;
  kernel.walk([&](fagpu::AllocSharedOp alloc) {
    offset = std::max(offset, int64_t(alloc.getOffset()) +
                                  alloc.getType().getStages() *
                                      alloc.getType().getStageBytes());
  });
  Location loc = map.getLoc();
  OpBuilder b(copies->kTile);
  b.setInsertionPointAfter(copies->vTile);
  Value tile = fagpu::AllocSharedOp::create(b, loc, tileType, offset);

  // The block at (the map's rows, the tile's keys), right after V's copy.
  b.setInsertionPoint(loop);
  Value c0 = arith::ConstantIndexOp::create(b, loc, 0);
  ValueRange at = read.getIndices();
  Value rows = memref::DimOp::create(b, loc, bias, 2);
  b.setInsertionPointAfter(copies->v);
  fagpu::CopyOp::create(b, loc, bias, at[0], at[1], map.getRowOffset(), key,
                        rows, tile, c0);

  b.setInsertionPoint(map);
  auto valuesType =
      RankedTensorType::get(scores.getShape(), element, scores.getEncoding());
  Value values = fagpu::LoadTileOp::create(b, loc, valuesType, tile, c0);
  map.getInputsMutable().append(values);
  Block &body = map.getBody().front();
  BlockArgument arg =
      body.insertArgument(map.getInputs().size() - 1, element, read.getLoc());
  read.getResult().replaceAllUsesWith(arg);
  read.erase();
  // The clamps and their bounds, now unused.
  SmallVector<Operation *> dead;
  body.walk([&](Operation *op) { dead.push_back(op); });
  for (Operation *op : llvm::reverse(dead))
    if (op->use_empty() && isMemoryEffectFree(op) &&
        !op->hasTrait<OpTrait::IsTerminator>())
      op->erase();
  return success();
}

struct FABiasTilesPass
    : public mlir::fa::impl::FABiasTilesBase<FABiasTilesPass> {
  using Base::Base;

  void runOnOperation() override {
    ModuleOp module = getOperation();
    auto kernels = module.lookupSymbol<gpu::GPUModuleOp>(kKernelModuleName);
    if (!kernels)
      return;
    std::string chip = getKernelChip(module);
    for (auto kernel : kernels.getOps<gpu::GPUFuncOp>()) {
      // The producer warpgroup's TMA copies it (fa-warp-specialize).
      if (!kernel->hasAttr(kWgmmaAttr) || !kernel->hasAttr(kWarpSpecializeAttr))
        continue;
      for (BlockArgument arg : kernel.getArguments()) {
        auto role = kernel.getArgAttrOfType<StringAttr>(arg.getArgNumber(),
                                                        kAbiRoleAttrName);
        if (role && role.getValue() == "bias" &&
            failed(stageBias(kernel, arg, chip)))
          return signalPassFailure();
      }
    }
  }
};

} // namespace
