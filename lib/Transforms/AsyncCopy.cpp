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
    std::optional<int64_t> maxShared = maxSharedBytesPerBlock(chip);
    // The shared memory each kernel now needs, for its launches.
    llvm::StringMap<int64_t> sharedBytes;
    for (auto kernel : kernels.getOps<gpu::GPUFuncOp>()) {
      // fa-tile's kernels, which copy synchronously (an outlined
      // fa.attention fa-tile did not take is left to convert-fa-to-nvvm's
      // error).
      bool synchronous = false;
      kernel.walk([&](fagpu::CopyOp) { synchronous = true; });
      if (!synchronous)
        continue;
      bool twoPass = false;
      kernel.walk(
          [&](scf::ForOp loop) { twoPass |= loop->hasAttr(kRowMaxLoopAttr); });
      if (twoPass) {
        kernel.emitOpError("fa-async-copy: the kernel still has fa-tile's "
                           "two softmax loops (run fa-online-softmax first)");
        return signalPassFailure();
      }
      auto blockQ = kernel->getAttrOfType<IntegerAttr>(kBlockQAttr);
      auto blockKV = kernel->getAttrOfType<IntegerAttr>(kBlockKVAttr);
      if (!blockQ || !blockKV) {
        kernel.emitOpError("fa-async-copy: the kernel has no '")
            << kBlockQAttr << "' and '" << kBlockKVAttr
            << "' (outline it with fa-fuse)";
        return signalPassFailure();
      }
      if (stages < 0 || stages > kMaxKVStages) {
        kernel.emitOpError("fa-async-copy: stages must be 1 to ")
            << kMaxKVStages << " (got " << int64_t(stages) << ")";
        return signalPassFailure();
      }
      ForwardTile tile{blockQ.getInt(), blockKV.getInt()};
      int64_t d = cast<MemRefType>(kernel.getArgumentTypes()[0]).getDimSize(3);
      // The option, else the default fa-tile recorded for the variant.
      auto recorded = kernel->getAttrOfType<IntegerAttr>(kKVStagesAttr);
      tile.kvStages = stages ? int64_t(stages)
                             : (recorded ? recorded.getInt() : int64_t(1));
      int64_t bytes = forwardSharedBytes(tile, d);
      if (maxShared && bytes > *maxShared) {
        kernel.emitOpError("fa-async-copy: ")
            << tile.kvStages << " K/V stages of a " << tile.blockQ << " x "
            << tile.blockKV << " tile at D = " << d << " need " << bytes
            << " bytes of shared memory; " << chip << " gives a CTA "
            << *maxShared;
        return signalPassFailure();
      }
      FailureOr<int64_t> ringed = ringForwardCopies(kernel, tile.kvStages);
      if (failed(ringed))
        return signalPassFailure();
      bytes = *ringed;
      kernel->setAttr(kKVStagesAttr,
                      Builder(&getContext()).getI64IntegerAttr(tile.kvStages));
      sharedBytes[kernel.getName()] = bytes;
    }
    module.walk([&](gpu::LaunchFuncOp launch) {
      if (launch.getKernelModuleName() != kKernelModuleName)
        return;
      auto it = sharedBytes.find(launch.getKernelName());
      if (it == sharedBytes.end())
        return;
      setDynamicSharedBytes(launch, it->second);
    });
  }
};

} // namespace
