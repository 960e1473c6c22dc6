//===- AttentionGradToNVVM.cpp - fa.attention_grad to NVVM kernels --------===//
//
// The backward of FlashAttention-2 as three kernels, deterministic (no
// atomics: every output element is written by one thread, once) and
// accumulating in f32:
//
//  - dsum: Dsum[b, h, i] = sum_e dO[b, h, i, e] * O[b, h, i, e] into an f32
//    workspace [B, Hq, Nq]; one CTA per 64 query rows, a quad of lanes per
//    row.
//  - dkdv: one CTA per (K/V tile of 64 rows, kv head, batch), each warp
//    owning 16 key rows whose dK and dV accumulate in registers over the
//    query heads of the GQA group and the Q tiles that can see the K/V tile.
//    Scores are computed transposed, S^T = K Q^T, so that P^T (rows: keys)
//    comes out of the mma in the A-fragment layout of dV += P^T dO and
//    likewise dS^T for dK += dS^T Q: neither goes through shared memory.
//    lse is per column of S^T and read from shared memory.
//  - dq: one CTA per (Q tile of 64 rows, query head, batch), like the
//    forward: S = Q K^T, P = exp2(S * scale * log2(e) - lse * log2(e)),
//    dP = dO V^T, dS = P (dP - Dsum), dQ += dS K over the visible K/V tiles.
//
// dS is the derivative with respect to the score; the derivative with
// respect to the raw dot product multiplies it by scale (and softcap's
// 1 - tanh^2), applied to dK and dQ once at the end (softcap's per element).
// A row with lse = -inf (fully masked) reads lse * log2(e) as +inf, so its P
// and dS are 0 without a NaN; so do query rows past Nq. Keys past Nk are
// masked in dq; in dkdv their rows are never stored.
//
//===----------------------------------------------------------------------===//

#include "AttentionGradToNVVM.h"
#include "KernelBuilder.h"

#include "mlir/Dialect/LLVMIR/NVVMDialect.h"
#include "mlir/Dialect/Math/IR/Math.h"
#include "mlir/Dialect/SCF/IR/SCF.h"

#include <cmath>
#include <limits>

using namespace mlir;
using namespace mlir::fa;
using namespace mlir::fa::nvvm;

namespace {

/// Key rows of a dkdv CTA and query rows of a dq CTA: 4 warps x 16.
constexpr int64_t kBlockRows = 16 * kWarps;
/// Query rows of a dsum CTA: 32 rows (a quad each) twice.
constexpr int64_t kDsumRows = 64;

class GradKernelBuilder : public KernelBuilder {
public:
  GradKernelBuilder(OpBuilder &b, Location loc, AttentionGradOp op)
      : KernelBuilder(b, loc, op.getElementType(),
                      op.getQuery().getType().getDimSize(3)),
        op(op), masks{op.getCausalAttr(), op.getWindowAttr()} {
    if (auto attr = op.getSoftcapAttr())
      softcap = attr.getValueAsDouble();
    // dK and dV take 2 D registers per thread: for D > 64, 64 columns of
    // S^T and dP^T would spill, and at D = 128 so would 32 with softcap's
    // 1 - tanh^2 per score (ptxas -v, sm_80 and sm_90a).
    dkdvBlockQ = d <= 64 ? 64 : (d == 128 && softcap ? 16 : 32);
  }

  void buildDsum(StringRef name);
  void buildDkDv(StringRef name);
  void buildDq(StringRef name);

  /// Q rows per iteration of the dkdv kernel.
  int64_t getDkDvBlockQ() const { return dkdvBlockQ; }
  /// K, V, Q and dO tiles, then lse * log2(e) and Dsum of the Q rows.
  int64_t dkdvSharedBytes() const {
    return (2 * kBlockRows + 2 * dkdvBlockQ) * d * 2 + 2 * dkdvBlockQ * 4;
  }
  /// Q and dO tiles, then one K and one V tile.
  int64_t dqSharedBytes() const {
    return (2 * kBlockRows + 2 * kBlockKV) * d * 2;
  }

private:
  /// The arguments the three kernels share (one ABI, so the launcher packs
  /// them once).
  struct Args {
    Value q, k, v, o, dO, lse, dq, dk, dv, dsum;
    Value qs[3], ks[3], vs[3], os[3], dOs[3], dqs[3], dks[3], dvs[3];
    Value lses[2], dsums[2];
    Value nq, nk, group, scaleLog2, scale;
  };
  /// Creates kernel `name` and moves the insertion point into it.
  Args beginKernel(StringRef name);

