//===- FAGPUToNVVM.h - fagpu ops to NVVM ------------------------*- C++ -*-===//
//
// The lowering of FA's kernel-level IR: a gpu.func of fagpu ops becomes an
// llvm.func of NVVM. Register tiles (tensors with an fagpu layout) become
// the values each thread holds (1:N), shared tiles a pointer into the
// kernel's shared memory, tokens nothing (cp.async groups are implicit per
// thread). The patterns are split by instruction family: copies
// (CopyToNVVM.cpp: cp.async), tensor-core products and fragments
// (MmaToNVVM.cpp: ldmatrix, mma.sync), row values and masks
// (RowsToNVVM.cpp: shuffles, predicates), and element-wise ops and the
// kernel frame (FAGPUToNVVM.cpp).
//
//===----------------------------------------------------------------------===//

#ifndef FA_LIB_CONVERSION_FATONVVM_FAGPUTONVVM_H
#define FA_LIB_CONVERSION_FATONVVM_FAGPUTONVVM_H

#include "KernelBuilder.h"
#include "fa/Dialect/FAGPU/IR/FAGPU.h"
#include "mlir/Dialect/GPU/IR/GPUDialect.h"
#include "mlir/Transforms/DialectConversion.h"

namespace mlir::fa::nvvm {

/// Where the kernel's global buffers and sizes are in the llvm.func: each
/// memref argument of the gpu.func stands for a pointer (to its first
/// element) and element strides (i64) of its outer dims; the sizes the kernel
/// reads are i32 parameters.
struct KernelBinding {
  struct Buffer {
    Value ptr;
    SmallVector<Value, 3> strides;
  };
  /// Keyed by the memref value ops use.
  DenseMap<Value, Buffer> buffers;
  /// Buffers read one element at a time (bias, slopes, captures): a stride
  /// per dim, the last included.
  DenseSet<Value> elements;
  /// (memref, dim) -> its size (i32).
  DenseMap<std::pair<Value, int64_t>, Value> sizes;
  /// Hq / Hkv (i32).
  Value group;
  /// The base of the dynamic shared memory (!llvm.ptr<3>).
  Value smem;
  /// wgmma reads the shared tiles (the async proxy): a wait for copies
  /// fences their writes to it before the barrier that publishes them.
  bool asyncProxyReads = false;
  /// Threads per CTA (the copies split tiles over them); with warp
  /// specialization, the consumers' threads.
  int64_t threads = kThreads;
  /// The ops of a `fagpu.warp_specialize`'s producer region, which run on
  /// threads [threads, threads + 128): its copies split tiles over those.
  DenseSet<Operation *> producerOps;
  /// Where every copy of the producer is bulk, one thread runs it.
  bool singleThreadProducer = false;
  /// The tensor map (a byval kernel parameter, KernelAbi.h) of each buffer
  /// that bulk copies read, keyed like `buffers`.
  DenseMap<Value, Value> tensorMaps;
  /// Waits on barriers that only bulk copies fill: their writes are the
  /// async proxy's already, so no fence follows.
  DenseSet<Operation *> unfencedWaits;
  /// The CTA's place, from the kernel's prologue, Hq and B (i32).
  Value batch, head, tile, heads, batches;
  /// The kernel is persistent (fagpu.work_slot): its CTAs loop over items.
  bool persistent = false;
  /// Of every 8 values of a register tile's exp2, how many a polynomial on
  /// the FMA pipe computes (`fa.exp2_fma`).
  int64_t exp2Fma = 0;
  /// Of every 8 values of a register tile's tanh, how many take their
  /// reciprocal from Newton steps on the FMA pipe (`fa.tanh_fma`).
  int64_t tanhFma = 0;
};

/// A conversion pattern of an op whose lowering reads the kernel's
/// binding (its buffers, sizes, shared memory).
template <typename OpT> struct BoundPattern : public OpConversionPattern<OpT> {
  BoundPattern(const TypeConverter &converter, MLIRContext *ctx,
               const KernelBinding &binding)
      : OpConversionPattern<OpT>(converter, ctx), binding(binding) {}
  const KernelBinding &binding;
};

/// Rows of the box a bulk copy into `tile` issues (the tensor map's box
/// rows): the whole tile, whose D / 64 slabs of 128-byte rows one box
/// (64, rows, D / 64) writes as they are.
inline int64_t getBulkBoxRows(fagpu::SharedType tile) { return tile.getRows(); }

/// The columns of the rows a copy reads from `source` (a [B, H, N, D]
/// memref) into `tile`: its static D, else the tile's. Below the tile's, a
/// wgmma tile's padding, which the copy and the tensor map fill with zeros.
inline int64_t getSourceCols(Value source, fagpu::SharedType tile) {
  auto type = cast<MemRefType>(source.getType());
  return type.isDynamicDim(3) ? tile.getCols() : type.getDimSize(3);
}

/// The calling thread's id, warp, lane, and the lane's row group (lane / 4)
/// and quad position (lane % 4) in mma.sync fragments (all i32). With
/// `rebuilt`, the id passes through an opaque mov: what is computed from it
/// (the epilogue's addresses) is not merged with the prologue's values and
/// kept live across the loop.
struct LaneIds {
  Value tid, warp, lane, g, tq;
};
LaneIds getLaneIds(KernelBuilder &kb, OpBuilder &b, Location loc,
                   bool rebuilt = false);

/// Places the per-row uses of row values (a rescale by alpha, the row sum's
/// rescale) right after each row's value is computed, in the order they are
/// asked for. The element-wise lowering would put them where the op is, all
/// rows at once: with them row by row after their factor, ptxas keeps two
/// m-tiles of D = 128 at 128 x 64 in registers (it spilled 24-48 bytes).
class RowwisePlacer {
public:
  explicit RowwisePlacer(Block *block) : block(block) {}
  /// Sets `b`'s insertion point after the last of `operands` computed in the
  /// block (after what was placed there before); leaves it where it is
  /// when none is.
  void setInsertionPoint(OpBuilder &b, ValueRange operands);
  /// Records `op` as the last placed after the same definition.
  void placed(Operation *op);

private:
  Block *block;
  Operation *anchor = nullptr;
  DenseMap<Operation *, Operation *> lastAfter;
};

/// The converted types: a register tile's values (f32, i1, or i32 pairs of
/// 16-bit operand elements), a shared tile's pointer, no value for a token.
void populateFAGPUTypeConversions(TypeConverter &converter);

void populateFAGPUCopyToNVVMPatterns(const TypeConverter &converter,
                                     const KernelBinding &binding,
                                     RewritePatternSet &patterns);
void populateFAGPUMmaToNVVMPatterns(const TypeConverter &converter,
                                    RewritePatternSet &patterns);
void populateFAGPURowsToNVVMPatterns(const TypeConverter &converter,
                                     const KernelBinding &binding,
                                     RewritePatternSet &patterns);
void populateFAGPUElementwiseToNVVMPatterns(const TypeConverter &converter,
                                            const KernelBinding &binding,
                                            RewritePatternSet &patterns);

/// Whether `kernel` is written in fagpu ops (and not an outlined fa.attention).
bool isFAGPUKernel(gpu::GPUFuncOp kernel);

/// Each argument's role in the kernel's ABI: its fa.abi attribute (fa-tile's:
/// q, k, v, o, lse, bias, slopes, seed, capture<i>), else q, k, v, o, lse in
/// order ("" past them).
SmallVector<std::string> getAbiRoles(gpu::GPUFuncOp kernel);

/// Lowers the fagpu kernel `kernel` (an attention forward: arguments Q, K,
/// V, O and optionally lse) to the llvm.func `name`.nvvm; `abi` is its ABI
/// (the forward's, less the scale, which the IR carries), `name` in its
/// #fa.kernel_abi. Erases `kernel`.
FailureOr<LLVM::LLVMFuncOp> lowerFAGPUKernel(gpu::GPUFuncOp kernel,
                                             StringRef name,
                                             ::fa::runtime::KernelAbi &abi);

/// The (row, column) of the elements a thread holds of an [M, N] tile in
/// `#fagpu.acc<warps>`, in the order of its values (i32): m-tile, n-tile,
/// then the 4 values (rows g, g, g + 8, g + 8; columns 2 t, 2 t + 1).
struct AccCoords {
  SmallVector<Value> rowOfRowSlot; // per m-tile x 2
  SmallVector<Value> colOfColSlot; // per n-tile x 2
  int64_t mTiles = 0, nTiles = 0;
  /// Rows between one m-tile of a warp and its next (16 x warps).
  int64_t rowStep = 16;
  Value row(int64_t mt, int64_t e) const {
    return rowOfRowSlot[mt * 2 + e / 2];
  }
  Value col(int64_t nt, int64_t e) const {
    return colOfColSlot[nt * 2 + (e & 1)];
  }
  /// row(mt, e) - row(0, 0) and col(nt, e) - col(0, 0): constants.
  int64_t rowOffset(int64_t mt, int64_t e) const {
    return mt * rowStep + 8 * (e / 2);
  }
  int64_t colOffset(int64_t nt, int64_t e) const { return nt * 8 + (e & 1); }
};
/// The coordinates, offset by (row0, col0) (i32).
AccCoords getAccCoords(KernelBuilder &kb, OpBuilder &b, Location loc,
                       RankedTensorType type, Value row0, Value col0,
                       bool rebuilt = false);

/// Stage `stage` (index) of the shared ring of `type` at `base`.
Value getStage(KernelBuilder &kb, OpBuilder &b, Location loc, Value base,
               Value stage, fagpu::SharedType type);

/// An index value as i32.
Value toI32(OpBuilder &b, Location loc, Value index);

} // namespace mlir::fa::nvvm

#endif // FA_LIB_CONVERSION_FATONVVM_FAGPUTONVVM_H
