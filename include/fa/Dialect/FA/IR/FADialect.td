//===- FADialect.td - FA dialect definition ----------------*- tablegen -*-===//
//
// The `fa` dialect: exact attention as one op, lowered by the fa-* passes.
//
//===----------------------------------------------------------------------===//

#ifndef FA_DIALECT_FA_IR_FADIALECT_TD
#define FA_DIALECT_FA_IR_FADIALECT_TD

include "mlir/IR/OpBase.td"

def FA_Dialect : Dialect {
  let name = "fa";
  let summary = "Exact attention (FlashAttention) as a compiler dialect";
  let description = [{
    The `fa` dialect describes exact scaled-dot-product attention and its
    variants (causal, sliding window, softcap, ALiBi, additive bias, dropout,
    GQA/MQA, user `score_mod` / `mask_mod` regions) as data on one op, so
    that passes can tile, rewrite the softmax online, fuse and pipeline it.
  }];
  let cppNamespace = "::mlir::fa";
  let useDefaultAttributePrinterParser = 1;
}

class FA_Op<string mnemonic, list<Trait> traits = []>
    : Op<FA_Dialect, mnemonic, traits>;

#endif // FA_DIALECT_FA_IR_FADIALECT_TD