  /// Applies the softcap to the scores (into the log2 domain) and returns
  /// its derivative factor 1 - tanh^2 per score; empty without a softcap.
  Tiles applySoftcap(Tiles &s);
  /// s = keep(nt, e) ? s : -inf, inside a branch on `needMask` (uniform
  /// across the CTA, so the branch is).
  void maskScores(Tiles &s, Value needMask,
                  function_ref<Value(int64_t nt, int64_t e)> keep);
  /// Stores accumulator tiles (times `factor` unless null) as rows of `et`:
  /// row `row + 8 * r` gets the elements e with e / 2 == r, when < `limit`.
  void storeRows(const Tiles &acc, Value base, Value rowStride, Value row,
                 Value limit, Value tq, Value factor);
  /// The f32 pair at element `index` (even) of an f32 array in shared memory.
  std::array<Value, 2> loadPair(Value array, Value index);
  /// The element-type vector of 8 at element `offset` of global `base`.
  Value loadChunk(Value base, Value offset);

  AttentionGradOp op;
  Masks masks;
  std::optional<double> softcap;
  /// Q rows per dkdv iteration.
  int64_t dkdvBlockQ;
};

} // namespace

GradKernelBuilder::Args GradKernelBuilder::beginKernel(StringRef name) {
  // q, k, v, o, dO, lse, dq, dk, dv, dsum; strides (b, h, n) of q, k, v, o,
  // dO, dq, dk, dv and (b, h) of lse and dsum; Nq, Nk, Hq / Hkv (i32);
  // scale * log2(e), scale (f32).
  SmallVector<Type> params(10, gptr);
  params.append(28, i64);
  params.append({i32, i32, i32, f32, f32});
  Block *entry = &createKernel(name, params).front();
  b.setInsertionPointToStart(entry);
  auto arg = [&](unsigned i) { return entry->getArgument(i); };
  Args a;
  Value *pointers[] = {&a.q,   &a.k,  &a.v,  &a.o,  &a.dO,
                       &a.lse, &a.dq, &a.dk, &a.dv, &a.dsum};
  for (unsigned i = 0; i < 10; ++i)
    *pointers[i] = arg(i);
  Value *strides[] = {a.qs, a.ks, a.vs, a.os, a.dOs, a.dqs, a.dks, a.dvs};
  for (unsigned t = 0; t < 8; ++t)
    for (unsigned i = 0; i < 3; ++i)
      strides[t][i] = arg(10 + 3 * t + i);
  a.lses[0] = arg(34);
  a.lses[1] = arg(35);
  a.dsums[0] = arg(36);
  a.dsums[1] = arg(37);
  a.nq = arg(38);
  a.nk = arg(39);
  a.group = arg(40);
  a.scaleLog2 = arg(41);
  a.scale = arg(42);
  return a;
}

KernelBuilder::Tiles GradKernelBuilder::applySoftcap(Tiles &s) {
  Tiles deriv;
  if (!softcap)
    return deriv;
  deriv.resize(s.size());
  for (auto [t, dt] : llvm::zip(s, deriv))
    for (Value &x : t) {
      // softcap * tanh(x * scale / softcap), then * log2(e); d/dx of the
      // score is scale * (1 - tanh^2).
      Value th = approx("tanh.approx.f32",
                        fmul(x, cf(op.getScaleOrDefault() / *softcap)));
      x = fmul(th, cf(*softcap * M_LOG2E));
      dt.push_back(fsub(cf(1.0), fmul(th, th)));
    }
  return deriv;
}

void GradKernelBuilder::maskScores(
    Tiles &s, Value needMask, function_ref<Value(int64_t nt, int64_t e)> keep) {
  SmallVector<Type> types(s.size() * 4, f32);
  auto masked = scf::IfOp::create(b, loc, types, needMask, /*withElse=*/true);
  {
    OpBuilder::InsertionGuard guard(b);
    b.setInsertionPointToStart(masked.thenBlock());
    SmallVector<Value> values;
    Value negInf = cf(-std::numeric_limits<double>::infinity());
    for (int64_t nt = 0; nt < int64_t(s.size()); ++nt)
      for (int64_t e = 0; e < 4; ++e)
        values.push_back(sel(keep(nt, e), s[nt][e], negInf));
    scf::YieldOp::create(b, loc, values);
    b.setInsertionPointToStart(masked.elseBlock());
    SmallVector<Value> plain;
    for (auto &t : s)
      plain.append(t.begin(), t.end());
    scf::YieldOp::create(b, loc, plain);
  }
  for (int64_t nt = 0; nt < int64_t(s.size()); ++nt)
    for (int64_t e = 0; e < 4; ++e)
      s[nt][e] = masked.getResult(nt * 4 + e);
}

