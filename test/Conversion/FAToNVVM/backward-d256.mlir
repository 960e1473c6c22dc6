// RUN: fa-opt %s -convert-fa-to-nvvm=chip=sm_80 | FileCheck %s
// RUN: fa-opt %s -convert-fa-to-nvvm=chip=sm_80 | %python %S/Inputs/schedule.py | FileCheck %s --check-prefix=SCHED
// RUN: fa-opt %s -convert-fa-to-nvvm="chip=sm_80 bwd-atomic-dq=true" | %python %S/Inputs/schedule.py | FileCheck %s --check-prefix=ATOMIC

// D = 256: dK and dV of a warp's 16 keys x 256 columns would take 256 f32
// registers per thread, so dkdv computes them in two passes of 128 columns
// over the Q tiles (S^T and dP^T once per pass), with Q tiles of 16 rows and
// no prefetch. Shared memory: K, V (2 x 32 KB), one stage of Q, dO (2 x 8
// KB), lse and Dsum (2 x 64 B): 82048 bytes. dq takes K/V tiles of 32 keys
// (its dQ holds 128 registers): Q, dO (2 x 32 KB), K, V (2 x 16 KB).

// CHECK: module attributes {gpu.container_module}
// D = 256's kernels keep f32 denormals (with ex2.approx.ftz ptxas spills in
// dkdv); smaller D flush them (backward.mlir).
// CHECK-NOT: denormal_fp_math_f32

// The first pass stores columns [0, 128) of the key rows of dK (%arg7) and
// dV (%arg8); the second [128, 256).
// CHECK-LABEL: llvm.func @fa_backward_dkdv_0(
// CHECK-SAME: %[[NQ:[^:]+]]: i32, %[[NK:[^:]+]]: i32, %{{[^:]+}}: i32, %{{[^:]+}}: i32, %{{[^:]+}}: i32, %{{[^:]+}}: i32, %{{[^:]+}}: f32, %{{[^:]+}}: f32)
// CHECK-SAME: fa.kernel_abi = #fa.kernel_abi<grid = [tiles(Nk, 64), Hkv, B], threads = 128, shared = 82048,
// k0 = 64 * ctaid.x; causal top-left: the first query that sees key k0 is
// k0 (no offset), so both passes loop over the Q tiles of [max(0, k0), Nq).
// Key row: k0 + 16 * warp + lane / 4.
// CHECK: %[[K0:.+]] = arith.muli %{{.+}}, %c{{[0-9]+}}_i32{{[_0-9]*}} : i32
// CHECK: %{{.+}} = arith.subi %[[NK]], %[[NQ]] : i32
// CHECK: %[[C0:.+]] = arith.constant 0 : i32
// CHECK-NEXT: %[[QBEGIN:.+]] = arith.maxsi %[[C0]], %[[K0]] : i32
// CHECK-NEXT: %[[KW:.+]] = arith.addi %[[K0]], %{{.+}} : i32
// CHECK-NEXT: %[[KROW:.+]] = arith.addi %[[KW]], %{{.+}} : i32
// CHECK: %{{.+}}:128 = scf.for
// CHECK: %[[QENDIDX:.+]] = arith.index_cast %[[NQ]] : i32 to index
// CHECK-NEXT: %[[QBIDX:.+]] = arith.index_cast %[[QBEGIN]] : i32 to index
// CHECK-NEXT: scf.for %{{.+}} = %[[QBIDX]] to %[[QENDIDX]] step %c16
// CHECK-NEXT: %[[Q0:.+]] = arith.index_cast %{{.+}} : index to i32
// Masks if the tile crosses the diagonal (k0 + 63 > q0); the first score
// of S^T (key row, query column) is kept if key <= query.
// CHECK: %[[KTOP:.+]] = arith.addi %[[K0]], %{{.+}} : i32
// CHECK: %[[KLAST:.+]] = arith.subi %[[KTOP]], %{{.+}} : i32
// CHECK-NEXT: %[[CROSS:.+]] = arith.cmpi sgt, %[[KLAST]], %[[Q0]] : i32
// CHECK-NEXT: scf.if %[[CROSS]] -> (f32,
// CHECK: %[[KEY:.+]] = arith.addi %[[KROW]], %{{.+}} : i32
// CHECK: %[[QUERY:.+]] = arith.addi %[[Q0]], %{{.+}} : i32
// CHECK-NEXT: %[[SEEN:.+]] = arith.cmpi sle, %[[KEY]], %[[QUERY]] : i32
// CHECK-NEXT: arith.select %[[SEEN]], %{{.+}}, %{{.+}} : f32
// After each pass, the block's dK and dV rows (its kv head and batch read
// again, not kept across the loops).
// CHECK: %[[DK:.+]] = llvm.getelementptr %arg7[%{{.+}}] : (!llvm.ptr<1>, i64) -> !llvm.ptr<1>, bf16
// CHECK: %[[DV:.+]] = llvm.getelementptr %arg8[%{{.+}}] : (!llvm.ptr<1>, i64) -> !llvm.ptr<1>, bf16
// CHECK: llvm.getelementptr %[[DK]][%c0_i64{{.*}}] : (!llvm.ptr<1>, i64) -> !llvm.ptr<1>, bf16
// CHECK: llvm.getelementptr %[[DV]][%c0_i64{{.*}}] : (!llvm.ptr<1>, i64) -> !llvm.ptr<1>, bf16
// CHECK: %{{.+}}:128 = scf.for
// CHECK: %[[DK2:.+]] = llvm.getelementptr %arg7[%{{.+}}] : (!llvm.ptr<1>, i64) -> !llvm.ptr<1>, bf16
// CHECK: %[[DV2:.+]] = llvm.getelementptr %arg8[%{{.+}}] : (!llvm.ptr<1>, i64) -> !llvm.ptr<1>, bf16
// CHECK: llvm.getelementptr %[[DK2]][%c128_i64{{.*}}] : (!llvm.ptr<1>, i64) -> !llvm.ptr<1>, bf16
// CHECK: llvm.getelementptr %[[DV2]][%c128_i64{{.*}}] : (!llvm.ptr<1>, i64) -> !llvm.ptr<1>, bf16
// CHECK: llvm.return

