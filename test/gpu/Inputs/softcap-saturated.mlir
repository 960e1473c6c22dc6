// Scores pressed against one end of their range: 30 tanh(-|s| - 2) is in
// [-30, -28.9] where fa-bounded-softmax knows only [-30, 30], so its fixed
// offset (0) leaves every P near 2^-43. bf16, D = 128, dynamic B and N.
func.func @f(%q: tensor<?x4x?x128xbf16>, %k: tensor<?x4x?x128xbf16>,
             %v: tensor<?x4x?x128xbf16>)
    -> (tensor<?x4x?x128xbf16>, tensor<?x4x?xf32>) {
  %o, %lse = fa.attention %q, %k, %v {causal = #fa.causal<bottom_right>}
      : tensor<?x4x?x128xbf16>, tensor<?x4x?x128xbf16>, tensor<?x4x?x128xbf16>
      -> tensor<?x4x?x128xbf16>, tensor<?x4x?xf32> score_mod {
  ^bb0(%s: f32, %b: index, %h: index, %i: index, %j: index):
    %a = math.absf %s : f32
    %n = arith.negf %a : f32
    %two = arith.constant 2.000000e+00 : f32
    %x = arith.subf %n, %two : f32
    %t = math.tanh %x : f32
    %cap = arith.constant 3.000000e+01 : f32
    %r = arith.mulf %cap, %t : f32
    fa.yield %r : f32
  }
  return %o, %lse : tensor<?x4x?x128xbf16>, tensor<?x4x?xf32>
}
