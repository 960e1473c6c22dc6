//===- CudaJit.h - Compile fa.attention to a PTX kernel ---------*- C++ -*-===//
//
// The compiler half of the GPU path: fa.attention -> fa-pipeline-cuda ->
// PTX plus the launch contract the runtime needs. Internal (MLIR types).
//
//===----------------------------------------------------------------------===//

#ifndef FA_COMPILER_CUDAJIT_H
#define FA_COMPILER_CUDAJIT_H

#include "fa/Dialect/FA/IR/FAOps.h"
#include "mlir/Support/LLVM.h"

#include <cstdint>
#include <memory>
#include <string>

namespace fa::runtime {
struct CachedKernel;
class Function;
class Status;
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
};

/// Lowers `op` (and nothing else) with fa-pipeline-cuda for `chip` and
/// returns the PTX. Failures are reported through the context's diagnostics.
FailureOr<CudaKernelImage> compileCudaKernel(AttentionOp op, StringRef chip);

/// The kernel of `op` for `chip` from the kernel cache (memory, then
/// $FA_CACHE_DIR), compiled and stored on a miss. Sets `compiled` when it was
/// compiled now. Returns null, with the reason in `error`, on failure.
std::shared_ptr<const ::fa::runtime::CachedKernel>
getOrCompileCudaKernel(AttentionOp op, StringRef chip, bool &compiled,
                       std::string &error);

/// One call of the kernel, in the ABI convert-fa-to-nvvm defines: device
/// pointers of q, k, v, o, lse; element strides (batch, head, row) of q, k,
/// v, o and (batch, head) of lse (rows contiguous); sizes; scale * log2(e).
struct CudaAttentionCall {
  uint64_t pointers[5] = {0, 0, 0, 0, 0};
  int64_t strides[14] = {};
  int64_t batch = 0, headsQ = 0, headsKV = 0, seqQ = 0, seqKV = 0;
  float scaleLog2 = 0;
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

} // namespace mlir::fa

#endif // FA_COMPILER_CUDAJIT_H
