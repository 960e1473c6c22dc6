// RUN: fa-opt %s -convert-fa-to-nvvm="chip=sm_90a bwd-prefetch=false bwd-atomic-dq=true" | FileCheck %s

// Atomic dQ (bwd-atomic-dq) on sm_90a: dkdv adds each Q tile's dQ into the f32 accumulator
// with one bulk reduction (cp.reduce.async.bulk .add.f32, the TMA unit's)
// of a shared [64 queries][64] f32 tile instead of 4096 atomics. Shared
// memory: backward-atomic-dq.mlir's 41472 bytes, then that tile (16 KB).
// bf16, D = 64, GQA 2:1.

// CHECK: name = "fa_backward_dkdv_0", shared_bytes = 57856 : i64
// CHECK-LABEL: llvm.func @fa_backward_dkdv_0(
// CHECK-SAME: %arg42: f32, %arg43: !llvm.ptr<1>)
// CHECK: %[[SMEM:.+]] = llvm.mlir.addressof @fa_smem
// CHECK: %[[DQOFF:.+]] = arith.constant 41472 : i32
// CHECK-NEXT: %[[SDQ:.+]] = llvm.getelementptr %[[SMEM]][%[[DQOFF]]] : (!llvm.ptr<3>, i32) -> !llvm.ptr<3>, i8
// Per Q tile: thread 0 waits until the previous tile's reduction has read
// the shared tile; the barrier publishes dS^T and frees the tile.
// CHECK: %[[T:.+]] = llvm.inline_asm has_side_effects "mov.b32 $0, $1;", "=r,r" %0 : (i32) -> i32
// CHECK-NEXT: %[[FIRST:.+]] = arith.cmpi eq, %[[T]], %c0_i32{{.*}} : i32
// CHECK-NEXT: scf.if %[[FIRST]] {
// CHECK-NEXT: llvm.inline_asm has_side_effects "cp.async.bulk.wait_group.read 0;", "~{memory}"
// CHECK-NEXT: }
// CHECK-NEXT: nvvm.barrier0
// dQ = dS K (32 mma), stored as f32 pairs: 8 n-tiles x 2 rows per lane.
// CHECK-COUNT-16: llvm.store %{{.+}}, %{{.+}} {alignment = 8 : i64} : vector<2xf32>, !llvm.ptr<3>
// CHECK-NEXT: llvm.inline_asm has_side_effects "fence.proxy.async.shared::cta;", "~{memory}"
// CHECK-NEXT: nvvm.barrier0
// Thread 0 adds min(64, Nq - q0) rows (x 256 bytes) at row q0 of this
// (b, h) in the accumulator.
// CHECK: scf.if
// CHECK: %[[LEFT:.+]] = arith.subi %arg38, %[[Q0:.+]] : i32
// CHECK: %[[ROWS:.+]] = arith.minsi %c64_i32{{.*}}, %[[LEFT]] : i32
// CHECK: %[[DST:.+]] = llvm.getelementptr %arg43[%{{.+}}] : (!llvm.ptr<1>, i64) -> !llvm.ptr<1>, f32
// CHECK-NEXT: %[[DSTI:.+]] = llvm.ptrtoint %[[DST]] : !llvm.ptr<1> to i64
// CHECK-NEXT: %[[SRC:.+]] = llvm.ptrtoint %[[SDQ]] : !llvm.ptr<3> to i32
// CHECK: %[[BYTES:.+]] = arith.muli %[[ROWS]], %c256_i32{{.*}} : i32
// CHECK-NEXT: llvm.inline_asm has_side_effects "cp.reduce.async.bulk.global.shared::cta.bulk_group.add.f32 [$0], [$1], $2;", "l,r,r,~{memory}" %[[DSTI]], %[[SRC]], %[[BYTES]] : (i64, i32, i32) -> ()
// CHECK-NEXT: llvm.inline_asm has_side_effects "cp.async.bulk.commit_group;", "~{memory}"
// No atomics; the last reduction completes before the kernel returns.
// CHECK-NOT: llvm.atomicrmw
// CHECK: llvm.inline_asm has_side_effects "cp.async.bulk.wait_group 0;", "~{memory}"
// CHECK: llvm.return
// CHECK-LABEL: llvm.func @fa_backward_dq_convert_0(

func.func @plain(%q: tensor<?x4x?x64xbf16>, %k: tensor<?x2x?x64xbf16>, %v: tensor<?x2x?x64xbf16>, %o: tensor<?x4x?x64xbf16>, %do: tensor<?x4x?x64xbf16>, %lse: tensor<?x4x?xf32>) -> (tensor<?x4x?x64xbf16>, tensor<?x2x?x64xbf16>, tensor<?x2x?x64xbf16>) {
  %dq, %dk, %dv = fa.attention_grad %q, %k, %v, %o, %do, %lse : tensor<?x4x?x64xbf16>, tensor<?x2x?x64xbf16>, tensor<?x2x?x64xbf16>, tensor<?x4x?x64xbf16>, tensor<?x4x?x64xbf16>, tensor<?x4x?xf32> -> tensor<?x4x?x64xbf16>, tensor<?x2x?x64xbf16>, tensor<?x2x?x64xbf16>
  return %dq, %dk, %dv : tensor<?x4x?x64xbf16>, tensor<?x2x?x64xbf16>, tensor<?x2x?x64xbf16>
}
