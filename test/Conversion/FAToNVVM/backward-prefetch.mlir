// RUN: fa-opt %s -convert-fa-to-nvvm=chip=sm_80 | FileCheck %s
// RUN: fa-opt %s -convert-fa-to-nvvm=chip=sm_80 | %python %S/Inputs/schedule.py | FileCheck %s --check-prefix=SCHED
// RUN: fa-opt %s -convert-fa-to-nvvm="chip=sm_80 bwd-prefetch=false" | %python %S/Inputs/schedule.py | FileCheck %s --check-prefix=OFF
// RUN: fa-opt %s -convert-fa-to-nvvm="chip=sm_90a bwd-deterministic=true bwd-wgmma=false" | FileCheck %s --check-prefix=Q64
// RUN: fa-opt %s -convert-fa-to-nvvm="chip=sm_90a bwd-deterministic=true" | FileCheck %s --check-prefix=DETW
// RUN: fa-opt %s -convert-fa-to-nvvm=chip=sm_90a | FileCheck %s --check-prefix=AUTO
// RUN: fa-opt %s -convert-fa-to-nvvm="chip=sm_90a bwd-atomic-dq=true bwd-wgmma=false" | FileCheck %s --check-prefix=ATOMIC
// RUN: fa-opt %s -convert-fa-to-nvvm="chip=sm_90a bwd-atomic-dq=true bwd-wgmma=false" | %python %S/Inputs/schedule.py | FileCheck %s --check-prefix=PIPE
// RUN: fa-opt %s -convert-fa-to-nvvm="chip=sm_90a bwd-atomic-dq=true" | FileCheck %s --check-prefix=WGMMA
// RUN: fa-opt %s -convert-fa-to-nvvm="chip=sm_90a bwd-atomic-dq=true" | %python %S/Inputs/schedule.py | FileCheck %s --check-prefix=WSCHED
// RUN: fa-opt %s -convert-fa-to-nvvm="chip=sm_90a bwd-atomic-dq=true bwd-dkdv-warps=4" | FileCheck %s --check-prefix=ATOMIC4

// The dkdv kernel's Q tiles, double-buffered (bwd-prefetch, the default):
// bf16, D = 128 (Q tiles of 32 rows on sm_80), GQA 4:1, causal
// bottom-right. Shared memory: K and V (2 x 16 KB), then two stages of Q and
// dO (2 x 8 KB) and lse, Dsum (2 x 128 B): 32768 + 2 x 16640.

// By default on sm_90a dQ is atomic here (dkdv is the wgmma kernel below):
// dq_convert instead of dq.
// AUTO-LABEL: llvm.func @fa_backward_dkdv_0(
// AUTO-SAME: fa.kernel_abi = #fa.kernel_abi<grid = [tiles(Nk, 128), Hkv, B], threads = 256, shared = 202752,
// AUTO: wgmma.mma_async
// AUTO: llvm.func @fa_backward_dq_convert_0(
// AUTO-NOT: llvm.func @fa_backward_dq_0(

// With the dq kernel (bwd-deterministic) dkdv also runs 8 warps on wgmma
// (no dS^T buffers or dQ rows: K, V 64 KB and two stages of 33792 bytes),
// 24 wgmmas per Q tile (S^T, dP^T: 8 k-steps each; dV, dK: 4), no
// reductions; the dq kernel follows.
// DETW-LABEL: llvm.func @fa_backward_dkdv_0(
// DETW-SAME: fa.kernel_abi = #fa.kernel_abi<grid = [tiles(Nk, 128), Hkv, B], threads = 256, shared = 133120,
// DETW-COUNT-24: wgmma.mma_async
// DETW-NOT: wgmma.mma_async
// DETW-NOT: cp.reduce.async.bulk
// DETW: llvm.return
// DETW-LABEL: llvm.func @fa_backward_dq_0(

