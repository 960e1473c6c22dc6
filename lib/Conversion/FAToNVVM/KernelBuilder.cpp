//===- KernelBuilder.cpp - Shared pieces of FA's NVVM kernels -------------===//

#include "KernelBuilder.h"

#include "fa/Transforms/GpuKernels.h"
#include "mlir/Dialect/LLVMIR/NVVMDialect.h"
#include "mlir/Dialect/Math/IR/Math.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"
#include "mlir/IR/IRMapping.h"
#include "mlir/IR/Matchers.h"
#include "mlir/Interfaces/SideEffectInterfaces.h"
#include "llvm/ADT/TypeSwitch.h"

#include <cmath>
#include <functional>

using namespace mlir;
using namespace mlir::fa;
using namespace mlir::fa::nvvm;

KernelBuilder::KernelBuilder(OpBuilder &b, Location loc, Type et, int64_t d)
    : b(b), loc(loc), et(et), d(d), i32(b.getI32Type()), i64(b.getI64Type()),
      f32(b.getF32Type()),
      gptr(LLVM::LLVMPointerType::get(b.getContext(), kGlobal)),
      sptr(LLVM::LLVMPointerType::get(b.getContext(), kShared)) {}

Value AbiArgs::lookup(const ::fa::runtime::KernelParam &param) const {
  int64_t i = ::fa::runtime::findParam(abi, param);
  return i < 0 ? Value() : entry->getArgument(i);
}

Value AbiArgs::get(const ::fa::runtime::KernelParam &param) const {
  Value arg = lookup(param);
  assert(arg && "the kernel's ABI lacks this parameter");
  return arg;
}

scf::IfOp KernelBuilder::enterIf(Value cond) {
  auto ifOp = scf::IfOp::create(b, loc, cond, /*withElseRegion=*/false);
  b.setInsertionPointToStart(ifOp.thenBlock());
  return ifOp;
}

scf::IfOp KernelBuilder::enterThread(int64_t id, int64_t mask) {
  Value tid = NVVM::ThreadIdXOp::create(b, loc, b.getI32Type());
  if (mask)
    tid = andi(tid, mask);
  return enterIf(cmp(arith::CmpIPredicate::eq, tid, c32(id)));
}

KernelBuilder::ThreadPlace KernelBuilder::getThreadPlace(Value heads,
                                                         Value batches) {
  ThreadPlace t;
  t.tid = NVVM::ThreadIdXOp::create(b, loc, i32);
  t.tile = NVVM::BlockIdXOp::create(b, loc, i32);
  // A folded grid's last row may run past heads x batches: those CTAs
  // return.
  Value linear = linearBlockYZ();
  Value past = cmp(arith::CmpIPredicate::uge, linear, mul(heads, batches));
  Region *region = b.getInsertionBlock()->getParent();
  Block *exit = new Block(), *body = new Block();
  region->push_back(exit);
  region->push_back(body);
  LLVM::CondBrOp::create(b, loc, past, exit, body);
  b.setInsertionPointToStart(exit);
  LLVM::ReturnOp::create(b, loc, ValueRange{});
  b.setInsertionPointToStart(body);
  placeHeads = heads;
  std::tie(t.head, t.batch) = headAndBatchAgain();
  splitThreadId(t);
  return t;
}

Value KernelBuilder::linearBlockYZ() {
  Value y = NVVM::BlockIdYOp::create(b, loc, i32);
  Value z = NVVM::BlockIdZOp::create(b, loc, i32);
  Value rows = NVVM::GridDimYOp::create(b, loc, i32);
  return add(mul(z, rows), y);
}

std::pair<Value, Value> KernelBuilder::headAndBatchAgain(Value heads) {
  if (!heads)
    heads = placeHeads;
  assert(heads && "before the prologue's getThreadPlace");
  // Unfolded (nctaid.y is the heads): ctaid.y and ctaid.z themselves, which
  // ptxas rematerializes where registers are short. Folded: the linear
  // index's quotient and remainder by the heads. nctaid.y goes through
  // `opaque` so that each place keeps its own (uniform) branch and no
  // merged value lives across a loop.
  Value y = NVVM::BlockIdYOp::create(b, loc, i32);
  Value z = NVVM::BlockIdZOp::create(b, loc, i32);
  Value rows = opaque(NVVM::GridDimYOp::create(b, loc, i32));
  Value unfolded = cmp(arith::CmpIPredicate::eq, rows, heads);
  auto place = scf::IfOp::create(b, loc, TypeRange{i32, i32}, unfolded, true);
  {
    OpBuilder::InsertionGuard guard(b);
    b.setInsertionPointToStart(place.thenBlock());
    scf::YieldOp::create(b, loc, ValueRange{y, z});
    b.setInsertionPointToStart(place.elseBlock());
    Value linear = add(mul(z, rows), y);
    scf::YieldOp::create(b, loc,
                         ValueRange{remu(linear, heads), divu(linear, heads)});
  }
  return {place.getResult(0), place.getResult(1)};
}

void KernelBuilder::splitThreadId(ThreadPlace &t) {
  t.warp = shr(t.tid, 5);
  t.lane = andi(t.tid, 31);
  t.g = shr(t.lane, 2);
  t.tq = andi(t.lane, 3);
}

KernelBuilder::ThreadPlace KernelBuilder::rebuildThreadPlace() {
  ThreadPlace t;
  t.tid = opaque(NVVM::ThreadIdXOp::create(b, loc, i32));
  t.tile = opaque(NVVM::BlockIdXOp::create(b, loc, i32));
  std::tie(t.head, t.batch) = headAndBatchAgain();
  splitThreadId(t);
  return t;
}

Value KernelBuilder::lastTileFirst(Value x, bool rebuilt) {
  Value tiles = NVVM::GridDimXOp::create(b, loc, i32);
  if (rebuilt)
    tiles = opaque(tiles);
  return lastTileFirst(x, tiles);
}

