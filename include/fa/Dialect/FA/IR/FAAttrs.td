//===- FAAttrs.td - FA attributes ---------------------------*- tablegen -*-===//

#ifndef FA_DIALECT_FA_IR_FAATTRS_TD
#define FA_DIALECT_FA_IR_FAATTRS_TD

include "fa/Dialect/FA/IR/FADialect.td"
include "mlir/IR/AttrTypeBase.td"
include "mlir/IR/EnumAttr.td"

def FA_CausalKind : I32EnumAttr<"CausalKind",
    "Which diagonal a causal mask follows when Nq != Nk", [
      I32EnumAttrCase<"TopLeft", 0, "top_left">,
      I32EnumAttrCase<"BottomRight", 1, "bottom_right">
    ]> {
  let genSpecializedAttr = 0;
  let cppNamespace = "::mlir::fa";
}

// `#fa.causal<top_left>`: query i sees keys j <= i.
// `#fa.causal<bottom_right>`: query i sees keys j <= i + Nk - Nq.
def FA_CausalAttr : EnumAttr<FA_Dialect, FA_CausalKind, "causal"> {
  let assemblyFormat = "`<` $value `>`";
}

// `#fa.kernel_abi<...>`: how to launch one GPU kernel, the typed
// description of include/fa/Runtime/KernelAbi.h (its parameters, grid rule,
// threads per CTA and dynamic shared memory). convert-fa-to-nvvm attaches it
// to each kernel llvm.func as `fa.kernel_abi`; the runtime reads it.
def FA_KernelAbiAttr : AttrDef<FA_Dialect, "KernelAbi"> {
  let mnemonic = "kernel_abi";
  let summary = "How to launch one GPU kernel";
  let description = [{
    What each parameter of a kernel is, with the machine type it is passed
    as, the kernel's grid rule, threads per CTA and dynamic shared memory:

    ```mlir
    #fa.kernel_abi<grid = [tiles(Nq, 64), Hq, B], threads = 128,
                   shared = 81920,
                   params = [q : ptr, stride(q, 0) : i64, Nq : i32,
                             scale_log2 : f32, capture0 : ptr,
                             stride(capture0, 0) : i64]>
    ```

    Grid axes: `tiles(Nq, R)` or `tiles(Nk, R)` (ceil(N / R)) or `1` for x;
    `Hq`, `Hkv` or `1` for y; `B` or `1` for z. Where H or B exceeds CUDA's
    65535, y and z are launched folded, (x, min(H * B, 65535), ceil(H * B /
    65535)); the kernel takes H and B as parameters. Parameters: a tensor (`q`, `k`, `v`, `o`, `lse`, `do`,
    `dq`, `dk`, `dv`, `dsum`, `bias`, `slopes`, `dbias`, `dq_accum(D)`,
    `capture<i>`) is its pointer, `stride(tensor, dim)` an element stride,
    `Nq`, `Nk`, `group`, `B`, `Hq`, `Hkv` a size and `scale_log2`, `scale`,
    `seed` a scalar; each with its type, `ptr`, `i32`, `i64` or `f32`. The
    text is the kernel cache's (fa::runtime::printKernelAbi).
  }];
  let parameters = (ins
    AttrParameter<"::fa::runtime::GridRule", "the grid rule">:$grid,
    "uint32_t":$threads,
    "uint32_t":$sharedBytes,
    ArrayRefParameter<"::fa::runtime::KernelParam", "the parameters">:$params);
  let builders = [
    AttrBuilder<(ins "const ::fa::runtime::KernelAbi &":$abi), [{
      return $_get($_ctxt, abi.grid, abi.threads, abi.sharedBytes,
                   ::llvm::ArrayRef<::fa::runtime::KernelParam>(abi.params));
    }]>
  ];
  let hasCustomAssemblyFormat = 1;
  let genVerifyDecl = 1;
  let extraClassDeclaration = [{
    /// The plain description, named `name` (the kernel's symbol).
    ::fa::runtime::KernelAbi getAbi(::llvm::StringRef name = "") const;
  }];
}

#endif // FA_DIALECT_FA_IR_FAATTRS_TD
