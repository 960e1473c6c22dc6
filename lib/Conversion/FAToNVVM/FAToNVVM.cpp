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
#include "FAGPUToNVVM.h"
#include "KernelBuilder.h"
#include "fa/Conversion/Passes.h"
#include "fa/Dialect/FA/IR/FAOps.h"
#include "fa/Target/GpuTarget.h"
#include "fa/Transforms/Builders.h"
#include "fa/Transforms/GpuKernels.h"
#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Bufferization/IR/Bufferization.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/GPU/IR/GPUDialect.h"
#include "mlir/Dialect/LLVMIR/LLVMDialect.h"
#include "mlir/Dialect/LLVMIR/NVVMDialect.h"
#include "mlir/Dialect/Math/IR/Math.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
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

/// Why the forward kernel cannot be built for `op`, or an empty string.
std::string unsupportedForwardReason(AttentionOp op) {
  std::string reason = unsupportedShapeReason(op);
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

  /// Emits `llvm.func @name` into the current insertion point (a
  /// gpu.module), with the ABI of kernel `abiName` (getAbi).
  void build(StringRef name, StringRef abiName);

  /// The kernel's ABI: q, k, v, o, lse; strides (b, h, n) of q, k, v, o
  /// and (b, h) of lse; Nq, Nk, Hq / Hkv, Hq, B (i32); scale * log2(e). The
  /// scored path adds the bias and its strides (b, h, i, j; 0 where it
  /// broadcasts), the ALiBi slopes and their batch stride (0 for [Hq]);
  /// dropout the i64 seed; then each capture's pointer and strides. Grid
  /// (tiles of Nq, Hq, B).
  ::fa::runtime::KernelAbi getAbi(StringRef name);

  /// Dynamic shared memory the kernel needs, in bytes.
  int64_t sharedBytes() const {
    return forwardSharedBytes({blockQ, blockKV, kvStages}, d);
  }

private:
  AttentionOp op;
  /// 16-row query tiles per warp.
  int64_t mTiles;
  int64_t blockQ, blockKV;
  /// K and V buffers (ForwardTile::kvStages): a ring of tiles in flight.
  int64_t kvStages;
  /// Whether the Q fragments stay in registers for the whole loop (mTiles x
  /// D / 4 of them: up to 32); otherwise they are re-read from shared memory
  /// per k-step of S.
  bool qInRegisters;
};

::fa::runtime::KernelAbi FlashKernelBuilder::getAbi(StringRef name) {
  using namespace ::fa::runtime;
  KernelAbi abi;
  abi.name = name.str();
  abi.grid = {GridAxis::tilesNq(blockQ), GridAxis::hq(), GridAxis::batch()};
  abi.threads = kThreads;
  abi.sharedBytes = sharedBytes();
  std::vector<KernelParam> &p = abi.params;
  // q, k, v, o, lse; strides (b, h, n) of q, k, v, o and (b, h) of lse;
  // sizes; scale * log2(e).
  for (AbiTensor t :
       {AbiTensor::Q, AbiTensor::K, AbiTensor::V, AbiTensor::O, AbiTensor::Lse})
    p.push_back(KernelParam::pointer(t));
  for (AbiTensor t :
       {AbiTensor::Q, AbiTensor::K, AbiTensor::V, AbiTensor::O, AbiTensor::Lse})
    for (uint32_t dim = 0; dim < (t == AbiTensor::Lse ? 2u : 3u); ++dim)
      p.push_back(KernelParam::stride(t, dim));
  for (AbiSize size :
       {AbiSize::Nq, AbiSize::Nk, AbiSize::Group, AbiSize::Hq, AbiSize::B})
    p.push_back(KernelParam::ofSize(size));
  p.push_back(KernelParam::ofScalar(AbiScalar::ScaleLog2, MachineType::F32));
  // The scored path: the bias and its strides (b, h, i, j; 0 where it
  // broadcasts), the ALiBi slopes and their batch stride (0 for [Hq]).
  if (isScoredForward(op)) {
    p.push_back(KernelParam::pointer(AbiTensor::Bias));
    for (uint32_t dim = 0; dim < 4; ++dim)
      p.push_back(KernelParam::stride(AbiTensor::Bias, dim));
    p.push_back(KernelParam::pointer(AbiTensor::Slopes));
    p.push_back(KernelParam::stride(AbiTensor::Slopes, 0));
  }
  if (op.getDropoutSeed())
    p.push_back(KernelParam::ofScalar(AbiScalar::Seed, MachineType::I64));
  appendCaptureParams(p, op.getCaptures().getTypes());
  return abi;
}

