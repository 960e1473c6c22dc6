//===- Pipelines.cpp - FA's pass pipelines --------------------------------===//

#include "fa/Compiler/Pipelines.h"
#include "fa/Conversion/Passes.h"
#include "fa/Transforms/Passes.h"
#include "mlir/Conversion/Passes.h"
#include "mlir/Dialect/Bufferization/Pipelines/Passes.h"
#include "mlir/Dialect/Bufferization/Transforms/Passes.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/GPU/IR/GPUDialect.h"
#include "mlir/Dialect/GPU/Transforms/Passes.h"
#include "mlir/Dialect/Linalg/Passes.h"
#include "mlir/Dialect/MemRef/Transforms/Passes.h"
#include "mlir/Dialect/SCF/Transforms/Passes.h"
#include "mlir/Pass/PassManager.h"
#include "mlir/Pass/PassRegistry.h"
#include "mlir/Transforms/Passes.h"
#include "llvm/Support/CommandLine.h"

#include <mutex>

using namespace mlir;

// Host tiles: a 64 x 64 score tile and its Q/K/V rows stay in L1/L2.
static constexpr int64_t kHostBlockQ = 64;
static constexpr int64_t kHostBlockKV = 64;
// Register blocks of the tile products: two vectors wide, 6 rows where the
// CPU has 16 vector registers (AVX2: 12 accumulators, enough independent
// FMAs to cover their latency on both FMA pipes) and 8 where it has 32
// (AVX-512: 16 accumulators, and 64-row tiles split evenly).
static constexpr int64_t kHostRegisterColVectors = 2;
static int64_t hostRegisterRows(int64_t vectorBits) {
  return vectorBits >= 512 ? 8 : 6;
}

void mlir::fa::buildHostPipeline(OpPassManager &pm,
                                 const HostPipelineOptions &options) {
  // fa ops to linalg on tensors. The backward is always tiled (it has no
  // materialized form); its tiles are fa.score_tile ops like the forward's.
  int64_t blockQ = options.blockQ > 0 ? options.blockQ : kHostBlockQ;
  int64_t blockKV = options.blockKV > 0 ? options.blockKV : kHostBlockKV;
  pm.addPass(createFADifferentiateScoreMod());
  FATileGradOptions tileGrad;
  tileGrad.blockQ = blockQ;
  tileGrad.blockKV = blockKV;
  pm.addPass(createFATileGrad(tileGrad));
  // The forward: the tiled online-softmax form, or the materialized
  // reference.
  if (options.reference) {
    pm.addPass(createFADecompose());
  } else {
    FATileOptions tile;
    tile.blockQ = blockQ;
    tile.blockKV = blockKV;
    pm.addPass(createFATile(tile));
    pm.addPass(createFAOnlineSoftmax());
  }
  pm.addPass(createConvertFAToLinalg());
  pm.addPass(createCanonicalizerPass());
  pm.addPass(createCSEPass());

  // Tensors to buffers; function boundaries keep the caller's strides.
  // The kernel's results are built in its output arguments (no copy after
  // the loops, which fa-host-parallel requires).
  pm.addPass(bufferization::createEmptyTensorEliminationPass());
  bufferization::OneShotBufferizePassOptions bufferize;
  bufferize.bufferizeFunctionBoundaries = true;
  bufferize.functionBoundaryTypeConversion =
      bufferization::LayoutMapOption::FullyDynamicLayoutMap;
  pm.addPass(bufferization::createOneShotBufferizePass(bufferize));
  bufferization::BufferDeallocationPipelineOptions dealloc;
  bufferization::buildBufferDeallocationPipeline(pm, dealloc);

  // The tile products as register-blocked micro-kernels, the rest as
  // loops, then LLVM.
  FAHostRegisterTileOptions registerTile;
  registerTile.lanes = options.vectorBits / 32;
  registerTile.rows = hostRegisterRows(options.vectorBits);
  registerTile.cols = kHostRegisterColVectors * registerTile.lanes;
  pm.addNestedPass<func::FuncOp>(createFAHostRegisterTile(registerTile));
  pm.addNestedPass<func::FuncOp>(createFAHostApproximateExp());
  pm.addNestedPass<func::FuncOp>(createConvertLinalgToLoopsPass());
  // Q tiles (and K/V tiles in the backward) on all cores: the runtime calls
  // the function once per thread. Foralls it leaves run sequentially.
  if (options.parallel)
    pm.addNestedPass<func::FuncOp>(createFAHostParallel());
  pm.addPass(createForallToForLoopPass());
  pm.addPass(createCanonicalizerPass());
  pm.addPass(memref::createExpandStridedMetadataPass());
  pm.addPass(createLowerAffinePass());
  pm.addPass(createSCFToControlFlowPass());
  pm.addPass(createConvertToLLVMPass());
  pm.addPass(createReconcileUnrealizedCastsPass());
}

