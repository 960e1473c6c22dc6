//===- FAGPUOps.cpp - FA's kernel-level ops -------------------------------===//

#include "fa/Dialect/FAGPU/IR/FAGPU.h"
#include "fa/Runtime/KernelAbi.h"
#include "mlir/Dialect/GPU/IR/GPUDialect.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/IR/Builders.h"
#include "mlir/IR/OpImplementation.h"
#include "mlir/Interfaces/SideEffectInterfaces.h"

using namespace mlir;
using namespace mlir::fagpu;

#define GET_OP_CLASSES
#include "fa/Dialect/FAGPU/IR/FAGPUOps.cpp.inc"

namespace {

enum class Layout { Acc, Operand, Rows };

StringRef layoutName(Layout layout) {
  switch (layout) {
  case Layout::Acc:
    return "#fagpu.acc";
  case Layout::Operand:
    return "#fagpu.operand";
  case Layout::Rows:
    return "#fagpu.rows";
  }
  llvm_unreachable("unknown layout");
}

/// Checks that `type` (the `what` of `op`) is a register tile in `layout`
/// whose shape the layout can hold.
/// With `narrow`, an accumulator-layout tile may hold f16 or bf16 too (a
/// bias block's values, read for a map).
LogicalResult verifyRegisterTile(Operation *op, Type type, Layout layout,
                                 StringRef what, bool narrow = false) {
  auto tensor = dyn_cast<RankedTensorType>(type);
  Attribute encoding = tensor ? tensor.getEncoding() : Attribute();
  bool ok = encoding &&
            ((layout == Layout::Acc && isa<AccLayoutAttr>(encoding)) ||
             (layout == Layout::Operand && isa<OperandLayoutAttr>(encoding)) ||
             (layout == Layout::Rows && isa<RowsLayoutAttr>(encoding)));
  if (!ok)
    return op->emitOpError()
           << what << " must be a tensor in " << layoutName(layout)
           << " layout (got " << type << ")";
  int64_t rank = layout == Layout::Rows ? 1 : 2;
  if (tensor.getRank() != rank || !tensor.hasStaticShape())
    return op->emitOpError()
           << what << " must have " << rank << " static dims in "
           << layoutName(layout) << " layout";
  unsigned warps = getLayoutWarps(tensor);
  if (warps == 0 || tensor.getDimSize(0) % (16 * warps) != 0)
    return op->emitOpError()
           << what << " has " << tensor.getDimSize(0)
           << " rows: not a multiple of 16 x " << warps << " warps";
  Type et = tensor.getElementType();
  if (layout == Layout::Operand) {
    if (!et.isF16() && !et.isBF16())
      return op->emitOpError()
             << what << " must hold f16 or bf16 (got " << et << ")";
    if (tensor.getDimSize(1) % 16 != 0)
      return op->emitOpError() << what << " has " << tensor.getDimSize(1)
                               << " columns: not a multiple of 16 (k-steps)";
    return success();
  }
  if (!et.isF32() && !(narrow && (et.isF16() || et.isBF16())))
    return op->emitOpError()
           << what << " must hold f32" << (narrow ? ", f16 or bf16" : "")
           << " (got " << et << ")";
  if (layout == Layout::Acc && tensor.getDimSize(1) % 8 != 0)
    return op->emitOpError() << what << " has " << tensor.getDimSize(1)
                             << " columns: not a multiple of 8 (n-tiles)";
  return success();
}

bool isPartial(Type type) {
  auto tensor = cast<RankedTensorType>(type);
  return cast<RowsLayoutAttr>(tensor.getEncoding()).getPartial();
}

LogicalResult verifyTiling(Operation *op, int64_t blockQ, int64_t blockKV,
                           std::optional<ArrayRef<int64_t>> window) {
  if (blockQ <= 0 || blockKV <= 0)
    return op->emitOpError("block_q and block_kv must be positive");
  if (window && (window->size() != 2 || (*window)[0] < 0 || (*window)[1] < 0))
    return op->emitOpError("window must be two sizes >= 0 (left, right)");
  return success();
}

LogicalResult verifyWindow(Operation *op,
                           std::optional<ArrayRef<int64_t>> window) {
  return verifyTiling(op, 1, 1, window);
}

/// A copy's source is a rank-4 [B, H, N, D] buffer of the tile's element
/// type and width.
/// Whether a tile of `cols` columns holds rows of `d` elements: `cols` is
/// d, or with wgmma's layout d's whole panels (getWgmmaTileCols).
bool isTileWidthOf(int64_t cols, int64_t d, bool wgmma) {
  return cols == d || (wgmma && d > 0 && cols == getWgmmaTileCols(d));
}

LogicalResult verifyCopy(Operation *op, Type source, SharedType dest,
                         bool block) {
  auto memref = dyn_cast<MemRefType>(source);
  if (!memref || memref.getRank() != 4)
    return op->emitOpError(block ? "source must be a rank-4 memref [B, H, Nq, "
                                   "Nk] (a copy with a column)"
                                 : "source must be a rank-4 memref [B, H, N, "
                                   "D]");
  if (memref.getElementType() != dest.getElementType())
    return op->emitOpError("source elements (")
           << memref.getElementType() << ") differ from the tile's ("
           << dest.getElementType() << ")";
  if (!block && dest.getElementType().getIntOrFloatBitWidth() != 16)
    return op->emitOpError("a copy of rows moves 16-bit elements; only a "
                           "copy with a column moves ")
           << dest.getElementType();
  if (!block && !memref.isDynamicDim(3) &&
      !isTileWidthOf(dest.getCols(), memref.getDimSize(3), dest.getWgmma()))
    return op->emitOpError("source rows have ")
           << memref.getDimSize(3) << " elements, the tile's " << dest.getCols()
           << (dest.getWgmma() ? " (with wgmma, the elements rounded up to a "
                                 "multiple of 64)"
                               : "");
  return success();
}

} // namespace

