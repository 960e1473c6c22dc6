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
#include <string>

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

} // namespace mlir::fa

#endif // FA_COMPILER_CUDAJIT_H