// With mma.sync (bwd-wgmma=false) and the dq kernel on sm_90a: Q tiles of 64 rows (2 x 16 KB of Q and dO and 2 x 256 B of lse,
// Dsum per stage: 32768 + 2 x 33280), the next one 64 rows on; 256 mmas
// per tile (S^T, dP^T, dV and dK of 16 keys x 64 queries x 128 per warp).
// Q64-LABEL: llvm.func @fa_backward_dkdv_0(
// Q64-SAME: fa.kernel_abi = #fa.kernel_abi<grid = [tiles(Nk, 64), Hkv, B], threads = 128, shared = 99328,
// Q64: scf.for %{{.+}} = %{{.+}} to %[[QEND:.+]] step %c64 iter_args(
// Q64: %[[Q0:.+]] = arith.index_cast
// Q64: arith.addi %[[Q0]], %c64_i32{{.*}} : i32
// Q64-COUNT-256: nvvm.mma.sync
// Q64-NOT: nvvm.mma.sync
// Q64: llvm.return
// dq takes K/V tiles of 128 rows there (64 on sm_80): Q and dO (2 x 16 KB)
// and K and V (2 x 32 KB); 384 mmas per tile (S, dP of 16 queries x 128
// keys x 128, dQ of 16 x 128 x 128 per warp).
// Q64-LABEL: llvm.func @fa_backward_dq_0(
// Q64-SAME: fa.kernel_abi = #fa.kernel_abi<grid = [tiles(Nq, 64), Hq, B], threads = 128, shared = 98304,
// Q64: scf.for %{{.+}} = %{{.+}} to %{{.+}} step %c128 iter_args(
// Q64-COUNT-384: nvvm.mma.sync
// Q64-NOT: nvvm.mma.sync
// Q64: llvm.return
// With atomic dQ on sm_90a dkdv runs 8 warps over 128 keys (each Q tile's
// dQ reduced once per 128 keys, not 64) with Q tiles of 64 rows, and dQ is
// pipelined; with mma.sync (bwd-wgmma=false): K and V (2 x 32 KB), two stages (2 x 33280), a dS^T buffer per
// stage (2 x 128 x 64 x 2) and 8 warps' dQ rows (8 x 16 x 72 x 4).
// ATOMIC-LABEL: llvm.func @fa_backward_dkdv_0(
// ATOMIC-SAME: fa.kernel_abi = #fa.kernel_abi<grid = [tiles(Nk, 128), Hkv, B], threads = 256, shared = 201728,
// ATOMIC-SAME: nvvm.maxntid = array<i32: 256, 1, 1>
// Both loops carry the stage and the pending tile: its q0 (-1: none) and
// query head.
// ATOMIC: scf.for %{{.+}} = %{{.+}} to %{{.+}} step %c1 iter_args({{.+}}, %{{.+}} = %c0_i32{{.*}}, %{{.+}} = %c-1_i32, %{{.+}} = %c0_i32{{.*}}) -> (f32,
// ATOMIC: scf.for %{{.+}} = %{{.+}} to %{{.+}} step %c64 iter_args({{.+}}, %[[STAGE:.+]] = %{{.+}}, %[[PQ0:.+]] = %{{.+}}, %[[PJ:.+]] = %{{.+}}) -> (f32,
// ATOMIC-NEXT: %[[Q0:.+]] = arith.index_cast
// ATOMIC-NEXT: nvvm.cp.async.wait.group 0
// ATOMIC-NEXT: nvvm.barrier0
// After the barrier (every warp's dS^T of the pending tile is stored) and
// the next tile's copies: the pending tile's dQ, from the other stage's dS^T
// buffer (132096 + (1 - stage) x 16384).
// ATOMIC: nvvm.cp.async.commit.group
// ATOMIC: %[[HAS:.+]] = arith.cmpi sge, %[[PQ0]], %c0_i32{{.*}} : i32
// ATOMIC-NEXT: scf.if %[[HAS]] {
// ATOMIC-NEXT: arith.constant 1 : i32
// ATOMIC-NEXT: %[[OTHER:.+]] = arith.subi %{{.+}}, %[[STAGE]] : i32
// ATOMIC-NEXT: arith.constant 132096 : i32
// ATOMIC-NEXT: arith.constant 16384 : i32
// ATOMIC-NEXT: arith.muli %[[OTHER]], %{{.+}} : i32
// ATOMIC: cp.reduce.async.bulk.global.shared::cta.bulk_group.add.f32
// This tile's q0 and head become the pending tile.
// ATOMIC: scf.yield {{.+}}, %[[Q0]], %{{.+}} : f32,
// ATOMIC-SAME: i32, i32, i32
// By default the same kernel multiplies with wgmma, each warpgroup's 64 keys
// one m64 tile. Its stages start at multiples of 1024 bytes (33280 -> 33792
// each): 65536 + 2 x 33792 + 2 x 16384 + 36864.
// WGMMA: llvm.func @fa_backward_dkdv_0(
// WGMMA-SAME: fa.kernel_abi = #fa.kernel_abi<grid = [tiles(Nk, 128), Hkv, B], threads = 256, shared = 202752,
// Descriptors (128-byte swizzle, bit 62): K-major with 2048 bytes (128 >> 4,
// bit 32 up) between groups of 8 rows of 256 bytes; transposed ([k][n]
// tiles) with 1024 bytes (64 >> 4, bit 16 up) between 64-column blocks; dS^T
// (rows of 128 bytes) with 1024 between groups.
// WGMMA-DAG: arith.constant 4611686568183267328 : i64
// WGMMA-DAG: arith.constant 4611686568187396096 : i64
// WGMMA-DAG: arith.constant 4611686293309489152 : i64
// S^T = K Q^T: A and B from shared memory, both K-major, D = A B at the
// first k-step (the scale-d predicate is false), D += A B after.
// WGMMA: "{ .reg .pred p; setp.ne.b32 p, 0, 0; wgmma.mma_async.sync.aligned.m64n64k16.f32.bf16.bf16 {$0, $1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13, $14, $15, $16, $17, $18, $19, $20, $21, $22, $23, $24, $25, $26, $27, $28, $29, $30, $31}, $32, $33, p, 1, 1, 0, 0; }", "=f,=f,=f,=f,=f,=f,=f,=f,=f,=f,=f,=f,=f,=f,=f,=f,=f,=f,=f,=f,=f,=f,=f,=f,=f,=f,=f,=f,=f,=f,=f,=f,l,l"
// dP^T = V dO^T in registers of its own (S^T's f32 P^T is live until dS).
// WGMMA: "{ .reg .pred p; setp.ne.b32 p, 0, 0; wgmma.mma_async.sync.aligned.m64n64k16.f32.bf16.bf16 {{.+}}, $32, $33, p, 1, 1, 0, 0; }", "=f,=f,=f,=f,=f,=f,=f,=f,=f,=f,=f,=f,=f,=f,=f,=f,=f,=f,=f,=f,=f,=f,=f,=f,=f,=f,=f,=f,=f,=f,=f,=f,l,l"
// dV += P^T dO: A (P^T) from registers, dO transposed.
// WGMMA: wgmma.mma_async.sync.aligned.m64n128k16.f32.bf16.bf16 {{.+}}, {$128, $129, $130, $131}, $132, p, 1, 1, 1; }"
// dQ = dS K: both transposed.
// WGMMA: "{ .reg .pred p; setp.ne.b32 p, 0, 0; wgmma.mma_async.sync.aligned.m64n64k16.f32.bf16.bf16 {{.+}}, $32, $33, p, 1, 1, 1, 1; }"
// Per Q tile: one barrier (and the fence that makes the copies and dS^T
// visible to the tensor cores before it); the pending tile's dQ (8 k-steps
// over 128 keys); S^T; dP^T; dV with dK in one group; 4 wgmma waits.
// WSCHED:      llvm.func @fa_backward_dkdv_0
// WSCHED-NEXT:  1 place
// WSCHED-NEXT: 16 nvvm.cp.async.shared.global
// WSCHED-NEXT:  1 place
// WSCHED-NEXT:  8 nvvm.cp.async.shared.global
// WSCHED-NEXT:  1 nvvm.cp.async.commit.group
// WSCHED-NEXT:  1 scf.if
// WSCHED-NEXT:  1 nvvm.cp.async.wait.group 0
// WSCHED-NEXT:  1 fence.proxy.async
// WSCHED-NEXT:  1 nvvm.barrier0
// WSCHED-NEXT:  1 scf.for
// WSCHED-NEXT:  1 place
// WSCHED-NEXT:  1 scf.for
// WSCHED-NEXT:  1 nvvm.cp.async.wait.group 0
// WSCHED-NEXT:  1 fence.proxy.async
// WSCHED-NEXT:  1 nvvm.barrier0
// WSCHED-NEXT:  1 place
// WSCHED-NEXT:  1 scf.if
// WSCHED-NEXT:  8 nvvm.cp.async.shared.global
// WSCHED-NEXT:  1 nvvm.cp.async.commit.group
// WSCHED-NEXT:  1 scf.if
// WSCHED-NEXT:  1 place
// WSCHED-NEXT:  1 wgmma.fence
// WSCHED-NEXT:  8 wgmma.mma_async.sync.aligned.m64n64k16
// WSCHED-NEXT:  1 wgmma.commit_group
// WSCHED-NEXT:  1 wgmma.wait_group.sync.aligned 0
// WSCHED-NEXT:  1 scf.if
// WSCHED-NEXT:  1 fence.proxy.async
// WSCHED-NEXT:  2 scf.if
// WSCHED-NEXT:  1 wgmma.fence
// WSCHED-NEXT:  8 wgmma.mma_async.sync.aligned.m64n64k16
// WSCHED-NEXT:  1 wgmma.commit_group
// WSCHED-NEXT:  1 wgmma.wait_group.sync.aligned 0
// WSCHED-NEXT:  1 scf.if
// WSCHED-NEXT:  1 scf.yield
// WSCHED-NEXT:  1 } else
// WSCHED-NEXT:  1 scf.yield
// WSCHED-NEXT:  1 wgmma.fence
// WSCHED-NEXT:  8 wgmma.mma_async.sync.aligned.m64n64k16
// WSCHED-NEXT:  1 wgmma.commit_group
// WSCHED-NEXT:  1 wgmma.wait_group.sync.aligned 0
// WSCHED-NEXT:  1 fence.proxy.async
// WSCHED-NEXT:  1 wgmma.fence
// WSCHED-NEXT:  8 wgmma.mma_async.sync.aligned.m64n128k16
// WSCHED-NEXT:  1 wgmma.commit_group
// WSCHED-NEXT:  1 wgmma.wait_group.sync.aligned 0
// WSCHED-NEXT:  1 scf.if
// WSCHED-NEXT:  2 scf.yield
// WSCHED-NEXT:  1 nvvm.barrier0
// WSCHED-NEXT:  1 scf.if
// WSCHED-NEXT:  1 place
// WSCHED-NEXT:  1 wgmma.fence
// WSCHED-NEXT:  8 wgmma.mma_async.sync.aligned.m64n64k16
// WSCHED-NEXT:  1 wgmma.commit_group
// WSCHED-NEXT:  1 wgmma.wait_group.sync.aligned 0
// WSCHED-NEXT:  1 scf.if
// WSCHED-NEXT:  1 fence.proxy.async
// WSCHED-NEXT:  2 scf.if
// WSCHED-NEXT:  1 place
// WSCHED-NEXT:  5 scf.if
// WSCHED-NEXT: llvm.func @fa_backward_dq_convert_0
// In 4 warps it stays 32 rows (64 spills), 64 keys, dQ still pipelined.
// ATOMIC4-LABEL: llvm.func @fa_backward_dkdv_0(
// ATOMIC4-SAME: fa.kernel_abi = #fa.kernel_abi<grid = [tiles(Nk, 64), Hkv, B], threads = 128, shared = {{[0-9]+}},
// ATOMIC4: scf.for %{{.+}} = %{{.+}} to %{{.+}} step %c32 iter_args(

