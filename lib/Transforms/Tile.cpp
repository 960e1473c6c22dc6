//===- Tile.cpp - Tile fa.attention over Q and K/V ------------------------===//
//
// fa.attention -> scf.forall over (batch, query head, Q tile) with, inside,
// the safe two-pass softmax over K/V tiles: one loop for the row max, one
// for the row sum and P V. Scores of a tile pair are fa.score_tile ops.
//
//===----------------------------------------------------------------------===//

#include "fa/Dialect/FA/IR/FAOps.h"
#include "fa/Transforms/Builders.h"
#include "fa/Transforms/GpuKernels.h"
#include "fa/Transforms/Passes.h"
#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Arith/Utils/Utils.h"
#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/Dialect/Math/IR/Math.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"
#include "mlir/IR/PatternMatch.h"

#include <limits>

namespace mlir::fa {
#define GEN_PASS_DEF_FATILE
#include "fa/Transforms/Passes.h.inc"
} // namespace mlir::fa

using namespace mlir;
using namespace mlir::fa;

namespace {

using utils::IteratorType;
constexpr IteratorType kPar = IteratorType::parallel;
constexpr IteratorType kRed = IteratorType::reduction;
constexpr double kNegInf = -std::numeric_limits<double>::infinity();

class Tiler {
public:
  Tiler(OpBuilder &b, AttentionOp op, int64_t blockQ, int64_t blockKV)
      : b(b), op(op), loc(op.getLoc()), blockQ(blockQ), blockKV(blockKV) {}

