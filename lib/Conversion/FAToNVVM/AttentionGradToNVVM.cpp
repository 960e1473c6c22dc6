//===- AttentionGradToNVVM.cpp - fa.attention_grad to NVVM kernels --------===//
//
// The backward of FlashAttention-2 as three kernels accumulating in f32.
// dQ comes one of two ways: by default a dq kernel computes S and dP once
// more, and every output element is written by one thread, once
// (deterministic); with bwd-atomic-dq (FA2's way) dkdv adds dS K into an
// f32 accumulator with atomics and dq_convert scales it into dQ.
//
//  - dsum: Dsum[b, h, i] = sum_e dO[b, h, i, e] * O[b, h, i, e] into an f32
//    workspace [B, Hq, Nq]; one CTA per 64 query rows, a quad of lanes per
//    row. With atomic dQ it also zeroes the rows' accumulator.
//  - dkdv: one CTA per (K/V tile of 64 rows, or 128 in 8 warps, kv head,
//    batch), each warp owning 16 key rows whose dK and dV accumulate in
//    registers over the query heads of the GQA group and the Q tiles that
//    can see the K/V tile.
//    Scores are computed transposed, S^T = K Q^T, so that P^T (rows: keys)
//    comes out of the mma in the A-fragment layout of dV += P^T dO and
//    likewise dS^T for dK += dS^T Q: neither goes through shared memory.
//    lse is per column of S^T and read from shared memory. With atomic dQ,
//    dS^T also goes to shared memory, and after a barrier the warps split
//    dQ = dS K (the tile's keys) by query rows and columns and add it into
//    the accumulator; with prefetch that barrier is the next Q tile's (dS^T
//    has a buffer per stage). On sm_90 atomic dQ runs 8 warps over 128
//    keys: half the reductions into the accumulator. On the plain path at
//    D = 64 and 128 (either dQ mode) dkdv runs 8 warps whose products are
//    wgmmas, a warpgroup per 64 keys, with operands read from shared memory
//    by the tensor cores (bwd-wgmma). At
//    D = 256 the registers hold 128 columns of dK and dV: two passes over
//    the Q tiles, S^T and dP^T computed in both.
//  - dq: one CTA per (Q tile of 64 rows, query head, batch), like the
//    forward: S = Q K^T, P = exp2(S * scale * log2(e) - lse * log2(e)),
//    dP = dO V^T, dS = P (dP - Dsum), dQ += dS K over the visible K/V tiles.
//  - dq_convert (atomic dQ): dQ = scale * accumulator.
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

#include "fa/Transforms/Builders.h"
#include "mlir/Dialect/LLVMIR/NVVMDialect.h"
#include "mlir/Dialect/Math/IR/Math.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "llvm/Support/SaveAndRestore.h"

#include <cmath>
#include <limits>
#include <memory>
#include <optional>

using namespace mlir;
using namespace mlir::fa;
using namespace mlir::fa::nvvm;

namespace {

using ::fa::target::Feature;

/// Whether the kernels' target has `feature`.
bool has(const GradKernelOptions &options, Feature feature) {
  return options.target && options.target->has(feature);
}

/// Key rows of a dkdv CTA and query rows of a dq CTA: 4 warps x 16.
constexpr int64_t kBlockRows = 16 * kWarps;
/// Query rows of a dsum CTA: 32 rows (a quad each) twice.
constexpr int64_t kDsumRows = 64;

class GradKernelBuilder : public KernelBuilder {
public:
  GradKernelBuilder(OpBuilder &b, Location loc, AttentionGradOp op,
                    GradKernelOptions options)
      : KernelBuilder(b, loc, op.getElementType(),
                      op.getQuery().getType().getDimSize(3)),
        op(op), masks{op.getCausalAttr(), op.getWindowAttr()},
        scored(hasScoreTerms(op) || op.getDropoutSeed()),
        prefetch(options.prefetch), atomicDQ(options.atomicDQ),
        bulkDQ(atomicDQ && has(options, Feature::BulkCopy)) {
    dv = op.getValue().getType().getDimSize(3);
    // The tiles below were tuned on the H100 (sm_90a, where wgmma exists);
    // other chips get sm_80's.
    const bool hopper = has(options, Feature::Wgmma);
    if (auto attr = op.getSoftcapAttr())
      softcap = attr.getValueAsDouble();
    if (Value bias = op.getBias())
      biasEt = cast<ShapedType>(bias.getType()).getElementType();
    if (auto p = op.getDropoutPAttr())
      dropoutP = p.getValueAsDouble();
    // Q rows per dkdv iteration. dK and dV take 2 D registers per thread,
    // S^T and dP^T blockQ / 2 each, and the K/V A fragments are re-read
    // from shared memory per Q tile above D = 64, so larger Q tiles cut the
    // shared-memory traffic per mma (ptxas -v, sm_80 and sm_90a):
    //  - D <= 64: 64; the scored path's per-score terms (bias loads, slope,
    //    region values, score_mod's derivative) spill with 64: 32.
    //  - D = 96: 32.
    //  - D = 128: 64 on sm_90 (192 accumulator registers; +4-7% over 32,
    //    in one A/B run, performance.md), 32 on sm_80 and with atomic dQ in
    //    4 warps, where that spills (8 warps split dQ's columns finer); 16
    //    with softcap's 1 - tanh^2 per score or on the scored path.
    //  - D > 128 computes dK and dV in two passes of up to 128 columns (S^T and
    //    dP^T once per pass), each a loop over the Q tiles without
    //    prefetch with the registers of D = 128 plus addresses into
    //    512-byte rows: 16.
    // GradKernelOptions::wgmma, where it applies (atomic dQ's pipelining
    // needs the prefetch): the plain path at D = 64 and 128 in 8 warps.
    bool wgmmaShape = options.wgmma && hopper && prefetch &&
                      (d == 64 || d == 128) && dv == d && !scored && !softcap;
    // dkdv's warps: by default 8 (128 keys per CTA) with atomic dQ on sm_90,
    // where the tile's Q copies and dQ columns split evenly over them, and
    // where it multiplies with wgmma.
    dkdvWarps = options.dkdvWarps
                    ? options.dkdvWarps
                    : (hopper && (atomicDQ || wgmmaShape) ? 8 : 4);
    // At D = 64 wgmma takes Q tiles of 128 rows (S^T and dP^T of 64
    // registers in one block, dK and dV of 32; 1.13-1.25x over 64 rows,
    // performance.md).
    bool wgmmaPath = wgmmaShape && dkdvWarps == 8;
    if (d <= 64)
      dkdvBlockQ = scored ? 32 : (wgmmaPath && d == 64 ? 128 : 64);
    else if (d > 128 || (d == 128 && (softcap || scored)))
      dkdvBlockQ = 16;
    else
      dkdvBlockQ =
          d == 128 && hopper && (!atomicDQ || dkdvWarps == 8) ? 64 : 32;
    if (dkdvWarps == 8 && !canUseEightDkDvWarps())
      dkdvWarps = 4;
    dkdvCols = std::min<int64_t>(d, 128);
    if (d > 128)
      prefetch = false;
    dkdvWgmma = wgmmaPath && dkdvWarps == 8;
    // dq's dQ takes D / 2 registers: at D = 256, S and dP of 64 keys spill
    // (32 on the scored path). Above D = 64 its Q and dO fragments are
    // re-read per K/V tile, so at D = 128 on sm_90 the plain path takes 128
    // keys (192 accumulator registers; +0-3.5% over 64 in one A/B run,
    // performance.md).
    dqBlockKV =
        d <= 128 ? (d == 128 && hopper && !scored && !softcap ? 128 : kBlockKV)
                 : (scored ? 16 : 32);
  }

  void buildDsum(StringRef name);
  void buildDkDv(StringRef name);
  void buildDq(StringRef name);
  void buildDqConvert(StringRef name);
  void buildDBias(StringRef name);

  /// Q rows per iteration of the dkdv kernel.
  int64_t getDkDvBlockQ() const { return dkdvBlockQ; }
  /// Whether the dkdv kernel multiplies with wgmma.
  bool usesWgmma() const { return dkdvWgmma; }
  /// Atomic dQ: whether each warp's columns of dQ are whole ldmatrix pairs
  /// (16); not at D = 80.
  bool atomicDQFits() const { return dkdvDQCols() % 16 == 0; }
  /// Warps of a dkdv CTA and its K/V rows (16 per warp).
  int64_t getDkDvWarps() const { return dkdvWarps; }
  int64_t dkdvRows() const { return 16 * dkdvWarps; }
  /// With dkdvWarps = 8: whether they fit, i.e. D <= 128 (one pass), the
  /// Q tile's 16-byte chunks split evenly over the CTA, and with atomic dQ
  /// each warp's columns of dQ are whole ldmatrix pairs (16).
  bool canUseEightDkDvWarps() const {
    assert(dkdvWarps == 8 && "asked of the 8-warp layout");
    return d <= 128 && (dkdvBlockQ * d / 8) % (32 * dkdvWarps) == 0 &&
           (!atomicDQ || dkdvDQCols() % 16 == 0);
  }
  /// K and V tiles, then a stage per Q tile in flight (two with
  /// `prefetch`): its Q and dO tiles, lse * log2(e) and Dsum of its rows;
  /// then, with atomic dQ, dS^T ([key rows][blockQ]; one per stage when
  /// pipelinedDQ) and, reduced in bulk,
  /// each warp's part of the tile's dQ ([16][dkdvDQCols() + 8] f32).
  int64_t dkdvSharedBytes() const {
    return dkdvDQOffset() + (bulkDQ ? dkdvWarps * dkdvDQWarpBytes() : 0);
  }
  /// Atomic dQ: the columns of each warp's part of dQ = dS K (the warps
  /// split the tile's m-tiles and then its columns).
  int64_t dkdvDQCols() const { return d * (dkdvBlockQ / 16) / dkdvWarps; }
  /// A warp's f32 rows of dQ for the bulk reduction: 8 floats of padding
  /// per row keep the accumulator-layout stores of a half-warp on distinct
  /// banks, and rows 16-byte aligned.
  int64_t dkdvDQWarpBytes() const { return 16 * (dkdvDQCols() + 8) * 4; }
  int64_t dkdvDQOffset() const {
    return dkdvDSOffset() +
           (atomicDQ ? (pipelinedDQ() ? 2 : 1) * dkdvDSBytes() : 0);
  }
  /// Atomic dQ: one dS^T tile, [key rows][blockQ] of the element type.
  int64_t dkdvDSBytes() const { return dkdvRows() * dkdvBlockQ * 2; }
  /// Atomic dQ with prefetch: each Q tile's dQ = dS K is computed in the
  /// next tile's iteration, after the barrier that tile has anyway, from
  /// dS^T in the stage's own buffer: one CTA barrier per Q tile, not two.
  bool pipelinedDQ() const { return atomicDQ && prefetch; }
  int64_t dkdvDSOffset() const {
    return 2 * dkdvRows() * d * 2 + (prefetch ? 2 : 1) * dkdvStageBytes();
  }
  int64_t dkdvStageBytes() const {
    int64_t bytes = 2 * dkdvBlockQ * d * 2 + 2 * dkdvBlockQ * 4;
    // wgmma's tiles start at multiples of 1024 bytes.
    return dkdvWgmma ? llvm::alignTo(bytes, 1024) : bytes;
  }
  /// Q and dO tiles, then one K and one V tile.
  int64_t dqSharedBytes() const {
    return (2 * kBlockRows + 2 * dqBlockKV) * d * 2;
  }
  /// K/V rows per dbias step: 32 for D > 64, where a 64-column tile's
  /// accumulator, S and dP spill, and 16 for D = 256.
  int64_t dbiasBlockKV() const { return d <= 64 ? kBlockKV : kBlockKV / 2; }
  /// Q and dO tiles, a K and a V tile, then [warps][K/V rows] f32 for
  /// cross-warp sums.
  int64_t dbiasSharedBytes() const {
    return (2 * kBlockRows + 2 * dbiasBlockKV()) * d * 2 +
           kWarps * dbiasBlockKV() * 4;
  }
  /// dBias's grid: (tiles of Nq or 1, Hq or 1, B or 1), 1 where the bias
  /// broadcasts (a CTA then loops over the broadcast members).
  ::fa::runtime::GridRule dbiasGrid() {
    using ::fa::runtime::GridAxis;
    auto type = cast<ShapedType>(op.getBias().getType());
    auto bcast = [&](unsigned i) { return type.getDimSize(i) == 1; };
    return {bcast(2) ? GridAxis::one() : GridAxis::tilesNq(kBlockRows),
            bcast(1) ? GridAxis::one() : GridAxis::hq(),
            bcast(0) ? GridAxis::one() : GridAxis::batch()};
  }
  /// The parameters the kernels share: q, k, v, o, dO, lse, dq, dk, dv,
  /// dsum; strides (b, h, n) of q, k, v, o, dO, dq, dk, dv and (b, h) of lse
  /// and dsum; Nq, Nk, Hq / Hkv, Hq, Hkv, B (i32); scale * log2(e), scale
  /// (f32). The scored path adds the bias and its strides (b, h, i, j; 0
  /// where it broadcasts), the ALiBi slopes and their batch stride (0 for
  /// [Hq]), dBias and its strides; dropout the i64 seed; atomic dQ the f32
  /// accumulator; then each capture's pointer and strides.
  std::vector<::fa::runtime::KernelParam> abiParams();

private:
  /// The arguments the three kernels share (one ABI, so the launcher packs
  /// them once).
  struct Args {
    Value q, k, v, o, dO, lse, dq, dk, dv, dsum;
    Value qs[3], ks[3], vs[3], os[3], dOs[3], dqs[3], dks[3], dvs[3];
    Value lses[2], dsums[2];
    Value nq, nk, group, scaleLog2, scale;
    /// B, Hq, Hkv (i32): the grid's fold, and dBias's loops.
    Value batches, headsQ, headsKV;
    /// The scored path's: bias and its strides (b, h, i, j; 0 where it
    /// broadcasts), ALiBi slopes and their batch stride (0 for [Hq]), dBias
    /// and its strides. Null/0 where the op lacks them.
    Value bias, biasStrides[4], slopes, slopesStride, dbias, dbiasStrides[4];
    /// With dropout: the Philox seed (i64).
    Value seed;
    /// With atomic dQ: the f32 dQ accumulator, row (b, h, i) at (Dsum's
    /// offset of (b, h, i)) * D.
    Value dqAcc;
  };
  /// Creates kernel `name` with the shared parameters (abiParams), `grid`
  /// and `sharedBytes` and moves the insertion point into it.
  Args beginKernel(StringRef name, ::fa::runtime::GridRule grid,
                   int64_t sharedBytes);

