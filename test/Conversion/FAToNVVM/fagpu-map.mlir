// RUN: fa-opt %s -fa-fuse=chip=sm_90a -fa-tile -fa-online-softmax -fa-async-copy -convert-fa-to-nvvm=chip=sm_90a | FileCheck %s
// RUN: fa-opt %s -fa-fuse=chip=sm_80 -fa-tile -fa-online-softmax -fa-async-copy -convert-fa-to-nvvm=chip=sm_80 | FileCheck %s

// fagpu.map's body runs once per value a thread holds: a 64 x 64 tile over
// 128 threads is 32 values each, so softcap's tanh (the builder's accurate
// one: ex2, rcp, an fma; NVPTX has no tanh libcall) and mask_mod's select
// appear 32 times per K/V tile, and no fagpu op or math.tanh is left; the
// same on sm_80's mma.sync tiles.

// CHECK-LABEL: llvm.func @fa_forward_0(
// CHECK-NOT: fagpu.
// CHECK-NOT: math.tanh
// CHECK: scf.for
// 30 tanh(x) = 30 (1 - 2 / (e^2x + 1)): 30 (1 - 2 r) as one fma.
// CHECK: %[[R:.*]] = llvm.inline_asm "rcp.approx.ftz.f32 $0, $1;", "=f,f"
// CHECK-NEXT: %[[CAP:.*]] = arith.constant 3.000000e+01 : f32
// CHECK-NEXT: %[[M2:.*]] = arith.constant -6.000000e+01 : f32
// CHECK-NEXT: %[[S:.*]] = math.fma %[[M2]], %[[R]], %[[CAP]] : f32
// score_mod's s - (i - j) takes it as it is.
// CHECK-NEXT: arith.subi
// CHECK-NEXT: arith.index_cast
// CHECK-NEXT: arith.subf %[[S]], %{{.*}} fastmath<contract> : f32
// CHECK-COUNT-31: rcp.approx.ftz.f32
// CHECK-NOT: rcp.approx.ftz.f32
// CHECK-NOT: llvm.intr.copysign
// CHECK: llvm.return
func.func @score_terms(%q: tensor<1x2x?x64xbf16>, %k: tensor<1x2x?x64xbf16>, %v: tensor<1x2x?x64xbf16>) -> tensor<1x2x?x64xbf16> {
  %o = fa.attention %q, %k, %v {causal = #fa.causal<top_left>, softcap = 30.0 : f32} : tensor<1x2x?x64xbf16>, tensor<1x2x?x64xbf16>, tensor<1x2x?x64xbf16> -> tensor<1x2x?x64xbf16> score_mod {
  ^bb0(%s: f32, %b: index, %h: index, %i: index, %j: index):
    %d = arith.subi %i, %j : index
    %di = arith.index_cast %d : index to i64
    %df = arith.sitofp %di : i64 to f32
    %r = arith.subf %s, %df : f32
    fa.yield %r : f32
  } mask_mod {
  ^bb0(%b: index, %h: index, %i: index, %j: index):
    %ne = arith.cmpi ne, %h, %j : index
    fa.yield %ne : i1
  }
  return %o : tensor<1x2x?x64xbf16>
}
