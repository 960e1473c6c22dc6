//===- AttentionGradToNVVM.h - fa.attention_grad's GPU kernels --*- C++ -*-===//

#ifndef FA_LIB_CONVERSION_FATONVVM_ATTENTIONGRADTONVVM_H
#define FA_LIB_CONVERSION_FATONVVM_ATTENTIONGRADTONVVM_H

#include "fa/Dialect/FA/IR/FAOps.h"
#include "fa/Target/GpuTarget.h"
#include "mlir/IR/Builders.h"

namespace mlir::fa::nvvm {

/// How the backward kernels are built.
struct GradKernelOptions {
  /// dkdv double-buffers its Q tiles: the next tile's Q, dO, lse and Dsum
  /// load while the current one is computed.
  bool prefetch = true;
  /// dkdv adds dS K into an f32 accumulator (kernel parameter `dq_accum`,
  /// [B, Hq, Nq, D] rows at Dsum's (b, h, i) offset times D) with atomics,
  /// dsum zeroes it first, and dq_convert scales it into dQ. Otherwise dQ
  /// gets its own kernel (dq), which computes S and dP again: no atomics,
  /// bitwise reproducible.
  bool atomicDQ = false;
  /// The GPU the kernels are for (null: sm_80's features). With BulkCopy and
  /// atomic dQ, dkdv adds each Q tile's dQ with one bulk reduction
  /// (cp.reduce.async.bulk .add.f32) of a shared-memory tile instead of one
  /// atomic per element; with Wgmma (sm_90a) the tiles tuned on the H100
  /// apply (GradKernelBuilder).
  const ::fa::target::GpuTarget *target = nullptr;
  /// Warps of a dkdv CTA, each owning 16 key rows: 4 or 8; 0 picks
  /// (GradKernelBuilder). 8 warps share each Q tile among 128 keys: half the
  /// Q/dO copies per key and, with atomic dQ, half the additions into the
  /// accumulator, at one CTA per SM.
  int64_t dkdvWarps = 0;
  /// On sm_90a, the plain path's dK/dV kernel of atomic dQ in 8 warps with
  /// 64-row Q tiles (D = 64, 128) multiplies with wgmma: each warpgroup's
  /// 64 keys are one m64 tile, and its operands are read by the tensor
  /// cores from shared memory once per warpgroup (mma.sync reads them once
  /// per warp, through ldmatrix: the kernel's bottleneck).
  bool wgmma = true;
  /// dQ by the dq kernel even where atomic dQ is the default (excludes
  /// `atomicDQ`). Neither: atomic dQ where its dK/dV kernel multiplies with
  /// wgmma, the dq kernel elsewhere.
  bool deterministic = false;
};

/// Emits the backward kernels of `op` (supported: see unsupportedReason) at
/// the insertion point, a gpu.module: fa_backward_dsum_<suffix>,
/// fa_backward_dkdv_<suffix>, fa_backward_dq_<suffix> or (atomicDQ)
/// fa_backward_dq_convert_<suffix> and, when `op` has a grad_bias result,
/// fa_backward_dbias_<suffix>, to be launched in that order. Each carries
/// its ABI (fa.kernel_abi): the parameters they share, its grid, threads and
/// shared memory. Fails after an error on `op` (a bad `options.dkdvWarps`).
LogicalResult buildAttentionGradKernels(OpBuilder &b, AttentionGradOp op,
                                        StringRef suffix,
                                        GradKernelOptions options = {});

} // namespace mlir::fa::nvvm

#endif // FA_LIB_CONVERSION_FATONVVM_ATTENTIONGRADTONVVM_H
