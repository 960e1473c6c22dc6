//===- KernelBuilder.h - Shared pieces of FA's NVVM kernels -----*- C++ -*-===//
//
// The building blocks the forward and backward kernels share: constants and
// i32 arithmetic, cp.async into XOR-swizzled shared tiles, ldmatrix(.trans),
// mma.sync m16n8k16 (f16/bf16 -> f32), accumulator -> A-fragment repacking,
// quad reductions, exp2 and the causal and window masks on i32 (Masks.h).
//
// Fragment layouts (PTX ISA, mma.m16n8k16): lane = 4 * g + tq holds the
// accumulator elements (row g, cols 2 tq, 2 tq + 1) and (row g + 8, same
// cols) of each 16 x 8 tile, which is also the A layout of the next mma's
// 16 x 16 k-step made of two such tiles, so a result feeds the next product
// without going through shared memory.
//
//===----------------------------------------------------------------------===//

#ifndef FA_LIB_CONVERSION_FATONVVM_KERNELBUILDER_H
#define FA_LIB_CONVERSION_FATONVVM_KERNELBUILDER_H

#include "fa/Dialect/FA/IR/FAOps.h"
#include "fa/Runtime/KernelAbi.h"
#include "fa/Transforms/GpuKernels.h"
#include "fa/Transforms/Masks.h"
#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/LLVMIR/LLVMDialect.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/IR/Builders.h"
#include "mlir/IR/IRMapping.h"

#include <array>
#include <optional>
#include <string>

namespace mlir::fa::nvvm {

/// 4 warps per CTA. (8 warps sharing a tile halve the L2 traffic but measured
/// 10-30% slower on H100 for the forward: occupancy drops to one CTA per SM
/// at ~210 registers. The backward's dK/dV kernel runs 8 with atomic dQ,
/// where they halve the accumulator's reductions: KernelBuilder::threads.)
constexpr int64_t kWarps = 4;
constexpr int64_t kThreads = 32 * kWarps;
/// Rows of the K/V tiles the forward and dQ kernels loop over.
constexpr int64_t kBlockKV = 64;
constexpr unsigned kGlobal = 1, kShared = 3;

/// The arguments of a kernel created from its ABI (KernelBuilder::
/// createKernel), found by what they are.
class AbiArgs {
public:
  AbiArgs(const ::fa::runtime::KernelAbi &abi, Block *entry)
      : abi(abi), entry(entry) {}
  /// The argument that is `param`'s value (its type aside); it must exist.
  Value get(const ::fa::runtime::KernelParam &param) const;
  /// The argument that is `param`'s value, or null.
  Value lookup(const ::fa::runtime::KernelParam &param) const;
  Value pointer(::fa::runtime::AbiTensor tensor) const {
    return get(::fa::runtime::KernelParam::pointer(tensor));
  }
  Value stride(::fa::runtime::AbiTensor tensor, unsigned dim) const {
    return get(::fa::runtime::KernelParam::stride(tensor, dim));
  }
  Value size(::fa::runtime::AbiSize size) const {
    return get(::fa::runtime::KernelParam::ofSize(size));
  }
  Value scalar(::fa::runtime::AbiScalar scalar) const {
    return get(::fa::runtime::KernelParam::ofScalar(
        scalar, ::fa::runtime::MachineType::F32));
  }
  Block *getEntry() const { return entry; }

private:
  const ::fa::runtime::KernelAbi &abi;
  Block *entry;
};

/// The integer values of a block run once per element (fagpu.map's body, a
/// score_mod region) that are a i + b j + c, with i and j the element's
/// positions and c the same for every element (constants, values from
/// outside the block, the block's `uniform` arguments, pure functions of
/// them): (a, b) for each. Sums, differences, products by small constants
/// and widening casts of such values are such values.
class PositionTerms {
public:
  using Linear = std::pair<int64_t, int64_t>;
  PositionTerms(Block &body, Value i, Value j, ValueRange uniform = {});
  std::optional<Linear> lookup(Value v) const;

private:
  std::optional<Linear> classify(Operation &op) const;

