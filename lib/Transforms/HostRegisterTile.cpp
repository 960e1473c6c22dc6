//===- HostRegisterTile.cpp - Register-blocked tile products on the host --===//
//
// The tile products of the host route (Q K^T, P V, and the backward's dP,
// dS K, dS^T Q, P^T dO) are linalg.generic contractions. Lowered to loops
// they compute one output element at a time: a dot product (a horizontal
// reduction) per score, or a load and store of the accumulator per term.
// This pass gives each one a GEMM micro-kernel instead: B is read as an f32
// [K, N] matrix with contiguous rows (B itself where it is one, else packed,
// by transposes in registers where B's rows are contiguous), and each block
// of `rows` x `cols` outputs is held in vector registers while the K loop
// broadcasts an element of A and adds its product with a row of B by one
// FMA per vector.
//
//===----------------------------------------------------------------------===//

#include "fa/Transforms/Passes.h"
#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/Dialect/Utils/StaticValueUtils.h"
#include "mlir/Dialect/Vector/IR/VectorOps.h"
#include "mlir/IR/Builders.h"
#include "mlir/IR/IRMapping.h"
#include "mlir/IR/TypeUtilities.h"

namespace mlir::fa {
#define GEN_PASS_DEF_FAHOSTREGISTERTILE
#include "fa/Transforms/Passes.h.inc"
} // namespace mlir::fa

using namespace mlir;
using namespace mlir::fa;