// dq: q0 = 64 * ctaid.x, its K/V loop over [0, max(0, min(Nk, q0 + 64)))
// (top-left: no offset); masks if kv0 + 32 > Nk or kv0 + 31 > q0; the
// first score is kept if key < Nk and key <= row.
// CHECK-LABEL: llvm.func @fa_backward_dq_0(
// CHECK-SAME: %[[NQ:[^:]+]]: i32, %[[NK:[^:]+]]: i32, %{{[^:]+}}: i32, %{{[^:]+}}: i32, %{{[^:]+}}: i32, %{{[^:]+}}: i32, %{{[^:]+}}: f32, %{{[^:]+}}: f32)
// CHECK: %[[Q0:.+]] = arith.muli %{{.+}}, %c{{[0-9]+}}_i32{{[_0-9]*}} : i32
// CHECK: nvvm.cp.async.commit.group
// CHECK-NEXT: %[[QW:.+]] = arith.addi %[[Q0]], %{{.+}} : i32
// CHECK-NEXT: %[[ROW:.+]] = arith.addi %[[QW]], %{{.+}} : i32
// CHECK: %[[QEND:.+]] = arith.addi %[[Q0]], %{{.+}} : i32
// CHECK-NEXT: %{{.+}} = arith.subi %[[NK]], %[[NQ]] : i32
// CHECK-NEXT: %[[C0:.+]] = arith.constant 0 : i32
// CHECK-NEXT: %[[MIN:.+]] = arith.minsi %[[NK]], %[[QEND]] : i32
// CHECK-NEXT: %[[END:.+]] = arith.maxsi %[[C0]], %[[MIN]] : i32
// CHECK: %[[ENDIDX:.+]] = arith.index_cast %[[END]] : i32 to index
// CHECK-NEXT: %[[BEGINIDX:.+]] = arith.index_cast %[[C0]] : i32 to index
// CHECK-NEXT: scf.for %{{.+}} = %[[BEGINIDX]] to %[[ENDIDX]] step %c32
// CHECK-NEXT: %[[KV0:.+]] = arith.index_cast %{{.+}} : index to i32
// CHECK: %[[PASTNK:.+]] = arith.cmpi sgt, %[[TEND:.+]], %[[NK]] : i32
// CHECK: %[[TLAST:.+]] = arith.subi %[[TEND]], %{{.+}} : i32
// CHECK-NEXT: %[[CROSS:.+]] = arith.cmpi sgt, %[[TLAST]], %[[Q0]] : i32
// CHECK-NEXT: %[[NEED:.+]] = arith.ori %[[PASTNK]], %[[CROSS]] : i1
// CHECK-NEXT: scf.if %[[NEED]] -> (f32,
// CHECK: %[[KEY:.+]] = arith.addi %[[KV0]], %{{.+}} : i32
// CHECK: %[[R:.+]] = arith.addi %[[ROW]], %{{.+}} : i32
// CHECK-NEXT: %[[INNK:.+]] = arith.cmpi slt, %[[KEY]], %[[NK]] : i32
// CHECK-NEXT: %[[SEEN:.+]] = arith.cmpi sle, %[[KEY]], %[[R]] : i32
// CHECK-NEXT: %[[KEEP:.+]] = arith.andi %[[INNK]], %[[SEEN]] : i1
// CHECK-NEXT: arith.select %[[KEEP]], %{{.+}}, %{{.+}} : f32