// The pipelined schedule: one barrier per Q tile, the pending tile's dQ
// (64 mmas: 16 queries x 64 columns x 128 keys per warp) right after it and
// the next tile's copies, then this tile's 256 mmas; after the loops a
// barrier and the last tile's dQ.
// PIPE:      llvm.func @fa_backward_dkdv_0
// PIPE-NEXT:  1 place
// PIPE-NEXT: 16 nvvm.cp.async.shared.global
// PIPE-NEXT:  1 place
// PIPE-NEXT:  8 nvvm.cp.async.shared.global
// PIPE-NEXT:  1 nvvm.cp.async.commit.group
// PIPE-NEXT:  1 scf.if
// PIPE-NEXT:  1 nvvm.cp.async.wait.group 0
// PIPE-NEXT:  1 nvvm.barrier0
// PIPE-NEXT:  1 scf.for
// PIPE-NEXT:  1 place
// PIPE-NEXT:  1 scf.for
// PIPE-NEXT:  1 nvvm.cp.async.wait.group 0
// PIPE-NEXT:  1 nvvm.barrier0
// PIPE-NEXT:  1 place
// PIPE-NEXT:  1 scf.if
// PIPE-NEXT:  8 nvvm.cp.async.shared.global
// PIPE-NEXT:  1 nvvm.cp.async.commit.group
// PIPE-NEXT:  1 scf.if
// PIPE-NEXT:  1 place
// PIPE-NEXT: 64 nvvm.mma.sync
// PIPE-NEXT:  1 scf.if
// PIPE-NEXT:  1 fence.proxy.async
// PIPE-NEXT:  2 scf.if
// PIPE-NEXT: 64 nvvm.mma.sync
// PIPE-NEXT:  1 scf.if
// PIPE-NEXT:  1 scf.yield
// PIPE-NEXT:  1 } else
// PIPE-NEXT:  1 scf.yield
// PIPE-NEXT: 192 nvvm.mma.sync
// PIPE-NEXT:  1 scf.if
// PIPE-NEXT:  2 scf.yield
// PIPE-NEXT:  1 nvvm.barrier0
// PIPE-NEXT:  1 scf.if
// PIPE-NEXT:  1 place
// PIPE-NEXT: 64 nvvm.mma.sync
// PIPE-NEXT:  1 scf.if
// PIPE-NEXT:  1 fence.proxy.async
// PIPE-NEXT:  2 scf.if
// PIPE-NEXT:  1 place
// PIPE-NEXT:  5 scf.if
// PIPE-NEXT: llvm.func @fa_backward_dq_convert_0