/// A key-range buffer: i32 of rank 1 (KernelAbi.h).
static LogicalResult verifyKeyRanges(Operation *op, Value ranges) {
  auto type = dyn_cast<MemRefType>(ranges.getType());
  if (!type || type.getRank() != 1 || !type.getElementType().isInteger(32))
    return op->emitOpError("key ranges are a rank-1 i32 memref");
  return success();
}

LogicalResult VisibleKeysOp::verify() {
  if (failed(verifyTiling(*this, getBlockQ(), getBlockKv(), getWindow())))
    return failure();
  if (!getKeyRanges())
    return success();
  if (failed(verifyKeyRanges(*this, getKeyRanges())))
    return failure();
  if (::fa::runtime::kKeyRangeBlock % getBlockKv() != 0)
    return emitOpError("block_kv must divide the key ranges' ")
           << ::fa::runtime::kKeyRangeBlock << " keys";
  return success();
}

LogicalResult TileNeedsMaskOp::verify() {
  return verifyTiling(*this, getBlockQ(), getBlockKv(), getWindow());
}

LogicalResult MaskOp::verify() {
  if (failed(verifyRegisterTile(*this, getScores().getType(), Layout::Acc,
                                "scores")))
    return failure();
  return verifyWindow(*this, getWindow());
}

void MapOp::build(OpBuilder &b, OperationState &state, Type resultType,
                  ValueRange inputs, Value rowOffset, Value colOffset) {
  state.addOperands(inputs);
  state.addOperands({rowOffset, colOffset});
  state.addTypes(resultType);
  Region *body = state.addRegion();
  Block *block = new Block();
  body->push_back(block);
  for (Value input : inputs)
    block->addArgument(cast<RankedTensorType>(input.getType()).getElementType(),
                       state.location);
  block->addArguments({b.getIndexType(), b.getIndexType()},
                      {state.location, state.location});
}

