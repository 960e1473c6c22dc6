// RUN: fa-opt %s -fa-fuse=chip=sm_80 -fa-async-copy -convert-fa-to-nvvm="chip=sm_80 bwd-prefetch=false" -split-input-file | FileCheck %s

// bf16, D = 128, GQA 4:1, causal bottom-right: three kernels (dsum, dkdv,
// dq) with one ABI, their launch contracts on the module; the host function
// is left as it is (fa-fuse outlines only the forward).

// CHECK: module attributes {fa.backward = [{grid = "ceil(Nq/64),Hq,B", name = "fa_backward_dsum_0", shared_bytes = 0 : i64, threads = 128 : i64}, {grid = "ceil(Nk/64),Hkv,B", name = "fa_backward_dkdv_0", shared_bytes = 49408 : i64, threads = 128 : i64}, {grid = "ceil(Nq/64),Hq,B", name = "fa_backward_dq_0", shared_bytes = 65536 : i64, threads = 128 : i64}], gpu.container_module}
// CHECK: func.func @causal_gqa
// CHECK-NEXT: fa.attention_grad
// CHECK: gpu.module @fa_kernels [#nvvm.target<O = 3, chip = "sm_80", features = "+ptx70">]

// dsum: 4 chunks of 8 elements of O and dO per lane, a quad per row, twice
// 32 rows; fma in f32, a quad reduction, one store per row.
// CHECK: llvm.func @fa_backward_dsum_0(%arg0: !llvm.ptr<1>,
// CHECK-SAME: %arg9: !llvm.ptr<1>, %arg10: i64,
// CHECK-SAME: %arg37: i64, %arg38: i32, %arg39: i32, %arg40: i32, %arg41: f32, %arg42: f32)
// CHECK-SAME: attributes {denormal_fp_math_f32 = "preserve-sign", fa.grid = "ceil(Nq/64),Hq,B", fa.shared_bytes = 0 : i64, fa.threads = 128 : i64, gpu.kernel, nvvm.kernel, nvvm.maxnreg = 255 : i32, nvvm.maxntid = array<i32: 128, 1, 1>}
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
// CHECK-SAME: attributes {denormal_fp_math_f32 = "preserve-sign", fa.grid = "ceil(Nk/64),Hkv,B", fa.shared_bytes = 49408 : i64,
// CHECK-COUNT-16: nvvm.cp.async.shared.global
// CHECK-NEXT: nvvm.cp.async.commit.group
// CHECK-NEXT: nvvm.cp.async.wait.group 0
// CHECK-NEXT: nvvm.barrier0
// CHECK: %[[DIAG:.+]] = arith.subi %[[NK:.+]], %[[NQ:.+]] : i32
// CHECK: %[[QBEGIN:.+]] = arith.maxsi %{{.+}}, %{{.+}} : i32
// CHECK: scf.for %{{.+}} = %{{.+}} to %[[GROUP:.+]] step %{{.+}} iter_args({{.+}}) -> (f32,
// CHECK: %[[QB:.+]] = arith.index_cast %[[QBEGIN]] : i32 to index
// CHECK: scf.for %{{.+}} = %[[QB]] to %{{.+}} step %{{.+}} iter_args({{.+}}) -> (f32,
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
// CHECK: scf.if %{{.+}} -> (f32,
// CHECK: arith.select
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
// CHECK-SAME: attributes {denormal_fp_math_f32 = "preserve-sign", fa.grid = "ceil(Nq/64),Hq,B", fa.shared_bytes = 65536 : i64,
// CHECK-COUNT-16: nvvm.cp.async.shared.global
// CHECK-NEXT: nvvm.cp.async.commit.group
// CHECK: nvvm.cp.async.wait.group 0
// CHECK-NEXT: nvvm.barrier0
// CHECK: scf.for
// CHECK: nvvm.cp.async.wait.group 1
// CHECK-NEXT: nvvm.barrier0
// CHECK-COUNT-64: nvvm.mma.sync
// CHECK-NOT: nvvm.mma.sync
// CHECK: scf.if %{{.+}} -> (f32,
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
// fragments in registers (read before the loops), tanh.approx and its
// derivative 1 - tanh^2, no masking branch in dkdv (keys past Nk are never
// stored), and the key bound in dq.