// CHECK-LABEL: llvm.func @fa_backward_dkdv_0(
// CHECK-SAME: %[[NQ:[^:]+]]: i32, %[[NK:[^:]+]]: i32, %{{[^:]+}}: i32, %{{[^:]+}}: i32, %{{[^:]+}}: i32, %{{[^:]+}}: i32, %{{[^:]+}}: f32, %{{[^:]+}}: f32)
// CHECK-SAME: fa.kernel_abi = #fa.kernel_abi<grid = [tiles(Nk, 64), Hkv, B], threads = 128, shared = 66048,
// k0 = 64 * ctaid.x.
// CHECK: %[[K0:.+]] = arith.muli %{{.+}}, %c{{[0-9]+}}_i32{{[_0-9]*}} : i32
// The first Q tile (head 0, qBegin) goes to stage 0 in the K/V group, its
// lse and Dsum to shared memory before the barrier.
// CHECK: %[[SMEM:.+]] = llvm.mlir.addressof @fa_smem
// CHECK-COUNT-16: nvvm.cp.async.shared.global
// qBegin, causal bottom-right (offset Nk - Nq): the first query that sees
// key k0 is max(0, k0 - (Nk - Nq)).
// CHECK-NEXT: %[[DIAG:.+]] = arith.subi %[[NK]], %[[NQ]] : i32
// CHECK: %[[C0:.+]] = arith.constant 0 : i32
// CHECK-NEXT: %[[FROM:.+]] = arith.subi %[[K0]], %[[DIAG]] : i32
// CHECK-NEXT: %[[QBEGIN:.+]] = arith.maxsi %[[C0]], %[[FROM]] : i32
// CHECK-COUNT-8: nvvm.cp.async.shared.global
// CHECK-NEXT: nvvm.cp.async.commit.group
// CHECK: llvm.load %{{.+}} : !llvm.ptr<1> -> f32
// CHECK: llvm.load %{{.+}} : !llvm.ptr<1> -> f32
// CHECK: llvm.store %{{.+}}, %{{.+}} : f32, !llvm.ptr<3>
// CHECK: llvm.store %{{.+}}, %{{.+}} : f32, !llvm.ptr<3>
// CHECK: nvvm.cp.async.wait.group 0
// CHECK-NEXT: nvvm.barrier0
// The stage is the last iter_arg of both loops (0 first).
// CHECK: scf.for %{{.+}} = %{{.+}} to %[[GROUP:.+]] step %{{.+}} iter_args({{.+}}, %{{.+}} = %c0_i32{{.*}}) -> (f32,
// CHECK-SAME: f32, i32)
// The Q loop over [qBegin, Nq).
// CHECK: %[[QENDIDX:.+]] = arith.index_cast %[[NQ]] : i32 to index
// CHECK-NEXT: %[[QBIDX:.+]] = arith.index_cast %[[QBEGIN]] : i32 to index
// CHECK-NEXT: scf.for %{{.+}} = %[[QBIDX]] to %[[QENDIDX]] step %c32 iter_args({{.+}}, %[[STAGE:.+]] = %{{.+}}) -> (f32,
// This tile's stage has landed and the other one is free.
// CHECK-NEXT: %[[Q0:.+]] = arith.index_cast
// CHECK-NEXT: nvvm.cp.async.wait.group 0
// CHECK-NEXT: nvvm.barrier0
// Stage offsets: 32768 + stage x 16640 (this) and 32768 + (1 - stage) x
// 16640 (the next).
// CHECK: arith.muli %[[STAGE]], %{{.+}} : i32
// CHECK: %[[OTHER:.+]] = arith.subi %{{.+}}, %[[STAGE]] : i32
// CHECK-NEXT: arith.muli %[[OTHER]], %{{.+}} : i32
// The next tile: q0 + 32 of this head, else qBegin of the next head.
// CHECK: %[[NEXTQ0:.+]] = arith.addi %[[Q0]], %c32_i32{{.*}} : i32
// CHECK-NEXT: %[[INHEAD:.+]] = arith.cmpi slt, %[[NEXTQ0]], %[[QEND32:.+]] : i32
// CHECK: %[[JNEXT:.+]] = arith.addi %[[J:.+]], %c1_i32{{.*}} : i32
// CHECK-NEXT: %[[MORE:.+]] = arith.cmpi slt, %[[JNEXT]], %{{.+}} : i32
// CHECK-NEXT: %[[HASNEXT:.+]] = arith.ori %[[INHEAD]], %[[MORE]] : i1
// CHECK-NEXT: arith.select %[[INHEAD]], %[[NEXTQ0]], %[[QBEGIN]] : i32
// CHECK-NEXT: %[[J2:.+]] = arith.select %[[MORE]], %[[JNEXT]], %[[J]] : i32
// CHECK-NEXT: arith.select %[[INHEAD]], %[[J]], %[[J2]] : i32
// Its Q and dO copies (none after the last tile), one group; its lse and
// Dsum loaded now (+inf and 0 where there is none)...
// CHECK: scf.if %[[HASNEXT]] {
// CHECK-COUNT-8: nvvm.cp.async.shared.global
// CHECK: nvvm.cp.async.commit.group
// CHECK: arith.andi %{{.+}}, %[[HASNEXT]] : i1
// CHECK: %[[LSE:.+]] = llvm.load %{{.+}} : !llvm.ptr<1> -> f32
// CHECK: %[[DSUM:.+]] = llvm.load %{{.+}} : !llvm.ptr<1> -> f32
// S^T (32 mmas), masked if the tile crosses the diagonal
// (k0 + 63 > q0 + Nk - Nq); the first score of S^T (key row, query
// column) kept if key <= query + Nk - Nq.
// CHECK-COUNT-32: nvvm.mma.sync
// CHECK-NOT: nvvm.mma.sync
// CHECK: %[[KTOP:.+]] = arith.addi %[[K0]], %{{.+}} : i32
// CHECK: %[[QLIM:.+]] = arith.addi %[[Q0]], %[[DIAG]] : i32
// CHECK-NEXT: %[[C1:.+]] = arith.constant 1 : i32
// CHECK-NEXT: %[[KLAST:.+]] = arith.subi %[[KTOP]], %[[C1]] : i32
// CHECK-NEXT: %[[CROSS:.+]] = arith.cmpi sgt, %[[KLAST]], %[[QLIM]] : i32
// CHECK-NEXT: scf.if %[[CROSS]] -> (f32,
// CHECK: %[[QUERY:.+]] = arith.addi %[[Q0]], %{{.+}} : i32
// CHECK-NEXT: %[[LIM:.+]] = arith.addi %[[QUERY]], %[[DIAG]] : i32
// CHECK-NEXT: %[[SEEN:.+]] = arith.cmpi sle, %{{.+}}, %[[LIM]] : i32
// CHECK-NEXT: arith.select %[[SEEN]], %{{.+}}, %{{.+}} : f32
// dV, dP^T, dK: 96 mmas.
// CHECK-COUNT-96: nvvm.mma.sync
// ... and stored to the next stage after the math; the stage flips.
// CHECK: scf.if
// CHECK: llvm.store
// CHECK: llvm.store
// CHECK: }
// CHECK-NEXT: arith.constant 1 : i32
// CHECK-NEXT: %[[FLIP:.+]] = arith.subi %{{.+}}, %[[STAGE]] : i32
// CHECK-NEXT: scf.yield {{.+}}, %[[FLIP]] : f32,
// CHECK-LABEL: llvm.func @fa_backward_dq_0(