  SmallVector<Value> build();

private:
  Value cst(int64_t v) { return arith::ConstantIndexOp::create(b, loc, v); }
  Value dim(Value t, int64_t i) {
    return getValueOrCreateConstantIndexOp(b, loc,
                                           tensor::getMixedSize(b, loc, t, i));
  }
  Value minIdx(Value a, Value c) {
    return arith::MinSIOp::create(b, loc, a, c);
  }
  OpBuilder &b;
  AttentionOp op;
  Location loc;
  int64_t blockQ, blockKV;
  Value seqQ, seqKV;
};

SmallVector<Value> Tiler::build() {
  MLIRContext *ctx = b.getContext();
  Value q = op.getQuery(), k = op.getKey(), v = op.getValue();
  Type et = op.getElementType();
  int64_t headDimV = cast<RankedTensorType>(v.getType()).getDimSize(3);
  Value batch = dim(q, 0), headsQ = dim(q, 1);
  seqQ = dim(q, 2);
  seqKV = dim(k, 2);
  int64_t g = op.getHeadGroupSize();
  Value group = ShapedType::isDynamic(g)
                    ? arith::DivUIOp::create(b, loc, headsQ, dim(k, 1))
                    : cst(g);
  Value numQTiles = arith::CeilDivUIOp::create(b, loc, seqQ, cst(blockQ));

  // Results are written tile by tile into fresh tensors.
  SmallVector<OpFoldResult> outSizes = tensor::getMixedSizes(b, loc, q);
  outSizes.back() = b.getIndexAttr(headDimV);
  SmallVector<Value> inits = {tensor::EmptyOp::create(b, loc, outSizes, et)};
  if (op.getLse())
    inits.push_back(tensor::EmptyOp::create(
        b, loc, ArrayRef(outSizes).drop_back(), b.getF32Type()));

  auto forall = scf::ForallOp::create(
      b, loc, ArrayRef<OpFoldResult>{batch, headsQ, numQTiles}, inits,
      std::nullopt);
  OpBuilder::InsertionGuard guard(b);
  b.setInsertionPointToStart(forall.getBody());
  Value bi = forall.getInductionVar(0), h = forall.getInductionVar(1);
  Value q0 =
      arith::MulIOp::create(b, loc, forall.getInductionVar(2), cst(blockQ));
  Value rows = minIdx(cst(blockQ), arith::SubIOp::create(b, loc, seqQ, q0));
  Value hk = arith::DivUIOp::create(b, loc, h, group);
  Value qTile = extractRows(b, loc, q, bi, h, q0, rows);

  // The K/V rows any query of this tile can see; tiles outside are skipped.
  auto [kvBegin, kvEnd] =
      buildVisibleKeys(b, loc, op.getCausalAttr(), op.getWindowAttr(), q0, rows,
                       seqQ, seqKV, blockKV);

  auto rowMap = dimsMap(ctx, 2, {0}), tileMap = dimsMap(ctx, 2, {0, 1});
  SmallVector<IteratorType> reduceCols = {kPar, kRed};
  // Per K/V tile: its key rows and the scores against this Q tile.
  auto kvTile = [&](OpBuilder &lb, Value k0, Value &cols) {
    OpBuilder::InsertionGuard g(b);
    b.setInsertionPoint(lb.getInsertionBlock(), lb.getInsertionPoint());
    cols = minIdx(cst(blockKV), arith::SubIOp::create(b, loc, seqKV, k0));
    Value kTile = extractRows(b, loc, k, bi, hk, k0, cols);
    return buildScoreTile(b, loc, op, qTile, kTile, bi, h, q0, k0, seqQ, seqKV)
        .getResult();
  };

  // Pass 1: m = max_j s.
  Value step = cst(blockKV);
  auto maxLoop = scf::ForOp::create(
      b, loc, kvBegin, kvEnd, step,
      ValueRange{filledF32(b, loc, {rows}, kNegInf)},
      [&](OpBuilder &lb, Location l, Value k0, ValueRange iters) {
        Value cols;
        Value s = kvTile(lb, k0, cols);
        Value m = buildGeneric(
            lb, l, iters[0], s, {tileMap, rowMap}, reduceCols,
            [](OpBuilder &nb, Location bl, ValueRange args) -> Value {
              return arith::MaximumFOp::create(nb, bl, args[0], args[1]);
            });
        scf::YieldOp::create(lb, l, m);
      });
  maxLoop->setAttr(kRowMaxLoopAttr, b.getStringAttr("exp"));
  Value rowMax = maxLoop.getResult(0);

  // Pass 2: l = sum_j exp(s - m), acc = sum_j exp(s - m) v_j.
  auto sumLoop = scf::ForOp::create(
      b, loc, kvBegin, kvEnd, step,
      ValueRange{filledF32(b, loc, {rows}, 0.0),
                 filledF32(b, loc, {rows, b.getIndexAttr(headDimV)}, 0.0)},
      [&](OpBuilder &lb, Location l, Value k0, ValueRange iters) {
        Value cols;
        Value s = kvTile(lb, k0, cols);
        Value p = buildGeneric(
            lb, l, s, rowMax, {rowMap, tileMap}, {kPar, kPar},
            [](OpBuilder &nb, Location bl, ValueRange args) -> Value {
              // A row that is masked so far has m = -inf: use 0, p = 0.
              Value masked =
                  arith::CmpFOp::create(nb, bl, arith::CmpFPredicate::OEQ,
                                        args[0], f32Const(nb, bl, kNegInf));
              Value m = arith::SelectOp::create(nb, bl, masked,
                                                f32Const(nb, bl, 0.0), args[0]);
              Value diff = arith::SubFOp::create(nb, bl, args[1], m);
              return math::ExpOp::create(nb, bl, diff);
            });
        // The row sum's order is free (an f32 sum of a tile's row, the
        // same on every thread): let the host vectorize it across columns.
        Value sum = buildGeneric(
            lb, l, iters[0], p, {tileMap, rowMap}, reduceCols,
            [](OpBuilder &nb, Location bl, ValueRange args) -> Value {
              auto reassoc = arith::FastMathFlagsAttr::get(
                  nb.getContext(), arith::FastMathFlags::reassoc);
              return arith::AddFOp::create(nb, bl, args[0], args[1], reassoc);
            });
        Value vTile = extractRows(b, loc, v, bi, hk, k0, cols);
        // Dropout acts on P V only; l sums the probabilities kept or not.
        Value pv = p;
        if (auto dropout = op.getDropoutPAttr())
          pv = buildDropoutTile(lb, l, p, op.getDropoutSeed(),
                                dropout.getValueAsDouble(), bi, h, q0, k0);
        Value acc = buildGeneric(
            lb, l, iters[1], {pv, vTile},
            // (r, j, e) with the head dim innermost: contiguous in V and
            // acc, so the host loop vectorizes.
            {dimsMap(ctx, 3, {0, 1}), dimsMap(ctx, 3, {1, 2}),
             dimsMap(ctx, 3, {0, 2})},
            {kPar, kRed, kPar},
            [](OpBuilder &nb, Location bl, ValueRange args) -> Value {
              Value vj = extToF32(nb, bl, args[1]);
              Value prod = arith::MulFOp::create(nb, bl, args[0], vj);
              return arith::AddFOp::create(nb, bl, args[2], prod);
            });
        scf::YieldOp::create(lb, l, ValueRange{sum, acc});
      });
  sumLoop->setAttr(kRowSumLoopAttr, b.getUnitAttr());
  Value rowSum = sumLoop.getResult(0), acc = sumLoop.getResult(1);

  // O = acc / l (0 for an empty row), lse = m + log l (-inf for one).
  Value outTile = buildGeneric(
      b, loc,
      tensor::EmptyOp::create(b, loc, {rows, b.getIndexAttr(headDimV)}, et),
      {acc, rowSum}, {tileMap, rowMap, tileMap}, {kPar, kPar},
      [&](OpBuilder &nb, Location l, ValueRange args) -> Value {
        Value zero = f32Const(nb, l, 0.0);
        Value empty = arith::CmpFOp::create(nb, l, arith::CmpFPredicate::OEQ,
                                            args[1], zero);
        Value quotient = arith::DivFOp::create(nb, l, args[0], args[1]);
        Value o = arith::SelectOp::create(nb, l, empty, zero, quotient);
        return et.isF32() ? o : arith::TruncFOp::create(nb, l, et, o);
      });
  SmallVector<Value> tileResults = {outTile};
  if (op.getLse()) {
    AffineMap id1 = dimsMap(ctx, 1, {0});
    tileResults.push_back(buildGeneric(
        b, loc, tensor::EmptyOp::create(b, loc, {rows}, b.getF32Type()),
        {rowMax, rowSum}, {id1, id1, id1}, {kPar},
        [](OpBuilder &nb, Location l, ValueRange args) -> Value {
          Value logSum = math::LogOp::create(nb, l, args[1]);
          return arith::AddFOp::create(nb, l, args[0], logSum);
        }));
  }

  // Write the tiles into the shared outputs.
  b.setInsertionPointToStart(forall.getTerminator().getBody());
  OpFoldResult one = b.getIndexAttr(1), zero = b.getIndexAttr(0);
  tensor::ParallelInsertSliceOp::create(
      b, loc, tileResults[0], forall.getRegionIterArgs()[0],
      ArrayRef<OpFoldResult>{bi, h, q0, zero},
      ArrayRef<OpFoldResult>{one, one, rows, b.getIndexAttr(headDimV)},
      ArrayRef<OpFoldResult>{one, one, one, one});
  if (op.getLse())
    tensor::ParallelInsertSliceOp::create(
        b, loc, tileResults[1], forall.getRegionIterArgs()[1],
        ArrayRef<OpFoldResult>{bi, h, q0},
        ArrayRef<OpFoldResult>{one, one, rows},
        ArrayRef<OpFoldResult>{one, one, one});

  b.setInsertionPointAfter(forall);
  return castToTypes(b, loc, forall.getResults(), op->getResultTypes());
}

struct FATilePass : public mlir::fa::impl::FATileBase<FATilePass> {
  using Base::Base;
  void runOnOperation() override {
    if (failed(checkBlockSizes(getOperation(), "fa-tile", blockQ, blockKV)))
      return signalPassFailure();
    // On the GPU route fa-fuse has outlined each op into a kernel: the GPU
    // flavour writes the kernel's CTA program (TileGpu.cpp).
    SmallVector<gpu::GPUFuncOp> kernels;
    getOperation()->walk([&](gpu::GPUFuncOp kernel) {
      if (getOutlinedAttention(kernel))
        kernels.push_back(kernel);
    });
    for (gpu::GPUFuncOp kernel : kernels)
      if (failed(tileForwardKernel(kernel)))
        return signalPassFailure();
    SmallVector<AttentionOp> ops;
    getOperation()->walk([&](AttentionOp op) {
      if (!op->getParentOfType<gpu::GPUFuncOp>())
        ops.push_back(op);
    });
    IRRewriter rewriter(&getContext());
    for (AttentionOp op : ops) {
      rewriter.setInsertionPoint(op);
      rewriter.replaceOp(op, Tiler(rewriter, op, blockQ, blockKV).build());
    }
  }
};

} // namespace