  Block &body;
  DenseMap<Value, Linear> terms;
};

/// A block's position terms converted to float once, at one element
/// (KernelBuilder::convertPositionTerms): each other element's conversion
/// is that value plus a di + b dj, an add on the FMA pipe instead of a
/// conversion per element (I2F issues at the rate of exp2's MUFU, beside
/// it). Exact while the terms stay below 2^24; above, one rounding more of
/// a value f32 cannot hold exactly anyway.
struct PositionConversions {
  DenseMap<Operation *, std::pair<Value, PositionTerms::Linear>> at;
  /// The conversion `op` at (di, dj) from the first element; null where
  /// `op` is not one.
  Value lookup(OpBuilder &b, Location loc, Operation *op, int64_t di,
               int64_t dj) const;
};

/// Emits IR for one kernel. Values named *32 are i32, the rest follow their
/// type.
class KernelBuilder {
public:
  /// `et` is the element type of the tiles (f16 or bf16), `d` their width.
  KernelBuilder(OpBuilder &b, Location loc, Type et, int64_t d);

  /// `llvm.func @name` at the insertion point (a gpu.module) with a
  /// parameter per entry of `abi.params` (ptr: !llvm.ptr<1>, i32, i64,
  /// f32), marked as a kernel of `threads` threads that may use every
  /// register, with its entry block; f32 denormals flushed with
  /// `flushDenormals`. The ABI goes on the function as `fa.kernel_abi`.
  LLVM::LLVMFuncOp createKernel(StringRef name,
                                const ::fa::runtime::KernelAbi &abi,
                                bool flushDenormals = false);

  /// Where the calling thread is (all i32): its id, its block's tile (x),
  /// head and batch, its warp and lane, and the lane's row group (lane / 4)
  /// and quad position (lane % 4) in mma.sync fragments.
  struct ThreadPlace {
    Value tid, tile, head, batch, warp, lane, g, tq;
  };
  /// The place of the calling thread in the kernel's prologue, where its
  /// grid's y and z hold `heads` x `batches` (KernelAbi.h): unfolded
  /// (nctaid.y == heads), head = ctaid.y and batch = ctaid.z; folded (the
  /// launch does that only past CUDA's 65535), linear = ctaid.z * nctaid.y
  /// + ctaid.y, head = linear % heads, batch = linear / heads. CTAs with
  /// linear >= heads * batches (the last row of a folded grid) return here:
  /// the insertion point moves into a new block that only the others reach.
  ThreadPlace getThreadPlace(Value heads, Value batches);
  /// The CTA's linear index over grid y and z: ctaid.z * nctaid.y + ctaid.y
  /// (KernelAbi.h, "The grid").
  Value linearBlockYZ();
  /// The place again after a loop: the thread and tile ids pass through
  /// `opaque`, so code after the loop recomputes what it needs from them
  /// instead of keeping the prologue's values in registers across it; head
  /// and batch are read again (headAndBatchAgain).
  ThreadPlace rebuildThreadPlace();
  /// Sets t's warp, lane and the lane's mma.sync row group and quad
  /// position from t.tid.
  void splitThreadId(ThreadPlace &t);
  /// The head and batch of getThreadPlace, computed again (a uniform branch
  /// of its own), for code inside or after a loop: unfolded they are
  /// ctaid.y and ctaid.z, which ptxas rematerializes rather than keep in
  /// registers across the loop, as it would the prologue's values. `heads`
  /// is getThreadPlace's, by default the one this builder was given.
  std::pair<Value, Value> headAndBatchAgain(Value heads = {});
  /// The tile of the CTA at `ctaid.x = x` when the grid's tiles are
  /// launched last one first: under a causal mask the last Q tiles have the
  /// most keys to visit, and starting them first leaves light CTAs, not
  /// heavy ones, for the grid's tail. `rebuilt` as for getThreadPlace.
  Value lastTileFirst(Value x, bool rebuilt = false);
  /// Tile `x` of `tiles` counted from the last one (tiles - 1 - x).
  Value lastTileFirst(Value x, Value tiles) {
    return sub(sub(tiles, c32(1)), x);
  }
  /// The CTA's (tile, head, batch), heaviest tiles first across `group`
  /// (head, batch) pairs: the launch order (ctaid.x fastest, then the heads
  /// and batches) read as groups of `group` pairs, each group's tiles last
  /// one first and its heads fastest (fagpu.block_coords's head_group).
  /// `rebuilt` as for rebuildThreadPlace.
  struct TilePlace {
    Value tile, head, batch;
  };
  TilePlace heavyFirstPlace(int64_t group, Value heads, Value batches,
                            bool rebuilt);
  /// The CTA's (tile, head, batch) with the launch order read batch
  /// fastest, then the tile (last one first with `heavyFirst`), then the
  /// head (fagpu.block_coords's batch_fastest). `rebuilt` as above.
  TilePlace batchFastestPlace(Value batches, bool heavyFirst, bool rebuilt);
  /// The CTA's index in the launch order (ctaid.x fastest, then y, z) and
  /// the tiles a row (nctaid.x). `rebuilt` as above.
  std::pair<Value, Value> launchIndex(bool rebuilt);

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
  /// Code only some threads run: `if (cond)` without results or else, the
  /// insertion point moved into its then block. Callers that go on after
  /// it restore the insertion point (OpBuilder::InsertionGuard).
  scf::IfOp enterIf(Value cond);
  /// enterIf for the thread whose id (threadIdx.x, or its bits under
  /// `mask` when non-zero) is `id`: the one thread of a role, or with
  /// mask 127 the first of each warpgroup.
  scf::IfOp enterThread(int64_t id, int64_t mask = 0);
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
  /// i32 -> index, for scf.for bounds.
  Value toIndex(Value x);

