//===- OverlapSoftmax.cpp - Softmax under the tensor cores' P V -----------===//
//
// fa-async-copy's forward loop computes, per K/V tile n: S(n) = Q K(n)^T,
// its softmax, then P(n) V(n), each product waited for before what reads
// it, so the tensor cores idle during the softmax. With warpgroup MMAs,
// which run asynchronously, the loop is rotated by one product (FA3's
// intra-warpgroup overlap): iteration n starts S(n) and then P(n - 1)
// V(n - 1), waits for S(n) only, computes the softmax of tile n while
// P V runs, and waits for P V before rounding P and rescaling the
// accumulator (P(n - 1)'s registers are the tensor cores' until then). Tile 0's
// scores and softmax are peeled before the loop and the last P V after it
// (rotateSoftmaxLoop, shared with fa-warp-specialize).
//
// V(n - 1) is read during iteration n, so V's copies run one tile behind
// K's: tile n's group holds K(n) and V(n - 1), and the stage tile n - 1's
// P V frees is refilled only once every thread waited for it, at the next
// iteration's barrier.
//
//===----------------------------------------------------------------------===//

#include "fa/Dialect/FAGPU/IR/FAGPU.h"
#include "fa/Transforms/GpuKernels.h"
#include "fa/Transforms/Passes.h"
#include "fa/Transforms/SoftmaxRotation.h"
#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/GPU/IR/GPUDialect.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/IR/Builders.h"

namespace mlir::fa {
#define GEN_PASS_DEF_FAOVERLAPSOFTMAX
#include "fa/Transforms/Passes.h.inc"
} // namespace mlir::fa

using namespace mlir;
using namespace mlir::fa;

