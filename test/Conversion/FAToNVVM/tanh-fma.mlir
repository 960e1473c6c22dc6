// RUN: fa-opt %s -split-input-file -fa-fuse="chip=sm_90a warp-specialize=1" | FileCheck %s --check-prefix=DEFAULT
// RUN: fa-opt %s -split-input-file -fa-fuse="chip=sm_90a tanh-fma=0" | FileCheck %s --check-prefix=NONE
// RUN: fa-opt %s -split-input-file -fa-fuse="chip=sm_90a tanh-fma=2" -fa-tile -fa-bounded-softmax -fa-online-softmax -fa-async-copy -convert-fa-to-nvvm=chip=sm_90a | FileCheck %s
// RUN: not fa-opt %s -split-input-file -fa-fuse="chip=sm_90a tanh-fma=9" 2>&1 | FileCheck %s --check-prefix=BAD
// BAD: fa-fuse: tanh-fma must be -1 (the default) or 0 to 8, got 9

// fa-fuse's tanh-fma: of every 8 tanh values a thread computes, this many
// take 1 / (1 + e^(-2|x|)) from Newton steps on the FMA pipe, the others
// the MUFU's rcp of 1 + e^(2x). By default (the producer warpgroup's
// tiles) 6 up to D = 96, 4 up to D = 128, none above; only kernels whose
// scores take a tanh are marked.
// DEFAULT-LABEL: func.func @softcap
// DEFAULT: gpu.func @fa_forward_0
// DEFAULT-SAME: fa.tanh_fma = 6 : i64
// NONE-LABEL: func.func @softcap
// NONE: gpu.func @fa_forward_0
// NONE-NOT: fa.tanh_fma

// Values 0 and 1 of each 8. Softcap 30's cap * log2(e) * tanh(x) with
// x = s * 0.125 / 30: e = 2^(-2 log2(e) |s| 0.125 / 30) in (0, 1], the
// reciprocal of 1 + e from a quadratic in e and two Newton steps, then
// 2 r - 1 times the cap and log2(e), with the sign of s.
// CHECK-LABEL: llvm.func @fa_forward_0
// CHECK: %[[A:.+]] = llvm.intr.fabs(%[[S:.+]]) : (f32) -> f32
// CHECK-NEXT: %[[F:.+]] = arith.constant -0.0120224589 : f32
// CHECK-NEXT: %[[Y:.+]] = arith.mulf %[[A]], %[[F]] : f32
// CHECK-NEXT: %[[E:.+]] = llvm.intr.exp2(%[[Y]]) : (f32) -> f32
// CHECK-NEXT: %[[ONE:.+]] = arith.constant 1.000000e+00 : f32
// CHECK-NEXT: %[[D:.+]] = arith.addf %[[E]], %[[ONE]] : f32
// CHECK-NEXT: %[[ND:.+]] = arith.negf %[[D]] : f32
// CHECK-NEXT: %[[C2:.+]] = arith.constant 0.3232283 : f32
// CHECK-NEXT: %[[C1:.+]] = arith.constant -0.808070957 : f32
// CHECK-NEXT: %[[P1:.+]] = math.fma %[[C2]], %[[E]], %[[C1]] : f32
// CHECK-NEXT: %[[C0:.+]] = arith.constant 0.989895105 : f32
// CHECK-NEXT: %[[R0:.+]] = math.fma %[[P1]], %[[E]], %[[C0]] : f32
// CHECK-NEXT: %[[ONE1:.+]] = arith.constant 1.000000e+00 : f32
// CHECK-NEXT: %[[ERR1:.+]] = math.fma %[[ND]], %[[R0]], %[[ONE1]] : f32
// CHECK-NEXT: %[[R1:.+]] = math.fma %[[R0]], %[[ERR1]], %[[R0]] : f32
// CHECK-NEXT: %[[ONE2:.+]] = arith.constant 1.000000e+00 : f32
// CHECK-NEXT: %[[ERR2:.+]] = math.fma %[[ND]], %[[R1]], %[[ONE2]] : f32
// CHECK-NEXT: %[[R2:.+]] = math.fma %[[R1]], %[[ERR2]], %[[R1]] : f32
// CHECK-NEXT: %[[HI:.+]] = arith.constant 8.656170e+01 : f32
// CHECK-NEXT: %[[LO:.+]] = arith.constant -43.2808495 : f32
// CHECK-NEXT: %[[T:.+]] = math.fma %[[HI]], %[[R2]], %[[LO]] : f32
// CHECK-NEXT: llvm.intr.copysign(%[[T]], %[[S]]) : (f32, f32) -> f32
// CHECK: llvm.intr.copysign
// Values 2 to 7 on the MUFU, then 8 and 9 again on the FMA pipe.
// CHECK-NOT: llvm.intr.copysign
// CHECK-COUNT-6: rcp.approx.ftz.f32
// CHECK-NOT: rcp.approx.ftz.f32
// CHECK: llvm.intr.copysign
// CHECK-NEXT: arith.index_cast
func.func @softcap(%q: tensor<1x2x?x64xbf16>) -> tensor<1x2x?x64xbf16> {
  %o = fa.attention %q, %q, %q {softcap = 30.0 : f32} : tensor<1x2x?x64xbf16>, tensor<1x2x?x64xbf16>, tensor<1x2x?x64xbf16> -> tensor<1x2x?x64xbf16>
  return %o : tensor<1x2x?x64xbf16>
}

// -----