  /// A one-operand f32 PTX instruction (lg2, tanh have no libcall on NVPTX).
  Value approx(StringRef instruction, Value x);
  /// `scale` * tanh(x) in f32, tanh within 2^-21 absolutely (PTX's
  /// tanh.approx is off by up to 2^-11): softcap's and score_mod's tanh.
  /// With `rcpOnFma` (`fa.tanh_fma`), the reciprocal is a quadratic seed
  /// and two Newton steps on the FMA pipe instead of the MUFU's rcp: one
  /// MUFU op where the other form takes two.
  Value accurateTanh(Value x, double scale = 1.0, bool rcpOnFma = false);
  /// 2^x in f32 on the FMA pipe, within 2^-22 relatively as ex2.approx.ftz
  /// is: 0 for x = -inf (and below -127.5), NaN for NaN.
  Value exp2Fma(Value x);
  /// The f32 math op `op` on `operands` as PTX instructions (NVPTX has no
  /// libcalls for most of them), or null for any other op.
  Value lowerScalarMath(Operation *op, ValueRange operands);
  /// `x` (i32) through a mov that LLVM may not move: what is computed from
  /// it stays where it is used instead of being hoisted out of a loop and
  /// kept live (in registers) across it.
  Value opaque(Value x);
  /// A PTX statement with no result that has side effects and may touch
  /// memory (operands per `constraints`, e.g. "l,r").
  void ptx(StringRef text, StringRef constraints = "",
           ValueRange operands = {});
  /// The PTX `instruction` (operands $1, $2, ... per `constraints`) where
  /// the i1 `pred` holds: predicated, not a branch around it, so that code
  /// after it stays convergent (ptxas keeps warp-uniform values in uniform
  /// registers only outside divergent regions).
  void ptxIf(Value pred, StringRef instruction, StringRef constraints,
             ValueRange operands);
  /// `*ptr = value` (32 bits, to global memory) where `pred` holds.
  void storeIf(Value pred, Value ptr, Value value);