  /// Where a thread of the row-wise kernels (dsum, dq_convert) is: a quad
  /// of lanes per query row, 32 rows per pass over the CTA's kDsumRows; the
  /// (b, h) offset of its rows in Dsum's layout.
  struct QuadRows {
    Value tid, tile, head, batch, tq, statsBase;
    /// The query row of this thread's quad in pass `pass`.
    Value row(GradKernelBuilder &kb, int64_t pass) const;
  };
  QuadRows getQuadRows(const Args &a);

  /// Applies the softcap to the scores (buildSoftcap, into the log2 domain)
  /// and returns its derivative factor 1 - tanh^2 per score; empty without
  /// a softcap.
  Tiles applySoftcap(Tiles &s);
  /// s = keep(nt, e) ? s : -inf, inside a branch on `needMask` (uniform
  /// across the CTA, so the branch is), or on every tile when it is null.
  void maskScores(Tiles &s, Value needMask,
                  function_ref<Value(int64_t nt, int64_t e)> keep);

  /// The scored path's values of one (b, h): the f32 ALiBi slope (or null),
  /// b and h as index (the regions' first arguments), Nk - Nq (i32 and
  /// index).
  struct ScoreTerms {
    Value slope, idxB, idxH, diag, idxDiag;
  };
  /// The scored path's terms of (batch, head), its slope loaded here.
  ScoreTerms scoreTerms(const Args &a, Value batch, Value head);
  /// One element's score as buildScore defines it (the host's and the
  /// forward's definition), built once as a detached block for
  /// inlineRegionValues to inline per element: arguments (dot, bias if any,
  /// slope if any, Nk - Nq, b, h, i, j, captures...), positions as index;
  /// yields the score and, where it is not 1, its derivative factor: with
  /// `withSoftcap` d score / d (scale * dot) (the scale is applied once per
  /// output), else d score / d bias (dBias). No masks: keepScored's.
  std::unique_ptr<Region> buildScoreFunction(bool withSoftcap);
  /// Query and key (i32) of element (nt, e) of a score tile.
  using Place = function_ref<std::pair<Value, Value>(int64_t nt, int64_t e)>;
  /// place(nt, e) - place(0, 0): constants, for the score's position terms
  /// (PositionConversions).
  using Steps =
      function_ref<std::pair<int64_t, int64_t>(int64_t nt, int64_t e)>;
  /// The scored path: the dot products `s` become natural-domain scores
  /// (buildScoreFunction; the bias of element (nt, e) at query i and key j
  /// read from `biasAddress(nt, e, i, j)`). Returns each score's
  /// derivative factor, softcap's 1 - tanh^2 (`withSoftcap`) times
  /// score_mod_grad, or nothing when that is 1.
  Tiles scoreScored(
      Tiles &s, const ScoreTerms &terms, Place place, Steps steps,
      function_ref<Value(int64_t nt, int64_t e, Value i, Value j)> biasAddress,
      bool withSoftcap);
  /// The scored path from dot products to probabilities: the scores
  /// (scoreScored), masked by `keep` (under a uniform branch on `needMask`,
  /// or on every tile when it is null), P = exp2(s * log2(e) - lse), with
  /// lseLog2(nt) the lse * log2(e) of the 4 elements of n-tile nt. Returns P
  /// times the derivative factor, and sets `pA` (unless null) to P's first
  /// `aSteps` A fragments. The derivative factors never outlive the branch.
  Tiles scoredProbabilities(
      Tiles &s, const ScoreTerms &terms, Place place, Steps steps,
      function_ref<Value(int64_t nt, int64_t e, Value i, Value j)> biasAddress,
      Value needMask, function_ref<Value(int64_t nt, int64_t e)> keep,
      function_ref<std::array<Value, 4>(int64_t nt)> lseLog2, int64_t aSteps,
      SmallVector<SmallVector<Value, 4>> *pA, const Tiles &z = {});
  /// Dropout's keep/scale factor (0 or 1 / (1 - p)) of each element of a
  /// score tile of (batch, head), Philox on (key, query, head, batch) as in
  /// the forward; empty without dropout.
  Tiles dropoutScales(const Args &a, int64_t n, Value batch, Value head,
                      Place place);
  /// dS = P (dP Z - Dsum) with Z the dropout scales (none: 1), in place of
  /// dp; dsum(nt, e) is the element's Dsum.
  void scoreGrads(Tiles &dp, const Tiles &p, const Tiles &z,
                  function_ref<Value(int64_t nt, int64_t e)> dsum);
  /// p * factor, but 0 where p is 0: score_mod_grad may be infinite or NaN
  /// where a score is masked, and the derivative there is 0.
  Value timesDerivative(Value p, Value factor);
  /// The gradient stored as `et` (a bias's element type) at `ptr`.
  void storeAs(Type et, Value value, Value ptr);
  /// Stores accumulator tiles (times `factor` unless null) as rows of `et`:
  /// row `row + 8 * r` gets the elements e with e / 2 == r, when < `limit`.
  void storeRows(const Tiles &acc, Value base, Value rowStride, Value row,
                 Value limit, Value tq, Value factor);
  /// With wgmma: makes this thread's writes to shared memory (st.shared,
  /// completed cp.async) visible to the tensor cores' reads (the async
  /// proxy) after the next barrier.
  void asyncProxyFence() {
    if (wgmmaTiles)
      ptx("fence.proxy.async.shared::cta;");
  }
  /// The f32 pair at element `index` (even) of an f32 array in shared memory.
  std::array<Value, 2> loadPair(Value array, Value index);
  /// The element-type vector of 8 at element `offset` of global `base`.
  Value loadChunk(Value base, Value offset);
  /// Where a quad of lanes covers a row's columns 8 at a time, 32 per step
  /// (Dsum, dQ's conversion): for step `j`, whether the lane's chunk at
  /// `col` lies inside the row's `width` columns, or null where every
  /// lane's does.
  Value columnsInside(Value col, int64_t j, int64_t width) {
    return (j + 1) * 32 > width
               ? cmp(arith::CmpIPredicate::slt, col, c32(width))
               : Value();
  }

  /// V's and O's head dim (at most D: V's and dO's tiles have D columns,
  /// zero past Dv).
  int64_t dv;
  AttentionGradOp op;
  Masks masks;
  /// ALiBi, bias, score_mod, mask_mod or dropout: the scored path (its own
  /// ABI tail).
  bool scored;
  /// The dropout probability, where the op has dropout.
  std::optional<double> dropoutP;
  /// dkdv loads the next Q tile (Q, dO, lse, Dsum) into a second stage of
  /// shared memory while it computes the current one.
  bool prefetch;
  /// dkdv adds dS K into the f32 accumulator with atomics (else: dq).
  bool atomicDQ;
  /// ... as one bulk reduction per Q tile from shared memory (sm_90).
  bool bulkDQ;
  std::optional<double> softcap;
  /// The bias's element type, or null.
  Type biasEt;
  /// Q rows per dkdv iteration.
  int64_t dkdvBlockQ;
  /// Warps of a dkdv CTA (4 or 8).
  int64_t dkdvWarps;
  /// dkdv multiplies with wgmma (sm_90a; see the constructor).
  bool dkdvWgmma = false;
  /// Columns of dK and dV per dkdv pass over the Q tiles (D, or 128).
  int64_t dkdvCols;
  /// K/V rows per dq iteration.
  int64_t dqBlockKV;
};

} // namespace

std::vector<::fa::runtime::KernelParam> GradKernelBuilder::abiParams() {
  using namespace ::fa::runtime;
  std::vector<KernelParam> p;
  const AbiTensor tensors[] = {AbiTensor::Q,   AbiTensor::K,  AbiTensor::V,
                               AbiTensor::O,   AbiTensor::DO, AbiTensor::Lse,
                               AbiTensor::DQ,  AbiTensor::DK, AbiTensor::DV,
                               AbiTensor::Dsum};
  for (AbiTensor t : tensors)
    p.push_back(KernelParam::pointer(t));
  for (AbiTensor t : {AbiTensor::Q, AbiTensor::K, AbiTensor::V, AbiTensor::O,
                      AbiTensor::DO, AbiTensor::DQ, AbiTensor::DK,
                      AbiTensor::DV, AbiTensor::Lse, AbiTensor::Dsum})
    for (uint32_t dim = 0; dim < (getRank(t) == 3 ? 2u : 3u); ++dim)
      p.push_back(KernelParam::stride(t, dim));
  for (AbiSize size : {AbiSize::Nq, AbiSize::Nk, AbiSize::Group, AbiSize::Hq,
                       AbiSize::Hkv, AbiSize::B})
    p.push_back(KernelParam::ofSize(size));
  p.push_back(KernelParam::ofScalar(AbiScalar::ScaleLog2, MachineType::F32));
  p.push_back(KernelParam::ofScalar(AbiScalar::Scale, MachineType::F32));
  if (scored) {
    p.push_back(KernelParam::pointer(AbiTensor::Bias));
    for (uint32_t dim = 0; dim < 4; ++dim)
      p.push_back(KernelParam::stride(AbiTensor::Bias, dim));
    p.push_back(KernelParam::pointer(AbiTensor::Slopes));
    p.push_back(KernelParam::stride(AbiTensor::Slopes, 0));
    p.push_back(KernelParam::pointer(AbiTensor::DBias));
    for (uint32_t dim = 0; dim < 4; ++dim)
      p.push_back(KernelParam::stride(AbiTensor::DBias, dim));
    if (dropoutP)
      p.push_back(KernelParam::ofScalar(AbiScalar::Seed, MachineType::I64));
  }
  if (atomicDQ)
    p.push_back(KernelParam::dqAccum(uint32_t(d)));
  appendCaptureParams(p, op.getCaptures().getTypes());
  return p;
}

GradKernelBuilder::Args
GradKernelBuilder::beginKernel(StringRef name, ::fa::runtime::GridRule grid,
                               int64_t sharedBytes) {
  using namespace ::fa::runtime;
  KernelAbi abi;
  abi.name = name.str();
  abi.grid = grid;
  abi.threads = uint32_t(threads);
  abi.sharedBytes = uint32_t(sharedBytes);
  abi.params = abiParams();
  // exp2 as one ex2.approx.ftz (createKernel); but at D = 256, where ptxas
  // then keeps a value of dkdv's first column pass in local memory.
  Block *entry = &createKernel(name, abi, /*flushDenormals=*/d <= 128).front();
  b.setInsertionPointToStart(entry);
  AbiArgs args(abi, entry);
  Args a;
  Value *pointers[] = {&a.q,   &a.k,  &a.v,  &a.o,  &a.dO,
                       &a.lse, &a.dq, &a.dk, &a.dv, &a.dsum};
  const AbiTensor tensors[] = {AbiTensor::Q,   AbiTensor::K,  AbiTensor::V,
                               AbiTensor::O,   AbiTensor::DO, AbiTensor::Lse,
                               AbiTensor::DQ,  AbiTensor::DK, AbiTensor::DV,
                               AbiTensor::Dsum};
  for (unsigned i = 0; i < 10; ++i)
    *pointers[i] = args.pointer(tensors[i]);
  Value *strides[] = {a.qs,  a.ks,  a.vs,  a.os,   a.dOs,
                      a.dqs, a.dks, a.dvs, a.lses, a.dsums};
  const AbiTensor strided[] = {AbiTensor::Q,   AbiTensor::K,  AbiTensor::V,
                               AbiTensor::O,   AbiTensor::DO, AbiTensor::DQ,
                               AbiTensor::DK,  AbiTensor::DV, AbiTensor::Lse,
                               AbiTensor::Dsum};
  for (unsigned t = 0; t < 10; ++t)
    for (unsigned i = 0; i < (t < 8 ? 3u : 2u); ++i)
      strides[t][i] = args.stride(strided[t], i);
  a.nq = args.size(AbiSize::Nq);
  a.nk = args.size(AbiSize::Nk);
  a.group = args.size(AbiSize::Group);
  a.headsQ = args.size(AbiSize::Hq);
  a.headsKV = args.size(AbiSize::Hkv);
  a.batches = args.size(AbiSize::B);
  a.scaleLog2 = args.scalar(AbiScalar::ScaleLog2);
  a.scale = args.scalar(AbiScalar::Scale);
  if (scored) {
    a.bias = args.pointer(AbiTensor::Bias);
    for (unsigned i = 0; i < 4; ++i) {
      a.biasStrides[i] = args.stride(AbiTensor::Bias, i);
      a.dbiasStrides[i] = args.stride(AbiTensor::DBias, i);
    }
    a.slopes = args.pointer(AbiTensor::Slopes);
    a.slopesStride = args.stride(AbiTensor::Slopes, 0);
    a.dbias = args.pointer(AbiTensor::DBias);
    if (dropoutP)
      a.seed =
          args.get(KernelParam::ofScalar(AbiScalar::Seed, MachineType::I64));
  }
  if (atomicDQ)
    a.dqAcc = args.get(KernelParam::dqAccum(uint32_t(d)));
  bindCaptures(args, op.getCaptures().getTypes(), a.nq, a.nk);
  return a;
}

