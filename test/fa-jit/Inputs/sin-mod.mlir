// A score_mod with an op the reference's region evaluator does not know
// (math.sin): the kernel runs, --check refuses.
func.func @wobble(%q: tensor<1x2x16x32xf32>, %k: tensor<1x2x16x32xf32>,
                  %v: tensor<1x2x16x32xf32>) -> tensor<1x2x16x32xf32> {
  %o = fa.attention %q, %k, %v
      : tensor<1x2x16x32xf32>, tensor<1x2x16x32xf32>, tensor<1x2x16x32xf32>
      -> tensor<1x2x16x32xf32> score_mod {
  ^bb0(%s: f32, %b: index, %h: index, %i: index, %j: index):
    %w = math.sin %s : f32
    %r = arith.addf %s, %w : f32
    fa.yield %r : f32
  }
  return %o : tensor<1x2x16x32xf32>
}
