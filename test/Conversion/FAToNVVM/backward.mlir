// RUN: fa-opt %s -fa-fuse=chip=sm_80 -fa-tile -fa-online-softmax -fa-async-copy -convert-fa-to-nvvm="chip=sm_80 bwd-prefetch=false" -split-input-file | FileCheck %s

// bf16, D = 128, GQA 4:1, causal bottom-right: three kernels (dsum, dkdv,
// dq) with the same parameters, each with its ABI (#fa.kernel_abi: the
// parameters, its grid rule, threads and shared memory); the host function
// is left as it is (fa-fuse outlines only the forward).

// CHECK: module attributes {gpu.container_module}
// CHECK: func.func @causal_gqa
// CHECK-NEXT: fa.attention_grad
// CHECK: gpu.module @fa_kernels [#nvvm.target<O = 3, chip = "sm_80", features = "+ptx70">]

// dsum: 4 chunks of 8 elements of O and dO per lane, a quad per row, twice
// 32 rows; fma in f32, a quad reduction, one store per row.
// CHECK: llvm.func @fa_backward_dsum_0(%arg0: !llvm.ptr<1>,
// CHECK-SAME: %arg9: !llvm.ptr<1>, %arg10: i64,
// CHECK-SAME: %arg37: i64, %arg38: i32, %arg39: i32, %arg40: i32, %arg41: i32, %arg42: i32, %arg43: i32, %arg44: f32, %arg45: f32)
// CHECK-SAME: attributes {denormal_fp_math_f32 = "preserve-sign", fa.kernel_abi = #fa.kernel_abi<grid = [tiles(Nq, 64), Hq, B], threads = 128, shared = 0, params = {{\[}}q : ptr, k : ptr, v : ptr, o : ptr, do : ptr, lse : ptr, dq : ptr, dk : ptr, dv : ptr, dsum : ptr, stride(q, 0) : i64, stride(q, 1) : i64, stride(q, 2) : i64, stride(k, 0) : i64, stride(k, 1) : i64, stride(k, 2) : i64, stride(v, 0) : i64, stride(v, 1) : i64, stride(v, 2) : i64, stride(o, 0) : i64, stride(o, 1) : i64, stride(o, 2) : i64, stride(do, 0) : i64, stride(do, 1) : i64, stride(do, 2) : i64, stride(dq, 0) : i64, stride(dq, 1) : i64, stride(dq, 2) : i64, stride(dk, 0) : i64, stride(dk, 1) : i64, stride(dk, 2) : i64, stride(dv, 0) : i64, stride(dv, 1) : i64, stride(dv, 2) : i64, stride(lse, 0) : i64, stride(lse, 1) : i64, stride(dsum, 0) : i64, stride(dsum, 1) : i64, Nq : i32, Nk : i32, group : i32, Hq : i32, Hkv : i32, B : i32, scale_log2 : f32, scale : f32]>, gpu.kernel, nvvm.kernel, nvvm.maxnreg = 255 : i32, nvvm.maxntid = array<i32: 128, 1, 1>}
// Where the CTA is: its grid's y and z are Hq (%arg41) and B (%arg43).
// CHECK: %[[HQB:.+]] = arith.muli %arg41, %arg43 : i32
// CHECK: arith.cmpi eq, %{{.+}}, %arg41 : i32
// CHECK: arith.divui %{{.+}}, %arg41 : i32
// CHECK-COUNT-8: llvm.load %{{.+}} {alignment = 16 : i64} : !llvm.ptr<1> -> vector<8xbf16>
// CHECK: math.fma
// CHECK: nvvm.shfl.sync bfly
// CHECK: llvm.store %{{.+}}, %{{.+}} : f32, !llvm.ptr<1>
// CHECK-COUNT-8: llvm.load %{{.+}} {alignment = 16 : i64} : !llvm.ptr<1> -> vector<8xbf16>
// CHECK: llvm.store %{{.+}}, %{{.+}} : f32, !llvm.ptr<1>
// CHECK-NEXT: }
// CHECK-NEXT: llvm.return

