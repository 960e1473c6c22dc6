//===- AsyncCopyRing.cpp - fa-async-copy on fagpu forward kernels ---------===//
//
// fa-tile's forward kernel copies each tile synchronously: Q before the K/V
// loop, K and V at the top of each iteration. Here those copies become
// asynchronous, with explicit commits and waits, into rings of `stages` K
// and V buffers:
//
//  - 1 stage (FlashAttention-2's schedule): K(0) is issued before the loop;
//    iteration n waits for K(n), issues V(n) and computes S = Q K(n)^T,
//    then waits for V(n), issues K(n + 1) into K's buffer (S no longer
//    reads it) and computes the softmax and P V(n). Two barriers per tile.
//  - S > 1 stages: tiles 0 .. S - 2 are issued before the loop (K and V of
//    a tile in one group); iteration n waits for tile n (S - 2 later groups
//    may stay in flight), has the CTA pass a barrier (everyone is done with
//    tile n - 1) and issues tile n + S - 1 into tile n - 1's stage. One
//    barrier per tile; a copy has S - 1 tiles of math to land.
//
// Groups are tokens: the loop carries those in flight as iteration
// arguments, so each wait names the group it waits for.
//
//===----------------------------------------------------------------------===//

#include "fa/Dialect/FAGPU/IR/FAGPU.h"
#include "fa/Transforms/GpuKernels.h"
#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/GPU/IR/GPUDialect.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/IR/Builders.h"
#include "mlir/IR/IRMapping.h"

using namespace mlir;
using namespace mlir::fa;

namespace {

/// `copy` started asynchronously at the insertion point, from `row` into
/// stage `stage` of `dest`, where `predicate` (if any) holds.
Value startCopy(OpBuilder &b, fagpu::CopyOp copy, Value row, Value dest,
                Value stage, Value predicate = {}) {
  return fagpu::AsyncCopyOp::create(
      b, copy.getLoc(), fagpu::TokenType::get(b.getContext()), copy.getSource(),
      copy.getBatch(), copy.getHead(), row, copy.getBound(), dest, stage,
      predicate);
}

/// One group: the copies `issue` starts where `predicate` holds (every
/// thread commits as many groups on every path).
Value commitIf(OpBuilder &b, Location loc, Value predicate,
               function_ref<SmallVector<Value>(Value)> issue) {
  return fagpu::AsyncCommitOp::create(
      b, loc, fagpu::TokenType::get(b.getContext()), issue(predicate));
}

} // namespace

