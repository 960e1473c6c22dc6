// RUN: fa-opt %s -fa-fuse=chip=sm_90a -fa-async-copy -convert-fa-to-nvvm -split-input-file | FileCheck %s

// The scored path (ALiBi, bias, score_mod, mask_mod): per score, from its
// absolute (b, h, i, j), in the dialect's order, then into the log2 domain.
// bf16, D = 64, softcap, ALiBi [B, Hq], an f16 bias [1, Hq, 1, Nk].

// CHECK-LABEL: llvm.func @fa_forward_0(
// The plain ABI, then bias + strides (b, h, i, j), slopes + batch stride.
// CHECK-SAME: %[[NQ:[^:]+]]: i32, %[[NK:[^:]+]]: i32, %{{[^:]+}}: i32, %{{[^:]+}}: i32, %{{[^:]+}}: i32, %{{[^:]+}}: f32, %[[BIAS:[^:]+]]: !llvm.ptr<1>, %[[SB:[^:]+]]: i64, %[[SH:[^:]+]]: i64, %[[SI:[^:]+]]: i64, %[[SJ:[^:]+]]: i64, %[[SLOPES:[^:]+]]: !llvm.ptr<1>, %[[SS:[^:]+]]: i64)
// One m-tile per warp on the scored path, also for D = 64: Q tiles of 64.
// CHECK-SAME: fa.kernel_abi = #fa.kernel_abi<grid = [tiles(Nq, 64), Hq, B], threads = 128, shared = {{[0-9]+}}, params = {{\[}}{{.+}}, scale_log2 : f32, bias : ptr, stride(bias, 0) : i64, stride(bias, 1) : i64, stride(bias, 2) : i64, stride(bias, 3) : i64, slopes : ptr, stride(slopes, 0) : i64]>
// Nk - Nq: ALiBi's distance is aligned bottom-right.
// CHECK: %[[DIAG:.+]] = arith.subi %[[NK]], %[[NQ]] : i32
// The slope of (b, h), once per CTA.
// CHECK: %[[SB64:.+]] = arith.muli %{{.+}}, %[[SS]] : i64
// CHECK: %[[SAT:.+]] = arith.addi %[[SB64]], %{{.+}} : i64
// CHECK: %[[SPTR:.+]] = llvm.getelementptr %[[SLOPES]][%[[SAT]]] : (!llvm.ptr<1>, i64) -> !llvm.ptr<1>, f32
// CHECK: %[[SLOPE:.+]] = llvm.load %[[SPTR]] : !llvm.ptr<1> -> f32
// The bias rows of the thread (its first row, ROW), clamped to Nq - 1.
// CHECK: llvm.getelementptr %[[BIAS]][%{{.+}}] : (!llvm.ptr<1>, i64) -> !llvm.ptr<1>, f16
// CHECK: arith.minsi %[[ROW:.+]], %{{.+}} : i32
// CHECK: arith.muli %{{.+}}, %[[SI]] : i64
// CHECK: arith.minsi
// CHECK: arith.muli %{{.+}}, %[[SI]] : i64
// No mask: the K/V loop runs over [0, Nk).
// CHECK: %[[ENDIDX:.+]] = arith.index_cast %[[NK]] : i32 to index
// CHECK-NEXT: %[[BEGINIDX:.+]] = arith.index_cast %{{.+}} : i32 to index
// CHECK-NEXT: scf.for %{{.+}} = %[[BEGINIDX]] to %[[ENDIDX]] step %c64
// CHECK-COUNT-32: nvvm.mma.sync
// Per score: scale and softcap 20 (D = 64: scale = 0.125), i.e.
// tanh(s * 0.125 / 20) * 20, then ALiBi: - slope * |row + Nk - Nq - key|,
// bias (key clamped to Nk - 1), the score_mod's math.exp as exp2 and its
// arith ops as they are.
// CHECK: %[[INV:.+]] = arith.constant 6.250000e-03 : f32
// CHECK-NEXT: %[[X:.+]] = arith.mulf %{{.+}}, %[[INV]] : f32
// tanh to f32 accuracy: 1 - 2 / (e^(2|x|) + 1) with x's sign, x - x^3 / 3
// below 2^-5.
// CHECK-NEXT: %[[AX:.+]] = llvm.intr.fabs(%[[X]]) : (f32) -> f32
// CHECK-NEXT: %[[TWOLOG2E:.+]] = arith.constant 2.885390e+00 : f32
// CHECK-NEXT: %[[AX2:.+]] = arith.mulf %[[AX]], %[[TWOLOG2E]] : f32
// CHECK-NEXT: %[[E:.+]] = llvm.intr.exp2(%[[AX2]]) : (f32) -> f32
// CHECK: %[[R:.+]] = llvm.inline_asm "rcp.approx.ftz.f32 $0, $1;", "=f,f" %{{.+}} : (f32) -> f32
// CHECK: %[[LARGE:.+]] = llvm.intr.copysign(%{{.+}}, %[[X]]) : (f32, f32) -> f32
// CHECK: %[[X2:.+]] = arith.mulf %[[X]], %[[X]] : f32
// CHECK: %[[SMALL:.+]] = arith.mulf %[[X]], %{{.+}} : f32
// CHECK-NEXT: %[[LIMIT:.+]] = arith.constant 3.125000e-02 : f32
// CHECK-NEXT: %[[ISSMALL:.+]] = arith.cmpf olt, %[[AX]], %[[LIMIT]] : f32
// CHECK-NEXT: %[[TH:.+]] = arith.select %[[ISSMALL]], %[[SMALL]], %[[LARGE]] : f32
// CHECK-NEXT: %[[CAP:.+]] = arith.constant 2.000000e+01 : f32
// CHECK-NEXT: %[[CAPPED:.+]] = arith.mulf %[[TH]], %[[CAP]] : f32
// CHECK-NEXT: %[[AL:.+]] = arith.addi %[[ROW]], %[[DIAG]] : i32
// CHECK-NEXT: %[[D:.+]] = arith.subi %[[AL]], %{{.+}} : i32
// CHECK-NEXT: %[[C0:.+]] = arith.constant 0 : i32
// CHECK-NEXT: %[[ND:.+]] = arith.subi %[[C0]], %[[D]] : i32
// CHECK-NEXT: %[[ABS:.+]] = arith.maxsi %[[D]], %[[ND]] : i32
// CHECK-NEXT: %[[DIST:.+]] = arith.sitofp %[[ABS]] : i32 to f32
// CHECK-NEXT: %[[ALIBI:.+]] = arith.mulf %[[SLOPE]], %[[DIST]] : f32
// CHECK-NEXT: arith.subf %[[CAPPED]], %[[ALIBI]] : f32
// CHECK: arith.minsi
// CHECK: arith.muli %{{.+}}, %[[SJ]] : i64
// CHECK: %[[B:.+]] = llvm.load %{{.+}} : !llvm.ptr<1> -> f16
// CHECK: arith.extf %[[B]] : f16 to f32
// CHECK: %[[LOG2E:.+]] = arith.constant 1.44269502 : f32
// CHECK: arith.mulf %{{.+}}, %[[LOG2E]] : f32
// CHECK: llvm.intr.exp2
// CHECK: arith.index_cast %{{.+}} : index to i32
// CHECK: arith.sitofp
// CHECK: arith.addf
// Without mask_mod the boundary-only masking stays.
// CHECK: scf.if
// The log2 domain: s * log2(e) - m as one fma.
// CHECK: %[[C:.+]] = arith.constant 1.44269502 : f32
// CHECK: math.fma %{{.+}}, %[[C]], %{{.+}} : f32
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