std::pair<Value, Value> KernelBuilder::launchIndex(bool rebuilt) {
  auto read = [&](Value x) { return rebuilt ? opaque(x) : x; };
  Value x = read(NVVM::BlockIdXOp::create(b, loc, i32));
  Value tiles = read(NVVM::GridDimXOp::create(b, loc, i32));
  Value y = NVVM::BlockIdYOp::create(b, loc, i32);
  Value z = NVVM::BlockIdZOp::create(b, loc, i32);
  Value rows = read(NVVM::GridDimYOp::create(b, loc, i32));
  // The prologue returned the CTAs past heads x batches.
  return {add(mul(add(mul(z, rows), y), tiles), x), tiles};
}

KernelBuilder::TilePlace
KernelBuilder::batchFastestPlace(Value batches, bool heavyFirst, bool rebuilt) {
  auto [launched, tiles] = launchIndex(rebuilt);
  Value batch = remu(launched, batches);
  Value rest = divu(launched, batches);
  Value tile = remu(rest, tiles);
  if (heavyFirst)
    tile = lastTileFirst(tile, tiles);
  return {tile, divu(rest, tiles), batch};
}

KernelBuilder::TilePlace KernelBuilder::heavyFirstPlace(int64_t group,
                                                        Value heads,
                                                        Value batches,
                                                        bool rebuilt) {
  auto [launched, tiles] = launchIndex(rebuilt);
  Value pairs = mul(heads, batches);
  Value groupCtas = mul(tiles, c32(group));
  Value index = divu(launched, groupCtas);
  Value inGroup = sub(launched, mul(index, groupCtas));
  Value first = mul(index, c32(group));
  Value width = mins(sub(pairs, first), c32(group));
  Value fromLast = divu(inGroup, width);
  Value pair = add(first, sub(inGroup, mul(fromLast, width)));
  return {lastTileFirst(fromLast, tiles), remu(pair, heads), divu(pair, heads)};
}

LLVM::LLVMFuncOp
KernelBuilder::createKernel(StringRef name, const ::fa::runtime::KernelAbi &abi,
                            bool flushDenormals) {
  using ::fa::runtime::MachineType;
  SmallVector<Type> params;
  for (const ::fa::runtime::KernelParam &p : abi.params)
    params.push_back(p.type == MachineType::TensorMap
                         ? LLVM::LLVMPointerType::get(b.getContext())
                     : p.type == MachineType::Ptr ? gptr
                     : p.type == MachineType::I64 ? i64
                     : p.type == MachineType::I32 ? i32
                                                  : f32);
  assert(abi.threads == uint32_t(threads) && "the ABI's threads per CTA");
  LLVM::LLVMFuncOp fn = createFunction(name, params, flushDenormals);
  fn->setAttr(kKernelAbiAttrName, KernelAbiAttr::get(b.getContext(), abi));
  // A tensor map is 128 bytes passed by value (`.param .align 64 .b8
  // [128]`); as a grid constant the kernel addresses the parameter itself,
  // as TMA wants, instead of a local copy.
  for (auto [i, p] : llvm::enumerate(abi.params)) {
    if (p.type != MachineType::TensorMap)
      continue;
    fn.setArgAttr(i, LLVM::LLVMDialect::getByValAttrName(),
                  TypeAttr::get(LLVM::LLVMArrayType::get(
                      b.getI8Type(),
                      ::fa::runtime::getByteSize(MachineType::TensorMap))));
    fn.setArgAttr(i, LLVM::LLVMDialect::getAlignAttrName(),
                  b.getI64IntegerAttr(64));
    fn.setArgAttr(i, NVVM::NVVMDialect::getGridConstantAttrName(),
                  b.getUnitAttr());
  }
  return fn;
}

LLVM::LLVMFuncOp KernelBuilder::createFunction(StringRef name,
                                               ArrayRef<Type> params,
                                               bool flushDenormals) {
  MLIRContext *ctx = b.getContext();
  placeHeads = Value();
  auto fnType =
      LLVM::LLVMFunctionType::get(LLVM::LLVMVoidType::get(ctx), params);
  auto fn = LLVM::LLVMFuncOp::create(b, loc, name, fnType);
  fn->setAttr(gpu::GPUDialect::getKernelFuncAttrName(), b.getUnitAttr());
  fn->setAttr(NVVM::NVVMDialect::getKernelFuncAttrName(), b.getUnitAttr());
  // One CTA of 128 (or 256) threads may use every register: ptxas would
  // otherwise trade registers for occupancy and spill the accumulators.
  fn->setAttr(NVVM::NVVMDialect::getMaxnregAttrName(),
              b.getI32IntegerAttr(255));
  fn->setAttr(NVVM::NVVMDialect::getMaxntidAttrName(),
              b.getDenseI32ArrayAttr({int32_t(threads), 1, 1}));
  // With `flushDenormals`, f32 denormals flush to zero (FlashAttention
  // builds with fast math): exp2 becomes one ex2.approx.ftz instead of a
  // range check and two rescaling multiplies per probability, a fifth of
  // the forward loop's instructions at D = 128. Values below 2^-126 are
  // far under what a row sum or a bf16/f16 output resolves.
  if (flushDenormals)
    fn.setDenormalFpMathF32Attr(b.getStringAttr("preserve-sign"));
  fn.addEntryBlock(b);
  return fn;
}

Value KernelBuilder::toIndex(Value x) {
  return arith::IndexCastOp::create(b, loc, b.getIndexType(), x);
}

Value KernelBuilder::approx(StringRef instruction, Value x) {
  std::string asmText = (instruction + " $0, $1;").str();
  return LLVM::InlineAsmOp::create(b, loc, f32, ValueRange{x}, asmText, "=f,f",
                                   /*has_side_effects=*/false,
                                   /*is_align_stack=*/false,
                                   LLVM::TailCallKind::None,
                                   LLVM::AsmDialectAttr(), ArrayAttr())
      .getResult(0);
}

