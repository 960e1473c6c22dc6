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

#endif // FA_DIALECT_FA_IR_FAATTRS_TD