  /// Element pointer `base + offset` (offset in elements of `elementType`,
  /// i64).
  Value gep(Value base, Value offset, Type elementType) {
    return LLVM::GEPOp::create(b, loc, base.getType(), elementType, base,
                               ValueRange{offset});
  }
  /// `base + batch * strides[0] + head * strides[1]` in elements of `et`.
  Value headBase(Value base, Value batch, Value head, Value batchStride,
                 Value headStride);
  /// Threads per CTA of the kernel being built (createKernel, copyTile).
  void setThreads(int64_t n) { threads = n; }
  /// Lays shared tiles out in wgmma's 128-byte swizzle (swizzled()) or not.
  void setWgmmaTiles(bool on) { wgmmaTiles = on; }
  /// Lays shared tiles of `rows` rows out in wgmma's 128-byte swizzle as
  /// fagpu's wgmma tiles are: 64-column slabs [width / 64][rows][64], each
  /// a column of 8-row swizzle atoms (what one TMA box writes). 0: 8-row
  /// groups as setWgmmaTiles lays them (the backward's kernels).
  void setWgmmaSlabs(int64_t rows) {
    wgmmaTiles = rows > 0;
    slabRows = rows;
  }
  /// Byte offset of element (row, col) in a swizzled [rows][width] tile
  /// (width 0: d): 16-byte chunks XOR-ed with the row so the 8 rows one
  /// ldmatrix reads hit distinct banks. With `wgmmaTiles` and a width that
  /// is a multiple of 64, rows are stored in groups of 8 as [width / 64][8]
  /// [64] (with setWgmmaSlabs, in 64-column slabs): wgmma's 128-byte
  /// swizzle, the same bytes at width 64.
  Value swizzled(Value row, Value col, int64_t width = 0);
  /// swizzled(rowLane + rowConst, colLane + colConst) for a lane-dependent
  /// part and constants (rowConst a multiple of 8, colConst of 16, colLane 0
  /// or 8): the XOR only sees the lane part and the low chunk bits of
  /// colConst, so lanes need one register per distinct low pattern and the
  /// rest is an immediate of the address.
  Value swizzledAt(Value rowLane, int64_t rowConst, Value colLane,
                   int64_t colConst);
  Value smemAt(Value tile, Value byteOffset) {
    return LLVM::GEPOp::create(b, loc, sptr, b.getI8Type(), tile,
                               ValueRange{byteOffset});
  }
  /// Copies rows [row0, row0 + tileRows) of a [N][d] matrix (row stride
  /// `stride` elements) into a swizzled shared tile; rows >= `rows` are
  /// zero-filled. With `threadAddresses`, where the CTA's passes cover whole
  /// groups of 8 rows (D != 96, 256), each thread computes one global
  /// address and one shared offset and steps from them (fewer instructions
  /// and registers; the forward's choice) instead of addressing each chunk.
  /// With `cols` (0: d) below d, the matrix has `cols` columns and the
  /// tile's columns past them are zero-filled too.
  void copyTile(int64_t tileRows, Value tile, Value base, Value row0,
                Value rows, Value stride, Value tid,
                bool threadAddresses = false, int64_t cols = 0);
  /// ldmatrix.x4 (of 8 x 8 b16 matrices), transposed or not.
  Value ldmatrix(Value ptr, bool transpose);
  /// ldmatrix.x4's four registers.
  std::array<Value, 4> ldmatrix4(Value ptr, bool transpose);
  /// D = A * B + C on one m16n8k16 tile; returns the 4 accumulators.
  SmallVector<Value, 4> mma(ArrayRef<Value> a, ArrayRef<Value> bFrag,
                            ArrayRef<Value> c);
  /// Two f32 as one register of two `et`.
  Value pack(Value lo, Value hi);
  /// Two f32 rounded to `et` as pack rounds them, as f32.
  std::pair<Value, Value> round(Value lo, Value hi);
  /// The A fragment of k-step `j` (16 columns) from accumulator tiles of 8
  /// columns each: tiles 2 j and 2 j + 1, packed to `et`.
  SmallVector<Value, 4> accToA(ArrayRef<SmallVector<Value, 4>> tiles,
                               int64_t j);
  /// Reduces across the 4 lanes of a quad (lanes sharing a row).
  Value quadReduce(Value v, bool isMax);