// The whole dkdv schedule: one wait and one barrier per Q tile, the next
// tile's copies issued right after them.
// SCHED:      llvm.func @fa_backward_dkdv_0
// SCHED-NEXT:  1 place
// SCHED-NEXT: 16 nvvm.cp.async.shared.global
// SCHED-NEXT:  1 place
// SCHED-NEXT:  8 nvvm.cp.async.shared.global
// SCHED-NEXT:  1 nvvm.cp.async.commit.group
// SCHED-NEXT:  1 scf.if
// SCHED-NEXT:  1 nvvm.cp.async.wait.group 0
// SCHED-NEXT:  1 nvvm.barrier0
// SCHED-NEXT:  1 scf.for
// SCHED-NEXT:  1 place
// SCHED-NEXT:  1 scf.for
// SCHED-NEXT:  1 nvvm.cp.async.wait.group 0
// SCHED-NEXT:  1 nvvm.barrier0
// SCHED-NEXT:  1 place
// SCHED-NEXT:  1 scf.if
// SCHED-NEXT:  8 nvvm.cp.async.shared.global
// SCHED-NEXT:  1 nvvm.cp.async.commit.group
// SCHED-NEXT: 32 nvvm.mma.sync
// SCHED-NEXT:  1 scf.if
// SCHED-NEXT:  1 scf.yield
// SCHED-NEXT:  1 } else
// SCHED-NEXT:  1 scf.yield
// SCHED-NEXT: 96 nvvm.mma.sync
// SCHED-NEXT:  1 scf.if
// SCHED-NEXT:  2 scf.yield
// SCHED-NEXT:  1 place
// SCHED-NEXT:  4 scf.if
// SCHED-NEXT: llvm.func @fa_backward_dq_0