bool MapOp::isElementwise() {
  Block &block = getBody().front();
  unsigned numInputs = getInputs().size();
  if (!block.getArgument(numInputs).use_empty() ||
      !block.getArgument(numInputs + 1).use_empty())
    return false;
  // No op of the body reads memory: a bias (memref.load) or a capture
  // (tensor.extract of the buffer's tensor, which is pure).
  return !block
              .walk([](Operation *op) {
                bool readsArray =
                    llvm::any_of(op->getOperandTypes(), [](Type type) {
                      return isa<ShapedType>(type);
                    });
                return readsArray || !isMemoryEffectFree(op)
                           ? WalkResult::interrupt()
                           : WalkResult::advance();
              })
              .wasInterrupted();
}

LogicalResult MapOp::verify() {
  if (getInputs().empty())
    return emitOpError("needs at least one input tile");
  auto result = cast<RankedTensorType>(getType());
  if (failed(verifyRegisterTile(*this, result, Layout::Acc, "result")))
    return failure();
  for (Value input : getInputs()) {
    if (failed(verifyRegisterTile(*this, input.getType(), Layout::Acc, "input",
                                  /*narrow=*/true)))
      return failure();
    auto type = cast<RankedTensorType>(input.getType());
    if (type.getShape() != result.getShape() ||
        type.getEncoding() != result.getEncoding())
      return emitOpError("input ")
             << input.getType() << " must have the result's shape and layout ("
             << result << ")";
  }
  Block &block = getBody().front();
  SmallVector<Type> expected;
  for (Value input : getInputs())
    expected.push_back(
        cast<RankedTensorType>(input.getType()).getElementType());
  expected.append(2, IndexType::get(getContext()));
  if (block.getArgumentTypes() != TypeRange(expected))
    return emitOpError("body must take each input's element, then the row "
                       "and column (index)");
  auto yield = dyn_cast<YieldOp>(block.getTerminator());
  if (!yield)
    return emitOpError("body must end with fagpu.yield");
  if (yield.getValue().getType() != result.getElementType())
    return emitOpError("body yields ")
           << yield.getValue().getType() << ", the result holds "
           << result.getElementType();
  return success();
}

LogicalResult CopyOp::verify() {
  return verifyCopy(*this, getSource().getType(),
                    cast<SharedType>(getDest().getType()), bool(getCol()));
}

LogicalResult AsyncCopyOp::verify() {
  if (bool(getBarriers()) != bool(getBarrierStage()))
    return emitOpError("signal needs both the barriers and the stage");
  auto dest = cast<SharedType>(getDest().getType());
  if (failed(verifyCopy(*this, getSource().getType(), dest, bool(getCol()))))
    return failure();
  if (!getBulk()) {
    if (getCol())
      return emitOpError("a copy with a column must be bulk");
    return success();
  }
  if (!getBarriers() || getPredicate())
    return emitOpError("a bulk copy must signal a barrier and have no "
                       "predicate");
  if (getCol() && (!dest.getWgmma() || dest.getRows() > 256))
    return emitOpError("a bulk copy's tile must be in wgmma's layout with at "
                       "most 256 rows (one TMA box a panel)");
  if (!getCol() &&
      (!dest.getWgmma() || dest.getCols() % 64 != 0 || dest.getRows() > 256))
    return emitOpError("a bulk copy's tile must be in wgmma's layout with a "
                       "multiple of 64 columns and at most 256 rows (one TMA "
                       "box)");
  // The tensor map zero-fills past the tensor's rows, no other bound.
  auto dim = getBound().getDefiningOp<memref::DimOp>();
  std::optional<int64_t> index = dim ? dim.getConstantIndex() : std::nullopt;
  if (!dim || dim.getSource() != getSource() || index != 2)
    return emitOpError("a bulk copy's bound must be the source's row count "
                       "(memref.dim of dim 2)");
  return success();
}

LogicalResult AllocBarriersOp::verify() {
  if (getOffset() % 8 != 0)
    return emitOpError("offset ")
           << getOffset() << " is not a multiple of 8 (an mbarrier's size)";
  return success();
}

int64_t WarpSpecializeOp::getLaunchRegisters() {
  int64_t threads = int64_t(getConsumerThreads()) + 128;
  int64_t perThread = 65536 / (int64_t(getCtasPerSm()) * threads);
  return std::min<int64_t>(248, perThread / 8 * 8);
}

