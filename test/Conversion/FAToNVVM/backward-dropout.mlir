// RUN: fa-opt %s -convert-fa-to-nvvm="chip=sm_80 bwd-prefetch=false bwd-atomic-dq=true" | FileCheck %s
// RUN: fa-opt %s -convert-fa-to-nvvm="chip=sm_80 bwd-prefetch=false bwd-atomic-dq=true" | %python %S/Inputs/schedule.py | FileCheck %s --check-prefix=SCHED
// RUN: fa-opt %s -convert-fa-to-nvvm=chip=sm_80 | FileCheck %s --check-prefix=DET

// The backward with dropout: the scored path, whose kernels take the i64
// seed after the scored parameters (%arg58; then the dQ accumulator). dK/dV
// draws Philox4x32-10 on (key, query, head, batch), keyed by the seed's two
// halves, as the forward does, once per score: dV takes P Z and
// dS = P (dP Z - Dsum). bf16, D = 64, GQA 2:1, causal: Q tiles of 32 rows.

// CHECK-LABEL: llvm.func @fa_backward_dkdv_0(
// CHECK-SAME: %[[NQ:[^:]+]]: i32, %[[NK:[^:]+]]: i32, %{{[^:]+}}: i32, %{{[^:]+}}: i32, %{{[^:]+}}: i32, %{{[^:]+}}: i32, %{{[^:]+}}: f32, %{{[^:]+}}: f32, %{{[^:]+}}: !llvm.ptr<1>,
// CHECK-SAME: %arg57: i64, %arg58: i64, %arg59: !llvm.ptr<1>)
// k0 = 64 * ctaid.x; causal bottom-right: the diagonal's offset is
// Nk - Nq and the Q loop runs over [max(0, k0 - (Nk - Nq)), Nq).
// CHECK: %[[K0:.+]] = arith.muli %{{.+}}, %c{{[0-9]+}}_i32{{[_0-9]*}} : i32
// CHECK: %[[DIAG:.+]] = arith.subi %[[NK]], %[[NQ]] : i32
// CHECK: %[[C0:.+]] = arith.constant 0 : i32
// CHECK-NEXT: %[[FROM:.+]] = arith.subi %[[K0]], %[[DIAG]] : i32
// CHECK-NEXT: %[[QBEGIN:.+]] = arith.maxsi %[[C0]], %[[FROM]] : i32
// CHECK: %[[QENDIDX:.+]] = arith.index_cast %[[NQ]] : i32 to index
// CHECK-NEXT: %[[QBIDX:.+]] = arith.index_cast %[[QBEGIN]] : i32 to index
// CHECK-NEXT: scf.for %{{.+}} = %[[QBIDX]] to %[[QENDIDX]] step %c32
// CHECK-NEXT: %[[Q0:.+]] = arith.index_cast %{{.+}} : index to i32
// The first score's counter: key (this lane's row), query (its column),
// then the seed's low and high words.
// CHECK: %[[LO:.+]] = arith.trunci %arg58 : i64 to i32
// CHECK: %[[SHIFT:.+]] = arith.shrui %arg58, %c32_i64 : i64
// CHECK-NEXT: %[[HI:.+]] = arith.trunci %[[SHIFT]] : i64 to i32
// CHECK: %{{.+}}, %{{.+}} = arith.mului_extended %c-766435501_i32, %{{.+}} : i32
// CHECK: %{{.+}}, %{{.+}} = arith.mului_extended %c-845247145_i32, %{{.+}} : i32
// Kept when (x >> 8) * 2^-24 >= p (0.1 in f32); kept ones scale by 1 / 0.9.
// CHECK: %[[X:.+]] = arith.shrui %{{.+}}, %c8_i32{{.*}} : i32
// CHECK-NEXT: %[[U:.+]] = arith.uitofp %[[X]] : i32 to f32
// CHECK: %[[R:.+]] = arith.mulf %[[U]], %{{.+}} : f32
// CHECK-NEXT: %[[P:.+]] = arith.constant 1.000000e-01 : f32
// CHECK-NEXT: %[[KEEP:.+]] = arith.cmpf oge, %[[R]], %[[P]] : f32
// CHECK-NEXT: %[[S:.+]] = arith.constant 1.11111116 : f32
// CHECK-NEXT: %[[ZERO:.+]] = arith.constant 0.000000e+00 : f32
// CHECK-NEXT: %[[Z:.+]] = arith.select %[[KEEP]], %[[S]], %[[ZERO]] : f32
// Masks if the tile crosses the diagonal (k0 + 63 > q0 + Nk - Nq) or Nq.
// CHECK: %[[KTOP:.+]] = arith.addi %[[K0]], %{{.+}} : i32
// CHECK: %[[QLIM:.+]] = arith.addi %[[Q0]], %[[DIAG]] : i32
// CHECK-NEXT: %[[C1:.+]] = arith.constant 1 : i32
// CHECK-NEXT: %[[KLAST:.+]] = arith.subi %[[KTOP]], %[[C1]] : i32
// CHECK-NEXT: %[[CROSS:.+]] = arith.cmpi sgt, %[[KLAST]], %[[QLIM]] : i32
// CHECK-NEXT: %[[NEED:.+]] = arith.ori %[[CROSS]], %{{.+}} : i1
// CHECK-NEXT: scf.if %[[NEED]]
// The first score of S^T (key row, query column): kept if
// key <= query + Nk - Nq and query < Nq.
// CHECK: %[[LIM:.+]] = arith.addi %[[QUERY:.+]], %[[DIAG]] : i32
// CHECK-NEXT: %[[CAUSAL:.+]] = arith.cmpi sle, %{{.+}}, %[[LIM]] : i32
// CHECK-NEXT: %[[INQ:.+]] = arith.cmpi slt, %[[QUERY]], %[[NQ]] : i32
// CHECK-NEXT: %[[MASK:.+]] = arith.andi %[[CAUSAL]], %[[INQ]] : i1
// CHECK-NEXT: arith.select %[[MASK]], %{{.+}}, %{{.+}} : f32
// dV's A fragments take P where Z keeps it, unscaled (in both branches of
// the mask).
// CHECK: %[[DROPPED:.+]] = arith.cmpf oeq, %[[Z]], %{{.+}} : f32
// CHECK-NEXT: arith.select %[[DROPPED]], %{{.+}}, %{{.+}} : f32
// CHECK: } else {
// CHECK: %[[DROPPED2:.+]] = arith.cmpf oeq, %[[Z]], %{{.+}} : f32
// CHECK-NEXT: arith.select %[[DROPPED2]], %{{.+}}, %{{.+}} : f32
// dS = P (dP Z - Dsum), after dP^T = V dO^T.
// CHECK: nvvm.cp.async.wait.group 0
// CHECK: %[[DPZ:.+]] = arith.mulf %{{.+}}, %[[Z]] : f32
// CHECK-NEXT: %[[DIFF:.+]] = arith.subf %[[DPZ]], %{{.+}} : f32
// CHECK-NEXT: arith.mulf %{{.+}}, %[[DIFF]] : f32
// dK is stored times the scale, dV times 1 / (1 - p).
// CHECK: scf.if
// CHECK: arith.mulf %{{.+}}, %arg{{[0-9]+}} : f32
// CHECK: %[[RP:.+]] = arith.constant 1.11111116 : f32
// CHECK: scf.if
// CHECK: arith.mulf %{{.+}}, %[[RP]] : f32
// CHECK-LABEL: llvm.func @fa_backward_dq_convert_0(
// CHECK-SAME: %arg58: i64, %arg59: !llvm.ptr<1>)

