//===- WarpSpecialize.cpp - A producer warpgroup for the K/V copies -------===//
//
// fa-tile's forward kernel copies Q before its K/V loop and K(n), V(n) at the
// top of iteration n, every thread sharing the copies and waiting for them
// at CTA barriers. Here the copies move to a producer warpgroup of their
// own (FlashAttention-3's warp specialization): it fills rings of `stages`
// K and V tiles, each stage guarded by two mbarriers, "full" (the copy
// landed) and "empty" (every consumer is done reading it); the consumer
// warpgroups, the kernel's original threads, wait for a stage to be full,
// compute, and release it. Nothing in either role passes a CTA barrier, so
// the consumers' products are never held up by another warp's copies.
//
// K and V have barriers of their own: S = Q K(n)^T starts once K(n) lands,
// and K(n)'s stage is refilled while the softmax and P V(n) run.
//
// With TMA (`tma`, where every tile is in wgmma's 128-byte swizzle), the
// copies are bulk: one producer thread issues each tile, and the full
// barrier counts its bytes rather than 128 threads' cp.async arrivals.
//
// The consumers' schedule: with `overlap` their loop is rotated so that
// each tile's softmax runs under the previous tile's P V, and with
// `pingpong` the consumer warpgroups take turns issuing their products, so
// that one's softmax runs under the other's (FlashAttention-3's intra- and
// inter-warpgroup overlap).
//
//===----------------------------------------------------------------------===//

#include "fa/Dialect/FAGPU/IR/FAGPU.h"
#include "fa/Transforms/GpuKernels.h"
#include "fa/Transforms/Passes.h"
#include "fa/Transforms/SoftmaxRotation.h"
#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/GPU/IR/GPUDialect.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/IR/Builders.h"
#include "mlir/IR/PatternMatch.h"

#include <optional>

namespace mlir::fa {
#define GEN_PASS_DEF_FAWARPSPECIALIZE
#include "fa/Transforms/Passes.h.inc"
} // namespace mlir::fa

using namespace mlir;
using namespace mlir::fa;