KernelBuilder::Tiles GradKernelBuilder::applySoftcap(Tiles &s) {
  Tiles deriv;
  if (!softcap)
    return deriv;
  deriv.resize(s.size());
  auto makeTanh = [&](Value x) { return accurateTanh(x); };
  for (auto [t, dt] : llvm::zip(s, deriv))
    for (Value &x : t) {
      // buildScore's softcap with log2(e) folded into the multiply by the
      // cap; d/dx of the score is scale * (1 - tanh^2), from the same tanh.
      Value capDerivative;
      x = buildSoftcap(b, loc, *softcap, op.getScaleOrDefault(), x,
                       &capDerivative, M_LOG2E, makeTanh);
      dt.push_back(capDerivative);
    }
  return deriv;
}

void GradKernelBuilder::maskScores(
    Tiles &s, Value needMask, function_ref<Value(int64_t nt, int64_t e)> keep) {
  if (!needMask) {
    Value negInf = cf(-std::numeric_limits<double>::infinity());
    for (int64_t nt = 0; nt < int64_t(s.size()); ++nt)
      for (int64_t e = 0; e < 4; ++e)
        s[nt][e] = sel(keep(nt, e), s[nt][e], negInf);
    return;
  }
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
    OpBuilder::InsertionGuard guard(b);
    enterIf(inRange);
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

GradKernelBuilder::ScoreTerms
GradKernelBuilder::scoreTerms(const Args &a, Value batch, Value head) {
  ScoreTerms terms;
  if (op.getAlibiSlopes()) {
    Value at = add(mul(ext64(batch), a.slopesStride), ext64(head));
    terms.slope = LLVM::LoadOp::create(b, loc, f32, gep(a.slopes, at, f32));
  }
  terms.idxB = toIndex(batch);
  terms.idxH = toIndex(head);
  terms.diag = sub(a.nk, a.nq);
  terms.idxDiag = toIndex(terms.diag);
  return terms;
}

std::unique_ptr<Region>
GradKernelBuilder::buildScoreFunction(bool withSoftcap) {
  auto region = std::make_unique<Region>();
  Block *block = new Block;
  region->push_back(block);
  Type index = b.getIndexType();
  Value dot = block->addArgument(f32, loc);
  Value bias, slope;
  if (biasEt)
    bias = block->addArgument(biasEt, loc);
  if (op.getAlibiSlopes())
    slope = block->addArgument(f32, loc);
  Value diag = block->addArgument(index, loc);
  // (b, h, i, j) last: inlineRegion clamps the final two (query, key) into
  // range where there are captures. Ragged rows and keys then compute with
  // the last one's ALiBi distance as well; their scores are masked or not
  // stored (as in the forward's fagpu.map).
  ScorePositions pos;
  pos.batch = block->addArgument(index, loc);
  pos.head = block->addArgument(index, loc);
  pos.query = block->addArgument(index, loc);
  pos.key = block->addArgument(index, loc);
  ScoreVariant variant = ScoreVariant::get(op, op.getScaleOrDefault());
  // The masks are keepScored's, on the tiles that need them.
  variant.causal = {};
  variant.window = {};
  variant.maskMod = nullptr;
  variant.captures.clear();
  for (Type type : op.getCaptures().getTypes())
    variant.captures.push_back(block->addArgument(type, loc));

  OpBuilder::InsertionGuard guard(b);
  b.setInsertionPointToStart(block);
  pos.queryAligned = arith::AddIOp::create(b, loc, pos.query, diag);
  Region *scoreModGrad =
      op.getScoreModGrad().empty() ? nullptr : &op.getScoreModGrad();
  bool derivative = scoreModGrad || (withSoftcap && softcap);
  Value ds;
  Value s = buildScore(b, loc, variant, dot, bias, slope, pos,
                       derivative ? &ds : nullptr, scoreModGrad,
                       /*wrtBias=*/!withSoftcap, /*unscaled=*/true);
  SmallVector<Value, 2> yielded = {s};
  if (ds)
    yielded.push_back(ds);
  mlir::fa::YieldOp::create(b, loc, yielded);
  return region;
}

KernelBuilder::Tiles GradKernelBuilder::scoreScored(
    Tiles &s, const ScoreTerms &terms, Place place, Steps steps,
    function_ref<Value(int64_t nt, int64_t e, Value i, Value j)> biasAddress,
    bool withSoftcap) {
  std::unique_ptr<Region> score = buildScoreFunction(withSoftcap);
  Block &body = score->front();
  bool hasDerivative = body.getTerminator()->getNumOperands() == 2;
  Tiles deriv(hasDerivative ? s.size() : 0);
  // Position terms (ALiBi's distance, a relative position) converted once
  // at element (0, 0), at the true positions: where the captures clamp
  // them, the scores that differ are masked.
  unsigned at = 1 + (biasEt ? 1 : 0) + (terms.slope ? 1 : 0);
  Value diagArg = body.getArgument(at), bArg = body.getArgument(at + 1),
        hArg = body.getArgument(at + 2), iArg = body.getArgument(at + 3),
        jArg = body.getArgument(at + 4);
  auto [i0, j0] = place(0, 0);
  IRMapping first;
  first.map(diagArg, terms.idxDiag);
  first.map(bArg, terms.idxB);
  first.map(hArg, terms.idxH);
  first.map(iArg, toIndex(i0));
  first.map(jArg, toIndex(j0));
  PositionConversions converted = convertPositionTerms(
      body, PositionTerms(body, iArg, jArg, {diagArg, bArg, hArg}), first);
  for (int64_t nt = 0; nt < int64_t(s.size()); ++nt)
    for (int64_t e = 0; e < 4; ++e) {
      auto [i, j] = place(nt, e);
      auto [di, dj] = steps(nt, e);
      SmallVector<Value, 8> args = {s[nt][e]};
      if (biasEt)
        args.push_back(
            LLVM::LoadOp::create(b, loc, biasEt, biasAddress(nt, e, i, j)));
      if (terms.slope)
        args.push_back(terms.slope);
      args.append(
          {terms.idxDiag, terms.idxB, terms.idxH, toIndex(i), toIndex(j)});
      SmallVector<Value, 2> values =
          inlineRegionValues(*score, args, &converted, di, dj);
      s[nt][e] = values[0];
      if (hasDerivative)
        deriv[nt].push_back(values[1]);
    }
  return deriv;
}

KernelBuilder::Tiles GradKernelBuilder::scoredProbabilities(
    Tiles &s, const ScoreTerms &terms, Place place, Steps steps,
    function_ref<Value(int64_t nt, int64_t e, Value i, Value j)> biasAddress,
    Value needMask, function_ref<Value(int64_t nt, int64_t e)> keep,
    function_ref<std::array<Value, 4>(int64_t nt)> lseLog2, int64_t aSteps,
    SmallVector<SmallVector<Value, 4>> *pA, const Tiles &z) {
  int64_t n = s.size();
  // A's registers (i32) then P times the derivative (f32), flat.
  auto compute = [&](bool masked) {
    Tiles p = s;
    Tiles deriv =
        scoreScored(p, terms, place, steps, biasAddress, /*withSoftcap=*/true);
    Value negInf = cf(-std::numeric_limits<double>::infinity());
    for (int64_t nt = 0; nt < n; ++nt) {
      std::array<Value, 4> lse = lseLog2(nt);
      for (int64_t e = 0; e < 4; ++e) {
        if (masked)
          p[nt][e] = sel(keep(nt, e), p[nt][e], negInf);
        Value negL = arith::NegFOp::create(b, loc, lse[e]);
        p[nt][e] =
            exp2(math::FmaOp::create(b, loc, p[nt][e], cf(M_LOG2E), negL));
      }
    }
    SmallVector<Value> flat;
    if (pA) {
      // dV takes the dropped probabilities, P where Z keeps it (unscaled:
      // dV is scaled by 1 / (1 - p) when stored, as the forward's O).
      Tiles pz = p;
      for (int64_t nt = 0; nt < int64_t(z.size()); ++nt)
        for (int64_t e = 0; e < 4; ++e)
          pz[nt][e] =
              sel(arith::CmpFOp::create(b, loc, arith::CmpFPredicate::OEQ,
                                        z[nt][e], cf(0.0)),
                  cf(0.0), p[nt][e]);
      for (int64_t step = 0; step < aSteps; ++step)
        llvm::append_range(flat, accToA(pz, step));
    }
    for (int64_t nt = 0; nt < n; ++nt)
      for (int64_t e = 0; e < 4; ++e)
        flat.push_back(deriv.empty() ? p[nt][e]
                                     : timesDerivative(p[nt][e], deriv[nt][e]));
    return flat;
  };
  SmallVector<Value> flat;
  if (!needMask) {
    flat = compute(/*masked=*/bool(keep));
  } else {
    SmallVector<Type> types(pA ? aSteps * 4 : 0, i32);
    types.append(n * 4, f32);
    auto branch = scf::IfOp::create(b, loc, types, needMask, /*withElse=*/true);
    OpBuilder::InsertionGuard guard(b);
    b.setInsertionPointToStart(branch.thenBlock());
    scf::YieldOp::create(b, loc, compute(/*masked=*/true));
    b.setInsertionPointToStart(branch.elseBlock());
    scf::YieldOp::create(b, loc, compute(/*masked=*/false));
    flat.assign(branch.getResults().begin(), branch.getResults().end());
  }
  int64_t at = 0;
  if (pA) {
    pA->clear();
    for (int64_t step = 0; step < aSteps; ++step, at += 4)
      pA->push_back({flat[at], flat[at + 1], flat[at + 2], flat[at + 3]});
  }
  Tiles p(n);
  for (int64_t nt = 0; nt < n; ++nt)
    for (int64_t e = 0; e < 4; ++e)
      p[nt].push_back(flat[at++]);
  return p;
}

KernelBuilder::Tiles GradKernelBuilder::dropoutScales(const Args &a, int64_t n,
                                                      Value batch, Value head,
                                                      Place place) {
  Tiles z;
  if (!dropoutP)
    return z;
  z.resize(n);
  for (int64_t nt = 0; nt < n; ++nt)
    for (int64_t e = 0; e < 4; ++e) {
      auto [query, key] = place(nt, e);
      z[nt].push_back(buildPhiloxDropout(b, loc, a.seed, *dropoutP,
                                         {key, query, head, batch}));
    }
  return z;
}

void GradKernelBuilder::scoreGrads(
    Tiles &dp, const Tiles &p, const Tiles &z,
    function_ref<Value(int64_t nt, int64_t e)> dsum) {
  for (int64_t nt = 0; nt < int64_t(dp.size()); ++nt)
    for (int64_t e = 0; e < 4; ++e) {
      Value dpz = z.empty() ? dp[nt][e] : fmul(dp[nt][e], z[nt][e]);
      dp[nt][e] = fmul(p[nt][e], fsub(dpz, dsum(nt, e)));
    }
}

Value GradKernelBuilder::timesDerivative(Value p, Value factor) {
  Value product = fmul(p, factor);
  if (op.getScoreModGrad().empty())
    return product;
  Value zero =
      arith::CmpFOp::create(b, loc, arith::CmpFPredicate::OEQ, p, cf(0.0));
  return sel(zero, p, product);
}

void GradKernelBuilder::storeAs(Type type, Value value, Value ptr) {
  if (!type.isF32())
    value = arith::TruncFOp::create(b, loc, type, value);
  LLVM::StoreOp::create(b, loc, value, ptr);
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

GradKernelBuilder::QuadRows GradKernelBuilder::getQuadRows(const Args &a) {
  ThreadPlace place = getThreadPlace(a.headsQ, a.batches);
  QuadRows q;
  q.tid = place.tid;
  q.tile = place.tile;
  q.head = place.head;
  q.batch = place.batch;
  // lane & 3 = tid & 3: the quad position of the thread's row.
  q.tq = place.tq;
  q.statsBase =
      add(mul(ext64(q.batch), a.dsums[0]), mul(ext64(q.head), a.dsums[1]));
  return q;
}

Value GradKernelBuilder::QuadRows::row(GradKernelBuilder &kb,
                                       int64_t pass) const {
  return kb.add(
      kb.add(kb.mul(tile, kb.c32(kDsumRows)), kb.c32(pass * kThreads / 4)),
      kb.shr(tid, 2));
}

void GradKernelBuilder::buildDsum(StringRef name) {
  using ::fa::runtime::GridAxis;
  OpBuilder::InsertionGuard guard(b);
  Args a = beginKernel(
      name, {GridAxis::tilesNq(kDsumRows), GridAxis::hq(), GridAxis::batch()},
      0);
  QuadRows quads = getQuadRows(a);
  Value tq = quads.tq, dsumBase = quads.statsBase;
  Value oBase = headBase(a.o, quads.batch, quads.head, a.os[0], a.os[1]);
  Value dOBase = headBase(a.dO, quads.batch, quads.head, a.dOs[0], a.dOs[1]);
  auto v8f32 = VectorType::get({8}, f32);
  // A quad of lanes per row, 16-byte chunks tq, tq + 4, ... of it each.
  for (int64_t pass = 0; pass < kDsumRows / (kThreads / 4); ++pass) {
    Value row = quads.row(*this, pass);
    Value valid = cmp(arith::CmpIPredicate::slt, row, a.nq);
    Value srcRow = sel(valid, row, c32(0));
    Value oRow = gep(oBase, mul(ext64(srcRow), a.os[2]), et);
    Value dORow = gep(dOBase, mul(ext64(srcRow), a.dOs[2]), et);
    Value sum = cf(0.0);
    for (int64_t j = 0; j < llvm::divideCeil(dv, 32); ++j) {
      // Lanes past Dv (80: the last 32 columns are half there) read column
      // 0 and add nothing.
      Value col32 = add(shl(tq, 3), c32(j * 32));
      Value inside = columnsInside(col32, j, dv);
      if (inside)
        col32 = sel(inside, col32, c32(0));
      Value col = ext64(col32);
      Value o = LLVM::FPExtOp::create(b, loc, v8f32, loadChunk(oRow, col));
      Value dO = LLVM::FPExtOp::create(b, loc, v8f32, loadChunk(dORow, col));
      if (inside)
        dO = sel(inside, dO, LLVM::ZeroOp::create(b, loc, v8f32));
      for (int64_t e = 0; e < 8; ++e) {
        Value x = LLVM::ExtractElementOp::create(b, loc, o, c32(e));
        Value y = LLVM::ExtractElementOp::create(b, loc, dO, c32(e));
        sum = math::FmaOp::create(b, loc, x, y, sum);
      }
    }
    sum = quadReduce(sum, false);
    if (atomicDQ) {
      // dkdv adds into the row's accumulator, which starts at 0: the quad's
      // lanes zero 8 columns per 32 each, like the loads above.
      OpBuilder::InsertionGuard zeroGuard(b);
      enterIf(valid);
      Value accRow = gep(a.dqAcc, mul(add(dsumBase, ext64(row)), c64(d)), f32);
      Value zeros = LLVM::ZeroOp::create(b, loc, VectorType::get({4}, f32));
      for (int64_t j = 0; j < llvm::divideCeil(d, 32); ++j) {
        OpBuilder::InsertionGuard colGuard(b);
        if (Value inside = columnsInside(add(shl(tq, 3), c32(j * 32)), j, d))
          enterIf(inside);
        for (int64_t half = 0; half < 2; ++half) {
          Value col = ext64(add(shl(tq, 3), c32(j * 32 + half * 4)));
          LLVM::StoreOp::create(b, loc, zeros, gep(accRow, col, f32),
                                /*alignment=*/16);
        }
      }
    }
    Value write = arith::AndIOp::create(
        b, loc, valid, cmp(arith::CmpIPredicate::eq, tq, c32(0)));
    OpBuilder::InsertionGuard storeGuard(b);
    enterIf(write);
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
  llvm::SaveAndRestore<int64_t> ctaThreads(threads, 32 * dkdvWarps);
  llvm::SaveAndRestore<bool> tileLayout(wgmmaTiles, dkdvWgmma);
  using ::fa::runtime::GridAxis;
  Args a = beginKernel(
      name, {GridAxis::tilesNk(dkdvRows()), GridAxis::hkv(), GridAxis::batch()},
      dkdvSharedBytes());
  const int64_t blockQ = dkdvBlockQ, kvRows = dkdvRows();
  ThreadPlace place = getThreadPlace(a.headsKV, a.batches);
  Value tid = place.tid, kTile = place.tile, headKV = place.head;
  Value batch = place.batch, warp = place.warp, lane = place.lane;
  Value g = place.g, tq = place.tq;
  Value k0 = mul(kTile, c32(kvRows));
  Value warpRow0 = mul(warp, c32(16));
  Value kBase = headBase(a.k, batch, headKV, a.ks[0], a.ks[1]);
  Value vBase = headBase(a.v, batch, headKV, a.vs[0], a.vs[1]);

  // Shared memory: K, V (for the whole kernel), then a stage per Q tile in
  // flight (two with prefetch): Q, dO, lse * log2(e) and Dsum of its rows.
  Value smem = LLVM::AddressOfOp::create(b, loc, sptr, "fa_smem");
  int64_t kvBytes = kvRows * d * 2, qBytes = blockQ * d * 2;
  struct Stage {
    Value q, dO, lse, dsum;
  };
  auto stageAt = [&](Value offset) {
    Stage st;
    st.q = smemAt(smem, offset);
    st.dO = smemAt(smem, add(offset, c32(qBytes)));
    st.lse = smemAt(smem, add(offset, c32(2 * qBytes)));
    st.dsum = smemAt(smem, add(offset, c32(2 * qBytes + blockQ * 4)));
    return st;
  };
  Value sK = smem, sV = smemAt(smem, c32(kvBytes)),
        sQ = smemAt(smem, c32(2 * kvBytes)),
        sDO = smemAt(smem, c32(2 * kvBytes + qBytes)),
        sLse = smemAt(smem, c32(2 * kvBytes + 2 * qBytes)),
        sDsum = smemAt(smem, c32(2 * kvBytes + 2 * qBytes + blockQ * 4));

  // lse * log2(e) of query row q0 + tid (+inf past Nq, where `live` is
  // false and for empty rows: P = 0 there) and its Dsum (0 past Nq).
  auto rowStats = [&](Value lseRow, Value dsumRow, Value q0,
                      Value live) -> std::array<Value, 2> {
    Value row = add(q0, tid);
    Value valid = cmp(arith::CmpIPredicate::slt, row, a.nq);
    if (live)
      valid = arith::AndIOp::create(b, loc, valid, live);
    Value src = ext64(sel(valid, row, c32(0)));
    Value lse =
        LLVM::LoadOp::create(b, loc, f32, gep(a.lse, add(lseRow, src), f32));
    Value dsum =
        LLVM::LoadOp::create(b, loc, f32, gep(a.dsum, add(dsumRow, src), f32));
    double inf = std::numeric_limits<double>::infinity();
    Value empty =
        arith::CmpFOp::create(b, loc, arith::CmpFPredicate::OEQ, lse, cf(-inf));
    Value lseLog2 =
        sel(valid, sel(empty, cf(inf), fmul(lse, cf(M_LOG2E))), cf(inf));
    return {lseLog2, sel(valid, dsum, cf(0.0))};
  };
  // Stores them to a stage, by the first blockQ threads; `stats` null: loads
  // them there first (row stats of q0 of (lseRow, dsumRow)).
  auto storeStats = [&](const Stage &st, std::array<Value, 2> stats,
                        Value lseRow, Value dsumRow, Value q0) {
    Value first = cmp(arith::CmpIPredicate::slt, tid, c32(blockQ));
    OpBuilder::InsertionGuard storeGuard(b);
    enterIf(first);
    if (!stats[0])
      stats = rowStats(lseRow, dsumRow, q0, Value());
    LLVM::StoreOp::create(b, loc, stats[0], smemAt(st.lse, shl(tid, 2)));
    LLVM::StoreOp::create(b, loc, stats[1], smemAt(st.dsum, shl(tid, 2)));
  };
  // The per-head parts of the addresses of Q, dO, lse and Dsum; the query
  // head and the batch. From the block's kv head and batch read again
  // (used inside the loops: not kept live across them).
  struct HeadRows {
    Value qBase, dOBase, lseRow, dsumRow, head, batch;
  };
  auto headRows = [&](Value j) {
    auto [headKV, batch] = headAndBatchAgain();
    Value head = add(mul(headKV, a.group), j);
    HeadRows r;
    r.head = head;
    r.batch = batch;
    r.qBase = headBase(a.q, batch, head, a.qs[0], a.qs[1]);
    r.dOBase = headBase(a.dO, batch, head, a.dOs[0], a.dOs[1]);
    r.lseRow = add(mul(ext64(batch), a.lses[0]), mul(ext64(head), a.lses[1]));
    r.dsumRow =
        add(mul(ext64(batch), a.dsums[0]), mul(ext64(head), a.dsums[1]));
    return r;
  };

  // The queries that can see a key of [k0, kEnd), and diag for the masks.
  Value diag, qBegin, qEnd;
  auto visibleQueries = [&] {
    diag = sub(a.nk, a.nq);
    Value kEnd = mins(add(k0, c32(kvRows)), a.nk);
    RowRange queries =
        MaskBuilder(b, loc, masks, i32).visibleQueries(k0, kEnd, a.nq, diag);
    qBegin = queries.begin;
    qEnd = queries.end;
  };

  copyTile(kvRows, sK, kBase, k0, a.nk, a.ks[2], tid);
  copyTile(kvRows, sV, vBase, k0, a.nk, a.vs[2], tid,
           /*threadAddresses=*/false, /*cols=*/dv);
  if (prefetch) {
    visibleQueries();
    // The first Q tile (head 0, qBegin) to stage 0 with K and V. In bounds
    // even where the loops are empty: rows past Nq are zero-filled.
    HeadRows first = headRows(c32(0));
    copyTile(blockQ, sQ, first.qBase, qBegin, a.nq, a.qs[2], tid);
    copyTile(blockQ, sDO, first.dOBase, qBegin, a.nq, a.dOs[2], tid,
             /*threadAddresses=*/false, /*cols=*/dv);
    NVVM::CpAsyncCommitGroupOp::create(b, loc);
    storeStats(stageAt(c32(2 * kvBytes)), {}, first.lseRow, first.dsumRow,
               qBegin);
  } else {
    NVVM::CpAsyncCommitGroupOp::create(b, loc);
  }
  NVVM::CpAsyncWaitGroupOp::create(b, loc, 0);
  asyncProxyFence();
  NVVM::Barrier0Op::create(b, loc);
  // K and V fragments (the A operands of S^T and dP^T): in registers for
  // D <= 64, re-read from shared memory otherwise (registers hold dK, dV);
  // wgmma reads them from shared memory.
  int64_t kSteps = d / 16;
  AOperands kv =
      loadAOperands({sK, sV}, warpRow0, kSteps, lane, d <= 64 && !dkdvWgmma);
  // wgmma's descriptors: K and V rows of this warp's warpgroup (K-major A
  // operands), and the same tiles and the stages' Q and dO as K-major or
  // transposed (MN-major) operands; `kStep(kk)` is the byte offset of
  // k-step kk in a K-major operand's rows, `rowStep` that of 16 rows.
  int64_t groupBytes = 8 * d * 2, rowStep = 2 * groupBytes;
  auto kStep = [](int64_t kk) { return kk / 4 * 1024 + kk % 4 * 32; };
  auto kMajor = [&](Value tile, Value offset) {
    return wgmmaDesc(tile, offset, 16, groupBytes);
  };
  auto mnMajor = [&](Value tile, Value offset) {
    return wgmmaDesc(tile, offset, 1024, groupBytes);
  };
  Value descK, descV;
  if (dkdvWgmma) {
    Value groupRows = mul(shr(warp, 2), c32(64 * d * 2));
    descK = kMajor(sK, groupRows);
    descV = kMajor(sV, groupRows);
  }
  auto kA = [&](int64_t kk) { return kv.get(0, kk); };
  auto vA = [&](int64_t kk) { return kv.get(1, kk); };
  if (!prefetch)
    visibleQueries();

  // nTilesO: the current pass's column tiles of dK and dV (set per pass).
  int64_t nTilesS = blockQ / 8, nTilesO = dkdvCols / 8, qSteps = blockQ / 16;
  Value scoreScale = softcap ? cf(1.0) : a.scaleLog2;
  Value keyRow = add(add(k0, warpRow0), g);
  // The scored path: this thread's two keys' part of a bias address, keys
  // clamped to Nk - 1 (rows of a ragged tile read in bounds; never stored).
  Value nqLast, keyOff[2];
  Region *maskMod = op.getMaskMod().empty() ? nullptr : &op.getMaskMod();
  if (biasEt) {
    nqLast = sub(a.nq, c32(1));
    for (int64_t r = 0; r < 2; ++r)
      keyOff[r] = mul(ext64(mins(add(keyRow, c32(8 * r)), sub(a.nk, c32(1)))),
                      a.biasStrides[3]);
  }
  // Atomic dQ: dS^T goes to shared memory as [key rows][blockQ], then
  // dQ = dS K over the CTA's 64 keys, split across the warps as (m-tile of
  // 16 queries, group of D / (4 / m-tiles) columns), is added into the f32
  // accumulator.
  int64_t mTiles = blockQ / 16, dqCols = dkdvDQCols();
  // dS^T's buffer: the stage's own when pipelined (stage 0 or 1).
  auto dsBuffer = [&](Value stage) {
    Value offset = c32(dkdvDSOffset());
    if (stage)
      offset = add(offset, mul(stage, c32(dkdvDSBytes())));
    return smemAt(smem, offset);
  };
  // The addresses and predicates below are recomputed from an opaque lane
  // id in each tile: hoisted out of the loops they would hold registers
  // the accumulators need (D = 128 with captures spills).
  auto storeTransposedDS = [&](const Tiles &ds, Value sDS) {
    Value zero = cf(0.0);
    Value lane32 = opaque(lane);
    Value row = add(mul(opaque(warp), c32(16)), shr(lane32, 2));
    Value col = shl(andi(lane32, 3), 1);
    for (int64_t nt = 0; nt < nTilesS; ++nt)
      for (int64_t r = 0; r < 2; ++r) {
        // Keys past Nk (a ragged last tile) have zero K rows but not zero
        // dS (P is not masked there, and may overflow): their dS must not
        // reach dQ as inf * 0.
        Value key = add(row, c32(8 * r));
        Value live = cmp(arith::CmpIPredicate::slt, add(k0, key), a.nk);
        Value at = swizzled(key, add(c32(nt * 8), col), blockQ);
        Value lo = sel(live, ds[nt][2 * r], zero);
        Value hi = sel(live, ds[nt][2 * r + 1], zero);
        LLVM::StoreOp::create(b, loc, pack(lo, hi), smemAt(sDS, at),
                              /*alignment=*/4);
      }
    // dQ's wgmma reads them after the next barrier.
    asyncProxyFence();
  };
  // Bulk reductions: each warp's rows of dQ ([16][dqCols + 8] f32), one
  // reduction per row issued by lane `row` of the warp.
  int64_t dqRowFloats = dqCols + 8;
  auto byRowLanes = [&](function_ref<void()> body) {
    OpBuilder::InsertionGuard guard(b);
    enterIf(cmp(arith::CmpIPredicate::ult, opaque(lane), c32(16)));
    body();
  };
  auto syncWarp = [&] { NVVM::SyncWarpOp::create(b, loc, c32(-1)); };
  // dQ of the Q tile at q0 (of the head at dsumRow) from its dS^T in sDS,
  // after a barrier unless the caller has one since every warp stored it.
  auto addDQ = [&](Value q0, Value dsumRow, Value sDS, bool barrier) {
    if (barrier)
      NVVM::Barrier0Op::create(b, loc);
    Value lane32 = opaque(lane), warp32 = opaque(warp);
    Value sDQ = smemAt(
        smem, add(c32(dkdvDQOffset()), mul(warp32, c32(dkdvDQWarpBytes()))));
    Value dqM0 = mul(remu(warp32, c32(mTiles)), c32(16));
    Value dqCol0 = mul(divu(warp32, c32(mTiles)), c32(dqCols));
    // ldmatrix.trans of the [keys][queries] tile gives dS's A fragments;
    // K's B fragments as in mmaAB. Rows 16 kk further are constant offsets
    // (the swizzle only sees a row's low 3 bits).
    Value dsA = swizzled(bRow(lane32), add(dqM0, bCol(lane32)), blockQ);
    SmallVector<Value> kB;
    for (int64_t pair = 0; pair < dqCols / 16; ++pair)
      kB.push_back(swizzled(aRow(lane32),
                            add(add(aCol(lane32), dqCol0), c32(pair * 16))));
    Value g32 = shr(lane32, 2), tq32 = andi(lane32, 3);
    // `body` on the accumulator row of `query`, when it is below Nq.
    auto inQueryRow = [&](Value query, function_ref<void(Value)> body) {
      OpBuilder::InsertionGuard guard(b);
      enterIf(cmp(arith::CmpIPredicate::slt, query, a.nq));
      body(gep(a.dqAcc, mul(add(dsumRow, ext64(query)), c64(d)), f32));
    };
    // In passes of `chunk` columns: the scored path at D > 64 has no
    // registers to spare for more.
    int64_t chunk = scored && d > 64 ? 16 : dqCols;
    for (int64_t c0 = 0; c0 < dqCols; c0 += chunk) {
      Tiles dQ = zeroTiles(chunk / 8);
      if (dkdvWgmma) {
        // The warpgroup's dqCols columns of all 64 queries: dS is dS^T
        // read transposed, K's columns from dqCol0 transposed.
        // The warpgroup's queries start at the 64-row block of its warps'.
        int64_t dsGroupBytes = 8 * blockQ * 2;
        Value dsDesc = wgmmaDesc(sDS, swizzled(c32(0), andi(dqM0, -64), blockQ),
                                 1024, dsGroupBytes);
        Value kDesc = mnMajor(sK, swizzled(c32(0), dqCol0));
        wgmmaFence();
        for (int64_t kk = 0; kk < kvRows / 16; ++kk)
          wgmma(dQ, {}, wgmmaDescAt(dsDesc, kk * 2 * dsGroupBytes),
                wgmmaDescAt(kDesc, kk * rowStep), /*transA=*/true,
                /*transB=*/true, /*accumulate=*/kk > 0);
        wgmmaCommitAndWait(0, {&dQ});
      }
      for (int64_t kk = 0; kk < (dkdvWgmma ? 0 : kvRows / 16); ++kk) {
        auto aFrag = ldmatrix4(smemAt(sDS, add(dsA, c32(kk * 16 * blockQ * 2))),
                               /*transpose=*/true);
        SmallVector<Value, 4> aOps(aFrag.begin(), aFrag.end());
        for (int64_t pair = 0; pair < chunk / 16; ++pair) {
          auto r = ldmatrix4(
              smemAt(sK, add(kB[c0 / 16 + pair], c32(kk * 16 * d * 2))),
              /*transpose=*/true);
          dQ[2 * pair] = mma(aOps, {r[0], r[1]}, dQ[2 * pair]);
          dQ[2 * pair + 1] = mma(aOps, {r[2], r[3]}, dQ[2 * pair + 1]);
        }
      }
      if (bulkDQ) {
        // The previous tile's reductions have read the warp's rows before
        // any lane writes them again.
        if (c0 == 0) {
          byRowLanes([&] { ptx("cp.async.bulk.wait_group.read 0;"); });
          syncWarp();
        }
        // Into the warp's rows.
        for (int64_t r = 0; r < 2; ++r) {
          Value row = add(g32, c32(8 * r));
          for (int64_t nt = 0; nt < chunk / 8; ++nt) {
            Value col = add(c32(c0 + nt * 8), shl(tq32, 1));
            Value pair =
                LLVM::UndefOp::create(b, loc, VectorType::get({2}, f32));
            pair = LLVM::InsertElementOp::create(b, loc, pair, dQ[nt][2 * r],
                                                 c32(0));
            pair = LLVM::InsertElementOp::create(b, loc, pair,
                                                 dQ[nt][2 * r + 1], c32(1));
            LLVM::StoreOp::create(
                b, loc, pair,
                smemAt(sDQ, shl(add(mul(row, c32(dqRowFloats)), col), 2)),
                /*alignment=*/8);
          }
        }
        continue;
      }
      for (int64_t r = 0; r < 2; ++r) {
        Value query = add(add(add(q0, dqM0), g32), c32(8 * r));
        inQueryRow(query, [&](Value accRow) {
          for (int64_t nt = 0; nt < chunk / 8; ++nt)
            for (int64_t c = 0; c < 2; ++c) {
              Value col =
                  add(dqCol0, add(c32(c0 + nt * 8), add(shl(tq32, 1), c32(c))));
              LLVM::AtomicRMWOp::create(
                  b, loc, LLVM::AtomicBinOp::fadd, gep(accRow, ext64(col), f32),
                  dQ[nt][2 * r + c], LLVM::AtomicOrdering::monotonic, "device");
            }
        });
      }
    }
    if (!bulkDQ)
      return;
    // Each row below Nq is added by the async proxy (which must see the
    // warp's stores above) into its accumulator row, from column dqCol0.
    ptx("fence.proxy.async.shared::cta;");
    syncWarp();
    byRowLanes([&] {
      Value query = add(add(q0, dqM0), lane32);
      inQueryRow(query, [&](Value accRow) {
        Value dst = gep(accRow, ext64(dqCol0), f32);
        Value src = smemAt(sDQ, mul(lane32, c32(dqRowFloats * 4)));
        ptx("cp.reduce.async.bulk.global.shared::cta.bulk_group.add.f32 "
            "[$0], [$1], $2;",
            "l,r,r",
            {LLVM::PtrToIntOp::create(b, loc, i64, dst),
             LLVM::PtrToIntOp::create(b, loc, i32, src), c32(dqCols * 4)});
      });
      ptx("cp.async.bulk.commit_group;");
    });
  };

  auto unpack = [&](ValueRange flat) {
    Tiles dK(nTilesO), dV(nTilesO);
    for (int64_t nt = 0; nt < nTilesO; ++nt)
      for (int64_t e = 0; e < 4; ++e) {
        dK[nt].push_back(flat[nt * 4 + e]);
        dV[nt].push_back(flat[(nTilesO + nt) * 4 + e]);
      }
    return std::make_pair(dK, dV);
  };

  // A pass per dkdvCols columns of dK and dV (one up to D = 128; 128 + 64
  // at D = 192, 128 + 128 at 256): over the query heads of the group, then
  // the visible Q tiles. Every pass computes S^T, P^T and dS^T; the first
  // adds dS K into dQ (atomic dQ).
  for (int64_t col0 = 0; col0 < d; col0 += dkdvCols) {
    nTilesO = std::min(dkdvCols, d - col0) / 8;
    bool withDQ = atomicDQ && col0 == 0;
    bool pipelined = withDQ && pipelinedDQ();
    const size_t numAcc = 2 * nTilesO * 4;
    SmallVector<Value> inits(numAcc, cf(0.0));
    // With prefetch, the stage (0 or 1) of the current Q tile.
    if (prefetch)
      inits.push_back(c32(0));
    // Pipelined dQ: the previous Q tile's q0 (-1: none) and query head.
    if (pipelined)
      inits.append({c32(-1), c32(0)});
    // dQ of the pending Q tile (pipelined), whose dS^T is in the buffer of
    // the stage other than `stage`.
    auto addPendingDQ = [&](Value pendingQ0, Value pendingJ, Value stage) {
      OpBuilder::InsertionGuard guard(b);
      enterIf(cmp(arith::CmpIPredicate::sge, pendingQ0, c32(0)));
      addDQ(pendingQ0, headRows(pendingJ).dsumRow, dsBuffer(sub(c32(1), stage)),
            /*barrier=*/false);
    };
    auto heads = scf::ForOp::create(
        b, loc, arith::ConstantIndexOp::create(b, loc, 0), toIndex(a.group),
        arith::ConstantIndexOp::create(b, loc, 1), inits,
        [&](OpBuilder &, Location, Value jIndex, ValueRange headIters) {
          Value j = arith::IndexCastOp::create(b, loc, i32, jIndex);
          HeadRows rows = headRows(j);
          Value head = rows.head, batch = rows.batch;
          Value qBase = rows.qBase, dOBase = rows.dOBase, lseRow = rows.lseRow,
                dsumRow = rows.dsumRow;
          ScoreTerms terms;
          Value biasHead;
          if (scored)
            terms = scoreTerms(a, batch, head);
          if (biasEt)
            biasHead = gep(a.bias,
                           add(mul(ext64(batch), a.biasStrides[0]),
                               mul(ext64(head), a.biasStrides[1])),
                           biasEt);
          auto tiles = scf::ForOp::create(
              b, loc, toIndex(qBegin), toIndex(qEnd),
              arith::ConstantIndexOp::create(b, loc, blockQ), headIters,
              [&](OpBuilder &, Location, Value q0Index, ValueRange iters) {
                Value q0 = arith::IndexCastOp::create(b, loc, i32, q0Index);
                auto [dK, dV] = unpack(iters);
                Value stage;
                std::array<Value, 2> nextStats;
                Stage next;
                if (prefetch) {
                  // This tile's stage has landed (its copies were issued a
                  // tile earlier) and everyone is done with the other stage
                  // (the previous tile's): the next tile goes there. The next
                  // tile in the loops' order: q0 + blockQ of this head, else
                  // qBegin of the next head; none after the last.
                  stage = iters[numAcc];
                  NVVM::CpAsyncWaitGroupOp::create(b, loc, 0);
                  asyncProxyFence();
                  NVVM::Barrier0Op::create(b, loc);
                  Value cur =
                      add(c32(2 * kvBytes), mul(stage, c32(dkdvStageBytes())));
                  Value other =
                      add(c32(2 * kvBytes),
                          mul(sub(c32(1), stage), c32(dkdvStageBytes())));
                  Stage st = stageAt(cur);
                  next = stageAt(other);
                  sQ = st.q, sDO = st.dO, sLse = st.lse, sDsum = st.dsum;
                  Value nextQ0 = add(q0, c32(blockQ));
                  Value inHead = cmp(arith::CmpIPredicate::slt, nextQ0, qEnd);
                  Value jNext = add(j, c32(1));
                  Value moreHeads =
                      cmp(arith::CmpIPredicate::slt, jNext, a.group);
                  Value hasNext =
                      arith::OrIOp::create(b, loc, inHead, moreHeads);
                  // Where there is none: this head's rows, stats +inf / 0.
                  nextQ0 = sel(inHead, nextQ0, qBegin);
                  HeadRows rows =
                      headRows(sel(inHead, j, sel(moreHeads, jNext, j)));
                  auto copy = scf::IfOp::create(b, loc, hasNext, false);
                  {
                    OpBuilder::InsertionGuard copyGuard(b);
                    b.setInsertionPointToStart(copy.thenBlock());
                    copyTile(blockQ, next.q, rows.qBase, nextQ0, a.nq, a.qs[2],
                             tid);
                    copyTile(blockQ, next.dO, rows.dOBase, nextQ0, a.nq,
                             a.dOs[2], tid,
                             /*threadAddresses=*/false, /*cols=*/dv);
                  }
                  NVVM::CpAsyncCommitGroupOp::create(b, loc);
                  // Loaded now, stored to shared memory after the math.
                  nextStats =
                      rowStats(rows.lseRow, rows.dsumRow, nextQ0, hasNext);
                  // The previous tile's dS^T is complete (the barrier).
                  if (pipelined)
                    addPendingDQ(iters[numAcc + 1], iters[numAcc + 2], stage);
                } else {
                  // Everyone is done with the previous Q tile; fetch the next.
                  NVVM::Barrier0Op::create(b, loc);
                  copyTile(blockQ, sQ, qBase, q0, a.nq, a.qs[2], tid);
                  NVVM::CpAsyncCommitGroupOp::create(b, loc);
                  copyTile(blockQ, sDO, dOBase, q0, a.nq, a.dOs[2], tid, false,
                           dv);
                  NVVM::CpAsyncCommitGroupOp::create(b, loc);
                  // lse * log2(e) and Dsum, by the first blockQ threads.
                  storeStats({sQ, sDO, sLse, sDsum}, {}, lseRow, dsumRow, q0);
                  NVVM::CpAsyncWaitGroupOp::create(b, loc, 1);
                  NVVM::Barrier0Op::create(b, loc);
                }

                // S^T = K Q^T: rows are this warp's keys, columns queries.
                Tiles p = zeroTiles(nTilesS);
                if (dkdvWgmma) {
                  Value descQ = kMajor(sQ, c32(0));
                  wgmmaFence();
                  for (int64_t kk = 0; kk < kSteps; ++kk)
                    wgmma(p, {}, wgmmaDescAt(descK, kStep(kk)),
                          wgmmaDescAt(descQ, kStep(kk)), false, false,
                          /*accumulate=*/kk > 0);
                  wgmmaCommitAndWait(0, {&p});
                } else {
                  mmaABt(p, kA, kSteps, sQ, lane);
                }
                SmallVector<SmallVector<Value, 4>> pA;
                // Dropout's factors (Z), for dV's P Z and dS.
                Tiles z;
                if (scored) {
                  // S^T: element (nt, e) is key row g (+ 8), query column.
                  auto place = [&](int64_t nt, int64_t e) {
                    Value query =
                        add(q0, add(c32(nt * 8), add(shl(tq, 1), c32(e & 1))));
                    return std::make_pair(query, add(keyRow, c32(8 * (e / 2))));
                  };
                  auto steps = [](int64_t nt, int64_t e) {
                    return std::make_pair(nt * 8 + (e & 1), 8 * (e / 2));
                  };
                  z = dropoutScales(a, nTilesS, batch, head, place);
                  // Queries past Nq are masked too: a non-finite score there
                  // would reach dK and dV through the zero rows of dO and Q.
                  Value need;
                  if (!maskMod)
                    need = arith::OrIOp::create(
                        b, loc,
                        tileNeedsMask(masks, q0, blockQ, k0, kvRows,
                                      /*nk=*/Value(), diag),
                        cmp(arith::CmpIPredicate::sgt, add(q0, c32(blockQ)),
                            a.nq));
                  p = scoredProbabilities(
                      p, terms, place, steps,
                      [&](int64_t, int64_t e, Value i, Value) {
                        Value at =
                            add(mul(ext64(mins(i, nqLast)), a.biasStrides[2]),
                                keyOff[e / 2]);
                        return gep(biasHead, at, biasEt);
                      },
                      need,
                      [&](int64_t nt, int64_t e) {
                        auto [query, key] = place(nt, e);
                        Value keep = keepScored(masks, maskMod, terms.idxB,
                                                terms.idxH, query, key, a.nk,
                                                diag, /*checkBound=*/false);
                        return arith::AndIOp::create(
                            b, loc, keep,
                            cmp(arith::CmpIPredicate::slt, query, a.nq));
                      },
                      [&](int64_t nt) -> std::array<Value, 4> {
                        // lse per column of S^T.
                        auto l = loadPair(sLse, add(c32(nt * 8), shl(tq, 1)));
                        return {l[0], l[1], l[0], l[1]};
                      },
                      qSteps, &pA, z);
                } else {
                  Tiles capDeriv = applySoftcap(p);
                  if (masks.causal || masks.window) {
                    Value need = tileNeedsMask(masks, q0, blockQ, k0, kvRows,
                                               /*nk=*/Value(), diag);
                    maskScores(p, need, [&](int64_t nt, int64_t e) {
                      Value key = add(keyRow, c32(8 * (e / 2)));
                      Value query = add(
                          q0, add(c32(nt * 8), add(shl(tq, 1), c32(e & 1))));
                      return keepKey(masks, query, key, a.nk, diag,
                                     /*checkBound=*/false);
                    });
                  }
                  // P^T = exp2(S^T * c - lse * log2(e)), lse per column.
                  for (int64_t nt = 0; nt < nTilesS; ++nt) {
                    auto lseLog2 = loadPair(sLse, add(c32(nt * 8), shl(tq, 1)));
                    for (int64_t e = 0; e < 4; ++e) {
                      Value negL =
                          arith::NegFOp::create(b, loc, lseLog2[e & 1]);
                      p[nt][e] = exp2(math::FmaOp::create(b, loc, p[nt][e],
                                                          scoreScale, negL));
                    }
                  }
                  // wgmma packs P^T after dS (below): dS takes the f32 P^T.
                  if (!dkdvWgmma)
                    for (int64_t s = 0; s < qSteps; ++s)
                      pA.push_back(accToA(p, s));
                  if (softcap)
                    for (int64_t nt = 0; nt < nTilesS; ++nt)
                      for (int64_t e = 0; e < 4; ++e)
                        p[nt][e] = fmul(p[nt][e], capDeriv[nt][e]);
                }

                if (!prefetch) {
                  NVVM::CpAsyncWaitGroupOp::create(b, loc, 0);
                  NVVM::Barrier0Op::create(b, loc);
                }
                // dV += P^T dO.
                auto pAStep = [&](int64_t s) { return pA[s]; };
                // dP^T = V dO^T, dS^T = P^T (dP^T - Dsum), Dsum per column.
                Tiles ds = zeroTiles(nTilesS);
                // wgmma: dP^T first, then dS^T from the f32 P^T (as the
                // reference: P^T's bf16/f16 fragments would cost dQ and dK
                // twice their error), then dV's and dK's products in one
                // group. P^T, dP^T, dK and dV are the peak (192 registers).
                Value qT, dOt;
                if (dkdvWgmma) {
                  dOt = mnMajor(sDO, c32(0));
                  Value descDO = kMajor(sDO, c32(0));
                  qT = mnMajor(sQ, c32(0));
                  wgmmaFence();
                  for (int64_t kk = 0; kk < kSteps; ++kk)
                    wgmma(ds, {}, wgmmaDescAt(descV, kStep(kk)),
                          wgmmaDescAt(descDO, kStep(kk)), false, false,
                          /*accumulate=*/kk > 0);
                  wgmmaCommitAndWait(0, {&ds});
                } else {
                  mmaAB(dV, pAStep, qSteps, sDO, lane, col0);
                  mmaABt(ds, vA, kSteps, sDO, lane);
                }
                SmallVector<std::array<Value, 2>> dsums;
                for (int64_t nt = 0; nt < nTilesS; ++nt)
                  dsums.push_back(
                      loadPair(sDsum, add(c32(nt * 8), shl(tq, 1))));
                scoreGrads(ds, p, z, [&](int64_t nt, int64_t e) {
                  return dsums[nt][e & 1];
                });
                if (withDQ)
                  storeTransposedDS(ds, dsBuffer(pipelined ? stage : Value()));
                // dK += dS^T Q.
                if (dkdvWgmma) {
                  SmallVector<SmallVector<Value, 4>> dsA;
                  for (int64_t s = 0; s < qSteps; ++s) {
                    pA.push_back(accToA(p, s));
                    pinBefore(pA.back());
                    dsA.push_back(accToA(ds, s));
                    pinBefore(dsA.back());
                  }
                  wgmmaFence();
                  for (int64_t s = 0; s < qSteps; ++s)
                    wgmma(dV, pA[s], Value(), wgmmaDescAt(dOt, s * rowStep),
                          false, /*transB=*/true, /*accumulate=*/true);
                  for (int64_t s = 0; s < qSteps; ++s)
                    wgmma(dK, dsA[s], Value(), wgmmaDescAt(qT, s * rowStep),
                          false,
                          /*transB=*/true, /*accumulate=*/true);
                  wgmmaCommitAndWait(0, {&dK, &dV});
                } else {
                  mmaAB(
                      dK, [&](int64_t s) { return accToA(ds, s); }, qSteps, sQ,
                      lane, col0);
                }
                if (withDQ && !pipelined)
                  addDQ(q0, dsumRow, dsBuffer(Value()), /*barrier=*/true);
                SmallVector<Value> yielded;
                for (auto *acc : {&dK, &dV})
                  for (auto &t : *acc)
                    yielded.append(t.begin(), t.end());
                if (prefetch) {
                  // The next tile's stats into its stage (read by nobody
                  // until the next iteration's barrier).
                  storeStats(next, nextStats, Value(), Value(), Value());
                  yielded.push_back(sub(c32(1), stage));
                }
                if (pipelined)
                  yielded.append({q0, j});
                scf::YieldOp::create(b, loc, yielded);
              });
          scf::YieldOp::create(b, loc, tiles.getResults());
        });

    // The last Q tile's dQ, once every warp's dS^T is stored.
    if (pipelined) {
      NVVM::Barrier0Op::create(b, loc);
      addPendingDQ(heads.getResult(numAcc + 1), heads.getResult(numAcc + 2),
                   heads.getResult(numAcc));
    }
    // dK = scale * sum dS^T Q (softcap's factor is in dS), dV times
    // dropout's 1 / (1 - p) (its P was unscaled), else as is. The
    // rows are rebuilt: reusing the prologue's would keep them in registers
    // across the loops (a spill at D = 128).
    auto [dK, dV] = unpack(heads.getResults());
    ThreadPlace again = rebuildThreadPlace();
    Value dkBase = headBase(a.dk, again.batch, again.head, a.dks[0], a.dks[1]);
    Value dvBase = headBase(a.dv, again.batch, again.head, a.dvs[0], a.dvs[1]);
    Value rowAgain = add(
        add(mul(again.tile, c32(kvRows)), mul(again.warp, c32(16))), again.g);
    storeRows(dK, gep(dkBase, c64(col0), et), a.dks[2], rowAgain, a.nk,
              again.tq, a.scale);
    // V's and dO's tiles are zero past Dv (< D): so is dV there.
    if (col0 < dv)
      dV.resize(std::min<int64_t>(dV.size(), (dv - col0) / 8));
    else
      dV.clear();
    if (!dV.empty())
      storeRows(dV, gep(dvBase, c64(col0), et), a.dvs[2], rowAgain, a.nk,
                again.tq, dropoutP ? cf(1.0 / (1.0 - *dropoutP)) : Value());
  }
  // The last bulk reductions are complete before the kernel ends.
  if (bulkDQ)
    byRowLanes([&] { ptx("cp.async.bulk.wait_group 0;"); });
  LLVM::ReturnOp::create(b, loc, ValueRange{});
}

//===----------------------------------------------------------------------===//
// dq
//===----------------------------------------------------------------------===//

void GradKernelBuilder::buildDq(StringRef name) {
  using ::fa::runtime::GridAxis;
  OpBuilder::InsertionGuard guard(b);
  Args a = beginKernel(
      name, {GridAxis::tilesNq(kBlockRows), GridAxis::hq(), GridAxis::batch()},
      dqSharedBytes());
  const int64_t blockQ = kBlockRows, blockKV = dqBlockKV;
  ThreadPlace place = getThreadPlace(a.headsQ, a.batches);
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
  int64_t qBytes = blockQ * d * 2, kvBytes = blockKV * d * 2;
  Value sQ = smem, sDO = smemAt(smem, c32(qBytes)),
        sK = smemAt(smem, c32(2 * qBytes)),
        sV = smemAt(smem, c32(2 * qBytes + kvBytes));
  copyTile(blockQ, sQ, qBase, q0, a.nq, a.qs[2], tid);
  copyTile(blockQ, sDO, dOBase, q0, a.nq, a.dOs[2], tid,
           /*threadAddresses=*/false, /*cols=*/dv);
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
  AOperands qdO = loadAOperands({sQ, sDO}, warpRow0, kSteps, lane, d <= 64);
  auto qA = [&](int64_t kk) { return qdO.get(0, kk); };
  auto dOA = [&](int64_t kk) { return qdO.get(1, kk); };

  KeyRange visible = visibleKeys(masks, q0, blockQ, a.nq, a.nk, blockKV);
  int64_t nTilesS = blockKV / 8, nTilesO = d / 8, kvSteps = blockKV / 16;
  SmallVector<Value> inits(nTilesO * 4, cf(0.0));
  Value scoreScale = softcap ? cf(1.0) : a.scaleLog2;
  // The scored path: this (b, h)'s terms and this thread's two bias rows,
  // clamped to Nq - 1 (rows past Nq are never stored).
  ScoreTerms terms;
  Value biasRows[2], nkLast;
  Region *maskMod = op.getMaskMod().empty() ? nullptr : &op.getMaskMod();
  if (scored)
    terms = scoreTerms(a, batch, head);
  if (biasEt) {
    nkLast = sub(a.nk, c32(1));
    Value biasHead = gep(a.bias,
                         add(mul(ext64(batch), a.biasStrides[0]),
                             mul(ext64(head), a.biasStrides[1])),
                         biasEt);
    for (int64_t r = 0; r < 2; ++r)
      biasRows[r] =
          gep(biasHead,
              mul(ext64(mins(add(row, c32(8 * r)), sub(a.nq, c32(1)))),
                  a.biasStrides[2]),
              biasEt);
  }

  auto loop = scf::ForOp::create(
      b, loc, toIndex(visible.begin), toIndex(visible.end),
      arith::ConstantIndexOp::create(b, loc, blockKV), inits,
      [&](OpBuilder &, Location, Value ivIndex, ValueRange iters) {
        Value kv0 = arith::IndexCastOp::create(b, loc, i32, ivIndex);
        Tiles dQ(nTilesO);
        for (int64_t nt = 0; nt < nTilesO; ++nt)
          dQ[nt].assign(iters.begin() + nt * 4, iters.begin() + nt * 4 + 4);
        // Everyone is done with the previous tiles; fetch K and V.
        NVVM::Barrier0Op::create(b, loc);
        copyTile(blockKV, sK, kBase, kv0, a.nk, a.ks[2], tid);
        NVVM::CpAsyncCommitGroupOp::create(b, loc);
        copyTile(blockKV, sV, vBase, kv0, a.nk, a.vs[2], tid,
                 /*threadAddresses=*/false, /*cols=*/dv);
        NVVM::CpAsyncCommitGroupOp::create(b, loc);
        NVVM::CpAsyncWaitGroupOp::create(b, loc, 1);
        NVVM::Barrier0Op::create(b, loc);

        // S = Q K^T, P = exp2(S * c - lse * log2(e)).
        Tiles p = zeroTiles(nTilesS);
        mmaABt(p, qA, kSteps, sK, lane);
        Tiles z;
        if (scored) {
          auto place = [&](int64_t nt, int64_t e) {
            Value key = add(kv0, add(c32(nt * 8), add(shl(tq, 1), c32(e & 1))));
            return std::make_pair(add(row, c32(8 * (e / 2))), key);
          };
          auto steps = [](int64_t nt, int64_t e) {
            return std::make_pair(8 * (e / 2), nt * 8 + (e & 1));
          };
          z = dropoutScales(a, nTilesS, batch, head, place);
          Value need = maskMod ? Value()
                               : tileNeedsMask(masks, q0, blockQ, kv0, blockKV,
                                               a.nk, visible.diag);
          // Keys past Nk (a ragged tile) read the last key: masked.
          p = scoredProbabilities(
              p, terms, place, steps,
              [&](int64_t, int64_t e, Value, Value j) {
                Value at = mul(ext64(mins(j, nkLast)), a.biasStrides[3]);
                return gep(biasRows[e / 2], at, biasEt);
              },
              need,
              [&](int64_t nt, int64_t e) {
                auto [query, key] = place(nt, e);
                return keepScored(masks, maskMod, terms.idxB, terms.idxH, query,
                                  key, a.nk, visible.diag,
                                  /*checkBound=*/true);
              },
              [&](int64_t) -> std::array<Value, 4> {
                return {lseLog2[0], lseLog2[0], lseLog2[1], lseLog2[1]};
              },
              0, nullptr);
        } else {
          Tiles capDeriv = applySoftcap(p);
          Value need = tileNeedsMask(masks, q0, blockQ, kv0, blockKV, a.nk,
                                     visible.diag);
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
        }

        // dP = dO V^T, dS = P (dP - Dsum), dQ += dS K.
        NVVM::CpAsyncWaitGroupOp::create(b, loc, 0);
        NVVM::Barrier0Op::create(b, loc);
        Tiles ds = zeroTiles(nTilesS);
        mmaABt(ds, dOA, kSteps, sV, lane);
        scoreGrads(ds, p, z, [&](int64_t, int64_t e) { return dsum[e / 2]; });
        auto dsA = [&](int64_t s) { return accToA(ds, s); };
        mmaAB(dQ, dsA, kvSteps, sK, lane);
        SmallVector<Value> yielded;
        for (auto &t : dQ)
          yielded.append(t.begin(), t.end());
        scf::YieldOp::create(b, loc, yielded);
      });

  Tiles dQ(nTilesO);
  for (int64_t nt = 0; nt < nTilesO; ++nt)
    dQ[nt].assign(loop.getResults().begin() + nt * 4,
                  loop.getResults().begin() + nt * 4 + 4);
  auto [headAgain, batchAgain] = headAndBatchAgain();
  Value dqBase = headBase(a.dq, batchAgain, headAgain, a.dqs[0], a.dqs[1]);
  storeRows(dQ, dqBase, a.dqs[2], row, a.nq, tq, a.scale);
  LLVM::ReturnOp::create(b, loc, ValueRange{});
}

//===----------------------------------------------------------------------===//
// dq_convert
//===----------------------------------------------------------------------===//

void GradKernelBuilder::buildDqConvert(StringRef name) {
  using ::fa::runtime::GridAxis;
  OpBuilder::InsertionGuard guard(b);
  Args a = beginKernel(
      name, {GridAxis::tilesNq(kDsumRows), GridAxis::hq(), GridAxis::batch()},
      0);
  QuadRows quads = getQuadRows(a);
  Value tq = quads.tq, accHead = quads.statsBase;
  Value dqBase = headBase(a.dq, quads.batch, quads.head, a.dqs[0], a.dqs[1]);
  auto v4f32 = VectorType::get({4}, f32);
  Value scale = LLVM::UndefOp::create(b, loc, VectorType::get({8}, f32));
  for (int64_t e = 0; e < 8; ++e)
    scale = LLVM::InsertElementOp::create(b, loc, scale, a.scale, c32(e));
  // dQ = scale * accumulator, a quad of lanes per row (8 columns per 32
  // each), like dsum.
  for (int64_t pass = 0; pass < kDsumRows / (kThreads / 4); ++pass) {
    Value row = quads.row(*this, pass);
    OpBuilder::InsertionGuard rowGuard(b);
    enterIf(cmp(arith::CmpIPredicate::slt, row, a.nq));
    Value accRow = gep(a.dqAcc, mul(add(accHead, ext64(row)), c64(d)), f32);
    Value dqRow = gep(dqBase, mul(ext64(row), a.dqs[2]), et);
    for (int64_t j = 0; j < llvm::divideCeil(d, 32); ++j) {
      Value col = add(shl(tq, 3), c32(j * 32));
      OpBuilder::InsertionGuard colGuard(b);
      if (Value inside = columnsInside(col, j, d))
        enterIf(inside);
      Value lo =
          LLVM::LoadOp::create(b, loc, v4f32, gep(accRow, ext64(col), f32), 16);
      Value hi = LLVM::LoadOp::create(
          b, loc, v4f32, gep(accRow, ext64(add(col, c32(4))), f32), 16);
      Value both = LLVM::ShuffleVectorOp::create(
          b, loc, lo, hi, ArrayRef<int32_t>{0, 1, 2, 3, 4, 5, 6, 7});
      Value scaled = LLVM::FMulOp::create(b, loc, both, scale);
      Value out =
          LLVM::FPTruncOp::create(b, loc, VectorType::get({8}, et), scaled);
      LLVM::StoreOp::create(b, loc, out, gep(dqRow, ext64(col), et),
                            /*alignment=*/16);
    }
  }
  LLVM::ReturnOp::create(b, loc, ValueRange{});
}

//===----------------------------------------------------------------------===//
// dbias
//===----------------------------------------------------------------------===//

void GradKernelBuilder::buildDBias(StringRef name) {
  OpBuilder::InsertionGuard guard(b);
  Args a = beginKernel(name, dbiasGrid(), dbiasSharedBytes());
  auto biasType = cast<ShapedType>(op.getBias().getType());
  bool bcast[4];
  for (unsigned i = 0; i < 4; ++i)
    bcast[i] = biasType.getDimSize(i) == 1;
  const int64_t blockQ = kBlockRows, blockKV = dbiasBlockKV();
  // The grid's heads and batches: those of the bias (1 where it
  // broadcasts).
  ThreadPlace place = getThreadPlace(bcast[1] ? c32(1) : a.headsQ,
                                     bcast[0] ? c32(1) : a.batches);
  Value tid = place.tid, warp = place.warp, lane = place.lane, g = place.g,
        tq = place.tq;
  // This CTA's block of dBias: (bias batch, bias head, Q tile), 0 along the
  // broadcast dims.
  Value bb = place.batch, hb = place.head;
  Value warpRow0 = mul(warp, c32(16));
  Value outRow0 = mul(place.tile, c32(blockQ));

  // Shared memory: Q, dO, K, V tiles, then [warps][64] f32 for sums.
  Value smem = LLVM::AddressOfOp::create(b, loc, sptr, "fa_smem");
  int64_t qBytes = blockQ * d * 2, kvBytes = blockKV * d * 2;
  Value sQ = smem, sDO = smemAt(smem, c32(qBytes)),
        sK = smemAt(smem, c32(2 * qBytes)),
        sV = smemAt(smem, c32(2 * qBytes + kvBytes)),
        sSum = smemAt(smem, c32(2 * qBytes + 2 * kvBytes));
  int64_t kSteps = d / 16, nTilesS = blockKV / 8;
  double inf = std::numeric_limits<double>::infinity();
  Value nqLast = sub(a.nq, c32(1)), nkLast = sub(a.nk, c32(1));
  Region *maskMod = op.getMaskMod().empty() ? nullptr : &op.getMaskMod();
  Value dbiasBase = gep(
      a.dbias,
      add(mul(ext64(bb), a.dbiasStrides[0]), mul(ext64(hb), a.dbiasStrides[1])),
      biasEt);

  // What this thread accumulates: a 16 x 64 tile per warp (4 values per
  // n-tile), column sums over its rows (2 per n-tile: i broadcasts), row
  // sums (2: j broadcasts) or one sum (both).
  enum class Acc { Tile, Cols, Rows, All };
  Acc kind = bcast[2] ? (bcast[3] ? Acc::All : Acc::Cols)
                      : (bcast[3] ? Acc::Rows : Acc::Tile);
  int64_t accSize = kind == Acc::Tile   ? nTilesS * 4
                    : kind == Acc::Cols ? nTilesS * 2
                    : kind == Acc::Rows ? 2
                                        : 1;
  auto accIndex = [&](int64_t nt, int64_t e) -> int64_t {
    switch (kind) {
    case Acc::Tile:
      return nt * 4 + e;
    case Acc::Cols:
      return nt * 2 + (e & 1);
    case Acc::Rows:
      return e / 2;
    case Acc::All:
      return 0;
    }
    llvm_unreachable("bad accumulator kind");
  };
  auto loopOver = [&](Value lo, Value hi, Value step, ValueRange init,
                      function_ref<SmallVector<Value>(Value, ValueRange)> body)
      -> SmallVector<Value> {
    auto forOp = scf::ForOp::create(
        b, loc, toIndex(lo), toIndex(hi), toIndex(step), init,
        [&](OpBuilder &, Location, Value iv, ValueRange iters) {
          Value i = arith::IndexCastOp::create(b, loc, i32, iv);
          scf::YieldOp::create(b, loc, body(i, iters));
        });
    return SmallVector<Value>(forOp.getResults());
  };
  // Sums `v` over the lanes whose ids differ in the bits of `offsets`.
  auto laneSum = [&](Value v, ArrayRef<int64_t> offsets) {
    for (int64_t offset : offsets) {
      Value other =
          NVVM::ShflOp::create(b, loc, f32, c32(-1), v, c32(offset), c32(0x1f),
                               NVVM::ShflKind::bfly, UnitAttr());
      v = fadd(v, other);
    }
    return v;
  };

  // dS of (batch bi, head hi, Q tile q0, K/V tile kv0), added into `acc`.
  auto addTile = [&](Value bi, Value hi, Value q0, Value kv0,
                     ValueRange accIn) -> SmallVector<Value> {
    SmallVector<Value> acc(accIn);
    // The keys' addresses and masks would otherwise be hoisted out of the
    // loops over (b, h, Q tile) and spill.
    kv0 = opaque(kv0);
    Value hk = divu(hi, a.group);
    // Everyone is done with the previous tiles.
    NVVM::Barrier0Op::create(b, loc);
    copyTile(blockQ, sQ, headBase(a.q, bi, hi, a.qs[0], a.qs[1]), q0, a.nq,
             a.qs[2], tid);
    copyTile(blockQ, sDO, headBase(a.dO, bi, hi, a.dOs[0], a.dOs[1]), q0, a.nq,
             a.dOs[2], tid,
             /*threadAddresses=*/false, /*cols=*/dv);
    copyTile(blockKV, sK, headBase(a.k, bi, hk, a.ks[0], a.ks[1]), kv0, a.nk,
             a.ks[2], tid);
    copyTile(blockKV, sV, headBase(a.v, bi, hk, a.vs[0], a.vs[1]), kv0, a.nk,
             a.vs[2], tid,
             /*threadAddresses=*/false, /*cols=*/dv);
    NVVM::CpAsyncCommitGroupOp::create(b, loc);
    // lse * log2(e) (+inf past Nq and for empty rows) and Dsum of the rows
    // g and g + 8 of this warp.
    Value row = add(add(q0, warpRow0), g);
    Value lseRow = add(mul(ext64(bi), a.lses[0]), mul(ext64(hi), a.lses[1]));
    Value dsumRow = add(mul(ext64(bi), a.dsums[0]), mul(ext64(hi), a.dsums[1]));
    Value lseLog2[2], dsum[2];
    for (int64_t r = 0; r < 2; ++r) {
      Value rowR = add(row, c32(8 * r));
      Value valid = cmp(arith::CmpIPredicate::slt, rowR, a.nq);
      Value src = ext64(sel(valid, rowR, c32(0)));
      Value lse =
          LLVM::LoadOp::create(b, loc, f32, gep(a.lse, add(lseRow, src), f32));
      Value ds = LLVM::LoadOp::create(b, loc, f32,
                                      gep(a.dsum, add(dsumRow, src), f32));
      Value empty = arith::CmpFOp::create(b, loc, arith::CmpFPredicate::OEQ,
                                          lse, cf(-inf));
      lseLog2[r] =
          sel(valid, sel(empty, cf(inf), fmul(lse, cf(M_LOG2E))), cf(inf));
      dsum[r] = sel(valid, ds, cf(0.0));
    }
    ScoreTerms terms = scoreTerms(a, bi, hi);
    Value biasHead = gep(
        a.bias,
        add(mul(ext64(bi), a.biasStrides[0]), mul(ext64(hi), a.biasStrides[1])),
        biasEt);
    NVVM::CpAsyncWaitGroupOp::create(b, loc, 0);
    NVVM::Barrier0Op::create(b, loc);

    // S = Q K^T, scored and masked (every tile, rows past Nq too: they are
    // summed when i broadcasts); P; dS = P (dP - Dsum) score_mod'.
    Tiles p = zeroTiles(nTilesS);
    auto qA = [&](int64_t kk) { return loadA(sQ, warpRow0, kk, lane); };
    auto dOA = [&](int64_t kk) { return loadA(sDO, warpRow0, kk, lane); };
    mmaABt(p, qA, kSteps, sK, lane);
    auto placeOf = [&](int64_t nt, int64_t e) {
      Value key = add(kv0, add(c32(nt * 8), add(shl(tq, 1), c32(e & 1))));
      return std::make_pair(add(row, c32(8 * (e / 2))), key);
    };
    Tiles deriv = scoreScored(
        p, terms, placeOf,
        [](int64_t nt, int64_t e) {
          return std::make_pair(8 * (e / 2), nt * 8 + (e & 1));
        },
        [&](int64_t, int64_t, Value i, Value j) {
          Value at = add(mul(ext64(mins(i, nqLast)), a.biasStrides[2]),
                         mul(ext64(mins(j, nkLast)), a.biasStrides[3]));
          return gep(biasHead, at, biasEt);
        },
        /*withSoftcap=*/false);
    maskScores(p, Value(), [&](int64_t nt, int64_t e) {
      auto [i, j] = placeOf(nt, e);
      Value keep = keepScored(masks, maskMod, terms.idxB, terms.idxH, i, j,
                              a.nk, terms.diag, /*checkBound=*/true);
      return arith::AndIOp::create(b, loc, keep,
                                   cmp(arith::CmpIPredicate::slt, i, a.nq));
    });
    for (int64_t nt = 0; nt < nTilesS; ++nt)
      for (int64_t e = 0; e < 4; ++e) {
        Value negL = arith::NegFOp::create(b, loc, lseLog2[e / 2]);
        p[nt][e] =
            exp2(math::FmaOp::create(b, loc, p[nt][e], cf(M_LOG2E), negL));
        if (!deriv.empty())
          p[nt][e] = timesDerivative(p[nt][e], deriv[nt][e]);
      }
    Tiles dp = zeroTiles(nTilesS);
    mmaABt(dp, dOA, kSteps, sV, lane);
    scoreGrads(dp, p, dropoutScales(a, nTilesS, bi, hi, placeOf),
               [&](int64_t, int64_t e) { return dsum[e / 2]; });
    for (int64_t nt = 0; nt < nTilesS; ++nt)
      for (int64_t e = 0; e < 4; ++e) {
        int64_t at = accIndex(nt, e);
        acc[at] = fadd(acc[at], dp[nt][e]);
      }
    return acc;
  };

  // Over every (b, h, Q tile) that adds into this block, for K/V tile kv0;
  // pairs that causal or window mask whole are skipped (dS = 0 there).
  Value one = c32(1);
  Value bBegin = bcast[0] ? c32(0) : bb,
        bEnd = bcast[0] ? a.batches : add(bb, one);
  Value hBegin = bcast[1] ? c32(0) : hb,
        hEnd = bcast[1] ? a.headsQ : add(hb, one);
  Value qBegin = bcast[2] ? c32(0) : outRow0,
        qEnd = bcast[2] ? a.nq : add(outRow0, one);
  auto members = [&](Value kv0, ValueRange accIn) {
    return loopOver(bBegin, bEnd, one, accIn, [&](Value bi, ValueRange accB) {
      return loopOver(hBegin, hEnd, one, accB, [&](Value hi, ValueRange accH) {
        return loopOver(
            qBegin, qEnd, c32(blockQ), accH, [&](Value q0, ValueRange accQ) {
              if (!masks.causal && !masks.window)
                return addTile(bi, hi, q0, kv0, accQ);
              KeyRange keys =
                  visibleKeys(masks, q0, blockQ, a.nq, a.nk, blockKV);
              Value visible = arith::AndIOp::create(
                  b, loc, cmp(arith::CmpIPredicate::sge, kv0, keys.begin),
                  cmp(arith::CmpIPredicate::slt, kv0, keys.end));
              SmallVector<Type> types(accQ.size(), f32);
              auto ifOp = scf::IfOp::create(b, loc, types, visible,
                                            /*withElse=*/true);
              OpBuilder::InsertionGuard ifGuard(b);
              b.setInsertionPointToStart(ifOp.thenBlock());
              scf::YieldOp::create(b, loc, addTile(bi, hi, q0, kv0, accQ));
              b.setInsertionPointToStart(ifOp.elseBlock());
              scf::YieldOp::create(b, loc, accQ);
              return SmallVector<Value>(ifOp.getResults());
            });
      });
    });
  };

  // Stores `value` at (i, j) of this block of dBias (when `inRange`, unless
  // null).
  auto storeAt = [&](Value inRange, Value i, Value j, Value value) {
    OpBuilder::InsertionGuard ifGuard(b);
    if (inRange) {
      auto ifOp = scf::IfOp::create(b, loc, inRange, /*withElse=*/false);
      b.setInsertionPointToStart(ifOp.thenBlock());
    }
    Value at =
        add(mul(ext64(i), a.dbiasStrides[2]), mul(ext64(j), a.dbiasStrides[3]));
    storeAs(biasEt, value, gep(dbiasBase, at, biasEt));
  };
  // The sum over the whole CTA of one value per warp in sSum[warp * 64 +
  // col], for col = tid < cols, in warp order (deterministic).
  auto sumWarps = [&](function_ref<void(Value col, Value sum)> use,
                      int64_t cols) {
    NVVM::Barrier0Op::create(b, loc);
    auto ifOp = scf::IfOp::create(
        b, loc, cmp(arith::CmpIPredicate::slt, tid, c32(cols)), false);
    {
      OpBuilder::InsertionGuard ifGuard(b);
      b.setInsertionPointToStart(ifOp.thenBlock());
      Value sum;
      for (int64_t w = 0; w < kWarps; ++w) {
        Value v = LLVM::LoadOp::create(
            b, loc, f32, smemAt(sSum, shl(add(tid, c32(w * blockKV)), 2)));
        sum = sum ? fadd(sum, v) : v;
      }
      use(tid, sum);
    }
    // sSum is free again.
    NVVM::Barrier0Op::create(b, loc);
  };

  SmallVector<Value> zeros(accSize, cf(0.0));
  SmallVector<Value> total = loopOver(
      c32(0), a.nk, c32(blockKV), bcast[3] ? ValueRange(zeros) : ValueRange(),
      [&](Value kv0, ValueRange carried) -> SmallVector<Value> {
        if (bcast[3])
          return members(kv0, carried);
        SmallVector<Value> acc = members(kv0, zeros);
        if (kind == Acc::Tile) {
          for (int64_t nt = 0; nt < nTilesS; ++nt)
            for (int64_t e = 0; e < 4; ++e) {
              Value i = add(add(add(outRow0, warpRow0), g), c32(8 * (e / 2)));
              Value j = add(kv0, add(c32(nt * 8), add(shl(tq, 1), c32(e & 1))));
              Value inRange = arith::AndIOp::create(
                  b, loc, cmp(arith::CmpIPredicate::slt, i, a.nq),
                  cmp(arith::CmpIPredicate::slt, j, a.nk));
              storeAt(inRange, i, j, acc[nt * 4 + e]);
            }
          return {};
        }
        // Column sums: over the 8 row groups of the warp, then the warps.
        for (Value &v : acc)
          v = laneSum(v, {4, 8, 16});
        {
          OpBuilder::InsertionGuard ifGuard(b);
          enterIf(cmp(arith::CmpIPredicate::slt, lane, c32(4)));
          for (int64_t nt = 0; nt < nTilesS; ++nt)
            for (int64_t c = 0; c < 2; ++c) {
              Value col = add(c32(nt * 8), add(shl(tq, 1), c32(c)));
              Value at = add(mul(warp, c32(blockKV)), col);
              LLVM::StoreOp::create(b, loc, acc[nt * 2 + c],
                                    smemAt(sSum, shl(at, 2)));
            }
        }
        sumWarps(
            [&](Value col, Value sum) {
              Value j = add(kv0, col);
              storeAt(cmp(arith::CmpIPredicate::slt, j, a.nk), c32(0), j, sum);
            },
            blockKV);
        return {};
      });

  if (kind == Acc::Rows) {
    // Row sums: over the quad, stored by its first lane.
    for (int64_t r = 0; r < 2; ++r) {
      Value sum = quadReduce(total[r], /*isMax=*/false);
      Value i = add(add(add(outRow0, warpRow0), g), c32(8 * r));
      Value inRange =
          arith::AndIOp::create(b, loc, cmp(arith::CmpIPredicate::slt, i, a.nq),
                                cmp(arith::CmpIPredicate::eq, tq, c32(0)));
      storeAt(inRange, i, c32(0), sum);
    }
  } else if (kind == Acc::All) {
    Value sum = laneSum(total[0], {1, 2, 4, 8, 16});
    {
      OpBuilder::InsertionGuard ifGuard(b);
      enterIf(cmp(arith::CmpIPredicate::eq, lane, c32(0)));
      LLVM::StoreOp::create(b, loc, sum,
                            smemAt(sSum, shl(mul(warp, c32(blockKV)), 2)));
    }
    sumWarps([&](Value, Value all) { storeAt(Value(), c32(0), c32(0), all); },
             1);
  }
  LLVM::ReturnOp::create(b, loc, ValueRange{});
}

//===----------------------------------------------------------------------===//
// Entry point
//===----------------------------------------------------------------------===//

LogicalResult
mlir::fa::nvvm::buildAttentionGradKernels(OpBuilder &b, AttentionGradOp op,
                                          StringRef suffix,
                                          GradKernelOptions options) {
  if (options.dkdvWarps != 0 && options.dkdvWarps != 4 &&
      options.dkdvWarps != 8) {
    op.emitOpError("convert-fa-to-nvvm: bwd-dkdv-warps must be 0, 4 or 8 "
                   "(got ")
        << options.dkdvWarps << ")";
    return failure();
  }
  if (options.atomicDQ && options.deterministic) {
    op.emitOpError("convert-fa-to-nvvm: bwd-atomic-dq and bwd-deterministic "
                   "exclude each other");
    return failure();
  }
  // Neither: atomic dQ where its dK/dV kernel is the wgmma one (1.05-1.28x
  // the dq kernel's backward on H100, performance.md).
  if (!options.atomicDQ && !options.deterministic) {
    GradKernelOptions atomic = options;
    atomic.atomicDQ = true;
    options.atomicDQ =
        GradKernelBuilder(b, op.getLoc(), op, atomic).usesWgmma();
  }
  GradKernelBuilder kernels(b, op.getLoc(), op, options);
  if (options.atomicDQ && !kernels.atomicDQFits()) {
    op.emitOpError("convert-fa-to-nvvm: bwd-atomic-dq does not fit D = ")
        << op.getQuery().getType().getDimSize(3)
        << " (each dK/dV warp's dQ columns, D x Q-tile rows / 16 / warps, "
           "must be a multiple of 16); its dq kernel computes dQ";
    return failure();
  }
  if (options.dkdvWarps == 8 && kernels.getDkDvWarps() != 8) {
    op.emitOpError("convert-fa-to-nvvm: bwd-dkdv-warps=8 does not fit D = ")
        << op.getQuery().getType().getDimSize(3) << " with a dK/dV Q tile of "
        << kernels.getDkDvBlockQ()
        << " rows (it takes D <= 128, Q tile rows x D a multiple of 2048 "
           "and, with atomic dQ, 16 columns or a multiple per warp)";
    return failure();
  }
  std::string prefix = "fa_backward_", tail = "_" + suffix.str();
  kernels.buildDsum(prefix + "dsum" + tail);
  kernels.buildDkDv(prefix + "dkdv" + tail);
  if (!options.atomicDQ)
    kernels.buildDq(prefix + "dq" + tail);
  else
    kernels.buildDqConvert(prefix + "dq_convert" + tail);
  // dBias by its own sweep over the blocks of the bias (below).
  if (op.getGradBias())
    kernels.buildDBias(prefix + "dbias" + tail);
  return success();
}