// CHECK-LABEL: func.func @softcap_d96
// DEFAULT-LABEL: func.func @softcap_d96
// DEFAULT: gpu.func @fa_forward_0
// DEFAULT-SAME: fa.tanh_fma = 6 : i64
func.func @softcap_d96(%q: tensor<1x2x?x96xbf16>) -> tensor<1x2x?x96xbf16> {
  %o = fa.attention %q, %q, %q {softcap = 30.0 : f32} : tensor<1x2x?x96xbf16>, tensor<1x2x?x96xbf16>, tensor<1x2x?x96xbf16> -> tensor<1x2x?x96xbf16>
  return %o : tensor<1x2x?x96xbf16>
}

// -----

// DEFAULT-LABEL: func.func @softcap_d128
// DEFAULT: gpu.func @fa_forward_0
// DEFAULT-SAME: fa.tanh_fma = 4 : i64
func.func @softcap_d128(%q: tensor<1x2x?x128xbf16>) -> tensor<1x2x?x128xbf16> {
  %o = fa.attention %q, %q, %q {softcap = 30.0 : f32} : tensor<1x2x?x128xbf16>, tensor<1x2x?x128xbf16>, tensor<1x2x?x128xbf16> -> tensor<1x2x?x128xbf16>
  return %o : tensor<1x2x?x128xbf16>
}

// -----

// DEFAULT-LABEL: func.func @softcap_d192
// DEFAULT: gpu.func @fa_forward_0
// DEFAULT-NOT: fa.tanh_fma
// DEFAULT: return
func.func @softcap_d192(%q: tensor<1x2x?x192xbf16>) -> tensor<1x2x?x192xbf16> {
  %o = fa.attention %q, %q, %q {softcap = 30.0 : f32} : tensor<1x2x?x192xbf16>, tensor<1x2x?x192xbf16>, tensor<1x2x?x192xbf16> -> tensor<1x2x?x192xbf16>
  return %o : tensor<1x2x?x192xbf16>
}

// -----

// DEFAULT-LABEL: func.func @softcap_d256
// DEFAULT: gpu.func @fa_forward_0
// DEFAULT-NOT: fa.tanh_fma
// DEFAULT: return
func.func @softcap_d256(%q: tensor<1x2x?x256xbf16>) -> tensor<1x2x?x256xbf16> {
  %o = fa.attention %q, %q, %q {softcap = 30.0 : f32} : tensor<1x2x?x256xbf16>, tensor<1x2x?x256xbf16>, tensor<1x2x?x256xbf16> -> tensor<1x2x?x256xbf16>
  return %o : tensor<1x2x?x256xbf16>
}

// -----

// A score_mod's tanh is marked as softcap's is; a kernel without one is not.
// DEFAULT-LABEL: func.func @score_mod_tanh
// DEFAULT: gpu.func @fa_forward_0
// DEFAULT-SAME: fa.tanh_fma = 4 : i64
func.func @score_mod_tanh(%q: tensor<1x2x?x128xbf16>) -> tensor<1x2x?x128xbf16> {
  %o = fa.attention %q, %q, %q : tensor<1x2x?x128xbf16>, tensor<1x2x?x128xbf16>, tensor<1x2x?x128xbf16> -> tensor<1x2x?x128xbf16> score_mod {
  ^bb0(%s: f32, %b: index, %h: index, %i: index, %j: index):
    %c10 = arith.constant 1.000000e+01 : f32
    %x = arith.divf %s, %c10 : f32
    %t = math.tanh %x : f32
    %u = arith.mulf %t, %c10 : f32
    fa.yield %u : f32
  }
  return %o : tensor<1x2x?x128xbf16>
}

// -----

// A tanh that no constant multiplies (here tanh(s)^2; fa-bounded-softmax
// folds a sum's constants into the scale) takes the k of 8 too, scale 1.
// CHECK-LABEL: func.func @bare_tanh
// CHECK: llvm.func @fa_forward_0
// CHECK: %[[A:.+]] = llvm.intr.fabs(%[[S:.+]]) : (f32) -> f32
// CHECK: %[[TWO:.+]] = arith.constant 2.000000e+00 : f32
// CHECK-NEXT: %[[ONE:.+]] = arith.constant -1.000000e+00 : f32
// CHECK-NEXT: %[[T:.+]] = math.fma %[[TWO]], %{{.+}}, %[[ONE]] : f32
// CHECK-NEXT: llvm.intr.copysign(%[[T]], %[[S]]) : (f32, f32) -> f32
// CHECK: llvm.intr.copysign
// CHECK-NOT: llvm.intr.copysign
// CHECK-COUNT-6: rcp.approx.ftz.f32
// CHECK-NOT: rcp.approx.ftz.f32
// CHECK: llvm.intr.copysign
func.func @bare_tanh(%q: tensor<1x2x?x128xbf16>) -> tensor<1x2x?x128xbf16> {
  %o = fa.attention %q, %q, %q : tensor<1x2x?x128xbf16>, tensor<1x2x?x128xbf16>, tensor<1x2x?x128xbf16> -> tensor<1x2x?x128xbf16> score_mod {
  ^bb0(%s: f32, %b: index, %h: index, %i: index, %j: index):
    %t = math.tanh %s : f32
    %u = arith.mulf %t, %t : f32
    fa.yield %u : f32
  }
  return %o : tensor<1x2x?x128xbf16>
}

// -----

// DEFAULT-LABEL: func.func @plain
// DEFAULT: gpu.func @fa_forward_0
// DEFAULT-NOT: fa.tanh_fma
// DEFAULT: return
func.func @plain(%q: tensor<1x2x?x64xbf16>) -> tensor<1x2x?x64xbf16> {
  %o = fa.attention %q, %q, %q : tensor<1x2x?x64xbf16>, tensor<1x2x?x64xbf16>, tensor<1x2x?x64xbf16> -> tensor<1x2x?x64xbf16>
  return %o : tensor<1x2x?x64xbf16>
}
