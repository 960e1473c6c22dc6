//===- FAToNVVM.cpp - fa.attention to an FA2-style NVVM kernel ------------===//
//
// Emits, for each supported fa.attention, a kernel in a gpu.module that
// follows FlashAttention-2's work partitioning on mma.sync tensor cores:
//
//  - one CTA per (Q tile, query head, batch); 4 warps, each owning one or two
//    m-tiles of 16 query rows (block-q 64 or 128); the Q fragments stay in
//    registers where they fit (up to 32 of them), else are re-read from
//    shared memory per k-step;
//  - a loop over K/V tiles of 32, 64 or 128 rows (block-kv), copied global ->
//    shared with cp.async (16-byte chunks, XOR-swizzled so ldmatrix is
//    bank-conflict free; rows past the end are zero-filled) on
//    FlashAttention-2's schedule: V(n) lands during S = Q K(n)^T, K(n + 1)
//    during the softmax and P V(n), with one buffer each and two barriers
//    per tile; or, with two stages (kv-stages), K and V double-buffered,
//    tile n + 1 copied during all of tile n, one barrier per tile;
//  - S = Q K^T with ldmatrix + mma.sync m16n8k16 (f16/bf16 in, f32 acc);
//  - the online softmax on the accumulator fragments in the log2 domain
//    (scale * log2(e) folded into one multiply, exp2), row max/sum across the
//    four lanes sharing a row by warp shuffles;
//  - P re-packed from accumulator to A fragments in registers, O += P V with
//    ldmatrix.trans for V; O = acc / l and lse written at the end.
//
// Causal and window masks narrow the K/V loop per CTA (whole tiles are never
// visited) and mask inside the tiles they cut.
//
// An op with ALiBi, bias, score_mod or mask_mod takes the "scored" path: each
// score is built in the natural domain in the dialect's order (scale,
// softcap, ALiBi, bias, score_mod, masks incl. mask_mod) from its absolute
// (b, h, i, j), then multiplied by log2(e); mask_mod masks every tile. The
// plain path is left as it was. Dropout also takes the scored path: each
// probability is multiplied by its Philox keep/scale factor after the row
// sum (which stays undropped) and before P is packed for P V.
//
// fa.attention_grad's kernels are built by AttentionGradToNVVM.cpp; both use
// the primitives of KernelBuilder.h.
//
//===----------------------------------------------------------------------===//

#include "AttentionGradToNVVM.h"
#include "KernelBuilder.h"
#include "fa/Conversion/Passes.h"
#include "fa/Dialect/FA/IR/FAOps.h"
#include "fa/Transforms/Builders.h"
#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/GPU/IR/GPUDialect.h"
#include "mlir/Dialect/LLVMIR/LLVMDialect.h"
#include "mlir/Dialect/LLVMIR/NVVMDialect.h"
#include "mlir/Dialect/Math/IR/Math.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/IR/Builders.h"
#include "mlir/IR/BuiltinOps.h"
#include "mlir/IR/IRMapping.h"
#include "llvm/ADT/TypeSwitch.h"

#include <cmath>
#include <limits>

namespace mlir::fa {
#define GEN_PASS_DEF_CONVERTFATONVVM
#include "fa/Conversion/Passes.h.inc"
} // namespace mlir::fa

using namespace mlir;
using namespace mlir::fa;
using namespace mlir::fa::nvvm;