  /// Accumulator tiles of 16 rows x 8 columns, 4 values per lane each.
  using Tiles = SmallVector<SmallVector<Value, 4>>;
  /// The A fragment (4 registers) of k-step `kk` of a warp's 16 rows starting
  /// at `row0` of the swizzled shared `tile`.
  using AFragments = function_ref<SmallVector<Value, 4>(int64_t kk)>;
  /// `n` zero tiles.
  Tiles zeroTiles(int64_t n);
  /// The A fragment of rows [row0, row0 + 16), k-step `kk`, of `tile`.
  SmallVector<Value, 4> loadA(Value tile, Value row0, int64_t kk, Value lane);
  /// The A fragments of rows [row0, row0 + 16) of shared tiles read as A
  /// operands over and over (K and V, or Q and dO): held in registers,
  /// loaded once, or read again at each use when registers are short.
  struct AOperands {
    KernelBuilder *kb;
    SmallVector<Value, 2> tiles;
    Value row0, lane;
    /// [k-step][tile]; empty when not held.
    SmallVector<SmallVector<SmallVector<Value, 4>, 2>> held;
    SmallVector<Value, 4> get(size_t tile, int64_t kk) const {
      return held.empty() ? kb->loadA(tiles[tile], row0, kk, lane)
                          : held[kk][tile];
    }
  };
  /// AOperands of `tiles`; with `hold`, k-steps [0, kSteps) are loaded now
  /// (each k-step's fragments tile by tile).
  AOperands loadAOperands(ArrayRef<Value> tiles, Value row0, int64_t kSteps,
                          Value lane, bool hold);
  /// c += A B^T over `kSteps` k-steps, B^T read from the [n][k] shared tile
  /// `bTile` (c.size() n-tiles of 8 rows; each x4 ldmatrix serves two).
  void mmaABt(Tiles &c, AFragments a, int64_t kSteps, Value bTile, Value lane);
  /// c += A B over `kSteps` k-steps, B read transposed from the [k][n]
  /// shared tile `bTile` (c.size() n-tiles of 8 columns from column `col0`,
  /// a multiple of 16).
  void mmaAB(Tiles &c, AFragments a, int64_t kSteps, Value bTile, Value lane,
             int64_t col0 = 0);

  // wgmma (sm_90a): warpgroups of 4 warps multiply 64-row tiles with B (and
  // A) read from shared memory by the tensor cores, not through registers;
  // the accumulator of an m64nN product holds, in warp w of the group, the
  // mma.sync tiles of rows [16 w, 16 w + 16): the layout Tiles has.

  /// The descriptor (i64) of a shared tile in wgmmaTiles' layout at byte
  /// `offset` of `tile`: 128-byte swizzle, `lbo` bytes between 64-column
  /// blocks along a matrix's contiguous dimension when that is M or N
  /// (transposed operands), `sbo` bytes between groups of 8 rows.
  Value wgmmaDesc(Value tile, Value offset, int64_t lbo, int64_t sbo);
  /// `desc` moved by `bytes` (a multiple of 16) within its tile.
  Value wgmmaDescAt(Value desc, int64_t bytes);
  /// c (64 x 8 c.size()) += A B over one k-step of 16, B [k][n] from a
  /// descriptor (`transB`: stored [k][n], else [n][k]), A from registers
  /// (`a`: the warp's A fragment) or, when `a` is empty, from `aDesc`
  /// (`transA`: stored [k][m]). Without `accumulate`, c = A B, in the
  /// registers of `reuse` where given (values no longer needed): ptxas
  /// gives each wgmma accumulator its own block of registers otherwise.
  void wgmma(Tiles &c, ArrayRef<Value> a, Value aDesc, Value bDesc, bool transA,
             bool transB, bool accumulate, const Tiles *reuse = nullptr);
  /// wgmma.fence: registers written since are ordered before the next
  /// wgmma's reads.
  void wgmmaFence();
  /// `values` (all i32 or all f32) through an empty asm with side effects:
  /// computed before what follows (a wgmmaFence), not sunk to their uses,
  /// and not read before what precedes (a wgmma wait).
  void pinBefore(MutableArrayRef<Value> values);
  /// Closes the wgmmas issued since the last commit into one group.
  void wgmmaCommit();
  /// Waits until at most `pending` groups are in flight, then pins `values`
  /// (an async product's registers) after the wait.
  void wgmmaWait(int64_t pending, MutableArrayRef<Value> values);
  /// Commits the wgmmas issued since the last commit, waits until at most
  /// `pending` groups are in flight and then hands `accs` on: their values
  /// pass through an empty asm after the wait, so nothing reads them early.
  void wgmmaCommitAndWait(int64_t pending, ArrayRef<Tiles *> accs);