LogicalResult WarpSpecializeOp::verify() {
  for (int64_t registers : {getProducerRegisters(), getConsumerRegisters()})
    if (registers < 24 || registers > 256 || registers % 8 != 0)
      return emitOpError("registers per thread must be a multiple of 8 in "
                         "[24, 256] (setmaxnreg; got ")
             << registers << ")";
  if (getConsumerThreads() % 128 != 0)
    return emitOpError("consumer threads (")
           << getConsumerThreads() << ") must be whole warpgroups of 128";
  if (auto kernel = (*this)->getParentOfType<gpu::GPUFuncOp>()) {
    DenseI32ArrayAttr block = kernel.getKnownBlockSizeAttr();
    if (!block || int64_t(block[0]) != int64_t(getConsumerThreads()) + 128)
      return emitOpError("the kernel's known_block_size must be the "
                         "consumers' threads plus the producer's 128 (")
             << getConsumerThreads() + 128 << ")";
  }
  // What the launch gives every thread must cover the roles' shares.
  int64_t warpgroups = getConsumerThreads() / 128;
  int64_t launch = getLaunchRegisters();
  if (warpgroups * int64_t(getConsumerRegisters()) +
          int64_t(getProducerRegisters()) >
      (warpgroups + 1) * launch)
    return emitOpError("the consumers' ")
           << warpgroups << " x " << getConsumerRegisters()
           << " and the producer's " << getProducerRegisters()
           << " registers per thread exceed the " << warpgroups + 1 << " x "
           << launch << " of the launch (" << getCtasPerSm() << " CTAs an SM)";
  // A CTA barrier waits for threads of the other role, which never reach
  // it.
  WalkResult barrier =
      walk([](gpu::BarrierOp) { return WalkResult::interrupt(); });
  if (barrier.wasInterrupted())
    return emitOpError("a role may not pass a CTA barrier (gpu.barrier): "
                       "the roles synchronize through mbarriers");
  return success();
}

/// A turn op belongs to the consumers of a fagpu.warp_specialize with
/// `warpgroups` consumer warpgroups.
static LogicalResult verifyTurn(Operation *op, int64_t warpgroups) {
  Operation *parent = op->getParentOp();
  while (parent && !isa<WarpSpecializeOp>(parent))
    parent = parent->getParentOp();
  auto specialized = dyn_cast_or_null<WarpSpecializeOp>(parent);
  if (!specialized ||
      !specialized.getConsumers().isAncestor(op->getParentRegion()))
    return op->emitOpError(
        "must be in the consumers of a fagpu.warp_specialize");
  if (int64_t(specialized.getConsumerThreads()) != 128 * warpgroups)
    return op->emitOpError("turns of ")
           << warpgroups << " warpgroups, but the consumers are "
           << specialized.getConsumerThreads() / 128;
  return success();
}

LogicalResult TakeTurnOp::verify() {
  if (getFirst() && getEnd())
    return emitOpError("is either the first take or the end, not both");
  return verifyTurn(*this, getWarpgroups());
}

LogicalResult PassTurnOp::verify() {
  if (getLast() && getStart())
    return emitOpError("is either the last pass or the start, not both");
  return verifyTurn(*this, getWarpgroups());
}

LogicalResult BlockCoordsOp::verify() {
  if (bool(getWork()) != bool(getTiles()))
    return emitOpError("takes a work item and its tiles together");
  if (getWork() && getRematerialize())
    return emitOpError("of a work item cannot be rematerialized (the item "
                       "is a value, not a special register)");
  if (getPaired() && (!getWork() || !getHeavyFirst()))
    return emitOpError("takes paired with a work item and heavy_first only");
  if (getSortedTail() && !getPaired())
    return emitOpError("takes sorted_tail with paired only");
  if (getHeadGroup() && (getWork() || !getHeavyFirst()))
    return emitOpError("takes head_group with heavy_first only, not with a "
                       "work item");
  if (getBatchFastest() && (getWork() || getHeadGroup()))
    return emitOpError("takes batch_fastest without a work item or "
                       "head_group (each is an order of its own)");
  return success();
}