namespace {

/// A linalg.generic on buffers that computes C[m, n] += A . B over one
/// reduction dimension k, with A and B read at (m, k) / (k, m) and (k, n) /
/// (n, k), extended to f32 where they are narrower.
struct Contraction {
  linalg::GenericOp op;
  Value a, b, c;
  bool aKFirst = false, bKFirst = false;
  /// The sum's order is free (`reassoc`): it is summed in chunks of k.
  bool reassoc = false;
  /// The linalg.fill of C right before the contraction, if any: the
  /// register blocks start from its value instead of reading C.
  linalg::FillOp fill;
};

/// `v`, or the operand of the arith.extf that defines it.
Value stripExt(Value v) {
  if (auto ext = v.getDefiningOp<arith::ExtFOp>())
    return ext.getIn();
  return v;
}

/// Whether the body of `op` is `yield out + ext(x) * ext(y)` with x and y
/// its two input arguments (in either order; either sum order).
bool isMulAddBody(linalg::GenericOp op) {
  Block &body = op.getRegion().front();
  auto yield = cast<linalg::YieldOp>(body.getTerminator());
  if (yield.getNumOperands() != 1)
    return false;
  auto add = yield.getOperand(0).getDefiningOp<arith::AddFOp>();
  if (!add || add->getBlock() != &body)
    return false;
  Value out = body.getArgument(2);
  Value prod = add.getLhs() == out   ? add.getRhs()
               : add.getRhs() == out ? add.getLhs()
                                     : Value();
  auto mul = prod ? prod.getDefiningOp<arith::MulFOp>() : arith::MulFOp();
  if (!mul || mul->getBlock() != &body)
    return false;
  Value x = stripExt(mul.getLhs()), y = stripExt(mul.getRhs());
  Value in0 = body.getArgument(0), in1 = body.getArgument(1);
  if (!((x == in0 && y == in1) || (x == in1 && y == in0)))
    return false;
  // Nothing else: the extensions, the product, the sum and the yield.
  return llvm::all_of(body.without_terminator(), [&](Operation &nested) {
    return isa<arith::ExtFOp>(nested) || &nested == mul.getOperation() ||
           &nested == add.getOperation();
  });
}

/// The contraction `op` computes, or nothing when it is not one this pass
/// handles.
std::optional<Contraction> matchContraction(linalg::GenericOp op) {
  if (!op.hasPureBufferSemantics() || op.getNumLoops() != 3 ||
      op.getNumDpsInputs() != 2 || op.getNumDpsInits() != 1 ||
      op.getNumReductionLoops() != 1)
    return std::nullopt;
  SmallVector<AffineMap> maps = op.getIndexingMapsArray();
  if (!llvm::all_of(maps, [](AffineMap map) {
        return map.isProjectedPermutation() && map.getNumResults() == 2;
      }))
    return std::nullopt;
  unsigned k = 0;
  for (auto [i, type] : llvm::enumerate(op.getIteratorTypesArray()))
    if (type == utils::IteratorType::reduction)
      k = i;
  AffineMap outMap = maps[2];
  unsigned m = outMap.getDimPosition(0), n = outMap.getDimPosition(1);
  if (m == k || n == k)
    return std::nullopt;

  Contraction c;
  c.op = op;
  c.c = op.getDpsInits()[0];
  auto cType = dyn_cast<MemRefType>(c.c.getType());
  if (!cType || !cType.getElementType().isF32())
    return std::nullopt;
  // Rows of C are read and written as vectors.
  SmallVector<int64_t> strides;
  int64_t offset;
  if (failed(cType.getStridesAndOffset(strides, offset)) || strides.back() != 1)
    return std::nullopt;
  // A reads (m, k), B (k, n), each in either order.
  for (unsigned i = 0; i < 2; ++i) {
    unsigned d0 = maps[i].getDimPosition(0), d1 = maps[i].getDimPosition(1);
    Value operand = op.getDpsInputs()[i];
    auto type = dyn_cast<MemRefType>(operand.getType());
    if (!type || !isa<FloatType>(type.getElementType()) ||
        type.getElementTypeBitWidth() > 32)
      return std::nullopt;
    if ((d0 == m && d1 == k) || (d0 == k && d1 == m)) {
      c.a = operand;
      c.aKFirst = d0 == k;
    } else if ((d0 == n && d1 == k) || (d0 == k && d1 == n)) {
      c.b = operand;
      c.bKFirst = d0 == k;
    }
  }
  if (!c.a || !c.b || !isMulAddBody(op))
    return std::nullopt;
  auto add = cast<linalg::YieldOp>(op.getRegion().front().getTerminator())
                 .getOperand(0)
                 .getDefiningOp<arith::AddFOp>();
  c.reassoc =
      bitEnumContainsAll(add.getFastmath(), arith::FastMathFlags::reassoc);
  // (A chunked sum adds to C: it keeps the fill.)
  if (auto fill = dyn_cast_or_null<linalg::FillOp>(op->getPrevNode());
      fill && !c.reassoc) {
    if (fill.hasPureBufferSemantics() && fill.getOutputs()[0] == c.c &&
        fill.getInputs()[0].getType().isF32())
      c.fill = fill;
  }
  return c;
}

/// Terms per chunk of a sum whose order is free (see MicroKernel::block).
constexpr int64_t kSumChunk = 16;

/// Whether `v` is a constant multiple of `factor`.
static bool isConstantMultiple(Value v, int64_t factor) {
  std::optional<int64_t> value = getConstantIntValue(v);
  if (!value)
    if (auto dim = v.getDefiningOp<memref::DimOp>())
      if (std::optional<int64_t> index = dim.getConstantIndex()) {
        int64_t size =
            cast<MemRefType>(dim.getSource().getType()).getDimSize(*index);
        if (!ShapedType::isDynamic(size))
          value = size;
      }
  return value && *value % factor == 0;
}

class MicroKernel {
public:
  MicroKernel(OpBuilder &b, Contraction c, int64_t rows, int64_t cols,
              int64_t lanes)
      : b(b), c(c), loc(c.op.getLoc()), rows(rows), cols(cols), lanes(lanes) {}

