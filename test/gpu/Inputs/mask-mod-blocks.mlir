// A block-sparse mask_mod of i and j only (so fa-key-ranges bounds the key
// loop): query block i / 256 sees keys [512 (i / 256), 512 (i / 256) +
// 256). Key tiles before and after each block are skipped; with Nk < 1536,
// queries from 768 on see no key at all (O = 0, lse = -inf). bf16,
// D = 128, dynamic B and N.
func.func @f(%q: tensor<?x4x?x128xbf16>, %k: tensor<?x4x?x128xbf16>,
             %v: tensor<?x4x?x128xbf16>)
    -> (tensor<?x4x?x128xbf16>, tensor<?x4x?xf32>) {
  %o, %lse = fa.attention %q, %k, %v
      : tensor<?x4x?x128xbf16>, tensor<?x4x?x128xbf16>, tensor<?x4x?x128xbf16>
      -> tensor<?x4x?x128xbf16>, tensor<?x4x?xf32> mask_mod {
  ^bb0(%b: index, %h: index, %i: index, %j: index):
    %c256 = arith.constant 256 : index
    %c512 = arith.constant 512 : index
    %block = arith.divui %i, %c256 : index
    %lo = arith.muli %block, %c512 : index
    %hi = arith.addi %lo, %c256 : index
    %after = arith.cmpi uge, %j, %lo : index
    %before = arith.cmpi ult, %j, %hi : index
    %keep = arith.andi %after, %before : i1
    fa.yield %keep : i1
  }
  return %o, %lse : tensor<?x4x?x128xbf16>, tensor<?x4x?xf32>
}
