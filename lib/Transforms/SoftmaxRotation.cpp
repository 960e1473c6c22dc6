//===- SoftmaxRotation.cpp - The forward loop rotated by one product ------===//

#include "fa/Transforms/SoftmaxRotation.h"
#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/IR/IRMapping.h"

using namespace mlir;
using namespace mlir::fa;

bool mlir::fa::matchCarriedAccumulator(SoftmaxLoop &l) {
  Block *body = l.loop.getBody();
  Value acc = l.pv.getAcc();
  l.rescale =
      acc ? acc.getDefiningOp<fagpu::ScaleRowsOp>() : fagpu::ScaleRowsOp();
  auto accArg = l.rescale ? dyn_cast<BlockArgument>(l.rescale.getSource())
                          : dyn_cast_or_null<BlockArgument>(acc);
  if (!accArg || accArg.getOwner() != body || !accArg.hasOneUse() ||
      (l.rescale && (!l.rescale->hasOneUse() || l.rescale->getBlock() != body)))
    return false;
  l.accIndex = accArg.getArgNumber() - 1;
  return true;
}

void mlir::fa::rotateSoftmaxLoop(SoftmaxLoop l,
                                 const SoftmaxRotationHooks &hooks) {
  scf::ForOp loop = l.loop;
  Location loc = loop.getLoc();
  Block *body = loop.getBody();
  auto yield = cast<scf::YieldOp>(body->getTerminator());
  auto skipped = [&](Operation &op) {
    return &op == l.pv.getOperation() || (hooks.skip && hooks.skip(&op));
  };
  OpBuilder b(loop);
  Value begin = loop.getLowerBound(), end = loop.getUpperBound(),
        step = loop.getStep();
  Value any =
      arith::CmpIOp::create(b, loc, arith::CmpIPredicate::slt, begin, end);
  auto guard =
      scf::IfOp::create(b, loc, loop.getResultTypes(), any, /*withElse=*/true);
  b.setInsertionPointToStart(guard.elseBlock());
  if (hooks.noTiles)
    hooks.noTiles(b);
  scf::YieldOp::create(b, loc, loop.getInitArgs());

  // Tile 0: everything but P V.
  b.setInsertionPointToStart(guard.thenBlock());
  IRMapping peel;
  peel.map(loop.getInductionVar(), begin);
  peel.map(loop.getRegionIterArgs(), loop.getInitArgs());
  for (Operation &op : body->without_terminator()) {
    if (skipped(op))
      continue;
    bool scores = &op == l.scores.getOperation();
    if (scores && hooks.beforeScores)
      hooks.beforeScores(b, /*first=*/true);
    b.clone(op, peel);
    if (scores && hooks.afterPeeledScores)
      hooks.afterPeeledScores(b);
  }
  // The rotated loop carries acc * alpha (not yet plus P V), P and the
  // ring position P V reads.
  SmallVector<Value> inits;
  for (auto [i, value] : llvm::enumerate(yield.getOperands()))
    inits.push_back(i != l.accIndex ? peel.lookupOrDefault(value)
                    : l.rescale     ? peel.lookup(l.rescale.getResult())
                                    : loop.getInitArgs()[i]);
  inits.push_back(peel.lookup(l.pack.getResult()));
  for (Value value : l.position)
    inits.push_back(peel.lookupOrDefault(value));
  Value second = arith::AddIOp::create(b, loc, begin, step);
  auto rotated = scf::ForOp::create(b, loc, second, end, step, inits);
  rotated->setDiscardableAttrs(loop->getDiscardableAttrDictionary());
  unsigned n = yield.getNumOperands();
  size_t positions = l.position.size();
  {
    OpBuilder::InsertionGuard g(b);
    b.setInsertionPointToStart(rotated.getBody());
    ValueRange args = rotated.getRegionIterArgs();
    Value pPrev = args[n];
    ValueRange positionPrev = args.slice(n + 1, positions);
    IRMapping map;
    map.map(loop.getInductionVar(), rotated.getInductionVar());
    for (unsigned i = 0; i < n; ++i)
      if (i != l.accIndex)
        map.map(loop.getRegionIterArgs()[i], args[i]);
    // S(n) and P(n - 1) V(n - 1) start, S alone is waited for, then the
    // masks and softmax; P V is waited for last, right before the rescale
    // that reads it, with the softmax's results (the row state, P)
    // computed before that wait.
    Value pvStarted;
    for (Operation &op : body->without_terminator()) {
      if (skipped(op) || &op == l.rescale.getOperation() ||
          &op == l.pack.getOperation())
        continue;
      bool scores = &op == l.scores.getOperation();
      if (scores && hooks.beforeScores)
        hooks.beforeScores(b, /*first=*/false);
      Operation *clone = b.clone(op, map);
      if (!scores)
        continue;
      clone->setAttr(l.scores.getAsyncAttrName(), b.getUnitAttr());
      if (hooks.beforePV)
        hooks.beforePV(b, positionPrev);
      pvStarted = fagpu::MmaOp::create(
          b, loc, l.pv.getType(), pPrev, l.pv.getB(), positionPrev.front(),
          args[l.accIndex], /*b_transposed=*/false, /*wgmma=*/true,
          /*async=*/true, /*depth=*/nullptr);
      if (hooks.afterPV)
        hooks.afterPV(b);
      map.map(l.scores.getResult(),
              fagpu::MmaWaitOp::create(b, loc, clone->getResult(0), Value(),
                                       ValueRange(), 1)
                  .getResult());
    }
    SmallVector<Value> next;
    SmallVector<unsigned> readyAt;
    SmallVector<Value> ready;
    for (auto [i, value] : llvm::enumerate(yield.getOperands())) {
      next.push_back(map.lookupOrDefault(value));
      if (i != l.accIndex && isa<RankedTensorType>(value.getType())) {
        readyAt.push_back(i);
        ready.push_back(next.back());
      }
    }
    // P in f32, rounded into P V's A registers after the wait: those of
    // P(n - 1) are read until then.
    ready.push_back(map.lookup(l.pack.getSource()));
    auto wait = fagpu::MmaWaitOp::create(b, loc, pvStarted, pPrev, ready, 0);
    if (hooks.afterPVWait)
      hooks.afterPVWait(b, positionPrev);
    for (auto [i, value] : llvm::zip(readyAt, wait.getReadyResults()))
      next[i] = value;
    map.map(l.pack.getSource(), wait.getReadyResults().back());
    next.push_back(b.clone(*l.pack, map)->getResult(0));
    for (Value value : l.position)
      next.push_back(map.lookupOrDefault(value));
    if (l.rescale) {
      map.map(l.rescale.getSource(), wait.getResult());
      next[l.accIndex] = b.clone(*l.rescale, map)->getResult(0);
    } else {
      next[l.accIndex] = wait.getResult();
    }
    scf::YieldOp::create(b, loc, next);
  }
  // The last tile's P V.
  ValueRange results = rotated.getResults();
  ValueRange position = results.slice(n + 1, positions);
  if (hooks.beforeLastPV)
    hooks.beforeLastPV(b, position, results.take_front(n));
  Value acc = fagpu::MmaOp::create(b, loc, l.pv.getType(), results[n],
                                   l.pv.getB(), position.front(),
                                   results[l.accIndex], /*b_transposed=*/false,
                                   /*wgmma=*/true, /*async=*/false,
                                   /*depth=*/nullptr);
  if (hooks.afterLastPV)
    hooks.afterLastPV(b, position);
  SmallVector<Value> out(results.take_front(n));
  out[l.accIndex] = acc;
  scf::YieldOp::create(b, loc, out);
  loop.replaceAllUsesWith(guard.getResults());
  loop.erase();
}
