// RUN: fa-opt %s -convert-fa-to-nvvm="chip=sm_80 bwd-prefetch=false bwd-atomic-dq=true" -split-input-file | FileCheck %s
// RUN: fa-opt %s -convert-fa-to-nvvm="chip=sm_80 bwd-prefetch=false bwd-atomic-dq=true" -split-input-file | %python %S/Inputs/schedule.py | FileCheck %s --check-prefix=SCHED

// dQ by atomic adds (bwd-atomic-dq; by default the dq kernel computes it,
// see backward.mlir): dsum zeroes an f32 accumulator, dkdv
// adds dS K into it, dq_convert scales it into dQ. On sm_80 one atomic per
// element (here); on sm_90a one bulk reduction per tile (backward-bulk-dq.mlir). The three kernels take
// the accumulator as their last parameter (after scale; %arg46).

// bf16, D = 64, GQA 2:1: Q tiles of 64 rows in dkdv, whose shared memory is
// K, V (2 x 8 KB), one stage of Q, dO (2 x 8 KB), lse and Dsum (2 x 256 B),
// then dS^T, [64 keys][64 queries] bf16 (8 KB): 41472 bytes.

// CHECK: module attributes {gpu.container_module}

// dsum zeroes each valid row's accumulator, (b, h, i)'s Dsum offset times
// D: per lane 2 x 4 floats in each 32 columns.
// CHECK-LABEL: llvm.func @fa_backward_dsum_0(
// CHECK-SAME: %arg9: !llvm.ptr<1>,
// CHECK-SAME: %arg45: f32, %arg46: !llvm.ptr<1>)
// CHECK-SAME: fa.kernel_abi = #fa.kernel_abi<grid = [tiles(Nq, 64), Hq, B], threads = 128, shared = 0, params = {{\[}}{{.*}}, scale_log2 : f32, scale : f32, dq_accum(64) : ptr]>
// CHECK: %[[ZROW:.+]] = arith.cmpi slt, %{{.+}}, %arg38 : i32
// CHECK: scf.if %[[ZROW]] {
// CHECK: %[[AT:.+]] = arith.muli %{{.+}}, %c64_i64 : i64
// CHECK-NEXT: %[[ACC:.+]] = llvm.getelementptr %arg46[%[[AT]]] : (!llvm.ptr<1>, i64) -> !llvm.ptr<1>, f32
// CHECK-NEXT: %[[ZERO:.+]] = llvm.mlir.zero : vector<4xf32>
// CHECK-COUNT-4: llvm.store %[[ZERO]], %{{.+}} {alignment = 16 : i64} : vector<4xf32>, !llvm.ptr<1>
// CHECK: llvm.store %{{.+}}, %{{.+}} : f32, !llvm.ptr<1>