/// A register tile read from a stage of `source` holds its elements.
static LogicalResult verifyReadOfTile(Operation *op, Value source,
                                      Type resultType) {
  auto tile = cast<SharedType>(source.getType());
  auto result = cast<RankedTensorType>(resultType);
  if (result.getDimSize(0) != tile.getRows() ||
      result.getDimSize(1) != tile.getCols() ||
      result.getElementType() != tile.getElementType())
    return op->emitOpError("result ")
           << result << " must have the tile's shape and element type (" << tile
           << ")";
  return success();
}

LogicalResult LoadOperandOp::verify() {
  if (failed(verifyRegisterTile(*this, getType(), Layout::Operand, "result")))
    return failure();
  return verifyReadOfTile(*this, getSource(), getType());
}

LogicalResult LoadTileOp::verify() {
  if (failed(verifyRegisterTile(*this, getType(), Layout::Acc, "result",
                                /*narrow=*/true)))
    return failure();
  if (!cast<SharedType>(getSource().getType()).getWgmma())
    return emitOpError("the tile must be in wgmma's layout (128-byte "
                       "swizzled panels, as TMA writes it)");
  return verifyReadOfTile(*this, getSource(), getType());
}

LogicalResult MmaOp::verify() {
  if (failed(verifyRegisterTile(*this, getType(), Layout::Acc, "result")))
    return failure();
  auto result = cast<RankedTensorType>(getType());
  if (getAcc() && getAcc().getType() != result)
    return emitOpError("acc must have the result's type");
  int64_t m, k;
  Type aElement;
  unsigned warps = getLayoutWarps(result);
  if (auto shared = dyn_cast<SharedType>(getA().getType())) {
    if (shared.getStages() != 1)
      return emitOpError("a shared A operand must have one stage");
    m = shared.getRows(), k = shared.getCols();
    aElement = shared.getElementType();
  } else {
    if (failed(
            verifyRegisterTile(*this, getA().getType(), Layout::Operand, "A")))
      return failure();
    auto a = cast<RankedTensorType>(getA().getType());
    if (getLayoutWarps(a) != warps)
      return emitOpError("A and the result must be spread over as many warps");
    m = a.getDimSize(0), k = a.getDimSize(1);
    aElement = a.getElementType();
  }
  auto b = cast<SharedType>(getB().getType());
  if (b.getElementType() != aElement)
    return emitOpError("A and B must have one element type (")
           << aElement << " vs " << b.getElementType() << ")";
  int64_t bk = getBTransposed() ? b.getCols() : b.getRows();
  int64_t bn = getBTransposed() ? b.getRows() : b.getCols();
  int64_t n = result.getDimSize(1);
  if (m != result.getDimSize(0) || k != bk ||
      (bn != n && !(getWgmma() && bn > n)))
    return emitOpError("shapes do not compose: A is ")
           << m << "x" << k << ", B " << bk << "x" << bn << ", the result "
           << result.getDimSize(0) << "x" << n
           << (getWgmma() ? " (with wgmma B may have more columns)" : "");
  if (k % 16 != 0 || n % 16 != 0)
    return emitOpError("K and N must be multiples of 16 (got ")
           << k << ", " << n << ")";
  if (std::optional<int64_t> depth = getDepth();
      depth && (*depth % 16 != 0 || *depth >= k))
    return emitOpError("depth must be a multiple of 16 below K = ")
           << k << " (got " << *depth << ")";
  auto shared = dyn_cast<SharedType>(getA().getType());
  if (getAsync()) {
    if (!getWgmma())
      return emitOpError("only a wgmma product runs asynchronously");
    // In-flight registers are read only once waited for.
    for (Operation *user : getResult().getUsers())
      if (!isa<MmaWaitOp>(user))
        return emitOpError("an async product's result is read only through "
                           "fagpu.mma_wait");
  }
  if (!getWgmma()) {
    if (b.getWgmma() || (shared && shared.getWgmma()))
      return emitOpError("tiles in wgmma's swizzle are read by wgmma only");
    return success();
  }
  // A warpgroup (4 warps) computes 64 rows: warp w of it the 16 rows that
  // the accumulator layout gives it.
  if (warps % 4 != 0)
    return emitOpError("wgmma needs the accumulator over whole warpgroups "
                       "(a multiple of 4 warps), got ")
           << warps;
  if (!b.getWgmma() || (shared && !shared.getWgmma()))
    return emitOpError("wgmma reads shared tiles in wgmma's swizzle "
                       "(!fagpu.shared<..., wgmma>)");
  if (bn > 256)
    return emitOpError("wgmma's N is at most 256 (got ") << bn << ")";
  return success();
}