// dkdv: the K and V tiles once (64 rows x 16 chunks each over 128 threads),
// then a loop over the 4 query heads of the group around a loop over the Q
// tiles (32 rows for D = 128 on sm_80; 64 on sm_90a, backward-prefetch.mlir) from the causal diagonal on.
// CHECK: llvm.func @fa_backward_dkdv_0(
// CHECK-SAME: %[[NQ:[^:]+]]: i32, %[[NK:[^:]+]]: i32, %{{[^:]+}}: i32, %{{[^:]+}}: i32, %[[HKV:[^:]+]]: i32, %[[B:[^:]+]]: i32, %{{[^:]+}}: f32, %{{[^:]+}}: f32)
// CHECK-SAME: attributes {denormal_fp_math_f32 = "preserve-sign", fa.kernel_abi = #fa.kernel_abi<grid = [tiles(Nk, 64), Hkv, B], threads = 128, shared = 49408, params = {{\[}}q : ptr, k : ptr, v : ptr, o : ptr, do : ptr, lse : ptr, dq : ptr, dk : ptr, dv : ptr, dsum : ptr, stride(q, 0) : i64, stride(q, 1) : i64, stride(q, 2) : i64, stride(k, 0) : i64, stride(k, 1) : i64, stride(k, 2) : i64, stride(v, 0) : i64, stride(v, 1) : i64, stride(v, 2) : i64, stride(o, 0) : i64, stride(o, 1) : i64, stride(o, 2) : i64, stride(do, 0) : i64, stride(do, 1) : i64, stride(do, 2) : i64, stride(dq, 0) : i64, stride(dq, 1) : i64, stride(dq, 2) : i64, stride(dk, 0) : i64, stride(dk, 1) : i64, stride(dk, 2) : i64, stride(dv, 0) : i64, stride(dv, 1) : i64, stride(dv, 2) : i64, stride(lse, 0) : i64, stride(lse, 1) : i64, stride(dsum, 0) : i64, stride(dsum, 1) : i64, Nq : i32, Nk : i32, group : i32, Hq : i32, Hkv : i32, B : i32, scale_log2 : f32, scale : f32]>,
// Its grid's y and z are Hkv and B.
// CHECK: arith.muli %[[HKV]], %[[B]] : i32
// CHECK: arith.cmpi eq, %{{.+}}, %[[HKV]] : i32
// CHECK: arith.divui %{{.+}}, %[[HKV]] : i32
// k0 = 64 * ctaid.x.
// CHECK: %[[K0:.+]] = arith.muli %{{.+}}, %c{{[0-9]+}}_i32{{[_0-9]*}} : i32
// CHECK-COUNT-16: nvvm.cp.async.shared.global
// CHECK-NEXT: nvvm.cp.async.commit.group
// CHECK-NEXT: nvvm.cp.async.wait.group 0
// CHECK-NEXT: nvvm.barrier0
// Causal bottom-right: the diagonal's offset is Nk - Nq, and the first
// query that sees key k0 is k0 - (Nk - Nq): the Q loop runs over
// [max(0, k0 - Nk + Nq), Nq). Key row: k0 + 16 * warp + lane / 4.
// CHECK-NEXT: %[[DIAG:.+]] = arith.subi %[[NK]], %[[NQ]] : i32
// CHECK: %[[C0:.+]] = arith.constant 0 : i32
// CHECK-NEXT: %[[FROM:.+]] = arith.subi %[[K0]], %[[DIAG]] : i32
// CHECK-NEXT: %[[QBEGIN:.+]] = arith.maxsi %[[C0]], %[[FROM]] : i32
// CHECK-NEXT: %[[KW:.+]] = arith.addi %[[K0]], %{{.+}} : i32
// CHECK-NEXT: %[[KROW:.+]] = arith.addi %[[KW]], %{{.+}} : i32
// CHECK: scf.for %{{.+}} = %{{.+}} to %[[GROUP:.+]] step %{{.+}} iter_args({{.+}}) -> (f32,
// CHECK: %[[QEND:.+]] = arith.index_cast %[[NQ]] : i32 to index
// CHECK-NEXT: %[[QB:.+]] = arith.index_cast %[[QBEGIN]] : i32 to index
// CHECK-NEXT: scf.for %{{.+}} = %[[QB]] to %[[QEND]] step %c32 iter_args({{.+}}) -> (f32,
// CHECK-NEXT: %[[Q0:.+]] = arith.index_cast %{{.+}} : index to i32
// Q and dO tiles as two cp.async groups; lse * log2(e) and Dsum to shared
// memory; S^T waits for Q only.
// CHECK: nvvm.barrier0
// CHECK-COUNT-4: nvvm.cp.async.shared.global
// CHECK-NEXT: nvvm.cp.async.commit.group
// CHECK-COUNT-4: nvvm.cp.async.shared.global
// CHECK-NEXT: nvvm.cp.async.commit.group
// CHECK: llvm.load %{{.+}} : !llvm.ptr<1> -> f32
// CHECK: llvm.load %{{.+}} : !llvm.ptr<1> -> f32
// CHECK: llvm.store %{{.+}}, %{{.+}} : f32, !llvm.ptr<3>
// CHECK: llvm.store %{{.+}}, %{{.+}} : f32, !llvm.ptr<3>
// CHECK: nvvm.cp.async.wait.group 1
// CHECK-NEXT: nvvm.barrier0
// S^T = K Q^T: 8 k-steps x 4 n-tiles; masks only on tiles that cross the
// diagonal (no bound check on keys: their rows are not stored).
// CHECK-COUNT-32: nvvm.mma.sync A[{{.+}}] B[{{.+}}] C[{{.+}}] {layoutA = #nvvm.mma_layout<row>, layoutB = #nvvm.mma_layout<col>, multiplicandAPtxType = #nvvm.mma_type<bf16>, multiplicandBPtxType = #nvvm.mma_type<bf16>, shape = #nvvm.shape<m = 16, n = 8, k = 16>} : (i32, i32, f32) -> !llvm.struct<(f32, f32, f32, f32)>
// CHECK-NOT: nvvm.mma.sync
// The tile crosses the diagonal if its last key, k0 + 63, lies past its
// first query's last key, q0 + Nk - Nq.
// CHECK: %[[KTOP:.+]] = arith.addi %[[K0]], %{{.+}} : i32
// CHECK: %[[QLIM:.+]] = arith.addi %[[Q0]], %[[DIAG]] : i32
// CHECK-NEXT: %[[C1:.+]] = arith.constant 1 : i32
// CHECK-NEXT: %[[KLAST:.+]] = arith.subi %[[KTOP]], %[[C1]] : i32
// CHECK-NEXT: %[[CROSS:.+]] = arith.cmpi sgt, %[[KLAST]], %[[QLIM]] : i32
// CHECK-NEXT: scf.if %[[CROSS]] -> (f32,
// The first score (key row, query column): kept if key <= query + Nk - Nq.
// CHECK: %[[KEY:.+]] = arith.addi %[[KROW]], %{{.+}} : i32
// CHECK: %[[QUERY:.+]] = arith.addi %[[Q0]], %{{.+}} : i32
// CHECK-NEXT: %[[LIM:.+]] = arith.addi %[[QUERY]], %[[DIAG]] : i32
// CHECK-NEXT: %[[SEEN:.+]] = arith.cmpi sle, %[[KEY]], %[[LIM]] : i32
// CHECK-NEXT: arith.select %[[SEEN]], %{{.+}}, %{{.+}} : f32
// CHECK: } else {
// P^T = exp2(S^T * scale * log2(e) - lse * log2(e)), lse per column.
// CHECK: llvm.load %{{.+}} {alignment = 8 : i64} : !llvm.ptr<3> -> vector<2xf32>
// CHECK: math.fma
// CHECK-NEXT: llvm.intr.exp2
// dV += P^T dO (dO transposed), dP^T = V dO^T, dK += dS^T Q (Q transposed):
// 2 q-steps x 16 n-tiles, 8 k-steps x 4 n-tiles, 2 x 16.
// CHECK: nvvm.cp.async.wait.group 0
// CHECK-NEXT: nvvm.barrier0
// CHECK: nvvm.ldmatrix %{{.+}} {eltType = #nvvm.ld_st_matrix_elt_type<b16>, layout = #nvvm.mma_layout<col>
// CHECK-COUNT-96: nvvm.mma.sync
// CHECK-NOT: nvvm.mma.sync
// CHECK: scf.yield
// CHECK: scf.yield
// dK (times scale) and dV stored by rows below Nk.
// CHECK: arith.cmpi slt, %{{.+}}, %[[NK]] : i32
// CHECK: arith.mulf %{{.+}}, %{{.+}} : f32
// CHECK-NOT: atomicrmw
// CHECK: llvm.return

