// RUN: fa-opt %s -fa-tile-grad -split-input-file -verify-diagnostics
// RUN: not fa-opt %s -split-input-file -fa-tile-grad="block-q=0" 2>&1 | FileCheck %s --check-prefix=BLOCK

// BLOCK: error: fa-tile-grad: block-q and block-kv must be positive, got 0 and 64

!t = tensor<1x1x?x8xf32>
!l = tensor<1x1x?xf32>

func.func @score_mod_without_grad(%q: !t, %o: !t, %lse: !l) -> !t {
  // expected-error @+1 {{'fa.attention_grad' op score_mod has no score_mod_grad region; run fa-differentiate-score-mod first}}
  %dq, %dk, %dv = fa.attention_grad %q, %q, %q, %o, %o, %lse : !t, !t, !t, !t, !t, !l -> !t, !t, !t score_mod {
  ^bb0(%s: f32, %b: index, %h: index, %i: index, %j: index):
    %t = math.tanh %s : f32
    fa.yield %t : f32
  }
  return %dq : !t
}