namespace {

/// setmaxnreg's split of the registers the launch gives each warpgroup
/// (`launch` per thread): the consumers as many as leave the producer
/// `producerNeeds`, at most 256, and the producer what remains, at most
/// the launch's (FA3: 24 and 240 for two consumers).
std::pair<int64_t, int64_t> registerSplit(int64_t consumerWarpgroups,
                                          int64_t launch,
                                          int64_t producerNeeds) {
  int64_t total = (consumerWarpgroups + 1) * launch;
  int64_t consumer = std::min<int64_t>(256, (total - producerNeeds) /
                                                consumerWarpgroups / 8 * 8);
  int64_t producer = std::min<int64_t>(
      launch, (total - consumerWarpgroups * consumer) / 8 * 8);
  return {producer, consumer};
}

/// The next (stage, parity) of a ring of `stages`: the parity flips where
/// the stage wraps.
std::pair<Value, Value> advance(OpBuilder &b, Location loc, Value stage,
                                Value parity, int64_t stages) {
  auto cst = [&](int64_t v) {
    return arith::ConstantIndexOp::create(b, loc, v);
  };
  Value next = arith::AddIOp::create(b, loc, stage, cst(1));
  Value wrap = arith::CmpIOp::create(b, loc, arith::CmpIPredicate::eq, next,
                                     cst(stages));
  Value flipped = arith::XOrIOp::create(b, loc, parity, cst(1));
  return {arith::SelectOp::create(b, loc, wrap, cst(0), next),
          arith::SelectOp::create(b, loc, wrap, flipped, parity)};
}

struct Rings {
  Value k, v;
  /// Block copies' rings (a bias's), filled with K's stage and on its
  /// barriers.
  SmallVector<Value, 1> blocks;
  Value qFull, kFull, vFull, kEmpty, vEmpty;
  /// A persistent kernel's: the consumers are done with Q.
  Value qEmpty;
  /// The copies are TMA's (`bulk`).
  bool bulk = false;
};

/// Whether `copy` can be a bulk (TMA) copy: its tile in wgmma's 128-byte
/// swizzle with a multiple of 64 columns and at most 256 rows (one box),
/// bounded by the row count of a kernel buffer (every buffer it may copy
/// from has that count: K and V share Nk).
bool canCopyInBulk(fagpu::CopyOp copy) {
  auto type = cast<fagpu::SharedType>(copy.getDest().getType());
  auto dim = copy.getBound().getDefiningOp<memref::DimOp>();
  return type.getWgmma() && type.getCols() % 64 == 0 && type.getRows() <= 256 &&
         dim && dim.getConstantIndex() == 2;
}

/// An async copy of `copy`'s rows from `row` into stage `stage` of `ring`,
/// signalling barrier `barrierStage` of `full`; in bulk, bounded by the row
/// count of its own source (what its tensor map zero-fills past).
void copyAsync(OpBuilder &b, fagpu::CopyOp copy, Value row, Value ring,
               Value stage, Value full, Value barrierStage, bool bulk) {
  Type token = fagpu::TokenType::get(b.getContext());
  Value bound = copy.getBound();
  if (bulk) {
    auto dim = bound.getDefiningOp<memref::DimOp>();
    if (dim.getSource() != copy.getSource()) {
      OpBuilder::InsertionGuard guard(b);
      b.setInsertionPointAfter(dim);
      bound = memref::DimOp::create(b, dim.getLoc(), copy.getSource(),
                                    dim.getIndex());
    }
  }
  // A block copy's column is the tile's first key, as its row is K's.
  Value col = copy.getCol() ? row : Value();
  if (col)
    row = copy.getRow();
  fagpu::AsyncCopyOp::create(b, copy.getLoc(), token, copy.getSource(),
                             copy.getBatch(), copy.getHead(), row, col, bound,
                             ring, stage, Value(), full, barrierStage, bulk);
}

/// The producer: Q, then K(n) (with its bias blocks) and V(n) of every tile
/// into stage n % S, each once its stage is empty, the rings from `position`
/// (stage, parity). In a persistent kernel's work loop (`qParity`: the item's
/// parity), Q's copy first waits for the consumers to be done with the last
/// item's.
void buildProducer(OpBuilder &b, fagpu::CopyOp qCopy, scf::ForOp loop,
                   fagpu::CopyOp kCopy, fagpu::CopyOp vCopy,
                   ArrayRef<fagpu::CopyOp> blocks, const Rings &rings,
                   int64_t stages, ValueRange position, Value qParity) {
  Location loc = loop.getLoc();
  auto cst = [&](int64_t v) {
    return arith::ConstantIndexOp::create(b, loc, v);
  };
  Value c0 = cst(0);
  if (qParity)
    fagpu::BarrierWaitOp::create(
        b, loc, rings.qEmpty, c0,
        arith::XOrIOp::create(b, loc, qParity, cst(1)).getResult());
  copyAsync(b, qCopy, qCopy.getRow(), qCopy.getDest(), qCopy.getStage(),
            rings.qFull, c0, rings.bulk);
  scf::ForOp::create(
      b, loc, loop.getLowerBound(), loop.getUpperBound(), loop.getStep(),
      position, [&](OpBuilder &lb, Location, Value row, ValueRange args) {
        Value stage = args[0], parity = args[1];
        // The consumers' last round of this stage has the other parity (a
        // fresh barrier passes it).
        Value released = arith::XOrIOp::create(lb, loc, parity, cst(1));
        auto fill = [&](fagpu::CopyOp copy, Value ring, Value empty,
                        Value full) {
          fagpu::BarrierWaitOp::create(lb, loc, empty, stage, released);
          copyAsync(lb, copy, row, ring, stage, full, stage, rings.bulk);
        };
        fill(kCopy, rings.k, rings.kEmpty, rings.kFull);
        // The bias blocks of the tile, into K's stage, which they share.
        for (auto [block, ring] : llvm::zip(blocks, rings.blocks))
          copyAsync(lb, block, row, ring, stage, rings.kFull, stage,
                    rings.bulk);
        fill(vCopy, rings.v, rings.vEmpty, rings.vFull);
        auto [nextStage, nextParity] = advance(lb, loc, stage, parity, stages);
        scf::YieldOp::create(lb, loc, ValueRange{nextStage, nextParity});
      });
}

/// How the query tiles of `kernel` differ in the keys they visit (its
/// fagpu.visible_keys): not at all, so that round robin shares the work
/// evenly; by a causal mask alone, where a heavy and a light tile together
/// see about as many keys as any other such pair; by a window (with or
/// without a causal mask), where the tiles see as many keys but near the
/// sequence's edges, so that single tiles share about evenly; or by the
/// key ranges of a mask_mod.
enum class TileWork { Uniform, Causal, Window, KeyRanges };
TileWork getTileWork(gpu::GPUFuncOp kernel) {
  bool causal = false, window = false, ranges = false;
  kernel.walk([&](fagpu::VisibleKeysOp keys) {
    causal |= bool(keys.getCausal());
    window |= bool(keys.getWindow());
    ranges |= bool(keys.getKeyRanges());
  });
  return ranges   ? TileWork::KeyRanges
         : window ? TileWork::Window
         : causal ? TileWork::Causal
                  : TileWork::Uniform;
}

/// A persistent kernel's work: its items (query tiles x heads x batches)
/// shared round robin from `first` by `stride` CTAs (`count` of them this
/// CTA's), and what each item recomputes: the CTA's coordinates and the ops of
/// the kernel's entry that depend on them (its K/V head and row). `paired` (a
/// causal kernel's): shared as pairs of a heavy and a light tile
/// (fagpu.block_coords's `paired`), the CTA's items 2k and 2k + 1 those of
/// its k-th pair. With `tail` too, only the pairs of the full rounds but the
/// last (`early`, CTA's first 2 `headRounds` items) go so: the rest are the
/// remaining pairs' tiles sorted by decreasing work (block_coords's
/// `sorted_tail`), dealt in snake order, round m to CTAs first to last where
/// m is even and last to first where it is odd, so that a CTA's heavy tile in
/// one round meets a light one in the next and the grid's last rounds even
/// out.
struct WorkItems {
  Value first, stride, tiles, count;
  bool paired = false, tail = false;
  /// With `tail`: the pairs before it, and the rounds of pairs a CTA runs.
  Value early, headRounds;
  fagpu::BlockCoordsOp coords;
  SmallVector<Operation *> perItem;

  /// `scf.for %k = 0 to count`, the CTA's k-th item (`first + k stride`, or
  /// paired `2 (first + (k / 2) stride) + k % 2`; with `tail`, from k = 2
  /// headRounds on, 2 early + m stride + snakePlace(m), m = k - 2
  /// headRounds), whose body starts with
  /// the item's coordinates and per-item ops and then what `body` builds.
  /// With `init`, the loop carries one index from it: what `body` returns.
  scf::ForOp build(OpBuilder &b, Location loc, Value init,
                   function_ref<Value(OpBuilder &, Value k, Value)> body) {
    auto cst = [&](OpBuilder &cb, int64_t v) {
      return arith::ConstantIndexOp::create(cb, loc, v);
    };
    SmallVector<Value, 1> inits;
    if (init)
      inits.push_back(init);
    return scf::ForOp::create(
        b, loc, cst(b, 0), count, cst(b, 1), inits,
        [&](OpBuilder &lb, Location, Value k, ValueRange carried) {
          Type idx = lb.getIndexType();
          Value round =
              paired ? arith::ShRUIOp::create(lb, loc, k, cst(lb, 1)) : k;
          Value item = arith::AddIOp::create(
              lb, loc, first, arith::MulIOp::create(lb, loc, round, stride));
          if (paired)
            item = arith::AddIOp::create(
                lb, loc, arith::ShLIOp::create(lb, loc, item, cst(lb, 1)),
                arith::AndIOp::create(lb, loc, k, cst(lb, 1)));
          if (tail) {
            Value twice =
                arith::ShLIOp::create(lb, loc, headRounds, cst(lb, 1));
            Value m = arith::SubIOp::create(lb, loc, k, twice);
            Value sorted = arith::AddIOp::create(
                lb, loc,
                arith::AddIOp::create(
                    lb, loc, arith::ShLIOp::create(lb, loc, early, cst(lb, 1)),
                    arith::MulIOp::create(lb, loc, m, stride)),
                snakePlace(lb, loc, m));
            Value inTail = arith::CmpIOp::create(
                lb, loc, arith::CmpIPredicate::uge, k, twice);
            item = arith::SelectOp::create(lb, loc, inTail, sorted, item);
          }
          auto mine = fagpu::BlockCoordsOp::create(
              lb, loc, idx, idx, idx, item, tiles, coords.getHeavyFirst(),
              paired, tail, /*rematerialize=*/false, IntegerAttr());
          IRMapping map;
          map.map(coords.getResults(), mine.getResults());
          for (Operation *op : perItem)
            lb.clone(*op, map);
          Value next = body(lb, k, init ? carried[0] : Value());
          scf::YieldOp::create(lb, loc, init ? ValueRange{next} : ValueRange());
        });
  }