Value KernelBuilder::exp2Fma(Value x) {
  // 2^x = 2^j 2^f with j = round(x), f in [-1/2, 1/2]: 2^f by a degree-5
  // polynomial (minimax for relative error with 2^0 = 1 exactly: 2^-23.4,
  // 2^-22.5 with f32's roundings), 2^j added to its exponent. Twelve ops on
  // the FMA and ALU pipes where ex2 is one on the MUFU, which runs 16 a
  // clock per SM to their 128.
  static constexpr float kPoly[] = {1.0f,         0.693147f,    0.24022242f,
                                    0.055507336f, 0.009671491f, 0.0013264661f};
  // max.NaN: NaN stays NaN, -inf becomes -127.5, whose j = -128 leaves
  // p's exponent negative, which the integer max below takes to 0.
  Value xc = arith::MaximumFOp::create(b, loc, x, cf(-127.5));
  // j in the low bits of t: 1.5 * 2^23 has no fraction bits left.
  Value t = fadd(xc, cf(12582912.0));
  Value f = fsub(xc, fsub(t, cf(12582912.0)));
  Value p = cf(kPoly[5]);
  for (int k = 4; k >= 0; --k)
    p = math::FmaOp::create(b, loc, p, f, cf(kPoly[k]));
  Value bits = LLVM::AddOp::create(
      b, loc, LLVM::BitcastOp::create(b, loc, i32, p),
      LLVM::ShlOp::create(b, loc, LLVM::BitcastOp::create(b, loc, i32, t),
                          c32(23)));
  return LLVM::BitcastOp::create(b, loc, f32,
                                 arith::MaxSIOp::create(b, loc, bits, c32(0)));
}

Value KernelBuilder::accurateTanh(Value x, double scale, bool rcpOnFma) {
  // tanh.approx.f32 is one instruction but errs by up to 2^-11: a softcapped
  // row's log-sum-exp was 25x further from float64 than a plain f32
  // kernel's (docs/accuracy.md). Instead 1 - 2 / (e^(2x) + 1), from ex2 and
  // rcp (2^-22 each): within 2^-21 of tanh absolutely, which is what a
  // softmax sees of a score (cap * tanh); the relative error of small |x|
  // does not matter there. No |x| and copysign: e^(2x) underflows to 0 for
  // x << 0 (tanh -1) and overflows to inf for x >> 0 (rcp 0, tanh 1), and
  // where e^(2x) < 1 the error of 2 r stays within 2^-21 (one instruction a
  // score fewer). A branch with x - x^3 / 3 near 0 cost 5 instructions a
  // score and 4-5% (H200, D >= 128).
  // x = y * c with a constant c (softcap's dot * (scale / cap)): 2 x
  // log2(e) as one multiply of y.
  Value y = x;
  double factor = 2.0 * M_LOG2E;
  if (auto mul = x.getDefiningOp<arith::MulFOp>()) {
    for (unsigned i = 0; i < 2; ++i) {
      FloatAttr c;
      if (matchPattern(mul->getOperand(i), m_Constant(&c))) {
        y = mul->getOperand(1 - i);
        factor *= c.getValueAsDouble();
        break;
      }
    }
  }
  if (rcpOnFma) {
    // tanh|x| = 2 / (1 + e) - 1 with e = e^(-2|x|) in (0, 1]: 1 / (1 + e)
    // from a quadratic in e (minimax, relative error 2^-6.6) and two Newton
    // steps, 7 FMA-pipe ops. Then scale * tanh x takes the sign of y, or of
    // -y where exactly one of c and the scale is negative. Emulated with
    // ex2's error, within 2^-21.9 of tanh absolutely.
    // (Operands are built one statement at a time: the IR's order is then
    // not the compiler's order of evaluating arguments.)
    Value absY = LLVM::FAbsOp::create(b, loc, y);
    Value e = exp2(fmul(absY, cf(-std::abs(factor))));
    Value negD = arith::NegFOp::create(b, loc, fadd(e, cf(1.0)));
    auto fma = [&](Value x, Value y, double c) {
      Value addend = cf(c);
      return math::FmaOp::create(b, loc, x, y, addend);
    };
    Value c2 = cf(0.3232283);
    Value r = fma(fma(c2, e, -0.80807096), e, 0.9898951);
    for (int step = 0; step < 2; ++step) {
      Value err = fma(negD, r, 1.0);
      r = math::FmaOp::create(b, loc, r, err, r);
    }
    Value twice = cf(2.0 * std::abs(scale));
    Value t = fma(twice, r, -std::abs(scale));
    Value sign =
        (scale < 0) != (factor < 0) ? arith::NegFOp::create(b, loc, y) : y;
    return LLVM::CopySignOp::create(b, loc, t, sign);
  }
  Value e = exp2(fmul(y, cf(factor)));
  Value r = approx("rcp.approx.ftz.f32", fadd(e, cf(1.0)));
  // scale (1 - 2 r) as one fma.
  return math::FmaOp::create(b, loc, cf(-2.0 * scale), r, cf(scale));
}

Value KernelBuilder::opaque(Value x) {
  return LLVM::InlineAsmOp::create(
             b, loc, i32, ValueRange{x}, "mov.b32 $0, $1;", "=r,r",
             /*has_side_effects=*/true,
             /*is_align_stack=*/false, LLVM::TailCallKind::None,
             LLVM::AsmDialectAttr(), ArrayAttr())
      .getResult(0);
}

void KernelBuilder::ptx(StringRef text, StringRef constraints,
                        ValueRange operands) {
  std::string all = constraints.str();
  all += all.empty() ? "~{memory}" : ",~{memory}";
  LLVM::InlineAsmOp::create(b, loc, Type(), operands, text, all,
                            /*has_side_effects=*/true,
                            /*is_align_stack=*/false, LLVM::TailCallKind::None,
                            LLVM::AsmDialectAttr(), ArrayAttr());
}

