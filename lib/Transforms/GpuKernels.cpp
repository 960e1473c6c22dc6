//===- GpuKernels.cpp - What the GPU passes agree on ----------------------===//

#include "fa/Transforms/GpuKernels.h"
#include "fa/Target/GpuTarget.h"
#include "fa/Transforms/Passes.h"
#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/LLVMIR/NVVMDialect.h"
#include "mlir/Dialect/Math/IR/Math.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"
#include "mlir/IR/Builders.h"

using namespace mlir;
using namespace mlir::fa;

bool mlir::fa::isScoredForward(AttentionOp op) {
  return op.getBias() || op.getAlibiSlopes() || !op.getScoreMod().empty() ||
         !op.getMaskMod().empty() || op.getDropoutSeed();
}

BlockArgument mlir::fa::getArgumentWithRole(gpu::GPUFuncOp kernel,
                                            StringRef role) {
  for (BlockArgument arg : kernel.getArguments())
    if (auto named = kernel.getArgAttrOfType<StringAttr>(arg.getArgNumber(),
                                                         kAbiRoleAttrName);
        named && named.getValue() == role)
      return arg;
  return {};
}

bool mlir::fa::hasKeyRanges(AttentionOp op) {
  if (op.getMaskMod().empty())
    return false;
  Block &body = op.getMaskMod().front();
  return body.getArgument(0).use_empty() && body.getArgument(1).use_empty();
}

bool mlir::fa::scoresUseTanh(AttentionOp op) {
  if (op.getSoftcapAttr())
    return true;
  bool tanh = false;
  op.getScoreMod().walk([&](math::TanhOp) { tanh = true; });
  return tanh;
}