namespace {

/// Whether `op` takes the scored path (per-element variant terms, or
/// dropout).
bool isScored(AttentionOp op) {
  return hasScoreTerms(op) || op.getDropoutSeed();
}

/// Why the forward kernel cannot be built for `op`, or an empty string.
std::string unsupportedForwardReason(AttentionOp op) {
  std::string reason = unsupportedShapeReason(op);
  if (!reason.empty())
    return reason;
  for (auto [region, name] : {std::make_pair(&op.getScoreMod(), "score_mod"),
                              std::make_pair(&op.getMaskMod(), "mask_mod")}) {
    if (region->empty())
      continue;
    for (Operation &inner : region->front().without_terminator())
      if (!isKernelRegionOp(&inner))
        return std::string(name) + " op '" +
               inner.getName().getStringRef().str() +
               "' is not supported on the GPU (arith and f32 math.tanh, exp, "
               "exp2, log, log2, sin, cos, sqrt, rsqrt, absf, fma, floor, "
               "ceil are)";
  }
  return "";
}

/// The forward kernel's tiling: query rows per CTA (64 per m-tile of 16
/// rows per warp) and rows of the K/V tiles the loop visits.
struct ForwardTile {
  int64_t blockQ = 0, blockKV = 0;
  /// Buffers of K and of V: 1, FlashAttention-2's schedule; 2, tile n + 1 is
  /// copied during all of tile n.
  int64_t kvStages = 1;
};

/// The tile `op` gets unless the pass is told otherwise: the fastest on the
/// H100 (bench/fwd_tile_sweep.sh and the tile probes of
/// docs/performance.md). D <= 64: two m-tiles, so each K and V fragment
/// read from shared memory feeds two mmas, and two K/V stages (48 KB of
/// shared memory still leave 4 CTAs per SM). D = 96: one m-tile and 64-key
/// tiles (128 keys spill). D = 128: with causal or window masks one m-tile
/// and 128-key tiles (half the loop trips and barriers of 64); without,
/// two m-tiles, 64-key tiles and two stages, 4-8% faster although ptxas
/// spills 84 bytes on sm_90a. D = 256: one m-tile of 128 O registers,
/// 64-key tiles. The scored path keeps one m-tile (its per-element terms,
/// bias loads, slope and region values, spill at two), and 32-key tiles
/// above D = 64.
ForwardTile defaultForwardTile(AttentionOp op) {
  int64_t d = op.getQuery().getType().getDimSize(3);
  bool scored = isScored(op);
  bool masked = op.getCausalAttr() || op.getWindowAttr();
  if (d <= 64)
    return scored ? ForwardTile{64, 64, 1} : ForwardTile{128, 64, 2};
  if (scored)
    return {64, 32, 1};
  if (d <= 96)
    return {64, 64, 1};
  if (d <= 128)
    return masked ? ForwardTile{64, 128, 1} : ForwardTile{128, 64, 2};
  return {64, 64, 1};
}

/// Why `tile` is not a forward tile, or an empty string.
std::string unsupportedTileReason(ForwardTile tile) {
  if (tile.blockQ != 64 && tile.blockQ != 128)
    return "block-q must be 64 or 128 (got " + std::to_string(tile.blockQ) +
           ")";
  if (tile.blockKV != 32 && tile.blockKV != 64 && tile.blockKV != 128)
    return "block-kv must be 32, 64 or 128 (got " +
           std::to_string(tile.blockKV) + ")";
  if (tile.kvStages != 1 && tile.kvStages != 2)
    return "kv-stages must be 1 or 2 (got " + std::to_string(tile.kvStages) +
           ")";
  return "";
}

/// Builds one forward kernel.
class FlashKernelBuilder : public KernelBuilder {
public:
  FlashKernelBuilder(OpBuilder &b, Location loc, AttentionOp op,
                     ForwardTile tile)
      : KernelBuilder(b, loc, op.getElementType(),
                      op.getQuery().getType().getDimSize(3)),
        op(op), mTiles(tile.blockQ / 64), blockQ(tile.blockQ),
        blockKV(tile.blockKV), kvStages(tile.kvStages),
        qInRegisters(mTiles * d <= 128) {}

  /// Query rows per CTA: 64 x mTiles.
  int64_t getBlockQ() const { return blockQ; }

  /// Emits `llvm.func @name` into the current insertion point (a gpu.module).
  void build(StringRef name);

