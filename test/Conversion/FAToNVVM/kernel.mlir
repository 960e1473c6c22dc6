// RUN: fa-opt %s -fa-fuse=chip=sm_90a -fa-async-copy -convert-fa-to-nvvm -split-input-file | FileCheck %s
// The schedule of each kernel: its copies, cp.async groups, waits,
// barriers, mmas and branches in order, runs of one counted.
// RUN: fa-opt %s -fa-fuse=chip=sm_90a -fa-async-copy -convert-fa-to-nvvm -split-input-file | %python %S/Inputs/schedule.py | FileCheck %s --check-prefix=SCHED

// bf16, D = 128, GQA, causal bottom-right, with lse: the kernel fa-fuse
// outlined becomes an llvm.func, and its launch passes the kernel's ABI. One
// m-tile per warp (Q tile of 64 rows), K/V tiles of 128 rows (the default
// at D = 128), Q in registers.

// CHECK: module attributes {gpu.container_module}
// CHECK-LABEL: func.func @causal_gqa
// CHECK: %[[Q:.+]] = bufferization.to_buffer %arg0 read_only
// CHECK: %[[K:.+]] = bufferization.to_buffer %arg1 read_only
// CHECK: %[[V:.+]] = bufferization.to_buffer %arg2 read_only
// CHECK: %[[O:.+]] = memref.cast %{{.+}} : memref<?x8x?x128xbf16> to memref<?x8x?x128xbf16, strided<[?, ?, ?, 1], offset: ?>>
// CHECK: %[[LSE:.+]] = memref.cast %{{.+}} : memref<?x8x?xf32> to memref<?x8x?xf32, strided<[?, ?, 1], offset: ?>>
// CHECK: scf.if
// Each memref is passed as the address of its first element (the aligned
// pointer plus its offset) and its element strides.
// CHECK: %{{.+}}, %[[QOFF:.+]], %[[QSIZE:.+]]:4, %[[QSTRIDE:.+]]:4 = memref.extract_strided_metadata %[[Q]]
// CHECK-NEXT: %[[QADDR:.+]] = memref.extract_aligned_pointer_as_index %[[Q]]
// CHECK-NEXT: %[[QINT:.+]] = arith.index_cast %[[QADDR]] : index to i64
// CHECK-NEXT: %[[QBASE:.+]] = llvm.inttoptr %[[QINT]] : i64 to !llvm.ptr<1>
// CHECK-NEXT: %[[QOFF64:.+]] = arith.index_cast %[[QOFF]] : index to i64
// CHECK-NEXT: %[[QPTR:.+]] = llvm.getelementptr %[[QBASE]][%[[QOFF64]]] : (!llvm.ptr<1>, i64) -> !llvm.ptr<1>, bf16
// CHECK: %{{.+}}, %{{.+}}, %[[KSIZE:.+]]:4, %{{.+}}:4 = memref.extract_strided_metadata %[[K]]
// CHECK: %[[KPTR:.+]] = llvm.getelementptr
// CHECK: memref.extract_strided_metadata %[[V]]
// CHECK: %[[VPTR:.+]] = llvm.getelementptr
// CHECK: memref.extract_strided_metadata %[[O]]
// CHECK: %[[OPTR:.+]] = llvm.getelementptr
// CHECK: memref.extract_strided_metadata %[[LSE]]
// CHECK: %[[LPTR:.+]] = llvm.getelementptr %{{.+}} : (!llvm.ptr<1>, i64) -> !llvm.ptr<1>, f32
// CHECK-NEXT: %[[QS0:.+]] = arith.index_cast %[[QSTRIDE]]#0 : index to i64
// CHECK-NEXT: %[[QS1:.+]] = arith.index_cast %[[QSTRIDE]]#1 : index to i64
// CHECK-NEXT: %[[QS2:.+]] = arith.index_cast %[[QSTRIDE]]#2 : index to i64
// CHECK-COUNT-11: arith.index_cast %{{.+}} : index to i64
// Nq, Nk, Hq / Hkv, Hq, B, and scale * log2(e) = log2(e) / sqrt(128), in
// the order of the kernel's ABI.
// CHECK-NEXT: %[[NQ:.+]] = arith.index_cast %[[QSIZE]]#2 : index to i32
// CHECK-NEXT: %[[NK:.+]] = arith.index_cast %[[KSIZE]]#2 : index to i32
// CHECK-NEXT: %[[G:.+]] = arith.divui %[[QSIZE]]#1, %[[KSIZE]]#1 : index
// CHECK-NEXT: %[[G32:.+]] = arith.index_cast %[[G]] : index to i32
// CHECK-NEXT: %[[HQ:.+]] = arith.index_cast %[[QSIZE]]#1 : index to i32
// CHECK-NEXT: %[[B:.+]] = arith.index_cast %[[QSIZE]]#0 : index to i32
// CHECK-NEXT: %[[SCALE:.+]] = arith.constant 0.127517432 : f32
// The grid of the ABI's rule: (ceil(Nq / 64), Hq, B), y and z folded
// (min(Hq B, 65535), ceil(Hq B / 65535)) where Hq or B exceeds 65535.
// CHECK-NEXT: %[[LIMIT:.+]] = arith.constant 65535 : index
// CHECK-NEXT: %[[BFITS:.+]] = arith.cmpi ule, %[[QSIZE]]#0, %[[LIMIT]] : index
// CHECK-NEXT: %[[HFITS:.+]] = arith.cmpi ule, %[[QSIZE]]#1, %[[LIMIT]] : index
// CHECK-NEXT: %[[FITS:.+]] = arith.andi %[[HFITS]], %[[BFITS]] : i1
// CHECK-NEXT: %[[HB:.+]] = arith.muli %[[QSIZE]]#1, %[[QSIZE]]#0 : index
// CHECK-NEXT: %[[C64:.+]] = arith.constant 64 : index
// CHECK-NEXT: %[[TILES:.+]] = arith.ceildivui %[[QSIZE]]#2, %[[C64]] : index
// CHECK-NEXT: %[[MIN:.+]] = arith.minui %[[HB]], %[[LIMIT]] : index
// CHECK-NEXT: %[[GY:.+]] = arith.select %[[FITS]], %[[QSIZE]]#1, %[[MIN]] : index
// CHECK-NEXT: %[[ROWS:.+]] = arith.ceildivui %[[HB]], %[[LIMIT]] : index
// CHECK-NEXT: %[[GZ:.+]] = arith.select %[[FITS]], %[[QSIZE]]#0, %[[ROWS]] : index
// CHECK-NEXT: %[[SMEM:.+]] = arith.constant 81920 : i32
// CHECK-NEXT: gpu.launch_func @fa_kernels::@fa_forward_0 blocks in (%[[TILES]], %[[GY]], %[[GZ]]) threads in (%c128, %{{.+}}, %{{.+}}) dynamic_shared_memory_size %[[SMEM]] args(%[[QPTR]] : !llvm.ptr<1>, %[[KPTR]] : !llvm.ptr<1>, %[[VPTR]] : !llvm.ptr<1>, %[[OPTR]] : !llvm.ptr<1>, %[[LPTR]] : !llvm.ptr<1>, %[[QS0]] : i64, %[[QS1]] : i64, %[[QS2]] : i64,
// CHECK-SAME: : i64, %[[NQ]] : i32, %[[NK]] : i32, %[[G32]] : i32, %[[HQ]] : i32, %[[B]] : i32, %[[SCALE]] : f32)
// CHECK: gpu.module @fa_kernels [#nvvm.target<O = 3, chip = "sm_90a", features = "+ptx80">]
// CHECK-NEXT: llvm.mlir.global external @fa_smem() {addr_space = 3 : i32, alignment = 1024 : i64} : !llvm.array<0 x i8>
// CHECK-NEXT: llvm.func @fa_forward_0(%{{.+}}: !llvm.ptr<1>, %{{.+}}: !llvm.ptr<1>, %{{.+}}: !llvm.ptr<1>, %{{.+}}: !llvm.ptr<1>, %{{.+}}: !llvm.ptr<1>,
// CHECK-SAME: %[[NQ:[^:]+]]: i32, %[[NK:[^:]+]]: i32, %[[G:[^:]+]]: i32, %[[HQ:[^:]+]]: i32, %[[B:[^:]+]]: i32, %[[SCALE:[^:]+]]: f32)
// Its launch, as convert-fa-to-nvvm attaches it (#fa.kernel_abi: what each
// parameter is, the grid rule, threads and shared memory).
// CHECK-SAME: attributes {denormal_fp_math_f32 = "preserve-sign", fa.kernel_abi = #fa.kernel_abi<grid = [tiles(Nq, 64), Hq, B], threads = 128, shared = 81920, params = [q : ptr, k : ptr, v : ptr, o : ptr, lse : ptr, stride(q, 0) : i64, stride(q, 1) : i64, stride(q, 2) : i64, stride(k, 0) : i64, stride(k, 1) : i64, stride(k, 2) : i64, stride(v, 0) : i64, stride(v, 1) : i64, stride(v, 2) : i64, stride(o, 0) : i64, stride(o, 1) : i64, stride(o, 2) : i64, stride(lse, 0) : i64, stride(lse, 1) : i64, Nq : i32, Nk : i32, group : i32, Hq : i32, B : i32, scale_log2 : f32]>, gpu.kernel, nvvm.kernel, nvvm.maxnreg = 255 : i32, nvvm.maxntid = array<i32: 128, 1, 1>}
// Where the CTA is: the last row of a folded grid (linear = ctaid.z *
// nctaid.y + ctaid.y >= Hq B) returns at once; then unfolded (nctaid.y ==
// Hq: a uniform branch) head and batch are ctaid.y and ctaid.z, folded the
// linear index's remainder and quotient by Hq.
// CHECK: %[[CTA:.+]] = nvvm.read.ptx.sreg.ctaid.x : i32
// CHECK-NEXT: %[[CY:.+]] = nvvm.read.ptx.sreg.ctaid.y : i32
// CHECK-NEXT: %[[CZ:.+]] = nvvm.read.ptx.sreg.ctaid.z : i32
// CHECK-NEXT: %[[NY:.+]] = nvvm.read.ptx.sreg.nctaid.y : i32
// CHECK-NEXT: %[[ZNY:.+]] = arith.muli %[[CZ]], %[[NY]] : i32
// CHECK-NEXT: %[[LIN:.+]] = arith.addi %[[ZNY]], %[[CY]] : i32
// CHECK-NEXT: %[[HQB:.+]] = arith.muli %[[HQ]], %[[B]] : i32
// CHECK-NEXT: %[[PAST:.+]] = arith.cmpi uge, %[[LIN]], %[[HQB]] : i32
// CHECK-NEXT: llvm.cond_br %[[PAST]], ^[[EXIT:.+]], ^[[BODY:bb[0-9]+]]
// CHECK-NEXT: ^[[EXIT]]:
// CHECK-NEXT: llvm.return
// CHECK-NEXT: ^[[BODY]]:
// CHECK-NEXT: %[[Y:.+]] = nvvm.read.ptx.sreg.ctaid.y : i32
// CHECK-NEXT: %[[Z:.+]] = nvvm.read.ptx.sreg.ctaid.z : i32
// CHECK-NEXT: %[[NY0:.+]] = nvvm.read.ptx.sreg.nctaid.y : i32
// CHECK-NEXT: %[[NY1:.+]] = llvm.inline_asm has_side_effects "mov.b32 $0, $1;", "=r,r" %[[NY0]] : (i32) -> i32
// CHECK-NEXT: %[[UNFOLDED:.+]] = arith.cmpi eq, %[[NY1]], %[[HQ]] : i32
// CHECK-NEXT: %[[PLACE:.+]]:2 = scf.if %[[UNFOLDED]] -> (i32, i32) {
// CHECK-NEXT: scf.yield %[[Y]], %[[Z]] : i32, i32
// CHECK-NEXT: } else {
// CHECK-NEXT: %[[ZNY1:.+]] = arith.muli %[[Z]], %[[NY1]] : i32
// CHECK-NEXT: %[[LIN1:.+]] = arith.addi %[[ZNY1]], %[[Y]] : i32
// CHECK-NEXT: %[[HEAD:.+]] = arith.remui %[[LIN1]], %[[HQ]] : i32
// CHECK-NEXT: %[[BATCH:.+]] = arith.divui %[[LIN1]], %[[HQ]] : i32
// CHECK-NEXT: scf.yield %[[HEAD]], %[[BATCH]] : i32, i32
// CHECK-NEXT: }
// Causal: the grid runs its Q tiles last one first (the last have the
// most keys to visit), tile = nctaid.x - 1 - ctaid.x.
// CHECK: %[[TILES:.+]] = nvvm.read.ptx.sreg.nctaid.x : i32
// CHECK-NEXT: %[[ONE:.+]] = arith.constant 1 : i32
// CHECK-NEXT: %[[LAST:.+]] = arith.subi %[[TILES]], %[[ONE]] : i32
// CHECK-NEXT: %[[TILE:.+]] = arith.subi %[[LAST]], %[[CTA]] : i32
// CHECK-NEXT: %[[BQ:.+]] = arith.constant 64 : i32
// CHECK-NEXT: %[[Q0:.+]] = arith.muli %[[TILE]], %[[BQ]] : i32
// Causal bottom-right: the diagonal's offset is Nk - Nq, and the K/V loop
// runs over [0, max(0, min(Nk, q0 + 64 + Nk - Nq))).
// CHECK: %[[BEGIN:.+]] = arith.constant 0 : i32
// CHECK-NEXT: %[[C64:.+]] = arith.constant 64 : i32
// CHECK-NEXT: %[[QEND:.+]] = arith.addi %[[Q0]], %[[C64]] : i32
// CHECK-NEXT: %[[DIAG:.+]] = arith.subi %[[NK]], %[[NQ]] : i32
// CHECK-NEXT: %[[LIMIT:.+]] = arith.addi %[[QEND]], %[[DIAG]] : i32
// CHECK-NEXT: %[[MIN:.+]] = arith.minsi %[[NK]], %[[LIMIT]] : i32
// CHECK-NEXT: %[[C0:.+]] = arith.constant 0 : i32
// CHECK-NEXT: %[[END:.+]] = arith.maxsi %[[C0]], %[[MIN]] : i32
// The Q tile: 64 rows x 16 chunks of 16 bytes over 128 threads, one group;
// the first K tile, if the loop has one, the next.
// CHECK-COUNT-8: nvvm.cp.async.shared.global %{{.+}}, %{{.+}}, 16, cache =  cg, %{{.+}} : !llvm.ptr<3>, !llvm.ptr<1>, i32
// CHECK-NEXT: nvvm.cp.async.commit.group
// CHECK-NEXT: %[[ANY:.+]] = arith.cmpi slt, %[[BEGIN]], %[[END]] : i32
// CHECK-NEXT: scf.if %[[ANY]] {
// CHECK-COUNT-16: nvvm.cp.async.shared.global
// CHECK: nvvm.cp.async.commit.group
// Q has landed (K need not have): its fragments, one x4 ldmatrix per 16
// columns.
// CHECK: nvvm.cp.async.wait.group 1
// CHECK-NEXT: nvvm.barrier0
// CHECK-COUNT-8: nvvm.ldmatrix %{{.+}} {eltType = #nvvm.ld_st_matrix_elt_type<b16>, layout = #nvvm.mma_layout<row>, num = 4 : i32, shape = #nvvm.ld_st_matrix_shape<m = 8, n = 8>}
// The thread's first row: q0 + 16 * warp + lane / 4.
// CHECK: %[[QW:.+]] = arith.addi %[[Q0]], %{{.+}} : i32
// CHECK-NEXT: %[[ROW:.+]] = arith.addi %[[QW]], %{{.+}} : i32
// The loop over the visible K/V tiles.
// CHECK: %[[ENDIDX:.+]] = arith.index_cast %[[END]] : i32 to index
// CHECK-NEXT: %[[BEGINIDX:.+]] = arith.index_cast %[[BEGIN]] : i32 to index
// CHECK-NEXT: scf.for %{{.+}} = %[[BEGINIDX]] to %[[ENDIDX]] step %c128
// K(n) has landed and everyone is done with V(n - 1): V(n) is issued
// before S.
// CHECK-NEXT: %[[KV0:.+]] = arith.index_cast
// CHECK-NEXT: nvvm.cp.async.wait.group 0
// CHECK-NEXT: nvvm.barrier0
// CHECK-COUNT-16: nvvm.cp.async.shared.global
// CHECK: nvvm.cp.async.commit.group
// S = Q K^T: 8 k-steps x 16 n-tiles of m16n8k16 in bf16.
// CHECK-COUNT-128: nvvm.mma.sync A[{{.+}}] B[{{.+}}] C[{{.+}}] {layoutA = #nvvm.mma_layout<row>, layoutB = #nvvm.mma_layout<col>, multiplicandAPtxType = #nvvm.mma_type<bf16>, multiplicandBPtxType = #nvvm.mma_type<bf16>, shape = #nvvm.shape<m = 16, n = 8, k = 16>} : (i32, i32, f32) -> !llvm.struct<(f32, f32, f32, f32)>
// V(n) has landed and everyone is done with K(n): K(n + 1), if the loop
// goes on, is issued before the softmax.
// CHECK: nvvm.cp.async.wait.group 0
// CHECK-NEXT: nvvm.barrier0
// CHECK-NEXT: %[[C128:.+]] = arith.constant 128 : i32
// CHECK-NEXT: %[[NEXT:.+]] = arith.addi %[[KV0]], %[[C128]] : i32
// CHECK-NEXT: %[[MORE:.+]] = arith.cmpi slt, %[[NEXT]], %[[END]] : i32
// CHECK-NEXT: scf.if %[[MORE]] {
// CHECK-COUNT-16: nvvm.cp.async.shared.global
// Masks only on tiles that cross Nk (kv0 + 128 > Nk) or the diagonal
// (kv0 + 127 > q0 + Nk - Nq): one uniform branch yields the 64 scores of
// a thread, masked or as they are.
// CHECK: nvvm.cp.async.commit.group
// CHECK-NEXT: %[[C128B:.+]] = arith.constant 128 : i32
// CHECK-NEXT: %[[TEND:.+]] = arith.addi %[[KV0]], %[[C128B]] : i32
// CHECK-NEXT: %[[PASTNK:.+]] = arith.cmpi sgt, %[[TEND]], %[[NK]] : i32
// CHECK: %[[FIRSTLIM:.+]] = arith.addi %[[Q0]], %[[DIAG]] : i32
// CHECK: %[[TLAST:.+]] = arith.subi %[[TEND]], %{{.+}} : i32
// CHECK-NEXT: %[[CROSS:.+]] = arith.cmpi sgt, %[[TLAST]], %[[FIRSTLIM]] : i32
// CHECK-NEXT: %[[NEED:.+]] = arith.ori %[[PASTNK]], %[[CROSS]] : i1
// CHECK-NEXT: %[[S:.+]]:64 = scf.if %[[NEED]] -> (f32, f32,
// The first score: kept if key < Nk and key <= row + Nk - Nq, else -inf.
// CHECK: %[[KEY:.+]] = arith.addi %[[KV0]], %{{.+}} : i32
// CHECK-NEXT: %[[INNK:.+]] = arith.cmpi slt, %[[KEY]], %[[NK]] : i32
// CHECK-NEXT: %[[LIM:.+]] = arith.addi %[[ROW]], %[[DIAG]] : i32
// CHECK-NEXT: %[[SEEN:.+]] = arith.cmpi sle, %[[KEY]], %[[LIM]] : i32
// CHECK-NEXT: %[[KEEP:.+]] = arith.andi %[[INNK]], %[[SEEN]] : i1
// CHECK-NEXT: %[[NEGINF:.+]] = arith.constant 0xFF800000 : f32
// CHECK-NEXT: arith.select %[[KEEP]], %{{.+}}, %[[NEGINF]] : f32
// CHECK: } else {
// Row max across the quad, then p = exp2(s * scale * log2(e) - m) as an fma.
// CHECK: nvvm.shfl.sync bfly
// CHECK: math.fma %[[S]]#0, %[[SCALE]], %{{.+}} : f32
// CHECK-NEXT: llvm.intr.exp2
// V is read transposed.
// CHECK: nvvm.ldmatrix %{{.+}} {eltType = #nvvm.ld_st_matrix_elt_type<b16>, layout = #nvvm.mma_layout<col>, num = 4 : i32
// CHECK-COUNT-128: nvvm.mma.sync
// CHECK: scf.yield
// lse = (m + lg2 l) * ln 2 by the first lane of each quad.
// CHECK: llvm.inline_asm "lg2.approx.f32 $0, $1;", "=f,f"
// CHECK: llvm.return