  /// Replaces the contraction by the micro-kernel where N is a multiple of
  /// the vector width, and keeps it for the other shapes.
  void build();

private:
  Value cst(int64_t v) { return arith::ConstantIndexOp::create(b, loc, v); }
  Value add(Value x, int64_t v) {
    return v == 0 ? x : arith::AddIOp::create(b, loc, x, cst(v));
  }
  /// `v` (a scalar or a vector) extended to f32.
  Value toF32(Value v) {
    Type type = v.getType();
    if (getElementTypeOrSelf(type).isF32())
      return v;
    Type f32 = b.getF32Type();
    if (auto vector = dyn_cast<VectorType>(type))
      f32 = vector.clone(f32);
    return arith::ExtFOp::create(b, loc, f32, v);
  }
  /// B's dimension 1 has stride 1 (an i1).
  Value hasUnitInnerStride(Value memref);
  /// `memref`, a rank-2 memref whose dimension 1 has stride 1 at run time,
  /// as a memref of that layout (vector.load needs it in the type).
  Value withUnitInnerStride(Value memref);
  /// A new [K, N] f32 buffer for B.
  Value allocPacked(Value k, Value n);
  /// Packs B into `packed` element by element (any layout and strides).
  void packElements(Value packed, Value k, Value n);
  /// Packs B = [K, N] read through `rowsOfB` (B with unit-stride rows) a
  /// vector at a time; N is a multiple of lanes.
  void packRows(Value packed, Value rowsOfB, Value k, Value n);
  /// Packs B = [N, K] read through `rowsOfB` (B with unit-stride rows) by
  /// transposing blocks of lanes x lanes in registers; K and N are
  /// multiples of lanes.
  void packTransposed(Value packed, Value rowsOfB, Value k, Value n);
  /// The register blocks over all of C, B read from `packed` ([K, N] with
  /// unit-stride rows).
  void kernel(Value packed, Value m, Value n, Value k);
  /// Blocks of `blockRows` x `vectors` vectors over rows [begin, end) of C
  /// (a multiple of blockRows) and columns [colBegin, colEnd).
  void blocks(Value begin, Value end, int64_t blockRows, Value colBegin,
              Value colEnd, int64_t vectors, Value packed, Value k);
  void block(Value i0, Value j0, int64_t blockRows, int64_t vectors,
             Value packed, Value k);