// CHECK: module attributes {fa.backward = [{grid = "ceil(Nq/64),Hq,B", name = "fa_backward_dsum_0", shared_bytes = 0 : i64, threads = 128 : i64}, {grid = "ceil(Nk/64),Hkv,B", name = "fa_backward_dkdv_0", shared_bytes = 33280 : i64, threads = 128 : i64}, {grid = "ceil(Nq/64),Hq,B", name = "fa_backward_dq_0", shared_bytes = 32768 : i64, threads = 128 : i64}]
// CHECK: llvm.func @fa_backward_dsum_0(
// CHECK-COUNT-4: llvm.load %{{.+}} {alignment = 16 : i64} : !llvm.ptr<1> -> vector<8xf16>
// CHECK: llvm.func @fa_backward_dkdv_0(
// CHECK: nvvm.barrier0
// CHECK-COUNT-8: nvvm.ldmatrix
// CHECK: scf.for
// CHECK: scf.for
// CHECK-COUNT-32: nvvm.mma.sync {{.*}} : (vector<2xf16>, vector<2xf16>, f32) -> !llvm.struct<(f32, f32, f32, f32)>
// CHECK-NOT: nvvm.mma.sync
// CHECK: llvm.inline_asm "tanh.approx.f32 $0, $1;", "=f,f"
// CHECK-NOT: scf.if
// CHECK: llvm.intr.exp2
// CHECK-COUNT-96: nvvm.mma.sync
// CHECK-NOT: nvvm.mma.sync
// CHECK: scf.yield
// CHECK: llvm.func @fa_backward_dq_0(
// CHECK: scf.for
// CHECK-COUNT-32: nvvm.mma.sync
// CHECK: llvm.inline_asm "tanh.approx.f32 $0, $1;", "=f,f"
// CHECK: scf.if %{{.+}} -> (f32,
// CHECK-COUNT-64: nvvm.mma.sync
// CHECK-NOT: nvvm.mma.sync
// CHECK: scf.yield
func.func @softcap(%q: tensor<2x4x?x64xf16>, %k: tensor<2x4x?x64xf16>, %v: tensor<2x4x?x64xf16>, %o: tensor<2x4x?x64xf16>, %do: tensor<2x4x?x64xf16>, %lse: tensor<2x4x?xf32>) -> (tensor<2x4x?x64xf16>, tensor<2x4x?x64xf16>, tensor<2x4x?x64xf16>) {
  %dq, %dk, %dv = fa.attention_grad %q, %k, %v, %o, %do, %lse {softcap = 30.0 : f32} : tensor<2x4x?x64xf16>, tensor<2x4x?x64xf16>, tensor<2x4x?x64xf16>, tensor<2x4x?x64xf16>, tensor<2x4x?x64xf16>, tensor<2x4x?xf32> -> tensor<2x4x?x64xf16>, tensor<2x4x?x64xf16>, tensor<2x4x?x64xf16>
  return %dq, %dk, %dv : tensor<2x4x?x64xf16>, tensor<2x4x?x64xf16>, tensor<2x4x?x64xf16>
}

// -----

// A forward and a backward in one module share the gpu.module; each op's
// kernels are numbered among ops of its kind.

// CHECK: module attributes {fa.backward = [{{.+}}], fa.kernel = {block_q = 128 : i64, shared_bytes = 24576 : i64, threads = 128 : i64}, gpu.container_module}
// CHECK: gpu.module @fa_kernels
// CHECK: llvm.func @fa_forward_0(
// CHECK: llvm.func @fa_backward_dsum_0(
// CHECK: llvm.func @fa_backward_dkdv_0(
// CHECK: llvm.func @fa_backward_dq_0(
// CHECK: llvm.func @fa_backward_dsum_1(
// CHECK: llvm.func @fa_backward_dkdv_1(
// CHECK: llvm.func @fa_backward_dq_1(
func.func @pair(%q: tensor<?x4x?x32xbf16>, %k: tensor<?x1x?x32xbf16>, %v: tensor<?x1x?x32xbf16>, %do: tensor<?x4x?x32xbf16>) -> (tensor<?x4x?x32xbf16>, tensor<?x1x?x32xbf16>, tensor<?x1x?x32xbf16>, tensor<?x4x?x32xbf16>) {
  %o, %lse = fa.attention %q, %k, %v {window = array<i64: 100, 0>} : tensor<?x4x?x32xbf16>, tensor<?x1x?x32xbf16>, tensor<?x1x?x32xbf16> -> tensor<?x4x?x32xbf16>, tensor<?x4x?xf32>
  %dq, %dk, %dv = fa.attention_grad %q, %k, %v, %o, %do, %lse {window = array<i64: 100, 0>} : tensor<?x4x?x32xbf16>, tensor<?x1x?x32xbf16>, tensor<?x1x?x32xbf16>, tensor<?x4x?x32xbf16>, tensor<?x4x?x32xbf16>, tensor<?x4x?xf32> -> tensor<?x4x?x32xbf16>, tensor<?x1x?x32xbf16>, tensor<?x1x?x32xbf16>
  %dq2, %dk2, %dv2 = fa.attention_grad %q, %k, %v, %o, %do, %lse : tensor<?x4x?x32xbf16>, tensor<?x1x?x32xbf16>, tensor<?x1x?x32xbf16>, tensor<?x4x?x32xbf16>, tensor<?x4x?x32xbf16>, tensor<?x4x?xf32> -> tensor<?x4x?x32xbf16>, tensor<?x1x?x32xbf16>, tensor<?x1x?x32xbf16>
  return %dq, %dk, %dv, %dq2 : tensor<?x4x?x32xbf16>, tensor<?x1x?x32xbf16>, tensor<?x1x?x32xbf16>, tensor<?x4x?x32xbf16>
}