// The whole schedule: two waits and two barriers per K/V tile.
// SCHED:      llvm.func @fa_forward_0
// SCHED-NEXT:  1 place
// SCHED-NEXT:  8 nvvm.cp.async.shared.global
// SCHED-NEXT:  1 nvvm.cp.async.commit.group
// SCHED-NEXT:  1 scf.if
// SCHED-NEXT: 16 nvvm.cp.async.shared.global
// SCHED-NEXT:  1 nvvm.cp.async.commit.group
// SCHED-NEXT:  1 nvvm.cp.async.wait.group 1
// SCHED-NEXT:  1 nvvm.barrier0
// SCHED-NEXT:  1 scf.for
// SCHED-NEXT:  1 nvvm.cp.async.wait.group 0
// SCHED-NEXT:  1 nvvm.barrier0
// SCHED-NEXT: 16 nvvm.cp.async.shared.global
// SCHED-NEXT:  1 nvvm.cp.async.commit.group
// SCHED-NEXT: 128 nvvm.mma.sync
// SCHED-NEXT:  1 nvvm.cp.async.wait.group 0
// SCHED-NEXT:  1 nvvm.barrier0
// SCHED-NEXT:  1 scf.if
// SCHED-NEXT: 16 nvvm.cp.async.shared.global
// SCHED-NEXT:  1 nvvm.cp.async.commit.group
// SCHED-NEXT:  1 scf.if
// SCHED-NEXT:  1 scf.yield
// SCHED-NEXT:  1 } else
// SCHED-NEXT:  1 scf.yield
// SCHED-NEXT: 128 nvvm.mma.sync
// SCHED-NEXT:  1 scf.yield
// SCHED-NEXT:  1 place
// SCHED-NEXT:  4 scf.if
func.func @causal_gqa(%q: tensor<?x8x?x128xbf16>, %k: tensor<?x2x?x128xbf16>, %v: tensor<?x2x?x128xbf16>) -> (tensor<?x8x?x128xbf16>, tensor<?x8x?xf32>) {
  %o, %lse = fa.attention %q, %k, %v {causal = #fa.causal<bottom_right>} : tensor<?x8x?x128xbf16>, tensor<?x2x?x128xbf16>, tensor<?x2x?x128xbf16> -> tensor<?x8x?x128xbf16>, tensor<?x8x?xf32>
  return %o, %lse : tensor<?x8x?x128xbf16>, tensor<?x8x?xf32>
}


// -----

// f16, D = 64, softcap: two 16-row m-tiles per warp (a Q tile of 128 rows,
// each K/V fragment feeding two mmas), K and V double-buffered (the default
// at D <= 64: kv-stages=2), f16 operands as vector<2xf16>, tanh for
// the cap. Shared memory: Q (16 KB), two stages of K and V (4 x 8 KB).

// CHECK: module attributes {gpu.container_module}
// CHECK: #nvvm.target<O = 3, chip = "sm_90a", features = "+ptx80">
// CHECK: llvm.func @fa_forward_0(
// CHECK-SAME: %{{[^:]+}}: i32, %[[NK2:[^:]+]]: i32, %{{[^:]+}}: i32, %{{[^:]+}}: i32, %{{[^:]+}}: i32, %{{[^:]+}}: f32)
// CHECK-SAME: fa.kernel_abi = #fa.kernel_abi<grid = [tiles(Nq, 128), Hq, B], threads = 128, shared = 49152,
// Without a causal mask the tiles run in grid order.
// CHECK-NOT: nctaid.x
// The Q tile: 128 rows x 8 chunks over 128 threads; Q fragments for both
// m-tiles (4 k-steps each).
// CHECK-COUNT-8: nvvm.cp.async.shared.global
// CHECK: nvvm.cp.async.wait.group 1
// CHECK-COUNT-8: nvvm.ldmatrix
// CHECK: scf.for
// CHECK: nvvm.mma.sync {{.*}} {layoutA = #nvvm.mma_layout<row>, layoutB = #nvvm.mma_layout<col>, shape = #nvvm.shape<m = 16, n = 8, k = 16>} : (vector<2xf16>, vector<2xf16>, f32) -> !llvm.struct<(f32, f32, f32, f32)>
// Softcap 30 on a score (D = 64: scale = 0.125), into the log2 domain:
// tanh(s * 0.125 / 30) * (30 * log2(e)).
// CHECK: %[[INV:.+]] = arith.constant 0.00416666688 : f32
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
// CHECK-NEXT: %[[CAP:.+]] = arith.constant 43.2808495 : f32
// CHECK-NEXT: %[[S0:.+]] = arith.mulf %[[TH]], %[[CAP]] : f32
// The capped score is what the key-bound mask selects (no causal term)
// and what the unmasked branch yields.
// CHECK: %[[S:.+]]:64 = scf.if
// CHECK: %[[INNK:.+]] = arith.cmpi slt, %{{.+}}, %[[NK2]] : i32
// CHECK-NEXT: %[[NEGINF:.+]] = arith.constant 0xFF800000 : f32
// CHECK-NEXT: arith.select %[[INNK]], %[[S0]], %[[NEGINF]] : f32
// CHECK: } else {
// CHECK-NEXT: scf.yield %[[S0]],
// Already in the log2 domain: p = exp2(s * 1 - m).
// CHECK: %[[ONE:.+]] = arith.constant 1.000000e+00 : f32
// CHECK: math.fma %[[S]]#0, %[[ONE]], %{{.+}} : f32
// CHECK-NOT: lg2.approx

// Two stages: the first tile's K and V (8 copies) as one group after Q's;
// per tile one wait and one barrier, the next tile's K and V, then S (4
// k-steps x 8 n-tiles x 2 m-tiles), the softmax (every tile may cross Nk:
// no causal bound) and P V (4 k-steps x 8 n-tiles x 2 m-tiles).
// SCHED:      llvm.func @fa_forward_0
// SCHED-NEXT:  1 place
// SCHED-NEXT:  8 nvvm.cp.async.shared.global
// SCHED-NEXT:  1 nvvm.cp.async.commit.group
// SCHED-NEXT:  1 scf.if
// SCHED-NEXT:  8 nvvm.cp.async.shared.global
// SCHED-NEXT:  1 nvvm.cp.async.commit.group
// SCHED-NEXT:  1 nvvm.cp.async.wait.group 1
// SCHED-NEXT:  1 nvvm.barrier0
// SCHED-NEXT:  1 scf.for
// SCHED-NEXT:  1 nvvm.cp.async.wait.group 0
// SCHED-NEXT:  1 nvvm.barrier0
// SCHED-NEXT:  1 scf.if
// SCHED-NEXT:  8 nvvm.cp.async.shared.global
// SCHED-NEXT:  1 nvvm.cp.async.commit.group
// SCHED-NEXT: 64 nvvm.mma.sync
// SCHED-NEXT:  1 scf.if
// SCHED-NEXT:  1 scf.yield
// SCHED-NEXT:  1 } else
// SCHED-NEXT:  1 scf.yield
// SCHED-NEXT: 64 nvvm.mma.sync
// SCHED-NEXT:  1 scf.yield
// SCHED-NEXT:  1 place
// SCHED-NEXT:  4 scf.if
func.func @softcap(%q: tensor<2x4x?x64xf16>, %k: tensor<2x4x?x64xf16>, %v: tensor<2x4x?x64xf16>) -> tensor<2x4x?x64xf16> {
  %o = fa.attention %q, %k, %v {softcap = 30.0 : f32} : tensor<2x4x?x64xf16>, tensor<2x4x?x64xf16>, tensor<2x4x?x64xf16> -> tensor<2x4x?x64xf16>
  return %o : tensor<2x4x?x64xf16>
}
