// RUN: fa-opt %s -fa-fuse="chip=sm_90a" -fa-tile -fa-bounded-softmax -split-input-file | FileCheck %s

// fa-bounded-softmax: where the scores are bounded, fa-tile's row-max loop
// becomes a constant offset at the middle of their range (in the log2
// domain), which the row-sum loop subtracts; that loop is then the kernel's
// one loop over K/V, with no row max and no rescale.

// Softcap 30 in bf16: scores in [-30, 30], offset 0 (e^(+-30) is 2^(+-43),
// within bf16's 78). Causal bottom-right (rows with no key keep l = 0). No
// score sits at the offset, so O's row sum adds P as P V's operand rounds
// it (`rounded bf16`): a row with one key then gets exactly that key's V.
// The lse keeps a second sum, of P as computed.
// CHECK-LABEL: gpu.func @fa_forward_0
// CHECK-NOT: fa.softmax_row_max
// CHECK: %[[NINF:[a-z0-9_]+]] = arith.constant dense<0xFF800000> : tensor<64xf32, #fagpu.rows<warps = 4>>
// CHECK: arith.constant dense<1.44269502> : tensor<64xf32, #fagpu.rows<warps = 4>>
// CHECK-NEXT: %[[OFF:[a-z0-9_]+]] = arith.constant dense<0.000000e+00> : tensor<64xf32, #fagpu.rows<warps = 4>>
// CHECK-NEXT: %[[L0:[a-z0-9_]+]] = arith.constant dense<0.000000e+00> : tensor<64xf32, #fagpu.rows<warps = 4, partial = true>>
// CHECK-NEXT: %[[ACC0:[a-z0-9_]+]] = arith.constant dense<0.000000e+00> : tensor<64x64xf32, #fagpu.acc<warps = 4>>
// CHECK-NEXT: %[[F:[0-9]+]]:3 = scf.for %{{.*}} iter_args(%[[L:[a-z0-9_]+]] = %[[L0]], %[[ACC:[a-z0-9_]+]] = %[[ACC0]], %[[LX:[a-z0-9_]+]] = %[[L0]])
// With the offset fixed, the score map computes P's exponent, 30 tanh(x)
// log2(e) - 0: one constant times the tanh.
// CHECK: fagpu.map
// CHECK: %[[T:[0-9]+]] = math.tanh
// CHECK-NEXT: %[[K:[a-z0-9_]+]] = arith.constant 43.2808495 : f32
// CHECK-NEXT: %[[X:[0-9]+]] = arith.mulf %[[T]], %[[K]] : f32
// CHECK-NEXT: fagpu.yield %[[X]] : f32
// CHECK: %[[S:[0-9]+]] = scf.if
// CHECK: fagpu.mask
// CHECK: } else {
// CHECK-NEXT: scf.yield
// CHECK-NEXT: }{{$}}
// CHECK-NEXT: %[[P:[0-9]+]] = math.exp2 %[[S]]
// CHECK-NEXT: %[[LNEW:[0-9]+]] = fagpu.update_row_sum %[[L]], %[[P]] rounded bf16 :
// CHECK-NEXT: %[[LXNEW:[0-9]+]] = fagpu.update_row_sum %[[LX]], %[[P]] :
// CHECK-NEXT: %[[PA:[0-9]+]] = fagpu.to_operand %[[P]]
// CHECK-NEXT: %[[ACCNEW:[0-9]+]] = fagpu.mma %[[PA]], %{{.*}} acc %[[ACC]] {wgmma}
// CHECK-NEXT: scf.yield %[[LNEW]], %[[ACCNEW]], %[[LXNEW]]
// CHECK-NEXT: }{{$}}
// O divides by the rounded sum; the lse is the offset plus log2 of P's
// sum as computed.
// CHECK: %[[LSUM:[0-9]+]] = fagpu.reduce_rows <sum> %[[F]]#0
// CHECK: arith.divf %{{.*}}, %[[LSUM]]
// CHECK: %[[LXSUM:[0-9]+]] = fagpu.reduce_rows <sum> %[[F]]#2
// CHECK-NEXT: %[[LOG:[0-9]+]] = math.log2 %[[LXSUM]]
// CHECK: arith.addf %[[OFF]], %[[LOG]]
// CHECK-NOT: fa.softmax_
// CHECK: gpu.return
func.func @softcap(%q: tensor<?x8x?x64xbf16>, %k: tensor<?x2x?x64xbf16>, %v: tensor<?x2x?x64xbf16>) -> (tensor<?x8x?x64xbf16>, tensor<?x8x?xf32>) {
  %o, %lse = fa.attention %q, %k, %v {causal = #fa.causal<bottom_right>, softcap = 30.0 : f32} : tensor<?x8x?x64xbf16>, tensor<?x2x?x64xbf16>, tensor<?x2x?x64xbf16> -> tensor<?x8x?x64xbf16>, tensor<?x8x?xf32>
  return %o, %lse : tensor<?x8x?x64xbf16>, tensor<?x8x?xf32>
}

// -----

// A score_mod of the same form, shifted: 10 tanh(x) - 20 is in [-30, -10],
// so the offset is -20 log2(e). The exponent (10 tanh(x) - 20) log2(e) +
// 20 log2(e) folds to 14.427 tanh(x) plus what f32's offset (-28.8539)
// rounded off.
// CHECK-LABEL: gpu.func @fa_forward_0
// CHECK-NOT: fa.softmax_row_max
// CHECK: scf.for %{{.*}} iter_args(%{{[a-z0-9_]+}} = %{{[a-z0-9_]+}}, %{{[a-z0-9_]+}} = %{{[a-z0-9_]+}}) -> (tensor<64xf32, #fagpu.rows<warps = 4, partial = true>>, tensor<64x128xf32, #fagpu.acc<warps = 4>>)
// CHECK: %[[T:[0-9]+]] = math.tanh
// CHECK-NEXT: %[[K:[a-z0-9_]+]] = arith.constant 14.4269505 : f32
// CHECK-NEXT: %[[X:[0-9]+]] = arith.mulf %[[T]], %[[K]] : f32
// CHECK-NEXT: %[[B:[a-z0-9_]+]] = arith.constant 4.76837158E-7 : f32
// CHECK-NEXT: %[[E:[0-9]+]] = arith.addf %[[X]], %[[B]] : f32
// CHECK-NEXT: fagpu.yield %[[E]] : f32
// CHECK: %[[S:[0-9]+]] = scf.if
// CHECK: }{{$}}
// CHECK-NEXT: math.exp2 %[[S]]
// CHECK-NOT: fagpu.scale_rows
// CHECK: gpu.return
func.func @shifted(%q: tensor<?x4x?x128xbf16>) -> tensor<?x4x?x128xbf16> {
  %o = fa.attention %q, %q, %q : tensor<?x4x?x128xbf16>, tensor<?x4x?x128xbf16>, tensor<?x4x?x128xbf16> -> tensor<?x4x?x128xbf16> score_mod {
  ^bb0(%s: f32, %b: index, %h: index, %i: index, %j: index):
    %c10 = arith.constant 1.000000e+01 : f32
    %x = arith.divf %s, %c10 : f32
    %t = math.tanh %x : f32
    %u = arith.mulf %t, %c10 : f32
    %c20 = arith.constant 2.000000e+01 : f32
    %r = arith.subf %u, %c20 : f32
    fa.yield %r : f32
  }
  return %o : tensor<?x4x?x128xbf16>
}

// -----

// f16's P allows 8 binades each way: softcap 4 (5.8) has its offset...
// CHECK-LABEL: gpu.func @fa_forward_0
// CHECK-NOT: fa.softmax_row_max
// CHECK: scf.for
// CHECK: %[[T:[0-9]+]] = math.tanh
// CHECK-NEXT: arith.constant 5.770780e+00 : f32
// CHECK: fagpu.update_row_sum %{{.*}}, %{{.*}} rounded f16 :
// CHECK-NOT: fa.softmax_row_sum
// CHECK: gpu.return
func.func @f16_cap4(%q: tensor<?x4x?x64xf16>) -> tensor<?x4x?x64xf16> {
  %o = fa.attention %q, %q, %q {softcap = 4.0 : f32} : tensor<?x4x?x64xf16>, tensor<?x4x?x64xf16>, tensor<?x4x?x64xf16> -> tensor<?x4x?x64xf16>
  return %o : tensor<?x4x?x64xf16>
}

// -----

// ...softcap 30 (43) keeps the running max.
// CHECK-LABEL: gpu.func @fa_forward_0
// CHECK: } {fa.softmax_row_max = "exp2"}
// CHECK: } {fa.softmax_row_sum}
func.func @f16_cap30(%q: tensor<?x4x?x64xf16>) -> tensor<?x4x?x64xf16> {
  %o = fa.attention %q, %q, %q {softcap = 30.0 : f32} : tensor<?x4x?x64xf16>, tensor<?x4x?x64xf16>, tensor<?x4x?x64xf16> -> tensor<?x4x?x64xf16>
  return %o : tensor<?x4x?x64xf16>
}

// -----

// bf16 past its limit: softcap 60 (86.6 binades > 78) keeps the running max.
// CHECK-LABEL: gpu.func @fa_forward_0
// CHECK: } {fa.softmax_row_max = "exp2"}
// CHECK: } {fa.softmax_row_sum}
func.func @cap60(%q: tensor<?x4x?x64xbf16>) -> tensor<?x4x?x64xbf16> {
  %o = fa.attention %q, %q, %q {softcap = 60.0 : f32} : tensor<?x4x?x64xbf16>, tensor<?x4x?x64xbf16>, tensor<?x4x?x64xbf16> -> tensor<?x4x?x64xbf16>
  return %o : tensor<?x4x?x64xbf16>
}

// -----

// ALiBi after the softcap: a slope read from memory times the distance is
// not bounded.
// CHECK-LABEL: gpu.func @fa_forward_0
// CHECK: } {fa.softmax_row_max = "exp2"}
// CHECK: } {fa.softmax_row_sum}
func.func @alibi(%q: tensor<?x4x?x64xbf16>, %slopes: tensor<4xf32>) -> tensor<?x4x?x64xbf16> {
  %o = fa.attention %q, %q, %q alibi_slopes(%slopes : tensor<4xf32>) {softcap = 30.0 : f32} : tensor<?x4x?x64xbf16>, tensor<?x4x?x64xbf16>, tensor<?x4x?x64xbf16> -> tensor<?x4x?x64xbf16>
  return %o : tensor<?x4x?x64xbf16>
}

// -----

// The plain product of Q and K is not bounded.
// CHECK-LABEL: gpu.func @fa_forward_0
// CHECK: } {fa.softmax_row_max = "exp2"}
// CHECK: } {fa.softmax_row_sum}
func.func @plain(%q: tensor<?x4x?x64xbf16>) -> tensor<?x4x?x64xbf16> {
  %o = fa.attention %q, %q, %q : tensor<?x4x?x64xbf16>, tensor<?x4x?x64xbf16>, tensor<?x4x?x64xbf16> -> tensor<?x4x?x64xbf16>
  return %o : tensor<?x4x?x64xbf16>
}

// -----

// Dropout: P V reads P times its factors and the row sum P itself, so the
// sum cannot be P as P V's operand rounds it; the running max stays.
// CHECK-LABEL: gpu.func @fa_forward_0
// CHECK: } {fa.softmax_row_max = "exp2"}
// CHECK: } {fa.softmax_row_sum}
func.func @dropout(%q: tensor<?x4x?x64xbf16>, %seed: i64) -> tensor<?x4x?x64xbf16> {
  %o = fa.attention %q, %q, %q dropout_seed(%seed) {dropout_p = 0.25 : f32, softcap = 30.0 : f32} : tensor<?x4x?x64xbf16>, tensor<?x4x?x64xbf16>, tensor<?x4x?x64xbf16> -> tensor<?x4x?x64xbf16>
  return %o : tensor<?x4x?x64xbf16>
}