  OpBuilder &b;
  Contraction c;
  Location loc;
  int64_t rows, cols, lanes;
};

Value MicroKernel::hasUnitInnerStride(Value memref) {
  auto type = cast<MemRefType>(memref.getType());
  SmallVector<int64_t> strides;
  int64_t offset;
  if (succeeded(type.getStridesAndOffset(strides, offset)) &&
      !ShapedType::isDynamic(strides.back()))
    return arith::ConstantIntOp::create(b, loc, strides.back() == 1, 1);
  auto metadata = memref::ExtractStridedMetadataOp::create(b, loc, memref);
  return arith::CmpIOp::create(b, loc, arith::CmpIPredicate::eq,
                               metadata.getStrides().back(), cst(1));
}

Value MicroKernel::withUnitInnerStride(Value memref) {
  auto type = cast<MemRefType>(memref.getType());
  SmallVector<int64_t> strides;
  int64_t offset;
  if (succeeded(type.getStridesAndOffset(strides, offset)) &&
      strides.back() == 1)
    return memref;
  // A reinterpret_cast from the metadata with the stride 1 written in. (A
  // memref.cast would do, but canonicalization folds it into vector.load,
  // whose verifier then rejects the dynamic stride.)
  auto metadata = memref::ExtractStridedMetadataOp::create(b, loc, memref);
  auto rowsType = MemRefType::get(
      type.getShape(), type.getElementType(),
      StridedLayoutAttr::get(b.getContext(), ShapedType::kDynamic,
                             {ShapedType::kDynamic, 1}));
  SmallVector<OpFoldResult> sizes = memref::getMixedSizes(b, loc, memref);
  return memref::ReinterpretCastOp::create(
      b, loc, rowsType, metadata.getBaseBuffer(), metadata.getOffset(), sizes,
      ArrayRef<OpFoldResult>{metadata.getStrides()[0], b.getIndexAttr(1)});
}

Value MicroKernel::allocPacked(Value k, Value n) {
  return memref::AllocOp::create(
      b, loc,
      MemRefType::get({ShapedType::kDynamic, ShapedType::kDynamic},
                      b.getF32Type()),
      ValueRange{k, n});
}

void MicroKernel::packElements(Value packed, Value k, Value n) {
  // The inner loop walks B's rows (its contiguous dimension in the layouts
  // fa-tile builds).
  Value outerEnd = c.bKFirst ? k : n, innerEnd = c.bKFirst ? n : k;
  Value zero = cst(0), one = cst(1);
  scf::ForOp::create(
      b, loc, zero, outerEnd, one, ValueRange{},
      [&](OpBuilder &ob, Location, Value outer, ValueRange) {
        scf::ForOp::create(
            ob, loc, zero, innerEnd, one, ValueRange{},
            [&](OpBuilder &ib, Location, Value inner, ValueRange) {
              OpBuilder::InsertionGuard guard(b);
              b.setInsertionPoint(ib.getInsertionBlock(),
                                  ib.getInsertionPoint());
              Value x = toF32(memref::LoadOp::create(b, loc, c.b,
                                                     ValueRange{outer, inner}));
              Value kk = c.bKFirst ? outer : inner;
              Value nn = c.bKFirst ? inner : outer;
              memref::StoreOp::create(b, loc, x, packed, ValueRange{kk, nn});
              scf::YieldOp::create(b, loc);
            });
        scf::YieldOp::create(ob, loc);
      });
}

void MicroKernel::packRows(Value packed, Value rowsOfB, Value k, Value n) {
  Type elementType = cast<MemRefType>(c.b.getType()).getElementType();
  auto rowType = VectorType::get({lanes}, elementType);
  // Row kk of B, lanes columns at a time, into row kk of the packed panel.
  auto packRow = [&](OpBuilder &ob, Location, Value kk, ValueRange) {
    auto copyChunk = [&](OpBuilder &ib, Location, Value n0, ValueRange) {
      OpBuilder::InsertionGuard guard(b);
      b.setInsertionPoint(ib.getInsertionBlock(), ib.getInsertionPoint());
      Value row = toF32(
          vector::LoadOp::create(b, loc, rowType, rowsOfB, ValueRange{kk, n0}));
      vector::StoreOp::create(b, loc, row, packed, ValueRange{kk, n0});
      scf::YieldOp::create(b, loc);
    };
    scf::ForOp::create(ob, loc, cst(0), n, cst(lanes), ValueRange{}, copyChunk);
    scf::YieldOp::create(ob, loc);
  };
  scf::ForOp::create(b, loc, cst(0), k, cst(1), ValueRange{}, packRow);
}

void MicroKernel::packTransposed(Value packed, Value rowsOfB, Value k,
                                 Value n) {
  Type elementType = cast<MemRefType>(c.b.getType()).getElementType();
  auto rowType = VectorType::get({lanes}, elementType);
  Value step = cst(lanes);
  scf::ForOp::create(
      b, loc, cst(0), n, step, ValueRange{},
      [&](OpBuilder &ob, Location, Value n0, ValueRange) {
        scf::ForOp::create(
            ob, loc, cst(0), k, step, ValueRange{},
            [&](OpBuilder &ib, Location, Value k0, ValueRange) {
              OpBuilder::InsertionGuard guard(b);
              b.setInsertionPoint(ib.getInsertionBlock(),
                                  ib.getInsertionPoint());
              SmallVector<Value> x;
              for (int64_t i = 0; i < lanes; ++i)
                x.push_back(toF32(vector::LoadOp::create(
                    b, loc, rowType, rowsOfB, ValueRange{add(n0, i), k0})));
              // Stage w swaps bit w of the row and the lane index: the
              // w x w blocks off the diagonal of each 2w x 2w block trade
              // places. After every bit, x[j] holds lane j of each row.
              for (int64_t w = lanes / 2; w >= 1; w /= 2) {
                SmallVector<int64_t> lowMask, highMask;
                for (int64_t p = 0; p < lanes; ++p) {
                  bool upper = p & w;
                  lowMask.push_back(upper ? lanes + p - w : p);
                  highMask.push_back(upper ? lanes + p : p + w);
                }
                for (int64_t r = 0; r < lanes; ++r) {
                  if (r & w)
                    continue;
                  Value low = vector::ShuffleOp::create(b, loc, x[r], x[r + w],
                                                        lowMask);
                  Value high = vector::ShuffleOp::create(b, loc, x[r], x[r + w],
                                                         highMask);
                  x[r] = low;
                  x[r + w] = high;
                }
              }
              for (int64_t j = 0; j < lanes; ++j)
                vector::StoreOp::create(b, loc, x[j], packed,
                                        ValueRange{add(k0, j), n0});
              scf::YieldOp::create(b, loc);
            });
        scf::YieldOp::create(ob, loc);
      });
}

void MicroKernel::block(Value i0, Value j0, int64_t blockRows, int64_t vectors,
                        Value packed, Value k) {
  auto vecType = VectorType::get({lanes}, b.getF32Type());
  SmallVector<Value> rowIdx, colIdx;
  for (int64_t i = 0; i < blockRows; ++i)
    rowIdx.push_back(add(i0, i));
  for (int64_t v = 0; v < vectors; ++v)
    colIdx.push_back(add(j0, v * lanes));
  // Sums over k in [lb, ub) from `init`.
  auto sum = [&](Value lb, Value ub, ValueRange init) {
    auto loop = scf::ForOp::create(
        b, loc, lb, ub, cst(1), init,
        [&](OpBuilder &lb, Location, Value kk, ValueRange accs) {
          OpBuilder::InsertionGuard guard(b);
          b.setInsertionPoint(lb.getInsertionBlock(), lb.getInsertionPoint());
          SmallVector<Value> bRow;
          for (int64_t v = 0; v < vectors; ++v)
            bRow.push_back(vector::LoadOp::create(b, loc, vecType, packed,
                                                  ValueRange{kk, colIdx[v]}));
          SmallVector<Value> next;
          for (int64_t i = 0; i < blockRows; ++i) {
            SmallVector<Value> idx = {rowIdx[i], kk};
            if (c.aKFirst)
              std::swap(idx[0], idx[1]);
            Value a = toF32(memref::LoadOp::create(b, loc, c.a, idx));
            Value splat = vector::BroadcastOp::create(b, loc, vecType, a);
            for (int64_t v = 0; v < vectors; ++v)
              next.push_back(vector::FMAOp::create(b, loc, splat, bRow[v],
                                                   accs[i * vectors + v]));
          }
          scf::YieldOp::create(b, loc, next);
        });
    return loop.getResults();
  };
  auto load = [&](int64_t i, int64_t v) -> Value {
    return vector::LoadOp::create(b, loc, vecType, c.c,
                                  ValueRange{rowIdx[i], colIdx[v]});
  };
  auto store = [&](ArrayRef<Value> results) {
    for (int64_t i = 0; i < blockRows; ++i)
      for (int64_t v = 0; v < vectors; ++v)
        vector::StoreOp::create(b, loc, results[i * vectors + v], c.c,
                                ValueRange{rowIdx[i], colIdx[v]});
  };

  if (!c.reassoc) {
    // In order, from the fill's value or C.
    Value filled;
    if (c.fill)
      filled =
          vector::BroadcastOp::create(b, loc, vecType, c.fill.getInputs()[0]);
    SmallVector<Value> init;
    for (int64_t i = 0; i < blockRows; ++i)
      for (int64_t v = 0; v < vectors; ++v)
        init.push_back(filled ? filled : load(i, v));
    store(llvm::to_vector_of<Value>(sum(cst(0), k, init)));
    return;
  }

  // A sum whose order is free goes in chunks of kSumChunk terms, each from
  // zero and added to C: its rounding error grows with the chunk and the
  // number of chunks rather than with K (as the lanes of a vectorized
  // reduction would have it).
  Value zeros = arith::ConstantOp::create(
      b, loc, vecType, DenseElementsAttr::get(vecType, 0.0f));
  SmallVector<Value> fromZero(blockRows * vectors, zeros);
  Value chunk = cst(kSumChunk);
  scf::ForOp::create(b, loc, cst(0), k, chunk, ValueRange{},
                     [&](OpBuilder &lb, Location, Value k0, ValueRange) {
                       OpBuilder::InsertionGuard guard(b);
                       b.setInsertionPoint(lb.getInsertionBlock(),
                                           lb.getInsertionPoint());
                       // With K a known multiple of the chunk, the chunk's trip
                       // count is known too (LLVM unrolls it).
                       Value end = arith::AddIOp::create(b, loc, k0, chunk);
                       if (!isConstantMultiple(k, kSumChunk))
                         end = arith::MinUIOp::create(b, loc, k, end);
                       ValueRange partial = sum(k0, end, fromZero);
                       SmallVector<Value> totals;
                       for (int64_t i = 0; i < blockRows; ++i)
                         for (int64_t v = 0; v < vectors; ++v)
                           totals.push_back(arith::AddFOp::create(
                               b, loc, load(i, v), partial[i * vectors + v]));
                       store(totals);
                       scf::YieldOp::create(b, loc);
                     });
}

void MicroKernel::blocks(Value begin, Value end, int64_t blockRows,
                         Value colBegin, Value colEnd, int64_t vectors,
                         Value packed, Value k) {
  scf::ForOp::create(b, loc, begin, end, cst(blockRows), ValueRange{},
                     [&](OpBuilder &ob, Location, Value i0, ValueRange) {
                       scf::ForOp::create(
                           ob, loc, colBegin, colEnd, cst(vectors * lanes),
                           ValueRange{},
                           [&](OpBuilder &ib, Location, Value j0, ValueRange) {
                             OpBuilder::InsertionGuard guard(b);
                             b.setInsertionPoint(ib.getInsertionBlock(),
                                                 ib.getInsertionPoint());
                             block(i0, j0, blockRows, vectors, packed, k);
                             scf::YieldOp::create(b, loc);
                           });
                       scf::YieldOp::create(ob, loc);
                     });
}

/// The block heights (widths) that cover `size` rows (vectors): `size`,
/// then each smaller power of two, each taking as many whole blocks as
/// remain.
static SmallVector<int64_t> blockSizes(int64_t size) {
  SmallVector<int64_t> sizes = {size};
  int64_t half = llvm::PowerOf2Ceil(size) / 2;
  if (half > 1 && half < size)
    sizes.push_back(half);
  if (size > 1)
    sizes.push_back(1);
  return sizes;
}

void MicroKernel::kernel(Value packed, Value m, Value n, Value k) {
  // Full blocks, then the rows and columns that remain in blocks of fewer
  // rows or vectors (powers of two), down to one.
  SmallVector<std::pair<int64_t, std::pair<Value, Value>>> rowRanges, colRanges;
  Value begin = cst(0);
  for (int64_t height : blockSizes(rows)) {
    Value rest = arith::SubIOp::create(b, loc, m, begin);
    Value end = arith::SubIOp::create(
        b, loc, m, arith::RemUIOp::create(b, loc, rest, cst(height)));
    rowRanges.push_back({height, {begin, end}});
    begin = end;
  }
  begin = cst(0);
  for (int64_t width : blockSizes(cols / lanes)) {
    Value rest = arith::SubIOp::create(b, loc, n, begin);
    Value end = arith::SubIOp::create(
        b, loc, n, arith::RemUIOp::create(b, loc, rest, cst(width * lanes)));
    colRanges.push_back({width, {begin, end}});
    begin = end;
  }
  for (auto [height, rowRange] : rowRanges)
    for (auto [width, colRange] : colRanges)
      blocks(rowRange.first, rowRange.second, height, colRange.first,
             colRange.second, width, packed, k);
}

void MicroKernel::build() {
  b.setInsertionPoint(c.op);
  Value m = memref::DimOp::create(b, loc, c.c, 0);
  Value n = memref::DimOp::create(b, loc, c.c, 1);
  Value k = memref::DimOp::create(b, loc, c.a, c.aKFirst ? 0 : 1);
  Value zero = cst(0);
  Value vectorCols = arith::CmpIOp::create(
      b, loc, arith::CmpIPredicate::eq,
      arith::RemUIOp::create(b, loc, n, cst(lanes)), zero);
  auto ifOp = scf::IfOp::create(b, loc, vectorCols, /*withElseRegion=*/true);

  // Other widths: the contraction as it was.
  b.setInsertionPointToStart(ifOp.elseBlock());
  if (c.fill)
    b.clone(*c.fill);
  b.clone(*c.op);

  // B packed as f32 [K, N]: by whole vectors (rows copied, or transposed
  // in registers) where B's rows are contiguous, element by element
  // otherwise. One kernel reads the packed copy (a kernel per layout of B
  // would multiply the code LLVM compiles).
  b.setInsertionPointToStart(ifOp.thenBlock());
  Value fast = hasUnitInnerStride(c.b);
  if (!c.bKFirst)
    fast = arith::AndIOp::create(
        b, loc, fast,
        arith::CmpIOp::create(b, loc, arith::CmpIPredicate::eq,
                              arith::RemUIOp::create(b, loc, k, cst(lanes)),
                              zero));
  Value packed = allocPacked(k, n);
  auto versions = scf::IfOp::create(b, loc, fast, /*withElseRegion=*/true);
  b.setInsertionPointToStart(versions.elseBlock());
  packElements(packed, k, n);
  b.setInsertionPointToStart(versions.thenBlock());
  Value rowsOfB = withUnitInnerStride(c.b);
  if (c.bKFirst)
    packRows(packed, rowsOfB, k, n);
  else
    packTransposed(packed, rowsOfB, k, n);
  b.setInsertionPointAfter(versions);
  kernel(packed, m, n, k);
  memref::DeallocOp::create(b, loc, packed);
  c.op.erase();
  if (c.fill)
    c.fill.erase();
}

struct FAHostRegisterTilePass
    : public mlir::fa::impl::FAHostRegisterTileBase<FAHostRegisterTilePass> {
  using Base::Base;
  void runOnOperation() override {
    if (lanes <= 0 || !llvm::isPowerOf2_64(lanes) || rows <= 0 || cols <= 0 ||
        cols % lanes != 0 || rows * (cols / lanes) > kMaxAccumulators) {
      getOperation()->emitError()
          << "fa-host-register-tile: a block of " << static_cast<int64_t>(rows)
          << " x " << static_cast<int64_t>(cols)
          << " needs rows > 0, lanes a power of two, cols a positive "
             "multiple of lanes ("
          << static_cast<int64_t>(lanes) << ") and at most " << kMaxAccumulators
          << " accumulator vectors";
      return signalPassFailure();
    }
    SmallVector<Contraction> contractions;
    getOperation()->walk([&](linalg::GenericOp op) {
      if (std::optional<Contraction> c = matchContraction(op))
        contractions.push_back(*c);
    });
    OpBuilder b(&getContext());
    for (const Contraction &c : contractions)
      MicroKernel(b, c, rows, cols, lanes).build();
  }

  // AVX2 and AVX-512 have 16 and 32 vector registers; the block needs its
  // row of B and a broadcast besides.
  static constexpr int64_t kMaxAccumulators = 28;
};

} // namespace