// 16 scores per lane per tile: 16 x 10 rounds x 2 products.
// SCHED-LABEL: llvm.func @fa_backward_dkdv_0
// SCHED: 16 nvvm.mma.sync
// SCHED-NEXT: 1 scf.if
// SCHED: 48 nvvm.mma.sync
// SCHED-NEXT: 1 nvvm.barrier0
// SCHED-NEXT: 16 nvvm.mma.sync

// The default (the dq kernel) draws the same stream for its dS.
// DET-LABEL: llvm.func @fa_backward_dq_0(
// DET-SAME: %arg58: i64)
// DET: arith.trunci %arg58 : i64 to i32
// DET: arith.cmpf oge
// DET: %[[Z:.+]] = arith.select %{{.+}}, %cst{{.*}}, %cst{{.*}} : f32
// DET: %[[DPZ:.+]] = arith.mulf %{{.+}}, %[[Z]] : f32
// DET-NEXT: %[[DIFF:.+]] = arith.subf %[[DPZ]], %{{.+}} : f32
// DET-NEXT: arith.mulf %{{.+}}, %[[DIFF]] : f32

func.func @drop(%q: tensor<?x4x?x64xbf16>, %k: tensor<?x2x?x64xbf16>, %v: tensor<?x2x?x64xbf16>, %o: tensor<?x4x?x64xbf16>, %do: tensor<?x4x?x64xbf16>, %lse: tensor<?x4x?xf32>, %seed: i64) -> (tensor<?x4x?x64xbf16>, tensor<?x2x?x64xbf16>, tensor<?x2x?x64xbf16>) {
  %dq, %dk, %dv = fa.attention_grad %q, %k, %v, %o, %do, %lse dropout_seed(%seed) {causal = #fa.causal<bottom_right>, dropout_p = 0.1 : f32} : tensor<?x4x?x64xbf16>, tensor<?x2x?x64xbf16>, tensor<?x2x?x64xbf16>, tensor<?x4x?x64xbf16>, tensor<?x4x?x64xbf16>, tensor<?x4x?xf32> -> tensor<?x4x?x64xbf16>, tensor<?x2x?x64xbf16>, tensor<?x2x?x64xbf16>
  return %dq, %dk, %dv : tensor<?x4x?x64xbf16>, tensor<?x2x?x64xbf16>, tensor<?x2x?x64xbf16>
}