FailureOr<int64_t> mlir::fa::ringForwardCopies(gpu::GPUFuncOp kernel,
                                               int64_t stages) {
  std::optional<ForwardCopies> copies = matchForwardCopies(kernel);
  if (!copies)
    return kernel.emitOpError(
        "fa-async-copy: expected fa-tile's forward kernel: a copy of Q, then "
        "a loop over K/V tiles that starts with their copies");
  Block &entry = kernel.getBody().front();
  fagpu::CopyOp qCopy = copies->q, kCopy = copies->k, vCopy = copies->v;
  fagpu::AllocSharedOp qAlloc = copies->qTile, kAlloc = copies->kTile,
                       vAlloc = copies->vTile;
  scf::ForOp loop = copies->loop;

  MLIRContext *ctx = kernel.getContext();
  Location loc = loop.getLoc();
  OpBuilder b(kAlloc);
  auto qType = cast<fagpu::SharedType>(qAlloc.getType());
  auto kType = cast<fagpu::SharedType>(kAlloc.getType());
  // V's tiles have Dv columns, Q's and K's D.
  auto vType = cast<fagpu::SharedType>(vAlloc.getType());
  int64_t qBytes = qType.getStageBytes(), kBytes = kType.getStageBytes(),
          vBytes = vType.getStageBytes();
  Value kRing =
      fagpu::AllocSharedOp::create(b, loc, kType.withStages(stages), qBytes);
  Value vRing = fagpu::AllocSharedOp::create(b, loc, vType.withStages(stages),
                                             qBytes + stages * kBytes);
  kAlloc.getResult().replaceAllUsesWith(kRing);
  vAlloc.getResult().replaceAllUsesWith(vRing);
  kAlloc.erase();
  vAlloc.erase();

  // Q: started first; waited for where its fragments are loaded (the K/V
  // groups after it may stay in flight), else at the loop's first wait.
  b.setInsertionPoint(qCopy);
  Value qToken =
      startCopy(b, qCopy, qCopy.getRow(), qCopy.getDest(), qCopy.getStage());
  Value qGroup = fagpu::AsyncCommitOp::create(
      b, qCopy.getLoc(), fagpu::TokenType::get(b.getContext()), qToken);

  // The prologue: tiles 0 .. S - 2 (K(0) alone with one stage).
  b.setInsertionPoint(loop);
  Value begin = loop.getLowerBound(), end = loop.getUpperBound(),
        step = loop.getStep();
  int64_t ahead = std::max<int64_t>(stages - 1, 1);
  SmallVector<Value> inFlight;
  for (int64_t t = 0; t < ahead; ++t) {
    Value row =
        t == 0
            ? begin
            : arith::AddIOp::create(
                  b, loc, begin,
                  arith::MulIOp::create(
                      b, loc, step, arith::ConstantIndexOp::create(b, loc, t)));
    Value has =
        arith::CmpIOp::create(b, loc, arith::CmpIPredicate::slt, row, end);
    Value stage = arith::ConstantIndexOp::create(b, loc, t);
    inFlight.push_back(commitIf(b, loc, has, [&](Value p) {
      SmallVector<Value> tokens{startCopy(b, kCopy, row, kRing, stage, p)};
      if (stages > 1)
        tokens.push_back(startCopy(b, vCopy, row, vRing, stage, p));
      return tokens;
    }));
  }
  // Q's fragments load after the prologue's copies are issued: the wait
  // counts the groups committed after Q's.
  for (Operation *user : llvm::to_vector(qAlloc->getUsers()))
    if (auto load = dyn_cast<fagpu::LoadOperandOp>(user);
        load && load->getBlock() == &entry) {
      fagpu::AsyncWaitOp::create(b, loc, qGroup, int64_t(inFlight.size()));
      gpu::BarrierOp::create(b, loc);
      load->moveBefore(loop);
    }
  qCopy.erase();

  // The loop carries the groups in flight.
  IRRewriter rewriter(ctx);
  auto yields = [&](OpBuilder &yb, Location,
                    ArrayRef<BlockArgument> tokens) -> SmallVector<Value> {
    Value kv0 = loop.getInductionVar();
    OpBuilder lb(kCopy);
    SmallVector<Value> next(tokens.begin() + 1, tokens.end());
    if (stages == 1) {
      // Wait for K(n); everyone is done with V(n - 1): issue V(n).
      fagpu::AsyncWaitOp::create(lb, loc, tokens[0], 0);
      gpu::BarrierOp::create(lb, loc);
      Value vToken = startCopy(lb, vCopy, kv0, vRing, vCopy.getStage());
      Value vGroup = fagpu::AsyncCommitOp::create(
          lb, loc, fagpu::TokenType::get(lb.getContext()), vToken);
      // After S, the last read of K(n): wait for V(n), issue K(n + 1).
      fagpu::MmaOp scores;
      for (Operation *user : kRing.getUsers())
        if (auto mma = dyn_cast<fagpu::MmaOp>(user);
            mma && mma->getParentOp() == loop)
          scores = mma;
      lb.setInsertionPointAfter(scores);
      fagpu::AsyncWaitOp::create(lb, loc, vGroup, 0);
      gpu::BarrierOp::create(lb, loc);
      Value nextRow = arith::AddIOp::create(lb, loc, kv0, step);
      Value more = arith::CmpIOp::create(lb, loc, arith::CmpIPredicate::slt,
                                         nextRow, end);
      next.push_back(commitIf(lb, loc, more, [&](Value p) {
        return SmallVector<Value>{
            startCopy(lb, kCopy, nextRow, kRing, kCopy.getStage(), p)};
      }));
    } else {
      // Wait for tile n; everyone is done with tile n - 1: issue tile
      // n + S - 1 into its stage.
      fagpu::AsyncWaitOp::create(lb, loc, tokens[0], stages - 2);
      gpu::BarrierOp::create(lb, loc);
      auto cst = [&](int64_t v) {
        return arith::ConstantIndexOp::create(lb, loc, v);
      };
      Value n = arith::DivUIOp::create(
          lb, loc, arith::SubIOp::create(lb, loc, kv0, begin), step);
      // n % S and (n - 1) % S: a mask, and a flip for two stages.
      // Remainders in i32 (a 64-bit one is a long sequence on the GPU).
      bool pow2 = llvm::isPowerOf2_64(stages);
      Type i32 = lb.getI32Type();
      auto mod = [&](Value x) -> Value {
        Value x32 = arith::IndexCastUIOp::create(lb, loc, i32, x);
        Value r = arith::RemUIOp::create(
            lb, loc, x32, arith::ConstantIntOp::create(lb, loc, i32, stages));
        return arith::IndexCastUIOp::create(lb, loc, lb.getIndexType(), r);
      };
      Value stage =
          pow2 ? Value(arith::AndIOp::create(lb, loc, n, cst(stages - 1)))
               : mod(n);
      Value freed =
          stages == 2 ? Value(arith::XOrIOp::create(lb, loc, stage, cst(1)))
                      : mod(arith::AddIOp::create(lb, loc, n, cst(stages - 1)));
      Value nextRow = arith::AddIOp::create(
          lb, loc, kv0, arith::MulIOp::create(lb, loc, step, cst(stages - 1)));
      Value more = arith::CmpIOp::create(lb, loc, arith::CmpIPredicate::slt,
                                         nextRow, end);
      next.push_back(commitIf(lb, loc, more, [&](Value p) {
        return SmallVector<Value>{
            startCopy(lb, kCopy, nextRow, kRing, freed, p),
            startCopy(lb, vCopy, nextRow, vRing, freed, p)};
      }));
      for (Operation *user : llvm::to_vector(kRing.getUsers()))
        if (auto mma = dyn_cast<fagpu::MmaOp>(user);
            mma && mma->getParentOp() == loop)
          mma.getBStageMutable().assign(stage);
      for (Operation *user : llvm::to_vector(vRing.getUsers()))
        if (auto mma = dyn_cast<fagpu::MmaOp>(user);
            mma && mma->getParentOp() == loop)
          mma.getBStageMutable().assign(stage);
    }
    kCopy.erase();
    vCopy.erase();
    return next;
  };
  rewriter.setInsertionPoint(loop);
  FailureOr<LoopLikeOpInterface> ringed =
      cast<LoopLikeOpInterface>(loop.getOperation())
          .replaceWithAdditionalYields(rewriter, inFlight,
                                       /*replaceInitOperandUsesInLoop=*/false,
                                       yields);
  if (failed(ringed))
    return kernel.emitOpError("fa-async-copy: could not ring the K/V loop");
  return qBytes + stages * (kBytes + vBytes);
}