  /// Dynamic shared memory the kernel needs, in bytes.
  int64_t sharedBytes() const {
    return (blockQ + 2 * kvStages * blockKV) * d * 2;
  }

private:
  AttentionOp op;
  /// 16-row query tiles per warp.
  int64_t mTiles;
  int64_t blockQ, blockKV;
  /// K and V buffers (ForwardTile::kvStages).
  int64_t kvStages;
  /// Whether the Q fragments stay in registers for the whole loop (mTiles x
  /// D / 4 of them: up to 32); otherwise they are re-read from shared memory
  /// per k-step of S.
  bool qInRegisters;
};

void FlashKernelBuilder::build(StringRef name) {
  // q, k, v, o, lse; strides (b, h, n) of q, k, v, o and (b, h) of lse;
  // Nq, Nk, Hq / Hkv; scale * log2(e). The scored path adds bias and its
  // strides (b, h, i, j; 0 where it broadcasts), ALiBi slopes and their
  // batch stride (0 for [Hq]); with dropout, the i64 seed. Then each
  // capture's pointer and strides.
  bool scored = isScored(op);
  bool dropout = static_cast<bool>(op.getDropoutSeed());
  SmallVector<Type> params = {gptr, gptr, gptr, gptr, gptr};
  params.append(14, i64);
  params.append({i32, i32, i32, f32});
  if (scored)
    params.append({gptr, i64, i64, i64, i64, gptr, i64});
  if (dropout)
    params.push_back(i64);
  unsigned firstCapture = params.size();
  appendCaptureParams(params, op.getCaptures().getTypes());
  Block *entry = &createKernel(name, params).front();
  OpBuilder::InsertionGuard guard(b);
  b.setInsertionPointToStart(entry);
  auto arg = [&](unsigned i) { return entry->getArgument(i); };
  Value q = arg(0), k = arg(1), v = arg(2), o = arg(3), lse = arg(4);
  Value qs[3] = {arg(5), arg(6), arg(7)}, ks[3] = {arg(8), arg(9), arg(10)},
        vs[3] = {arg(11), arg(12), arg(13)},
        os[3] = {arg(14), arg(15), arg(16)}, ls[2] = {arg(17), arg(18)};
  Value nq = arg(19), nk = arg(20), group = arg(21), scaleLog2 = arg(22);
  bindCaptures(entry, firstCapture, op.getCaptures().getTypes(), nq, nk);

  ThreadPlace place = getThreadPlace();
  Value tid = place.tid, qTileIdx = place.tile, head = place.head;
  Value batch = place.batch, warp = place.warp, lane = place.lane;
  Value g = place.g, tq = place.tq;
  Value q0 = mul(qTileIdx, c32(blockQ));
  Value headKV = divu(head, group);

  Value qBase = headBase(q, batch, head, qs[0], qs[1]);
  Value kBase = headBase(k, batch, headKV, ks[0], ks[1]);
  Value vBase = headBase(v, batch, headKV, vs[0], vs[1]);

  // Shared memory: the Q tile, then per stage a K and a V tile.
  Value smem = LLVM::AddressOfOp::create(b, loc, sptr, "fa_smem");
  int64_t qBytes = blockQ * d * 2, kvBytes = blockKV * d * 2;
  Value sQ = smem, sKFirst = smemAt(smem, c32(qBytes)),
        sVFirst = smemAt(smem, c32(qBytes + kvBytes));
  // The K and V tiles of stage `stage` (0 or 1).
  auto stageK = [&](Value stage) {
    return smemAt(smem, add(c32(qBytes), mul(stage, c32(2 * kvBytes))));
  };
  auto stageV = [&](Value stage) {
    return smemAt(smem,
                  add(c32(qBytes + kvBytes), mul(stage, c32(2 * kvBytes))));
  };

  // The K/V rows this CTA's queries can see.
  Masks masks{op.getCausalAttr(), op.getWindowAttr()};
  KeyRange visible = visibleKeys(masks, q0, blockQ, nq, nk, blockKV);
  Value diag = visible.diag;

  // The pipeline (FlashAttention-2's): K and V have one buffer each, and
  // every copy overlaps the math of the other: K(n) lands before V(n) is
  // issued, V(n) during S = Q K(n)^T, K(n + 1) during the softmax and
  // O += P V(n). Each cp.async group is one tile (commits with nothing
  // issued are empty groups), so `wait_group 0` waits for the one in flight.
  // With two stages, iteration n waits for tile n (its K and V, one group),
  // has everyone done with tile n - 1 (one barrier), issues tile n + 1 into
  // the other stage and computes tile n: a copy has a whole tile to land.
  // Q, then the first K tile (and V, with two stages).
  copyTile(blockQ, sQ, qBase, q0, nq, qs[2], tid);
  NVVM::CpAsyncCommitGroupOp::create(b, loc);
  Value any = cmp(arith::CmpIPredicate::slt, visible.begin, visible.end);
  auto firstK = scf::IfOp::create(b, loc, any, /*withElse=*/false);
  {
    OpBuilder::InsertionGuard guardK(b);
    b.setInsertionPointToStart(firstK.thenBlock());
    copyTile(blockKV, sKFirst, kBase, visible.begin, nk, ks[2], tid);
    if (kvStages == 2)
      copyTile(blockKV, sVFirst, vBase, visible.begin, nk, vs[2], tid);
  }
  NVVM::CpAsyncCommitGroupOp::create(b, loc);

  // Q's A fragments (one x4 ldmatrix per 16 columns): kept in registers
  // when they fit, else read per k-step of S.
  int64_t kSteps = d / 16;
  // Warp w owns rows mt * 64 + w * 16 + [0, 16) for each of its m-tiles.
  Value warpRow0 = mul(warp, c32(16));
  Value qRowLane = add(warpRow0, aRow(lane)), qColLane = aCol(lane);
  auto loadQ = [&](int64_t mt, int64_t kk) {
    Value at = swizzledAt(qRowLane, mt * 64, qColLane, kk * 16);
    auto frag = ldmatrix4(smemAt(sQ, at), false);
    return SmallVector<Value, 4>(frag.begin(), frag.end());
  };
  SmallVector<SmallVector<SmallVector<Value, 4>>> qFrag(mTiles);
  if (qInRegisters) {
    NVVM::CpAsyncWaitGroupOp::create(b, loc, 1);
    NVVM::Barrier0Op::create(b, loc);
    for (int64_t mt = 0; mt < mTiles; ++mt)
      for (int64_t kk = 0; kk < kSteps; ++kk)
        qFrag[mt].push_back(loadQ(mt, kk));
  }

  int64_t nTilesS = blockKV / 8, nTilesO = d / 8;
  // Per m-tile loop state: m (rows g, g + 8), l (same), acc (nTilesO x 4).
  int64_t stateSize = 4 + nTilesO * 4;
  double negInf = -std::numeric_limits<double>::infinity();
  SmallVector<Value> inits;
  for (int64_t mt = 0; mt < mTiles; ++mt) {
    inits.append({cf(negInf), cf(negInf), cf(0.0), cf(0.0)});
    for (int64_t i = 0; i < nTilesO * 4; ++i)
      inits.push_back(cf(0.0));
  }
  SmallVector<std::array<Value, 2>> rows(mTiles);
  for (int64_t mt = 0; mt < mTiles; ++mt) {
    Value rowG = add(add(q0, add(c32(mt * 64), warpRow0)), g);
    rows[mt] = {rowG, add(rowG, c32(8))};
  }
  std::optional<double> softcap;
  if (auto attr = op.getSoftcapAttr())
    softcap = attr.getValueAsDouble();
  Value dropoutSeed = dropout ? arg(30) : Value();
  double dropoutP = dropout ? op.getDropoutPAttr().getValueAsDouble() : 0.0;

  // Loop-invariant parts of the scored path: the slope of this (b, h), the
  // bias rows of this thread (clamped to Nq - 1 so ragged rows read in
  // bounds) and the region's index arguments.
  Value slope, nkLast, idxB, idxH;
  Type biasEt;
  SmallVector<std::array<Value, 2>> biasRows(mTiles);
  Value biasStrideJ;
  if (scored) {
    nkLast = sub(nk, c32(1));
    idxB = toIndex(batch);
    idxH = toIndex(head);
    if (op.getAlibiSlopes()) {
      Value at = add(mul(ext64(batch), arg(29)), ext64(head));
      slope = LLVM::LoadOp::create(b, loc, f32, gep(arg(28), at, f32));
    }
    if (Value bias = op.getBias()) {
      biasEt = cast<ShapedType>(bias.getType()).getElementType();
      Value head0 = gep(
          arg(23), add(mul(ext64(batch), arg(24)), mul(ext64(head), arg(25))),
          biasEt);
      Value nqLast = sub(nq, c32(1));
      for (int64_t mt = 0; mt < mTiles; ++mt)
        for (int64_t r = 0; r < 2; ++r)
          biasRows[mt][r] = gep(
              head0, mul(ext64(mins(rows[mt][r], nqLast)), arg(26)), biasEt);
      biasStrideJ = arg(27);
    }
  }

  // Lane parts of the K (B of S) and V (transposed B of P V) fragment
  // addresses.
  Value keyInPair = bRow(lane), dimHalf = bCol(lane);
  Value keyInStep = aRow(lane), dvHalf = aCol(lane);
  auto loop = scf::ForOp::create(
      b, loc, toIndex(visible.begin), toIndex(visible.end),
      arith::ConstantIndexOp::create(b, loc, blockKV), inits,
      [&](OpBuilder &, Location, Value ivIndex, ValueRange iters) {
        Value kv0 = arith::IndexCastOp::create(b, loc, i32, ivIndex);
        Value sK = sKFirst, sV = sVFirst;
        NVVM::CpAsyncWaitGroupOp::create(b, loc, 0);
        NVVM::Barrier0Op::create(b, loc);
        // The next tile's first row and whether there is one (built where
        // the schedule issues it).
        Value nextKV0, more;
        auto nextTile = [&] {
          nextKV0 = add(kv0, c32(blockKV));
          more = cmp(arith::CmpIPredicate::slt, nextKV0, visible.end);
        };
        if (kvStages == 1) {
          // K(n) (and Q) have landed, and everyone is done with V(n - 1):
          // fetch V(n) while S is computed.
          copyTile(blockKV, sV, vBase, kv0, nk, vs[2], tid);
        } else {
          // Tile n has landed, and everyone is done with tile n - 1, whose
          // stage tile n + 1 takes.
          nextTile();
          Value stage = andi(divu(sub(kv0, visible.begin), c32(blockKV)), 1);
          sK = stageK(stage), sV = stageV(stage);
          Value other = sub(c32(1), stage);
          auto next = scf::IfOp::create(b, loc, more, /*withElse=*/false);
          OpBuilder::InsertionGuard guardNext(b);
          b.setInsertionPointToStart(next.thenBlock());
          copyTile(blockKV, stageK(other), kBase, nextKV0, nk, ks[2], tid);
          copyTile(blockKV, stageV(other), vBase, nextKV0, nk, vs[2], tid);
        }
        NVVM::CpAsyncCommitGroupOp::create(b, loc);

        // S = Q K^T: n-tiles of 8 keys, x4 ldmatrix gives two at once, and
        // each K fragment serves every m-tile.
        SmallVector<SmallVector<SmallVector<Value, 4>>> s(mTiles);
        for (auto &tiles : s)
          tiles = zeroTiles(nTilesS);
        for (int64_t kk = 0; kk < kSteps; ++kk) {
          SmallVector<SmallVector<Value, 4>> qa(mTiles);
          for (int64_t mt = 0; mt < mTiles; ++mt)
            qa[mt] = qInRegisters ? qFrag[mt][kk] : loadQ(mt, kk);
          for (int64_t pair = 0; pair < nTilesS / 2; ++pair) {
            Value at = swizzledAt(keyInPair, pair * 16, dimHalf, kk * 16);
            auto r = ldmatrix4(smemAt(sK, at), false);
            for (int64_t mt = 0; mt < mTiles; ++mt) {
              s[mt][2 * pair] = mma(qa[mt], {r[0], r[1]}, s[mt][2 * pair]);
              s[mt][2 * pair + 1] =
                  mma(qa[mt], {r[2], r[3]}, s[mt][2 * pair + 1]);
            }
          }
        }

        // V(n) has landed, and everyone is done with K(n): fetch K(n + 1)
        // while the softmax and P V run.
        if (kvStages == 1) {
          NVVM::CpAsyncWaitGroupOp::create(b, loc, 0);
          NVVM::Barrier0Op::create(b, loc);
          nextTile();
          auto nextK = scf::IfOp::create(b, loc, more, /*withElse=*/false);
          {
            OpBuilder::InsertionGuard guardK(b);
            b.setInsertionPointToStart(nextK.thenBlock());
            copyTile(blockKV, sK, kBase, nextKV0, nk, ks[2], tid);
          }
          NVVM::CpAsyncCommitGroupOp::create(b, loc);
        }

        // The scored path: each score in the natural domain, in the
        // dialect's order; masks follow, then the fma below takes it into the
        // log2 domain.
        auto keyOf = [&](int64_t nt, int64_t e) {
          return add(kv0, add(c32(nt * 8), add(shl(tq, 1), c32(e & 1))));
        };
        if (scored) {
          ScoreTerms terms{op.getScaleOrDefault(),
                           softcap,
                           slope,
                           biasEt,
                           op.getScoreMod().empty() ? nullptr
                                                    : &op.getScoreMod(),
                           idxB,
                           idxH,
                           diag};
          for (int64_t mt = 0; mt < mTiles; ++mt)
            for (int64_t nt = 0; nt < nTilesS; ++nt)
              for (int64_t e = 0; e < 4; ++e) {
                Value row = rows[mt][e / 2], key = keyOf(nt, e);
                // Keys past Nk (a ragged tile) read the last key: masked.
                Value x = scoredScore(terms, s[mt][nt][e], row, key, [&] {
                  Value at = mul(ext64(mins(key, nkLast)), biasStrideJ);
                  return gep(biasRows[mt][e / 2], at, biasEt);
                });
                s[mt][nt][e] = x;
              }
        } else if (softcap) {
          // Softcap transforms each score (into the log2 domain); otherwise
          // the scale is folded into the exponent below: p = exp2(s * c - m).
          for (auto &tiles : s)
            for (auto &t : tiles)
              for (Value &x : t) {
                // softcap * tanh(s * scale / softcap), then * log2(e).
                Value scaled = fmul(x, cf(op.getScaleOrDefault() / *softcap));
                Value th = approx("tanh.approx.f32", scaled);
                x = fmul(th, cf(*softcap * M_LOG2E));
              }
        }

        auto maskScores = [&]() {
          SmallVector<Value> values;
          for (int64_t mt = 0; mt < mTiles; ++mt) {
            for (int64_t nt = 0; nt < nTilesS; ++nt) {
              for (int64_t e = 0; e < 4; ++e) {
                Value key = keyOf(nt, e);
                Value keep = keepScored(
                    masks, op.getMaskMod().empty() ? nullptr : &op.getMaskMod(),
                    idxB, idxH, rows[mt][e / 2], key, nk, diag,
                    /*checkBound=*/true);
                values.push_back(sel(keep, s[mt][nt][e], cf(negInf)));
              }
            }
          }
          return values;
        };
        // mask_mod can mask anything: every tile. Otherwise masks (keys past
        // Nk, causal, window) only on tiles that cross a boundary; the test
        // is uniform across the CTA, so the branch is.
        SmallVector<Value> maskedScores;
        if (!op.getMaskMod().empty())
          maskedScores = maskScores();
        Value needMask =
            maskedScores.empty()
                ? tileNeedsMask(masks, q0, blockQ, kv0, blockKV, nk, diag)
                : Value();
        SmallVector<Type> scoreTypes(mTiles * nTilesS * 4, f32);
        scf::IfOp masked;
        if (needMask) {
          masked = scf::IfOp::create(b, loc, scoreTypes, needMask,
                                     /*withElse=*/true);
          OpBuilder::InsertionGuard g(b);
          b.setInsertionPointToStart(masked.thenBlock());
          scf::YieldOp::create(b, loc, maskScores());
          b.setInsertionPointToStart(masked.elseBlock());
          SmallVector<Value> plain;
          for (auto &tiles : s)
            for (auto &t : tiles)
              plain.append(t.begin(), t.end());
          scf::YieldOp::create(b, loc, plain);
          maskedScores.assign(masked.getResults().begin(),
                              masked.getResults().end());
        }
        // Into the log2 domain (the scale is positive, so it commutes with
        // max).
        Value scoreScale =
            scored ? cf(M_LOG2E) : (softcap ? cf(1.0) : scaleLog2);
        SmallVector<Value> next;
        SmallVector<SmallVector<SmallVector<Value, 4>>> acc(mTiles);
        for (int64_t mt = 0; mt < mTiles; ++mt) {
          ValueRange state = iters.slice(mt * stateSize, stateSize);
          Value rowMax[2] = {cf(negInf), cf(negInf)};
          for (int64_t nt = 0; nt < nTilesS; ++nt)
            for (int64_t e = 0; e < 4; ++e) {
              s[mt][nt][e] = maskedScores[(mt * nTilesS + nt) * 4 + e];
              rowMax[e / 2] = fmax(rowMax[e / 2], s[mt][nt][e]);
            }
          // Online softmax: new max, rescale factor, probabilities, sums.
          Value alpha[2], mSafe[2];
          for (int64_t r = 0; r < 2; ++r) {
            Value tileMax = fmul(quadReduce(rowMax[r], true), scoreScale);
            Value mNew = fmax(state[r], tileMax);
            Value none = arith::CmpFOp::create(
                b, loc, arith::CmpFPredicate::OEQ, mNew, cf(negInf));
            mSafe[r] = sel(none, cf(0.0), mNew);
            alpha[r] = exp2(fsub(state[r], mSafe[r]));
            next.push_back(mNew);
          }
          Value partial[2] = {cf(0.0), cf(0.0)};
          for (int64_t nt = 0; nt < nTilesS; ++nt)
            for (int64_t e = 0; e < 4; ++e) {
              // exp2(s * c - m) as one fma.
              Value negM = arith::NegFOp::create(b, loc, mSafe[e / 2]);
              Value arg =
                  math::FmaOp::create(b, loc, s[mt][nt][e], scoreScale, negM);
              s[mt][nt][e] = exp2(arg);
              partial[e / 2] = fadd(partial[e / 2], s[mt][nt][e]);
            }
          // Dropout after the row sum (l is undropped), before P is packed
          // for P V: Philox on (j, i, h, b).
          if (dropout)
            for (int64_t nt = 0; nt < nTilesS; ++nt)
              for (int64_t e = 0; e < 4; ++e) {
                Value z = buildPhiloxDropout(
                    b, loc, dropoutSeed, dropoutP,
                    {keyOf(nt, e), rows[mt][e / 2], head, batch});
                s[mt][nt][e] = fmul(s[mt][nt][e], z);
              }
          for (int64_t r = 0; r < 2; ++r)
            next.push_back(fadd(fmul(state[2 + r], alpha[r]), partial[r]));
          acc[mt].resize(nTilesO);
          for (int64_t nt = 0; nt < nTilesO; ++nt)
            for (int64_t e = 0; e < 4; ++e)
              acc[mt][nt].push_back(fmul(state[4 + nt * 4 + e], alpha[e / 2]));
        }

        // O += P V: P's accumulator layout is the A layout of the next mma;
        // each V fragment serves every m-tile.
        for (int64_t j = 0; j < blockKV / 16; ++j) {
          SmallVector<SmallVector<Value, 4>> a(mTiles);
          for (int64_t mt = 0; mt < mTiles; ++mt)
            a[mt] = accToA(s[mt], j);
          for (int64_t pair = 0; pair < nTilesO / 2; ++pair) {
            Value at = swizzledAt(keyInStep, j * 16, dvHalf, pair * 16);
            auto r = ldmatrix4(smemAt(sV, at), true);
            for (int64_t mt = 0; mt < mTiles; ++mt) {
              acc[mt][2 * pair] = mma(a[mt], {r[0], r[1]}, acc[mt][2 * pair]);
              acc[mt][2 * pair + 1] =
                  mma(a[mt], {r[2], r[3]}, acc[mt][2 * pair + 1]);
            }
          }
        }
        // The yield follows the init layout: per m-tile m, l, then acc.
        SmallVector<Value> yielded;
        for (int64_t mt = 0; mt < mTiles; ++mt) {
          yielded.append(next.begin() + mt * 4, next.begin() + mt * 4 + 4);
          for (auto &t : acc[mt])
            yielded.append(t.begin(), t.end());
        }
        scf::YieldOp::create(b, loc, yielded);
      });

  // O = acc / l (0 for an empty row); lse = (m + log2 l) * ln 2.
  Value oBase = headBase(o, batch, head, os[0], os[1]);
  for (int64_t mt = 0; mt < mTiles; ++mt) {
    ValueRange state = loop.getResults().slice(mt * stateSize, stateSize);
    for (int64_t r = 0; r < 2; ++r) {
      Value l = quadReduce(state[2 + r], false);
      Value empty =
          arith::CmpFOp::create(b, loc, arith::CmpFPredicate::OEQ, l, cf(0.0));
      Value inv =
          sel(empty, cf(0.0), arith::DivFOp::create(b, loc, cf(1.0), l));
      Value row = rows[mt][r];
      Value inRange = cmp(arith::CmpIPredicate::slt, row, nq);
      auto store = scf::IfOp::create(b, loc, inRange, /*withElse=*/false);
      OpBuilder::InsertionGuard g2(b);
      b.setInsertionPointToStart(store.thenBlock());
      Value rowBase = gep(oBase, mul(ext64(row), os[2]), et);
      for (int64_t nt = 0; nt < nTilesO; ++nt) {
        Value lo = fmul(state[4 + nt * 4 + 2 * r], inv);
        Value hi = fmul(state[4 + nt * 4 + 2 * r + 1], inv);
        Value col = add(c32(nt * 8), shl(tq, 1));
        Value ptr = gep(rowBase, ext64(col), et);
        LLVM::StoreOp::create(b, loc, pack(lo, hi), ptr, /*alignment=*/4);
      }
      if (op.getLse()) {
        Value first = cmp(arith::CmpIPredicate::eq, tq, c32(0));
        auto write = scf::IfOp::create(b, loc, first, /*withElse=*/false);
        b.setInsertionPointToStart(write.thenBlock());
        Value log2l = approx("lg2.approx.f32", l);
        Value value = fmul(fadd(state[r], log2l), cf(M_LN2));
        value = sel(empty, cf(negInf), value);
        Value lseBase = add(
            add(mul(ext64(batch), ls[0]), mul(ext64(head), ls[1])), ext64(row));
        LLVM::StoreOp::create(b, loc, value, gep(lse, lseBase, f32));
      }
    }
  }
  LLVM::ReturnOp::create(b, loc, ValueRange{});
}

struct ConvertFAToNVVMPass
    : public fa::impl::ConvertFAToNVVMBase<ConvertFAToNVVMPass> {
  using Base::Base;
  void runOnOperation() override {
    ModuleOp module = getOperation();
    SmallVector<AttentionOp> ops;
    SmallVector<AttentionGradOp> gradOps;
    module.walk([&](Operation *op) {
      if (auto forward = dyn_cast<AttentionOp>(op))
        ops.push_back(forward);
      else if (auto grad = dyn_cast<AttentionGradOp>(op))
        gradOps.push_back(grad);
    });
    if (ops.empty() && gradOps.empty())
      return;
    OpBuilder b(module.getBodyRegion());
    b.setInsertionPointToEnd(module.getBody());
    auto target = NVVM::NVVMTargetAttr::get(
        &getContext(), /*optLevel=*/3, "nvptx64-nvidia-cuda", chip,
        chip == "sm_90a" ? "+ptx80" : "+ptx70");
    auto gpuModule = gpu::GPUModuleOp::create(b, module.getLoc(), "fa_kernels",
                                              b.getArrayAttr({target}));
    b.setInsertionPointToStart(gpuModule.getBody());
    LLVM::GlobalOp::create(
        b, module.getLoc(), LLVM::LLVMArrayType::get(b.getI8Type(), 0),
        /*isConstant=*/false, LLVM::Linkage::External, "fa_smem", Attribute(),
        /*alignment=*/16, /*addrSpace=*/kShared);
    for (auto [i, op] : llvm::enumerate(ops)) {
      std::string reason = unsupportedForwardReason(op);
      if (!reason.empty()) {
        op.emitOpError("convert-fa-to-nvvm: ") << reason;
        return signalPassFailure();
      }
      // A tile chosen by the options has one K/V stage unless they say
      // otherwise; the default tile comes with its own.
      ForwardTile tile = defaultForwardTile(op);
      if (blockQ || blockKV)
        tile.kvStages = 1;
      if (blockQ)
        tile.blockQ = blockQ;
      if (blockKV)
        tile.blockKV = blockKV;
      if (kvStages)
        tile.kvStages = kvStages;
      if (std::string why = unsupportedTileReason(tile); !why.empty()) {
        op.emitOpError("convert-fa-to-nvvm: ") << why;
        return signalPassFailure();
      }
      FlashKernelBuilder kernel(b, op.getLoc(), op, tile);
      std::string name = "fa_forward_" + std::to_string(i);
      kernel.build(name);
      // The launch contract, read by the runtime.
      auto fn = gpuModule.lookupSymbol<LLVM::LLVMFuncOp>(name);
      fn->setAttr("fa.shared_bytes", b.getI64IntegerAttr(kernel.sharedBytes()));
      fn->setAttr("fa.block_q", b.getI64IntegerAttr(kernel.getBlockQ()));
      fn->setAttr("fa.threads", b.getI64IntegerAttr(kThreads));
      if (i == 0)
        module->setAttr(
            "fa.kernel",
            b.getDictionaryAttr({
                b.getNamedAttr("shared_bytes",
                               b.getI64IntegerAttr(kernel.sharedBytes())),
                b.getNamedAttr("block_q",
                               b.getI64IntegerAttr(kernel.getBlockQ())),
                b.getNamedAttr("threads", b.getI64IntegerAttr(kThreads)),
            }));
    }
    for (auto [i, op] : llvm::enumerate(gradOps)) {
      std::string reason = unsupportedReason(op);
      if (!reason.empty()) {
        op.emitOpError("convert-fa-to-nvvm: ") << reason;
        return signalPassFailure();
      }
      SmallVector<KernelContract, 3> contracts = buildAttentionGradKernels(
          b, op, std::to_string(i),
          {bwdPrefetch, bwdAtomicDQ, /*bulkReduce=*/chip == "sm_90a"});
      // The launch contracts, read by the runtime: on each kernel, and for
      // the first op's kernels on the module, which outlives the gpu.module.
      SmallVector<Attribute> entries;
      for (const KernelContract &c : contracts) {
        auto fn = gpuModule.lookupSymbol<LLVM::LLVMFuncOp>(c.name);
        fn->setAttr("fa.grid", b.getStringAttr(c.grid));
        fn->setAttr("fa.shared_bytes", b.getI64IntegerAttr(c.sharedBytes));
        fn->setAttr("fa.threads", b.getI64IntegerAttr(c.threads));
        entries.push_back(b.getDictionaryAttr({
            b.getNamedAttr("name", b.getStringAttr(c.name)),
            b.getNamedAttr("grid", b.getStringAttr(c.grid)),
            b.getNamedAttr("shared_bytes", b.getI64IntegerAttr(c.sharedBytes)),
            b.getNamedAttr("threads", b.getI64IntegerAttr(c.threads)),
        }));
      }
      if (i == 0)
        module->setAttr("fa.backward", b.getArrayAttr(entries));
    }
    module->setAttr(gpu::GPUDialect::getContainerModuleAttrName(),
                    b.getUnitAttr());
  }
};

} // namespace