// dkdv: after dP^T, dS^T goes to shared memory (16 i32 pairs per lane: 8
// n-tiles x 2 rows), zero for keys past Nk; a barrier; then per k-step of
// 16 keys one ldmatrix.trans of dS^T (dS's A fragment) and K's B fragments
// for the warp's 16 queries x 64 columns; the sums are added into the
// accumulator row of each query below Nq.
// CHECK-LABEL: llvm.func @fa_backward_dkdv_0(
// CHECK-SAME: %arg45: f32, %arg46: !llvm.ptr<1>)
// CHECK-SAME: fa.kernel_abi = #fa.kernel_abi<grid = [tiles(Nk, 64), Hkv, B], threads = 128, shared = 41472, params = {{\[}}{{.*}}, dq_accum(64) : ptr]>
// Past the thread place (Hkv = %arg42), the lane id goes through an opaque
// mov (its addresses are not hoisted).
// CHECK: arith.divui %{{.+}}, %arg42 : i32
// CHECK: llvm.inline_asm has_side_effects "mov.b32 $0, $1;", "=r,r"
// CHECK: %[[LIVE:.+]] = arith.cmpi slt, %{{.+}}, %arg39 : i32
// CHECK: %[[LO:.+]] = arith.select %[[LIVE]], %{{.+}}, %[[Z:.+]] : f32
// CHECK-NEXT: %[[HI:.+]] = arith.select %[[LIVE]], %{{.+}}, %[[Z]] : f32
// CHECK: llvm.store %{{.+}}, %{{.+}} {alignment = 4 : i64} : i32, !llvm.ptr<3>
// CHECK-COUNT-15: llvm.store %{{.+}}, %{{.+}} {alignment = 4 : i64} : i32, !llvm.ptr<3>
// CHECK: nvvm.barrier0
// CHECK: %[[DS:.+]] = nvvm.ldmatrix %{{.+}} {eltType = #nvvm.ld_st_matrix_elt_type<b16>, layout = #nvvm.mma_layout<col>, num = 4 : i32, shape = #nvvm.ld_st_matrix_shape<m = 8, n = 8>}
// CHECK: nvvm.ldmatrix %{{.+}} {eltType = #nvvm.ld_st_matrix_elt_type<b16>, layout = #nvvm.mma_layout<col>, num = 4 : i32, shape = #nvvm.ld_st_matrix_shape<m = 8, n = 8>}
// CHECK: %[[Q:.+]] = arith.cmpi slt, %{{.+}}, %arg38 : i32
// CHECK-NEXT: scf.if %[[Q]] {
// CHECK: %[[ROW:.+]] = arith.muli %{{.+}}, %c64_i64{{.*}} : i64
// CHECK-NEXT: llvm.getelementptr %arg46[%[[ROW]]] : (!llvm.ptr<1>, i64) -> !llvm.ptr<1>, f32
// CHECK: llvm.atomicrmw fadd %{{.+}}, %{{.+}} syncscope("device") monotonic : !llvm.ptr<1>, f32

// dq_convert: a quad of lanes per row, 8 columns per 32 each: two 16-byte
// loads of the accumulator, times scale (%arg45), to bf16, one 16-byte
// store into dQ.
// CHECK-LABEL: llvm.func @fa_backward_dq_convert_0(
// CHECK-SAME: %arg45: f32, %arg46: !llvm.ptr<1>)
// CHECK-SAME: fa.kernel_abi = #fa.kernel_abi<grid = [tiles(Nq, 64), Hq, B], threads = 128, shared = 0, params = {{\[}}{{.*}}, dq_accum(64) : ptr]>
// CHECK: %[[SCALE:.+]] = llvm.insertelement %arg45, %{{.+}}[%c7_i32{{.*}} : i32] : vector<8xf32>
// CHECK: scf.if
// CHECK: %[[A:.+]] = llvm.load %{{.+}} {alignment = 16 : i64} : !llvm.ptr<1> -> vector<4xf32>
// CHECK: %[[B:.+]] = llvm.load %{{.+}} {alignment = 16 : i64} : !llvm.ptr<1> -> vector<4xf32>
// CHECK-NEXT: %[[AB:.+]] = llvm.shufflevector %[[A]], %[[B]] [0, 1, 2, 3, 4, 5, 6, 7] : vector<4xf32>
// CHECK-NEXT: %[[S:.+]] = llvm.fmul %[[AB]], %[[SCALE]] : vector<8xf32>
// CHECK-NEXT: %[[T:.+]] = llvm.fptrunc %[[S]] : vector<8xf32> to vector<8xbf16>
// CHECK: llvm.store %[[T]], %{{.+}} {alignment = 16 : i64} : vector<8xbf16>, !llvm.ptr<1>

