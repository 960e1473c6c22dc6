//===- HostParallel.cpp - Share forall iterations among host threads ------===//
//
// The host runs a kernel on T threads by calling its function T times at
// once: each top-level scf.forall becomes a loop whose iterations the calls
// claim from one atomic counter, so that they are spread dynamically (Q
// tiles of a causal mask differ in cost) and each runs exactly once. The
// function needs no outlining and the runtime nothing but threads.
//
//===----------------------------------------------------------------------===//

#include "fa/Transforms/Passes.h"
#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Arith/Utils/Utils.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/LLVMIR/LLVMDialect.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/IR/Builders.h"
#include "mlir/Interfaces/SideEffectInterfaces.h"
#include "mlir/Interfaces/ViewLikeInterface.h"
#include "llvm/ADT/DenseSet.h"

namespace mlir::fa {
#define GEN_PASS_DEF_FAHOSTPARALLEL
#include "fa/Transforms/Passes.h.inc"
} // namespace mlir::fa

using namespace mlir;
using namespace mlir::fa;

namespace {

/// The memory a function's code touches, by the allocation or argument it
/// views.
struct Effects {
  llvm::SmallDenseSet<Value> reads, writes;
};

/// The function argument or allocation `v` is a view of, or null when it
/// comes from something else.
Value getRoot(Value v) {
  while (auto view = v.getDefiningOp<ViewLikeOpInterface>())
    v = view.getViewSource();
  if (isa<BlockArgument>(v) &&
      isa<func::FuncOp>(v.getParentBlock()->getParentOp()))
    return v;
  if (v.getDefiningOp<memref::AllocOp>() || v.getDefiningOp<memref::AllocaOp>())
    return v;
  return nullptr;
}

/// Adds what `op` and the ops nested in it read and write, except memory
/// allocated inside `op` (private to it). Fails on an effect that cannot be
/// traced to a root.
LogicalResult collectEffects(Operation *op, Effects &effects) {
  WalkResult result = op->walk([&](Operation *nested) {
    if (nested->hasTrait<OpTrait::HasRecursiveMemoryEffects>())
      return WalkResult::advance();
    auto iface = dyn_cast<MemoryEffectOpInterface>(nested);
    if (!iface)
      return WalkResult::interrupt();
    SmallVector<MemoryEffects::EffectInstance> instances;
    iface.getEffects(instances);
    for (const MemoryEffects::EffectInstance &e : instances) {
      if (isa<MemoryEffects::Allocate>(e.getEffect()))
        continue;
      Value value = e.getValue();
      Value root = value ? getRoot(value) : Value();
      if (!root)
        return WalkResult::interrupt();
      if (op->isAncestor(root.getParentBlock()->getParentOp()))
        continue;
      if (isa<MemoryEffects::Read>(e.getEffect()))
        effects.reads.insert(root);
      else
        effects.writes.insert(root);
    }
    return WalkResult::advance();
  });
  return failure(result.wasInterrupted());
}

bool intersects(const llvm::SmallDenseSet<Value> &a,
                const llvm::SmallDenseSet<Value> &b) {
  return llvm::any_of(a, [&](Value v) { return b.contains(v); });
}

/// The top-level foralls of `func` if sharing them among concurrent calls
/// gives one call's results (see the pass description), else none.
SmallVector<scf::ForallOp> getShareableLoops(func::FuncOp func) {
  SmallVector<scf::ForallOp> loops;
  llvm::SmallDenseSet<Value> loopWrites;
  for (Operation &op : func.getBody().front().without_terminator()) {
    Effects effects;
    if (failed(collectEffects(&op, effects)))
      return {};
    auto forall = dyn_cast<scf::ForallOp>(op);
    if (forall && forall->getNumResults() == 0) {
      if (intersects(effects.reads, loopWrites) ||
          intersects(effects.writes, loopWrites))
        return {};
      loopWrites.insert(effects.writes.begin(), effects.writes.end());
      loops.push_back(forall);
      continue;
    }
    // Every call runs this: it may write only its own allocations, and
    // after a loop, which other calls may still be running, nothing at all.
    bool ownWrites = llvm::all_of(
        effects.writes, [](Value root) { return !isa<BlockArgument>(root); });
    if (!ownWrites)
      return {};
    if (!loops.empty() && !isa<memref::DeallocOp>(op) &&
        (!effects.reads.empty() || !effects.writes.empty()))
      return {};
  }
  return loops;
}

/// Replaces `forall` by a loop that claims linearized iterations from
/// `counters[index]` until they run out.
void shareLoop(scf::ForallOp forall, Value counters, int64_t index) {
  OpBuilder b(forall);
  Location loc = forall.getLoc();
  Value zero = arith::ConstantIndexOp::create(b, loc, 0);
  Value total = arith::ConstantIndexOp::create(b, loc, 1);
  SmallVector<Value> lbs =
      getValueOrCreateConstantIndexOp(b, loc, forall.getMixedLowerBound());
  SmallVector<Value> ubs =
      getValueOrCreateConstantIndexOp(b, loc, forall.getMixedUpperBound());
  SmallVector<Value> steps =
      getValueOrCreateConstantIndexOp(b, loc, forall.getMixedStep());
  SmallVector<Value> counts;
  for (auto [lb, ub, step] : llvm::zip(lbs, ubs, steps)) {
    Value span = arith::SubIOp::create(b, loc, ub, lb);
    Value count = arith::CeilDivSIOp::create(b, loc, span, step);
    count = arith::MaxSIOp::create(b, loc, count, zero);
    counts.push_back(count);
    total = arith::MulIOp::create(b, loc, total, count);
  }

  Type indexType = b.getIndexType();
  Value one = arith::ConstantIntOp::create(b, loc, 1, 64);
  Value slot = arith::ConstantIndexOp::create(b, loc, index);
  auto loop = scf::WhileOp::create(b, loc, TypeRange{indexType}, ValueRange{});
  b.createBlock(&loop.getBefore());
  Value claimed = memref::AtomicRMWOp::create(
      b, loc, arith::AtomicRMWKind::addi, one, counters, ValueRange{slot});
  Value linear = arith::IndexCastOp::create(b, loc, indexType, claimed);
  Value more =
      arith::CmpIOp::create(b, loc, arith::CmpIPredicate::ult, linear, total);
  scf::ConditionOp::create(b, loc, more, ValueRange{linear});

  // The last dimension varies fastest, as in the sequential loop nest.
  Block *after = b.createBlock(&loop.getAfter(), {}, {indexType}, {loc});
  Value rest = after->getArgument(0);
  Block *body = forall.getBody();
  for (int64_t d = counts.size() - 1; d >= 0; --d) {
    Value i = arith::RemUIOp::create(b, loc, rest, counts[d]);
    rest = arith::DivUIOp::create(b, loc, rest, counts[d]);
    Value scaled = arith::MulIOp::create(b, loc, i, steps[d]);
    Value iv = arith::AddIOp::create(b, loc, lbs[d], scaled);
    body->getArgument(d).replaceAllUsesWith(iv);
  }
  after->getOperations().splice(after->end(), body->getOperations(),
                                body->begin(), std::prev(body->end()));
  b.setInsertionPointToEnd(after);
  scf::YieldOp::create(b, loc);
  forall.erase();
}

struct FAHostParallelPass
    : public mlir::fa::impl::FAHostParallelBase<FAHostParallelPass> {
  using Base::Base;
  void runOnOperation() override {
    func::FuncOp func = getOperation();
    if (func.isExternal() || func->hasAttr(kSharedLoopsAttr))
      return;
    SmallVector<scf::ForallOp> loops = getShareableLoops(func);
    if (loops.empty())
      return;
    MLIRContext *ctx = func.getContext();
    auto countersType = MemRefType::get({static_cast<int64_t>(loops.size())},
                                        IntegerType::get(ctx, 64));
    unsigned argIndex = func.getNumArguments();
    NamedAttribute noAlias(LLVM::LLVMDialect::getNoAliasAttrName(),
                           UnitAttr::get(ctx));
    if (failed(func.insertArgument(argIndex, countersType,
                                   DictionaryAttr::get(ctx, {noAlias}),
                                   func.getLoc())))
      return signalPassFailure();
    Value counters = func.getArgument(argIndex);
    for (auto [i, forall] : llvm::enumerate(loops))
      shareLoop(forall, counters, i);
    func->setAttr(kSharedLoopsAttr,
                  IntegerAttr::get(IntegerType::get(ctx, 64), loops.size()));
  }
};

} // namespace