void GradKernelBuilder::storeRows(const Tiles &acc, Value base, Value rowStride,
                                  Value row, Value limit, Value tq,
                                  Value factor) {
  for (int64_t r = 0; r < 2; ++r) {
    Value rowR = add(row, c32(8 * r));
    Value inRange = cmp(arith::CmpIPredicate::slt, rowR, limit);
    auto store = scf::IfOp::create(b, loc, inRange, /*withElse=*/false);
    OpBuilder::InsertionGuard guard(b);
    b.setInsertionPointToStart(store.thenBlock());
    Value rowBase = gep(base, mul(ext64(rowR), rowStride), et);
    for (int64_t nt = 0; nt < int64_t(acc.size()); ++nt) {
      Value lo = acc[nt][2 * r], hi = acc[nt][2 * r + 1];
      if (factor) {
        lo = fmul(lo, factor);
        hi = fmul(hi, factor);
      }
      Value col = add(c32(nt * 8), shl(tq, 1));
      LLVM::StoreOp::create(b, loc, pack(lo, hi), gep(rowBase, ext64(col), et),
                            /*alignment=*/4);
    }
  }
}

std::array<Value, 2> GradKernelBuilder::loadPair(Value array, Value index) {
  auto v2 = VectorType::get({2}, f32);
  Value pair = LLVM::LoadOp::create(b, loc, v2, smemAt(array, shl(index, 2)),
                                    /*alignment=*/8);
  return {LLVM::ExtractElementOp::create(b, loc, pair, c32(0)),
          LLVM::ExtractElementOp::create(b, loc, pair, c32(1))};
}

Value GradKernelBuilder::loadChunk(Value base, Value offset) {
  return LLVM::LoadOp::create(b, loc, VectorType::get({8}, et),
                              gep(base, offset, et), /*alignment=*/16);
}

//===----------------------------------------------------------------------===//
// dsum
//===----------------------------------------------------------------------===//

void GradKernelBuilder::buildDsum(StringRef name) {
  OpBuilder::InsertionGuard guard(b);
  Args a = beginKernel(name);
  Value tid = NVVM::ThreadIdXOp::create(b, loc, i32);
  Value tile = NVVM::BlockIdXOp::create(b, loc, i32);
  Value head = NVVM::BlockIdYOp::create(b, loc, i32);
  Value batch = NVVM::BlockIdZOp::create(b, loc, i32);
  Value tq = andi(tid, 3);
  Value oBase = headBase(a.o, batch, head, a.os[0], a.os[1]);
  Value dOBase = headBase(a.dO, batch, head, a.dOs[0], a.dOs[1]);
  Value dsumBase =
      add(mul(ext64(batch), a.dsums[0]), mul(ext64(head), a.dsums[1]));
  auto v8f32 = VectorType::get({8}, f32);
  // A quad of lanes per row, 16-byte chunks tq, tq + 4, ... of it each.
  for (int64_t pass = 0; pass < kDsumRows / (kThreads / 4); ++pass) {
    Value row = add(add(mul(tile, c32(kDsumRows)), c32(pass * kThreads / 4)),
                    shr(tid, 2));
    Value valid = cmp(arith::CmpIPredicate::slt, row, a.nq);
    Value srcRow = sel(valid, row, c32(0));
    Value oRow = gep(oBase, mul(ext64(srcRow), a.os[2]), et);
    Value dORow = gep(dOBase, mul(ext64(srcRow), a.dOs[2]), et);
    Value sum = cf(0.0);
    for (int64_t j = 0; j < d / 32; ++j) {
      Value col = ext64(add(shl(tq, 3), c32(j * 32)));
      Value o = LLVM::FPExtOp::create(b, loc, v8f32, loadChunk(oRow, col));
      Value dO = LLVM::FPExtOp::create(b, loc, v8f32, loadChunk(dORow, col));
      for (int64_t e = 0; e < 8; ++e) {
        Value x = LLVM::ExtractElementOp::create(b, loc, o, c32(e));
        Value y = LLVM::ExtractElementOp::create(b, loc, dO, c32(e));
        sum = math::FmaOp::create(b, loc, x, y, sum);
      }
    }
    sum = quadReduce(sum, false);
    Value write = arith::AndIOp::create(
        b, loc, valid, cmp(arith::CmpIPredicate::eq, tq, c32(0)));
    auto store = scf::IfOp::create(b, loc, write, /*withElse=*/false);
    OpBuilder::InsertionGuard storeGuard(b);
    b.setInsertionPointToStart(store.thenBlock());
    LLVM::StoreOp::create(b, loc, sum,
                          gep(a.dsum, add(dsumBase, ext64(row)), f32));
  }
  LLVM::ReturnOp::create(b, loc, ValueRange{});
}

