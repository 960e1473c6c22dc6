//===- GpuKernels.h - What the GPU passes agree on --------------*- C++ -*-===//
//
// fa-fuse outlines each fa.attention into a forward kernel, fa-async-copy
// picks its K/V pipeline depth and convert-fa-to-nvvm emits it: the kernel
// module, the attributes that carry the tile from one to the next, the tile
// policy and the shared-memory budget live here.
//
//===----------------------------------------------------------------------===//

#ifndef FA_TRANSFORMS_GPUKERNELS_H
#define FA_TRANSFORMS_GPUKERNELS_H

#include "fa/Dialect/FA/IR/FAOps.h"
#include "fa/Dialect/FAGPU/IR/FAGPU.h"
#include "mlir/Dialect/GPU/IR/GPUDialect.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/IR/BuiltinOps.h"
#include "llvm/ADT/STLExtras.h"

#include <optional>
#include <string>

namespace mlir::fa {

/// The gpu.module that holds FA's kernels.
inline constexpr llvm::StringLiteral kKernelModuleName = "fa_kernels";
/// On an outlined forward kernel: query rows per CTA, rows per K/V tile and
/// K/V pipeline stages.
inline constexpr llvm::StringLiteral kBlockQAttr = "fa.block_q";
inline constexpr llvm::StringLiteral kBlockKVAttr = "fa.block_kv";
inline constexpr llvm::StringLiteral kKVStagesAttr = "fa.kv_stages";
/// On an outlined causal forward kernel: ForwardTile's headGroup, when > 1.
inline constexpr llvm::StringLiteral kHeadGroupAttr = "fa.head_group";
/// On an outlined forward kernel: of every 8 values of P a thread
/// computes, how many take the FMA pipe's polynomial exp2 instead of the
/// MUFU's ex2 (ForwardTile's exp2Fma, when > 0).
inline constexpr llvm::StringLiteral kExp2FmaAttr = "fa.exp2_fma";
/// On an outlined forward kernel: of every 8 tanh values a thread computes
/// (softcap's, a score_mod's), how many take their reciprocal from Newton
/// steps on the FMA pipe instead of the MUFU's rcp (ForwardTile's tanhFma,
/// when > 0).
inline constexpr llvm::StringLiteral kTanhFmaAttr = "fa.tanh_fma";
/// On an outlined forward kernel (unit): its products are warpgroup MMAs
/// (sm_90a), so fa-tile lays its shared tiles out in wgmma's swizzle.
inline constexpr llvm::StringLiteral kWgmmaAttr = "fa.wgmma";
/// On an outlined wgmma forward kernel (unit): fa-fuse chose its tile for
/// a producer warpgroup, which fa-warp-specialize then gives it.
inline constexpr llvm::StringLiteral kWarpSpecializeAttr = "fa.warp_specialize";
/// On a key-range kernel (unit; fa-key-ranges): grid (query tiles, 1, 1)
/// of kKeyRangeWarps warps (KernelAbi.h, "Key ranges").
inline constexpr llvm::StringLiteral kKeyRangesAttr = "fa.key_ranges";
/// On each kernel llvm.func convert-fa-to-nvvm emits: how to launch it
/// (#fa.kernel_abi, include/fa/Runtime/KernelAbi.h).
inline constexpr llvm::StringLiteral kKernelAbiAttrName = "fa.kernel_abi";
/// On each argument of a kernel in the kernel-level IR (fa-tile's): the
/// tensor of the ABI it is, "q", "k", "v", "o", "lse", "bias", "slopes" or
/// "capture<i>", "key_ranges" (KernelAbi.h).
inline constexpr llvm::StringLiteral kAbiRoleAttrName = "fa.abi";
/// The argument of `kernel` with ABI role `role` (kAbiRoleAttrName), or
/// null.
BlockArgument getArgumentWithRole(gpu::GPUFuncOp kernel, StringRef role);

/// Threads of a forward CTA (4 warps).
inline constexpr int64_t kForwardThreads = 128;
/// Threads of a forward CTA of `blockQ` query rows: 4 warps, or with
/// wgmma one warp per 16 rows (a warpgroup per 64: each computes its own
/// rows, so a thread holds one m-tile of S and O).
inline int64_t forwardThreads(int64_t blockQ, bool wgmma) {
  return wgmma ? blockQ / 16 * 32 : kForwardThreads;
}
/// The deepest K/V pipeline the forward kernel builds.
inline constexpr int64_t kMaxKVStages = 4;
/// The producer of a warp-specialized kernel (fa-warp-specialize): one
/// warpgroup after the consumers'.
inline constexpr int64_t kProducerThreads = 128;

/// The forward kernel's tiling.
struct ForwardTile {
  int64_t blockQ = 0, blockKV = 0;
  /// Buffers of K and of V: 1, FlashAttention-2's schedule; S > 1, tile
  /// n + S - 1 is copied during all of tile n.
  int64_t kvStages = 1;
  /// Under a causal mask, the heaviest query tiles of this many (head,
  /// batch) pairs run before the lighter ones (fagpu.block_coords's
  /// head_group); 1: one head's tiles heavy to light.
  int64_t headGroup = 1;
  /// Of every 8 exponentials of P a thread computes, how many by a
  /// polynomial on the FMA pipe (KernelBuilder::exp2Fma) instead of the
  /// MUFU's ex2. 0: every k > 0 measured slower on the H200, softcap too
  /// (docs/performance.md).
  int64_t exp2Fma = 0;
  /// Of every 8 tanh values a thread computes, how many take their
  /// reciprocal from Newton steps on the FMA pipe
  /// (KernelBuilder::accurateTanh) instead of the MUFU's rcp: softcap
  /// spends three MUFU ops a score against plain's one.
  int64_t tanhFma = 0;
};

/// Whether `op`'s scores take a tanh (softcap, or a score_mod with one).
bool scoresUseTanh(AttentionOp op);

/// Whether `op` takes the forward kernel's scored path (per-element variant
/// terms, or dropout).
bool isScoredForward(AttentionOp op);

/// Whether fa-key-ranges bounds `op`'s key loop: it has a mask_mod that
/// reads neither b nor h (the same keys for every batch and head).
bool hasKeyRanges(AttentionOp op);

/// The tile `op` gets unless told otherwise (the fastest measured), with
/// mma.sync or, with `wgmma`, warpgroup MMAs, and with `warpSpecialize` a
/// producer warpgroup; with `biasTiles`, where fa-bias-tiles will read its
/// bias from shared memory.
ForwardTile defaultForwardTile(AttentionOp op, bool wgmma = false,
                               bool warpSpecialize = false,
                               bool biasTiles = false);

/// The K/V stages a `blockQ x blockKV` tile of `op` gets unless told
/// otherwise.
int64_t defaultKVStages(AttentionOp op, int64_t blockQ, int64_t blockKV,
                        bool wgmma = false, bool warpSpecialize = false);

/// Why `blockQ x blockKV` is not a forward tile, or an empty string. K/V
/// tiles of 32, 64 or 128 rows everywhere; with `wideKV` (a warp-specialized
/// wgmma kernel) and 128 query rows, any multiple of 16 from 80 to 224.
std::string unsupportedTileReason(int64_t blockQ, int64_t blockKV,
                                  bool wideKV = false);

/// The columns of a forward kernel's shared tiles and O for rows of `d`
/// elements: with wgmma, whole 64-column panels of its 128-byte swizzle
/// (d = 80 or 96 take 128), zero past d (the copies fill them: zeros add
/// nothing to Q K^T or P V, and the epilogue stores d columns); else d.
inline int64_t getForwardTileCols(int64_t d, bool wgmma) {
  return wgmma ? fagpu::getWgmmaTileCols(d) : d;
}

/// Dynamic shared memory of the forward kernel: the Q tile and, per stage, a
/// K tile, all of `d` 2-byte columns, and a V tile of `dv` (tile columns,
/// getForwardTileCols).
inline int64_t forwardSharedBytes(ForwardTile tile, int64_t d, int64_t dv) {
  return (tile.blockQ * d + tile.kvStages * tile.blockKV * (d + dv)) * 2;
}

/// The most a warp-specialized kernel's mbarriers take: Q's two, and four
/// per stage.
inline constexpr int64_t kWarpSpecializedBarrierBytes =
    8 * (2 + 4 * kMaxKVStages);

/// Dynamic shared memory of a warp-specialized forward kernel (at most):
/// its tiles, its barriers and `blockBytes` a stage of bias blocks
/// (fa-bias-tiles).
inline int64_t warpSpecializedSharedBytes(ForwardTile tile, int64_t d,
                                          int64_t dv, int64_t blockBytes = 0) {
  return forwardSharedBytes(tile, d, dv) + kWarpSpecializedBarrierBytes +
         tile.kvStages * blockBytes;
}

/// The most dynamic shared memory one CTA may use on `chip` (the target
/// model's), or nothing for a chip it does not know.
std::optional<int64_t> maxSharedBytesPerBlock(StringRef chip);

/// The K/V stages of fa-tile's forward `kernel` (online softmax) for
/// `pass`: `stages` when positive, else what fa-tile recorded for the
/// variant; an error (in `pass`'s name) when out of range, when the kernel
/// still has two softmax loops, or when its tiles, `extraBytes` and
/// `stageBytes` more a stage (a bias block's) exceed the shared memory
/// `chip` gives a CTA.
FailureOr<ForwardTile> chooseKVStages(gpu::GPUFuncOp kernel, int64_t stages,
                                      StringRef chip, StringRef pass,
                                      int64_t extraBytes = 0,
                                      int64_t stageBytes = 0);

/// The chip of `module`'s kernel module's NVVM target, or an empty string.
std::string getKernelChip(ModuleOp module);

/// The kernel module of `module`, created (with an NVVM target for `chip`
/// and the PTX version the target model gives it) if it has none; `module`
/// becomes a GPU container module. Null when it must be created for a chip
/// the target model does not know.
gpu::GPUModuleOp getOrCreateKernelModule(ModuleOp module, StringRef chip);

/// Sets the dynamic shared memory of `launch` to `bytes` (an i32 constant),
/// erasing the constant it replaces when nothing else uses it.
void setDynamicSharedBytes(gpu::LaunchFuncOp launch, int64_t bytes);

/// The host's launches of `kernel` in `module`, in walk order: what a pass
/// that changes a kernel's shared memory, threads or operands updates.
SmallVector<gpu::LaunchFuncOp> getLaunchesOf(ModuleOp module,
                                             gpu::GPUFuncOp kernel);

/// Why `op`'s element type and head dims (fa.attention or fa.attention_grad)
/// have no GPU kernel, or an empty string. `dims`: the head dims its
/// kernels take (D of Q and K, Dv of V and O, each one of them);
/// `dvUpToD`: whether Dv must not exceed D (the backward's).
template <typename OpT>
std::string unsupportedShapeReason(OpT op, bool dvUpToD,
                                   ArrayRef<int64_t> dims = {32, 64, 80, 96,
                                                             128, 192, 256}) {
  Type et = op.getElementType();
  int64_t d = op.getQuery().getType().getDimSize(3);
  int64_t dv = op.getValue().getType().getDimSize(3);
  if (!et.isF16() && !et.isBF16())
    return "element type must be f16 or bf16 on the GPU";
  if ((dvUpToD && dv > d) || !llvm::is_contained(dims, d) ||
      !llvm::is_contained(dims, dv)) {
    std::string list;
    for (int64_t x : dims)
      list += (list.empty() ? "" : ", ") + std::to_string(x);
    return "head dims must each be one of " + list +
           (dvUpToD ? ", with Dv <= D," : "") +
           " on the GPU (got D = " + std::to_string(d) +
           ", Dv = " + std::to_string(dv) + ")";
  }
  return "";
}

/// Why `op` has no GPU forward kernel (its element type, head dims, or an
/// op of its score_mod / mask_mod), or an empty string: fa-tile takes
/// every other fa.attention, and convert-fa-to-nvvm reports this reason.
std::string unsupportedForwardReason(AttentionOp op);

/// Whether `op`, inside a score_mod / mask_mod / score_mod_grad region, can
/// be inlined into a kernel: arith on scalars (but the divisions
/// arith-to-llvm leaves to arith-expand), a capture's element, and the f32
/// math ops the kernels lower (KernelBuilder::lowerScalarMath).
bool isKernelRegionOp(Operation *op);

/// Why the ops of `region` (named `name`) cannot be inlined into a kernel,
/// or an empty string.
std::string kernelRegionReason(Region &region, StringRef name);

/// fa-tile's GPU flavour: rewrites the outlined forward kernel `kernel`
/// (fa-fuse's) into the CTA's program in fagpu ops; leaves it alone where
/// unsupportedForwardReason gives a reason.
LogicalResult tileForwardKernel(gpu::GPUFuncOp kernel);

/// fa-tile's forward kernel as fa-async-copy and fa-warp-specialize take
/// it: in the entry block a copy of Q into its shared tile, then the loop
/// over K/V tiles, which starts with the copies of K and V at its induction
/// variable into theirs.
struct ForwardCopies {
  fagpu::CopyOp q, k, v;
  fagpu::AllocSharedOp qTile, kTile, vTile;
  scf::ForOp loop;
  /// Block copies (with a column: a bias's, fa-bias-tiles) right after V's,
  /// and their tiles.
  SmallVector<fagpu::CopyOp, 1> blocks;
  SmallVector<fagpu::AllocSharedOp, 1> blockTiles;
};
/// The copies of `kernel`, or nothing where it is not so.
std::optional<ForwardCopies> matchForwardCopies(gpu::GPUFuncOp kernel);

/// fa-async-copy's ring: the synchronous tile copies of an fagpu forward
/// kernel become asynchronous copies into rings of `stages` K and V
/// buffers (1: FlashAttention-2's schedule); returns the kernel's shared
/// memory in bytes.
FailureOr<int64_t> ringForwardCopies(gpu::GPUFuncOp kernel, int64_t stages);

/// The fa.attention an outlined forward kernel computes, or null.
AttentionOp getOutlinedAttention(gpu::GPUFuncOp kernel);

} // namespace mlir::fa

#endif // FA_TRANSFORMS_GPUKERNELS_H
