// The forward kernel's copy stages (fa.kv_stages from fa-async-copy): 1,
// FlashAttention-2's schedule (kernel.mlir); 2, K and V double-buffered; 3,
// a ring of three.
// RUN: fa-opt %s -fa-fuse=chip=sm_90a -fa-async-copy=stages=2 -convert-fa-to-nvvm | FileCheck %s
// RUN: fa-opt %s -fa-fuse=chip=sm_90a -fa-async-copy=stages=2 -convert-fa-to-nvvm | %python %S/Inputs/schedule.py | FileCheck %s --check-prefix=SCHED
// RUN: fa-opt %s -fa-fuse=chip=sm_90a -fa-async-copy=stages=3 -convert-fa-to-nvvm | FileCheck %s --check-prefix=S3
// RUN: fa-opt %s -fa-fuse=chip=sm_90a -fa-async-copy=stages=3 -convert-fa-to-nvvm | %python %S/Inputs/schedule.py | FileCheck %s --check-prefix=S3-SCHED
// The pipeline passes the option on.
// RUN: fa-opt %s "-fa-pipeline-cuda=chip=sm_80 kv-stages=2" -mlir-print-ir-after=convert-fa-to-nvvm 2>&1 >/dev/null | FileCheck %s --check-prefix=PIPE