// The fastest on the H100 (bench/fwd_tile_sweep.sh and the tile probes of
// docs/performance.md). D <= 64: two m-tiles, so each K and V fragment read
// from shared memory feeds two mmas. D = 96: one m-tile and 64-key tiles
// (128 keys spill). D = 128: with causal or window masks one m-tile and
// 128-key tiles (half the loop trips and barriers of 64); without, two
// m-tiles and 64-key tiles with two stages (1-3% faster than one stage,
// 5-10% faster than 128 x 32 or 64 x 128, although ptxas spills 24 bytes
// on sm_90a: docs/performance.md). D = 256: one m-tile of 128 O registers,
// 64-key tiles. The scored path keeps one m-tile (its per-element terms,
// bias loads, slope and region values, spill at two), and 32-key tiles
// above D = 64.
ForwardTile mlir::fa::defaultForwardTile(AttentionOp op, bool wgmma,
                                         bool warpSpecialize, bool biasTiles) {
  // Dk != Dv takes the tile of the larger (registers hold O and Q's
  // fragments, shared memory Q, K and V), except with a producer warpgroup,
  // where Q and K stay in shared memory and O (Dv) sets the key tile.
  int64_t dk = getForwardTileCols(op.getQuery().getType().getDimSize(3), wgmma);
  int64_t dv = getForwardTileCols(op.getValue().getType().getDimSize(3), wgmma);
  int64_t d = std::max(dk, dv);
  bool masked = op.getCausalAttr() || op.getWindowAttr();
  ForwardTile tile;
  // With a producer warpgroup (TMA, H200 A/B, performance.md): two consumer
  // warpgroups of 64 query rows, K/V tiles of 128 rows up to D = 128 and of
  // 64 at D = 256 (two stages: 192 KB). Per-score terms beyond ALiBi's (a
  // bias load, a score_mod, a mask_mod, dropout's hash) take registers
  // beside S and O: the largest K/V tile without spills in the test
  // variants (`*-ptxas.mlir`), and for a bias 64 keys, the fastest (H200
  // A/B, performance.md: the scored path with a producer warpgroup).
  if (wgmma && warpSpecialize) {
    // 128-key tiles where O (Dv) allows and their two stages and barriers
    // (fa-warp-specialize's) fit an sm_90a CTA (Dk = 256 with Dv = 128 does
    // not).
    tile = ForwardTile{128, 128, 2};
    int64_t bytes =
        forwardSharedBytes(tile, dk, dv) + 8 * (1 + 4 * tile.kvStages);
    if (dv > 128 || bytes > maxSharedBytesPerBlock("sm_90a").value_or(0))
      tile = ForwardTile{128, 64};
    bool bias = bool(op.getBias()), scoreMod = !op.getScoreMod().empty();
    int64_t terms =
        bias + scoreMod + !op.getMaskMod().empty() + bool(op.getDropoutSeed());
    // Key ranges (fa-key-ranges) keep the key loop's bounds in registers:
    // with two terms, 128 x 64 then spills (captures-ptxas.mlir).
    if (terms >= 2 && hasKeyRanges(op))
      ++terms;
    if (terms >= 3 || (dv > 128 && terms))
      tile.blockKV = 32;
    else if (terms == 2 || bias || (d > 64 && terms == 1 && !scoreMod))
      tile.blockKV = 64;
    // A bias alone, read from shared memory (fa-bias-tiles): the widest key
    // tile of whole 128-byte panels whose two stages fit beside K's and V's
    // (H200, bf16 bias, N = 2048: 128 keys +12% at D = 64 and +5% at 128;
    // at D = 256 64 keys, 2.1x the 32 one load a score took).
    if (biasTiles && bias && terms == 1) {
      int64_t bytes =
          cast<ShapedType>(op.getBias().getType()).getElementTypeBitWidth() / 8;
      for (int64_t keys : {128, 64, 32}) {
        ForwardTile wide{128, keys, 2};
        if (keys * bytes % 128 == 0 &&
            warpSpecializedSharedBytes(wide, dk, dv, 128 * keys * bytes) <=
                maxSharedBytesPerBlock("sm_90a").value_or(0)) {
          tile.blockKV = keys;
          break;
        }
      }
    }
    // Plain kernels take wider key tiles where they measured faster (H200,
    // two stages, performance.md: wide K/V tiles): fewer softmax rescales,
    // row reductions and barriers per key. Without masks: D = 64 192 keys
    // (+1-5%), D = 256 80 (+3-6%; not with lse, where 80 spills 8 bytes);
    // D = 192 (two stages of 128 do not fit beside its Q) 112, causal too
    // (+6-15%). Not taken: D = 128 at 176 (FlashAttention-3's: +1%, for 40%
    // more ptxas time in a cold compile), D = 96 at 176 and causal D = 64 at
    // 192 (slower).
    int64_t headDim = op.getQuery().getType().getDimSize(3);
    if (!isScoredForward(op) && !op.getSoftcapAttr() &&
        headDim == op.getValue().getType().getDimSize(3)) {
      if (headDim == 192)
        tile.blockKV = 112;
      else if (!masked && headDim == 64)
        tile.blockKV = 192;
      else if (!masked && headDim == 256 && !op.getLse())
        tile.blockKV = 80;
    }
    tile.kvStages =
        defaultKVStages(op, tile.blockQ, tile.blockKV, wgmma, warpSpecialize);
    // A tanh's rcp on the FMA pipe for 6 of 8 scores up to D = 96 (H200:
    // +16-20% at D = 64, +8% at 96), 4 of 8 up to D = 128 (+3-5%); none
    // above, where the FMA pipe's share of a score's time is larger (-4% at
    // D = 192 and 256 with 4).
    if (scoresUseTanh(op)) {
      int64_t dk = op.getQuery().getType().getDimSize(3);
      tile.tanhFma = dk <= 96 ? 6 : dk <= 128 ? 4 : 0;
    }
    // Causal at D >= 128: the heaviest tiles of 8 heads first, +2-6% on the
    // H100; level at D = 64 (-4% at N = 1024), performance.md 4888222.
    if (op.getCausalAttr() && d >= 128)
      tile.headGroup = 8;
    return tile;
  }
  // With wgmma (H200 sweep, performance.md): D = 64 at 64 x 128, D = 128 at
  // 128 x 128 (two warpgroups) or 64 x 64 under a mask, D = 256 at 64 x 64;
  // the scored path keeps mma.sync's tiles.
  if (wgmma && !isScoredForward(op)) {
    tile = d <= 64   ? ForwardTile{64, 128}
           : d > 128 ? ForwardTile{64, 64}
           : masked  ? ForwardTile{64, 64}
                     : ForwardTile{128, 128};
  } else if (d <= 64)
    tile = isScoredForward(op) ? ForwardTile{64, 64} : ForwardTile{128, 64};
  else if (isScoredForward(op))
    tile = {64, 32};
  else if (d <= 96)
    tile = {64, 64};
  else if (d <= 128)
    tile = masked ? ForwardTile{64, 128} : ForwardTile{128, 64};
  else
    tile = {64, 64};
  tile.kvStages = defaultKVStages(op, tile.blockQ, tile.blockKV, wgmma);
  return tile;
}

