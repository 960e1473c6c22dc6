//===- Pipelines.h - FA's pass pipelines ------------------------*- C++ -*-===//

#ifndef FA_COMPILER_PIPELINES_H
#define FA_COMPILER_PIPELINES_H

#include "mlir/Pass/PassOptions.h"

namespace mlir {
class OpPassManager;
} // namespace mlir

namespace mlir::fa {

struct HostPipelineOptions : public PassPipelineOptions<HostPipelineOptions> {
  Option<bool> reference{
      *this, "reference",
      llvm::cl::desc("Lower through fa-decompose (the materialized reference) "
                     "instead of the tiled online-softmax form"),
      llvm::cl::init(false)};
  Option<int64_t> blockQ{*this, "block-q",
                         llvm::cl::desc("Query rows per tile (0: default)"),
                         llvm::cl::init(0)};
  Option<int64_t> blockKV{
      *this, "block-kv", llvm::cl::desc("Key/value rows per tile (0: default)"),
      llvm::cl::init(0)};
  Option<bool> parallel{
      *this, "parallel",
      llvm::cl::desc("Let concurrent calls share the tile loops "
                     "(fa-host-parallel); false: they run sequentially"),
      llvm::cl::init(true)};
  Option<int64_t> vectorBits{
      *this, "vector-bits",
      llvm::cl::desc("Width of the CPU's vector registers: 128, 256 (AVX2) "
                     "or 512 (AVX-512). It sizes the tile products' "
                     "register blocks; at 512 the functions also prefer "
                     "512-bit vectors. The JIT passes its CPU's "
                     "(getHostVectorBits)"),
      llvm::cl::init(256)};
};

/// fa-pipeline-host: fa ops on tensors to the LLVM dialect for the host CPU.
/// Functions keep their memref ABI; mark them `llvm.emit_c_interface` to
/// call them through ExecutionEngine.
void buildHostPipeline(OpPassManager &pm, const HostPipelineOptions &options);

struct CudaPipelineOptions : public PassPipelineOptions<CudaPipelineOptions> {
  Option<std::string> chip{*this, "chip",
                           llvm::cl::desc("Target chip: sm_80, sm_90a, ..."),
                           llvm::cl::init("sm_80")};
  Option<int64_t> blockQ{
      *this, "block-q",
      llvm::cl::desc("Forward kernel: query rows per CTA, 64 or 128 (0: the "
                     "default for D)"),
      llvm::cl::init(0)};
  Option<int64_t> blockKV{
      *this, "block-kv",
      llvm::cl::desc(
          "Forward kernel: K/V rows per tile, 32, 64 or 128, or "
          "with a producer warpgroup on sm_90a and block-q = 128 any "
          "multiple of 16 from 80 to 224 (0: the default for D)"),
      llvm::cl::init(0)};
  Option<int64_t> kvStages{
      *this, "kv-stages",
      llvm::cl::desc("Forward kernel: K/V pipeline stages (fa-async-copy), 1 "
                     "(FlashAttention-2's schedule) to 4 (tiles n + 1 .. "
                     "n + 3 copied during tile n); 0: the tile's default"),
      llvm::cl::init(0)};
  Option<bool> fwdWgmma{
      *this, "fwd-wgmma",
      llvm::cl::desc("Forward kernel: multiply with warpgroup MMAs (wgmma) "
                     "where the chip has them and D is a multiple of 64 "
                     "(false: mma.sync)"),
      llvm::cl::init(true)};
  Option<bool> fwdOverlap{
      *this, "fwd-overlap",
      llvm::cl::desc("Forward wgmma kernel with two or more K/V stages: run "
                     "each tile's softmax under the previous tile's P V "
                     "(fa-overlap-softmax; off: measured no faster, see "
                     "docs/performance.md)"),
      llvm::cl::init(false)};
  Option<bool> fwdWarpSpecialize{
      *this, "fwd-warp-specialize",
      llvm::cl::desc("Forward wgmma kernel of the plain path: 128 query "
                     "rows, and a producer warpgroup copies the K/V tiles "
                     "into mbarrier-guarded rings while the kernel's "
                     "warpgroups compute (fa-warp-specialize)"),
      llvm::cl::init(true)};
  Option<bool> fwdTma{
      *this, "fwd-tma",
      llvm::cl::desc("With fwd-warp-specialize: the producer copies with "
                     "TMA where the tiles allow (false: cp.async)"),
      llvm::cl::init(true)};
  Option<bool> fwdWsOverlap{
      *this, "fwd-ws-overlap",
      llvm::cl::desc("With fwd-warp-specialize: each tile's softmax runs "
                     "under the previous tile's P V (fa-warp-specialize's "
                     "overlap; fwd-overlap does it for the other wgmma "
                     "kernels)"),
      llvm::cl::init(true)};
  Option<bool> fwdBoundedSoftmax{
      *this, "fwd-bounded-softmax",
      llvm::cl::desc("Where the scores are bounded (softcap), the softmax "
                     "subtracts a fixed offset instead of a running max "
                     "(fa-bounded-softmax)"),
      llvm::cl::init(true)};
  Option<int64_t> fwdExp2Fma{
      *this, "fwd-exp2-fma",
      llvm::cl::desc("Of every 8 exponentials of P a thread computes, this "
                     "many by a polynomial on the FMA pipe instead of the "
                     "MUFU's ex2 (fa-fuse's exp2-fma; -1: the default for "
                     "the variant)"),
      llvm::cl::init(-1)};
  Option<int64_t> fwdTanhFma{
      *this, "fwd-tanh-fma",
      llvm::cl::desc("Of every 8 tanh values a thread computes, this many "
                     "take their reciprocal from Newton steps on the FMA "
                     "pipe instead of the MUFU's rcp (fa-fuse's tanh-fma; "
                     "-1: the default for the variant)"),
      llvm::cl::init(-1)};
  Option<bool> fwdBiasTiles{
      *this, "fwd-bias-tiles",
      llvm::cl::desc("With fwd-warp-specialize and fwd-tma: each K/V tile's "
                     "bias block is copied into shared memory beside K (one "
                     "TMA box a panel) and read from there "
                     "(fa-bias-tiles; false: one global load a score)"),
      llvm::cl::init(true)};
  Option<std::string> fwdPersistent{
      *this, "fwd-persistent",
      llvm::cl::desc(
          "With fwd-warp-specialize, where every query tile "
          "visits the same keys or a causal mask or window alone tells "
          "them apart (or, with always, key ranges do): a persistent "
          "grid, each CTA running work items round robin "
          "(fa-warp-specialize's persistent: auto, always or never)"),
      llvm::cl::init("auto")};
  Option<std::string> fwdCausalOrder{
      *this, "fwd-causal-order",
      llvm::cl::desc("With a persistent causal grid, how the CTAs share the "
                     "query tiles: paired or tail (fa-warp-specialize's "
                     "causal-order)"),
      llvm::cl::init("tail")};
  Option<int64_t> fwdHeadGroup{
      *this, "fwd-head-group",
      llvm::cl::desc("Under a causal mask, the heaviest query tiles of this "
                     "many (head, batch) pairs first (fa-fuse's head-group; "
                     "0: the default for the variant)"),
      llvm::cl::init(0)};
  Option<bool> fwdKeyRanges{
      *this, "fwd-key-ranges",
      llvm::cl::desc("A forward whose mask_mod reads neither b nor h visits "
                     "only the key tiles a key-range kernel finds the "
                     "mask_mod keeping, per query tile (fa-key-ranges)"),
      llvm::cl::init(true)};
  Option<bool> fwdPingpong{
      *this, "fwd-pingpong",
      llvm::cl::desc("With fwd-warp-specialize: the consumer warpgroups take "
                     "turns at the tensor cores, one's softmax under the "
                     "other's products"),
      llvm::cl::init(true)};
  Option<bool> bwdPrefetch{
      *this, "bwd-prefetch",
      llvm::cl::desc("Backward dK/dV kernel: load the next Q tile while "
                     "computing the current one (two shared-memory stages)"),
      llvm::cl::init(true)};
  Option<bool> bwdAtomicDQ{
      *this, "bwd-atomic-dq",
      llvm::cl::desc("Backward: the dK/dV kernel adds dQ into an f32 "
                     "accumulator (atomics, or bulk reductions on sm_90a) "
                     "instead of a dQ kernel (bitwise reproducible); neither "
                     "this nor bwd-deterministic: atomic where the dK/dV "
                     "kernel is the wgmma one"),
      llvm::cl::init(false)};
  Option<bool> bwdDeterministic{
      *this, "bwd-deterministic",
      llvm::cl::desc("Backward: always the dQ kernel (no atomics)"),
      llvm::cl::init(false)};
  Option<int64_t> bwdDkDvWarps{
      *this, "bwd-dkdv-warps",
      llvm::cl::desc("Backward: warps of a dK/dV CTA (4 or 8; 0: the "
                     "default for the chip and dQ mode)"),
      llvm::cl::init(0)};
  Option<bool> bwdWgmma{
      *this, "bwd-wgmma",
      llvm::cl::desc("Backward on sm_90a: the dK/dV kernel of atomic dQ in "
                     "8 warps multiplies with wgmma (false: mma.sync)"),
      llvm::cl::init(true)};
};

/// fa-pipeline-cuda: fa.attention to a gpu.binary holding the PTX of an
/// FA2-style kernel per op, launched from the host (fa-fuse, fa-async-copy,
/// convert-fa-to-nvvm, LLVM lowering inside the gpu.module, NVPTX through
/// gpu-module-to-binary).
void buildCudaPipeline(OpPassManager &pm, const CudaPipelineOptions &options);
/// fa-pipeline-cuda in two halves: up to the kernels in the LLVM dialect,
/// each carrying its #fa.kernel_abi (the half CudaJit reads the ABIs
/// after), then gpu-module-to-binary (PTX; the kernels' attributes do not
/// survive it).
void buildCudaKernelPipeline(OpPassManager &pm,
                             const CudaPipelineOptions &options);
void buildCudaBinaryPipeline(OpPassManager &pm);

/// Registers fa-pipeline-host (and later pipelines) with the pass registry.
void registerPipelines();

/// Turns LLVM's SLP vectorizer off for this process (its `-vectorize-slp`
/// option), unless a command line set it. It finds nothing in FA's kernels
/// (the PTX is byte-identical without it; the host kernels' vectors are
/// explicit) and took 10-30% of their compile time. The JITs
/// (HostKernel::compile, the CUDA compile) call it before LLVM runs;
/// idempotent and thread-safe.
void disableSLPVectorizer();

} // namespace mlir::fa

#endif // FA_COMPILER_PIPELINES_H