// D = 128, 64 x 128 tiles: the Q tile (16 KB), then two stages of a K and a
// V tile (4 x 32 KB).
// CHECK: module attributes {gpu.container_module}
// CHECK-LABEL: llvm.func @fa_forward_0(
// CHECK-SAME: %[[NQ:[^:]+]]: i32, %[[NK:[^:]+]]: i32, %{{[^:]+}}: i32, %{{[^:]+}}: i32, %{{[^:]+}}: i32, %{{[^:]+}}: f32)
// CHECK-SAME: fa.kernel_abi = #fa.kernel_abi<grid = [tiles(Nq, 64), Hq, B], threads = 128, shared = 147456,
// Causal bottom-right: the diagonal's offset is Nk - Nq, and the K/V loop
// runs over [0, max(0, min(Nk, q0 + 64 + Nk - Nq))).
// CHECK: nvvm.read.ptx.sreg.nctaid.x
// CHECK: %[[Q0:.+]] = arith.muli %{{.+}}, %c{{[0-9]+}}_i32{{[_0-9]*}} : i32
// CHECK: %[[QEND:.+]] = arith.addi %[[Q0]], %{{.+}} : i32
// CHECK-NEXT: %[[DIAG:.+]] = arith.subi %[[NK]], %[[NQ]] : i32
// CHECK-NEXT: %[[LIMIT:.+]] = arith.addi %[[QEND]], %[[DIAG]] : i32
// CHECK-NEXT: %[[MIN:.+]] = arith.minsi %[[NK]], %[[LIMIT]] : i32
// CHECK-NEXT: %[[C0:.+]] = arith.constant 0 : i32
// CHECK-NEXT: %[[LAST:.+]] = arith.maxsi %[[C0]], %[[MIN]] : i32
// The first tile's K and V go to stage 0 as one group, after Q's.
// CHECK: nvvm.cp.async.commit.group
// CHECK: scf.if
// CHECK-COUNT-32: nvvm.cp.async.shared.global
// CHECK-NEXT: }
// CHECK-NEXT: nvvm.cp.async.commit.group
// The thread's first row: q0 + 16 * warp + lane / 4.
// CHECK: %[[QW:.+]] = arith.addi %[[Q0]], %{{.+}} : i32
// CHECK-NEXT: %[[ROW:.+]] = arith.addi %[[QW]], %{{.+}} : i32
// CHECK: %[[LASTIDX:.+]] = arith.index_cast %[[LAST]] : i32 to index
// Per tile: wait for it (its group is the one in flight), one barrier, the
// stage of tile n, (n - begin) / 128 & 1, and tile n + 1's K and V into the
// other stage (32 KB further per stage, K then V) while tile n is computed.
// CHECK-NEXT: %{{.+}} = arith.index_cast %{{.+}} : i32 to index
// CHECK-NEXT: scf.for %{{.+}} = %{{.+}} to %[[LASTIDX]] step %c128
// CHECK-NEXT: %[[KV0:.+]] = arith.index_cast
// CHECK-NEXT: nvvm.cp.async.wait.group 0
// CHECK-NEXT: nvvm.barrier0
// CHECK: %[[NEXT:.+]] = arith.addi %[[KV0]], %c128_i32{{.*}} : i32
// CHECK-NEXT: %[[MORE:.+]] = arith.cmpi slt, %[[NEXT]], %[[LAST]] : i32
// CHECK: %[[OFF:.+]] = arith.subi %[[KV0]], %{{.+}} : i32
// CHECK-NEXT: %[[N:.+]] = arith.divui %[[OFF]], %c128_i32{{.*}} : i32
// CHECK: %[[STAGE:.+]] = arith.andi %[[N]], %c1_i32{{.*}} : i32
// K of this stage at 16384 + 65536 stage, V 32 KB further.
// CHECK: %[[SK:.+]] = arith.muli %[[STAGE]], %c65536_i32{{.*}} : i32
// CHECK: arith.addi %c16384_i32{{.*}}, %[[SK]] : i32
// CHECK: %[[SV:.+]] = arith.muli %[[STAGE]], %c65536_i32{{.*}} : i32
// CHECK: arith.addi %c49152_i32{{.*}}, %[[SV]] : i32
// CHECK: %[[OTHER:.+]] = arith.subi %c1_i32{{.*}}, %[[STAGE]] : i32
// CHECK-NEXT: scf.if %[[MORE]] {
// CHECK: arith.muli %[[OTHER]], %c65536_i32{{.*}} : i32
// CHECK: nvvm.cp.async.commit.group
// Masks on tiles that cross Nk or the diagonal (kv0 + 127 > q0 + Nk - Nq);
// the first score is kept if key < Nk and key <= row + Nk - Nq.
// CHECK: %[[PASTNK:.+]] = arith.cmpi sgt, %[[TEND:.+]], %[[NK]] : i32
// CHECK: %[[FIRSTLIM:.+]] = arith.addi %[[Q0]], %[[DIAG]] : i32
// CHECK: %[[TLAST:.+]] = arith.subi %[[TEND]], %{{.+}} : i32
// CHECK-NEXT: %[[CROSS:.+]] = arith.cmpi sgt, %[[TLAST]], %[[FIRSTLIM]] : i32
// CHECK-NEXT: %[[NEED:.+]] = arith.ori %[[PASTNK]], %[[CROSS]] : i1
// CHECK-NEXT: scf.if %[[NEED]] -> (f32,
// CHECK: %[[INNK:.+]] = arith.cmpi slt, %[[KEY:.+]], %[[NK]] : i32
// CHECK-NEXT: %[[LIM:.+]] = arith.addi %[[ROW]], %[[DIAG]] : i32
// CHECK-NEXT: %[[SEEN:.+]] = arith.cmpi sle, %[[KEY]], %[[LIM]] : i32
// CHECK-NEXT: %[[KEEP:.+]] = arith.andi %[[INNK]], %[[SEEN]] : i1
// CHECK-NEXT: %[[NEGINF:.+]] = arith.constant 0xFF800000 : f32
// CHECK-NEXT: arith.select %[[KEEP]], %{{.+}}, %[[NEGINF]] : f32

// SCHED-LABEL: llvm.func @fa_forward_0
// SCHED-NEXT: 1 place
// SCHED-NEXT: 8 nvvm.cp.async.shared.global
// SCHED-NEXT: 1 nvvm.cp.async.commit.group
// SCHED-NEXT: 1 scf.if
// SCHED-NEXT: 32 nvvm.cp.async.shared.global
// SCHED-NEXT: 1 nvvm.cp.async.commit.group
// SCHED-NEXT: 1 nvvm.cp.async.wait.group 1
// SCHED-NEXT: 1 nvvm.barrier0
// SCHED-NEXT: 1 scf.for
// One wait and one barrier per tile, then the next tile's 32 copies, S
// (8 k-steps x 16 n-tiles), the softmax (a branch for masked tiles) and
// P V (8 k-steps x 16 n-tiles): no second barrier.
// SCHED-NEXT: 1 nvvm.cp.async.wait.group 0
// SCHED-NEXT: 1 nvvm.barrier0
// SCHED-NEXT: 1 scf.if
// SCHED-NEXT: 32 nvvm.cp.async.shared.global
// SCHED-NEXT: 1 nvvm.cp.async.commit.group
// SCHED-NEXT: 128 nvvm.mma.sync
// SCHED-NOT: nvvm.barrier0
// SCHED: 128 nvvm.mma.sync
// SCHED-NEXT: 1 scf.yield

