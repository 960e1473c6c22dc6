//===- Passes.td - FA conversion passes ---------------------*- tablegen -*-===//

#ifndef FA_CONVERSION_PASSES_TD
#define FA_CONVERSION_PASSES_TD

include "mlir/Pass/PassBase.td"

def ConvertFAToLinalg : Pass<"convert-fa-to-linalg"> {
  let summary = "Lower fa.score_tile to linalg on tensors";
  let description = [{
    Each `fa.score_tile` becomes the tile's Q K^T (a `linalg.generic`
    accumulating in f32) and one elementwise `linalg.generic` applying the
    variant at absolute positions (`query_offset + r`, `key_offset + c`);
    bias and ALiBi slopes are read with `tensor.extract`, broadcast
    dimensions at index 0.
  }];
  let dependentDialects = [
    "::mlir::arith::ArithDialect",
    "::mlir::linalg::LinalgDialect",
    "::mlir::math::MathDialect",
    "::mlir::tensor::TensorDialect"
  ];
}

def ConvertFAToNVVM : Pass<"convert-fa-to-nvvm", "::mlir::ModuleOp"> {
  let summary = "Lower fa-tile's forward kernels (fagpu ops) and "
                "fa.attention_grad to NVVM";
  let description = [{
    Lowers each forward kernel `fa-tile` wrote in the kernel-level IR
    (`fagpu` ops, docs/kernel-ir.md) op by op to an `llvm.func` of the same
    name (cp.async, ldmatrix, mma.sync, shuffles), and rewrites its
    launches' operands into that kernel's ABI (`fa.kernel_abi`, a
    `#fa.kernel_abi` on the llvm.func: include/fa/Runtime/KernelAbi.h): q,
    k, v, o, lse pointers; element strides (batch, head, row) of q, k, v, o
    and (batch, head) of lse (rows contiguous); Nq, Nk, Hq / Hkv, Hq, B
    (i32); then, by the role `fa-tile` gave each further argument
    (`fa.abi`), the bias pointer and strides (0 where it broadcasts), the
    slopes pointer and batch stride, the dropout seed (i64), each capture's
    pointer and strides. The kernel carries its scale. Grid (tiles of Nq,
    Hq, B), y and z folded where Hq or B exceeds 65535. On the host,
    pointers come from `memref.extract_aligned_pointer_as_index` plus the
    offset, strides from `memref.extract_strided_metadata`, and the grid
    from the ABI's rule. A kernel still holding its fa.attention is an
    error: the reason where the GPU does not support the op, else that
    `fa-tile` must run first.

    Each fa.attention_grad gets three kernels (FlashAttention-2's backward,
    deterministic, f32 accumulation), launched in this order with one ABI:
    `fa_backward_dsum_<i>` (Dsum = rowsum(dO * O) into an f32 workspace
    [B, Hq, Nq], grid (ceil(Nq / 64), Hq, B)), `fa_backward_dkdv_<i>` (one
    CTA per 64 K/V rows, kv head and batch, over the group's query heads and
    visible Q tiles; grid (ceil(Nk / 64), Hkv, B)) and `fa_backward_dq_<i>`
    (grid (ceil(Nq / 64), Hq, B)). Their ABI: q, k, v, o, dO, lse, dq, dk, dv,
    dsum pointers; element strides (batch, head, row) of q, k, v, o, dO, dq,
    dk, dv and (batch, head) of lse and dsum; Nq, Nk, Hq / Hkv, Hq, Hkv, B
    (i32); scale * log2(e), scale (f32). Each kernel carries its ABI
    (`fa.kernel_abi`: these parameters, its grid rule, threads and shared
    memory).

    Supported, forward and backward: f16 and bf16; D = Dv in {32, 64, 96,
    128, 256} (at 256 the backward's dK/dV kernel makes two passes of 128
    columns); scale, causal (both alignments), window, softcap, GQA/MQA,
    lse, ALiBi, bias (with dBias in the backward), dropout, score_mod and
    mask_mod with captures. Anything else, or an fa.attention outside a
    kernel, is an error naming it.
  }];
  let options = [
    Option<"chip", "chip", "std::string", /*default=*/"\"\"",
           "Target chip (sm_80, sm_90a, ...); empty: the kernel module's, "
           "else sm_80">,
    Option<"bwdPrefetch", "bwd-prefetch", "bool", /*default=*/"true",
           "Backward: the dK/dV kernel loads the next Q tile (Q, dO, lse, "
           "Dsum) into a second shared-memory stage while it computes the "
           "current one">,
    Option<"bwdAtomicDQ", "bwd-atomic-dq", "bool", /*default=*/"false",
           "Backward: the dK/dV kernel adds dS K into an f32 dQ accumulator "
           "(atomics; bulk reductions on sm_90a), FlashAttention's way, "
           "instead of a dQ kernel that recomputes S and dP (bitwise "
           "reproducible). Neither this nor bwd-deterministic: atomic where "
           "the dK/dV kernel is the wgmma one (sm_90a, plain path, D = 64 "
           "or 128), else the dQ kernel">,
    Option<"bwdDeterministic", "bwd-deterministic", "bool",
           /*default=*/"false",
           "Backward: always the dQ kernel (no atomics; dQ bitwise "
           "reproducible)">,
    Option<"bwdDkDvWarps", "bwd-dkdv-warps", "int64_t", /*default=*/"0",
           "Backward: warps of a dK/dV CTA, each owning 16 keys: 4, 8 (128 "
           "keys share each Q tile; D <= 128), or 0 for the default (8 with "
           "atomic dQ on sm_90a where the tile splits evenly, else 4)">,
    Option<"bwdWgmma", "bwd-wgmma", "bool", /*default=*/"true",
           "Backward on sm_90a: the dK/dV kernel of atomic dQ in 8 warps "
           "(plain path, D = 64 or 128) multiplies with wgmma from shared "
           "memory, a warpgroup per 64 keys; false: mma.sync">
  ];
  let dependentDialects = [
    "::mlir::arith::ArithDialect",
    "::mlir::gpu::GPUDialect",
    "::mlir::LLVM::LLVMDialect",
    "::mlir::math::MathDialect",
    "::mlir::memref::MemRefDialect",
    "::mlir::NVVM::NVVMDialect",
    "::mlir::scf::SCFDialect"
  ];
}

#endif // FA_CONVERSION_PASSES_TD