LogicalResult
MmaWaitOp::inferReturnTypes(MLIRContext *, std::optional<Location>,
                            ValueRange operands, DictionaryAttr attributes,
                            OpaqueProperties properties, RegionRange regions,
                            SmallVectorImpl<Type> &inferred) {
  // The waited product, then each `after` value as it is.
  Adaptor adaptor(operands, attributes, properties, regions);
  inferred.push_back(adaptor.getSource().getType());
  for (Value ready : adaptor.getReady())
    inferred.push_back(ready.getType());
  return success();
}

LogicalResult MmaWaitOp::verify() {
  auto mma = getSource().getDefiningOp<MmaOp>();
  if (!mma || !mma.getAsync())
    return emitOpError("source must be the result of an async fagpu.mma");
  if (getReads() && getReads() != mma.getA())
    return emitOpError("reads must be the product's A operand");
  return success();
}

LogicalResult ToOperandOp::verify() {
  if (failed(verifyRegisterTile(*this, getSource().getType(), Layout::Acc,
                                "source")) ||
      failed(verifyRegisterTile(*this, getType(), Layout::Operand, "result")))
    return failure();
  auto source = cast<RankedTensorType>(getSource().getType());
  auto result = cast<RankedTensorType>(getType());
  if (source.getShape() != result.getShape() ||
      getLayoutWarps(source) != getLayoutWarps(result))
    return emitOpError("source and result must have one shape and warps");
  return success();
}

LogicalResult ReduceRowsOp::verify() {
  if (failed(verifyRegisterTile(*this, getType(), Layout::Rows, "result")))
    return failure();
  auto result = cast<RankedTensorType>(getType());
  auto source = cast<RankedTensorType>(getSource().getType());
  if (source.getRank() == 1) {
    if (failed(verifyRegisterTile(*this, source, Layout::Rows, "source")))
      return failure();
    if (!isPartial(source) || isPartial(result) || getKind() != ReduceKind::Sum)
      return emitOpError("reduces row values only from a partial sum to a "
                         "full one");
  } else {
    if (failed(verifyRegisterTile(*this, source, Layout::Acc, "source")))
      return failure();
    if (isPartial(result) && getKind() != ReduceKind::Sum)
      return emitOpError("only a sum may be left partial");
  }
  if (source.getDimSize(0) != result.getDimSize(0) ||
      getLayoutWarps(source) != getLayoutWarps(result))
    return emitOpError("source and result must have one row count and warps");
  return success();
}

LogicalResult UpdateRowSumOp::verify() {
  if (failed(
          verifyRegisterTile(*this, getSum().getType(), Layout::Rows, "sum")) ||
      failed(verifyRegisterTile(*this, getValues().getType(), Layout::Acc,
                                "values")))
    return failure();
  if (!isPartial(getSum().getType()))
    return emitOpError("sum must be a partial row sum");
  auto sum = cast<RankedTensorType>(getSum().getType());
  auto values = cast<RankedTensorType>(getValues().getType());
  if (sum.getDimSize(0) != values.getDimSize(0) ||
      getLayoutWarps(sum) != getLayoutWarps(values))
    return emitOpError("sum and values must have one row count and warps");
  if (std::optional<Type> rounded = getRounded();
      rounded && !isa<Float16Type, BFloat16Type>(*rounded))
    return emitOpError("rounded must be f16 or bf16 (got ") << *rounded << ")";
  return success();
}