void KernelBuilder::ptxIf(Value pred, StringRef instruction,
                          StringRef constraints, ValueRange operands) {
  SmallVector<Value> all = {LLVM::ZExtOp::create(b, loc, i32, pred)};
  llvm::append_range(all, operands);
  ptx(("{ .reg .pred p; setp.ne.b32 p, $0, 0; @p " + instruction + " }").str(),
      ("r," + constraints).str(), all);
}

void KernelBuilder::storeIf(Value pred, Value ptr, Value value) {
  bool f = value.getType().isF32();
  ptxIf(pred, f ? "st.global.f32 [$1], $2;" : "st.global.b32 [$1], $2;",
        f ? "l,f" : "l,r", ValueRange{ptr, value});
}

Value KernelBuilder::headBase(Value base, Value batch, Value head,
                              Value batchStride, Value headStride) {
  return gep(base,
             add(mul(ext64(batch), batchStride), mul(ext64(head), headStride)),
             et);
}

Value KernelBuilder::swizzled(Value row, Value col, int64_t width) {
  // XOR within aligned groups of a power-of-two number of chunks (8 at
  // most), so the swizzled chunk stays inside the row (d = 96: 12 chunks).
  if (!width)
    width = d;
  if (wgmmaTiles && width % 64 == 0) {
    Value inGroup = andi(row, 7);
    Value chunk = xori(andi(shr(col, 3), 7), inGroup);
    int64_t groupBytes = slabRows ? 1024 : 8 * width * 2;
    int64_t blockBytes = slabRows ? slabRows * 128 : 1024;
    Value group = mul(shr(row, 3), c32(groupBytes));
    Value block = mul(shr(col, 6), c32(blockBytes));
    return add(add(group, block),
               add(add(shl(inGroup, 7), shl(chunk, 4)), shl(andi(col, 7), 1)));
  }
  int64_t chunks = width / 8, group = 1;
  while (group < 8 && chunks % (group * 2) == 0)
    group *= 2;
  Value chunk = shr(col, 3);
  Value swz = xori(chunk, andi(row, group - 1));
  return add(mul(row, c32(width * 2)), add(shl(swz, 4), shl(andi(col, 7), 1)));
}

Value KernelBuilder::swizzledAt(Value rowLane, int64_t rowConst, Value colLane,
                                int64_t colConst) {
  if (wgmmaTiles && d % 64 == 0)
    return add(swizzled(rowLane, add(colLane, c32(colConst))),
               c32(rowConst * rowStride()));
  int64_t chunks = d / 8, group = 1;
  while (group < 8 && chunks % (group * 2) == 0)
    group *= 2;
  assert(rowConst % 8 == 0 && colConst % 16 == 0 && "unaligned constants");
  // chunk = hi + lo + lane chunk with hi a multiple of the group: the XOR
  // with the row's low bits leaves hi alone.
  int64_t chunk = colConst / 8, lo = chunk % group, hi = chunk - lo;
  Value laneChunk = add(shr(colLane, 3), c32(lo));
  Value swz = xori(laneChunk, andi(rowLane, group - 1));
  Value lanePart = add(mul(rowLane, c32(d * 2)), shl(swz, 4));
  return add(lanePart, c32(rowConst * d * 2 + hi * 16));
}

void KernelBuilder::copyTile(int64_t tileRows, Value tile, Value base,
                             Value row0, Value rows, Value stride, Value tid,
                             bool threadAddresses, int64_t cols) {
  int64_t chunksPerRow = d / 8, chunks = tileRows * chunksPerRow;
  // D = 80: 32 rows are 320 chunks, 2.5 per thread of 128; the last pass
  // is partial.
  int64_t perThread = llvm::divideCeil(chunks, threads);
  bool ragged = chunks % threads != 0;
  bool narrow = cols > 0 && cols < d;
  int64_t rowsPerPass = threads / chunksPerRow;
  if (threadAddresses && !ragged && !narrow && threads % chunksPerRow == 0 &&
      rowsPerPass % 8 == 0) {
    // Each pass of the CTA covers rowsPerPass whole rows, a multiple of 8,
    // so a thread's chunks share their column and swizzle phase: its shared
    // addresses are one offset plus immediates (taken from an opaque tid, so
    // LLVM does not hoist it out of the loop that copies) and its global
    // ones an address plus multiples of a stride.
    Value r = divu(tid, c32(chunksPerRow));
    Value col = shl(remu(tid, c32(chunksPerRow)), 3);
    Value tidAgain = opaque(tid);
    Value dst0 = swizzled(divu(tidAgain, c32(chunksPerRow)),
                          shl(remu(tidAgain, c32(chunksPerRow)), 3));
    Value gRow0 = add(row0, r);
    Value first = gep(base, add(mul(ext64(gRow0), stride), ext64(col)), et);
    // Out-of-range rows read nothing (src-size 0) from row 0.
    Value inBounds = gep(base, ext64(col), et);
    Value step = mul(stride, c64(rowsPerPass));
    for (int64_t i = 0; i < perThread; ++i) {
      Value valid = cmp(arith::CmpIPredicate::slt,
                        add(gRow0, c32(i * rowsPerPass)), rows);
      Value src = i == 0 ? first : gep(first, mul(step, c64(i)), et);
      Value dst = smemAt(tile, add(dst0, c32(i * rowsPerPass * rowStride())));
      NVVM::CpAsyncOp::create(b, loc, dst, sel(valid, src, inBounds),
                              /*size=*/16u, NVVM::LoadCacheModifierKind::CG,
                              sel(valid, c32(16), c32(0)));
    }
    return;
  }
  for (int64_t i = 0; i < perThread; ++i) {
    Value chunkId = add(tid, c32(i * threads));
    OpBuilder::InsertionGuard guard(b);
    if ((i + 1) * threads > chunks)
      enterIf(cmp(arith::CmpIPredicate::slt, chunkId, c32(chunks)));
    Value r = divu(chunkId, c32(chunksPerRow));
    Value c = remu(chunkId, c32(chunksPerRow));
    Value gRow = add(row0, r);
    Value valid = cmp(arith::CmpIPredicate::slt, gRow, rows);
    // Out-of-range rows (and columns) read nothing (src-size 0) from row 0
    // (column 0).
    if (narrow)
      valid = arith::AndIOp::create(
          b, loc, valid, cmp(arith::CmpIPredicate::slt, c, c32(cols / 8)));
    Value srcRow = sel(valid, gRow, c32(0));
    Value offset = add(mul(ext64(srcRow), stride),
                       ext64(shl(narrow ? sel(valid, c, c32(0)) : c, 3)));
    Value src = gep(base, offset, et);
    Value dst = smemAt(tile, swizzled(r, shl(c, 3)));
    Value size = sel(valid, c32(16), c32(0));
    NVVM::CpAsyncOp::create(b, loc, dst, src, /*size=*/16u,
                            NVVM::LoadCacheModifierKind::CG, size);
  }
}