// Each pass: per Q tile, S^T (16 keys x 16 queries over 16 k-steps: 32
// mma), then dV += P^T dO (16 x 128 columns: 16), dP^T (32) and dK += dS^T
// Q (16).
// SCHED-LABEL: llvm.func @fa_backward_dkdv_0
// SCHED: 1 scf.for
// SCHED-NEXT: 1 place
// SCHED-NEXT: 1 scf.for
// SCHED: 32 nvvm.mma.sync
// SCHED: 64 nvvm.mma.sync
// SCHED: 1 scf.for
// SCHED-NEXT: 1 place
// SCHED-NEXT: 1 scf.for
// SCHED: 32 nvvm.mma.sync
// SCHED: 64 nvvm.mma.sync
// SCHED-NOT: nvvm.mma.sync
// SCHED-LABEL: llvm.func @fa_backward_dq_0
// dq: S and dP of 16 queries x 32 keys (64 mma each), dQ += dS K (16 x 256
// over 2 k-steps: 64).
// SCHED: 64 nvvm.mma.sync
// SCHED: 128 nvvm.mma.sync

// Atomic dQ: the first pass alone adds dS K (16 queries x 64 columns per
// warp, 4 k-steps: 32 mma) into the accumulator.
// ATOMIC-LABEL: llvm.func @fa_backward_dkdv_0
// ATOMIC: 1 scf.for
// ATOMIC-NEXT: 1 place
// ATOMIC-NEXT: 1 scf.for
// ATOMIC: 64 nvvm.mma.sync
// ATOMIC-NEXT: 1 nvvm.barrier0
// ATOMIC-NEXT: 32 nvvm.mma.sync
// ATOMIC: 16 llvm.atomicrmw fadd
// ATOMIC: 16 llvm.atomicrmw fadd
// ATOMIC: 1 scf.for
// ATOMIC-NEXT: 1 place
// ATOMIC-NEXT: 1 scf.for
// ATOMIC: 64 nvvm.mma.sync
// ATOMIC-NOT: llvm.atomicrmw
// ATOMIC-LABEL: llvm.func @fa_backward_dq_convert_0

func.func @causal_gqa(%q: tensor<?x4x?x256xbf16>, %k: tensor<?x2x?x256xbf16>, %v: tensor<?x2x?x256xbf16>, %o: tensor<?x4x?x256xbf16>, %do: tensor<?x4x?x256xbf16>, %lse: tensor<?x4x?xf32>) -> (tensor<?x4x?x256xbf16>, tensor<?x2x?x256xbf16>, tensor<?x2x?x256xbf16>) {
  %dq, %dk, %dv = fa.attention_grad %q, %k, %v, %o, %do, %lse {causal = #fa.causal<top_left>} : tensor<?x4x?x256xbf16>, tensor<?x2x?x256xbf16>, tensor<?x2x?x256xbf16>, tensor<?x4x?x256xbf16>, tensor<?x4x?x256xbf16>, tensor<?x4x?xf32> -> tensor<?x4x?x256xbf16>, tensor<?x2x?x256xbf16>, tensor<?x2x?x256xbf16>
  return %dq, %dk, %dv : tensor<?x4x?x256xbf16>, tensor<?x2x?x256xbf16>, tensor<?x2x?x256xbf16>
}