// Three stages: 16 KB + 3 x 64 KB. Tiles 0 and 1 are issued before the
// loop, one group each; Q has landed when at most those two are in flight.
// Tile n is in stage n % 3; iteration n waits until at most one group (tile
// n + 1) is in flight, and issues tile n + 2 into the stage of tile n - 1
// ((stage + 2) % 3, as a select).
// S3: llvm.func @fa_forward_0(
// S3-SAME: fa.kernel_abi = #fa.kernel_abi<grid = [tiles(Nq, 64), Hq, B], threads = 128, shared = 212992,
// S3: scf.for %{{.+}} = %{{.+}} to %[[END:.+]] step %c128
// S3-NEXT: %[[KV0:.+]] = arith.index_cast
// S3-NEXT: nvvm.cp.async.wait.group 1
// S3-NEXT: nvvm.barrier0
// S3: %[[NEXT:.+]] = arith.addi %[[KV0]], %c256_i32{{.*}} : i32
// S3-NEXT: %[[MORE:.+]] = arith.cmpi slt, %[[NEXT]], %{{.+}} : i32
// S3: %[[N:.+]] = arith.divui %{{.+}}, %c128_i32{{.*}} : i32
// S3: %[[STAGE:.+]] = arith.remui %[[N]], %c3_i32{{.*}} : i32
// S3: %[[PREV:.+]] = arith.subi %[[STAGE]], %c1_i32{{.*}} : i32
// S3: %[[FIRST:.+]] = arith.cmpi eq, %[[STAGE]], %c0_i32{{.*}} : i32
// S3: %[[OTHER:.+]] = arith.select %[[FIRST]], %c2_i32{{.*}}, %[[PREV]] : i32
// S3-NEXT: scf.if %[[MORE]] {
// S3: arith.muli %[[OTHER]], %c65536_i32{{.*}} : i32

// S3-SCHED-LABEL: llvm.func @fa_forward_0
// S3-SCHED-NEXT: 1 place
// S3-SCHED-NEXT: 8 nvvm.cp.async.shared.global
// S3-SCHED-NEXT: 1 nvvm.cp.async.commit.group
// S3-SCHED-NEXT: 1 scf.if
// S3-SCHED-NEXT: 32 nvvm.cp.async.shared.global
// S3-SCHED-NEXT: 1 nvvm.cp.async.commit.group
// S3-SCHED-NEXT: 1 scf.if
// S3-SCHED-NEXT: 32 nvvm.cp.async.shared.global
// S3-SCHED-NEXT: 1 nvvm.cp.async.commit.group
// S3-SCHED-NEXT: 1 nvvm.cp.async.wait.group 2
// S3-SCHED-NEXT: 1 nvvm.barrier0
// S3-SCHED-NEXT: 1 scf.for
// S3-SCHED-NEXT: 1 nvvm.cp.async.wait.group 1
// S3-SCHED-NEXT: 1 nvvm.barrier0
// S3-SCHED-NEXT: 1 scf.if
// S3-SCHED-NEXT: 32 nvvm.cp.async.shared.global
// S3-SCHED-NEXT: 1 nvvm.cp.async.commit.group
// S3-SCHED-NEXT: 128 nvvm.mma.sync
// S3-SCHED-NOT: nvvm.barrier0
// S3-SCHED: 128 nvvm.mma.sync
// S3-SCHED-NEXT: 1 scf.yield

// PIPE: llvm.func @fa_forward_0(
// PIPE-SAME: fa.kernel_abi = #fa.kernel_abi<grid = [tiles(Nq, 64), Hq, B], threads = 128, shared = 147456,


func.func @f(%q: tensor<?x8x?x128xbf16>, %k: tensor<?x2x?x128xbf16>, %v: tensor<?x2x?x128xbf16>) -> tensor<?x8x?x128xbf16> {
  %o = fa.attention %q, %k, %v {causal = #fa.causal<bottom_right>} : tensor<?x8x?x128xbf16>, tensor<?x2x?x128xbf16>, tensor<?x2x?x128xbf16> -> tensor<?x8x?x128xbf16>
  return %o : tensor<?x8x?x128xbf16>
}