Value KernelBuilder::ldmatrix(Value ptr, bool transpose) {
  auto type =
      LLVM::LLVMStructType::getLiteral(b.getContext(), {i32, i32, i32, i32});
  return NVVM::LdMatrixOp::create(
      b, loc, type, ptr, /*num=*/4,
      transpose ? NVVM::MMALayout::col : NVVM::MMALayout::row,
      NVVM::LdStMatrixShapeAttr::get(b.getContext(), 8, 8),
      NVVM::LdStMatrixEltType::B16);
}

std::array<Value, 4> KernelBuilder::ldmatrix4(Value ptr, bool transpose) {
  Value frag = ldmatrix(ptr, transpose);
  std::array<Value, 4> r;
  for (int64_t i = 0; i < 4; ++i)
    r[i] = LLVM::ExtractValueOp::create(b, loc, frag, i);
  return r;
}

SmallVector<Value, 4> KernelBuilder::mma(ArrayRef<Value> a,
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

Value KernelBuilder::pack(Value lo, Value hi) {
  auto v2f32 = VectorType::get({2}, f32);
  Value v = LLVM::PoisonOp::create(b, loc, v2f32);
  v = LLVM::InsertElementOp::create(b, loc, v, lo, c32(0));
  v = LLVM::InsertElementOp::create(b, loc, v, hi, c32(1));
  Value narrow = LLVM::FPTruncOp::create(b, loc, VectorType::get({2}, et), v);
  return LLVM::BitcastOp::create(b, loc, i32, narrow);
}

std::pair<Value, Value> KernelBuilder::round(Value lo, Value hi) {
  if (!et.isBF16()) {
    auto narrow = [&](Value x) -> Value {
      return LLVM::FPExtOp::create(b, loc, f32,
                                   LLVM::FPTruncOp::create(b, loc, et, x));
    };
    return {narrow(lo), narrow(hi)};
  }
  // bf16 is f32's upper half: add half its last place and clear the lower
  // half, two integer ops. Ties go away from zero where cvt.rn goes to even
  // (one value in 2^16 differs by its last place). A cvt here, before the
  // wait on P V in the rotated loop, would make ptxas serialize the wgmmas
  // (C7513: it takes the conversion's result for a wgmma input).
  auto one = [&](Value x) -> Value {
    Value bits = LLVM::BitcastOp::create(b, loc, i32, x);
    Value up = LLVM::AddOp::create(b, loc, bits, c32(0x8000));
    return LLVM::BitcastOp::create(
        b, loc, f32,
        LLVM::AndOp::create(b, loc, up, c32(int32_t(0xffff0000u))));
  };
  return {one(lo), one(hi)};
}

SmallVector<Value, 4>
KernelBuilder::accToA(ArrayRef<SmallVector<Value, 4>> tiles, int64_t j) {
  return {pack(tiles[2 * j][0], tiles[2 * j][1]),
          pack(tiles[2 * j][2], tiles[2 * j][3]),
          pack(tiles[2 * j + 1][0], tiles[2 * j + 1][1]),
          pack(tiles[2 * j + 1][2], tiles[2 * j + 1][3])};
}

Value KernelBuilder::quadReduce(Value v, bool isMax) {
  for (int64_t offset : {1, 2}) {
    Value other =
        NVVM::ShflOp::create(b, loc, f32, c32(-1), v, c32(offset), c32(0x1f),
                             NVVM::ShflKind::bfly, UnitAttr());
    v = isMax ? fmax(v, other) : fadd(v, other);
  }
  return v;
}

KernelBuilder::Tiles KernelBuilder::zeroTiles(int64_t n) {
  Tiles tiles(n);
  for (auto &t : tiles)
    t.assign(4, cf(0.0));
  return tiles;
}

SmallVector<Value, 4> KernelBuilder::loadA(Value tile, Value row0, int64_t kk,
                                           Value lane) {
  Value at = swizzledAt(add(row0, aRow(lane)), 0, aCol(lane), kk * 16);
  auto r = ldmatrix4(smemAt(tile, at), false);
  return {r.begin(), r.end()};
}

KernelBuilder::AOperands KernelBuilder::loadAOperands(ArrayRef<Value> tiles,
                                                      Value row0,
                                                      int64_t kSteps,
                                                      Value lane, bool hold) {
  AOperands operands{this, SmallVector<Value, 2>(tiles), row0, lane, {}};
  if (hold)
    for (int64_t kk = 0; kk < kSteps; ++kk) {
      auto &step = operands.held.emplace_back();
      for (Value tile : tiles)
        step.push_back(loadA(tile, row0, kk, lane));
    }
  return operands;
}

void KernelBuilder::mmaABt(Tiles &c, AFragments a, int64_t kSteps, Value bTile,
                           Value lane) {
  Value rowInPair = bRow(lane), colHalf = bCol(lane);
  for (int64_t kk = 0; kk < kSteps; ++kk) {
    SmallVector<Value, 4> frag = a(kk);
    for (int64_t pair = 0; pair < int64_t(c.size()) / 2; ++pair) {
      Value at = swizzledAt(rowInPair, pair * 16, colHalf, kk * 16);
      auto r = ldmatrix4(smemAt(bTile, at), false);
      c[2 * pair] = mma(frag, {r[0], r[1]}, c[2 * pair]);
      c[2 * pair + 1] = mma(frag, {r[2], r[3]}, c[2 * pair + 1]);
    }
  }
}

void KernelBuilder::mmaAB(Tiles &c, AFragments a, int64_t kSteps, Value bTile,
                          Value lane, int64_t col0) {
  Value rowInStep = aRow(lane), colHalf = aCol(lane);
  for (int64_t kk = 0; kk < kSteps; ++kk) {
    SmallVector<Value, 4> frag = a(kk);
    for (int64_t pair = 0; pair < int64_t(c.size()) / 2; ++pair) {
      Value at = swizzledAt(rowInStep, kk * 16, colHalf, col0 + pair * 16);
      auto r = ldmatrix4(smemAt(bTile, at), true);
      c[2 * pair] = mma(frag, {r[0], r[1]}, c[2 * pair]);
      c[2 * pair + 1] = mma(frag, {r[2], r[3]}, c[2 * pair + 1]);
    }
  }
}

Value KernelBuilder::wgmmaDesc(Value tile, Value offset, int64_t lbo,
                               int64_t sbo) {
  Value address = LLVM::PtrToIntOp::create(b, loc, i32, smemAt(tile, offset));
  Value start = ext64(shr(address, 4));
  // Bits 0-13 start >> 4, 16-29 lbo >> 4, 32-45 sbo >> 4, 62-63 swizzle
  // (1: 128 bytes).
  int64_t fields = ((lbo >> 4) << 16) | ((sbo >> 4) << 32) | (int64_t(1) << 62);
  return arith::OrIOp::create(b, loc, start, c64(fields));
}

Value KernelBuilder::wgmmaDescAt(Value desc, int64_t bytes) {
  assert(bytes % 16 == 0 && "descriptors address 16-byte units");
  return bytes ? arith::AddIOp::create(b, loc, desc, c64(bytes >> 4)) : desc;
}

void KernelBuilder::wgmma(Tiles &c, ArrayRef<Value> a, Value aDesc, Value bDesc,
                          bool transA, bool transB, bool accumulate,
                          const Tiles *reuse) {
  int64_t n = c.size() * 8, k = c.size() * 4;
  std::string type = et.isBF16() ? "bf16" : "f16";
  // scale-d: D = A B + (p ? D : 0).
  std::string text = std::string("{ .reg .pred p; setp.ne.b32 p, ") +
                     (accumulate ? "1" : "0") +
                     ", 0; "
                     "wgmma.mma_async.sync.aligned.m64n" +
                     std::to_string(n) + "k16.f32." + type + "." + type + " {";
  std::string constraints;
  SmallVector<Value> operands;
  for (int64_t i = 0; i < k; ++i) {
    text += (i ? ", $" : "$") + std::to_string(i);
    constraints += (i ? ",=f" : "=f");
  }
  int64_t next = k;
  const Tiles *tied = accumulate ? &c : reuse;
  assert((!tied || int64_t(tied->size()) * 4 == k) && "accumulator shape");
  if (tied)
    for (int64_t i = 0; i < k; ++i, ++next) {
      constraints += "," + std::to_string(i);
      operands.push_back((*tied)[i / 4][i % 4]);
    }
  auto operand = [&](Value v, StringRef constraint) {
    constraints += ("," + constraint).str();
    operands.push_back(v);
    return "$" + std::to_string(next++);
  };
  text += "}, ";
  if (a.empty()) {
    text += operand(aDesc, "l");
  } else {
    text += "{";
    for (auto [i, v] : llvm::enumerate(a))
      text += (i ? ", " : "") + operand(v, "r");
    text += "}";
  }
  text += ", " + operand(bDesc, "l") + ", p, 1, 1, ";
  if (a.empty())
    text += transA ? "1, " : "0, ";
  text += transB ? "1; }" : "0; }";
  auto type4 = LLVM::LLVMStructType::getLiteral(b.getContext(),
                                                SmallVector<Type>(k, f32));
  Value res = LLVM::InlineAsmOp::create(
                  b, loc, type4, operands, text, constraints,
                  /*has_side_effects=*/true, /*is_align_stack=*/false,
                  LLVM::TailCallKind::None, LLVM::AsmDialectAttr(), ArrayAttr())
                  .getResult(0);
  for (int64_t i = 0; i < k; ++i)
    c[i / 4][i % 4] = LLVM::ExtractValueOp::create(b, loc, res, i);
}

void KernelBuilder::wgmmaFence() { ptx("wgmma.fence.sync.aligned;"); }

void KernelBuilder::pinBefore(MutableArrayRef<Value> values) {
  if (values.empty())
    return;
  Type type = values.front().getType();
  std::string constraints;
  for (size_t i = 0; i < values.size(); ++i)
    constraints += (i ? "," : "") + std::string(type == f32 ? "=f" : "=r");
  for (size_t i = 0; i < values.size(); ++i)
    constraints += "," + std::to_string(i);
  auto structType = LLVM::LLVMStructType::getLiteral(
      b.getContext(), SmallVector<Type>(values.size(), type));
  Value res = LLVM::InlineAsmOp::create(
                  b, loc, structType, ValueRange(values), "", constraints,
                  /*has_side_effects=*/true, /*is_align_stack=*/false,
                  LLVM::TailCallKind::None, LLVM::AsmDialectAttr(), ArrayAttr())
                  .getResult(0);
  for (size_t i = 0; i < values.size(); ++i)
    values[i] = LLVM::ExtractValueOp::create(b, loc, res, i);
}

void KernelBuilder::wgmmaCommit() { ptx("wgmma.commit_group.sync.aligned;"); }

void KernelBuilder::wgmmaWait(int64_t pending, MutableArrayRef<Value> values) {
  ptx("wgmma.wait_group.sync.aligned " + std::to_string(pending) + ";");
  pinBefore(values);
}

void KernelBuilder::wgmmaCommitAndWait(int64_t pending,
                                       ArrayRef<Tiles *> accs) {
  wgmmaCommit();
  wgmmaWait(pending, {});
  for (Tiles *acc : accs) {
    SmallVector<Value> flat;
    for (auto &tile : *acc)
      flat.append(tile.begin(), tile.end());
    pinBefore(flat);
    for (auto [i, tile] : llvm::enumerate(*acc))
      std::copy_n(flat.begin() + 4 * i, 4, tile.begin());
  }
}

Value KernelBuilder::keepKey(const Masks &masks, Value row, Value key, Value nk,
                             Value diag, bool checkBound) {
  Value keep = MaskBuilder(b, loc, masks, i32)
                   .keep(row, key, checkBound ? nk : Value(), diag);
  return keep ? keep : arith::ConstantIntOp::create(b, loc, 1, 1).getResult();
}

KernelBuilder::KeyRange KernelBuilder::visibleKeys(const Masks &masks, Value q0,
                                                   int64_t blockQ, Value nq,
                                                   Value nk, int64_t blockKV) {
  Value qEnd = add(q0, c32(blockQ));
  Value diag = sub(nk, nq);
  RowRange keys =
      MaskBuilder(b, loc, masks, i32).visibleKeys(q0, qEnd, nk, diag, blockKV);
  return {keys.begin, keys.end, diag};
}

Value KernelBuilder::tileNeedsMask(const Masks &masks, Value q0, int64_t blockQ,
                                   Value kv0, int64_t blockKV, Value nk,
                                   Value diag) {
  Value need = MaskBuilder(b, loc, masks, i32)
                   .tileNeedsMask(q0, blockQ, kv0, blockKV, nk, diag);
  return need ? need : arith::ConstantIntOp::create(b, loc, 0, 1).getResult();
}

Value KernelBuilder::keepScored(const Masks &masks, Region *maskMod, Value idxB,
                                Value idxH, Value row, Value key, Value nk,
                                Value diag, bool checkBound) {
  Value keep = keepKey(masks, row, key, nk, diag, checkBound);
  if (maskMod)
    keep = arith::AndIOp::create(
        b, loc, keep,
        inlineRegion(*maskMod, {idxB, idxH, toIndex(row), toIndex(key)}));
  return keep;
}

void KernelBuilder::appendCaptureParams(
    std::vector<::fa::runtime::KernelParam> &abi, TypeRange captures) {
  using ::fa::runtime::KernelParam;
  for (auto [i, t] : llvm::enumerate(captures)) {
    abi.push_back(KernelParam::capturePointer(i));
    for (int64_t dim = 0; dim < cast<ShapedType>(t).getRank(); ++dim)
      abi.push_back(KernelParam::captureStride(i, dim));
  }
}

void KernelBuilder::bindCaptures(const AbiArgs &args, TypeRange captureTypes,
                                 Value nq, Value nk) {
  using ::fa::runtime::KernelParam;
  // One builder may build several kernels: this one's arguments only.
  captures.clear();
  lastRow = lastKey = Value();
  if (captureTypes.empty())
    return;
  for (auto [i, t] : llvm::enumerate(captureTypes)) {
    auto type = cast<ShapedType>(t);
    Capture c{
        args.get(KernelParam::capturePointer(i)), type.getElementType(), {}};
    for (int64_t dim = 0; dim < type.getRank(); ++dim)
      c.strides.push_back(args.get(KernelParam::captureStride(i, dim)));
    captures.push_back(std::move(c));
  }
  lastRow = toIndex(maxs(sub(nq, c32(1)), c32(0)));
  lastKey = toIndex(maxs(sub(nk, c32(1)), c32(0)));
}

PositionTerms::PositionTerms(Block &body, Value i, Value j, ValueRange uniform)
    : body(body) {
  terms[i] = {1, 0};
  terms[j] = {0, 1};
  for (Value v : uniform)
    terms[v] = {0, 0};
  for (Operation &op : body.without_terminator())
    if (op.getNumResults() == 1 &&
        isa<IntegerType, IndexType>(op.getResult(0).getType()))
      if (std::optional<Linear> t = classify(op))
        terms[op.getResult(0)] = *t;
}

std::optional<PositionTerms::Linear> PositionTerms::lookup(Value v) const {
  if (auto it = terms.find(v); it != terms.end())
    return it->second;
  if (v.getParentBlock() != &body && isa<IntegerType, IndexType>(v.getType()))
    return Linear{0, 0};
  return std::nullopt;
}

std::optional<PositionTerms::Linear>
PositionTerms::classify(Operation &op) const {
  auto operand = [&](unsigned n) { return lookup(op.getOperand(n)); };
  if (isa<arith::AddIOp, arith::SubIOp>(op)) {
    std::optional<Linear> x = operand(0), y = operand(1);
    if (!x || !y)
      return std::nullopt;
    int64_t sign = isa<arith::AddIOp>(op) ? 1 : -1;
    return Linear{x->first + sign * y->first, x->second + sign * y->second};
  }
  if (isa<arith::MulIOp>(op)) {
    for (unsigned n : {0u, 1u}) {
      APInt factor;
      std::optional<Linear> x = operand(1 - n);
      if (x && matchPattern(op.getOperand(n), m_ConstantInt(&factor)) &&
          factor.getSignificantBits() <= 17) {
        int64_t c = factor.getSExtValue();
        return Linear{x->first * c, x->second * c};
      }
    }
  }
  Type type = op.getResult(0).getType();
  if (isa<arith::IndexCastOp, arith::ExtSIOp>(op) &&
      (type.isIndex() || type.getIntOrFloatBitWidth() >= 32))
    return operand(0);
  // Anything else is a term only where it moves with neither position.
  if (op.getNumRegions() || !isMemoryEffectFree(&op))
    return std::nullopt;
  for (Value v : op.getOperands())
    if (lookup(v) != Linear{0, 0})
      return std::nullopt;
  return Linear{0, 0};
}

Value PositionConversions::lookup(OpBuilder &b, Location loc, Operation *op,
                                  int64_t di, int64_t dj) const {
  auto it = at.find(op);
  if (it == at.end())
    return Value();
  auto [value, term] = it->second;
  int64_t offset = term.first * di + term.second * dj;
  if (offset == 0)
    return value;
  return arith::AddFOp::create(
      b, loc, value,
      arith::ConstantOp::create(b, loc,
                                b.getFloatAttr(value.getType(), offset)));
}

PositionConversions
KernelBuilder::convertPositionTerms(Block &body, const PositionTerms &terms,
                                    IRMapping &first) {
  std::function<void(Value)> cloneTerm = [&](Value v) {
    Operation *def = v.getDefiningOp();
    if (first.contains(v) || !def || def->getBlock() != &body)
      return;
    SmallVector<Value> operands;
    for (Value operand : def->getOperands()) {
      cloneTerm(operand);
      operands.push_back(first.lookupOrDefault(operand));
    }
    if (Value r = lowerScalarMath(def, operands))
      first.map(v, r);
    else
      b.clone(*def, first);
  };
  PositionConversions converted;
  for (Operation &inner : body.without_terminator()) {
    auto toFloat = dyn_cast<arith::SIToFPOp>(inner);
    if (!toFloat || !(toFloat.getType().isF32() || toFloat.getType().isF64()))
      continue;
    std::optional<PositionTerms::Linear> term = terms.lookup(toFloat.getIn());
    if (!term || *term == PositionTerms::Linear{0, 0})
      continue;
    cloneTerm(toFloat.getIn());
    converted.at[toFloat] = {b.clone(inner, first)->getResult(0), *term};
  }
  return converted;
}

SmallVector<Value, 2>
KernelBuilder::inlineRegionValues(Region &region, ValueRange args,
                                  const PositionConversions *terms, int64_t di,
                                  int64_t dj) {
  Block &block = region.front();
  IRMapping map;
  SmallVector<Value> given(args);
  if (!captures.empty()) {
    // Ragged rows and keys (past Nq, Nk) read the last one's captures.
    assert(given.size() >= 2 && "regions end with (q_idx, kv_idx)");
    Value &row = given[given.size() - 2], &key = given.back();
    row = arith::MinSIOp::create(b, loc, row, lastRow);
    key = arith::MinSIOp::create(b, loc, key, lastKey);
  }
  for (auto [arg, value] : llvm::zip(block.getArguments(), given))
    map.map(arg, value);
  for (Operation &inner : block.without_terminator()) {
    if (terms)
      if (Value v = terms->lookup(b, loc, &inner, di, dj)) {
        map.map(inner.getResult(0), v);
        continue;
      }
    auto x = [&](unsigned i) { return map.lookup(inner.getOperand(i)); };
    // math ops as PTX instructions: NVPTX has no libcalls for most of them.
    Value r =
        llvm::TypeSwitch<Operation *, Value>(&inner)
            .Case([&](tensor::ExtractOp extract) {
              // A capture's element: base + sum(index * stride), read-only
              // for the kernel's lifetime (ld.global.nc).
              auto arg = cast<BlockArgument>(extract.getTensor());
              const Capture &c = captures[arg.getArgNumber() - given.size()];
              Value offset;
              for (auto [i, stride] : llvm::enumerate(c.strides)) {
                Value index = arith::IndexCastOp::create(b, loc, i64, x(1 + i));
                Value term = arith::MulIOp::create(b, loc, index, stride);
                offset =
                    offset ? arith::AddIOp::create(b, loc, offset, term) : term;
              }
              return LLVM::LoadOp::create(b, loc, c.elementType,
                                          gep(c.base, offset, c.elementType),
                                          /*alignment=*/0, /*isVolatile=*/false,
                                          /*isNonTemporal=*/false,
                                          /*isInvariant=*/true)
                  .getResult();
            })
            .Default([&](Operation *op) {
              SmallVector<Value> operands;
              for (Value operand : op->getOperands())
                operands.push_back(map.lookupOrDefault(operand));
              return lowerScalarMath(op, operands);
            });
    if (r)
      map.map(inner.getResult(0), r);
    else
      b.clone(inner, map);
  }
  SmallVector<Value, 2> values;
  for (Value v : block.getTerminator()->getOperands())
    values.push_back(map.lookup(v));
  return values;
}

Value KernelBuilder::lowerScalarMath(Operation *op, ValueRange x) {
  // math ops as PTX instructions: NVPTX has no libcalls for most of them.
  return llvm::TypeSwitch<Operation *, Value>(op)
      .Case([&](math::TanhOp) { return accurateTanh(x[0]); })
      .Case([&](math::ExpOp) { return exp2(fmul(x[0], cf(M_LOG2E))); })
      .Case([&](math::Exp2Op) { return exp2(x[0]); })
      .Case([&](math::LogOp) {
        return fmul(approx("lg2.approx.f32", x[0]), cf(M_LN2));
      })
      .Case([&](math::Log2Op) { return approx("lg2.approx.f32", x[0]); })
      .Case([&](math::SinOp) { return approx("sin.approx.f32", x[0]); })
      .Case([&](math::CosOp) { return approx("cos.approx.f32", x[0]); })
      .Case([&](math::RsqrtOp) { return approx("rsqrt.approx.f32", x[0]); })
      .Case([&](math::SqrtOp) {
        return LLVM::SqrtOp::create(b, loc, x[0]).getResult();
      })
      .Case([&](math::AbsFOp) {
        return LLVM::FAbsOp::create(b, loc, x[0]).getResult();
      })
      .Case([&](math::FloorOp) {
        return LLVM::FFloorOp::create(b, loc, x[0]).getResult();
      })
      .Case([&](math::CeilOp) {
        return LLVM::FCeilOp::create(b, loc, x[0]).getResult();
      })
      .Case([&](math::FmaOp) {
        return LLVM::FMAOp::create(b, loc, x[0], x[1], x[2]).getResult();
      })
      .Default([&](Operation *) { return Value(); });
}
