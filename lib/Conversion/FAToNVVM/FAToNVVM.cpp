//===- FAToNVVM.cpp - fa.attention to an FA2-style NVVM kernel ------------===//
//
// Emits, for each supported fa.attention, a kernel in a gpu.module that
// follows FlashAttention-2's work partitioning on mma.sync tensor cores:
//
//  - one CTA per (Q tile, query head, batch); 4 warps, each owning one or two
//    m-tiles of 16 query rows (two for D <= 64: a Q tile of 128 rows) whose
//    Q fragments stay in registers;
//  - a loop over K/V tiles of 64 rows, copied global -> shared with cp.async
//    (16-byte chunks, XOR-swizzled so ldmatrix is bank-conflict free; rows
//    past the end are zero-filled);
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
//===----------------------------------------------------------------------===//

#include "fa/Conversion/Passes.h"
#include "fa/Dialect/FA/IR/FAOps.h"
#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/GPU/IR/GPUDialect.h"
#include "mlir/Dialect/LLVMIR/LLVMDialect.h"
#include "mlir/Dialect/LLVMIR/NVVMDialect.h"
#include "mlir/Dialect/Math/IR/Math.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/IR/Builders.h"
#include "mlir/IR/BuiltinOps.h"

#include <cmath>
#include <limits>

namespace mlir::fa {
#define GEN_PASS_DEF_CONVERTFATONVVM
#include "fa/Conversion/Passes.h.inc"
} // namespace mlir::fa

using namespace mlir;
using namespace mlir::fa;

namespace {

// 4 warps of 16 query rows per CTA. (8 warps sharing a K/V tile halve the
// L2 traffic but measured 10-30% slower on H100: occupancy drops to one CTA
// per SM at ~210 registers.)
constexpr int64_t kBlockQ = 64;
constexpr int64_t kBlockKV = 64;
constexpr int64_t kWarps = 4;
constexpr int64_t kThreads = 32 * kWarps;
constexpr unsigned kGlobal = 1, kShared = 3;

/// Builds one kernel. Values named *32 are i32, the rest follow their type.
class FlashKernelBuilder {
public:
  FlashKernelBuilder(OpBuilder &b, Location loc, AttentionOp op)
      : b(b), loc(loc), op(op), et(op.getElementType()),
        d(op.getQuery().getType().getDimSize(3)), i32(b.getI32Type()),
        i64(b.getI64Type()), f32(b.getF32Type()),
        gptr(LLVM::LLVMPointerType::get(b.getContext(), kGlobal)),
        sptr(LLVM::LLVMPointerType::get(b.getContext(), kShared)),
        mTiles(d <= 64 ? 2 : 1), blockQ(kBlockQ * mTiles) {}

  /// Query rows per CTA: 64 x mTiles.
  int64_t getBlockQ() const { return blockQ; }

  /// Emits `llvm.func @name` into the current insertion point (a gpu.module).
  void build(StringRef name);

  /// Dynamic shared memory the kernel needs, in bytes.
  int64_t sharedBytes() const { return (blockQ + 2 * kBlockKV) * d * 2; }

private:
  // Constants and arithmetic.
  Value c32(int64_t v) { return arith::ConstantIntOp::create(b, loc, v, 32); }
  Value c64(int64_t v) { return arith::ConstantIntOp::create(b, loc, v, 64); }
  Value cf(double v) {
    return arith::ConstantOp::create(b, loc, b.getF32FloatAttr(v));
  }
  Value add(Value x, Value y) { return arith::AddIOp::create(b, loc, x, y); }
  Value sub(Value x, Value y) { return arith::SubIOp::create(b, loc, x, y); }
  Value mul(Value x, Value y) { return arith::MulIOp::create(b, loc, x, y); }
  Value divu(Value x, Value y) { return arith::DivUIOp::create(b, loc, x, y); }
  Value remu(Value x, Value y) { return arith::RemUIOp::create(b, loc, x, y); }
  Value shl(Value x, int64_t s) {
    return arith::ShLIOp::create(b, loc, x, c32(s));
  }
  Value shr(Value x, int64_t s) {
    return arith::ShRUIOp::create(b, loc, x, c32(s));
  }
  Value andi(Value x, int64_t m) {
    return arith::AndIOp::create(b, loc, x, c32(m));
  }
  Value xori(Value x, Value y) { return arith::XOrIOp::create(b, loc, x, y); }
  Value mins(Value x, Value y) { return arith::MinSIOp::create(b, loc, x, y); }
  Value maxs(Value x, Value y) { return arith::MaxSIOp::create(b, loc, x, y); }
  Value cmp(arith::CmpIPredicate p, Value x, Value y) {
    return arith::CmpIOp::create(b, loc, p, x, y);
  }
  Value sel(Value c, Value x, Value y) {
    return arith::SelectOp::create(b, loc, c, x, y);
  }
  Value ext64(Value x) { return arith::ExtSIOp::create(b, loc, i64, x); }
  Value fmul(Value x, Value y) { return arith::MulFOp::create(b, loc, x, y); }
  Value fadd(Value x, Value y) { return arith::AddFOp::create(b, loc, x, y); }
  Value fsub(Value x, Value y) { return arith::SubFOp::create(b, loc, x, y); }
  Value fmax(Value x, Value y) {
    return arith::MaximumFOp::create(b, loc, x, y);
  }
  Value exp2(Value x) { return LLVM::Exp2Op::create(b, loc, f32, x); }

