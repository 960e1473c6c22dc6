// A score_mod through math.atan, which fa-differentiate-score-mod cannot
// differentiate: the forward runs, the backward's pipeline refuses.
func.func @arctan(%q: tensor<1x2x16x32xf32>, %k: tensor<1x2x16x32xf32>,
                  %v: tensor<1x2x16x32xf32>) -> tensor<1x2x16x32xf32> {
  %o = fa.attention %q, %k, %v
      : tensor<1x2x16x32xf32>, tensor<1x2x16x32xf32>, tensor<1x2x16x32xf32>
      -> tensor<1x2x16x32xf32> score_mod {
  ^bb0(%s: f32, %b: index, %h: index, %i: index, %j: index):
    %r = math.atan %s : f32
    fa.yield %r : f32
  }
  return %o : tensor<1x2x16x32xf32>
}
