// Document masking with a prefix-LM twist: queries and keys belong to
// documents of 16 positions (i / 16 == j / 16); inside a document, keys
// before the query or within the first 4 positions are visible. Static
// shapes, bf16.
func.func @documents(%q: tensor<2x2x64x32xbf16>, %k: tensor<2x2x64x32xbf16>,
                     %v: tensor<2x2x64x32xbf16>)
    -> (tensor<2x2x64x32xbf16>, tensor<2x2x64xf32>) {
  %o, %lse = fa.attention %q, %k, %v
      : tensor<2x2x64x32xbf16>, tensor<2x2x64x32xbf16>, tensor<2x2x64x32xbf16>
      -> tensor<2x2x64x32xbf16>, tensor<2x2x64xf32> mask_mod {
  ^bb0(%b: index, %h: index, %i: index, %j: index):
    %c16 = arith.constant 16 : index
    %c4 = arith.constant 4 : index
    %di = arith.divui %i, %c16 : index
    %dj = arith.divui %j, %c16 : index
    %same = arith.cmpi eq, %di, %dj : index
    %causal = arith.cmpi ule, %j, %i : index
    %pj = arith.remui %j, %c16 : index
    %prefix = arith.cmpi ult, %pj, %c4 : index
    %visible = arith.ori %causal, %prefix : i1
    %keep = arith.andi %same, %visible : i1
    fa.yield %keep : i1
  }
  return %o, %lse : tensor<2x2x64x32xbf16>, tensor<2x2x64xf32>
}
