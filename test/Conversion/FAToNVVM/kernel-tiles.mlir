// The forward kernel's tile options (block-q, block-kv) and D = 256.
// RUN: split-file %s %t
// RUN: fa-opt %t/d128.mlir "-fa-fuse=chip=sm_90a block-q=128 block-kv=32" -fa-async-copy -convert-fa-to-nvvm | FileCheck %s --check-prefix=Q128
// RUN: fa-opt %t/d128.mlir "-fa-fuse=chip=sm_90a block-q=128 block-kv=32" -fa-async-copy -convert-fa-to-nvvm | %python %S/Inputs/schedule.py | FileCheck %s --check-prefix=Q128-SCHED
// RUN: fa-opt %t/d256.mlir -fa-fuse=chip=sm_90a -fa-async-copy -convert-fa-to-nvvm | FileCheck %s --check-prefix=D256
// RUN: fa-opt %t/d256.mlir -fa-fuse=chip=sm_90a -fa-async-copy -convert-fa-to-nvvm | %python %S/Inputs/schedule.py | FileCheck %s --check-prefix=D256-SCHED
// The pipeline passes the options on.
// RUN: fa-opt %t/d128.mlir "-fa-pipeline-cuda=chip=sm_80 block-q=128 block-kv=32" -mlir-print-ir-after=convert-fa-to-nvvm 2>&1 >/dev/null | FileCheck %s --check-prefix=PIPE

// D = 128 with two m-tiles per warp (a Q tile of 128 rows) and K/V tiles
// of 32 rows: 128 O and 32 S registers per thread, so the Q fragments (64
// registers) are read from shared memory per k-step, not kept.
// Q128: module attributes {gpu.container_module}
// Q128: llvm.func @fa_forward_0(
// Q128-SAME: %[[NQ:[^:]+]]: i32, %[[NK:[^:]+]]: i32, %{{[^:]+}}: i32, %{{[^:]+}}: i32, %{{[^:]+}}: i32, %{{[^:]+}}: f32)
// Q128-SAME: fa.kernel_abi = #fa.kernel_abi<grid = [tiles(Nq, 128), Hq, B], threads = 128, shared = 49152,
// Causal top-left: no offset (Nk - Nq is computed but unused); the K/V
// loop runs over [0, max(0, min(Nk, q0 + 128))).
// Q128: nvvm.read.ptx.sreg.nctaid.x
// Q128: %[[Q0:.+]] = arith.muli %{{.+}}, %c{{[0-9]+}}_i32{{[_0-9]*}} : i32
// Q128: %[[QEND:.+]] = arith.addi %[[Q0]], %{{.+}} : i32
// Q128-NEXT: %{{.+}} = arith.subi %[[NK]], %[[NQ]] : i32
// Q128-NEXT: %[[MIN:.+]] = arith.minsi %[[NK]], %[[QEND]] : i32
// Q128-NEXT: %[[C0:.+]] = arith.constant 0 : i32
// Q128-NEXT: %[[END:.+]] = arith.maxsi %[[C0]], %[[MIN]] : i32
// No wait for Q before the loop: its first wait covers Q and K.
// Q128-NOT: nvvm.cp.async.wait.group
// Q128-NOT: nvvm.ldmatrix
// The thread's first row (after Q's and the first K tile's copies):
// q0 + 16 * warp + lane / 4.
// Q128-COUNT-2: nvvm.cp.async.commit.group
// Q128-NOT: nvvm.cp.async.wait.group
// Q128-NOT: nvvm.ldmatrix
// Q128: %[[QW:.+]] = arith.addi %[[Q0]], %{{.+}} : i32
// Q128-NEXT: %[[ROW:.+]] = arith.addi %[[QW]], %{{.+}} : i32
// Q128-NOT: nvvm.cp.async.wait.group
// Q128-NOT: nvvm.ldmatrix
// Q128: %[[ENDIDX:.+]] = arith.index_cast %[[END]] : i32 to index
// Q128-NEXT: %[[BEGINIDX:.+]] = arith.index_cast %{{.+}} : i32 to index
// Q128-NEXT: scf.for %{{.+}} = %[[BEGINIDX]] to %[[ENDIDX]] step %c32
// Q128-NEXT: %[[KV0:.+]] = arith.index_cast %{{.+}} : index to i32
// Q128-NEXT: nvvm.cp.async.wait.group 0
// Q128-NEXT: nvvm.barrier0
// Each k-step of S: the Q fragments of both m-tiles, then per pair of
// n-tiles one K fragment feeding four mmas.
// Q128: nvvm.cp.async.commit.group
// Q128: nvvm.ldmatrix %{{.+}} {eltType = #nvvm.ld_st_matrix_elt_type<b16>, layout = #nvvm.mma_layout<row>
// Q128: nvvm.ldmatrix %{{.+}} {eltType = #nvvm.ld_st_matrix_elt_type<b16>, layout = #nvvm.mma_layout<row>
// Q128: nvvm.ldmatrix %{{.+}} {eltType = #nvvm.ld_st_matrix_elt_type<b16>, layout = #nvvm.mma_layout<row>
// Q128-COUNT-4: nvvm.mma.sync
// Q128: nvvm.ldmatrix %{{.+}} {eltType = #nvvm.ld_st_matrix_elt_type<b16>, layout = #nvvm.mma_layout<row>
// Q128-COUNT-4: nvvm.mma.sync
// Q128-NEXT: %{{.+}} = llvm.extractvalue
// Q128-NOT: nvvm.mma.sync
// Q128: nvvm.ldmatrix
// The top-left causal boundary and Nk are checked per 128 x 32 tile:
// masks if kv0 + 32 > Nk or kv0 + 31 > q0 (no offset).
// Q128: nvvm.cp.async.commit.group
// Q128-NEXT: %[[C32:.+]] = arith.constant 32 : i32
// Q128-NEXT: %[[TEND:.+]] = arith.addi %[[KV0]], %[[C32]] : i32
// Q128-NEXT: %[[PASTNK:.+]] = arith.cmpi sgt, %[[TEND]], %[[NK]] : i32
// Q128: %[[TLAST:.+]] = arith.subi %[[TEND]], %{{.+}} : i32
// Q128-NEXT: %[[CROSS:.+]] = arith.cmpi sgt, %[[TLAST]], %[[Q0]] : i32
// Q128-NEXT: %[[NEED:.+]] = arith.ori %[[PASTNK]], %[[CROSS]] : i1
// Q128-NEXT: scf.if %[[NEED]] -> (f32,
// The first score: kept if key < Nk and key <= row, else -inf.
// Q128: %[[KEY:.+]] = arith.addi %[[KV0]], %{{.+}} : i32
// Q128-NEXT: %[[INNK:.+]] = arith.cmpi slt, %[[KEY]], %[[NK]] : i32
// Q128-NEXT: %[[SEEN:.+]] = arith.cmpi sle, %[[KEY]], %[[ROW]] : i32
// Q128-NEXT: %[[KEEP:.+]] = arith.andi %[[INNK]], %[[SEEN]] : i1
// Q128-NEXT: %[[NEGINF:.+]] = arith.constant 0xFF800000 : f32
// Q128-NEXT: arith.select %[[KEEP]], %{{.+}}, %[[NEGINF]] : f32

