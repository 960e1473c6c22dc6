//===- Fuse.cpp - Outline fa.attention into one GPU kernel ----------------===//
//
// The whole forward of an fa.attention becomes one gpu.func kernel over
// memrefs, and the host a gpu.launch_func with its grid: the kernel
// boundary (what is passed, in which layout, over which grid) is decided
// here, once, and convert-fa-to-nvvm only fills the kernel in.
//
//===----------------------------------------------------------------------===//

#include "fa/Dialect/FA/IR/FAOps.h"
#include "fa/Target/GpuTarget.h"
#include "fa/Transforms/GpuKernels.h"
#include "fa/Transforms/Passes.h"
#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Bufferization/IR/Bufferization.h"
#include "mlir/Dialect/GPU/IR/GPUDialect.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/IR/Builders.h"
#include "mlir/IR/SymbolTable.h"

namespace mlir::fa {
#define GEN_PASS_DEF_FAFUSE
#include "fa/Transforms/Passes.h.inc"
} // namespace mlir::fa

using namespace mlir;
using namespace mlir::fa;

namespace {

/// The memref a kernel takes for a value of `type`: its shape and element
/// type, any offset and strides, but a unit innermost stride when the kernel
/// reads rows as contiguous (Q, K, V, O, lse, ALiBi slopes).
MemRefType kernelMemRefType(RankedTensorType type, bool rowsContiguous) {
  SmallVector<int64_t> strides(type.getRank(), ShapedType::kDynamic);
  if (rowsContiguous && !strides.empty())
    strides.back() = 1;
  auto layout =
      StridedLayoutAttr::get(type.getContext(), ShapedType::kDynamic, strides);
  return MemRefType::get(type.getShape(), type.getElementType(), layout);
}

/// Outlines `op` into the kernel `name` of `kernels` with `tile` (and
/// warpgroup MMAs with `wgmma`, a producer warpgroup to come with
/// `warpSpecialize`), and launches it in its place.
void outline(AttentionOp op, gpu::GPUModuleOp kernels, StringRef name,
             ForwardTile tile, bool wgmma, bool warpSpecialize) {
  MLIRContext *ctx = op.getContext();
  Location loc = op.getLoc();
  OpBuilder b(op);

  // Kernel operands in ABI order: Q, K, V, O, lse, bias, ALiBi slopes, the
  // dropout seed, captures (the optional ones when present).
  SmallVector<Value> hostOperands;
  SmallVector<Type> argTypes;
  auto toBuffer = [&](Value tensor, bool rowsContiguous) {
    auto type = cast<RankedTensorType>(tensor.getType());
    MemRefType memrefType = kernelMemRefType(type, rowsContiguous);
    Value buffer = bufferization::ToBufferOp::create(b, loc, memrefType, tensor,
                                                     /*read_only=*/true);
    hostOperands.push_back(buffer);
    argTypes.push_back(memrefType);
    return buffer;
  };
  Value q = toBuffer(op.getQuery(), true);
  toBuffer(op.getKey(), true);
  Value v = toBuffer(op.getValue(), true);

  // O and lse: allocated, dynamic sizes from Q's (B, Hq, Nq) and V's Dv.
  auto index = [&](int64_t value) -> Value {
    return arith::ConstantIndexOp::create(b, loc, value);
  };
  auto dimOf = [&](Value buffer, int64_t i) -> Value {
    int64_t size = cast<MemRefType>(buffer.getType()).getDimSize(i);
    if (!ShapedType::isDynamic(size))
      return index(size);
    return memref::DimOp::create(b, loc, buffer, index(i));
  };
  Value batch = dimOf(q, 0), heads = dimOf(q, 1), rows = dimOf(q, 2);
  Value qDims[3] = {batch, heads, rows};
  SmallVector<Value> allocs;
  for (Value result : op->getResults()) {
    auto type = cast<RankedTensorType>(result.getType());
    SmallVector<Value> sizes;
    for (int64_t i = 0; i < type.getRank(); ++i)
      if (type.isDynamicDim(i))
        sizes.push_back(i < 3 ? qDims[i] : dimOf(v, i));
    auto allocType = MemRefType::get(type.getShape(), type.getElementType());
    Value alloc = memref::AllocOp::create(b, loc, allocType, sizes);
    MemRefType kernelType = kernelMemRefType(type, true);
    hostOperands.push_back(memref::CastOp::create(b, loc, kernelType, alloc));
    argTypes.push_back(kernelType);
    allocs.push_back(alloc);
  }
  if (Value bias = op.getBias())
    toBuffer(bias, false);
  if (Value slopes = op.getAlibiSlopes())
    toBuffer(slopes, true);
  if (Value seed = op.getDropoutSeed()) {
    hostOperands.push_back(seed);
    argTypes.push_back(seed.getType());
  }
  for (Value capture : op.getCaptures())
    toBuffer(capture, false);

  // The kernel: its arguments as tensors, the op, O and lse stored.
  OpBuilder kb(ctx);
  auto kernel =
      gpu::GPUFuncOp::create(kb, loc, name, kb.getFunctionType(argTypes, {}));
  SymbolTable(kernels).insert(kernel);
  kernel->setAttr(gpu::GPUDialect::getKernelFuncAttrName(), kb.getUnitAttr());
  int64_t threads = forwardThreads(tile.blockQ, wgmma);
  kernel.setKnownBlockSizeAttr(
      kb.getDenseI32ArrayAttr({static_cast<int32_t>(threads), 1, 1}));
  kernel->setAttr(kBlockQAttr, kb.getI64IntegerAttr(tile.blockQ));
  kernel->setAttr(kBlockKVAttr, kb.getI64IntegerAttr(tile.blockKV));
  if (wgmma)
    kernel->setAttr(kWgmmaAttr, kb.getUnitAttr());
  if (warpSpecialize)
    kernel->setAttr(kWarpSpecializeAttr, kb.getUnitAttr());
  if (op.getCausalAttr() && tile.headGroup > 1)
    kernel->setAttr(kHeadGroupAttr, kb.getI64IntegerAttr(tile.headGroup));
  if (tile.exp2Fma > 0)
    kernel->setAttr(kExp2FmaAttr, kb.getI64IntegerAttr(tile.exp2Fma));
  if (tile.tanhFma > 0 && scoresUseTanh(op))
    kernel->setAttr(kTanhFmaAttr, kb.getI64IntegerAttr(tile.tanhFma));
  Block &entry = kernel.getBody().front();
  kb.setInsertionPointToStart(&entry);
  // The op's regions are isolated from above: only its operands change.
  Operation *inner = kb.clone(*op);
  kb.setInsertionPoint(inner);
  unsigned numResults = op->getNumResults();
  for (OpOperand &operand : inner->getOpOperands()) {
    // Arguments 3 (and 4) are the results'.
    unsigned i = operand.getOperandNumber();
    Value value = entry.getArgument(i < 3 ? i : i + numResults);
    if (isa<MemRefType>(value.getType()))
      value = bufferization::ToTensorOp::create(
          kb, loc, operand.get().getType(), value, /*restrict=*/true);
    operand.set(value);
  }
  kb.setInsertionPointToEnd(&entry);
  for (auto [i, result] : llvm::enumerate(inner->getResults()))
    bufferization::MaterializeInDestinationOp::create(
        kb, loc, /*result=*/Type(), result, entry.getArgument(3 + i),
        /*restrict=*/true, /*writable=*/true);
  gpu::ReturnOp::create(kb, loc);

  // The launch: (ceil(Nq / block-q), Hq, B) CTAs, none when that is empty;
  // the shared memory of one K/V stage until fa-async-copy says otherwise.
  Value tiles = arith::CeilDivUIOp::create(b, loc, rows, index(tile.blockQ));
  Value ctas = arith::MulIOp::create(
      b, loc, arith::MulIOp::create(b, loc, tiles, heads), batch);
  Value any =
      arith::CmpIOp::create(b, loc, arith::CmpIPredicate::ne, ctas, index(0));
  auto ifAny = scf::IfOp::create(b, loc, any, /*withElseRegion=*/false);
  {
    OpBuilder::InsertionGuard guard(b);
    b.setInsertionPointToStart(ifAny.thenBlock());
    ForwardTile oneStage = tile;
    oneStage.kvStages = 1;
    Value shared = arith::ConstantIntOp::create(
        b, loc, b.getI32Type(),
        forwardSharedBytes(
            oneStage,
            getForwardTileCols(op.getQuery().getType().getDimSize(3), wgmma),
            getForwardTileCols(op.getValue().getType().getDimSize(3), wgmma)));
    Value one = index(1);
    gpu::LaunchFuncOp::create(b, loc, kernel, {tiles, heads, batch},
                              {index(threads), one, one}, shared, hostOperands);
  }
  SmallVector<Value> results;
  for (auto [alloc, result] : llvm::zip(allocs, op->getResults()))
    results.push_back(bufferization::ToTensorOp::create(
        b, loc, result.getType(), alloc, /*restrict=*/true,
        /*writable=*/true));
  op->replaceAllUsesWith(results);
  op->erase();
}

struct FAFusePass : public mlir::fa::impl::FAFuseBase<FAFusePass> {
  using Base::Base;
  void runOnOperation() override {
    ModuleOp module = getOperation();
    if (headGroup < 0) {
      module.emitError("fa-fuse: head-group must be 0 (the default) or at "
                       "least 1, got ")
          << static_cast<int64_t>(headGroup);
      return signalPassFailure();
    }
    // Options counting values of every 8 on the FMA pipe.
    for (auto [name, eighths] : {std::pair{"exp2-fma", int64_t(exp2Fma)},
                                 std::pair{"tanh-fma", int64_t(tanhFma)}}) {
      if (eighths < -1 || eighths > 8) {
        module.emitError("fa-fuse: ")
            << name << " must be -1 (the default) or 0 to 8, got " << eighths;
        return signalPassFailure();
      }
    }
    // Ops already in a kernel stay there.
    SmallVector<AttentionOp> ops;
    module.walk([&](AttentionOp op) {
      if (!op->getParentOfType<gpu::GPUModuleOp>())
        ops.push_back(op);
    });
    if (ops.empty())
      return;
    // wgmma on the kernel module's chip where it has them; its 128-byte
    // swizzle takes tiles of 64-column panels, so head dims between them
    // (32, 80, 96) are padded with zero columns (getForwardTileCols).
    const ::fa::target::GpuTarget *target = ::fa::target::lookupGpuTarget(
        !getKernelChip(module).empty() ? getKernelChip(module) : chip);
    bool chipHasWgmma =
        wgmma && target && target->has(::fa::target::Feature::Wgmma);
    auto usesWgmma = [&](AttentionOp) { return chipHasWgmma; };
    auto specializes = [&](AttentionOp op) {
      return warpSpecialize && usesWgmma(op);
    };
    auto tileOf = [&](AttentionOp op) {
      ForwardTile tile =
          defaultForwardTile(op, usesWgmma(op), specializes(op), biasTiles);
      if (blockQ)
        tile.blockQ = blockQ;
      if (blockKV)
        tile.blockKV = blockKV;
      if (headGroup)
        tile.headGroup = headGroup;
      if (exp2Fma >= 0)
        tile.exp2Fma = exp2Fma;
      if (tanhFma >= 0)
        tile.tanhFma = tanhFma;
      return tile;
    };
    for (AttentionOp op : ops) {
      ForwardTile tile = tileOf(op);
      if (std::string why =
              unsupportedTileReason(tile.blockQ, tile.blockKV, specializes(op));
          !why.empty()) {
        op.emitOpError("fa-fuse: ") << why;
        return signalPassFailure();
      }
    }
    gpu::GPUModuleOp kernels = getOrCreateKernelModule(module, chip);
    if (!kernels) {
      module.emitError("fa-fuse: unknown chip '")
          << chip << "' (FA compiles for " << ::fa::target::listGpuTargets()
          << ")";
      return signalPassFailure();
    }
    // Kernels are numbered in the order of their ops, after any already
    // there.
    int64_t next = 0;
    for (AttentionOp op : ops) {
      std::string name;
      do
        name = "fa_forward_" + std::to_string(next++);
      while (kernels.lookupSymbol(name));
      outline(op, kernels, name, tileOf(op), usesWgmma(op), specializes(op));
    }
  }
};

} // namespace
