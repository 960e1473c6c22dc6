// RUN: fa-opt %s -fa-differentiate-score-mod | FileCheck %s

!t = tensor<1x2x?x8xf32>
!l = tensor<1x2x?xf32>

// Chain and product rules; index arithmetic has no derivative.
// CHECK-LABEL: func.func @tanh_times_const_plus_index(
// CHECK: } score_mod_grad {
// CHECK-NEXT: ^bb0(%[[S:.*]]: f32, %{{.*}}: index, %{{.*}}: index, %{{.*}}: index, %{{.*}}: index):
// CHECK-NEXT: %[[ONE:.*]] = arith.constant 1.000000e+00 : f32
// CHECK-NEXT: %[[T:.*]] = math.tanh %[[S]] : f32
// CHECK-NEXT: %[[ONE2:.*]] = arith.constant 1.000000e+00 : f32
// CHECK-NEXT: %[[T2:.*]] = arith.mulf %[[T]], %[[T]] : f32
// CHECK-NEXT: %[[DT:.*]] = arith.subf %[[ONE2]], %[[T2]] : f32
// CHECK-NEXT: %[[D:.*]] = arith.mulf %[[ONE]], %[[DT]] : f32
// CHECK-NEXT: %[[C:.*]] = arith.constant 2.000000e+00 : f32
// CHECK-NEXT: %[[R:.*]] = arith.mulf %[[D]], %[[C]] : f32
// CHECK-NEXT: fa.yield %[[R]] : f32
// CHECK-NEXT: }
func.func @tanh_times_const_plus_index(%q: !t, %o: !t, %lse: !l) -> !t {
  %dq, %dk, %dv = fa.attention_grad %q, %q, %q, %o, %o, %lse : !t, !t, !t, !t, !t, !l -> !t, !t, !t score_mod {
  ^bb0(%s: f32, %b: index, %h: index, %i: index, %j: index):
    %t = math.tanh %s : f32
    %c = arith.constant 2.0 : f32
    %m = arith.mulf %t, %c : f32
    %i64 = arith.index_cast %i : index to i64
    %f = arith.sitofp %i64 : i64 to f32
    %r = arith.addf %m, %f : f32
    fa.yield %r : f32
  }
  return %dq : !t
}

// Quotient rule with the score on both sides; exp reuses its result.
// CHECK-LABEL: func.func @quotient(
// CHECK: } score_mod_grad {
// CHECK-NEXT: ^bb0(%[[S:.*]]: f32, %{{.*}}: index, %{{.*}}: index, %{{.*}}: index, %{{.*}}: index):
// CHECK-NEXT: %[[ONE:.*]] = arith.constant 1.000000e+00 : f32
// CHECK-NEXT: %[[E:.*]] = math.exp %[[S]] : f32
// CHECK-NEXT: %[[DE:.*]] = arith.mulf %[[ONE]], %[[E]] : f32
// CHECK-NEXT: %[[Q:.*]] = arith.divf %[[E]], %[[S]] : f32
// CHECK-NEXT: %[[RDY:.*]] = arith.mulf %[[Q]], %[[ONE]] : f32
// CHECK-NEXT: %[[NUM:.*]] = arith.subf %[[DE]], %[[RDY]] : f32
// CHECK-NEXT: %[[R:.*]] = arith.divf %[[NUM]], %[[S]] : f32
// CHECK-NEXT: fa.yield %[[R]] : f32
// CHECK-NEXT: }
func.func @quotient(%q: !t, %o: !t, %lse: !l) -> !t {
  %dq, %dk, %dv = fa.attention_grad %q, %q, %q, %o, %o, %lse : !t, !t, !t, !t, !t, !l -> !t, !t, !t score_mod {
  ^bb0(%s: f32, %b: index, %h: index, %i: index, %j: index):
    %e = math.exp %s : f32
    %r = arith.divf %e, %s : f32
    fa.yield %r : f32
  }
  return %dq : !t
}

