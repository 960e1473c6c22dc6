//===- CudaJit.h - Compile fa.attention(_grad) to PTX kernels ---*- C++ -*-===//
//
// The compiler half of the GPU path: fa.attention or fa.attention_grad ->
// fa-pipeline-cuda -> PTX plus the launch contract the runtime needs, and
// the launches. Internal (MLIR types).
//
//===----------------------------------------------------------------------===//

#ifndef FA_COMPILER_CUDAJIT_H
#define FA_COMPILER_CUDAJIT_H

#include "fa/Compiler/Pipelines.h"
#include "fa/Dialect/FA/IR/FAOps.h"
#include "mlir/Support/LLVM.h"

#include "fa/Runtime/Cuda.h"
#include "fa/Runtime/KernelAbi.h"

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

namespace fa::runtime {
struct CachedKernel;
} // namespace fa::runtime

namespace mlir::fa {

/// A compiled forward kernel: PTX text and how to launch it (its ABI, which
/// convert-fa-to-nvvm attached to it as #fa.kernel_abi), and where the op's
/// mask_mod bounds its key loop, the key-range kernel launched before it
/// (fa-key-ranges; KernelAbi.h).
struct CudaKernelImage {
  std::string ptx;
  std::string chip;
  ::fa::runtime::KernelAbi abi;
  std::optional<::fa::runtime::KernelAbi> keyRanges;
};

/// The forward kernel's tile and copy stages (fa-pipeline-cuda's block-q,
/// block-kv and kv-stages; 0: the default for the op's D), and whether it
/// multiplies with wgmma where the chip has it (fwd-wgmma), overlaps its
/// softmax with P V there (fwd-overlap, off by default) and copies in a
/// producer warpgroup (fwd-warp-specialize), with TMA (fwd-tma), the
/// consumer warpgroups' ping-pong (fwd-pingpong) and their softmax under
/// P V (fwd-ws-overlap), and whether a mask_mod bounds its key loop
/// (fwd-key-ranges).
struct CudaForwardTile {
  int64_t blockQ = 0, blockKV = 0, kvStages = 0;
  bool wgmma = true;
  bool overlap = false;
  bool warpSpecialize = true;
  bool tma = true;
  bool pingpong = true;
  bool wsOverlap = true;
  /// fwd-persistent: auto, always or never.
  std::string persistent = "auto";
  /// fwd-key-ranges.
  bool keyRanges = true;
  /// fwd-head-group (0: the default).
  int64_t headGroup = 0;
  /// fwd-causal-order: tail or paired.
  std::string causalOrder = "tail";
  /// fwd-bounded-softmax.
  bool boundedSoftmax = true;
  /// fwd-exp2-fma (-1: the default for the variant).
  int64_t exp2Fma = -1;
  /// fwd-tanh-fma (-1: the default for the variant).
  int64_t tanhFma = -1;
  /// fwd-bias-tiles.
  bool biasTiles = true;
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

/// A capture of a call: the device pointer of its first element and its
/// element strides (one per dim; the kernel reads only the elements the
/// regions index).
using CudaCapture = ::fa::runtime::KernelCall::Capture;

/// Launches kernel `abi` (loaded as `function`) for `call` on `stream`: its
/// parameters are the values of `call` its ABI names (ParamBuffer), its grid
/// that of its rule (getLaunchGrid); nothing is launched for an empty grid.
/// A call that lacks what the kernel takes (e.g. another count of captures)
/// is an error, as is a grid past CUDA's limits.
///
/// The forward's call (KernelCall): device pointers and element strides of
/// q, k, v, o (batch, head, row) and lse (batch, head; rows contiguous), the
/// sizes and scale * log2(e); where the op has them, the bias (element
/// strides (b, h, i, j), 0 where it broadcasts), the f32 ALiBi slopes (batch
/// stride, 0 for `[Hq]`), the dropout seed and the captures.
::fa::runtime::Status launchCudaKernel(const ::fa::runtime::KernelAbi &abi,
                                       const ::fa::runtime::Function &function,
                                       const ::fa::runtime::KernelCall &call,
                                       void *stream);
/// The kernels of a cache entry, loaded, in its order.
struct CudaFunctions {
  std::vector<::fa::runtime::Function> kernels;
};

/// Gets the kernels of `kernel` from `module` (loaded from `kernel.image`)
/// and allows each its dynamic shared memory.
::fa::runtime::Expected<CudaFunctions>
loadCudaFunctions(const ::fa::runtime::CachedKernel &kernel,
                  const ::fa::runtime::Module &module);

/// Bytes of the forward's workspace for `call` (its batch, heads and Nq):
/// the key ranges where `kernel` has a key-range kernel, else 0.
uint64_t getCudaForwardWorkspaceBytes(const ::fa::runtime::CachedKernel &kernel,
                                      const ::fa::runtime::KernelCall &call);

/// Launches the forward of a cache entry: its kernel, or where it has two
/// the key-range kernel (the second) and then the forward (the first), on
/// key ranges in `workspace` (at least getCudaForwardWorkspaceBytes(),
/// 256-byte aligned) or, where it is 0, in memory the stream-ordered
/// allocator gives the call (cuMemAllocAsync) and frees after them; never
/// waits on the host.
::fa::runtime::Status
launchCudaForward(const ::fa::runtime::CachedKernel &kernel,
                  const CudaFunctions &functions,
                  const ::fa::runtime::KernelCall &call, void *stream,
                  uint64_t workspace = 0);

//===----------------------------------------------------------------------===//
// The backward (fa.attention_grad)
//===----------------------------------------------------------------------===//

/// The backward's kernels as PTX: one module, with three kernels launched
/// in order (dsum, dkdv, dq or dq_convert), and a fourth (dbias) when the op
/// has a grad_bias result; each with its ABI.
struct CudaBackwardImage {
  std::string ptx;
  std::string chip;
  std::vector<::fa::runtime::KernelAbi> kernels;
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

/// Lowers `op` (and nothing else) with fa-pipeline-cuda for `chip`.
/// Failures are reported through the context's diagnostics.
FailureOr<CudaBackwardImage>
compileCudaBackward(AttentionGradOp op, StringRef chip,
                    CudaBackwardOptions options = {});

/// The backward kernels of `op` for `chip` from the kernel cache, compiled
/// and stored on a miss, like getOrCompileCudaKernel. The entry's kernels
/// are dsum, dkdv, dq or dq_convert (and dbias), in launch order.
std::shared_ptr<const ::fa::runtime::CachedKernel>
getOrCompileCudaBackward(AttentionGradOp op, StringRef chip, bool &compiled,
                         std::string &error, CudaBackwardOptions options = {});

/// One call of the backward. Tensors are those of fa.attention_grad, all
/// on the device, rows contiguous (stride 1 in the head dim), 16-byte
/// aligned with batch, head and row strides that are multiples of 16 bytes
/// (cp.async and 16-byte loads): q, k, v, o, do, lse (inputs; o and lse as
/// the forward wrote them), dq, dk, dv (outputs, written whole: no zeroing
/// needed) with their element strides (batch, head, row; lse batch, head),
/// the sizes, scale * log2(e) and scale; where the op has them, the bias,
/// ALiBi slopes and dBias (the op's grad_bias: the bias's shape and type,
/// written whole) with their strides, the forward's dropout seed and the
/// captures. Dsum and the dQ accumulator are the launcher's (in the
/// workspace).
struct CudaBackwardCall : ::fa::runtime::KernelCall {
  /// Dsum, [B, Hq, Nq] f32 contiguous, and with atomic dQ the f32 dQ
  /// accumulator after it: at least getCudaBackwardWorkspaceBytes() bytes of
  /// device memory (256-byte aligned) the launch may overwrite; 0:
  /// launchCudaBackward allocates it on the call's stream (cuMemAllocAsync)
  /// and frees it there after the kernels (cuMemFreeAsync), without waiting.
  uint64_t workspace = 0;
};

/// Bytes of the workspace of `call` to the kernels of `kernel`: Dsum, B * Hq
/// * Nq * 4 rounded up to 256, then B * Hq * Nq * D * 4 with atomic dQ; at
/// least 1024 (with Nq = 0, the scratch the dK/dV kernel's discarded loads
/// address).
uint64_t
getCudaBackwardWorkspaceBytes(const ::fa::runtime::CachedKernel &kernel,
                              const CudaBackwardCall &call);

/// Launches dsum, dkdv, dq or dq_convert (and dbias) on `stream`; never
/// waits on the host (a CUDA graph may capture it). Empty problems launch
/// nothing that is not needed: Nk = 0 gives dQ = 0, Nq = 0 gives dK = dV = 0
/// (and dBias = 0 where it has elements).
::fa::runtime::Status
launchCudaBackward(const ::fa::runtime::CachedKernel &kernel,
                   const CudaFunctions &functions, const CudaBackwardCall &call,
                   void *stream);

} // namespace mlir::fa

#endif // FA_COMPILER_CUDAJIT_H