// The schedule: S^T (32 mma); dV, dP^T, dK (96); a barrier; dQ (4 k-steps x
// 8 n-tiles = 32 mma), 16 atomic adds for each of the lane's two rows.
// SCHED-LABEL: llvm.func @fa_backward_dsum_0
// SCHED-NEXT: 1 place
// SCHED-NEXT: 4 scf.if
// SCHED-LABEL: llvm.func @fa_backward_dkdv_0
// SCHED: 32 nvvm.mma.sync
// SCHED-NEXT: 1 nvvm.cp.async.wait.group 0
// SCHED-NEXT: 1 nvvm.barrier0
// SCHED-NEXT: 96 nvvm.mma.sync
// SCHED-NEXT: 1 nvvm.barrier0
// SCHED-NEXT: 32 nvvm.mma.sync
// SCHED-NEXT: 1 scf.if
// SCHED-NEXT: 16 llvm.atomicrmw fadd
// SCHED-NEXT: 1 scf.if
// SCHED-NEXT: 16 llvm.atomicrmw fadd
// SCHED-NEXT: 2 scf.yield
// SCHED-LABEL: llvm.func @fa_backward_dq_convert_0
// SCHED-NEXT: 1 place
// SCHED-NEXT: 2 scf.if

func.func @plain(%q: tensor<?x4x?x64xbf16>, %k: tensor<?x2x?x64xbf16>, %v: tensor<?x2x?x64xbf16>, %o: tensor<?x4x?x64xbf16>, %do: tensor<?x4x?x64xbf16>, %lse: tensor<?x4x?xf32>) -> (tensor<?x4x?x64xbf16>, tensor<?x2x?x64xbf16>, tensor<?x2x?x64xbf16>) {
  %dq, %dk, %dv = fa.attention_grad %q, %k, %v, %o, %do, %lse : tensor<?x4x?x64xbf16>, tensor<?x2x?x64xbf16>, tensor<?x2x?x64xbf16>, tensor<?x4x?x64xbf16>, tensor<?x4x?x64xbf16>, tensor<?x4x?xf32> -> tensor<?x4x?x64xbf16>, tensor<?x2x?x64xbf16>, tensor<?x2x?x64xbf16>
  return %dq, %dk, %dv : tensor<?x4x?x64xbf16>, tensor<?x2x?x64xbf16>, tensor<?x2x?x64xbf16>
}

// -----

// f16, D = 128 with a bias: Q tiles of 16 rows, so the four warps split dQ's
// 128 columns into 32 each, computed in two passes of 16 (the scored path
// has no registers for more). dS^T is [64 keys][16 queries] (2 KB). The
// accumulator follows the scored parameters (%arg58).

