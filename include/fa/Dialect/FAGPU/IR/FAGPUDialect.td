//===- FAGPUDialect.td - FA's kernel-level IR --------------*- tablegen -*-===//
//
// The `fagpu` dialect: one attention kernel as a CTA sees it. Between
// `fa.attention` (what to compute) and NVVM (instructions), it says how:
// which tiles live in shared memory and in which stage of a ring, which
// copies fill them and what waits for them, which tensor-core products run
// on which register fragments, and the online-softmax state each thread
// holds. Passes introduce and rewrite these ops (tiling, asynchronous copy
// rings, later TMA and warp specialization); convert-fa-to-nvvm lowers them
// op by op.
//
//===----------------------------------------------------------------------===//

#ifndef FA_DIALECT_FAGPU_IR_FAGPUDIALECT_TD
#define FA_DIALECT_FAGPU_IR_FAGPUDIALECT_TD

include "mlir/IR/AttrTypeBase.td"
include "mlir/IR/OpBase.td"

def FAGPU_Dialect : Dialect {
  let name = "fagpu";
  let summary = "FA's kernel-level IR: shared tiles, copies, fragments";
  let description = [{
    Values of register tiles are ranked tensors whose encoding says how the
    CTA's threads hold them (`#fagpu.acc`, `#fagpu.operand`, `#fagpu.rows`):
    element-wise `arith` and `math` ops apply to them as to any tensor.
    Shared-memory tiles are `!fagpu.shared` values, asynchronous copies are
    tracked with `!fagpu.token`s.
  }];
  let cppNamespace = "::mlir::fagpu";
  let dependentDialects = ["::mlir::fa::FADialect"];
  let useDefaultAttributePrinterParser = 1;
  let useDefaultTypePrinterParser = 1;
}

class FAGPU_Op<string mnemonic, list<Trait> traits = []>
    : Op<FAGPU_Dialect, mnemonic, traits>;

class FAGPU_Type<string name, string typeMnemonic, list<Trait> traits = []>
    : TypeDef<FAGPU_Dialect, name, traits> {
  let mnemonic = typeMnemonic;
}

// `!fagpu.shared<2x64x128xbf16>`: a ring of 2 stages of 64 x 128 tiles in
// shared memory, rows of 16-byte chunks XOR-swizzled with the row so that
// the 8 rows one ldmatrix reads hit distinct banks.
// `!fagpu.shared<2x64x128xbf16, wgmma>`: the same tiles in wgmma's 128-byte
// swizzle, which the tensor cores read through descriptors: 64-column slabs
// [columns / 64][rows][64], each a column of 8-row, 1024-byte swizzle atoms
// (the same bytes at 64 columns; what one TMA box of the tile writes).
def FAGPU_SharedType : FAGPU_Type<"Shared", "shared"> {
  let summary = "A ring of tiles in shared memory";
  let parameters = (ins ArrayRefParameter<"int64_t">:$shape,
                        "::mlir::Type":$elementType,
                        DefaultValuedParameter<"bool", "false">:$wgmma);
  let builders = [
    TypeBuilder<(ins "::llvm::ArrayRef<int64_t>":$shape,
                     "::mlir::Type":$elementType), [{
      return $_get($_ctxt, shape, elementType, false);
    }]>
  ];
  let hasCustomAssemblyFormat = 1;
  let genVerifyDecl = 1;
  let extraClassDeclaration = [{
    int64_t getStages() const { return getShape()[0]; }
    int64_t getRows() const { return getShape()[1]; }
    int64_t getCols() const { return getShape()[2]; }
    /// Bytes of one stage.
    int64_t getStageBytes() const;
    /// The same tile in `stages` stages (a ring of it).
    SharedType withStages(int64_t stages) const {
      return get(getContext(), {stages, getRows(), getCols()},
                 getElementType(), getWgmma());
    }
  }];
}

// `!fagpu.token`: the completion of asynchronous copies (one copy, or the
// group a commit closes).
def FAGPU_TokenType : FAGPU_Type<"Token", "token"> {
  let summary = "Completion of asynchronous copies";
}

// `!fagpu.barriers<2>`: a ring of 2 mbarriers in shared memory, one per stage
// of the tiles they guard (8 bytes each).
def FAGPU_BarriersType : FAGPU_Type<"Barriers", "barriers"> {
  let summary = "A ring of mbarriers in shared memory";
  let parameters = (ins "int64_t":$stages);
  let assemblyFormat = "`<` $stages `>`";
  let genVerifyDecl = 1;
}

#endif // FA_DIALECT_FAGPU_IR_FAGPUDIALECT_TD