// Two stages where the sweep found them faster: the plain path's 128 x 64
// tiles up to D = 128 (+0.5-6% at D <= 64, +4-8% at 128), whose 48 or 96 KB
// still leave the CTAs per SM that registers allow. Elsewhere a second
// stage costs a CTA per SM (64 x 128 at D = 128: 144 KB, 20% slower) or was
// not faster.
int64_t mlir::fa::defaultKVStages(AttentionOp op, int64_t blockQ,
                                  int64_t blockKV, bool wgmma,
                                  bool warpSpecialize) {
  int64_t d =
      getForwardTileCols(std::max(op.getQuery().getType().getDimSize(3),
                                  op.getValue().getType().getDimSize(3)),
                         wgmma);
  // A producer warpgroup: two stages of K and V (what fits 128 x 128 at
  // D = 128 and 128 x 64 at D = 256).
  if (wgmma && warpSpecialize)
    return 2;
  if (isScoredForward(op))
    return 1;
  // wgmma: two stages at D = 64 and for 128 x 128 (160 KB at D = 128);
  // one for 64 x 64 at D = 128 and 256 (two cost 5-30% there).
  if (wgmma)
    return d <= 64 || (blockQ == 128 && blockKV == 128 && d <= 128) ? 2 : 1;
  return blockQ == 128 && blockKV == 64 && d <= 128 ? 2 : 1;
}

std::string mlir::fa::unsupportedTileReason(int64_t blockQ, int64_t blockKV,
                                            bool wideKV) {
  if (blockQ != 64 && blockQ != 128)
    return "block-q must be 64 or 128 (got " + std::to_string(blockQ) + ")";
  if (blockKV == 32 || blockKV == 64 || blockKV == 128)
    return "";
  // wgmma takes any N that is a multiple of 8 up to 256; the producer's
  // copies (TMA boxes, or cp.async chunks over 128 threads) and P V's k-steps
  // want whole 16-row slabs. Offered where the GPU suite checks them: with
  // two consumer warpgroups, from 80 to 224 keys.
  constexpr int64_t kStep = 16, kMin = 80, kMax = 224;
  if (wideKV && blockQ == 128 && blockKV >= kMin && blockKV <= kMax &&
      blockKV % kStep == 0)
    return "";
  std::string wide = ", or with block-q = 128 a multiple of " +
                     std::to_string(kStep) + " from " + std::to_string(kMin) +
                     " to " + std::to_string(kMax);
  return "block-kv must be 32, 64 or 128" + (wideKV ? wide : "") + " (got " +
         std::to_string(blockKV) + ")";
}

std::optional<int64_t> mlir::fa::maxSharedBytesPerBlock(StringRef chip) {
  if (const ::fa::target::GpuTarget *target =
          ::fa::target::lookupGpuTarget(chip))
    return target->maxSharedBytesPerBlock;
  return std::nullopt;
}

std::string mlir::fa::getKernelChip(ModuleOp module) {
  auto kernels = module.lookupSymbol<gpu::GPUModuleOp>(kKernelModuleName);
  if (!kernels || !kernels.getTargets())
    return "";
  for (Attribute target : *kernels.getTargets())
    if (auto nvvm = dyn_cast<NVVM::NVVMTargetAttr>(target))
      return nvvm.getChip().str();
  return "";
}

