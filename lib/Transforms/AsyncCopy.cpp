//===- AsyncCopy.cpp - The K/V pipeline depth of forward kernels ----------===//
//
// Deeper cp.async pipelines hide more copy latency but take shared memory,
// which bounds the CTAs an SM can hold: the depth is chosen per kernel and
// checked against the chip here, before any code is emitted.
//
//===----------------------------------------------------------------------===//

#include "fa/Dialect/FAGPU/IR/FAGPU.h"
#include "fa/Transforms/GpuKernels.h"
#include "fa/Transforms/Passes.h"
#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/GPU/IR/GPUDialect.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/IR/Builders.h"

namespace mlir::fa {
#define GEN_PASS_DEF_FAASYNCCOPY
#include "fa/Transforms/Passes.h.inc"
} // namespace mlir::fa

using namespace mlir;
using namespace mlir::fa;

namespace {

struct FAAsyncCopyPass
    : public mlir::fa::impl::FAAsyncCopyBase<FAAsyncCopyPass> {
  using Base::Base;
  void runOnOperation() override {
    ModuleOp module = getOperation();
    auto kernels = module.lookupSymbol<gpu::GPUModuleOp>(kKernelModuleName);
    if (!kernels)
      return;
    std::string chip = getKernelChip(module);
    for (auto kernel : kernels.getOps<gpu::GPUFuncOp>()) {
      // fa-tile's kernels, which copy synchronously (an outlined
      // fa.attention fa-tile did not take is left to convert-fa-to-nvvm's
      // error).
      bool synchronous = false;
      kernel.walk([&](fagpu::CopyOp) { synchronous = true; });
      if (!synchronous)
        continue;
      FailureOr<ForwardTile> tile =
          chooseKVStages(kernel, stages, chip, "fa-async-copy");
      if (failed(tile))
        return signalPassFailure();
      FailureOr<int64_t> ringed = ringForwardCopies(kernel, tile->kvStages);
      if (failed(ringed))
        return signalPassFailure();
      kernel->setAttr(kKVStagesAttr,
                      Builder(&getContext()).getI64IntegerAttr(tile->kvStages));
      // The shared memory the kernel now needs, for its launches.
      for (gpu::LaunchFuncOp launch : getLaunchesOf(module, kernel))
        setDynamicSharedBytes(launch, *ringed);
    }
  }
};

} // namespace