// bwd-prefetch=false: each Q tile loaded and waited for in its iteration
// (Q, then dO, as two groups).
// OFF:      llvm.func @fa_backward_dkdv_0
// OFF-NEXT:  1 place
// OFF-NEXT: 16 nvvm.cp.async.shared.global
// OFF-NEXT:  1 nvvm.cp.async.commit.group
// OFF-NEXT:  1 nvvm.cp.async.wait.group 0
// OFF-NEXT:  1 nvvm.barrier0
// OFF-NEXT:  1 scf.for
// OFF-NEXT:  1 place
// OFF-NEXT:  1 scf.for
// OFF-NEXT:  1 nvvm.barrier0
// OFF-NEXT:  4 nvvm.cp.async.shared.global
// OFF-NEXT:  1 nvvm.cp.async.commit.group
// OFF-NEXT:  4 nvvm.cp.async.shared.global
// OFF-NEXT:  1 nvvm.cp.async.commit.group
// OFF-NEXT:  1 scf.if
// OFF-NEXT:  1 nvvm.cp.async.wait.group 1
// OFF-NEXT:  1 nvvm.barrier0
// OFF-NEXT: 32 nvvm.mma.sync
// OFF-NEXT:  1 scf.if
// OFF-NEXT:  1 scf.yield
// OFF-NEXT:  1 } else
// OFF-NEXT:  1 scf.yield
// OFF-NEXT:  1 nvvm.cp.async.wait.group 0
// OFF-NEXT:  1 nvvm.barrier0
// OFF-NEXT: 96 nvvm.mma.sync
// OFF-NEXT:  2 scf.yield
// OFF-NEXT:  1 place
// OFF-NEXT:  4 scf.if
// OFF-NEXT: llvm.func @fa_backward_dq_0
func.func @causal_gqa(%q: tensor<?x8x?x128xbf16>, %k: tensor<?x2x?x128xbf16>, %v: tensor<?x2x?x128xbf16>, %o: tensor<?x8x?x128xbf16>, %do: tensor<?x8x?x128xbf16>, %lse: tensor<?x8x?xf32>) -> (tensor<?x8x?x128xbf16>, tensor<?x2x?x128xbf16>, tensor<?x2x?x128xbf16>) {
  %dq, %dk, %dv = fa.attention_grad %q, %k, %v, %o, %do, %lse {causal = #fa.causal<bottom_right>} : tensor<?x8x?x128xbf16>, tensor<?x2x?x128xbf16>, tensor<?x2x?x128xbf16>, tensor<?x8x?x128xbf16>, tensor<?x8x?x128xbf16>, tensor<?x8x?xf32> -> tensor<?x8x?x128xbf16>, tensor<?x2x?x128xbf16>, tensor<?x2x?x128xbf16>
  return %dq, %dk, %dv : tensor<?x8x?x128xbf16>, tensor<?x2x?x128xbf16>, tensor<?x2x?x128xbf16>
}

