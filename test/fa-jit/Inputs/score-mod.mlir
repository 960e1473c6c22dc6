// A relative-position score_mod: s + 0.05 * (j - i), per head scaled by
// (h + 1), with a soft clamp through tanh. Dynamic B and N.
func.func @relative(%q: tensor<?x4x?x64xf32>, %k: tensor<?x2x?x64xf32>,
                    %v: tensor<?x2x?x64xf32>)
    -> (tensor<?x4x?x64xf32>, tensor<?x4x?xf32>) {
  %o, %lse = fa.attention %q, %k, %v
      : tensor<?x4x?x64xf32>, tensor<?x2x?x64xf32>, tensor<?x2x?x64xf32>
      -> tensor<?x4x?x64xf32>, tensor<?x4x?xf32> score_mod {
  ^bb0(%s: f32, %b: index, %h: index, %i: index, %j: index):
    %d = arith.subi %j, %i : index
    %di = arith.index_cast %d : index to i64
    %df = arith.sitofp %di : i64 to f32
    %c1 = arith.constant 1 : index
    %h1 = arith.addi %h, %c1 : index
    %hi = arith.index_cast %h1 : index to i32
    %hf = arith.sitofp %hi : i32 to f32
    %slope = arith.constant 5.000000e-02 : f32
    %w = arith.mulf %slope, %hf : f32
    %bias = arith.mulf %w, %df : f32
    %t = math.tanh %bias : f32
    %r = arith.addf %s, %t : f32
    fa.yield %r : f32
  }
  return %o, %lse : tensor<?x4x?x64xf32>, tensor<?x4x?xf32>
}