//===----------------------------------------------------------------------===//
// dkdv
//===----------------------------------------------------------------------===//

void GradKernelBuilder::buildDkDv(StringRef name) {
  OpBuilder::InsertionGuard guard(b);
  Args a = beginKernel(name);
  const int64_t blockQ = dkdvBlockQ;
  ThreadPlace place = getThreadPlace();
  Value tid = place.tid, kTile = place.tile, headKV = place.head;
  Value batch = place.batch, warp = place.warp, lane = place.lane;
  Value g = place.g, tq = place.tq;
  Value k0 = mul(kTile, c32(kBlockRows));
  Value warpRow0 = mul(warp, c32(16));
  Value kBase = headBase(a.k, batch, headKV, a.ks[0], a.ks[1]);
  Value vBase = headBase(a.v, batch, headKV, a.vs[0], a.vs[1]);

  // Shared memory: K, V (for the whole kernel), then Q, dO, lse * log2(e)
  // and Dsum of the current Q tile.
  Value smem = LLVM::AddressOfOp::create(b, loc, sptr, "fa_smem");
  int64_t kvBytes = kBlockRows * d * 2, qBytes = blockQ * d * 2;
  Value sK = smem, sV = smemAt(smem, c32(kvBytes)),
        sQ = smemAt(smem, c32(2 * kvBytes)),
        sDO = smemAt(smem, c32(2 * kvBytes + qBytes)),
        sLse = smemAt(smem, c32(2 * kvBytes + 2 * qBytes)),
        sDsum = smemAt(smem, c32(2 * kvBytes + 2 * qBytes + blockQ * 4));

  copyTile(kBlockRows, sK, kBase, k0, a.nk, a.ks[2], tid);
  copyTile(kBlockRows, sV, vBase, k0, a.nk, a.vs[2], tid);
  NVVM::CpAsyncCommitGroupOp::create(b, loc);
  NVVM::CpAsyncWaitGroupOp::create(b, loc, 0);
  NVVM::Barrier0Op::create(b, loc);
  // K and V fragments (the A operands of S^T and dP^T): in registers for
  // D <= 64, re-read from shared memory otherwise (registers hold dK, dV).
  int64_t kSteps = d / 16;
  bool holdKV = d <= 64;
  SmallVector<SmallVector<Value, 4>> kFrag, vFrag;
  if (holdKV)
    for (int64_t kk = 0; kk < kSteps; ++kk) {
      kFrag.push_back(loadA(sK, warpRow0, kk, lane));
      vFrag.push_back(loadA(sV, warpRow0, kk, lane));
    }
  auto kA = [&](int64_t kk) {
    return holdKV ? kFrag[kk] : loadA(sK, warpRow0, kk, lane);
  };
  auto vA = [&](int64_t kk) {
    return holdKV ? vFrag[kk] : loadA(sV, warpRow0, kk, lane);
  };

  // The queries that can see a key of [k0, kEnd): i >= j - diag (causal
  // bottom-right; j top-left), j - diag - right <= i <= j - diag + left.
  Value diag = sub(a.nk, a.nq);
  Value kEnd = mins(add(k0, c32(kBlockRows)), a.nk);
  Value qBegin = c32(0), qEnd = a.nq;
  if (masks.causal)
    qBegin = maxs(qBegin, masks.causal.getValue() == CausalKind::TopLeft
                              ? k0
                              : sub(k0, diag));
  if (masks.window) {
    qBegin = maxs(qBegin, sub(sub(k0, diag), windowSize(masks.window[1])));
    qEnd = mins(qEnd, add(sub(kEnd, diag), windowSize(masks.window[0])));
  }

  int64_t nTilesS = blockQ / 8, nTilesO = d / 8, qSteps = blockQ / 16;
  SmallVector<Value> inits(2 * nTilesO * 4, cf(0.0));
  Value scoreScale = softcap ? cf(1.0) : a.scaleLog2;
  Value keyRow = add(add(k0, warpRow0), g);
  auto unpack = [&](ValueRange flat) {
    Tiles dK(nTilesO), dV(nTilesO);
    for (int64_t nt = 0; nt < nTilesO; ++nt)
      for (int64_t e = 0; e < 4; ++e) {
        dK[nt].push_back(flat[nt * 4 + e]);
        dV[nt].push_back(flat[(nTilesO + nt) * 4 + e]);
      }
    return std::make_pair(dK, dV);
  };

  // Over the query heads of the group, then the visible Q tiles.
  auto heads = scf::ForOp::create(
      b, loc, arith::ConstantIndexOp::create(b, loc, 0), toIndex(a.group),
      arith::ConstantIndexOp::create(b, loc, 1), inits,
      [&](OpBuilder &, Location, Value jIndex, ValueRange headIters) {
        Value j = arith::IndexCastOp::create(b, loc, i32, jIndex);
        Value head = add(mul(headKV, a.group), j);
        Value qBase = headBase(a.q, batch, head, a.qs[0], a.qs[1]);
        Value dOBase = headBase(a.dO, batch, head, a.dOs[0], a.dOs[1]);
        Value lseRow =
            add(mul(ext64(batch), a.lses[0]), mul(ext64(head), a.lses[1]));
        Value dsumRow =
            add(mul(ext64(batch), a.dsums[0]), mul(ext64(head), a.dsums[1]));
        auto tiles = scf::ForOp::create(
            b, loc, toIndex(qBegin), toIndex(qEnd),
            arith::ConstantIndexOp::create(b, loc, blockQ), headIters,
            [&](OpBuilder &, Location, Value q0Index, ValueRange iters) {
              Value q0 = arith::IndexCastOp::create(b, loc, i32, q0Index);
              auto [dK, dV] = unpack(iters);
              // Everyone is done with the previous Q tile; fetch the next.
              NVVM::Barrier0Op::create(b, loc);
              copyTile(blockQ, sQ, qBase, q0, a.nq, a.qs[2], tid);
              NVVM::CpAsyncCommitGroupOp::create(b, loc);
              copyTile(blockQ, sDO, dOBase, q0, a.nq, a.dOs[2], tid);
              NVVM::CpAsyncCommitGroupOp::create(b, loc);
              {
                // lse * log2(e), +inf past Nq and for empty rows (P = 0
                // there), and Dsum (0 past Nq), by the first blockQ threads.
                Value first = cmp(arith::CmpIPredicate::slt, tid, c32(blockQ));
                auto load = scf::IfOp::create(b, loc, first, false);
                OpBuilder::InsertionGuard loadGuard(b);
                b.setInsertionPointToStart(load.thenBlock());
                Value row = add(q0, tid);
                Value valid = cmp(arith::CmpIPredicate::slt, row, a.nq);
                Value src = ext64(sel(valid, row, c32(0)));
                Value lse = LLVM::LoadOp::create(
                    b, loc, f32, gep(a.lse, add(lseRow, src), f32));
                Value dsum = LLVM::LoadOp::create(
                    b, loc, f32, gep(a.dsum, add(dsumRow, src), f32));
                double inf = std::numeric_limits<double>::infinity();
                Value empty = arith::CmpFOp::create(
                    b, loc, arith::CmpFPredicate::OEQ, lse, cf(-inf));
                Value lseLog2 =
                    sel(valid, sel(empty, cf(inf), fmul(lse, cf(M_LOG2E))),
                        cf(inf));
                LLVM::StoreOp::create(b, loc, lseLog2,
                                      smemAt(sLse, shl(tid, 2)));
                LLVM::StoreOp::create(b, loc, sel(valid, dsum, cf(0.0)),
                                      smemAt(sDsum, shl(tid, 2)));
              }
              NVVM::CpAsyncWaitGroupOp::create(b, loc, 1);
              NVVM::Barrier0Op::create(b, loc);

              // S^T = K Q^T: rows are this warp's keys, columns queries.
              Tiles p = zeroTiles(nTilesS);
              mmaABt(p, kA, kSteps, sQ, lane);
              Tiles capDeriv = applySoftcap(p);
              if (masks.causal || masks.window) {
                Value need = tileNeedsMask(masks, q0, blockQ, k0, kBlockRows,
                                           /*nk=*/Value(), diag);
                maskScores(p, need, [&](int64_t nt, int64_t e) {
                  Value key = add(keyRow, c32(8 * (e / 2)));
                  Value query =
                      add(q0, add(c32(nt * 8), add(shl(tq, 1), c32(e & 1))));
                  return keepKey(masks, query, key, a.nk, diag,
                                 /*checkBound=*/false);
                });
              }
              // P^T = exp2(S^T * c - lse * log2(e)), lse per column.
              for (int64_t nt = 0; nt < nTilesS; ++nt) {
                auto lseLog2 = loadPair(sLse, add(c32(nt * 8), shl(tq, 1)));
                for (int64_t e = 0; e < 4; ++e) {
                  Value negL = arith::NegFOp::create(b, loc, lseLog2[e & 1]);
                  p[nt][e] = exp2(
                      math::FmaOp::create(b, loc, p[nt][e], scoreScale, negL));
                }
              }
              SmallVector<SmallVector<Value, 4>> pA;
              for (int64_t s = 0; s < qSteps; ++s)
                pA.push_back(accToA(p, s));
              if (softcap)
                for (int64_t nt = 0; nt < nTilesS; ++nt)
                  for (int64_t e = 0; e < 4; ++e)
                    p[nt][e] = fmul(p[nt][e], capDeriv[nt][e]);

              NVVM::CpAsyncWaitGroupOp::create(b, loc, 0);
              NVVM::Barrier0Op::create(b, loc);
              // dV += P^T dO.
              mmaAB(dV, [&](int64_t s) { return pA[s]; }, qSteps, sDO, lane);
              // dP^T = V dO^T, dS^T = P^T (dP^T - Dsum), Dsum per column.
              Tiles ds = zeroTiles(nTilesS);
              mmaABt(ds, vA, kSteps, sDO, lane);
              for (int64_t nt = 0; nt < nTilesS; ++nt) {
                auto dsum = loadPair(sDsum, add(c32(nt * 8), shl(tq, 1)));
                for (int64_t e = 0; e < 4; ++e)
                  ds[nt][e] = fmul(p[nt][e], fsub(ds[nt][e], dsum[e & 1]));
              }
              // dK += dS^T Q.
              mmaAB(
                  dK, [&](int64_t s) { return accToA(ds, s); }, qSteps, sQ,
                  lane);
              SmallVector<Value> yielded;
              for (auto *acc : {&dK, &dV})
                for (auto &t : *acc)
                  yielded.append(t.begin(), t.end());
              scf::YieldOp::create(b, loc, yielded);
            });
        scf::YieldOp::create(b, loc, tiles.getResults());
      });

  // dK = scale * sum dS^T Q (softcap's factor is in dS), dV as is.
  auto [dK, dV] = unpack(heads.getResults());
  Value dkBase = headBase(a.dk, batch, headKV, a.dks[0], a.dks[1]);
  Value dvBase = headBase(a.dv, batch, headKV, a.dvs[0], a.dvs[1]);
  storeRows(dK, dkBase, a.dks[2], keyRow, a.nk, tq, a.scale);
  storeRows(dV, dvBase, a.dvs[2], keyRow, a.nk, tq, Value());
  LLVM::ReturnOp::create(b, loc, ValueRange{});
}