  /// Lane offsets of ldmatrix.x4 addresses (lane = 8 m + r reads row r of
  /// matrix m): an A fragment at (row0, col0) reads rows row0 + aRow(),
  /// cols col0 + aCol(); the B fragments of two n-tiles of 8 rows each at
  /// (row0, col0) of an [n][k] tile read rows row0 + bRow(), cols col0 +
  /// bCol(). The transposed B of a [k][n] tile reads rows row0 + aRow(),
  /// cols col0 + aCol().
  Value aRow(Value lane) {
    return add(andi(lane, 7), shl(andi(shr(lane, 3), 1), 3));
  }
  Value aCol(Value lane) { return shl(shr(lane, 4), 3); }
  Value bRow(Value lane) { return add(andi(lane, 7), shl(shr(lane, 4), 3)); }
  Value bCol(Value lane) { return shl(andi(shr(lane, 3), 1), 3); }

  // The masks are MaskBuilder's on i32 (the host route's definition).

  /// Whether query `row` keeps key `key` (key < nk when `checkBound`, then
  /// causal and window, with diag = Nk - Nq); true when nothing is checked.
  Value keepKey(const Masks &masks, Value row, Value key, Value nk, Value diag,
                bool checkBound);
  /// The key rows the queries [q0, q0 + blockQ) can see.
  struct KeyRange {
    /// [begin, end): begin a multiple of the K/V tile, end <= Nk (possibly
    /// <= begin: nothing to visit).
    Value begin, end;
    /// Nk - Nq, the bottom-right diagonal's offset.
    Value diag;
  };
  KeyRange visibleKeys(const Masks &masks, Value q0, int64_t blockQ, Value nq,
                       Value nk, int64_t blockKV);
  /// Whether the tile of queries [q0, q0 + blockQ) x keys [kv0, kv0 +
  /// blockKV) crosses Nk (unless `nk` is null), the causal diagonal or a
  /// window edge (uniform across the CTA).
  Value tileNeedsMask(const Masks &masks, Value q0, int64_t blockQ, Value kv0,
                      int64_t blockKV, Value nk, Value diag);

  /// keepKey(...) and, with a mask_mod region, its value at (b, h, row, key).
  Value keepScored(const Masks &masks, Region *maskMod, Value idxB, Value idxH,
                   Value row, Value key, Value nk, Value diag, bool checkBound);
  /// Inlines the single-block `region` (score_mod, mask_mod or
  /// score_mod_grad) with `args` for its arguments but the trailing
  /// captures; the value it yields. The f32 math ops NVPTX has no
  /// libcall-free lowering for become PTX instructions; tensor.extract on a
  /// capture becomes a load of the element bindCaptures bound (the regions'
  /// last two `args`, query and key, then clamped into range).
  Value inlineRegion(Region &region, ValueRange args) {
    return inlineRegionValues(region, args).front();
  }
  /// inlineRegion of a region that yields several values: all of them.
  /// With `terms`, its position terms' conversions (convertPositionTerms)
  /// at (di, dj) from the element they were converted at.
  SmallVector<Value, 2>
  inlineRegionValues(Region &region, ValueRange args,
                     const PositionConversions *terms = nullptr, int64_t di = 0,
                     int64_t dj = 0);
  /// The f32 and f64 conversions (sitofp) of the position terms in `body`
  /// that move with i or j, each once, with `first` mapping the body's
  /// arguments at the first element (f16 and bf16 would round the sum a
  /// second time at their precision).
  PositionConversions convertPositionTerms(Block &body,
                                           const PositionTerms &terms,
                                           IRMapping &first);