// -----

// mask_mod: every tile is masked (no boundary branch), the region's ops
// inlined with the absolute (i, j) and and-ed with the key bound and causal.
// D = 128 on the scored path: one m-tile, K/V tiles of 32 keys.

// CHECK-LABEL: llvm.func @fa_forward_0(
// CHECK-SAME: %[[NQ:[^:]+]]: i32, %[[NK:[^:]+]]: i32, %{{[^:]+}}: i32, %{{[^:]+}}: i32, %{{[^:]+}}: i32, %{{[^:]+}}: f32,
// CHECK-SAME: fa.kernel_abi = #fa.kernel_abi<grid = [tiles(Nq, 64), Hq, B], threads = 128, shared = 32768,
// Causal top-left: no offset (Nk - Nq is computed but unused); the K/V
// loop runs over [0, max(0, min(Nk, q0 + 64))).
// CHECK: nvvm.read.ptx.sreg.nctaid.x
// CHECK: %[[Q0:.+]] = arith.muli %{{.+}}, %c{{[0-9]+}}_i32{{[_0-9]*}} : i32
// CHECK: %[[QEND:.+]] = arith.addi %[[Q0]], %{{.+}} : i32
// CHECK-NEXT: %{{.+}} = arith.subi %[[NK]], %[[NQ]] : i32
// CHECK-NEXT: %[[MIN:.+]] = arith.minsi %[[NK]], %[[QEND]] : i32
// CHECK-NEXT: %[[C0:.+]] = arith.constant 0 : i32
// CHECK-NEXT: %[[END:.+]] = arith.maxsi %[[C0]], %[[MIN]] : i32
// The thread's first row: q0 + 16 * warp + lane / 4.
// CHECK: nvvm.cp.async.wait.group 1
// CHECK: %[[QW:.+]] = arith.addi %[[Q0]], %{{.+}} : i32
// CHECK-NEXT: %[[ROW:.+]] = arith.addi %[[QW]], %{{.+}} : i32
// CHECK: %[[ENDIDX:.+]] = arith.index_cast %[[END]] : i32 to index
// CHECK-NEXT: %[[BEGINIDX:.+]] = arith.index_cast %{{.+}} : i32 to index
// CHECK-NEXT: scf.for %{{.+}} = %[[BEGINIDX]] to %[[ENDIDX]] step %c32
// CHECK-COUNT-32: nvvm.mma.sync
// The next K tile's copy (kernel.mlir), then no boundary branch.
// CHECK: nvvm.cp.async.wait.group 0
// CHECK-NEXT: nvvm.barrier0
// CHECK: scf.if
// CHECK: nvvm.cp.async.commit.group
// CHECK-NOT: scf.if
// The first score: key < Nk, key <= row (top-left: no offset), and the
// mask_mod on (row, key).
// CHECK: %[[KEEP:.+]] = arith.cmpi slt, %[[KEY:.+]], %[[NK]] : i32
// CHECK-NEXT: %[[CAUSAL:.+]] = arith.cmpi sle, %[[KEY]], %[[ROW]] : i32
// CHECK-NEXT: %[[BOTH:.+]] = arith.andi %[[KEEP]], %[[CAUSAL]] : i1
// CHECK-NEXT: %[[I:.+]] = arith.index_cast %[[ROW]] : i32 to index
// CHECK-NEXT: %[[J:.+]] = arith.index_cast %[[KEY]] : i32 to index
// CHECK: %[[DI:.+]] = arith.divui %[[I]], %{{.+}} : index
// CHECK: %[[DJ:.+]] = arith.divui %[[J]], %{{.+}} : index
// CHECK: %[[SAME:.+]] = arith.cmpi eq, %[[DI]], %[[DJ]] : index
// CHECK: %[[ALL:.+]] = arith.andi %[[BOTH]], %[[SAME]] : i1
// CHECK: arith.select %[[ALL]], %{{.+}}, %{{.+}} : f32
// CHECK-NOT: scf.if
// CHECK: math.fma
func.func @docs(%q: tensor<1x2x?x128xf16>, %k: tensor<1x2x?x128xf16>, %v: tensor<1x2x?x128xf16>) -> tensor<1x2x?x128xf16> {
  %o = fa.attention %q, %k, %v {causal = #fa.causal<top_left>}
      : tensor<1x2x?x128xf16>, tensor<1x2x?x128xf16>, tensor<1x2x?x128xf16> -> tensor<1x2x?x128xf16> mask_mod {
  ^bb0(%b: index, %h: index, %i: index, %j: index):
    %c16 = arith.constant 16 : index
    %di = arith.divui %i, %c16 : index
    %dj = arith.divui %j, %c16 : index
    %same = arith.cmpi eq, %di, %dj : index
    fa.yield %same : i1
  }
  return %o : tensor<1x2x?x128xf16>
}
