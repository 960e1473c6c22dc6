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
// Q128: module attributes {fa.kernel = {block_q = 128 : i64, shared_bytes = 49152 : i64, threads = 128 : i64}
// Q128: llvm.func @fa_forward_0(
// Q128-SAME: fa.block_q = 128 : i64, fa.shared_bytes = 49152 : i64
// No wait for Q before the loop: its first wait covers Q and K.
// Q128-NOT: nvvm.cp.async.wait.group
// Q128-NOT: nvvm.ldmatrix
// Q128: scf.for %{{.+}} = %{{.+}} to %{{.+}} step %c32
// Q128: nvvm.cp.async.wait.group 0
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
// The top-left causal boundary and Nk are checked per 128 x 32 tile.
// Q128: %[[C32:.+]] = arith.constant 32 : i32
// Q128: arith.addi %{{.+}}, %[[C32]] : i32

// Q128-SCHED:      llvm.func @fa_forward_0
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
// Q128-SCHED-NEXT:  4 scf.if

// PIPE: llvm.func @fa_forward_0(
// PIPE-SAME: fa.block_q = 128 : i64, fa.shared_bytes = 49152 : i64


//--- d128.mlir
func.func @f(%q: tensor<?x8x?x128xbf16>, %k: tensor<?x2x?x128xbf16>, %v: tensor<?x2x?x128xbf16>) -> tensor<?x8x?x128xbf16> {
  %o = fa.attention %q, %k, %v {causal = #fa.causal<top_left>} : tensor<?x8x?x128xbf16>, tensor<?x2x?x128xbf16>, tensor<?x2x?x128xbf16> -> tensor<?x8x?x128xbf16>
  return %o : tensor<?x8x?x128xbf16>
}

// D = 256 by default: one m-tile (128 O registers per thread), K/V tiles of
// 64 rows, Q read per k-step; 96 KiB of dynamic shared memory (the runtime
// raises the kernel's limit past 48 KiB; two CTAs still fit an SM).
// D256: module attributes {fa.kernel = {block_q = 64 : i64, shared_bytes = 98304 : i64, threads = 128 : i64}
// D256: llvm.func @fa_forward_0(
// D256-SAME: fa.block_q = 64 : i64, fa.shared_bytes = 98304 : i64
// The Q tile: 64 rows x 32 chunks over 128 threads.
// D256-COUNT-16: nvvm.cp.async.shared.global
// D256-NOT: nvvm.ldmatrix
// D256: scf.for %{{.+}} = %{{.+}} to %{{.+}} step %c64
// S: 16 k-steps, each one Q fragment and four K fragments (8 n-tiles).
// D256: nvvm.ldmatrix %{{.+}} {eltType = #nvvm.ld_st_matrix_elt_type<b16>, layout = #nvvm.mma_layout<row>
// D256: nvvm.ldmatrix %{{.+}} {eltType = #nvvm.ld_st_matrix_elt_type<b16>, layout = #nvvm.mma_layout<row>
// D256-COUNT-2: nvvm.mma.sync {{.*}} : (vector<2xf16>, vector<2xf16>, f32) -> !llvm.struct<(f32, f32, f32, f32)>
// D256: nvvm.ldmatrix %{{.+}} {eltType = #nvvm.ld_st_matrix_elt_type<b16>, layout = #nvvm.mma_layout<row>
// D256-COUNT-2: nvvm.mma.sync
// P V: 4 k-steps x 32 n-tiles, V transposed.
// D256: nvvm.ldmatrix %{{.+}} {eltType = #nvvm.ld_st_matrix_elt_type<b16>, layout = #nvvm.mma_layout<col>
// D256: scf.yield
// D256: llvm.inline_asm "lg2.approx.f32 $0, $1;", "=f,f"

// D256-SCHED:      llvm.func @fa_forward_0
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
// D256-SCHED-NEXT:  4 scf.if

//--- d256.mlir
func.func @f(%q: tensor<?x8x?x256xf16>, %k: tensor<?x8x?x256xf16>, %v: tensor<?x8x?x256xf16>) -> (tensor<?x8x?x256xf16>, tensor<?x8x?xf32>) {
  %o, %lse = fa.attention %q, %k, %v {causal = #fa.causal<bottom_right>} : tensor<?x8x?x256xf16>, tensor<?x8x?x256xf16>, tensor<?x8x?x256xf16> -> tensor<?x8x?x256xf16>, tensor<?x8x?xf32>
  return %o, %lse : tensor<?x8x?x256xf16>, tensor<?x8x?xf32>
}