namespace {

/// The parts of fa-async-copy's ringed K/V loop the rotation moves.
struct RingedLoop {
  /// The loop and its products (the position is set by rotate).
  SoftmaxLoop softmax;
  fagpu::AsyncCopyOp vCopy;
  /// V's copies before the loop, tile 0 first.
  SmallVector<fagpu::AsyncCopyOp> vPrologue;
  int64_t stages = 0;
};

FailureOr<RingedLoop> matchRingedLoop(gpu::GPUFuncOp kernel) {
  auto fail = [&](const Twine &why) {
    return kernel.emitOpError("fa-overlap-softmax: ") << why;
  };
  RingedLoop r;
  Block &entry = kernel.getBody().front();
  for (auto loop : entry.getOps<scf::ForOp>()) {
    r.softmax.loop = loop;
    break;
  }
  if (!r.softmax.loop)
    return fail("expected the forward kernel's loop over K/V tiles");
  Block *body = r.softmax.loop.getBody();
  for (Operation &op : *body) {
    if (auto mma = dyn_cast<fagpu::MmaOp>(op))
      (mma.getBTransposed() ? r.softmax.scores : r.softmax.pv) = mma;
    else if (isa<fagpu::CopyOp>(op))
      return fail("the K/V copies are synchronous (run fa-async-copy first)");
  }
  if (!r.softmax.scores || !r.softmax.pv || !r.softmax.scores.getWgmma() ||
      !r.softmax.pv.getWgmma() || r.softmax.scores.getAsync() ||
      r.softmax.pv.getAsync())
    return fail("expected one wgmma product S = Q K^T and one O += P V in the "
                "loop");
  auto yield = cast<scf::YieldOp>(body->getTerminator());
  if (!matchCarriedAccumulator(r.softmax) || !r.softmax.pv->hasOneUse() ||
      *r.softmax.pv->user_begin() != yield ||
      r.softmax.pv.getBStage() != r.softmax.scores.getBStage())
    return fail("expected P V to add to the carried accumulator, rescaled "
                "or not (fa-online-softmax's or fa-bounded-softmax's loop), "
                "and to read the stage S reads");
  r.softmax.pack = r.softmax.pv.getA().getDefiningOp<fagpu::ToOperandOp>();
  if (!r.softmax.pack || r.softmax.pack->getBlock() != body ||
      !r.softmax.pack->hasOneUse())
    return fail("expected P V's A operand to be P rounded in the loop "
                "(fagpu.to_operand)");
  if (yield.getOperand(r.softmax.accIndex) != r.softmax.pv.getResult())
    return fail("expected the loop to carry P V's result");
  Value kRing = r.softmax.scores.getB(), vRing = r.softmax.pv.getB();
  r.stages = cast<fagpu::SharedType>(vRing.getType()).getStages();
  for (Operation *user : vRing.getUsers()) {
    auto copy = dyn_cast<fagpu::AsyncCopyOp>(user);
    if (!copy)
      continue;
    if (copy->getParentOp() == r.softmax.loop)
      r.vCopy = copy;
    else if (copy->getBlock() == &entry)
      r.vPrologue.push_back(copy);
  }
  llvm::sort(r.vPrologue, [](fagpu::AsyncCopyOp a, fagpu::AsyncCopyOp b) {
    return a->isBeforeInBlock(b);
  });
  if (!r.vCopy || int64_t(r.vPrologue.size()) != r.stages - 1 ||
      r.stages != cast<fagpu::SharedType>(kRing.getType()).getStages())
    return fail("expected a ring of K/V stages from fa-async-copy (one V copy "
                "per stage ahead before the loop, one in it)");
  return r;
}

/// Tile n's group holds K(n) and V(n - 1): each V copy moves one tile back.
void skewValueCopies(RingedLoop &r) {
  // Before the loop: the copy of tile t takes tile t - 1's place; tile 0's
  // goes.
  for (size_t t = r.vPrologue.size() - 1; t > 0; --t) {
    fagpu::AsyncCopyOp to = r.vPrologue[t], from = r.vPrologue[t - 1];
    to.getRowMutable().assign(from.getRow());
    to.getStageMutable().assign(from.getStage());
    if (from.getPredicate())
      to.getPredicateMutable().assign(from.getPredicate());
  }
  fagpu::AsyncCopyOp first = r.vPrologue.front();
  for (Operation *user : llvm::to_vector(first.getToken().getUsers())) {
    auto commit = cast<fagpu::AsyncCommitOp>(user);
    SmallVector<Value> tokens;
    for (Value token : commit.getTokens())
      if (token != first.getToken())
        tokens.push_back(token);
    commit->setOperands(tokens);
  }
  first.erase();
  // In the loop: tile n + S - 2 into stage (n + S - 2) mod S, where it
  // issued tile n + S - 1 into stage (n - 1) mod S.
  OpBuilder b(r.vCopy);
  Location loc = r.vCopy.getLoc();
  scf::ForOp loop = r.softmax.loop;
  Value step = loop.getStep(), kv0 = loop.getInductionVar();
  auto cst = [&](int64_t v) -> Value {
    return arith::ConstantIndexOp::create(b, loc, v);
  };
  Value row =
      r.stages == 2
          ? kv0
          : Value(arith::AddIOp::create(
                b, loc, kv0,
                arith::MulIOp::create(b, loc, step, cst(r.stages - 2))));
  Value stage = r.softmax.scores.getBStage();
  if (r.stages > 2)
    stage = arith::RemUIOp::create(
        b, loc, arith::AddIOp::create(b, loc, stage, cst(r.stages - 2)),
        cst(r.stages));
  r.vCopy.getRowMutable().assign(row);
  r.vCopy.getStageMutable().assign(stage);
  // Tile n itself is in range; later ones may not be.
  if (r.stages == 2)
    r.vCopy.getPredicateMutable().clear();
  else
    r.vCopy.getPredicateMutable().assign(arith::CmpIOp::create(
        b, loc, arith::CmpIPredicate::slt, row, loop.getUpperBound()));
}

/// The rotated loop, guarded by "there is a tile", in place of
/// `r.softmax.loop`; the last P V waits for the group the loop left in flight
/// first, which holds the last V.
void rotate(RingedLoop &r) {
  SoftmaxLoop l = r.softmax;
  l.position = {l.pv.getBStage()};
  Location loc = r.softmax.loop.getLoc();
  auto waitForLastV = [&](OpBuilder &b, ValueRange, ValueRange results) {
    Value group;
    for (Value result : results)
      if (isa<fagpu::TokenType>(result.getType())) {
        group = result;
        break;
      }
    fagpu::AsyncWaitOp::create(b, loc, group, r.stages - 2);
    gpu::BarrierOp::create(b, loc);
  };
  SoftmaxRotationHooks hooks;
  hooks.beforeLastPV = waitForLastV;
  rotateSoftmaxLoop(l, hooks);
}

struct FAOverlapSoftmaxPass
    : public mlir::fa::impl::FAOverlapSoftmaxBase<FAOverlapSoftmaxPass> {
  using Base::Base;
  void runOnOperation() override {
    auto kernels =
        getOperation().lookupSymbol<gpu::GPUModuleOp>(kKernelModuleName);
    if (!kernels)
      return;
    for (auto kernel : kernels.getOps<gpu::GPUFuncOp>()) {
      // fa-tile's wgmma forward kernels with a ring of K/V stages; one
      // stage (FlashAttention-2's schedule) has no buffer for V(n - 1).
      // A kernel already rotated (it waits for async products) stays so.
      auto stages = kernel->getAttrOfType<IntegerAttr>(kKVStagesAttr);
      // Warp-specialized kernels have no ring of cp.async groups to rotate.
      bool tiled = false, rotated = false;
      kernel.walk([&](fagpu::MmaOp) { tiled = true; });
      kernel.walk([&](fagpu::MmaWaitOp) { rotated = true; });
      kernel.walk([&](fagpu::WarpSpecializeOp) { rotated = true; });
      if (!tiled || rotated || !kernel->hasAttr(kWgmmaAttr) || !stages ||
          stages.getInt() < 2)
        continue;
      FailureOr<RingedLoop> ringed = matchRingedLoop(kernel);
      if (failed(ringed))
        return signalPassFailure();
      skewValueCopies(*ringed);
      rotate(*ringed);
    }
  }
};

} // namespace