gpu::GPUModuleOp mlir::fa::getOrCreateKernelModule(ModuleOp module,
                                                   StringRef chip) {
  OpBuilder b(module.getBodyRegion());
  module->setAttr(gpu::GPUDialect::getContainerModuleAttrName(),
                  b.getUnitAttr());
  if (auto kernels = module.lookupSymbol<gpu::GPUModuleOp>(kKernelModuleName))
    return kernels;
  const ::fa::target::GpuTarget *gpu = ::fa::target::lookupGpuTarget(chip);
  if (!gpu)
    return {};
  b.setInsertionPointToEnd(module.getBody());
  auto target =
      NVVM::NVVMTargetAttr::get(b.getContext(), /*optLevel=*/3,
                                "nvptx64-nvidia-cuda", chip, gpu->ptxFeature());
  return gpu::GPUModuleOp::create(b, module.getLoc(), kKernelModuleName,
                                  b.getArrayAttr({target}));
}

void mlir::fa::setDynamicSharedBytes(gpu::LaunchFuncOp launch, int64_t bytes) {
  OpBuilder b(launch);
  Value old = launch.getDynamicSharedMemorySize();
  launch.getDynamicSharedMemorySizeMutable().assign(
      arith::ConstantIntOp::create(b, launch.getLoc(), b.getI32Type(), bytes));
  if (Operation *def = old ? old.getDefiningOp() : nullptr)
    if (def->use_empty())
      def->erase();
}

SmallVector<gpu::LaunchFuncOp> mlir::fa::getLaunchesOf(ModuleOp module,
                                                       gpu::GPUFuncOp kernel) {
  auto kernelModule = kernel->getParentOfType<gpu::GPUModuleOp>();
  SmallVector<gpu::LaunchFuncOp> launches;
  if (!kernelModule)
    return launches;
  module.walk([&](gpu::LaunchFuncOp launch) {
    if (launch.getKernelModuleName() == kernelModule.getName() &&
        launch.getKernelName() == kernel.getName())
      launches.push_back(launch);
  });
  return launches;
}

AttentionOp mlir::fa::getOutlinedAttention(gpu::GPUFuncOp kernel) {
  if (!kernel.isKernel())
    return {};
  AttentionOp found;
  for (Operation &op : kernel.getBody().front())
    if (auto attention = dyn_cast<AttentionOp>(op)) {
      if (found)
        return {};
      found = attention;
    }
  return found;
}

bool mlir::fa::isKernelRegionOp(Operation *op) {
  // A capture's element (the tensor is a trailing block argument).
  if (auto extract = dyn_cast<tensor::ExtractOp>(op))
    return isa<BlockArgument>(extract.getTensor()) &&
           extract.getType().isIntOrFloat();
  for (Type t : llvm::concat<Type>(op->getOperandTypes(), op->getResultTypes()))
    if (!t.isIntOrIndexOrFloat())
      return false;
  if (isa<arith::CeilDivSIOp, arith::CeilDivUIOp, arith::FloorDivSIOp>(op))
    return false;
  if (op->getDialect() && op->getDialect()->getNamespace() == "arith")
    return op->getNumRegions() == 0;
  if (!isa<math::TanhOp, math::ExpOp, math::Exp2Op, math::LogOp, math::Log2Op,
           math::SinOp, math::CosOp, math::SqrtOp, math::RsqrtOp, math::AbsFOp,
           math::FmaOp, math::FloorOp, math::CeilOp>(op))
    return false;
  return llvm::all_of(op->getResultTypes(), [](Type t) { return t.isF32(); });
}

std::string mlir::fa::unsupportedForwardReason(AttentionOp op) {
  std::string reason = unsupportedShapeReason(op, /*dvUpToD=*/false);
  if (!reason.empty())
    return reason;
  for (auto [region, name] : {std::make_pair(&op.getScoreMod(), "score_mod"),
                              std::make_pair(&op.getMaskMod(), "mask_mod")}) {
    reason = kernelRegionReason(*region, name);
    if (!reason.empty())
      return reason;
  }
  return "";
}

std::string mlir::fa::kernelRegionReason(Region &region, StringRef name) {
  if (region.empty())
    return "";
  for (Operation &inner : region.front().without_terminator())
    if (!isKernelRegionOp(&inner))
      return (name + " op '" + inner.getName().getStringRef() +
              "' is not supported on the GPU (arith and f32 math.tanh, exp, "
              "exp2, log, log2, sin, cos, sqrt, rsqrt, absf, fma, floor, "
              "ceil are)")
          .str();
  return "";
}

