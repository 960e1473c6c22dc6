// The backward of a mask_mod that leaves whole query rows without keys:
// rows with i mod 5 = 2 see nothing; the others see keys with j mod 4 != 3
// up to i + 8. f16, dynamic B and N, GQA.
func.func @grad(%q: tensor<?x4x?x64xf16>, %k: tensor<?x2x?x64xf16>,
                %v: tensor<?x2x?x64xf16>, %o: tensor<?x4x?x64xf16>,
                %do: tensor<?x4x?x64xf16>, %lse: tensor<?x4x?xf32>)
    -> (tensor<?x4x?x64xf16>, tensor<?x2x?x64xf16>, tensor<?x2x?x64xf16>) {
  %dq, %dk, %dv = fa.attention_grad %q, %k, %v, %o, %do, %lse
      : tensor<?x4x?x64xf16>, tensor<?x2x?x64xf16>, tensor<?x2x?x64xf16>,
        tensor<?x4x?x64xf16>, tensor<?x4x?x64xf16>, tensor<?x4x?xf32>
      -> tensor<?x4x?x64xf16>, tensor<?x2x?x64xf16>, tensor<?x2x?x64xf16>
      mask_mod {
  ^bb0(%b: index, %h: index, %i: index, %j: index):
    %c2 = arith.constant 2 : index
    %c3 = arith.constant 3 : index
    %c4 = arith.constant 4 : index
    %c5 = arith.constant 5 : index
    %c8 = arith.constant 8 : index
    %ri = arith.remui %i, %c5 : index
    %row = arith.cmpi ne, %ri, %c2 : index
    %rj = arith.remui %j, %c4 : index
    %col = arith.cmpi ne, %rj, %c3 : index
    %last = arith.addi %i, %c8 : index
    %near = arith.cmpi ule, %j, %last : index
    %a = arith.andi %row, %col : i1
    %keep = arith.andi %a, %near : i1
    fa.yield %keep : i1
  }
  return %dq, %dk, %dv
      : tensor<?x4x?x64xf16>, tensor<?x2x?x64xf16>, tensor<?x2x?x64xf16>
}