//===----------------------------------------------------------------------===//
// dq
//===----------------------------------------------------------------------===//

void GradKernelBuilder::buildDq(StringRef name) {
  OpBuilder::InsertionGuard guard(b);
  Args a = beginKernel(name);
  const int64_t blockQ = kBlockRows;
  ThreadPlace place = getThreadPlace();
  Value tid = place.tid, qTile = place.tile, head = place.head;
  Value batch = place.batch, warp = place.warp, lane = place.lane;
  Value g = place.g, tq = place.tq;
  Value q0 = mul(qTile, c32(blockQ));
  Value headKV = divu(head, a.group);
  Value warpRow0 = mul(warp, c32(16));
  Value qBase = headBase(a.q, batch, head, a.qs[0], a.qs[1]);
  Value dOBase = headBase(a.dO, batch, head, a.dOs[0], a.dOs[1]);
  Value kBase = headBase(a.k, batch, headKV, a.ks[0], a.ks[1]);
  Value vBase = headBase(a.v, batch, headKV, a.vs[0], a.vs[1]);

  // Shared memory: Q, dO (for the whole kernel), then one K and one V tile.
  Value smem = LLVM::AddressOfOp::create(b, loc, sptr, "fa_smem");
  int64_t qBytes = blockQ * d * 2, kvBytes = kBlockKV * d * 2;
  Value sQ = smem, sDO = smemAt(smem, c32(qBytes)),
        sK = smemAt(smem, c32(2 * qBytes)),
        sV = smemAt(smem, c32(2 * qBytes + kvBytes));
  copyTile(blockQ, sQ, qBase, q0, a.nq, a.qs[2], tid);
  copyTile(blockQ, sDO, dOBase, q0, a.nq, a.dOs[2], tid);
  NVVM::CpAsyncCommitGroupOp::create(b, loc);

  // lse * log2(e) (+inf past Nq and for empty rows) and Dsum of the rows
  // g and g + 8 of this warp's m-tile.
  Value row = add(add(q0, warpRow0), g);
  Value lseLog2[2], dsum[2];
  Value lseRow = add(mul(ext64(batch), a.lses[0]), mul(ext64(head), a.lses[1]));
  Value dsumRow =
      add(mul(ext64(batch), a.dsums[0]), mul(ext64(head), a.dsums[1]));
  double inf = std::numeric_limits<double>::infinity();
  for (int64_t r = 0; r < 2; ++r) {
    Value rowR = add(row, c32(8 * r));
    Value valid = cmp(arith::CmpIPredicate::slt, rowR, a.nq);
    Value src = ext64(sel(valid, rowR, c32(0)));
    Value lse =
        LLVM::LoadOp::create(b, loc, f32, gep(a.lse, add(lseRow, src), f32));
    Value ds =
        LLVM::LoadOp::create(b, loc, f32, gep(a.dsum, add(dsumRow, src), f32));
    Value empty =
        arith::CmpFOp::create(b, loc, arith::CmpFPredicate::OEQ, lse, cf(-inf));
    lseLog2[r] =
        sel(valid, sel(empty, cf(inf), fmul(lse, cf(M_LOG2E))), cf(inf));
    dsum[r] = sel(valid, ds, cf(0.0));
  }

  NVVM::CpAsyncWaitGroupOp::create(b, loc, 0);
  NVVM::Barrier0Op::create(b, loc);
  // Q and dO fragments: in registers for D <= 64, re-read otherwise.
  int64_t kSteps = d / 16;
  bool holdQ = d <= 64;
  SmallVector<SmallVector<Value, 4>> qFrag, dOFrag;
  if (holdQ)
    for (int64_t kk = 0; kk < kSteps; ++kk) {
      qFrag.push_back(loadA(sQ, warpRow0, kk, lane));
      dOFrag.push_back(loadA(sDO, warpRow0, kk, lane));
    }
  auto qA = [&](int64_t kk) {
    return holdQ ? qFrag[kk] : loadA(sQ, warpRow0, kk, lane);
  };
  auto dOA = [&](int64_t kk) {
    return holdQ ? dOFrag[kk] : loadA(sDO, warpRow0, kk, lane);
  };

  KeyRange visible = visibleKeys(masks, q0, blockQ, a.nq, a.nk, kBlockKV);
  int64_t nTilesS = kBlockKV / 8, nTilesO = d / 8, kvSteps = kBlockKV / 16;
  SmallVector<Value> inits(nTilesO * 4, cf(0.0));
  Value scoreScale = softcap ? cf(1.0) : a.scaleLog2;

  auto loop = scf::ForOp::create(
      b, loc, toIndex(visible.begin), toIndex(visible.end),
      arith::ConstantIndexOp::create(b, loc, kBlockKV), inits,
      [&](OpBuilder &, Location, Value ivIndex, ValueRange iters) {
        Value kv0 = arith::IndexCastOp::create(b, loc, i32, ivIndex);
        Tiles dQ(nTilesO);
        for (int64_t nt = 0; nt < nTilesO; ++nt)
          dQ[nt].assign(iters.begin() + nt * 4, iters.begin() + nt * 4 + 4);
        // Everyone is done with the previous tiles; fetch K and V.
        NVVM::Barrier0Op::create(b, loc);
        copyTile(kBlockKV, sK, kBase, kv0, a.nk, a.ks[2], tid);
        NVVM::CpAsyncCommitGroupOp::create(b, loc);
        copyTile(kBlockKV, sV, vBase, kv0, a.nk, a.vs[2], tid);
        NVVM::CpAsyncCommitGroupOp::create(b, loc);
        NVVM::CpAsyncWaitGroupOp::create(b, loc, 1);
        NVVM::Barrier0Op::create(b, loc);

        // S = Q K^T, P = exp2(S * c - lse * log2(e)).
        Tiles p = zeroTiles(nTilesS);
        mmaABt(p, qA, kSteps, sK, lane);
        Tiles capDeriv = applySoftcap(p);
        Value need =
            tileNeedsMask(masks, q0, blockQ, kv0, kBlockKV, a.nk, visible.diag);
        maskScores(p, need, [&](int64_t nt, int64_t e) {
          Value key = add(kv0, add(c32(nt * 8), add(shl(tq, 1), c32(e & 1))));
          return keepKey(masks, add(row, c32(8 * (e / 2))), key, a.nk,
                         visible.diag, /*checkBound=*/true);
        });
        for (int64_t nt = 0; nt < nTilesS; ++nt)
          for (int64_t e = 0; e < 4; ++e) {
            Value negL = arith::NegFOp::create(b, loc, lseLog2[e / 2]);
            p[nt][e] =
                exp2(math::FmaOp::create(b, loc, p[nt][e], scoreScale, negL));
            if (softcap)
              p[nt][e] = fmul(p[nt][e], capDeriv[nt][e]);
          }

        // dP = dO V^T, dS = P (dP - Dsum), dQ += dS K.
        NVVM::CpAsyncWaitGroupOp::create(b, loc, 0);
        NVVM::Barrier0Op::create(b, loc);
        Tiles ds = zeroTiles(nTilesS);
        mmaABt(ds, dOA, kSteps, sV, lane);
        for (int64_t nt = 0; nt < nTilesS; ++nt)
          for (int64_t e = 0; e < 4; ++e)
            ds[nt][e] = fmul(p[nt][e], fsub(ds[nt][e], dsum[e / 2]));
        mmaAB(dQ, [&](int64_t s) { return accToA(ds, s); }, kvSteps, sK, lane);
        SmallVector<Value> yielded;
        for (auto &t : dQ)
          yielded.append(t.begin(), t.end());
        scf::YieldOp::create(b, loc, yielded);
      });

  Tiles dQ(nTilesO);
  for (int64_t nt = 0; nt < nTilesO; ++nt)
    dQ[nt].assign(loop.getResults().begin() + nt * 4,
                  loop.getResults().begin() + nt * 4 + 4);
  Value dqBase = headBase(a.dq, batch, head, a.dqs[0], a.dqs[1]);
  storeRows(dQ, dqBase, a.dqs[2], row, a.nq, tq, a.scale);
  LLVM::ReturnOp::create(b, loc, ValueRange{});
}

//===----------------------------------------------------------------------===//
// Entry point
//===----------------------------------------------------------------------===//

SmallVector<KernelContract, 3>
mlir::fa::nvvm::buildAttentionGradKernels(OpBuilder &b, AttentionGradOp op,
                                          StringRef suffix) {
  GradKernelBuilder kernels(b, op.getLoc(), op);
  std::string rows = std::to_string(kBlockRows);
  SmallVector<KernelContract, 3> contracts = {
      {("fa_backward_dsum_" + suffix).str(),
       "ceil(Nq/" + std::to_string(kDsumRows) + "),Hq,B", kThreads, 0},
      {("fa_backward_dkdv_" + suffix).str(), "ceil(Nk/" + rows + "),Hkv,B",
       kThreads, kernels.dkdvSharedBytes()},
      {("fa_backward_dq_" + suffix).str(), "ceil(Nq/" + rows + "),Hq,B",
       kThreads, kernels.dqSharedBytes()}};
  kernels.buildDsum(contracts[0].name);
  kernels.buildDkDv(contracts[1].name);
  kernels.buildDq(contracts[2].name);
  return contracts;
}