  /// The CTA's place in round `round` of the snake order: `first` where
  /// the round is even, `stride - 1 - first` where it is odd.
  Value snakePlace(OpBuilder &b, Location loc, Value round) const {
    Value one = arith::ConstantIndexOp::create(b, loc, 1);
    Value odd =
        arith::CmpIOp::create(b, loc, arith::CmpIPredicate::ne,
                              arith::AndIOp::create(b, loc, round, one),
                              arith::ConstantIndexOp::create(b, loc, 0));
    Value mirrored = arith::SubIOp::create(
        b, loc, arith::SubIOp::create(b, loc, stride, one), first);
    return arith::SelectOp::create(b, loc, odd, mirrored, first);
  }

  /// Points the uses inside `loop` (built by `build`) of the coordinates
  /// and per-item values at the loop's own; an epilogue's rematerialized
  /// coordinates are recomputed from the item.
  void bind(scf::ForOp loop) {
    Block *body = loop.getBody();
    auto mine = *body->getOps<fagpu::BlockCoordsOp>().begin();
    auto inLoop = [&](OpOperand &use) {
      return loop->isProperAncestor(use.getOwner());
    };
    for (auto [old, now] : llvm::zip(coords.getResults(), mine.getResults()))
      old.replaceUsesWithIf(now, inLoop);
    Operation *clone = mine->getNextNode();
    for (Operation *op : perItem) {
      for (auto [old, now] : llvm::zip(op->getResults(), clone->getResults()))
        old.replaceUsesWithIf(now, inLoop);
      clone = clone->getNextNode();
    }
    SmallVector<fagpu::BlockCoordsOp> again;
    loop.walk([&](fagpu::BlockCoordsOp op) {
      if (op.getRematerialize())
        again.push_back(op);
    });
    // Recomputed from the item where they are, as the CTA's would be read
    // again: nothing derived from them lives across the K/V loop.
    for (fagpu::BlockCoordsOp op : again) {
      OpBuilder b(op);
      Type idx = b.getIndexType();
      auto recomputed = fagpu::BlockCoordsOp::create(
          b, op.getLoc(), idx, idx, idx, mine.getWork(), tiles,
          coords.getHeavyFirst(), paired, tail, /*rematerialize=*/false,
          IntegerAttr());
      op->replaceAllUsesWith(recomputed.getResults());
      op.erase();
    }
  }
};

/// The K/V tiles `loop` visits.
Value getTileCount(OpBuilder &b, Location loc, scf::ForOp loop) {
  auto cst = [&](int64_t v) {
    return arith::ConstantIndexOp::create(b, loc, v);
  };
  Value span = arith::MaxSIOp::create(
      b, loc,
      arith::SubIOp::create(b, loc, loop.getUpperBound(), loop.getLowerBound()),
      cst(0));
  Value step = loop.getStep();
  return arith::DivUIOp::create(
      b, loc,
      arith::AddIOp::create(
          b, loc, span,
          arith::SubIOp::create(b, loc, step, cst(1)).getResult()),
      step);
}

/// Where the CTA's k-th item starts: the K/V rings' stage and parity, and
/// Q's parity, from `done`, the K/V tiles of its items before. Where every
/// item visits the same number of K/V tiles (those of `loop`), `done` is
/// null and follows from k: nothing is carried from item to item, which
/// kept fewer registers live across the items' loops (0 spills at D = 256,
/// where carrying the stage and parity spilled).
std::array<Value, 3> getItemStart(OpBuilder &b, Location loc, Value k,
                                  scf::ForOp loop, int64_t stages, Value done) {
  auto cst = [&](int64_t v) {
    return arith::ConstantIndexOp::create(b, loc, v);
  };
  if (!done)
    done = arith::MulIOp::create(b, loc, k, getTileCount(b, loc, loop));
  Value one = cst(1);
  return {arith::RemUIOp::create(b, loc, done, cst(stages)),
          arith::AndIOp::create(
              b, loc, arith::DivUIOp::create(b, loc, done, cst(stages)), one),
          arith::AndIOp::create(b, loc, k, one)};
}

/// The work of `kernel`'s CTA program from `coords` (its entry's block
/// coordinates) on, up to `end` (the op the roles' regions replace): the
/// items' count and slot are built at `b`.
WorkItems getWorkItems(OpBuilder &b, Location loc, fagpu::BlockCoordsOp coords,
                       Operation *end, Value query, int64_t blockQ, bool paired,
                       bool tail) {
  WorkItems work;
  work.coords = coords;
  work.paired = paired;
  work.tail = tail;
  DenseSet<Value> derived(coords->result_begin(), coords->result_end());
  for (Operation &op :
       llvm::make_range(std::next(coords->getIterator()), end->getIterator())) {
    // Q's copy and fragments move to the roles themselves.
    if (isa<fagpu::CopyOp, fagpu::LoadOperandOp>(op))
      continue;
    bool uses = false;
    op.walk([&](Operation *inner) {
      uses |= llvm::any_of(inner->getOperands(),
                           [&](Value v) { return derived.contains(v); });
    });
    if (!uses)
      continue;
    work.perItem.push_back(&op);
    derived.insert(op.result_begin(), op.result_end());
  }
  auto cst = [&](int64_t v) {
    return arith::ConstantIndexOp::create(b, loc, v);
  };
  auto dim = [&](int64_t i) {
    return b.createOrFold<memref::DimOp>(loc, query, i);
  };
  Value rows = arith::AddIOp::create(b, loc, dim(2), cst(blockQ - 1));
  work.tiles = arith::DivUIOp::create(b, loc, rows, cst(blockQ));
  // What round robin shares: the items, or paired the pairs, ceil(tiles /
  // 2) a head.
  Value shared =
      paired ? arith::DivUIOp::create(
                   b, loc, arith::AddIOp::create(b, loc, work.tiles, cst(1)),
                   cst(2))
             : work.tiles;
  shared = arith::MulIOp::create(
      b, loc, arith::MulIOp::create(b, loc, shared, dim(1)), dim(0));
  Type idx = b.getIndexType();
  auto slot = fagpu::WorkSlotOp::create(b, loc, idx, idx);
  work.first = slot.getFirst();
  work.stride = slot.getStride();
  // ceil((items - place) / stride), none where place is past them.
  auto roundsFrom = [&](Value items, Value place) -> Value {
    Value left = arith::MaxSIOp::create(
        b, loc, arith::SubIOp::create(b, loc, items, place), cst(0));
    return arith::DivUIOp::create(
        b, loc,
        arith::AddIOp::create(
            b, loc, left,
            arith::SubIOp::create(b, loc, work.stride, cst(1)).getResult()),
        work.stride);
  };
  if (!tail) {
    // From the CTA's slot; paired, two items a pair.
    work.count = roundsFrom(shared, work.first);
    if (paired)
      work.count = arith::ShLIOp::create(b, loc, work.count, cst(1));
    return work;
  }
  // Every CTA runs the pairs of the full rounds but the last; the tail's
  // tiles (2 (shared - early)) in snake order: the rounds before the last
  // and the last where the CTA's place in it is inside, ceil((tiles -
  // place) / stride) of the last round's place.
  Value rounds = arith::DivUIOp::create(b, loc, shared, work.stride);
  work.headRounds = arith::SubIOp::create(
      b, loc, arith::MaxUIOp::create(b, loc, rounds, cst(1)), cst(1));
  work.early = arith::MulIOp::create(b, loc, work.headRounds, work.stride);
  Value tiles = arith::ShLIOp::create(
      b, loc, arith::SubIOp::create(b, loc, shared, work.early), cst(1));
  Value last = work.snakePlace(
      b, loc, arith::DivUIOp::create(b, loc, tiles, work.stride));
  work.count = arith::AddIOp::create(
      b, loc, arith::ShLIOp::create(b, loc, work.headRounds, cst(1)),
      roundsFrom(tiles, last));
  return work;
}

/// Ping-pong's turns, where there are two or more consumer warpgroups.
struct Turns {
  int64_t warpgroups = 0;
  explicit operator bool() const { return warpgroups >= 2; }
  void take(OpBuilder &b, Location loc, bool first = false) const {
    if (*this)
      fagpu::TakeTurnOp::create(b, loc, warpgroups, first, /*end=*/false);
  }
  void pass(OpBuilder &b, Location loc, bool last = false) const {
    if (*this)
      fagpu::PassTurnOp::create(b, loc, warpgroups, last, /*start=*/false);
  }
};

/// The loop's two products, S = Q K^T (reading `kRing`) and then P V
/// (reading `vRing`), neither started asynchronously yet.
std::optional<std::pair<fagpu::MmaOp, fagpu::MmaOp>>
matchProducts(scf::ForOp loop, Value kRing, Value vRing) {
  fagpu::MmaOp scores, pv;
  for (Operation &op : *loop.getBody()) {
    auto mma = dyn_cast<fagpu::MmaOp>(op);
    if (!mma)
      continue;
    fagpu::MmaOp &slot = mma.getB() == kRing ? scores : pv;
    if (slot || (mma.getB() != kRing && mma.getB() != vRing) || mma.getAsync())
      return std::nullopt;
    slot = mma;
  }
  if (!scores || !pv || !scores->isBeforeInBlock(pv))
    return std::nullopt;
  return std::pair(scores, pv);
}

/// FlashAttention-3's ping-pong: the consumer warpgroups take turns at the
/// tensor cores, a turn being P V(n) and the start of S(n + 1), whose wait
/// comes after the turn is passed. While one warpgroup's softmax runs, the
/// next one's products have the tensor cores to themselves. Where the loop
/// is not one S and one P V product, it is left as it is.
void pingPong(scf::ForOp loop, Value kRing, Value vRing, const Turns &turns) {
  auto products = matchProducts(loop, kRing, vRing);
  if (!products)
    return;
  auto [scores, pv] = *products;
  Location loc = loop.getLoc();
  OpBuilder b(loop);
  turns.take(b, loc, /*first=*/true);
  b.setInsertionPointAfter(loop);
  turns.pass(b, loc, /*last=*/true);
  scores.setAsync(true);
  b.setInsertionPointAfter(scores);
  turns.pass(b, loc);
  auto wait = fagpu::MmaWaitOp::create(b, loc, scores.getResult(), Value(),
                                       ValueRange(), 0);
  scores.getResult().replaceAllUsesExcept(wait.getResult(), wait);
  b.setInsertionPoint(pv);
  turns.take(b, loc);
}

/// FlashAttention-3's intra-warpgroup overlap on the consumers' loop
/// (rotateSoftmaxLoop, SoftmaxRotation.h), with the rings' barriers for
/// V(n - 1): its wait before P(n - 1) V(n - 1) and its release after that
/// product's wait, so the producer's schedule is unchanged. With turns, a
/// turn is the issue of S(n) and P(n - 1) V(n - 1). With `qEmpty` (a
/// persistent kernel's), Q is released once the last S is done: before the
/// last P V, or at once where there is no tile. Returns false (the loop
/// untouched) where the loop is not fa-online-softmax's.
bool rotate(scf::ForOp loop, Value kRing, Value vRing, const Turns &turns,
            Value qEmpty) {
  Block *body = loop.getBody();
  auto yield = cast<scf::YieldOp>(body->getTerminator());
  auto products = matchProducts(loop, kRing, vRing);
  if (!products)
    return false;
  auto [scores, pv] = *products;
  auto vWait = dyn_cast_or_null<fagpu::BarrierWaitOp>(pv->getPrevNode());
  auto vRelease = dyn_cast_or_null<fagpu::BarrierArriveOp>(pv->getNextNode());
  auto pack = pv.getA().getDefiningOp<fagpu::ToOperandOp>();
  SoftmaxLoop l{loop, scores, pv, {}, pack};
  if (!vWait || !vRelease || !pack || !matchCarriedAccumulator(l) ||
      !pv->hasOneUse() || !pack->hasOneUse() || pack->getBlock() != body ||
      yield.getOperand(l.accIndex) != pv.getResult())
    return false;
  // The stage and parity P V(n - 1) reads: the loop's ring position.
  Value stage = pv.getBStage(), parity = vWait.getParity();
  auto stageArg = dyn_cast<BlockArgument>(stage);
  auto parityArg = dyn_cast<BlockArgument>(parity);
  if (!stageArg || !parityArg || stageArg.getOwner() != body ||
      parityArg.getOwner() != body || vWait.getStage() != stage ||
      vRelease.getStage() != stage)
    return false;

  Location loc = loop.getLoc();
  l.position = {stage, parity};
  auto waitForV = [&](OpBuilder &b, ValueRange position) {
    fagpu::BarrierWaitOp::create(b, loc, vWait.getBarriers(), position[0],
                                 position[1]);
  };
  auto releaseV = [&](OpBuilder &b, ValueRange position) {
    fagpu::BarrierArriveOp::create(b, loc, vRelease.getBarriers(), position[0]);
  };
  // Lambdas named, as the hooks refer to them.
  auto skip = [&](Operation *op) {
    return op == vWait.getOperation() || op == vRelease.getOperation();
  };
  auto take = [&](OpBuilder &b, bool first) { turns.take(b, loc, first); };
  auto pass = [&](OpBuilder &b) { turns.pass(b, loc); };
  auto releaseQ = [&](OpBuilder &b) {
    if (qEmpty)
      fagpu::BarrierArriveOp::create(b, loc, qEmpty,
                                     arith::ConstantIndexOp::create(b, loc, 0));
  };
  auto beforeLastPV = [&](OpBuilder &b, ValueRange position, ValueRange) {
    releaseQ(b);
    waitForV(b, position);
    turns.take(b, loc);
  };
  auto afterLastPV = [&](OpBuilder &b, ValueRange position) {
    turns.pass(b, loc, /*last=*/true);
    releaseV(b, position);
  };
  SoftmaxRotationHooks hooks;
  hooks.skip = skip;
  hooks.beforeScores = take;
  hooks.afterPeeledScores = pass;
  hooks.beforePV = waitForV;
  hooks.afterPV = pass;
  hooks.afterPVWait = releaseV;
  hooks.beforeLastPV = beforeLastPV;
  hooks.afterLastPV = afterLastPV;
  hooks.noTiles = releaseQ;
  rotateSoftmaxLoop(l, hooks);
  return true;
}

LogicalResult specialize(gpu::GPUFuncOp kernel, int64_t stages, bool tma,
                         bool pingpong, bool overlap, StringRef persistentGrid,
                         StringRef causalOrder, int64_t &sharedBytes) {
  auto fail = [&](const Twine &why) {
    return kernel.emitOpError("fa-warp-specialize: ") << why;
  };
  std::optional<ForwardCopies> copies = matchForwardCopies(kernel);
  if (!copies)
    return fail("expected fa-tile's forward kernel: a copy of Q, then a loop "
                "over K/V tiles that starts with their copies");
  Block &entry = kernel.getBody().front();
  fagpu::CopyOp qCopy = copies->q, kCopy = copies->k, vCopy = copies->v;
  fagpu::AllocSharedOp qAlloc = copies->qTile, kAlloc = copies->kTile,
                       vAlloc = copies->vTile;
  scf::ForOp loop = copies->loop;
  DenseI32ArrayAttr block = kernel.getKnownBlockSizeAttr();
  if (!block || block[0] % 128 != 0)
    return fail("the kernel's threads (known_block_size) must be whole "
                "warpgroups");
  int64_t consumers = block[0];
  MLIRContext *ctx = kernel.getContext();
  Location loc = loop.getLoc();
  OpBuilder b(kAlloc);
  auto qType = cast<fagpu::SharedType>(qAlloc.getType());
  auto kType = cast<fagpu::SharedType>(kAlloc.getType());
  // V's tiles have Dv columns, Q's and K's D.
  auto vType = cast<fagpu::SharedType>(vAlloc.getType());
  int64_t qBytes = qType.getStageBytes(), kBytes = kType.getStageBytes(),
          vBytes = vType.getStageBytes();
  Rings rings;
  rings.bulk =
      tma && llvm::all_of(std::array{qCopy, kCopy, vCopy}, canCopyInBulk);
  if (!copies->blocks.empty() && !rings.bulk)
    return fail("a bias block's copy (fa-bias-tiles) needs TMA: tma=1 and "
                "Q, K and V tiles in wgmma's layout");
  rings.k =
      fagpu::AllocSharedOp::create(b, loc, kType.withStages(stages), qBytes);
  rings.v = fagpu::AllocSharedOp::create(b, loc, vType.withStages(stages),
                                         qBytes + stages * kBytes);
  int64_t offset = qBytes + stages * (kBytes + vBytes);
  for (fagpu::AllocSharedOp tile : copies->blockTiles) {
    rings.blocks.push_back(fagpu::AllocSharedOp::create(
        b, loc, tile.getType().withStages(stages), offset));
    offset += stages * tile.getType().getStageBytes();
  }
  auto barriers = [&](int64_t count, int64_t arrivals) {
    auto type = fagpu::BarriersType::get(ctx, count);
    Value ring = fagpu::AllocBarriersOp::create(b, loc, type, offset, arrivals);
    offset += 8 * count;
    return ring;
  };
  // Full: each producer thread's copies arrive once (bulk: the one thread
  // that copies, and the bytes); empty: each consumer warpgroup once.
  int64_t copiers = rings.bulk ? 1 : kProducerThreads;
  rings.qFull = barriers(1, copiers);
  // K's stage also lands its bias blocks: one arrival a copy.
  rings.kFull = barriers(stages, copiers * (1 + int64_t(rings.blocks.size())));
  rings.vFull = barriers(stages, copiers);
  // Threads read bias blocks of K's stage themselves: each warp releases it.
  rings.kEmpty =
      barriers(stages, consumers / (rings.blocks.empty() ? 128 : 32));
  rings.vEmpty = barriers(stages, consumers / 128);
  // Persistent where every query tile does the same work, from the entry's
  // coordinates.
  fagpu::BlockCoordsOp coords;
  for (auto op : entry.getOps<fagpu::BlockCoordsOp>())
    if (!op.getRematerialize() && !op.getWork())
      coords = op;
  // `auto`: where persistence measured faster than a CTA an item, or level
  // (performance.md): the plain path at D = 64, 128 and 256, causal too
  // (paired: up to +19% at N = 1024, level at 8192), terms of the score
  // (softcap, +2-5%) and of the position (ALiBi, +0-10% since positions
  // convert once per tile). Terms that read memory (bias level, captures
  // unmeasured) or draw random bits (dropout's mului_extended, -2 to -4%)
  // keep a CTA an item.
  // A bias read from shared memory (fa-bias-tiles) too: a CTA an item
  // measured 4-11% faster at D = 64 and 128 (H200).
  bool positionTerms = false, drawsBits = false;
  bool readsOrDrawsTerms = !copies->blocks.empty();
  kernel.walk([&](fagpu::MapOp map) {
    positionTerms |= !map.isElementwise();
    map.getBody().walk([&](Operation *op) {
      drawsBits |= isa<arith::MulUIExtendedOp>(op);
      readsOrDrawsTerms |=
          llvm::any_of(op->getOperandTypes(),
                       [](Type type) { return isa<ShapedType>(type); }) ||
          !isMemoryEffectFree(op) || isa<arith::MulUIExtendedOp>(op);
    });
  });
  // Causal tiles are shared as pairs of a heavy and a light one, each
  // pair's work about the same, the grid's last rounds' tiles one by one
  // (causal-order=tail).
  TileWork tileWork = getTileWork(kernel);
  bool uniform = tileWork == TileWork::Uniform;
  bool paired =
      tileWork == TileWork::Causal && coords && coords.getHeavyFirst();
  // Not by default for one consumer warpgroup at D = 128, two CTAs an SM:
  // carrying the tiles done spilled there (8 bytes, 64 x 64 tiles).
  int64_t warpgroups = consumers / 128;
  int64_t d = std::max(qType.getCols(), vType.getCols());
  bool spills = paired && warpgroups == 1 && d >= 128;
  // The sorted tail with two or more consumer warpgroups: with one (two
  // CTAs an SM) its item decode spilled 8 bytes at D = 32 and 64.
  bool tail = paired && causalOrder == "tail" && warpgroups >= 2;
  // A window's tiles one an item: +16-21% at D = 64 and 128 (H200, with
  // the producer's 40 registers below).
  bool windowed = tileWork == TileWork::Window;
  // At D = 256 a window's consumers (232 registers) spilled 4 bytes with
  // ALiBi's term of the position.
  spills |= windowed && positionTerms && d > 192;
  // Key ranges' items (a document mask's) are a few tiles each at short
  // documents: persistent up to D = 64 without a causal mask or window
  // (+16-18% at N = 2048, +4-8% through fa.attention, H200; its captures'
  // reads included). With a causal mask, round robin over unpaired tiles
  // measured -3% (fa.attention, D = 64), and at D = 128 level to -3%: there
  // only when asked.
  bool ranged = tileWork == TileWork::KeyRanges;
  bool maskedRanges = false;
  kernel.walk([&](fagpu::VisibleKeysOp keys) {
    maskedRanges |= keys.getCausal() || keys.getWindow();
  });
  bool rangedAuto = ranged && d <= 64 && !drawsBits && !maskedRanges;
  bool persistent = persistentGrid == "always" ||
                    (persistentGrid == "auto" &&
                     (!readsOrDrawsTerms || rangedAuto) && !spills);
  persistent &=
      coords && (uniform || paired || windowed ||
                 (ranged && (persistentGrid == "always" || rangedAuto)));
  if (persistent)
    rings.qEmpty = barriers(1, consumers / 128);
  sharedBytes = offset;
  gpu::BarrierOp::create(b, loc);
  kAlloc.getResult().replaceAllUsesWith(rings.k);
  vAlloc.getResult().replaceAllUsesWith(rings.v);
  kAlloc.erase();
  vAlloc.erase();
  for (auto [tile, ring] : llvm::zip(copies->blockTiles, rings.blocks)) {
    tile.getResult().replaceAllUsesWith(ring);
    tile.erase();
  }

  b.setInsertionPoint(loop);
  std::optional<WorkItems> work;
  if (persistent && uniform) {
    // Every query tile visits the same keys: those of the first, found
    // once for the CTA rather than per item from the item's row.
    for (auto keys : entry.getOps<fagpu::VisibleKeysOp>()) {
      OpBuilder kb(keys);
      keys.getQueryOffsetMutable().assign(
          arith::ConstantIndexOp::create(kb, loc, 0));
    }
  }
  if (persistent && paired) {
    // The heaviest tile's partner where the tiles are odd is past the
    // queries: it visits no keys.
    OpBuilder pb(loop);
    Value rows = memref::DimOp::create(pb, loc, qCopy.getSource(), 2);
    Value inside = arith::CmpIOp::create(pb, loc, arith::CmpIPredicate::ult,
                                         qCopy.getRow(), rows);
    loop.getUpperBoundMutable().assign(arith::SelectOp::create(
        pb, loc, inside, loop.getUpperBound(), loop.getLowerBound()));
  }
  if (persistent)
    work = getWorkItems(b, loc, coords, loop, qCopy.getSource(),
                        qType.getRows(), paired, tail);
  // One consumer warpgroup whose shared memory leaves room for a second
  // CTA gets it (the SM's 228 KB, 1 KB of it per CTA for the system), up
  // to D = 128: ptxas compiles each instruction within the launch's
  // registers, and a 64 x 256 wgmma accumulator does not fit half an SM's.
  int64_t ctas =
      warpgroups == 1 && d <= 128 && 2 * (sharedBytes + 1024) <= 233472 ? 2 : 1;
  auto specialized =
      fagpu::WarpSpecializeOp::create(b, loc, consumers, 0, 0, ctas);
  // The producer's registers: 40 for cp.async (its copies' addresses; at
  // 24 or 32 ptxas spills them), 24 for TMA, but 40 where a window's items
  // each find their key range: its bounds and the tiles done spilled 4-16
  // bytes at 24 (D = 32 and 64; 80, 96 with causal; 256 with bottom-right
  // causal and lse), none at 40 with the consumers at 232. Key ranges'
  // items fit 24 (no spill at D = 64 and 128), where at 40 a mask_mod's
  // consumers (at 232) spilled 4 bytes at D = 64.
  // The sorted tail's item decode spilled 36-84 bytes at 24.
  // A persistent producer's bias blocks (their coordinates per item)
  // spilled 4 bytes at 24 (D = 64 and 128).
  int64_t producerNeeds =
      !rings.bulk || (persistent && (windowed || tail || !rings.blocks.empty()))
          ? 40
          : 24;
  auto [producerRegisters, consumerRegisters] = registerSplit(
      warpgroups, specialized.getLaunchRegisters(), producerNeeds);
  specialized.setProducerRegisters(producerRegisters);
  specialized.setConsumerRegisters(consumerRegisters);
  Block *producer = b.createBlock(&specialized.getProducer());
  Block *consumer = b.createBlock(&specialized.getConsumers());

  b.setInsertionPointToStart(producer);
  Value c0 = arith::ConstantIndexOp::create(b, loc, 0);
  if (work) {
    // Items with different K/V tile counts carry the tiles done so far.
    scf::ForOp items = work->build(
        b, loc, uniform ? Value() : c0,
        [&](OpBuilder &lb, Value k, Value done) {
          auto [stage, parity, qParity] =
              getItemStart(lb, loc, k, loop, stages, done);
          buildProducer(lb, qCopy, loop, kCopy, vCopy, copies->blocks, rings,
                        stages, ValueRange{stage, parity}, qParity);
          return done ? arith::AddIOp::create(lb, loc, done,
                                              getTileCount(lb, loc, loop))
                            .getResult()
                      : Value();
        });
    work->bind(items);
  } else {
    buildProducer(b, qCopy, loop, kCopy, vCopy, copies->blocks, rings, stages,
                  ValueRange{c0, c0}, Value());
  }

  // The consumers: everything from the loop on, after Q has landed; in a
  // persistent kernel, for each work item.
  Operation *terminator = entry.getTerminator();
  consumer->getOperations().splice(consumer->end(), entry.getOperations(),
                                   Block::iterator(loop),
                                   Block::iterator(terminator));
  b.setInsertionPointToStart(consumer);
  c0 = arith::ConstantIndexOp::create(b, loc, 0);
  scf::ForOp consumerItems;
  Value qParity = c0;
  SmallVector<Value, 2> ringStart = {c0, c0};
  if (work) {
    consumerItems =
        work->build(b, loc, uniform ? Value() : c0,
                    [](OpBuilder &, Value, Value done) { return done; });
    Block *body = consumerItems.getBody();
    body->getOperations().splice(
        Block::iterator(body->getTerminator()), consumer->getOperations(),
        std::next(Block::iterator(consumerItems)), consumer->end());
    b.setInsertionPoint(loop);
    Value done = uniform ? Value() : consumerItems.getRegionIterArg(0);
    auto [stage, parity, qItemParity] = getItemStart(
        b, loc, consumerItems.getInductionVar(), loop, stages, done);
    if (done)
      body->getTerminator()->setOperand(
          0, arith::AddIOp::create(b, loc, done, getTileCount(b, loc, loop)));
    qParity = qItemParity;
    ringStart.assign({stage, parity});
  }
  fagpu::BarrierWaitOp::create(b, loc, rings.qFull, c0, qParity);
  // Q's fragments (mma.sync's form) load once it is there.
  for (Operation *user : llvm::to_vector(qAlloc->getUsers()))
    if (isa<fagpu::LoadOperandOp>(user) && user->getBlock() == &entry)
      user->moveBefore(loop);
  qCopy.erase();

  IRRewriter rewriter(ctx);
  rewriter.setInsertionPoint(loop);
  auto yields = [&](OpBuilder &yb, Location,
                    ArrayRef<BlockArgument> args) -> SmallVector<Value> {
    Value stage = args[0], parity = args[1];
    OpBuilder lb(kCopy);
    fagpu::BarrierWaitOp::create(lb, loc, rings.kFull, stage, parity);
    kCopy.erase();
    vCopy.erase();
    for (fagpu::CopyOp block : copies->blocks)
      block.erase();
    // The bias blocks' reads, of K's stage.
    SmallVector<Operation *> blockReaders;
    for (Operation &op : *loop.getBody())
      if (auto read = dyn_cast<fagpu::LoadTileOp>(op);
          read && llvm::is_contained(rings.blocks, read.getSource())) {
        read.getStageMutable().assign(stage);
        blockReaders.push_back(read);
      }
    for (auto [ring, full, empty] :
         {std::tuple(rings.k, rings.kFull, rings.kEmpty),
          std::tuple(rings.v, rings.vFull, rings.vEmpty)}) {
      // The products that read the ring: the first waits for the stage
      // (V(n) where P V(n) reads it), the last releases it.
      SmallVector<fagpu::MmaOp> readers;
      for (Operation &op : *loop.getBody())
        if (auto mma = dyn_cast<fagpu::MmaOp>(op); mma && mma.getB() == ring)
          readers.push_back(mma);
      if (readers.empty())
        continue;
      for (fagpu::MmaOp mma : readers)
        mma.getBStageMutable().assign(stage);
      if (ring == rings.v) {
        lb.setInsertionPoint(readers.front());
        fagpu::BarrierWaitOp::create(lb, loc, full, stage, parity);
      }
      Operation *last = readers.back();
      if (ring == rings.k)
        for (Operation *read : blockReaders)
          if (last->isBeforeInBlock(read))
            last = read;
      lb.setInsertionPointAfter(last);
      fagpu::BarrierArriveOp::create(lb, loc, empty, stage,
                                     /*perWarp=*/last != readers.back());
    }
    OpBuilder eb(loop.getBody()->getTerminator());
    auto [nextStage, nextParity] = advance(eb, loc, stage, parity, stages);
    return {nextStage, nextParity};
  };
  FailureOr<LoopLikeOpInterface> specializedLoop =
      cast<LoopLikeOpInterface>(loop.getOperation())
          .replaceWithAdditionalYields(rewriter, ringStart,
                                       /*replaceInitOperandUsesInLoop=*/false,
                                       yields);
  if (failed(specializedLoop))
    return fail("could not add the ring's stage to the K/V loop");
  auto consumerLoop = cast<scf::ForOp>(specializedLoop->getOperation());
  if (work)
    work->bind(consumerItems);
  Turns turns{pingpong ? warpgroups : 0};
  // The rotated loop releases a persistent kernel's Q after its last S;
  // otherwise the item's products are done with Q after the loop.
  bool rotated = overlap && rotate(consumerLoop, rings.k, rings.v, turns,
                                   work ? rings.qEmpty : Value());
  if (!rotated && turns)
    pingPong(consumerLoop, rings.k, rings.v, turns);
  if (work && !rotated) {
    OpBuilder ib(consumerLoop->getContext());
    ib.setInsertionPointAfter(consumerLoop);
    fagpu::BarrierArriveOp::create(ib, loc, rings.qEmpty, c0);
  }
  if (work && turns) {
    // One rotation over all items: started before the first, ended after
    // the last, each item's takes and passes the plain ones.
    consumerItems.walk([](fagpu::TakeTurnOp op) { op.setFirst(false); });
    consumerItems.walk([](fagpu::PassTurnOp op) { op.setLast(false); });
    OpBuilder tb(consumerItems);
    fagpu::PassTurnOp::create(tb, loc, warpgroups, /*last=*/false,
                              /*start=*/true);
    tb.setInsertionPointAfter(consumerItems);
    fagpu::TakeTurnOp::create(tb, loc, warpgroups, /*first=*/false,
                              /*end=*/true);
  }
  if (work) {
    for (Operation *op : llvm::reverse(work->perItem))
      if (op->use_empty())
        op->erase();
    if (!work->coords->use_empty())
      return fail("a persistent kernel's block coordinates are used outside "
                  "its work loops");
    work->coords.erase();
  }
  kernel.setKnownBlockSizeAttr(DenseI32ArrayAttr::get(
      ctx, {int32_t(consumers + kProducerThreads), 1, 1}));
  return success();
}

struct FAWarpSpecializePass
    : public mlir::fa::impl::FAWarpSpecializeBase<FAWarpSpecializePass> {
  using Base::Base;

  void runOnOperation() override {
    ModuleOp module = getOperation();
    auto kernels = module.lookupSymbol<gpu::GPUModuleOp>(kKernelModuleName);
    if (!kernels)
      return;
    std::string chip = getKernelChip(module);
    for (auto kernel : kernels.getOps<gpu::GPUFuncOp>()) {
      // fa-tile's wgmma forward kernels that fa-fuse marked, before
      // fa-async-copy (which leaves a specialized kernel alone: it has no
      // synchronous copy).
      bool synchronous = false;
      kernel.walk([&](fagpu::CopyOp) { synchronous = true; });
      if (!synchronous || !kernel->hasAttr(kWgmmaAttr) ||
          !kernel->hasAttr(kWarpSpecializeAttr))
        continue;
      int64_t blockBytes = 0;
      if (std::optional<ForwardCopies> copies = matchForwardCopies(kernel))
        for (fagpu::AllocSharedOp tile : copies->blockTiles)
          blockBytes += tile.getType().getStageBytes();
      FailureOr<ForwardTile> tile =
          chooseKVStages(kernel, stages, chip, "fa-warp-specialize",
                         kWarpSpecializedBarrierBytes, blockBytes);
      if (failed(tile))
        return signalPassFailure();
      int64_t bytes = 0;
      if (persistent != "auto" && persistent != "always" &&
          persistent != "never") {
        kernel.emitOpError("fa-warp-specialize: persistent must be auto, "
                           "always or never (got '")
            << persistent << "')";
        return signalPassFailure();
      }
      if (causalOrder != "paired" && causalOrder != "tail") {
        kernel.emitOpError("fa-warp-specialize: causal-order must be paired "
                           "or tail (got '")
            << causalOrder << "')";
        return signalPassFailure();
      }
      if (failed(specialize(kernel, tile->kvStages, tma, pingpong, overlap,
                            persistent, causalOrder, bytes)))
        return signalPassFailure();
      kernel->setAttr(kKVStagesAttr,
                      Builder(&getContext()).getI64IntegerAttr(tile->kvStages));
      // Its launches: the shared memory and the producer's warpgroup.
      for (gpu::LaunchFuncOp launch : getLaunchesOf(module, kernel)) {
        setDynamicSharedBytes(launch, bytes);
        OpBuilder b(launch);
        Value old = launch.getBlockSizeX();
        launch.getBlockSizeXMutable().assign(arith::ConstantIndexOp::create(
            b, launch.getLoc(), kernel.getKnownBlockSizeAttr()[0]));
        if (Operation *def = old.getDefiningOp(); def && def->use_empty())
          def->erase();
      }
    }
  }
};

} // namespace
