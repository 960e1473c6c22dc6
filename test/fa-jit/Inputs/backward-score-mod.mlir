// The backward of a nonlinear, index-dependent score_mod: a soft cap
// 3 * tanh(s / 3), plus a relative-position term tanh(0.05 (h + 1) (j - i)),
// floored at -2 by maximumf (a derivative of 0 below the floor). bf16,
// GQA (4 query heads on 2 K/V heads), dynamic B and N, D = 128.
func.func @grad(%q: tensor<?x4x?x128xbf16>, %k: tensor<?x2x?x128xbf16>,
                %v: tensor<?x2x?x128xbf16>, %o: tensor<?x4x?x128xbf16>,
                %do: tensor<?x4x?x128xbf16>, %lse: tensor<?x4x?xf32>)
    -> (tensor<?x4x?x128xbf16>, tensor<?x2x?x128xbf16>,
        tensor<?x2x?x128xbf16>) {
  %dq, %dk, %dv = fa.attention_grad %q, %k, %v, %o, %do, %lse
      : tensor<?x4x?x128xbf16>, tensor<?x2x?x128xbf16>, tensor<?x2x?x128xbf16>,
        tensor<?x4x?x128xbf16>, tensor<?x4x?x128xbf16>, tensor<?x4x?xf32>
      -> tensor<?x4x?x128xbf16>, tensor<?x2x?x128xbf16>,
         tensor<?x2x?x128xbf16> score_mod {
  ^bb0(%s: f32, %b: index, %h: index, %i: index, %j: index):
    %c3 = arith.constant 3.000000e+00 : f32
    %x = arith.divf %s, %c3 : f32
    %t = math.tanh %x : f32
    %capped = arith.mulf %c3, %t : f32
    %d = arith.subi %j, %i : index
    %di = arith.index_cast %d : index to i64
    %df = arith.sitofp %di : i64 to f32
    %c1 = arith.constant 1 : index
    %h1 = arith.addi %h, %c1 : index
    %hi = arith.index_cast %h1 : index to i32
    %hf = arith.sitofp %hi : i32 to f32
    %slope = arith.constant 5.000000e-02 : f32
    %w = arith.mulf %slope, %hf : f32
    %pos = arith.mulf %w, %df : f32
    %tp = math.tanh %pos : f32
    %sum = arith.addf %capped, %tp : f32
    %floor = arith.constant -2.000000e+00 : f32
    %r = arith.maximumf %sum, %floor : f32
    fa.yield %r : f32
  }
  return %dq, %dk, %dv
      : tensor<?x4x?x128xbf16>, tensor<?x2x?x128xbf16>, tensor<?x2x?x128xbf16>
}