  /// The op's captures (`captures`: their tensor types) as kernel
  /// parameters, after the kernel's own: per capture its pointer and one
  /// i64 element stride per dim.
  static void appendCaptureParams(std::vector<::fa::runtime::KernelParam> &abi,
                                  TypeRange captures);
  /// Binds the captures' parameters (of `args`) for inlineRegion, which
  /// then clamps the regions' query and key arguments to [0, Nq - 1] and
  /// [0, Nk - 1] (`nq`, `nk`: i32), so that ragged rows and keys of a tile
  /// read captures in bounds (the masks still see the true key). Emits at
  /// the insertion point, which must dominate every inlined region (the
  /// entry). Call it for each kernel (it forgets the previous kernel's).
  void bindCaptures(const AbiArgs &args, TypeRange captures, Value nq,
                    Value nk);

protected:
  OpBuilder &b;
  Location loc;
  Type et;
  int64_t d;
  /// Threads per CTA of the kernel being built (createKernel, copyTile).
  int64_t threads = kThreads;
  /// Shared tiles of the kernel being built are laid out for wgmma
  /// (swizzled()).
  bool wgmmaTiles = false;
  /// The rows of setWgmmaSlabs' tiles; 0: 8-row groups.
  int64_t slabRows = 0;
  /// Bytes a step of 8 rows moves in a tile of width d, divided by 8.
  int64_t rowStride() const {
    return wgmmaTiles && slabRows && d % 64 == 0 ? 128 : d * 2;
  }
  Type i32, i64, f32, gptr, sptr;

private:
  /// `llvm.func @name(params)`, as createKernel makes it.
  LLVM::LLVMFuncOp createFunction(StringRef name, ArrayRef<Type> params,
                                  bool flushDenormals);
  /// A bound capture: its global pointer, element type and element strides
  /// (i64, one per dim).
  struct Capture {
    Value base;
    Type elementType;
    SmallVector<Value, 4> strides;
  };
  SmallVector<Capture> captures;
  /// max(Nq - 1, 0) and max(Nk - 1, 0) as index, where there are captures.
  Value lastRow, lastKey;
  /// The heads of the grid's fold (getThreadPlace).
  Value placeHeads;
};

/// Whether `op` has per-score terms (ALiBi, bias, score_mod, mask_mod): the
/// kernels' scored path.
template <typename OpT> bool hasScoreTerms(OpT op) {
  return op.getBias() || op.getAlibiSlopes() || !op.getScoreMod().empty() ||
         !op.getMaskMod().empty();
}

/// Why `op` (fa.attention_grad; the forward has its own) cannot have a GPU
/// kernel, or an empty string.
template <typename OpT> std::string unsupportedReason(OpT op) {
  std::string reason = unsupportedShapeReason(op, /*dvUpToD=*/true);
  if (!reason.empty())
    return reason;
  if (!op.getScoreMod().empty() && op.getScoreModGrad().empty())
    return "score_mod has no score_mod_grad region; run "
           "fa-differentiate-score-mod first";
  for (auto [region, name] :
       {std::make_pair(&op.getScoreMod(), "score_mod"),
        std::make_pair(&op.getScoreModGrad(), "score_mod_grad"),
        std::make_pair(&op.getMaskMod(), "mask_mod")}) {
    reason = kernelRegionReason(*region, name);
    if (!reason.empty())
      return reason;
  }
  return "";
}

} // namespace mlir::fa::nvvm

#endif // FA_LIB_CONVERSION_FATONVVM_KERNELBUILDER_H
