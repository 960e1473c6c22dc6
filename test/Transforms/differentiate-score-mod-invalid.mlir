// RUN: fa-opt %s -fa-differentiate-score-mod -split-input-file -verify-diagnostics

!t = tensor<1x2x?x8xf32>
!l = tensor<1x2x?xf32>

// An op with no known derivative that depends on the score is an error; the
// op is left without a score_mod_grad.
func.func @atan(%q: !t, %o: !t, %lse: !l) -> !t {
  %dq, %dk, %dv = fa.attention_grad %q, %q, %q, %o, %o, %lse : !t, !t, !t, !t, !t, !l -> !t, !t, !t score_mod {
  ^bb0(%s: f32, %b: index, %h: index, %i: index, %j: index):
    // expected-error @+1 {{'math.atan' op has no derivative that fa-differentiate-score-mod knows; score_mod cannot be differentiated}}
    %a = math.atan %s : f32
    fa.yield %a : f32
  }
  return %dq : !t
}