// Q128-SCHED:      llvm.func @fa_forward_0
// Q128-SCHED-NEXT:  1 place
// Q128-SCHED-NEXT: 16 nvvm.cp.async.shared.global
// Q128-SCHED-NEXT:  1 nvvm.cp.async.commit.group
// Q128-SCHED-NEXT:  1 scf.if
// Q128-SCHED-NEXT:  4 nvvm.cp.async.shared.global
// Q128-SCHED-NEXT:  1 nvvm.cp.async.commit.group
// Q128-SCHED-NEXT:  1 scf.for
// Q128-SCHED-NEXT:  1 nvvm.cp.async.wait.group 0
// Q128-SCHED-NEXT:  1 nvvm.barrier0
// Q128-SCHED-NEXT:  4 nvvm.cp.async.shared.global
// Q128-SCHED-NEXT:  1 nvvm.cp.async.commit.group
// Q128-SCHED-NEXT: 64 nvvm.mma.sync
// Q128-SCHED-NEXT:  1 nvvm.cp.async.wait.group 0
// Q128-SCHED-NEXT:  1 nvvm.barrier0
// Q128-SCHED-NEXT:  1 scf.if
// Q128-SCHED-NEXT:  4 nvvm.cp.async.shared.global
// Q128-SCHED-NEXT:  1 nvvm.cp.async.commit.group
// Q128-SCHED-NEXT:  1 scf.if
// Q128-SCHED-NEXT:  1 scf.yield
// Q128-SCHED-NEXT:  1 } else
// Q128-SCHED-NEXT:  1 scf.yield
// Q128-SCHED-NEXT: 64 nvvm.mma.sync
// Q128-SCHED-NEXT:  1 scf.yield
// Q128-SCHED-NEXT:  1 place
// Q128-SCHED-NEXT:  4 scf.if

