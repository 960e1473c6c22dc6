// A mask_mod: documents of 37 positions (i / 37 == j / 37) with a prefix-LM
// twist (inside a document, keys before the query or in its first 5
// positions), on top of bottom-right causal, GQA 4:2; f16, D = 64, dynamic
// B and N. Rows of a document's prefix see keys after them, so causal
// still cuts.
func.func @f(%q: tensor<?x4x?x64xf16>, %k: tensor<?x2x?x64xf16>,
             %v: tensor<?x2x?x64xf16>)
    -> (tensor<?x4x?x64xf16>, tensor<?x4x?xf32>) {
  %o, %lse = fa.attention %q, %k, %v {causal = #fa.causal<bottom_right>}
      : tensor<?x4x?x64xf16>, tensor<?x2x?x64xf16>, tensor<?x2x?x64xf16>
      -> tensor<?x4x?x64xf16>, tensor<?x4x?xf32> mask_mod {
  ^bb0(%b: index, %h: index, %i: index, %j: index):
    %c37 = arith.constant 37 : index
    %c5 = arith.constant 5 : index
    %di = arith.divui %i, %c37 : index
    %dj = arith.divui %j, %c37 : index
    %same = arith.cmpi eq, %di, %dj : index
    %before = arith.cmpi ule, %j, %i : index
    %pj = arith.remui %j, %c37 : index
    %prefix = arith.cmpi ult, %pj, %c5 : index
    %visible = arith.ori %before, %prefix : i1
    %keep = arith.andi %same, %visible : i1
    fa.yield %keep : i1
  }
  return %o, %lse : tensor<?x4x?x64xf16>, tensor<?x4x?xf32>
}
