//===- CudaJit.h - Compile fa.attention(_grad) to PTX kernels ---*- C++ -*-===//
//
// The compiler half of the GPU path: fa.attention or fa.attention_grad ->
// fa-pipeline-cuda -> PTX plus the launch contract the runtime needs, and
// the launches. Internal (MLIR types).
//
//===----------------------------------------------------------------------===//

#ifndef FA_COMPILER_CUDAJIT_H
#define FA_COMPILER_CUDAJIT_H

#include "fa/Dialect/FA/IR/FAOps.h"
#include "mlir/Support/LLVM.h"

#include "fa/Runtime/Cuda.h"

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

namespace fa::runtime {
struct CachedKernel;
} // namespace fa::runtime

namespace mlir::fa {

/// A compiled kernel: PTX text and how to launch it. Grid is
/// (ceil(Nq / blockQ), Hq, B), block (threads, 1, 1).
struct CudaKernelImage {
  std::string ptx;
  std::string name;
  std::string chip;
  int64_t sharedBytes = 0;
  int64_t blockQ = 0;
  int64_t threads = 0;
  /// Whether the kernel takes the scored path's parameters (bias, ALiBi
  /// slopes: kCudaForwardScoredParams).
  bool scored = false;
  /// Whether the kernel takes the dropout seed after them
  /// (kCudaForwardDropoutParams).
  bool dropout = false;
  /// The rank of each capture (parameters after the others).
  std::vector<int64_t> captureRanks;
};

/// The parameters of captures of `ranks`, which follow a kernel's own
/// (forward and backward): per capture its pointer and one element stride
/// per dim, as a parameter layout's tail: ",capture0,capture0_strides[r0],
/// capture1,...", empty without captures.
std::string getCudaCaptureParams(ArrayRef<int64_t> ranks);

/// The parameter layouts of the forward kernel (CachedKernel::paramLayout):
/// plain, with ALiBi, bias, score_mod or mask_mod, and with dropout (the
/// scored parameters and the i64 seed); each followed by
/// getCudaCaptureParams(ranks) where the op has captures.
inline constexpr const char *kCudaForwardParams =
    "q,k,v,o,lse,strides[14],nq,nk,group,scale";
inline constexpr const char *kCudaForwardScoredParams =
    "q,k,v,o,lse,strides[14],nq,nk,group,scale,bias,bias_strides[4],slopes,"
    "slopes_stride";
inline constexpr const char *kCudaForwardDropoutParams =
    "q,k,v,o,lse,strides[14],nq,nk,group,scale,bias,bias_strides[4],slopes,"
    "slopes_stride,seed";

/// The forward kernel's tile and copy stages (fa-pipeline-cuda's block-q,
/// block-kv and kv-stages; 0: the default for the op's D).
struct CudaForwardTile {
  int64_t blockQ = 0, blockKV = 0, kvStages = 0;
};

/// Lowers `op` (and nothing else) with fa-pipeline-cuda for `chip` and
/// returns the PTX. Failures are reported through the context's diagnostics.
FailureOr<CudaKernelImage> compileCudaKernel(AttentionOp op, StringRef chip,
                                             CudaForwardTile tile = {});

/// The kernel of `op` for `chip` from the kernel cache (memory, then
/// $FA_CACHE_DIR), compiled and stored on a miss. Sets `compiled` when it was
/// compiled now. Returns null, with the reason in `error`, on failure.
std::shared_ptr<const ::fa::runtime::CachedKernel>
getOrCompileCudaKernel(AttentionOp op, StringRef chip, bool &compiled,
                       std::string &error, CudaForwardTile tile = {});

/// A capture: the device pointer of its first element and its element
/// strides (one per dim; the kernel reads only the elements the regions
/// index).
struct CudaCapture {
  uint64_t data = 0;
  std::vector<int64_t> strides;
};

/// One call of the kernel, in the ABI convert-fa-to-nvvm defines: device
/// pointers of q, k, v, o, lse; element strides (batch, head, row) of q, k,
/// v, o and (batch, head) of lse (rows contiguous); sizes; scale * log2(e).
/// A scored kernel also reads the bias (any element strides (b, h, i, j),
/// 0 where it broadcasts) and the f32 ALiBi slopes (`[Hq]`: batch stride 0,
/// or `[B, Hq]`), each where the op has it. A dropout kernel also reads
/// the seed.
struct CudaAttentionCall {
  uint64_t pointers[5] = {0, 0, 0, 0, 0};
  int64_t strides[14] = {};
  int64_t batch = 0, headsQ = 0, headsKV = 0, seqQ = 0, seqKV = 0;
  float scaleLog2 = 0;
  uint64_t bias = 0;
  int64_t biasStrides[4] = {};
  uint64_t slopes = 0;
  int64_t slopesBatchStride = 0;
  /// The dropout seed (the kernel's Philox key).
  int64_t seed = 0;
  /// The op's captures, in order (their ranks must be the kernel's).
  std::vector<CudaCapture> captures;
};

/// Launches `kernel` (loaded as `function`) on `stream` with its grid
/// (ceil(Nq / blockQ), Hq, B); nothing is launched for an empty output.
::fa::runtime::Status
launchCudaKernel(const ::fa::runtime::CachedKernel &kernel,
                 const ::fa::runtime::Function &function,
                 const CudaAttentionCall &call, void *stream);

/// The Q rows per CTA of a cached kernel (its grid is (ceil(Nq / that), Hq,
/// B)), or 0 when its grid rule is not FA's.
int64_t getBlockQ(const ::fa::runtime::CachedKernel &kernel);

//===----------------------------------------------------------------------===//
// The backward (fa.attention_grad)
//===----------------------------------------------------------------------===//

/// One kernel of a module: its .entry name, grid rule (e.g.
/// "ceil(Nk/64),Hkv,B"), threads per CTA and dynamic shared memory.
struct CudaEntryPoint {
  std::string name;
  std::string gridRule;
  int64_t threads = 0;
  int64_t sharedBytes = 0;
};

/// The backward's kernels as PTX: one module, three entry points launched
/// in order (dsum, dkdv, dq), and a fourth (dbias) when the op has a
/// grad_bias result.
struct CudaBackwardImage {
  std::string ptx;
  std::string chip;
  std::vector<CudaEntryPoint> entries;
  /// Whether the kernels take the scored path's parameters (bias, ALiBi
  /// slopes, dBias: kCudaBackwardScoredParams), and the dropout seed after
  /// them (kCudaBackwardDropoutParams).
  bool scored = false;
  bool dropout = false;
  /// The rank of each capture (parameters after the others).
  std::vector<int64_t> captureRanks;
  /// D of the f32 dQ accumulator the kernels take (getCudaDQAccumParam), or
  /// 0 without atomic dQ.
  int64_t dqAccumDim = 0;
};

/// How the backward is compiled (fa-pipeline-cuda's bwd-* options; part of
/// the cache key).
struct CudaBackwardOptions {
  /// dK/dV double-buffers its Q tiles.
  bool prefetch = true;
  /// The dK/dV kernel adds dQ into an f32 accumulator (atomics, or bulk
  /// reductions on sm_90a): dQ's bits vary run to run. `deterministic`: dQ
  /// gets its own kernel (bitwise reproducible). Neither: atomic where the
  /// dK/dV kernel is the wgmma one (sm_90a, plain path, D = 64 or 128),
  /// else the dQ kernel.
  bool atomicDQ = false;
  /// Warps of a dK/dV CTA, 4 or 8; 0: the default.
  int64_t dkdvWarps = 0;
  /// On sm_90a, the dK/dV kernel of atomic dQ in 8 warps multiplies with
  /// wgmma (false: mma.sync, for comparison).
  bool wgmma = true;
  bool deterministic = false;
};

/// The parameter layouts of the backward kernels (CachedKernel::paramLayout,
/// the same for all of an op's): plain, with ALiBi, bias, score_mod or
/// mask_mod, and with dropout (those and the i64 seed); each followed by
/// getCudaDQAccumParam(D) with atomic dQ, then getCudaCaptureParams(ranks)
/// where the op has captures.
inline constexpr const char *kCudaBackwardParams =
    "q,k,v,o,do,lse,dq,dk,dv,dsum,strides[28],nq,nk,group,scale_log2,scale";
inline constexpr const char *kCudaBackwardScoredParams =
    "q,k,v,o,do,lse,dq,dk,dv,dsum,strides[28],nq,nk,group,scale_log2,scale,"
    "bias,bias_strides[4],slopes,slopes_stride,dbias,dbias_strides[4],b,hq";
inline constexpr const char *kCudaBackwardDropoutParams =
    "q,k,v,o,do,lse,dq,dk,dv,dsum,strides[28],nq,nk,group,scale_log2,scale,"
    "bias,bias_strides[4],slopes,slopes_stride,dbias,dbias_strides[4],b,hq,"
    "seed";

/// The parameter of the f32 dQ accumulator ([B, Hq, Nq, d] in the
/// workspace, after Dsum) of kernels with atomic dQ: ",dq_accum_d<d>".
std::string getCudaDQAccumParam(int64_t d);

/// Lowers `op` (and nothing else) with fa-pipeline-cuda for `chip`.
/// Failures are reported through the context's diagnostics.
FailureOr<CudaBackwardImage>
compileCudaBackward(AttentionGradOp op, StringRef chip,
                    CudaBackwardOptions options = {});

/// The backward kernels of `op` for `chip` from the kernel cache, compiled
/// and stored on a miss, like getOrCompileCudaKernel. The entry holds the
/// dsum kernel as kernelName and dkdv, dq or dq_convert (and dbias) as its
/// `entries`.
std::shared_ptr<const ::fa::runtime::CachedKernel>
getOrCompileCudaBackward(AttentionGradOp op, StringRef chip, bool &compiled,
                         std::string &error, CudaBackwardOptions options = {});

/// One call of the backward. Tensors are those of fa.attention_grad, all
/// on the device, rows contiguous (stride 1 in the head dim), 16-byte
/// aligned with batch, head and row strides that are multiples of 16 bytes
/// (cp.async and 16-byte loads).
struct CudaBackwardCall {
  /// Device pointers: q, k, v, o, dO, lse (inputs; o and lse as the forward
  /// wrote them), dq, dk, dv (outputs, written whole: no zeroing needed).
  uint64_t pointers[9] = {};
  /// Element strides (batch, head, row) of q, k, v, o, dO, dq, dk, dv, then
  /// (batch, head) of lse.
  int64_t strides[26] = {};
  int64_t batch = 0, headsQ = 0, headsKV = 0, seqQ = 0, seqKV = 0;
  /// scale * log2(e), and scale (the op's, or 1 / sqrt(D)).
  float scaleLog2 = 0, scale = 0;
  /// Dsum, [B, Hq, Nq] f32 contiguous, and with atomic dQ the f32 dQ
  /// accumulator after it: at least getCudaBackwardWorkspaceBytes() bytes of
  /// device memory (256-byte aligned) the launch may overwrite; 0:
  /// launchCudaBackward allocates it and waits for the stream before freeing
  /// it (a synchronous call).
  uint64_t workspace = 0;
  /// The scored path (read where the op has them, like CudaAttentionCall):
  /// the bias with element strides (b, h, i, j; 0 where it broadcasts), the
  /// f32 ALiBi slopes (batch stride 0 for `[Hq]`), and dBias (the op's
  /// grad_bias: the bias's shape and type, written whole) with its element
  /// strides.
  uint64_t bias = 0;
  int64_t biasStrides[4] = {};
  uint64_t slopes = 0;
  int64_t slopesBatchStride = 0;
  uint64_t dbias = 0;
  int64_t dbiasStrides[4] = {};
  /// The op's captures, in order (their ranks must be the kernels').
  std::vector<CudaCapture> captures;
  /// The forward's dropout seed (read where the op has dropout).
  int64_t seed = 0;
};

/// Bytes of the workspace of `call` to the kernels of `kernel`: Dsum, B * Hq
/// * Nq * 4 rounded up to 256, then B * Hq * Nq * D * 4 with atomic dQ.
uint64_t
getCudaBackwardWorkspaceBytes(const ::fa::runtime::CachedKernel &kernel,
                              const CudaBackwardCall &call);

/// The kernels of a backward cache entry, loaded (dbias where it has one).
struct CudaBackwardFunctions {
  ::fa::runtime::Function dsum, dkdv, dq;
  std::optional<::fa::runtime::Function> dbias;
};

/// Gets the backward's kernels from `module` (loaded from `kernel.image`)
/// and allows each its dynamic shared memory.
::fa::runtime::Expected<CudaBackwardFunctions>
loadCudaBackward(const ::fa::runtime::CachedKernel &kernel,
                 const ::fa::runtime::Module &module);

/// Launches dsum, dkdv, dq or dq_convert (and dbias) on `stream` (asynchronous
/// unless the launcher allocates the workspace). Empty problems launch nothing
/// that is not needed: Nk = 0 gives dQ = 0, Nq = 0 gives dK = dV = 0 (and dBias
/// = 0 where it has elements).
::fa::runtime::Status
launchCudaBackward(const ::fa::runtime::CachedKernel &kernel,
                   const CudaBackwardFunctions &functions,
                   const CudaBackwardCall &call, void *stream);

} // namespace mlir::fa

#endif // FA_COMPILER_CUDAJIT_H