// PIPE: llvm.func @fa_forward_0(
// PIPE-SAME: fa.kernel_abi = #fa.kernel_abi<grid = [tiles(Nq, 128), Hq, B], threads = 128, shared = 49152,


//--- d128.mlir
func.func @f(%q: tensor<?x8x?x128xbf16>, %k: tensor<?x2x?x128xbf16>, %v: tensor<?x2x?x128xbf16>) -> tensor<?x8x?x128xbf16> {
  %o = fa.attention %q, %k, %v {causal = #fa.causal<top_left>} : tensor<?x8x?x128xbf16>, tensor<?x2x?x128xbf16>, tensor<?x2x?x128xbf16> -> tensor<?x8x?x128xbf16>
  return %o : tensor<?x8x?x128xbf16>
}

// D = 256 by default: one m-tile (128 O registers per thread), K/V tiles of
// 64 rows, Q read per k-step; 96 KiB of dynamic shared memory (the runtime
// raises the kernel's limit past 48 KiB; two CTAs still fit an SM).
// D256: module attributes {gpu.container_module}
// D256: llvm.func @fa_forward_0(
// D256-SAME: %[[NQ:[^:]+]]: i32, %[[NK:[^:]+]]: i32, %{{[^:]+}}: i32, %{{[^:]+}}: i32, %{{[^:]+}}: i32, %{{[^:]+}}: f32)
// D256-SAME: fa.kernel_abi = #fa.kernel_abi<grid = [tiles(Nq, 64), Hq, B], threads = 128, shared = 98304,
// Causal bottom-right: the diagonal's offset is Nk - Nq, and the K/V loop
// runs over [0, max(0, min(Nk, q0 + 64 + Nk - Nq))).
// D256: nvvm.read.ptx.sreg.nctaid.x
// D256: %[[Q0:.+]] = arith.muli %{{.+}}, %c{{[0-9]+}}_i32{{[_0-9]*}} : i32
// D256: %[[QEND:.+]] = arith.addi %[[Q0]], %{{.+}} : i32
// D256-NEXT: %[[DIAG:.+]] = arith.subi %[[NK]], %[[NQ]] : i32
// D256-NEXT: %[[LIMIT:.+]] = arith.addi %[[QEND]], %[[DIAG]] : i32
// D256-NEXT: %[[MIN:.+]] = arith.minsi %[[NK]], %[[LIMIT]] : i32
// D256-NEXT: %[[C0:.+]] = arith.constant 0 : i32
// D256-NEXT: %[[END:.+]] = arith.maxsi %[[C0]], %[[MIN]] : i32
// The Q tile: 64 rows x 32 chunks over 128 threads.
// D256-COUNT-16: nvvm.cp.async.shared.global
// D256-NOT: nvvm.ldmatrix
// The thread's first row (after Q's and the first K tile's copies):
// q0 + 16 * warp + lane / 4.
// D256-COUNT-2: nvvm.cp.async.commit.group
// D256-NOT: nvvm.ldmatrix
// D256: %[[QW:.+]] = arith.addi %[[Q0]], %{{.+}} : i32
// D256-NEXT: %[[ROW:.+]] = arith.addi %[[QW]], %{{.+}} : i32
// D256-NOT: nvvm.ldmatrix
// D256: %[[ENDIDX:.+]] = arith.index_cast %[[END]] : i32 to index
// D256-NEXT: %[[BEGINIDX:.+]] = arith.index_cast %{{.+}} : i32 to index
// D256-NEXT: scf.for %{{.+}} = %[[BEGINIDX]] to %[[ENDIDX]] step %c64
// D256-NEXT: %[[KV0:.+]] = arith.index_cast %{{.+}} : index to i32
// S: 16 k-steps, each one Q fragment and four K fragments (8 n-tiles).
// D256: nvvm.ldmatrix %{{.+}} {eltType = #nvvm.ld_st_matrix_elt_type<b16>, layout = #nvvm.mma_layout<row>
// D256: nvvm.ldmatrix %{{.+}} {eltType = #nvvm.ld_st_matrix_elt_type<b16>, layout = #nvvm.mma_layout<row>
// D256-COUNT-2: nvvm.mma.sync {{.*}} : (vector<2xf16>, vector<2xf16>, f32) -> !llvm.struct<(f32, f32, f32, f32)>
// D256: nvvm.ldmatrix %{{.+}} {eltType = #nvvm.ld_st_matrix_elt_type<b16>, layout = #nvvm.mma_layout<row>
// D256-COUNT-2: nvvm.mma.sync
// Masks only on tiles that cross Nk or the diagonal
// (kv0 + 63 > q0 + Nk - Nq).
// D256: nvvm.cp.async.commit.group
// D256-NEXT: %[[C64:.+]] = arith.constant 64 : i32
// D256-NEXT: %[[TEND:.+]] = arith.addi %[[KV0]], %[[C64]] : i32
// D256-NEXT: %[[PASTNK:.+]] = arith.cmpi sgt, %[[TEND]], %[[NK]] : i32
// D256: %[[FIRSTLIM:.+]] = arith.addi %[[Q0]], %[[DIAG]] : i32
// D256: %[[TLAST:.+]] = arith.subi %[[TEND]], %{{.+}} : i32
// D256-NEXT: %[[CROSS:.+]] = arith.cmpi sgt, %[[TLAST]], %[[FIRSTLIM]] : i32
// D256-NEXT: %[[NEED:.+]] = arith.ori %[[PASTNK]], %[[CROSS]] : i1
// D256-NEXT: scf.if %[[NEED]] -> (f32,
// The first score: kept if key < Nk and key <= row + Nk - Nq, else -inf.
// D256: %[[KEY:.+]] = arith.addi %[[KV0]], %{{.+}} : i32
// D256-NEXT: %[[INNK:.+]] = arith.cmpi slt, %[[KEY]], %[[NK]] : i32
// D256-NEXT: %[[LIM:.+]] = arith.addi %[[ROW]], %[[DIAG]] : i32
// D256-NEXT: %[[SEEN:.+]] = arith.cmpi sle, %[[KEY]], %[[LIM]] : i32
// D256-NEXT: %[[KEEP:.+]] = arith.andi %[[INNK]], %[[SEEN]] : i1
// D256-NEXT: %[[NEGINF:.+]] = arith.constant 0xFF800000 : f32
// D256-NEXT: arith.select %[[KEEP]], %{{.+}}, %[[NEGINF]] : f32
// P V: 4 k-steps x 32 n-tiles, V transposed.
// D256: nvvm.ldmatrix %{{.+}} {eltType = #nvvm.ld_st_matrix_elt_type<b16>, layout = #nvvm.mma_layout<col>
// D256: scf.yield
// D256: llvm.inline_asm "lg2.approx.f32 $0, $1;", "=f,f"

// D256-SCHED:      llvm.func @fa_forward_0
// D256-SCHED-NEXT:  1 place
// D256-SCHED-NEXT: 16 nvvm.cp.async.shared.global
// D256-SCHED-NEXT:  1 nvvm.cp.async.commit.group
// D256-SCHED-NEXT:  1 scf.if
// D256-SCHED-NEXT: 16 nvvm.cp.async.shared.global
// D256-SCHED-NEXT:  1 nvvm.cp.async.commit.group
// D256-SCHED-NEXT:  1 scf.for
// D256-SCHED-NEXT:  1 nvvm.cp.async.wait.group 0
// D256-SCHED-NEXT:  1 nvvm.barrier0
// D256-SCHED-NEXT: 16 nvvm.cp.async.shared.global
// D256-SCHED-NEXT:  1 nvvm.cp.async.commit.group
// D256-SCHED-NEXT: 128 nvvm.mma.sync
// D256-SCHED-NEXT:  1 nvvm.cp.async.wait.group 0
// D256-SCHED-NEXT:  1 nvvm.barrier0
// D256-SCHED-NEXT:  1 scf.if
// D256-SCHED-NEXT: 16 nvvm.cp.async.shared.global
// D256-SCHED-NEXT:  1 nvvm.cp.async.commit.group
// D256-SCHED-NEXT:  1 scf.if
// D256-SCHED-NEXT:  1 scf.yield
// D256-SCHED-NEXT:  1 } else
// D256-SCHED-NEXT:  1 scf.yield
// D256-SCHED-NEXT: 128 nvvm.mma.sync
// D256-SCHED-NEXT:  1 scf.yield
// D256-SCHED-NEXT:  1 place
// D256-SCHED-NEXT:  4 scf.if

//--- d256.mlir
func.func @f(%q: tensor<?x8x?x256xf16>, %k: tensor<?x8x?x256xf16>, %v: tensor<?x8x?x256xf16>) -> (tensor<?x8x?x256xf16>, tensor<?x8x?xf32>) {
  %o, %lse = fa.attention %q, %k, %v {causal = #fa.causal<bottom_right>} : tensor<?x8x?x256xf16>, tensor<?x8x?x256xf16>, tensor<?x8x?x256xf16> -> tensor<?x8x?x256xf16>, tensor<?x8x?xf32>
  return %o, %lse : tensor<?x8x?x256xf16>, tensor<?x8x?xf32>
}