// dq: like the forward's loop over the visible K/V tiles (causal
// bottom-right: up to q0 + 64 + Nk - Nq), three products per tile.
// CHECK: llvm.func @fa_backward_dq_0(
// CHECK-SAME: %[[NQ:[^:]+]]: i32, %[[NK:[^:]+]]: i32, %{{[^:]+}}: i32, %{{[^:]+}}: i32, %{{[^:]+}}: i32, %{{[^:]+}}: i32, %{{[^:]+}}: f32, %{{[^:]+}}: f32)
// CHECK-SAME: attributes {denormal_fp_math_f32 = "preserve-sign", fa.kernel_abi = #fa.kernel_abi<grid = [tiles(Nq, 64), Hq, B], threads = 128, shared = 65536, params = {{\[}}q : ptr, k : ptr, v : ptr, o : ptr, do : ptr, lse : ptr, dq : ptr, dk : ptr, dv : ptr, dsum : ptr, stride(q, 0) : i64, stride(q, 1) : i64, stride(q, 2) : i64, stride(k, 0) : i64, stride(k, 1) : i64, stride(k, 2) : i64, stride(v, 0) : i64, stride(v, 1) : i64, stride(v, 2) : i64, stride(o, 0) : i64, stride(o, 1) : i64, stride(o, 2) : i64, stride(do, 0) : i64, stride(do, 1) : i64, stride(do, 2) : i64, stride(dq, 0) : i64, stride(dq, 1) : i64, stride(dq, 2) : i64, stride(dk, 0) : i64, stride(dk, 1) : i64, stride(dk, 2) : i64, stride(dv, 0) : i64, stride(dv, 1) : i64, stride(dv, 2) : i64, stride(lse, 0) : i64, stride(lse, 1) : i64, stride(dsum, 0) : i64, stride(dsum, 1) : i64, Nq : i32, Nk : i32, group : i32, Hq : i32, Hkv : i32, B : i32, scale_log2 : f32, scale : f32]>,
// q0 = 64 * ctaid.x; the thread's first row q0 + 16 * warp + lane / 4.
// CHECK: scf.if
// CHECK: arith.divui
// CHECK: %[[Q0:.+]] = arith.muli %{{.+}}, %c{{[0-9]+}}_i32{{[_0-9]*}} : i32
// CHECK-COUNT-16: nvvm.cp.async.shared.global
// CHECK-NEXT: nvvm.cp.async.commit.group
// CHECK-NEXT: %[[QW:.+]] = arith.addi %[[Q0]], %{{.+}} : i32
// CHECK-NEXT: %[[ROW:.+]] = arith.addi %[[QW]], %{{.+}} : i32
// CHECK: nvvm.cp.async.wait.group 0
// CHECK-NEXT: nvvm.barrier0
// The K/V loop: [0, max(0, min(Nk, q0 + 64 + Nk - Nq))).
// CHECK-NEXT: %[[C64:.+]] = arith.constant 64 : i32
// CHECK-NEXT: %[[QEND:.+]] = arith.addi %[[Q0]], %[[C64]] : i32
// CHECK-NEXT: %[[DIAG:.+]] = arith.subi %[[NK]], %[[NQ]] : i32
// CHECK-NEXT: %[[BEGIN:.+]] = arith.constant 0 : i32
// CHECK-NEXT: %[[LIMIT:.+]] = arith.addi %[[QEND]], %[[DIAG]] : i32
// CHECK-NEXT: %[[MIN:.+]] = arith.minsi %[[NK]], %[[LIMIT]] : i32
// CHECK-NEXT: %[[END:.+]] = arith.maxsi %[[BEGIN]], %[[MIN]] : i32
// CHECK: %[[ENDIDX:.+]] = arith.index_cast %[[END]] : i32 to index
// CHECK-NEXT: %[[BEGINIDX:.+]] = arith.index_cast %[[BEGIN]] : i32 to index
// CHECK-NEXT: scf.for %{{.+}} = %[[BEGINIDX]] to %[[ENDIDX]] step %c64
// CHECK-NEXT: %[[KV0:.+]] = arith.index_cast %{{.+}} : index to i32
// CHECK: nvvm.cp.async.wait.group 1
// CHECK-NEXT: nvvm.barrier0
// CHECK-COUNT-64: nvvm.mma.sync
// CHECK-NOT: nvvm.mma.sync
// Masks on tiles that cross Nk or the diagonal (kv0 + 63 > q0 + Nk - Nq).
// CHECK: %[[TEND:.+]] = arith.addi %[[KV0]], %{{.+}} : i32
// CHECK-NEXT: %[[PASTNK:.+]] = arith.cmpi sgt, %[[TEND]], %[[NK]] : i32
// CHECK: %[[FIRSTLIM:.+]] = arith.addi %[[Q0]], %[[DIAG]] : i32
// CHECK: %[[TLAST:.+]] = arith.subi %[[TEND]], %{{.+}} : i32
// CHECK-NEXT: %[[CROSS:.+]] = arith.cmpi sgt, %[[TLAST]], %[[FIRSTLIM]] : i32
// CHECK-NEXT: %[[NEED:.+]] = arith.ori %[[PASTNK]], %[[CROSS]] : i1
// CHECK-NEXT: scf.if %[[NEED]] -> (f32,
// The first score: kept if key < Nk and key <= row + Nk - Nq.
// CHECK: %[[KEY:.+]] = arith.addi %[[KV0]], %{{.+}} : i32
// CHECK: %[[R:.+]] = arith.addi %[[ROW]], %{{.+}} : i32
// CHECK-NEXT: %[[INNK:.+]] = arith.cmpi slt, %[[KEY]], %[[NK]] : i32
// CHECK-NEXT: %[[LIM:.+]] = arith.addi %[[R]], %[[DIAG]] : i32
// CHECK-NEXT: %[[SEEN:.+]] = arith.cmpi sle, %[[KEY]], %[[LIM]] : i32
// CHECK-NEXT: %[[KEEP:.+]] = arith.andi %[[INNK]], %[[SEEN]] : i1
// CHECK-NEXT: arith.select %[[KEEP]], %{{.+}}, %{{.+}} : f32
// CHECK: llvm.intr.exp2
// CHECK: nvvm.cp.async.wait.group 0
// CHECK-NEXT: nvvm.barrier0
// CHECK-COUNT-128: nvvm.mma.sync
// CHECK-NOT: nvvm.mma.sync
// CHECK: scf.yield
// CHECK-NOT: atomicrmw
// CHECK: llvm.return
func.func @causal_gqa(%q: tensor<?x8x?x128xbf16>, %k: tensor<?x2x?x128xbf16>, %v: tensor<?x2x?x128xbf16>, %o: tensor<?x8x?x128xbf16>, %do: tensor<?x8x?x128xbf16>, %lse: tensor<?x8x?xf32>) -> (tensor<?x8x?x128xbf16>, tensor<?x2x?x128xbf16>, tensor<?x2x?x128xbf16>) {
  %dq, %dk, %dv = fa.attention_grad %q, %k, %v, %o, %do, %lse {causal = #fa.causal<bottom_right>} : tensor<?x8x?x128xbf16>, tensor<?x2x?x128xbf16>, tensor<?x2x?x128xbf16>, tensor<?x8x?x128xbf16>, tensor<?x8x?x128xbf16>, tensor<?x8x?xf32> -> tensor<?x8x?x128xbf16>, tensor<?x2x?x128xbf16>, tensor<?x2x?x128xbf16>
  return %dq, %dk, %dv : tensor<?x8x?x128xbf16>, tensor<?x2x?x128xbf16>, tensor<?x2x?x128xbf16>
}

// -----

// f16, D = 64, softcap, no mask: 64-row Q tiles in dkdv with the K and V
// fragments in registers (read before the loops), tanh (to f32 accuracy) and its
// derivative 1 - tanh^2, no masking branch in dkdv (keys past Nk are never
// stored), and the key bound in dq.

// CHECK: module attributes {gpu.container_module}
// CHECK: llvm.func @fa_backward_dsum_0(
// CHECK-SAME: fa.kernel_abi = #fa.kernel_abi<grid = [tiles(Nq, 64), Hq, B], threads = 128, shared = 0,
// CHECK-COUNT-4: llvm.load %{{.+}} {alignment = 16 : i64} : !llvm.ptr<1> -> vector<8xf16>
// CHECK: llvm.func @fa_backward_dkdv_0(
// CHECK-SAME: fa.kernel_abi = #fa.kernel_abi<grid = [tiles(Nk, 64), Hkv, B], threads = 128, shared = 33280,
// CHECK: nvvm.barrier0
// CHECK-COUNT-8: nvvm.ldmatrix
// CHECK: scf.for
// CHECK: scf.for
// CHECK-COUNT-32: nvvm.mma.sync {{.*}} : (vector<2xf16>, vector<2xf16>, f32) -> !llvm.struct<(f32, f32, f32, f32)>
// CHECK-NOT: nvvm.mma.sync
// Softcap 30 on a score (D = 64: scale = 0.125), into the log2 domain
// (buildSoftcap): (30 * log2(e)) * tanh(s * 0.125 / 30); its derivative's
// 1 - tanh^2.
// CHECK: %[[CAP:.+]] = arith.constant 43.2808495 : f32
// CHECK-NEXT: %[[INV:.+]] = arith.constant 0.00416666688 : f32
// CHECK-NEXT: arith.mulf %[[DOT:.+]], %[[INV]] : f32
// tanh to 2^-21: 1 - 2 / (e^(2x) + 1), 2 x log2(e) as s (2 log2(e) / 240):
// one multiply.
// CHECK-NEXT: %[[K:.+]] = arith.constant 0.0120224589 : f32
// CHECK-NEXT: %[[X2:.+]] = arith.mulf %[[DOT]], %[[K]] : f32
// CHECK-NEXT: %[[E:.+]] = llvm.intr.exp2(%[[X2]]) : (f32) -> f32
// CHECK: %[[R:.+]] = llvm.inline_asm "rcp.approx.ftz.f32 $0, $1;", "=f,f" %{{.+}} : (f32) -> f32
// CHECK: %[[TH:.+]] = math.fma %{{.+}}, %[[R]], %{{.+}} : f32
// CHECK-NEXT: %[[S0:.+]] = arith.mulf %[[CAP]], %[[TH]] : f32
// CHECK-NEXT: %[[ONE:.+]] = arith.constant 1.000000e+00 : f32
// CHECK-NEXT: %[[TH2:.+]] = arith.mulf %[[TH]], %[[TH]] : f32
// CHECK-NEXT: %[[DCAP:.+]] = arith.subf %[[ONE]], %[[TH2]] : f32
// P^T = exp2(S^T - lse * log2(e)) from the capped score, unmasked; the
// derivative's factor scales it for dS.
// CHECK-NOT: scf.if
// CHECK: math.fma %[[S0]], %{{.+}}, %{{.+}} : f32
// CHECK-NEXT: %[[P0:.+]] = llvm.intr.exp2
// CHECK-NOT: nvvm.mma.sync
// CHECK: arith.mulf %[[P0]], %[[DCAP]] : f32
// CHECK-COUNT-96: nvvm.mma.sync
// CHECK-NOT: nvvm.mma.sync
// CHECK: scf.yield
// CHECK: llvm.func @fa_backward_dq_0(
// CHECK-SAME: %{{[^:]+}}: i32, %[[NK:[^:]+]]: i32, %{{[^:]+}}: i32, %{{[^:]+}}: i32, %{{[^:]+}}: i32, %{{[^:]+}}: i32, %{{[^:]+}}: f32, %{{[^:]+}}: f32)
// CHECK: scf.for
// CHECK-COUNT-32: nvvm.mma.sync
// The same softcap in dq; the capped score is what the key-bound mask
// selects and what the unmasked branch yields.
// CHECK: %[[CAP:.+]] = arith.constant 43.2808495 : f32
// CHECK-NEXT: %[[INV:.+]] = arith.constant 0.00416666688 : f32
// CHECK-NEXT: arith.mulf %[[DOT:.+]], %[[INV]] : f32
// tanh to 2^-21: 1 - 2 / (e^(2x) + 1), 2 x log2(e) as s (2 log2(e) / 240):
// one multiply.
// CHECK-NEXT: %[[K:.+]] = arith.constant 0.0120224589 : f32
// CHECK-NEXT: %[[X2:.+]] = arith.mulf %[[DOT]], %[[K]] : f32
// CHECK-NEXT: %[[E:.+]] = llvm.intr.exp2(%[[X2]]) : (f32) -> f32
// CHECK: %[[R:.+]] = llvm.inline_asm "rcp.approx.ftz.f32 $0, $1;", "=f,f" %{{.+}} : (f32) -> f32
// CHECK: %[[TH:.+]] = math.fma %{{.+}}, %[[R]], %{{.+}} : f32
// CHECK-NEXT: %[[S0:.+]] = arith.mulf %[[CAP]], %[[TH]] : f32
// CHECK: scf.if %{{.+}} -> (f32,
// CHECK: %[[INNK:.+]] = arith.cmpi slt, %{{.+}}, %[[NK]] : i32
// CHECK-NEXT: arith.select %[[INNK]], %[[S0]], %{{.+}} : f32
// CHECK: } else {
// CHECK-NEXT: scf.yield %[[S0]],
// CHECK-COUNT-64: nvvm.mma.sync
// CHECK-NOT: nvvm.mma.sync
// CHECK: scf.yield
func.func @softcap(%q: tensor<2x4x?x64xf16>, %k: tensor<2x4x?x64xf16>, %v: tensor<2x4x?x64xf16>, %o: tensor<2x4x?x64xf16>, %do: tensor<2x4x?x64xf16>, %lse: tensor<2x4x?xf32>) -> (tensor<2x4x?x64xf16>, tensor<2x4x?x64xf16>, tensor<2x4x?x64xf16>) {
  %dq, %dk, %dv = fa.attention_grad %q, %k, %v, %o, %do, %lse {softcap = 30.0 : f32} : tensor<2x4x?x64xf16>, tensor<2x4x?x64xf16>, tensor<2x4x?x64xf16>, tensor<2x4x?x64xf16>, tensor<2x4x?x64xf16>, tensor<2x4x?xf32> -> tensor<2x4x?x64xf16>, tensor<2x4x?x64xf16>, tensor<2x4x?x64xf16>
  return %dq, %dk, %dv : tensor<2x4x?x64xf16>, tensor<2x4x?x64xf16>, tensor<2x4x?x64xf16>
}

// -----

// A forward and a backward in one module share the gpu.module; each op's
// kernels are numbered among ops of its kind. The window (100 left, 0
// right, aligned bottom-right: key j is seen by row i if
// i + Nk - Nq - 100 <= j <= i + Nk - Nq + 0) bounds the loops and masks
// in the forward and in the first backward.

// CHECK: module attributes {gpu.container_module}
// CHECK: gpu.module @fa_kernels
// The forward (the kernel-level IR's lowering, fagpu-forward.mlir): its
// K/V loop starts at the tile of max(0, q0 + Nk - Nq - 100).
// CHECK: llvm.func @fa_forward_0(
// CHECK-SAME: %{{[^:]+}}: i32, %{{[^:]+}}: i32, %{{[^:]+}}: i32, %{{[^:]+}}: i32, %{{[^:]+}}: i32)
// CHECK-SAME: fa.kernel_abi = #fa.kernel_abi<grid = [tiles(Nq, 128), Hq, B], threads = 128, shared = 24576,
// CHECK: %[[DIAG:.+]] = arith.subi %{{.+}}, %{{.+}} : i32
// CHECK-NEXT: %[[C0:.+]] = arith.constant 0 : i32
// CHECK-NEXT: %[[LEFT:.+]] = arith.constant 100 : i32
// CHECK-NEXT: %[[Q0D:.+]] = arith.addi %{{.+}}, %[[DIAG]] : i32
// CHECK-NEXT: %[[LO:.+]] = arith.subi %[[Q0D]], %[[LEFT]] : i32
// CHECK: arith.maxsi %[[C0]], %[[LO]] : i32
// CHECK: scf.for
// CHECK: llvm.func @fa_backward_dsum_0(
// CHECK: llvm.func @fa_backward_dkdv_0(
// CHECK-SAME: %[[NQ:[^:]+]]: i32, %[[NK:[^:]+]]: i32, %{{[^:]+}}: i32, %{{[^:]+}}: i32, %{{[^:]+}}: i32, %{{[^:]+}}: i32, %{{[^:]+}}: f32, %{{[^:]+}}: f32)
// CHECK: %[[K0:.+]] = arith.muli %{{.+}}, %c{{[0-9]+}}_i32{{[_0-9]*}} : i32
// dkdv: the queries that see a key of [k0, kEnd), kEnd = min(k0 + 64, Nk):
// [max(0, k0 - (Nk - Nq) - 0), min(Nq, kEnd - (Nk - Nq) + 100)).
// CHECK: %[[DIAG:.+]] = arith.subi %[[NK]], %[[NQ]] : i32
// CHECK-NEXT: %[[C64:.+]] = arith.constant 64 : i32
// CHECK-NEXT: %[[K64:.+]] = arith.addi %[[K0]], %[[C64]] : i32
// CHECK-NEXT: %[[KEND:.+]] = arith.minsi %[[K64]], %[[NK]] : i32
// CHECK-NEXT: %[[C0:.+]] = arith.constant 0 : i32
// CHECK-NEXT: %[[RIGHT:.+]] = arith.constant 0 : i32
// CHECK-NEXT: %[[K0D:.+]] = arith.subi %[[K0]], %[[DIAG]] : i32
// CHECK-NEXT: %[[QLO:.+]] = arith.subi %[[K0D]], %[[RIGHT]] : i32
// CHECK-NEXT: %[[QBEGIN:.+]] = arith.maxsi %[[C0]], %[[QLO]] : i32
// CHECK-NEXT: %[[LEFT:.+]] = arith.constant 100 : i32
// CHECK-NEXT: %[[KENDD:.+]] = arith.subi %[[KEND]], %[[DIAG]] : i32
// CHECK-NEXT: %[[QHI:.+]] = arith.addi %[[KENDD]], %[[LEFT]] : i32
// CHECK-NEXT: %[[QEND:.+]] = arith.minsi %[[NQ]], %[[QHI]] : i32
// CHECK-NEXT: %[[KW:.+]] = arith.addi %[[K0]], %{{.+}} : i32
// CHECK-NEXT: %[[KROW:.+]] = arith.addi %[[KW]], %{{.+}} : i32
// CHECK: %[[QENDIDX:.+]] = arith.index_cast %[[QEND]] : i32 to index
// CHECK-NEXT: %[[QBIDX:.+]] = arith.index_cast %[[QBEGIN]] : i32 to index
// CHECK-NEXT: scf.for %{{.+}} = %[[QBIDX]] to %[[QENDIDX]] step %c64
// CHECK-NEXT: %[[Q0:.+]] = arith.index_cast %{{.+}} : index to i32
// The first score of S^T (key row, query column): kept if
// query + Nk - Nq - 100 <= key <= query + Nk - Nq + 0.
// CHECK: scf.if %{{.+}} -> (f32,
// CHECK: %[[KEY:.+]] = arith.addi %[[KROW]], %{{.+}} : i32
// CHECK: %[[QUERY:.+]] = arith.addi %[[Q0]], %{{.+}} : i32
// CHECK-NEXT: %[[AL:.+]] = arith.addi %[[QUERY]], %[[DIAG]] : i32
// CHECK-NEXT: %[[L:.+]] = arith.constant 100 : i32
// CHECK-NEXT: %[[KLO:.+]] = arith.subi %[[AL]], %[[L]] : i32
// CHECK-NEXT: %[[GE:.+]] = arith.cmpi sge, %[[KEY]], %[[KLO]] : i32
// CHECK-NEXT: %[[R:.+]] = arith.constant 0 : i32
// CHECK-NEXT: %[[KHI:.+]] = arith.addi %[[AL]], %[[R]] : i32
// CHECK-NEXT: %[[LE:.+]] = arith.cmpi sle, %[[KEY]], %[[KHI]] : i32
// CHECK-NEXT: %[[KEEP:.+]] = arith.andi %[[GE]], %[[LE]] : i1
// CHECK-NEXT: arith.select %[[KEEP]], %{{.+}}, %{{.+}} : f32
// CHECK: llvm.func @fa_backward_dq_0(
// CHECK-SAME: %[[NQ:[^:]+]]: i32, %[[NK:[^:]+]]: i32, %{{[^:]+}}: i32, %{{[^:]+}}: i32, %{{[^:]+}}: i32, %{{[^:]+}}: i32, %{{[^:]+}}: f32, %{{[^:]+}}: f32)
// dq: the forward's K/V loop and masks, for 64-row Q tiles.
// CHECK: %[[Q0:.+]] = arith.muli %{{.+}}, %c{{[0-9]+}}_i32{{[_0-9]*}} : i32
// CHECK: nvvm.cp.async.commit.group
// CHECK-NEXT: %[[QW:.+]] = arith.addi %[[Q0]], %{{.+}} : i32
// CHECK-NEXT: %[[ROW:.+]] = arith.addi %[[QW]], %{{.+}} : i32
// CHECK: %[[QEND:.+]] = arith.addi %[[Q0]], %{{.+}} : i32
// CHECK-NEXT: %[[DIAG:.+]] = arith.subi %[[NK]], %[[NQ]] : i32
// CHECK-NEXT: %[[C0:.+]] = arith.constant 0 : i32
// CHECK-NEXT: %[[LEFT:.+]] = arith.constant 100 : i32
// CHECK-NEXT: %[[Q0D:.+]] = arith.addi %[[Q0]], %[[DIAG]] : i32
// CHECK-NEXT: %[[LO:.+]] = arith.subi %[[Q0D]], %[[LEFT]] : i32
// CHECK-NEXT: %[[BKV:.+]] = arith.constant 64 : i32
// CHECK-NEXT: %[[LO0:.+]] = arith.maxsi %[[C0]], %[[LO]] : i32
// CHECK-NEXT: %[[LOT:.+]] = arith.divui %[[LO0]], %[[BKV]] : i32
// CHECK-NEXT: %[[BEGIN:.+]] = arith.muli %[[LOT]], %[[BKV]] : i32
// CHECK-NEXT: %[[RIGHT:.+]] = arith.constant 0 : i32
// CHECK-NEXT: %[[QENDD:.+]] = arith.addi %[[QEND]], %[[DIAG]] : i32
// CHECK-NEXT: %[[HI:.+]] = arith.addi %[[QENDD]], %[[RIGHT]] : i32
// CHECK-NEXT: %[[MIN:.+]] = arith.minsi %[[NK]], %[[HI]] : i32
// CHECK-NEXT: %[[END:.+]] = arith.maxsi %[[C0]], %[[MIN]] : i32
// CHECK: %[[ENDIDX:.+]] = arith.index_cast %[[END]] : i32 to index
// CHECK-NEXT: %[[BEGINIDX:.+]] = arith.index_cast %[[BEGIN]] : i32 to index
// CHECK-NEXT: scf.for %{{.+}} = %[[BEGINIDX]] to %[[ENDIDX]] step %c64
// CHECK-NEXT: %[[KV0:.+]] = arith.index_cast %{{.+}} : index to i32
// CHECK: scf.if %{{.+}} -> (f32,
// CHECK: %[[KEY:.+]] = arith.addi %[[KV0]], %{{.+}} : i32
// CHECK: %[[R0:.+]] = arith.addi %[[ROW]], %{{.+}} : i32
// CHECK-NEXT: %[[INNK:.+]] = arith.cmpi slt, %[[KEY]], %[[NK]] : i32
// CHECK-NEXT: %[[AL:.+]] = arith.addi %[[R0]], %[[DIAG]] : i32
// CHECK-NEXT: %[[L:.+]] = arith.constant 100 : i32
// CHECK-NEXT: %[[KLO:.+]] = arith.subi %[[AL]], %[[L]] : i32
// CHECK-NEXT: %[[GE:.+]] = arith.cmpi sge, %[[KEY]], %[[KLO]] : i32
// CHECK-NEXT: %[[K1:.+]] = arith.andi %[[INNK]], %[[GE]] : i1
// CHECK-NEXT: %[[R:.+]] = arith.constant 0 : i32
// CHECK-NEXT: %[[KHI:.+]] = arith.addi %[[AL]], %[[R]] : i32
// CHECK-NEXT: %[[LE:.+]] = arith.cmpi sle, %[[KEY]], %[[KHI]] : i32
// CHECK-NEXT: %[[KEEP:.+]] = arith.andi %[[K1]], %[[LE]] : i1
// CHECK-NEXT: arith.select %[[KEEP]], %{{.+}}, %{{.+}} : f32
// The second backward has no window: no 100 in its kernels.
// CHECK: llvm.func @fa_backward_dsum_1(
// CHECK-NOT: arith.constant 100 : i32
// CHECK: llvm.func @fa_backward_dkdv_1(
// CHECK: llvm.func @fa_backward_dq_1(
func.func @pair(%q: tensor<?x4x?x32xbf16>, %k: tensor<?x1x?x32xbf16>, %v: tensor<?x1x?x32xbf16>, %do: tensor<?x4x?x32xbf16>) -> (tensor<?x4x?x32xbf16>, tensor<?x1x?x32xbf16>, tensor<?x1x?x32xbf16>, tensor<?x4x?x32xbf16>) {
  %o, %lse = fa.attention %q, %k, %v {window = array<i64: 100, 0>} : tensor<?x4x?x32xbf16>, tensor<?x1x?x32xbf16>, tensor<?x1x?x32xbf16> -> tensor<?x4x?x32xbf16>, tensor<?x4x?xf32>
  %dq, %dk, %dv = fa.attention_grad %q, %k, %v, %o, %do, %lse {window = array<i64: 100, 0>} : tensor<?x4x?x32xbf16>, tensor<?x1x?x32xbf16>, tensor<?x1x?x32xbf16>, tensor<?x4x?x32xbf16>, tensor<?x4x?x32xbf16>, tensor<?x4x?xf32> -> tensor<?x4x?x32xbf16>, tensor<?x1x?x32xbf16>, tensor<?x1x?x32xbf16>
  %dq2, %dk2, %dv2 = fa.attention_grad %q, %k, %v, %o, %do, %lse : tensor<?x4x?x32xbf16>, tensor<?x1x?x32xbf16>, tensor<?x1x?x32xbf16>, tensor<?x4x?x32xbf16>, tensor<?x4x?x32xbf16>, tensor<?x4x?xf32> -> tensor<?x4x?x32xbf16>, tensor<?x1x?x32xbf16>, tensor<?x1x?x32xbf16>
  return %dq, %dk, %dv, %dq2 : tensor<?x4x?x32xbf16>, tensor<?x1x?x32xbf16>, tensor<?x1x?x32xbf16>, tensor<?x4x?x32xbf16>
}
