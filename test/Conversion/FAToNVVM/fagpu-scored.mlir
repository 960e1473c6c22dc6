// RUN: fa-opt %s -fa-fuse=chip=sm_90a -fa-tile -fa-online-softmax -fa-async-copy -convert-fa-to-nvvm | FileCheck %s

// The score terms on the kernel-level IR, lowered (fagpu.map's body per
// value): bf16, D = 64, softcap 20, ALiBi [B, Hq], an f16 bias
// [1, Hq, 1, Nk] and a score_mod, in the dialect's order.

// CHECK-LABEL: llvm.func @fa_forward_0(
// The plain ABI, then the bias and its strides (b, h, i, j), the slopes and
// their batch stride.
// CHECK-SAME: %{{.+}}: i32, %[[BIAS:[^:]+]]: !llvm.ptr<1>, %{{.+}}: i64, %{{.+}}: i64, %{{.+}}: i64, %[[BJ:[^:]+]]: i64, %[[SLOPES:[^:]+]]: !llvm.ptr<1>, %{{.+}}: i64)
// The slope of (b, h), once per CTA.
// CHECK: llvm.getelementptr %[[SLOPES]]
// CHECK-NEXT: %[[SLOPE:.+]] = llvm.load %{{.+}} invariant : !llvm.ptr<1> -> f32
// CHECK: scf.for
// The bias element at (b, h, i, j), the broadcast dims at index 0.
// CHECK: arith.muli %{{.+}}, %[[BJ]] : i64
// CHECK: llvm.getelementptr %[[BIAS]][%{{.+}}] : (!llvm.ptr<1>, i64) -> !llvm.ptr<1>, f16
// CHECK-NEXT: %[[B:.+]] = llvm.load %{{.+}} invariant : !llvm.ptr<1> -> f16
// softcap: 20 tanh(s 0.125 / 20) (the accurate tanh: ex2, rcp),
// 2 x log2(e) as s (2 log2(e) 0.125 / 20): one multiply; the cap in the
// fma of 1 - 2 / (e + 1).
// CHECK: %[[C:.+]] = arith.constant 6.250000e-03 : f32
// CHECK-NEXT: arith.mulf %[[DOT:.+]], %[[C]] fastmath<contract> : f32
// CHECK-NEXT: %[[K:.+]] = arith.constant 0.0180336889 : f32
// CHECK-NEXT: %[[A:.+]] = arith.mulf %[[DOT]], %[[K]] : f32
// CHECK-NEXT: %[[E:.+]] = llvm.intr.exp2(%[[A]]) : (f32) -> f32
// CHECK: %[[R:.+]] = llvm.inline_asm "rcp.approx.ftz.f32 $0, $1;", "=f,f"
// CHECK-NEXT: %[[CAP:.+]] = arith.constant 2.000000e+01 : f32
// CHECK-NEXT: %[[M2CAP:.+]] = arith.constant -4.000000e+01 : f32
// CHECK-NEXT: %[[S1:.+]] = math.fma %[[M2CAP]], %[[R]], %[[CAP]] : f32
// ALiBi: - slope |distance|, then the bias, then score_mod's exp(s) + h.
// CHECK: %[[D:.+]] = llvm.intr.fabs
// CHECK-NEXT: %[[AL:.+]] = arith.mulf %[[SLOPE]], %[[D]] fastmath<contract> : f32
// CHECK-NEXT: %[[S2:.+]] = arith.subf %[[S1]], %[[AL]] fastmath<contract> : f32
// CHECK-NEXT: %[[BF:.+]] = arith.extf %[[B]] : f16 to f32
// CHECK-NEXT: arith.addf %[[S2]], %[[BF]] fastmath<contract> : f32
func.func @all(%q: tensor<1x4x?x64xbf16>, %k: tensor<1x2x?x64xbf16>, %v: tensor<1x2x?x64xbf16>, %b: tensor<1x4x1x?xf16>, %s: tensor<1x4xf32>) -> tensor<1x4x?x64xbf16> {
  %o = fa.attention %q, %k, %v bias(%b : tensor<1x4x1x?xf16>) alibi_slopes(%s : tensor<1x4xf32>) {softcap = 2.000000e+01 : f32}
      : tensor<1x4x?x64xbf16>, tensor<1x2x?x64xbf16>, tensor<1x2x?x64xbf16> -> tensor<1x4x?x64xbf16> score_mod {
  ^bb0(%x: f32, %bb: index, %h: index, %i: index, %j: index):
    %t = math.exp %x : f32
    %hi = arith.index_cast %h : index to i32
    %hf = arith.sitofp %hi : i32 to f32
    %r = arith.addf %t, %hf : f32
    fa.yield %r : f32
  }
  return %o : tensor<1x4x?x64xbf16>
}