// CHECK-LABEL: llvm.func @fa_backward_dkdv_0(
// CHECK-SAME: %[[NQ:[^:]+]]: i32, %[[NK:[^:]+]]: i32, %{{[^:]+}}: i32, %{{[^:]+}}: i32, %{{[^:]+}}: i32, %{{[^:]+}}: i32, %{{[^:]+}}: f32, %{{[^:]+}}: f32, %{{[^:]+}}: !llvm.ptr<1>,
// CHECK-SAME: %arg57: i64, %arg58: !llvm.ptr<1>)
// CHECK-SAME: fa.kernel_abi = #fa.kernel_abi<grid = [tiles(Nk, 64), Hkv, B], threads = 128, shared = 43136, params = {{\[}}{{.*}}, stride(dbias, 3) : i64, dq_accum(128) : ptr]>
// k0 = 64 * ctaid.x; causal top-left: the first query that sees key k0 is
// k0 (no offset), so the Q loop runs over [max(0, k0), Nq). Key row:
// k0 + 16 * warp + lane / 4.
// CHECK: %[[K0:.+]] = arith.muli %{{.+}}, %c{{[0-9]+}}_i32{{[_0-9]*}} : i32
// CHECK: %{{.+}} = arith.subi %[[NK]], %[[NQ]] : i32
// CHECK: %[[C0:.+]] = arith.constant 0 : i32
// CHECK-NEXT: %[[QBEGIN:.+]] = arith.maxsi %[[C0]], %[[K0]] : i32
// CHECK-NEXT: %[[KW:.+]] = arith.addi %[[K0]], %{{.+}} : i32
// CHECK-NEXT: %[[KROW:.+]] = arith.addi %[[KW]], %{{.+}} : i32
// CHECK: %[[QENDIDX:.+]] = arith.index_cast %[[NQ]] : i32 to index
// CHECK-NEXT: %[[QBIDX:.+]] = arith.index_cast %[[QBEGIN]] : i32 to index
// CHECK-NEXT: scf.for %{{.+}} = %[[QBIDX]] to %[[QENDIDX]] step %c16
// CHECK-NEXT: %[[Q0:.+]] = arith.index_cast %{{.+}} : index to i32
// Masks if the tile crosses the diagonal (k0 + 63 > q0) or Nq.
// CHECK: %[[KTOP:.+]] = arith.addi %[[K0]], %{{.+}} : i32
// CHECK: %[[KLAST:.+]] = arith.subi %[[KTOP]], %{{.+}} : i32
// CHECK-NEXT: %[[CROSS:.+]] = arith.cmpi sgt, %[[KLAST]], %[[Q0]] : i32
// CHECK-NEXT: %[[NEED:.+]] = arith.ori %[[CROSS]], %{{.+}} : i1
// CHECK-NEXT: scf.if %[[NEED]]
// The first score of S^T (key row, query column): kept if key <= query
// (no offset) and query < Nq.
// CHECK: %[[CAUSAL:.+]] = arith.cmpi sle, %[[KEY:.+]], %[[QUERY:.+]] : i32
// CHECK-NEXT: %[[INQ:.+]] = arith.cmpi slt, %[[QUERY]], %[[NQ]] : i32
// CHECK-NEXT: %[[KEEP:.+]] = arith.andi %[[CAUSAL]], %[[INQ]] : i1
// CHECK-NEXT: arith.select %[[KEEP]], %{{.+}}, %{{.+}} : f32
// CHECK: llvm.atomicrmw fadd
// SCHED-LABEL: llvm.func @fa_backward_dkdv_0
// SCHED: 48 nvvm.mma.sync
// SCHED-NEXT: 1 nvvm.barrier0
// SCHED-NEXT: 8 nvvm.mma.sync
// SCHED-NEXT: 1 scf.if
// SCHED-NEXT: 4 llvm.atomicrmw fadd
// SCHED-NEXT: 1 scf.if
// SCHED-NEXT: 4 llvm.atomicrmw fadd
// SCHED-NEXT: 8 nvvm.mma.sync
// SCHED-NEXT: 1 scf.if
// SCHED-NEXT: 4 llvm.atomicrmw fadd
// SCHED-NEXT: 1 scf.if
// SCHED-NEXT: 4 llvm.atomicrmw fadd
// SCHED-NEXT: 2 scf.yield

func.func @bias(%q: tensor<?x4x?x128xf16>, %k: tensor<?x4x?x128xf16>, %v: tensor<?x4x?x128xf16>, %o: tensor<?x4x?x128xf16>, %do: tensor<?x4x?x128xf16>, %lse: tensor<?x4x?xf32>, %bias: tensor<?x4x?x?xf32>) -> (tensor<?x4x?x128xf16>, tensor<?x4x?x128xf16>, tensor<?x4x?x128xf16>) {
  %dq, %dk, %dv = fa.attention_grad %q, %k, %v, %o, %do, %lse bias(%bias : tensor<?x4x?x?xf32>) {causal = #fa.causal<top_left>} : tensor<?x4x?x128xf16>, tensor<?x4x?x128xf16>, tensor<?x4x?x128xf16>, tensor<?x4x?x128xf16>, tensor<?x4x?x128xf16>, tensor<?x4x?xf32> -> tensor<?x4x?x128xf16>, tensor<?x4x?x128xf16>, tensor<?x4x?x128xf16>
  return %dq, %dk, %dv : tensor<?x4x?x128xf16>, tensor<?x4x?x128xf16>, tensor<?x4x?x128xf16>
}