  /// A one-operand f32 PTX instruction (lg2, tanh have no libcall on NVPTX).
  Value approx(StringRef instruction, Value x) {
    std::string asmText = (instruction + " $0, $1;").str();
    return LLVM::InlineAsmOp::create(b, loc, f32, ValueRange{x}, asmText,
                                     "=f,f", /*has_side_effects=*/false,
                                     /*is_align_stack=*/false,
                                     LLVM::TailCallKind::None,
                                     LLVM::AsmDialectAttr(), ArrayAttr())
        .getResult(0);
  }

  /// Element pointer `base + offset` (offset in elements of `et`, i64).
  Value gep(Value base, Value offset, Type elementType) {
    return LLVM::GEPOp::create(b, loc, base.getType(), elementType, base,
                               ValueRange{offset});
  }
  /// Byte offset of element (row, col) in a swizzled [rows][d] tile: 16-byte
  /// chunks XOR-ed with the row so the 8 rows one ldmatrix reads hit
  /// distinct banks.
  Value swizzled(Value row, Value col) {
    // XOR within aligned groups of a power-of-two number of chunks (8 at
    // most), so the swizzled chunk stays inside the row (d = 96: 12 chunks).
    int64_t chunks = d / 8, group = 1;
    while (group < 8 && chunks % (group * 2) == 0)
      group *= 2;
    Value chunk = shr(col, 3);
    Value swz = xori(chunk, andi(row, group - 1));
    return add(mul(row, c32(d * 2)), add(shl(swz, 4), shl(andi(col, 7), 1)));
  }
  Value smemAt(Value tile, Value byteOffset) {
    return LLVM::GEPOp::create(b, loc, sptr, b.getI8Type(), tile,
                               ValueRange{byteOffset});
  }
  /// Copies rows [row0, row0 + 64) of a [N][d] matrix (row stride `stride`
  /// elements) into a swizzled shared tile; rows >= `rows` are zero-filled.
  void copyTile(int64_t tileRows, Value tile, Value base, Value row0,
                Value rows, Value stride, Value tid);
  Value ldmatrix(Value ptr, bool transpose);
  /// D = A * B + C on one m16n8k16 tile; returns the 4 accumulators.
  SmallVector<Value, 4> mma(ArrayRef<Value> a, ArrayRef<Value> bFrag,
                            ArrayRef<Value> c);
  /// Two f32 as one register of two `et`.
  Value pack(Value lo, Value hi);
  /// Reduces across the 4 lanes of a quad (lanes sharing a row).
  Value quadReduce(Value v, bool isMax);