// max and select pick the tangent of the operand they return; the
// comparison is recomputed on the primal values.
// CHECK-LABEL: func.func @max_select(
// CHECK: } score_mod_grad {
// CHECK-NEXT: ^bb0(%[[S:.*]]: f32, %{{.*}}: index, %{{.*}}: index, %[[I:.*]]: index, %[[J:.*]]: index):
// CHECK-NEXT: %[[ONE:.*]] = arith.constant 1.000000e+00 : f32
// CHECK-NEXT: %[[Z:.*]] = arith.constant 0.000000e+00 : f32
// CHECK-NEXT: %[[GE:.*]] = arith.cmpf oge, %[[S]], %[[Z]] : f32
// CHECK-NEXT: %[[Z2:.*]] = arith.constant 0.000000e+00 : f32
// CHECK-NEXT: %[[DM:.*]] = arith.select %[[GE]], %[[ONE]], %[[Z2]] : f32
// CHECK-NEXT: %[[DIAG:.*]] = arith.cmpi eq, %[[I]], %[[J]] : index
// CHECK-NEXT: %[[Z3:.*]] = arith.constant 0.000000e+00 : f32
// CHECK-NEXT: %[[R:.*]] = arith.select %[[DIAG]], %[[Z3]], %[[DM]] : f32
// CHECK-NEXT: fa.yield %[[R]] : f32
// CHECK-NEXT: }
func.func @max_select(%q: !t, %o: !t, %lse: !l) -> !t {
  %dq, %dk, %dv = fa.attention_grad %q, %q, %q, %o, %o, %lse : !t, !t, !t, !t, !t, !l -> !t, !t, !t score_mod {
  ^bb0(%s: f32, %b: index, %h: index, %i: index, %j: index):
    %z = arith.constant 0.0 : f32
    %m = arith.maximumf %s, %z : f32
    %diag = arith.cmpi eq, %i, %j : index
    %c = arith.constant 3.0 : f32
    %r = arith.select %diag, %c, %m : f32
    fa.yield %r : f32
  }
  return %dq : !t
}

// A score_mod that ignores the score has derivative 0.
// CHECK-LABEL: func.func @constant_score(
// CHECK: } score_mod_grad {
// CHECK-NEXT: ^bb0(
// CHECK-NEXT: %[[Z:.*]] = arith.constant 0.000000e+00 : f32
// CHECK-NEXT: fa.yield %[[Z]] : f32
// CHECK-NEXT: }
func.func @constant_score(%q: !t, %o: !t, %lse: !l) -> !t {
  %dq, %dk, %dv = fa.attention_grad %q, %q, %q, %o, %o, %lse : !t, !t, !t, !t, !t, !l -> !t, !t, !t score_mod {
  ^bb0(%s: f32, %b: index, %h: index, %i: index, %j: index):
    %c = arith.constant 3.0 : f32
    fa.yield %c : f32
  }
  return %dq : !t
}

// A score_mod_grad that is already there is kept as written.
// CHECK-LABEL: func.func @kept(
// CHECK: } score_mod_grad {
// CHECK-NEXT: ^bb0(
// CHECK-NEXT: %[[C:.*]] = arith.constant 4.200000e+01 : f32
// CHECK-NEXT: fa.yield %[[C]] : f32
func.func @kept(%q: !t, %o: !t, %lse: !l) -> !t {
  %dq, %dk, %dv = fa.attention_grad %q, %q, %q, %o, %o, %lse : !t, !t, !t, !t, !t, !l -> !t, !t, !t score_mod {
  ^bb0(%s: f32, %b: index, %h: index, %i: index, %j: index):
    fa.yield %s : f32
  } score_mod_grad {
  ^bb0(%s: f32, %b: index, %h: index, %i: index, %j: index):
    %c = arith.constant 42.0 : f32
    fa.yield %c : f32
  }
  return %dq : !t
}

// Without a score_mod nothing is added; fa.attention is left alone.
// CHECK-LABEL: func.func @no_score_mod(
// CHECK-NOT: score_mod_grad
// CHECK: return
func.func @no_score_mod(%q: !t, %o: !t, %lse: !l) -> !t {
  %dq, %dk, %dv = fa.attention_grad %q, %q, %q, %o, %o, %lse : !t, !t, !t, !t, !t, !l -> !t, !t, !t
  %out = fa.attention %q, %q, %q : !t, !t, !t -> !t score_mod {
  ^bb0(%s: f32, %b: index, %h: index, %i: index, %j: index):
    %t = math.tanh %s : f32
    fa.yield %t : f32
  }
  return %dq : !t
}

// Ops without a derivative are fine where they do not depend on the score.
// CHECK-LABEL: func.func @atan_of_index(
// CHECK: } score_mod_grad {
// CHECK-NEXT: ^bb0(
// CHECK-NEXT: %[[ONE:.*]] = arith.constant 1.000000e+00 : f32
// CHECK-NEXT: fa.yield %[[ONE]] : f32
// CHECK-NEXT: }
func.func @atan_of_index(%q: !t, %o: !t, %lse: !l) -> !t {
  %dq, %dk, %dv = fa.attention_grad %q, %q, %q, %o, %o, %lse : !t, !t, !t, !t, !t, !l -> !t, !t, !t score_mod {
  ^bb0(%s: f32, %b: index, %h: index, %i: index, %j: index):
    %i64 = arith.index_cast %i : index to i64
    %f = arith.sitofp %i64 : i64 to f32
    %a = math.atan %f : f32
    %r = arith.addf %s, %a : f32
    fa.yield %r : f32
  }
  return %dq : !t
}