void FlashKernelBuilder::build(StringRef name, StringRef abiName) {
  using ::fa::runtime::AbiScalar;
  using ::fa::runtime::AbiSize;
  using ::fa::runtime::AbiTensor;
  bool scored = isScoredForward(op);
  bool dropout = static_cast<bool>(op.getDropoutSeed());
  ::fa::runtime::KernelAbi abi = getAbi(abiName);
  Block *entry = &createKernel(name, abi, /*flushDenormals=*/true).front();
  OpBuilder::InsertionGuard guard(b);
  b.setInsertionPointToStart(entry);
  AbiArgs args(abi, entry);
  Value q = args.pointer(AbiTensor::Q), k = args.pointer(AbiTensor::K),
        v = args.pointer(AbiTensor::V), o = args.pointer(AbiTensor::O),
        lse = args.pointer(AbiTensor::Lse);
  Value qs[3], ks[3], vs[3], os[3], ls[2];
  for (unsigned dim = 0; dim < 3; ++dim) {
    qs[dim] = args.stride(AbiTensor::Q, dim);
    ks[dim] = args.stride(AbiTensor::K, dim);
    vs[dim] = args.stride(AbiTensor::V, dim);
    os[dim] = args.stride(AbiTensor::O, dim);
    if (dim < 2)
      ls[dim] = args.stride(AbiTensor::Lse, dim);
  }
  Value nq = args.size(AbiSize::Nq), nk = args.size(AbiSize::Nk),
        group = args.size(AbiSize::Group),
        scaleLog2 = args.scalar(AbiScalar::ScaleLog2);
  bindCaptures(args, op.getCaptures().getTypes(), nq, nk);

  ThreadPlace place =
      getThreadPlace(args.size(AbiSize::Hq), args.size(AbiSize::B));
  Value tid = place.tid, head = place.head;
  Value batch = place.batch, warp = place.warp, lane = place.lane;
  Value g = place.g, tq = place.tq;
  Value qTileIdx = op.getCausalAttr() ? lastTileFirst(place.tile) : place.tile;
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
  // With S stages, tile n lives in stage n % S; iteration n waits for tile
  // n (its K and V, one group; the S - 2 after it may stay in flight), has
  // everyone done with tile n - 1 (one barrier), issues tile n + S - 1 into
  // that stage and computes tile n: a copy has S - 1 tiles of math to land.
  // Q, then the first K tile (with S stages, the first S - 1 K/V tiles).
  copyTile(blockQ, sQ, qBase, q0, nq, qs[2], tid, /*threadAddresses=*/true);
  NVVM::CpAsyncCommitGroupOp::create(b, loc);
  Value any = cmp(arith::CmpIPredicate::slt, visible.begin, visible.end);
  for (int64_t t = 0; t < std::max<int64_t>(kvStages - 1, 1); ++t) {
    Value row = t == 0 ? visible.begin : add(visible.begin, c32(t * blockKV));
    Value has = t == 0 ? any : cmp(arith::CmpIPredicate::slt, row, visible.end);
    auto first = scf::IfOp::create(b, loc, has, /*withElse=*/false);
    {
      OpBuilder::InsertionGuard guardK(b);
      b.setInsertionPointToStart(first.thenBlock());
      copyTile(blockKV, t == 0 ? sKFirst : stageK(c32(t)), kBase, row, nk,
               ks[2], tid, /*threadAddresses=*/true);
      if (kvStages > 1)
        copyTile(blockKV, t == 0 ? sVFirst : stageV(c32(t)), vBase, row, nk,
                 vs[2], tid, /*threadAddresses=*/true);
    }
    NVVM::CpAsyncCommitGroupOp::create(b, loc);
  }

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
    // The K/V groups after Q's may stay in flight.
    NVVM::CpAsyncWaitGroupOp::create(b, loc,
                                     std::max<int64_t>(kvStages - 1, 1));
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
  // The query rows of this thread (g and g + 8 of each m-tile).
  auto threadRows = [&](Value q0, Value warpRow0, Value g) {
    SmallVector<std::array<Value, 2>> rows(mTiles);
    for (int64_t mt = 0; mt < mTiles; ++mt) {
      Value rowG = add(add(q0, add(c32(mt * 64), warpRow0)), g);
      rows[mt] = {rowG, add(rowG, c32(8))};
    }
    return rows;
  };
  SmallVector<std::array<Value, 2>> rows = threadRows(q0, warpRow0, g);
  std::optional<double> softcap;
  if (auto attr = op.getSoftcapAttr())
    softcap = attr.getValueAsDouble();
  Value dropoutSeed =
      dropout ? args.get(::fa::runtime::KernelParam::ofScalar(
                    AbiScalar::Seed, ::fa::runtime::MachineType::I64))
              : Value();
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
      Value at = add(mul(ext64(batch), args.stride(AbiTensor::Slopes, 0)),
                     ext64(head));
      slope = LLVM::LoadOp::create(
          b, loc, f32, gep(args.pointer(AbiTensor::Slopes), at, f32));
    }
    if (Value bias = op.getBias()) {
      biasEt = cast<ShapedType>(bias.getType()).getElementType();
      Value head0 = gep(args.pointer(AbiTensor::Bias),
                        add(mul(ext64(batch), args.stride(AbiTensor::Bias, 0)),
                            mul(ext64(head), args.stride(AbiTensor::Bias, 1))),
                        biasEt);
      Value nqLast = sub(nq, c32(1));
      for (int64_t mt = 0; mt < mTiles; ++mt)
        for (int64_t r = 0; r < 2; ++r)
          biasRows[mt][r] = gep(head0,
                                mul(ext64(mins(rows[mt][r], nqLast)),
                                    args.stride(AbiTensor::Bias, 2)),
                                biasEt);
      biasStrideJ = args.stride(AbiTensor::Bias, 3);
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
        NVVM::CpAsyncWaitGroupOp::create(b, loc,
                                         std::max<int64_t>(kvStages - 2, 0));
        NVVM::Barrier0Op::create(b, loc);
        // The tile to issue (n + 1, or n + S - 1 with S stages) and whether
        // there is one (built where the schedule issues it).
        Value nextKV0, more;
        auto nextTile = [&] {
          int64_t ahead = std::max<int64_t>(kvStages - 1, 1);
          nextKV0 = add(kv0, c32(ahead * blockKV));
          more = cmp(arith::CmpIPredicate::slt, nextKV0, visible.end);
        };
        if (kvStages == 1) {
          // K(n) (and Q) have landed, and everyone is done with V(n - 1):
          // fetch V(n) while S is computed.
          copyTile(blockKV, sV, vBase, kv0, nk, vs[2], tid,
                   /*threadAddresses=*/true);
        } else {
          // Tile n has landed, and everyone is done with tile n - 1, whose
          // stage tile n + S - 1 takes.
          nextTile();
          Value n = divu(sub(kv0, visible.begin), c32(blockKV));
          bool pow2 = llvm::isPowerOf2_64(kvStages);
          Value stage = pow2 ? andi(n, kvStages - 1) : remu(n, c32(kvStages));
          sK = stageK(stage), sV = stageV(stage);
          Value other = kvStages == 2
                            ? sub(c32(1), stage)
                            : sel(cmp(arith::CmpIPredicate::eq, stage, c32(0)),
                                  c32(kvStages - 1), sub(stage, c32(1)));
          auto next = scf::IfOp::create(b, loc, more, /*withElse=*/false);
          OpBuilder::InsertionGuard guardNext(b);
          b.setInsertionPointToStart(next.thenBlock());
          copyTile(blockKV, stageK(other), kBase, nextKV0, nk, ks[2], tid,
                   /*threadAddresses=*/true);
          copyTile(blockKV, stageV(other), vBase, nextKV0, nk, vs[2], tid,
                   /*threadAddresses=*/true);
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
            copyTile(blockKV, sK, kBase, nextKV0, nk, ks[2], tid,
                     /*threadAddresses=*/true);
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
                Value th = accurateTanh(scaled);
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
          // for P V: Philox on (j, i, h, b). The kept P stays unscaled; the
          // epilogue applies 1 / (1 - p).
          if (dropout)
            for (int64_t nt = 0; nt < nTilesS; ++nt)
              for (int64_t e = 0; e < 4; ++e) {
                Value z = buildPhiloxDropout(
                    b, loc, dropoutSeed, dropoutP,
                    {keyOf(nt, e), rows[mt][e / 2], head, batch},
                    /*scaled=*/false);
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

  // O = acc / l (0 for an empty row); lse = (m + log2 l) * ln 2. The rows,
  // head and batch are rebuilt: reusing the prologue's would keep them in
  // registers across the loop (a spill at D = 128 on sm_90a).
  {
    ThreadPlace again = rebuildThreadPlace();
    tq = again.tq;
    head = again.head;
    batch = again.batch;
    Value tile =
        op.getCausalAttr() ? lastTileFirst(again.tile, true) : again.tile;
    rows =
        threadRows(mul(tile, c32(blockQ)), mul(again.warp, c32(16)), again.g);
  }
  Value oBase = headBase(o, batch, head, os[0], os[1]);
  for (int64_t mt = 0; mt < mTiles; ++mt) {
    ValueRange state = loop.getResults().slice(mt * stateSize, stateSize);
    for (int64_t r = 0; r < 2; ++r) {
      Value l = quadReduce(state[2 + r], false);
      Value empty =
          arith::CmpFOp::create(b, loc, arith::CmpFPredicate::OEQ, l, cf(0.0));
      // 1 / l, and dropout's 1 / (1 - p).
      Value inv = arith::DivFOp::create(
          b, loc, cf(dropout ? 1.0 / (1.0 - dropoutP) : 1.0), l);
      inv = sel(empty, cf(0.0), inv);
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

/// Which argument of an outlined kernel each part of its fa.attention is
/// (-1 when the op has none).
struct KernelArgs {
  int64_t q = -1, k = -1, v = -1, o = -1, lse = -1, bias = -1, slopes = -1,
          seed = -1;
  SmallVector<int64_t> captures;
};

/// The arguments `op` reads (through bufferization.to_tensor) and writes
/// (through bufferization.materialize_in_destination) in `kernel`, as
/// fa-fuse outlines it; failure otherwise.
FailureOr<KernelArgs> getKernelArgs(gpu::GPUFuncOp kernel, AttentionOp op) {
  Block &entry = kernel.getBody().front();
  auto argOf = [&](Value value) -> int64_t {
    if (auto read = value.getDefiningOp<bufferization::ToTensorOp>())
      value = read.getBuffer();
    auto arg = dyn_cast<BlockArgument>(value);
    return arg && arg.getOwner() == &entry ? arg.getArgNumber() : -1;
  };
  auto storedTo = [&](Value result) -> int64_t {
    if (!result)
      return -1;
    if (!result.hasOneUse())
      return -2;
    auto store = dyn_cast<bufferization::MaterializeInDestinationOp>(
        *result.user_begin());
    return store ? argOf(store.getDest()) : -2;
  };
  KernelArgs args;
  args.q = argOf(op.getQuery());
  args.k = argOf(op.getKey());
  args.v = argOf(op.getValue());
  args.o = storedTo(op.getOutput());
  args.lse = storedTo(op.getLse());
  auto optional = [&](Value value) { return value ? argOf(value) : -1; };
  args.bias = optional(op.getBias());
  args.slopes = optional(op.getAlibiSlopes());
  args.seed = optional(op.getDropoutSeed());
  for (Value capture : op.getCaptures())
    args.captures.push_back(argOf(capture));
  bool ok = args.q >= 0 && args.k >= 0 && args.v >= 0 && args.o >= 0 &&
            args.lse != -2 && (!op.getLse() || args.lse >= 0) &&
            (!op.getBias() || args.bias >= 0) &&
            (!op.getAlibiSlopes() || args.slopes >= 0) &&
            (!op.getDropoutSeed() || args.seed >= 0) &&
            llvm::all_of(args.captures, [](int64_t a) { return a >= 0; });
  if (!ok)
    return failure();
  return args;
}

/// Rewrites the operands of `launch` (the memrefs and scalars fa-fuse
/// passes) into the values `abi` names, in its order, its grid into that of
/// `abi.grid` (folded where H or B exceeds 65535: KernelAbi.h), and its
/// shared memory into the kernel's.
void rewriteLaunch(gpu::LaunchFuncOp launch, AttentionOp op,
                   const KernelArgs &args,
                   const ::fa::runtime::KernelAbi &abi) {
  using ::fa::runtime::AbiScalar;
  using ::fa::runtime::AbiSize;
  using ::fa::runtime::AbiTensor;
  using ::fa::runtime::GridAxis;
  using ::fa::runtime::KernelParam;
  using ::fa::runtime::MachineType;
  OpBuilder b(launch);
  Location loc = launch.getLoc();
  ValueRange given = launch.getKernelOperands();
  Type i32 = b.getI32Type(), i64 = b.getI64Type(), f32 = b.getF32Type();
  auto gptr = LLVM::LLVMPointerType::get(b.getContext(), kGlobal);
  auto toI64 = [&](Value index) -> Value {
    return arith::IndexCastOp::create(b, loc, i64, index);
  };
  auto zero64 = [&]() -> Value {
    return arith::ConstantIntOp::create(b, loc, i64, 0);
  };
  auto index = [&](int64_t v) -> Value {
    return arith::ConstantIndexOp::create(b, loc, v);
  };
  // A memref as the kernel sees it: the address of its first element, its
  // sizes and its element strides (index; the kernel takes them as i64).
  // Described once, where first used.
  struct Buffer {
    Value ptr;
    SmallVector<Value> sizes, strides;
  };
  DenseMap<int64_t, Buffer> described;
  auto describe = [&](int64_t arg) -> const Buffer & {
    auto it = described.find(arg);
    if (it != described.end())
      return it->second;
    Value memref = given[arg];
    Type et = cast<MemRefType>(memref.getType()).getElementType();
    auto meta = memref::ExtractStridedMetadataOp::create(b, loc, memref);
    Value aligned =
        memref::ExtractAlignedPointerAsIndexOp::create(b, loc, memref);
    Value base = LLVM::IntToPtrOp::create(b, loc, gptr, toI64(aligned));
    Buffer buffer;
    buffer.ptr = LLVM::GEPOp::create(b, loc, gptr, et, base,
                                     ValueRange{toI64(meta.getOffset())});
    buffer.sizes.assign(meta.getSizes().begin(), meta.getSizes().end());
    buffer.strides.assign(meta.getStrides().begin(), meta.getStrides().end());
    return described[arg] = std::move(buffer);
  };
  // The stride of a dimension that broadcasts (size 1) is 0.
  auto broadcastStride = [&](int64_t arg, int64_t dim) {
    const Buffer &buffer = describe(arg);
    int64_t size = cast<MemRefType>(given[arg].getType()).getDimSize(dim);
    if (size == 1)
      return zero64();
    Value stride = toI64(buffer.strides[dim]);
    if (!ShapedType::isDynamic(size))
      return stride;
    Value isOne = arith::CmpIOp::create(b, loc, arith::CmpIPredicate::eq,
                                        buffer.sizes[dim], index(1));
    return arith::SelectOp::create(b, loc, isOne, zero64(), stride).getResult();
  };
  // The kernel argument of each tensor the forward takes (-1: absent).
  auto argOf = [&](const KernelParam &p) -> int64_t {
    switch (p.tensor) {
    case AbiTensor::Q:
      return args.q;
    case AbiTensor::K:
      return args.k;
    case AbiTensor::V:
      return args.v;
    case AbiTensor::O:
      return args.o;
    case AbiTensor::Lse:
      return args.lse;
    case AbiTensor::Bias:
      return args.bias;
    case AbiTensor::Slopes:
      return args.slopes;
    case AbiTensor::Capture:
      return args.captures[p.capture];
    default:
      llvm_unreachable("not a tensor of the forward");
    }
  };
  // Sizes (index) from Q [B, Hq, Nq, D] and K [B, Hkv, Nk, D].
  auto sizeOf = [&](AbiSize size) -> Value {
    const Buffer &q = describe(args.q);
    const Buffer &k = describe(args.k);
    switch (size) {
    case AbiSize::Nq:
      return q.sizes[2];
    case AbiSize::Nk:
      return k.sizes[2];
    case AbiSize::Group:
      return arith::DivUIOp::create(b, loc, q.sizes[1], k.sizes[1]);
    case AbiSize::B:
      return q.sizes[0];
    case AbiSize::Hq:
      return q.sizes[1];
    case AbiSize::Hkv:
      return k.sizes[1];
    }
    llvm_unreachable("unknown size");
  };

  SmallVector<Value> operands;
  for (const KernelParam &p : abi.params) {
    switch (p.kind) {
    case KernelParam::Kind::Pointer: {
      int64_t arg = argOf(p);
      operands.push_back(arg >= 0 ? describe(arg).ptr
                                  : LLVM::ZeroOp::create(b, loc, gptr));
      break;
    }
    case KernelParam::Kind::Stride: {
      int64_t arg = argOf(p);
      Value stride;
      if (arg < 0)
        stride = zero64();
      else if (p.tensor == AbiTensor::Bias)
        stride = broadcastStride(arg, p.dim);
      else if (p.tensor == AbiTensor::Slopes)
        // The batch stride of [B, Hq] slopes; [Hq] broadcasts.
        stride = describe(arg).strides.size() == 2 ? broadcastStride(arg, 0)
                                                   : zero64();
      else
        stride = toI64(describe(arg).strides[p.dim]);
      if (p.type == MachineType::I32)
        stride = arith::TruncIOp::create(b, loc, i32, stride);
      operands.push_back(stride);
      break;
    }
    case KernelParam::Kind::Size:
      operands.push_back(arith::IndexCastOp::create(
          b, loc, p.type == MachineType::I32 ? i32 : i64, sizeOf(p.size)));
      break;
    case KernelParam::Kind::Scalar:
      if (p.scalar == AbiScalar::Seed) {
        operands.push_back(given[args.seed]);
      } else {
        // Kernels in fagpu ops carry their scale (and take none).
        assert(op && "a scale parameter of a kernel without its op");
        double scale = op.getScaleOrDefault();
        operands.push_back(arith::ConstantFloatOp::create(
            b, loc, cast<FloatType>(f32),
            APFloat(static_cast<float>(
                p.scalar == AbiScalar::ScaleLog2 ? scale * M_LOG2E : scale))));
      }
      break;
    }
  }
  launch.getKernelOperandsMutable().assign(operands);

  // The grid: x tiles; y and z H and B, folded where either exceeds 65535:
  // (min(H B, 65535), ceil(H B / 65535)).
  auto extent = [&](const GridAxis &axis) -> Value {
    switch (axis.kind) {
    case GridAxis::Kind::One:
      return index(1);
    case GridAxis::Kind::TilesNq:
    case GridAxis::Kind::TilesNk:
      return arith::CeilDivUIOp::create(
          b, loc,
          sizeOf(axis.kind == GridAxis::Kind::TilesNq ? AbiSize::Nq
                                                      : AbiSize::Nk),
          index(axis.rows));
    case GridAxis::Kind::Hq:
      return sizeOf(AbiSize::Hq);
    case GridAxis::Kind::Hkv:
      return sizeOf(AbiSize::Hkv);
    case GridAxis::Kind::B:
      return sizeOf(AbiSize::B);
    }
    llvm_unreachable("unknown grid axis");
  };
  Value heads = extent(abi.grid.y), batches = extent(abi.grid.z);
  Value limit = index(::fa::runtime::kMaxGridYZ);
  Value fits = arith::AndIOp::create(
      b, loc,
      arith::CmpIOp::create(b, loc, arith::CmpIPredicate::ule, heads, limit),
      arith::CmpIOp::create(b, loc, arith::CmpIPredicate::ule, batches, limit));
  Value linear = arith::MulIOp::create(b, loc, heads, batches);
  launch.getGridSizeXMutable().assign(extent(abi.grid.x));
  launch.getGridSizeYMutable().assign(arith::SelectOp::create(
      b, loc, fits, heads, arith::MinUIOp::create(b, loc, linear, limit)));
  launch.getGridSizeZMutable().assign(arith::SelectOp::create(
      b, loc, fits, batches,
      arith::CeilDivUIOp::create(b, loc, linear, limit)));
  setDynamicSharedBytes(launch, abi.sharedBytes);
}

/// The tile recorded on an outlined kernel by fa-fuse and fa-async-copy, or
/// failure (reported).
FailureOr<ForwardTile> getKernelTile(gpu::GPUFuncOp kernel) {
  auto blockQ = kernel->getAttrOfType<IntegerAttr>(kBlockQAttr);
  auto blockKV = kernel->getAttrOfType<IntegerAttr>(kBlockKVAttr);
  auto stages = kernel->getAttrOfType<IntegerAttr>(kKVStagesAttr);
  if (!blockQ || !blockKV)
    return kernel.emitOpError("convert-fa-to-nvvm: the kernel has no '")
           << kBlockQAttr << "' and '" << kBlockKVAttr
           << "' (outline it with fa-fuse)";
  ForwardTile tile{blockQ.getInt(), blockKV.getInt(),
                   stages ? stages.getInt() : 1};
  std::string why = unsupportedTileReason(tile.blockQ, tile.blockKV);
  if (why.empty() && (tile.kvStages < 1 || tile.kvStages > kMaxKVStages))
    why = "kv-stages must be 1 to " + std::to_string(kMaxKVStages) + " (got " +
          std::to_string(tile.kvStages) + ")";
  if (!why.empty())
    return kernel.emitOpError("convert-fa-to-nvvm: ") << why;
  return tile;
}

struct ConvertFAToNVVMPass
    : public mlir::fa::impl::ConvertFAToNVVMBase<ConvertFAToNVVMPass> {
  using Base::Base;
  void runOnOperation() override {
    ModuleOp module = getOperation();
    if (!chip.empty() && !::fa::target::lookupGpuTarget(chip)) {
      module.emitError("convert-fa-to-nvvm: unknown chip '")
          << chip << "' (FA compiles for " << ::fa::target::listGpuTargets()
          << ")";
      return signalPassFailure();
    }
    SmallVector<AttentionGradOp> gradOps;
    SmallVector<gpu::GPUFuncOp> forwardKernels, fagpuKernels;
    bool unfused = false;
    module.walk([&](Operation *op) {
      if (auto kernel = dyn_cast<gpu::GPUFuncOp>(op)) {
        if (getOutlinedAttention(kernel))
          forwardKernels.push_back(kernel);
        else if (isFAGPUKernel(kernel))
          fagpuKernels.push_back(kernel);
      } else if (auto grad = dyn_cast<AttentionGradOp>(op)) {
        gradOps.push_back(grad);
      } else if (isa<AttentionOp>(op) &&
                 !op->getParentOfType<gpu::GPUFuncOp>()) {
        op->emitOpError("convert-fa-to-nvvm: outline fa.attention into a "
                        "kernel with fa-fuse first");
        unfused = true;
      }
    });
    if (unfused)
      return signalPassFailure();
    if (forwardKernels.empty() && gradOps.empty() && fagpuKernels.empty())
      return;
    // The kernel module's chip, unless the option names one.
    std::string moduleChip = getKernelChip(module);
    if (!chip.empty() && !moduleChip.empty() && chip != moduleChip) {
      module.emitError("convert-fa-to-nvvm: chip=")
          << chip << ", but the kernel module targets " << moduleChip;
      return signalPassFailure();
    }
    std::string target =
        !chip.empty() ? chip : (moduleChip.empty() ? "sm_80" : moduleChip);
    const ::fa::target::GpuTarget *gpuTarget =
        ::fa::target::lookupGpuTarget(target);
    gpu::GPUModuleOp gpuModule = getOrCreateKernelModule(module, target);
    if (!gpuTarget || !gpuModule) {
      module.emitError("convert-fa-to-nvvm: unknown chip '")
          << target << "' (FA compiles for " << ::fa::target::listGpuTargets()
          << ")";
      return signalPassFailure();
    }
    OpBuilder b(gpuModule.getBodyRegion());
    if (!gpuModule.lookupSymbol("fa_smem")) {
      // 1024-byte aligned: wgmma's 128-byte swizzle is a function of the
      // address, so its 8-row groups must start at multiples of 1024.
      b.setInsertionPointToStart(gpuModule.getBody());
      LLVM::GlobalOp::create(
          b, module.getLoc(), LLVM::LLVMArrayType::get(b.getI8Type(), 0),
          /*isConstant=*/false, LLVM::Linkage::External, "fa_smem", Attribute(),
          /*alignment=*/1024, /*addrSpace=*/kShared);
    }
    static_assert(kThreads == kForwardThreads, "fa-fuse launches kThreads");
    // Kernels in the kernel-level IR, lowered op by op.
    for (gpu::GPUFuncOp kernel : fagpuKernels) {
      std::string name = kernel.getName().str();
      // fa-fuse's operands, by the role fa-tile gave each (fa.abi; else
      // Q, K, V, O and lse in order).
      KernelArgs args;
      args.q = 0, args.k = 1, args.v = 2, args.o = 3;
      for (unsigned i = 4; i < kernel.getNumArguments(); ++i) {
        auto role = kernel.getArgAttrOfType<StringAttr>(i, kAbiRoleAttrName);
        StringRef name = role ? role.getValue() : (i == 4 ? "lse" : "");
        unsigned capture = 0;
        if (name == "lse")
          args.lse = i;
        else if (name == "bias")
          args.bias = i;
        else if (name == "slopes")
          args.slopes = i;
        else if (name == "seed")
          args.seed = i;
        else if (name.consume_front("capture") &&
                 !name.getAsInteger(10, capture)) {
          if (args.captures.size() <= capture)
            args.captures.resize(capture + 1, -1);
          args.captures[capture] = i;
        }
      }
      ::fa::runtime::KernelAbi abi;
      FailureOr<LLVM::LLVMFuncOp> fn = lowerFAGPUKernel(kernel, name, abi);
      if (failed(fn))
        return signalPassFailure();
      module.walk([&](gpu::LaunchFuncOp launch) {
        if (launch.getKernelModuleName() == gpuModule.getName() &&
            launch.getKernelName() == name)
          rewriteLaunch(launch, AttentionOp(), args, abi);
      });
      fn->setSymName(name);
    }
    for (gpu::GPUFuncOp kernel : forwardKernels) {
      AttentionOp op = getOutlinedAttention(kernel);
      std::string reason = unsupportedForwardReason(op);
      if (!reason.empty()) {
        op.emitOpError("convert-fa-to-nvvm: ") << reason;
        return signalPassFailure();
      }
      FailureOr<ForwardTile> tile = getKernelTile(kernel);
      if (failed(tile))
        return signalPassFailure();
      FailureOr<KernelArgs> args = getKernelArgs(kernel, op);
      if (failed(args)) {
        op.emitOpError("convert-fa-to-nvvm: the kernel's fa.attention must "
                       "read its operands from the kernel's arguments and "
                       "store its results into them (as fa-fuse outlines it)");
        return signalPassFailure();
      }
      // The llvm.func takes the gpu.func's place and name; it carries its
      // ABI (fa.kernel_abi), which the launches follow.
      std::string name = kernel.getName().str();
      b.setInsertionPoint(kernel);
      FlashKernelBuilder builder(b, op.getLoc(), op, *tile);
      builder.build(name + ".nvvm", name);
      auto fn = gpuModule.lookupSymbol<LLVM::LLVMFuncOp>(name + ".nvvm");
      ::fa::runtime::KernelAbi abi = builder.getAbi(name);
      SmallVector<gpu::LaunchFuncOp> launches;
      module.walk([&](gpu::LaunchFuncOp launch) {
        if (launch.getKernelModuleName() == gpuModule.getName() &&
            launch.getKernelName() == name)
          launches.push_back(launch);
      });
      for (gpu::LaunchFuncOp launch : launches) {
        rewriteLaunch(launch, op, *args, abi);
        if (TypeRange(launch.getKernelOperands()) !=
            fn.getFunctionType().getParams()) {
          launch.emitOpError("convert-fa-to-nvvm: the launch's operands do "
                             "not match the kernel's parameters");
          return signalPassFailure();
        }
      }
      kernel.erase();
      fn.setSymName(name);
    }
    b.setInsertionPointToEnd(gpuModule.getBody());
    for (auto [i, op] : llvm::enumerate(gradOps)) {
      std::string reason = unsupportedReason(op);
      if (!reason.empty()) {
        op.emitOpError("convert-fa-to-nvvm: ") << reason;
        return signalPassFailure();
      }
      if (failed(buildAttentionGradKernels(b, op, std::to_string(i),
                                           {bwdPrefetch, bwdAtomicDQ, gpuTarget,
                                            bwdDkDvWarps, bwdWgmma,
                                            bwdDeterministic})))
        return signalPassFailure();
    }
  }
};

} // namespace