FailureOr<ForwardTile> mlir::fa::chooseKVStages(gpu::GPUFuncOp kernel,
                                                int64_t stages, StringRef chip,
                                                StringRef pass,
                                                int64_t extraBytes,
                                                int64_t stageBytes) {
  bool twoPass = false;
  kernel.walk(
      [&](scf::ForOp loop) { twoPass |= loop->hasAttr(kRowMaxLoopAttr); });
  if (twoPass)
    return kernel.emitOpError(pass)
           << ": the kernel still has fa-tile's two softmax loops (run "
              "fa-online-softmax first)";
  auto blockQ = kernel->getAttrOfType<IntegerAttr>(kBlockQAttr);
  auto blockKV = kernel->getAttrOfType<IntegerAttr>(kBlockKVAttr);
  if (!blockQ || !blockKV)
    return kernel.emitOpError(pass)
           << ": the kernel has no '" << kBlockQAttr << "' and '"
           << kBlockKVAttr << "' (outline it with fa-fuse)";
  if (stages < 0 || stages > kMaxKVStages)
    return kernel.emitOpError(pass) << ": stages must be 1 to " << kMaxKVStages
                                    << " (got " << stages << ")";
  ForwardTile tile{blockQ.getInt(), blockKV.getInt()};
  int64_t d = cast<MemRefType>(kernel.getArgumentTypes()[0]).getDimSize(3);
  int64_t dv = cast<MemRefType>(kernel.getArgumentTypes()[2]).getDimSize(3);
  bool wgmma = kernel->hasAttr(kWgmmaAttr);
  // The option, else the default fa-tile recorded for the variant.
  auto recorded = kernel->getAttrOfType<IntegerAttr>(kKVStagesAttr);
  tile.kvStages = stages ? stages : (recorded ? recorded.getInt() : int64_t(1));
  int64_t bytes = forwardSharedBytes(tile, getForwardTileCols(d, wgmma),
                                     getForwardTileCols(dv, wgmma)) +
                  extraBytes + tile.kvStages * stageBytes;
  std::optional<int64_t> maxShared = maxSharedBytesPerBlock(chip);
  if (maxShared && bytes > *maxShared)
    return kernel.emitOpError(pass)
           << ": " << tile.kvStages << " K/V stages of a " << tile.blockQ
           << " x " << tile.blockKV << " tile at D = " << d
           << (d == dv ? "" : ", Dv = " + std::to_string(dv))
           << (stageBytes ? " with a bias block" : "") << " need " << bytes
           << " bytes of shared memory; " << chip << " gives a CTA "
           << *maxShared;
  return tile;
}

std::optional<ForwardCopies>
mlir::fa::matchForwardCopies(gpu::GPUFuncOp kernel) {
  ForwardCopies c;
  for (Operation &op : kernel.getBody().front()) {
    if (auto copy = dyn_cast<fagpu::CopyOp>(op); copy && !c.q)
      c.q = copy;
    else if (auto loop = dyn_cast<scf::ForOp>(op); loop && !c.loop)
      c.loop = loop;
  }
  if (!c.q || !c.loop)
    return std::nullopt;
  c.k = dyn_cast<fagpu::CopyOp>(c.loop.getBody()->front());
  c.v = c.k ? dyn_cast<fagpu::CopyOp>(c.k->getNextNode()) : fagpu::CopyOp();
  auto tileOf = [](fagpu::CopyOp copy) {
    return copy ? copy.getDest().getDefiningOp<fagpu::AllocSharedOp>()
                : fagpu::AllocSharedOp();
  };
  c.qTile = tileOf(c.q);
  c.kTile = tileOf(c.k);
  c.vTile = tileOf(c.v);
  Value n = c.loop.getInductionVar();
  if (!c.qTile || !c.kTile || !c.vTile || c.q->isBeforeInBlock(c.qTile) ||
      !c.q->isBeforeInBlock(c.loop) || c.k.getRow() != n || c.v.getRow() != n)
    return std::nullopt;
  for (Operation *op = c.v->getNextNode(); op; op = op->getNextNode()) {
    auto block = dyn_cast<fagpu::CopyOp>(op);
    if (!block || !block.getCol())
      break;
    if (block.getCol() != n || !tileOf(block))
      return std::nullopt;
    c.blocks.push_back(block);
    c.blockTiles.push_back(tileOf(block));
  }
  return c;
}