  OpBuilder &b;
  Location loc;
  AttentionOp op;
  Type et;
  int64_t d;
  Type i32, i64, f32, gptr, sptr;
  /// 16-row query tiles per warp. Two (for D <= 64, where the registers
  /// allow) let each K and V fragment read from shared memory feed two mmas.
  int64_t mTiles;
  int64_t blockQ;
};

void FlashKernelBuilder::copyTile(int64_t tileRows, Value tile, Value base,
                                  Value row0, Value rows, Value stride,
                                  Value tid) {
  int64_t chunksPerRow = d / 8;
  int64_t perThread = tileRows * chunksPerRow / kThreads;
  for (int64_t i = 0; i < perThread; ++i) {
    Value chunkId = add(tid, c32(i * kThreads));
    Value r = divu(chunkId, c32(chunksPerRow));
    Value c = remu(chunkId, c32(chunksPerRow));
    Value gRow = add(row0, r);
    Value valid = cmp(arith::CmpIPredicate::slt, gRow, rows);
    // Out-of-range rows read nothing (src-size 0) from row 0.
    Value srcRow = sel(valid, gRow, c32(0));
    Value offset = add(mul(ext64(srcRow), stride), ext64(shl(c, 3)));
    Value src = gep(base, offset, et);
    Value dst = smemAt(tile, swizzled(r, shl(c, 3)));
    Value size = sel(valid, c32(16), c32(0));
    NVVM::CpAsyncOp::create(b, loc, dst, src, /*size=*/16u,
                            NVVM::LoadCacheModifierKind::CG, size);
  }
}

Value FlashKernelBuilder::ldmatrix(Value ptr, bool transpose) {
  auto type =
      LLVM::LLVMStructType::getLiteral(b.getContext(), {i32, i32, i32, i32});
  return NVVM::LdMatrixOp::create(
      b, loc, type, ptr, /*num=*/4,
      transpose ? NVVM::MMALayout::col : NVVM::MMALayout::row,
      NVVM::LdStMatrixShapeAttr::get(b.getContext(), 8, 8),
      NVVM::LdStMatrixEltType::B16);
}

SmallVector<Value, 4> FlashKernelBuilder::mma(ArrayRef<Value> a,
                                              ArrayRef<Value> bFrag,
                                              ArrayRef<Value> c) {
  auto resultType =
      LLVM::LLVMStructType::getLiteral(b.getContext(), {f32, f32, f32, f32});
  NVVM::MMATypes ptxType =
      et.isBF16() ? NVVM::MMATypes::bf16 : NVVM::MMATypes::f16;
  SmallVector<Value> aOps(a), bOps(bFrag);
  if (et.isF16()) {
    // f16 operands are vector<2xf16>; bf16 ones stay i32.
    auto v2 = VectorType::get({2}, b.getF16Type());
    for (Value &v : aOps)
      v = LLVM::BitcastOp::create(b, loc, v2, v);
    for (Value &v : bOps)
      v = LLVM::BitcastOp::create(b, loc, v2, v);
  }
  Value res = NVVM::MmaOp::create(
      b, loc, resultType, aOps, bOps, c, ArrayRef<int64_t>{16, 8, 16},
      std::nullopt, std::nullopt,
      std::array<NVVM::MMATypes, 2>{ptxType, ptxType},
      std::array<NVVM::MMALayout, 2>{NVVM::MMALayout::row,
                                     NVVM::MMALayout::col});
  SmallVector<Value, 4> out;
  for (int64_t i = 0; i < 4; ++i)
    out.push_back(LLVM::ExtractValueOp::create(b, loc, res, i));
  return out;
}

Value FlashKernelBuilder::pack(Value lo, Value hi) {
  auto v2f32 = VectorType::get({2}, f32);
  Value v = LLVM::PoisonOp::create(b, loc, v2f32);
  v = LLVM::InsertElementOp::create(b, loc, v, lo, c32(0));
  v = LLVM::InsertElementOp::create(b, loc, v, hi, c32(1));
  Value narrow = LLVM::FPTruncOp::create(b, loc, VectorType::get({2}, et), v);
  return LLVM::BitcastOp::create(b, loc, i32, narrow);
}

Value FlashKernelBuilder::quadReduce(Value v, bool isMax) {
  for (int64_t offset : {1, 2}) {
    Value other =
        NVVM::ShflOp::create(b, loc, f32, c32(-1), v, c32(offset), c32(0x1f),
                             NVVM::ShflKind::bfly, UnitAttr());
    v = isMax ? fmax(v, other) : fadd(v, other);
  }
  return v;
}

void FlashKernelBuilder::build(StringRef name) {
  MLIRContext *ctx = b.getContext();
  // q, k, v, o, lse; strides (b, h, n) of q, k, v, o and (b, h) of lse;
  // Nq, Nk, Hq / Hkv; scale * log2(e).
  SmallVector<Type> params = {gptr, gptr, gptr, gptr, gptr};
  params.append(14, i64);
  params.append({i32, i32, i32, f32});
  auto fnType =
      LLVM::LLVMFunctionType::get(LLVM::LLVMVoidType::get(ctx), params);
  auto fn = LLVM::LLVMFuncOp::create(b, loc, name, fnType);
  fn->setAttr(NVVM::NVVMDialect::getKernelFuncAttrName(), b.getUnitAttr());
  // One CTA of 128 threads may use every register: ptxas would otherwise
  // trade registers for occupancy and spill the accumulators.
  fn->setAttr(NVVM::NVVMDialect::getMaxnregAttrName(),
              b.getI32IntegerAttr(255));
  fn->setAttr(NVVM::NVVMDialect::getMaxntidAttrName(),
              b.getDenseI32ArrayAttr({kThreads, 1, 1}));
  Block *entry = fn.addEntryBlock(b);
  OpBuilder::InsertionGuard guard(b);
  b.setInsertionPointToStart(entry);
  auto arg = [&](unsigned i) { return entry->getArgument(i); };
  Value q = arg(0), k = arg(1), v = arg(2), o = arg(3), lse = arg(4);
  Value qs[3] = {arg(5), arg(6), arg(7)}, ks[3] = {arg(8), arg(9), arg(10)},
        vs[3] = {arg(11), arg(12), arg(13)},
        os[3] = {arg(14), arg(15), arg(16)}, ls[2] = {arg(17), arg(18)};
  Value nq = arg(19), nk = arg(20), group = arg(21), scaleLog2 = arg(22);

  Value tid = NVVM::ThreadIdXOp::create(b, loc, i32);
  Value qTileIdx = NVVM::BlockIdXOp::create(b, loc, i32);
  Value head = NVVM::BlockIdYOp::create(b, loc, i32);
  Value batch = NVVM::BlockIdZOp::create(b, loc, i32);
  Value warp = shr(tid, 5), lane = andi(tid, 31);
  Value g = shr(lane, 2), tq = andi(lane, 3);
  Value q0 = mul(qTileIdx, c32(blockQ));
  Value headKV = divu(head, group);

  Value qBase =
      gep(q, add(mul(ext64(batch), qs[0]), mul(ext64(head), qs[1])), et);
  Value kBase =
      gep(k, add(mul(ext64(batch), ks[0]), mul(ext64(headKV), ks[1])), et);
  Value vBase =
      gep(v, add(mul(ext64(batch), vs[0]), mul(ext64(headKV), vs[1])), et);

  // Shared memory: the Q tile, then one K and one V tile.
  auto smemType = LLVM::LLVMArrayType::get(b.getI8Type(), 0);
  Value smem = LLVM::AddressOfOp::create(b, loc, sptr, "fa_smem");
  (void)smemType;
  int64_t qBytes = blockQ * d * 2, kvBytes = kBlockKV * d * 2;
  Value sQ = smem, sK = smemAt(smem, c32(qBytes)),
        sV = smemAt(smem, c32(qBytes + kvBytes));

  // Q tile -> shared -> registers (A fragments, one x4 ldmatrix per 16 cols).
  copyTile(blockQ, sQ, qBase, q0, nq, qs[2], tid);
  NVVM::CpAsyncCommitGroupOp::create(b, loc);
  NVVM::CpAsyncWaitGroupOp::create(b, loc, 0);
  NVVM::Barrier0Op::create(b, loc);
  int64_t kSteps = d / 16;
  // Warp w owns rows mt * 64 + w * 16 + [0, 16) for each of its m-tiles.
  Value warpRow0 = mul(warp, c32(16));
  SmallVector<SmallVector<SmallVector<Value, 4>>> qFrag(mTiles);
  for (int64_t mt = 0; mt < mTiles; ++mt) {
    qFrag[mt].resize(kSteps);
    Value row = add(add(c32(mt * 64), warpRow0),
                    add(andi(lane, 7), shl(andi(shr(lane, 3), 1), 3)));
    for (int64_t kk = 0; kk < kSteps; ++kk) {
      Value col = add(c32(kk * 16), shl(shr(lane, 4), 3));
      Value frag = ldmatrix(smemAt(sQ, swizzled(row, col)), false);
      for (int64_t i = 0; i < 4; ++i)
        qFrag[mt][kk].push_back(LLVM::ExtractValueOp::create(b, loc, frag, i));
    }
  }

  // The K/V rows this CTA's queries can see.
  Value kvBegin = c32(0), kvEnd = nk;
  Value qEnd = add(q0, c32(blockQ));
  Value diag = sub(nk, nq);
  auto causal = op.getCausalAttr();
  auto window = op.getWindowAttr();
  if (causal) {
    Value last =
        causal.getValue() == CausalKind::TopLeft ? qEnd : add(qEnd, diag);
    kvEnd = maxs(c32(0), mins(kvEnd, last));
  }
  if (window) {
    Value lo = sub(add(q0, diag), c32(window[0]));
    kvBegin = mul(divu(maxs(c32(0), lo), c32(kBlockKV)), c32(kBlockKV));
    kvEnd = maxs(c32(0), mins(kvEnd, add(add(qEnd, diag), c32(window[1]))));
  }

  int64_t nTilesS = kBlockKV / 8, nTilesO = d / 8;
  // Per m-tile loop state: m (rows g, g + 8), l (same), acc (nTilesO x 4).
  int64_t stateSize = 4 + nTilesO * 4;
  double negInf = -std::numeric_limits<double>::infinity();
  SmallVector<Value> inits;
  for (int64_t mt = 0; mt < mTiles; ++mt) {
    inits.append({cf(negInf), cf(negInf), cf(0.0), cf(0.0)});
    for (int64_t i = 0; i < nTilesO * 4; ++i)
      inits.push_back(cf(0.0));
  }
  // Loop bounds as index for scf.for.
  auto toIndex = [&](Value x) {
    return arith::IndexCastOp::create(b, loc, b.getIndexType(), x);
  };
  SmallVector<std::array<Value, 2>> rows(mTiles);
  for (int64_t mt = 0; mt < mTiles; ++mt) {
    Value rowG = add(add(q0, add(c32(mt * 64), warpRow0)), g);
    rows[mt] = {rowG, add(rowG, c32(8))};
  }
  std::optional<double> softcap;
  if (auto attr = op.getSoftcapAttr())
    softcap = attr.getValueAsDouble();

  auto loop = scf::ForOp::create(
      b, loc, toIndex(kvBegin), toIndex(kvEnd),
      arith::ConstantIndexOp::create(b, loc, kBlockKV), inits,
      [&](OpBuilder &, Location, Value ivIndex, ValueRange iters) {
        Value kv0 = arith::IndexCastOp::create(b, loc, i32, ivIndex);
        // Everyone is done with the previous tiles; fetch K and V.
        NVVM::Barrier0Op::create(b, loc);
        copyTile(kBlockKV, sK, kBase, kv0, nk, ks[2], tid);
        NVVM::CpAsyncCommitGroupOp::create(b, loc);
        copyTile(kBlockKV, sV, vBase, kv0, nk, vs[2], tid);
        NVVM::CpAsyncCommitGroupOp::create(b, loc);
        NVVM::CpAsyncWaitGroupOp::create(b, loc, 1);
        NVVM::Barrier0Op::create(b, loc);

        // S = Q K^T: 8 n-tiles of 8 keys, x4 ldmatrix gives two at once, and
        // each K fragment serves every m-tile.
        SmallVector<SmallVector<SmallVector<Value, 4>>> s(mTiles);
        for (auto &tiles : s) {
          tiles.resize(nTilesS);
          for (auto &t : tiles)
            t.assign(4, cf(0.0));
        }
        Value keyInPair = add(andi(lane, 7), shl(shr(lane, 4), 3));
        Value dimHalf = shl(andi(shr(lane, 3), 1), 3);
        for (int64_t kk = 0; kk < kSteps; ++kk) {
          for (int64_t pair = 0; pair < nTilesS / 2; ++pair) {
            Value key = add(c32(pair * 16), keyInPair);
            Value dim = add(c32(kk * 16), dimHalf);
            Value frag = ldmatrix(smemAt(sK, swizzled(key, dim)), false);
            Value r[4];
            for (int64_t i = 0; i < 4; ++i)
              r[i] = LLVM::ExtractValueOp::create(b, loc, frag, i);
            for (int64_t mt = 0; mt < mTiles; ++mt) {
              s[mt][2 * pair] =
                  mma(qFrag[mt][kk], {r[0], r[1]}, s[mt][2 * pair]);
              s[mt][2 * pair + 1] =
                  mma(qFrag[mt][kk], {r[2], r[3]}, s[mt][2 * pair + 1]);
            }
          }
        }

        // Softcap transforms each score (into the log2 domain); otherwise the
        // scale is folded into the exponent below: p = exp2(s * c - m).
        if (softcap) {
          for (auto &tiles : s)
            for (auto &t : tiles)
              for (Value &x : t) {
                // softcap * tanh(s * scale / softcap), then * log2(e).
                Value scaled = fmul(x, cf(op.getScaleOrDefault() / *softcap));
                Value th = approx("tanh.approx.f32", scaled);
                x = fmul(th, cf(*softcap * M_LOG2E));
              }
        }

        // Masks (keys past Nk, causal, window) only on tiles that cross a
        // boundary; the test is uniform across the CTA, so the branch is.
        Value tileEnd = add(kv0, c32(kBlockKV));
        Value needMask = cmp(arith::CmpIPredicate::sgt, tileEnd, nk);
        auto orMask = [&](Value m) {
          needMask = arith::OrIOp::create(b, loc, needMask, m);
        };
        Value lastRow = add(q0, c32(blockQ - 1));
        if (causal) {
          // The CTA's first query row sees keys up to q0 (+ Nk - Nq).
          Value lim =
              causal.getValue() == CausalKind::TopLeft ? q0 : add(q0, diag);
          orMask(cmp(arith::CmpIPredicate::sgt, sub(tileEnd, c32(1)), lim));
        }
        if (window) {
          orMask(cmp(arith::CmpIPredicate::slt, kv0,
                     sub(add(lastRow, diag), c32(window[0]))));
          orMask(cmp(arith::CmpIPredicate::sgt, sub(tileEnd, c32(1)),
                     add(add(q0, diag), c32(window[1]))));
        }
        SmallVector<Type> scoreTypes(mTiles * nTilesS * 4, f32);
        auto masked = scf::IfOp::create(b, loc, scoreTypes, needMask,
                                        /*withElse=*/true);
        {
          OpBuilder::InsertionGuard g(b);
          b.setInsertionPointToStart(masked.thenBlock());
          SmallVector<Value> values;
          for (int64_t mt = 0; mt < mTiles; ++mt) {
            for (int64_t nt = 0; nt < nTilesS; ++nt) {
              for (int64_t e = 0; e < 4; ++e) {
                Value key =
                    add(kv0, add(c32(nt * 8), add(shl(tq, 1), c32(e & 1))));
                Value row = rows[mt][e / 2];
                Value keep = cmp(arith::CmpIPredicate::slt, key, nk);
                auto both = [&](Value m) {
                  keep = arith::AndIOp::create(b, loc, keep, m);
                };
                if (causal) {
                  Value lim = causal.getValue() == CausalKind::TopLeft
                                  ? row
                                  : add(row, diag);
                  both(cmp(arith::CmpIPredicate::sle, key, lim));
                }
                if (window) {
                  Value aligned = add(row, diag);
                  both(cmp(arith::CmpIPredicate::sge, key,
                           sub(aligned, c32(window[0]))));
                  both(cmp(arith::CmpIPredicate::sle, key,
                           add(aligned, c32(window[1]))));
                }
                values.push_back(sel(keep, s[mt][nt][e], cf(negInf)));
              }
            }
          }
          scf::YieldOp::create(b, loc, values);
          b.setInsertionPointToStart(masked.elseBlock());
          SmallVector<Value> plain;
          for (auto &tiles : s)
            for (auto &t : tiles)
              plain.append(t.begin(), t.end());
          scf::YieldOp::create(b, loc, plain);
        }
        // Into the log2 domain (the scale is positive, so it commutes with
        // max).
        Value scoreScale = softcap ? cf(1.0) : scaleLog2;
        SmallVector<Value> next;
        SmallVector<SmallVector<SmallVector<Value, 4>>> acc(mTiles);
        for (int64_t mt = 0; mt < mTiles; ++mt) {
          ValueRange state = iters.slice(mt * stateSize, stateSize);
          Value rowMax[2] = {cf(negInf), cf(negInf)};
          for (int64_t nt = 0; nt < nTilesS; ++nt)
            for (int64_t e = 0; e < 4; ++e) {
              s[mt][nt][e] = masked.getResult((mt * nTilesS + nt) * 4 + e);
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
          for (int64_t r = 0; r < 2; ++r)
            next.push_back(fadd(fmul(state[2 + r], alpha[r]), partial[r]));
          acc[mt].resize(nTilesO);
          for (int64_t nt = 0; nt < nTilesO; ++nt)
            for (int64_t e = 0; e < 4; ++e)
              acc[mt][nt].push_back(fmul(state[4 + nt * 4 + e], alpha[e / 2]));
        }

        // O += P V: P's accumulator layout is the A layout of the next mma;
        // each V fragment serves every m-tile.
        NVVM::CpAsyncWaitGroupOp::create(b, loc, 0);
        NVVM::Barrier0Op::create(b, loc);
        Value keyInStep = add(andi(lane, 7), shl(andi(shr(lane, 3), 1), 3));
        Value dvHalf = shl(shr(lane, 4), 3);
        for (int64_t j = 0; j < kBlockKV / 16; ++j) {
          SmallVector<SmallVector<Value, 4>> a(mTiles);
          for (int64_t mt = 0; mt < mTiles; ++mt) {
            auto &p = s[mt];
            a[mt] = {pack(p[2 * j][0], p[2 * j][1]),
                     pack(p[2 * j][2], p[2 * j][3]),
                     pack(p[2 * j + 1][0], p[2 * j + 1][1]),
                     pack(p[2 * j + 1][2], p[2 * j + 1][3])};
          }
          Value key = add(c32(j * 16), keyInStep);
          for (int64_t pair = 0; pair < nTilesO / 2; ++pair) {
            Value dv = add(c32(pair * 16), dvHalf);
            Value frag = ldmatrix(smemAt(sV, swizzled(key, dv)), true);
            Value r[4];
            for (int64_t i = 0; i < 4; ++i)
              r[i] = LLVM::ExtractValueOp::create(b, loc, frag, i);
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
  Value oBase =
      gep(o, add(mul(ext64(batch), os[0]), mul(ext64(head), os[1])), et);
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

/// Why `op` cannot use this kernel, or an empty string.
std::string unsupportedReason(AttentionOp op) {
  Type et = op.getElementType();
  int64_t d = op.getQuery().getType().getDimSize(3);
  int64_t dv = op.getValue().getType().getDimSize(3);
  if (!et.isF16() && !et.isBF16())
    return "element type must be f16 or bf16 on the GPU";
  if (d != dv || (d != 32 && d != 64 && d != 96 && d != 128))
    return "head dims must be equal and one of 32, 64, 96, 128 on the GPU "
           "(got D = " +
           std::to_string(d) + ", Dv = " + std::to_string(dv) + ")";
  if (op.getBias() || op.getAlibiSlopes() || op.getDropoutSeed() ||
      !op.getScoreMod().empty() || !op.getMaskMod().empty())
    return "bias, ALiBi, dropout, score_mod and mask_mod are not supported "
           "on the GPU yet";
  return "";
}

struct ConvertFAToNVVMPass
    : public fa::impl::ConvertFAToNVVMBase<ConvertFAToNVVMPass> {
  using Base::Base;
  void runOnOperation() override {
    ModuleOp module = getOperation();
    SmallVector<AttentionOp> ops;
    module.walk([&](AttentionOp op) { ops.push_back(op); });
    if (ops.empty())
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
      std::string reason = unsupportedReason(op);
      if (!reason.empty()) {
        op.emitOpError("convert-fa-to-nvvm: ") << reason;
        return signalPassFailure();
      }
      FlashKernelBuilder kernel(b, op.getLoc(), op);
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
    module->setAttr(gpu::GPUDialect::getContainerModuleAttrName(),
                    b.getUnitAttr());
  }
};

} // namespace
