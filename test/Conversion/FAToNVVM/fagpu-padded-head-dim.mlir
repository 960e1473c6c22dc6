// RUN: fa-opt %s -fa-fuse="chip=sm_90a warp-specialize=1" -fa-tile -fa-online-softmax -fa-warp-specialize="overlap=0 persistent=never" -convert-fa-to-nvvm | FileCheck %s
// RUN: fa-opt %s -fa-fuse="chip=sm_90a warp-specialize=1" -fa-tile -fa-online-softmax -fa-warp-specialize="overlap=0 persistent=never tma=0" -convert-fa-to-nvvm | FileCheck %s --check-prefix=CPASYNC

// Head dims between wgmma's 64-column panels (Dk = 96, Dv = 80) in tiles of
// 128 columns, zero past the head dim. The tensor maps keep the tensors' D
// (KernelAbi.h: a (D, N, 1, H, B) map whose box is one 64-column panel): the
// producer expects a whole tile's 32768 bytes and copies it as two boxes, at
// columns 0 and 64, the second into the panel 128 rows x 128 bytes on; TMA
// fills zeros past D. S sums over 96 columns only (6 k-steps of 16 per
// warpgroup), and P V computes Dv = 80 columns (m64n80: B, V's tile, has
// 128, of which it reads the first 80).
// CHECK-LABEL: llvm.func @fa_forward_0(
// CHECK-SAME: fa.kernel_abi = #fa.kernel_abi<{{.*}}, tensor_map(q, 96, 128) : tmap, tensor_map(k, 96, 128) : tmap, tensor_map(v, 80, 128) : tmap]>
// CHECK-COUNT-6: wgmma.mma_async.sync.aligned.m64n128k16.f32.bf16.bf16
// CHECK-NOT: wgmma.mma_async.sync.aligned.m64n128k16
// CHECK-COUNT-8: wgmma.mma_async.sync.aligned.m64n80k16.f32.bf16.bf16
// CHECK-NOT: wgmma.mma_async
// CHECK: nvvm.setmaxregister decrease 24
// CHECK: %[[QBYTES:.*]] = arith.constant 32768 : i32
// CHECK-NEXT: nvvm.mbarrier.arrive.expect_tx %[[QF:.*]], %[[QBYTES]] : !llvm.ptr<3>, i32
// CHECK: %[[P0:.*]] = llvm.addrspacecast %[[Q:.*]] : !llvm.ptr<3> to !llvm.ptr<7>
// CHECK-NEXT: %[[C0:.*]] = arith.constant 0 : i32
// CHECK-NEXT: %[[Z0:.*]] = arith.constant 0 : i32
// CHECK-NEXT: nvvm.cp.async.bulk.tensor.shared.cluster.global %[[P0]], %[[QMAP:.*]], %[[QF]], box[%[[C0]], %[[ROW:.*]], %[[Z0]], %[[HEAD:.*]], %[[BATCH:.*]]] : !llvm.ptr<7>, !llvm.ptr
// CHECK-NEXT: %[[PANEL:.*]] = arith.constant 16384 : i32
// CHECK-NEXT: %[[AT:.*]] = llvm.getelementptr %[[Q]][%[[PANEL]]] : (!llvm.ptr<3>, i32) -> !llvm.ptr<3>, i8
// CHECK-NEXT: %[[P1:.*]] = llvm.addrspacecast %[[AT]] : !llvm.ptr<3> to !llvm.ptr<7>
// CHECK-NEXT: %[[C64:.*]] = arith.constant 64 : i32
// CHECK-NEXT: %[[Z1:.*]] = arith.constant 0 : i32
// CHECK-NEXT: nvvm.cp.async.bulk.tensor.shared.cluster.global %[[P1]], %[[QMAP]], %[[QF]], box[%[[C64]], %[[ROW]], %[[Z1]], %[[HEAD]], %[[BATCH]]] : !llvm.ptr<7>, !llvm.ptr
// CHECK-NOT: nvvm.cp.async.bulk.tensor
// CHECK: scf.for
// CHECK-COUNT-2: nvvm.cp.async.bulk.tensor.shared.cluster.global {{.*}}, %{{.*}}, box
// CHECK-NOT: nvvm.cp.async.bulk.tensor
// CHECK: nvvm.mbarrier.try_wait.parity
// CHECK-COUNT-2: nvvm.cp.async.bulk.tensor.shared.cluster.global {{.*}}, %{{.*}}, box
// CHECK-NOT: nvvm.cp.async.bulk.tensor
// CHECK: llvm.return

// Without TMA the producer's cp.async reads nothing (src-size 0) for the
// 16-byte chunks past D: chunk c of a 128-column row (16 chunks) holds data
// where c < 96 / 8.
// CPASYNC-LABEL: llvm.func @fa_forward_0(
// CPASYNC: nvvm.setmaxregister decrease 40
// CPASYNC: %[[C:.*]] = arith.remui %{{.*}}, %{{.*}} : i32
// CPASYNC: %[[ROWOK:.*]] = arith.cmpi slt, %{{.*}}, %{{.*}} : i32
// CPASYNC-NEXT: %[[CHUNKS:.*]] = arith.constant 12 : i32
// CPASYNC-NEXT: %[[COLOK:.*]] = arith.cmpi slt, %[[C]], %[[CHUNKS]] : i32
// CPASYNC-NEXT: %[[OK:.*]] = arith.andi %[[ROWOK]], %[[COLOK]] : i1
// CPASYNC: %[[SIZE:.*]] = arith.select %[[OK]], %c16_i32{{.*}}, %c0_i32{{.*}} : i32
// CPASYNC-NEXT: nvvm.cp.async.shared.global %{{.*}}, %{{.*}}, 16, cache =  cg, %[[SIZE]]
func.func @d96(%q: tensor<?x8x?x96xbf16>, %k: tensor<?x2x?x96xbf16>, %v: tensor<?x2x?x80xbf16>) -> tensor<?x8x?x80xbf16> {
  %o = fa.attention %q, %k, %v : tensor<?x8x?x96xbf16>, tensor<?x2x?x96xbf16>, tensor<?x2x?x80xbf16> -> tensor<?x8x?x80xbf16>
  return %o : tensor<?x8x?x80xbf16>
}