void mlir::fa::buildCudaKernelPipeline(OpPassManager &pm,
                                       const CudaPipelineOptions &options) {
  // The backward kernels inline score_mod's derivative.
  pm.addPass(createFADifferentiateScoreMod());
  // Each forward: one kernel and its launch, then its K/V pipeline depth.
  FAFuseOptions fuse;
  fuse.chip = options.chip;
  fuse.blockQ = options.blockQ;
  fuse.blockKV = options.blockKV;
  fuse.wgmma = options.fwdWgmma;
  fuse.warpSpecialize = options.fwdWarpSpecialize;
  fuse.headGroup = options.fwdHeadGroup;
  fuse.exp2Fma = options.fwdExp2Fma;
  fuse.tanhFma = options.fwdTanhFma;
  fuse.biasTiles =
      options.fwdWarpSpecialize && options.fwdTma && options.fwdBiasTiles;
  pm.addPass(createFAFuse(fuse));
  // A mask_mod's key tiles, found once per query tile by a kernel of their
  // own, bound each forward's key loop.
  if (options.fwdKeyRanges)
    pm.addPass(createFAKeyRanges());
  // The kernel's CTA program in fagpu ops, its softmax in one pass over
  // K/V, whose copies fa-async-copy then rings.
  pm.addPass(createFATile());
  // Bounded scores need no running max.
  if (options.fwdBoundedSoftmax)
    pm.addPass(createFABoundedSoftmax());
  pm.addPass(createFAOnlineSoftmax());
  // With wgmma, optionally a producer warpgroup for the copies (the ring
  // is then its own; fa-async-copy leaves the kernel alone).
  if (options.fwdWarpSpecialize) {
    // A bias read a tile at a time, from shared memory the producer's TMA
    // fills beside K.
    if (options.fwdTma && options.fwdBiasTiles)
      pm.addPass(createFABiasTiles());
    FAWarpSpecializeOptions specialize;
    specialize.stages = options.kvStages;
    specialize.tma = options.fwdTma;
    specialize.pingpong = options.fwdPingpong;
    specialize.overlap = options.fwdWsOverlap;
    specialize.persistent = options.fwdPersistent;
    specialize.causalOrder = options.fwdCausalOrder;
    pm.addPass(createFAWarpSpecialize(specialize));
  }
  FAAsyncCopyOptions asyncCopy;
  asyncCopy.stages = options.kvStages;
  pm.addPass(createFAAsyncCopy(asyncCopy));
  // With wgmma, each tile's softmax under the previous tile's P V.
  if (options.fwdOverlap)
    pm.addPass(createFAOverlapSoftmax());
  ConvertFAToNVVMOptions toNVVM;
  toNVVM.chip = options.chip;
  toNVVM.bwdPrefetch = options.bwdPrefetch;
  toNVVM.bwdAtomicDQ = options.bwdAtomicDQ;
  toNVVM.bwdDkDvWarps = options.bwdDkDvWarps;
  toNVVM.bwdWgmma = options.bwdWgmma;
  toNVVM.bwdDeterministic = options.bwdDeterministic;
  pm.addPass(createConvertFAToNVVM(toNVVM));
  OpPassManager &kernels = pm.nest<gpu::GPUModuleOp>();
  kernels.addPass(createSCFToControlFlowPass());
  kernels.addPass(createConvertToLLVMPass());
  kernels.addPass(createReconcileUnrealizedCastsPass());
}

void mlir::fa::buildCudaBinaryPipeline(OpPassManager &pm) {
  GpuModuleToBinaryPassOptions toBinary;
  toBinary.compilationTarget = "isa";
  pm.addPass(createGpuModuleToBinaryPass(toBinary));
}

void mlir::fa::buildCudaPipeline(OpPassManager &pm,
                                 const CudaPipelineOptions &options) {
  buildCudaKernelPipeline(pm, options);
  buildCudaBinaryPipeline(pm);
}

void mlir::fa::disableSLPVectorizer() {
  static std::once_flag once;
  std::call_once(once, [] {
    // gpu-module-to-binary's optimization pipeline takes no tuning options,
    // so the option is the one switch both JITs share.
    auto &options = llvm::cl::getRegisteredOptions();
    auto it = options.find("vectorize-slp");
    if (it == options.end())
      return;
    auto *slp = static_cast<llvm::cl::opt<bool> *>(it->second);
    if (slp->getNumOccurrences() == 0)
      slp->setValue(false);
  });
}

void mlir::fa::registerPipelines() {
  PassPipelineRegistration<CudaPipelineOptions>(
      "fa-pipeline-cuda",
      "Lower fa ops to PTX kernels launched from the host (mma.sync; wgmma "
      "for the sm_90a forward and, where it can, the backward's dK/dV)",
      buildCudaPipeline);
  PassPipelineRegistration<HostPipelineOptions>(
      "fa-pipeline-host",
      "Lower fa ops to LLVM for the host CPU (fa-differentiate-score-mod, "
      "fa-tile-grad, fa-tile, fa-online-softmax, bufferization, loops, LLVM)",
      buildHostPipeline);
}
