//===- FAGPUAttrs.td - Register layouts of fagpu tensors ----*- tablegen -*-===//
//
// How the threads of a CTA hold a register tile. The layouts follow
// mma.sync m16n8k16 (PTX ISA): warp w of `warps` owns rows 16 w + [0, 16) of
// each block of 16 `warps` rows ("m-tile"); in it, lane 4 g + t holds rows g
// and g + 8 and, of each 8-column tile, columns 2 t and 2 t + 1.
//
//===----------------------------------------------------------------------===//

#ifndef FA_DIALECT_FAGPU_IR_FAGPUATTRS_TD
#define FA_DIALECT_FAGPU_IR_FAGPUATTRS_TD

include "fa/Dialect/FAGPU/IR/FAGPUDialect.td"
include "mlir/IR/EnumAttr.td"

class FAGPU_Attr<string name, string attrMnemonic, list<Trait> traits = []>
    : AttrDef<FAGPU_Dialect, name, traits> {
  let mnemonic = attrMnemonic;
}

// An [M, N] f32 tile in mma.sync accumulator fragments: per thread
// M / (16 warps) m-tiles x N / 8 n-tiles x 4 values.
def FAGPU_AccLayoutAttr : FAGPU_Attr<"AccLayout", "acc"> {
  let summary = "mma.sync accumulator fragments";
  let parameters = (ins "unsigned":$warps);
  let assemblyFormat = "`<` struct(params) `>`";
}

// An [M, K] f16/bf16 tile in mma.sync A-operand fragments: per thread
// M / (16 warps) m-tiles x K / 16 k-steps x 4 registers of two elements.
def FAGPU_OperandLayoutAttr : FAGPU_Attr<"OperandLayout", "operand"> {
  let summary = "mma.sync A-operand fragments";
  let parameters = (ins "unsigned":$warps);
  let assemblyFormat = "`<` struct(params) `>`";
}

// An [M] f32 vector of per-row values: per thread M / (16 warps) m-tiles x
// 2 rows (g, g + 8), the same in the 4 lanes of a quad; with `partial`, the
// row's value is the sum of its quad's 4 lanes (a row sum not yet reduced
// across the quad).
def FAGPU_RowsLayoutAttr : FAGPU_Attr<"RowsLayout", "rows"> {
  let summary = "Per-row values of accumulator fragments";
  let parameters = (ins "unsigned":$warps,
                        DefaultValuedParameter<"bool", "false">:$partial);
  let assemblyFormat = "`<` struct(params) `>`";
}

def FAGPU_ReduceKind : I32EnumAttr<"ReduceKind", "A row reduction", [
    I32EnumAttrCase<"Max", 0, "max">,
    I32EnumAttrCase<"Sum", 1, "sum">
  ]> {
  let genSpecializedAttr = 0;
  let cppNamespace = "::mlir::fagpu";
}
def FAGPU_ReduceKindAttr : EnumAttr<FAGPU_Dialect, FAGPU_ReduceKind, "reduce"> {
  let assemblyFormat = "`<` $value `>`";
}

#endif // FA_DIALECT_FAGPU_IR_FAGPUATTRS_TD