LogicalResult ScaleRowsOp::verify() {
  auto source = dyn_cast<RankedTensorType>(getSource().getType());
  Attribute encoding = source ? source.getEncoding() : Attribute();
  if (!isa_and_nonnull<AccLayoutAttr, RowsLayoutAttr>(encoding))
    return emitOpError("source must be a tensor in #fagpu.acc or #fagpu.rows "
                       "layout (got ")
           << getSource().getType() << ")";
  bool rows = isa<RowsLayoutAttr>(encoding);
  if (failed(verifyRegisterTile(*this, source,
                                rows ? Layout::Rows : Layout::Acc, "source")) ||
      failed(verifyRegisterTile(*this, getFactors().getType(), Layout::Rows,
                                "factors")))
    return failure();
  auto factors = cast<RankedTensorType>(getFactors().getType());
  if (isPartial(factors))
    return emitOpError("factors must be full row values, not a partial sum");
  if (source.getDimSize(0) != factors.getDimSize(0) ||
      getLayoutWarps(source) != getLayoutWarps(factors))
    return emitOpError("source and factors must have one row count and warps");
  return success();
}

LogicalResult BroadcastRowsOp::verify() {
  if (failed(verifyRegisterTile(*this, getSource().getType(), Layout::Rows,
                                "source")) ||
      failed(verifyRegisterTile(*this, getType(), Layout::Acc, "result")))
    return failure();
  auto source = cast<RankedTensorType>(getSource().getType());
  auto result = cast<RankedTensorType>(getType());
  if (isPartial(source))
    return emitOpError("cannot broadcast a partial row sum");
  if (source.getDimSize(0) != result.getDimSize(0) ||
      getLayoutWarps(source) != getLayoutWarps(result))
    return emitOpError("source and result must have one row count and warps");
  return success();
}

LogicalResult MergeKeyRangeOp::verify() {
  for (auto [value, name] :
       {std::make_pair(getFirst(), "first"), std::make_pair(getLast(), "last"),
        std::make_pair(getFullFirst(), "full_first"),
        std::make_pair(getFullLast(), "full_last")}) {
    auto type = cast<RankedTensorType>(value.getType());
    if (failed(verifyRegisterTile(*this, type, Layout::Rows, name)))
      return failure();
    if (isPartial(type))
      return emitOpError(name) << " must be whole rows, not partial ones";
  }
  auto type = cast<RankedTensorType>(getFirst().getType());
  if (getLayoutWarps(type) != ::fa::runtime::kKeyRangeWarps ||
      !type.getElementType().isF32())
    return emitOpError("the tiles are f32 rows of ")
           << ::fa::runtime::kKeyRangeWarps << " warps";
  return verifyKeyRanges(*this, getRanges());
}

LogicalResult FullKeysOp::verify() {
  if (getBlockQ() <= 0)
    return emitOpError("block_q must be positive");
  return verifyKeyRanges(*this, getKeyRanges());
}

LogicalResult StoreOp::verify() {
  auto value = cast<RankedTensorType>(getValue().getType());
  auto dest = dyn_cast<MemRefType>(getDest().getType());
  if (value.getRank() == 1) {
    if (failed(verifyRegisterTile(*this, value, Layout::Rows, "value")))
      return failure();
    if (isPartial(value))
      return emitOpError("cannot store a partial row sum");
    if (!dest || dest.getRank() != 3 || !dest.getElementType().isF32())
      return emitOpError("row values go to a rank-3 f32 memref [B, H, N]");
    return success();
  }
  if (failed(verifyRegisterTile(*this, value, Layout::Acc, "value")))
    return failure();
  if (!dest || dest.getRank() != 4)
    return emitOpError("a tile goes to a rank-4 memref [B, H, N, D]");
  Type et = dest.getElementType();
  if (!et.isF16() && !et.isBF16())
    return emitOpError("a tile is stored as f16 or bf16 (got ") << et << ")";
  if (!dest.isDynamicDim(3) && dest.getDimSize(3) != value.getDimSize(1))
    return emitOpError("the tile has ")
           << value.getDimSize(1) << " columns, dest rows "
           << dest.getDimSize(3);
  return success();
}
