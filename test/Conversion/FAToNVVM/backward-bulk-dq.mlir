// RUN: fa-opt %s -convert-fa-to-nvvm="chip=sm_90a bwd-prefetch=false bwd-atomic-dq=true bwd-dkdv-warps=4" | FileCheck %s

// Atomic dQ (bwd-atomic-dq) on sm_90a: dkdv adds each Q tile's dQ into the
// f32 accumulator with bulk reductions (cp.reduce.async.bulk .add.f32, the
// TMA unit's) instead of 4096 atomics. Each warp stores its part of dQ (16
// queries x 64 columns) as f32 rows padded to 72 floats (no bank
// conflicts), and lane r < 16 reduces row r: no CTA barrier after the
// stores. Shared memory: backward-atomic-dq.mlir's 41472 bytes, then 4
// warps x 16 x 72 x 4 bytes. bf16, D = 64, GQA 2:1.

// CHECK-LABEL: llvm.func @fa_backward_dkdv_0(
// CHECK-SAME: %arg45: f32, %arg46: !llvm.ptr<1>)
// CHECK-SAME: fa.kernel_abi = #fa.kernel_abi<grid = [tiles(Nk, 64), Hkv, B], threads = 128, shared = 59904,
// CHECK: %[[SMEM:.+]] = llvm.mlir.addressof @fa_smem
// Per Q tile: dS^T to shared memory (16 i32 pairs per lane), dK, then the
// barrier publishes dS^T; the warp's rows are at 41472 + 4608 warp.
// CHECK-COUNT-16: llvm.store %{{.+}}, %{{.+}} {alignment = 4 : i64} : i32, !llvm.ptr<3>
// CHECK: nvvm.barrier0
// CHECK-NEXT: %[[LANE:.+]] = llvm.inline_asm has_side_effects "mov.b32 $0, $1;", "=r,r"
// CHECK-NEXT: %[[WARP:.+]] = llvm.inline_asm has_side_effects "mov.b32 $0, $1;", "=r,r"
// CHECK-NEXT: %[[C4608:.+]] = arith.constant 4608 : i32
// CHECK-NEXT: %[[WOFF:.+]] = arith.muli %[[WARP]], %[[C4608]] : i32
// CHECK-NEXT: %[[C41472:.+]] = arith.constant 41472 : i32
// CHECK-NEXT: %[[OFF:.+]] = arith.addi %[[C41472]], %[[WOFF]] : i32
// CHECK-NEXT: %[[ROWS:.+]] = llvm.getelementptr %[[SMEM]][%[[OFF]]] : (!llvm.ptr<3>, i32) -> !llvm.ptr<3>, i8
// dQ = dS K (32 mma); then the row lanes wait until the previous tile's
// reductions have read the rows, and the warp syncs, before the 16 f32
// pair stores (8 n-tiles x 2 rows per lane).
// CHECK-COUNT-32: nvvm.mma.sync
// CHECK: %[[RL:.+]] = arith.cmpi ult, %{{.+}}, %c16_i32{{.*}} : i32
// CHECK-NEXT: scf.if %[[RL]] {
// CHECK-NEXT: llvm.inline_asm has_side_effects "cp.async.bulk.wait_group.read 0;", "~{memory}"
// CHECK-NEXT: }
// CHECK: nvvm.bar.warp.sync
// CHECK-COUNT-16: llvm.store %{{.+}}, %{{.+}} {alignment = 8 : i64} : vector<2xf32>, !llvm.ptr<3>
// CHECK-NEXT: llvm.inline_asm has_side_effects "fence.proxy.async.shared::cta;", "~{memory}"
// CHECK: nvvm.bar.warp.sync
// CHECK-NOT: nvvm.barrier0
// Lane r < 16 adds row r (288 bytes apart in shared memory) to query q0 +
// m0 + r's accumulator row, from the warp's first column: 64 floats.
// CHECK: scf.if
// CHECK: %[[Q:.+]] = arith.addi %{{.+}}, %[[LANE]] : i32
// CHECK-NEXT: %[[IN:.+]] = arith.cmpi slt, %[[Q]], %arg38 : i32
// CHECK-NEXT: scf.if %[[IN]] {
// CHECK: %[[ACC:.+]] = llvm.getelementptr %arg46[%{{.+}}] : (!llvm.ptr<1>, i64) -> !llvm.ptr<1>, f32
// CHECK: %[[DST:.+]] = llvm.getelementptr %[[ACC]][%{{.+}}] : (!llvm.ptr<1>, i64) -> !llvm.ptr<1>, f32
// CHECK-NEXT: %[[C288:.+]] = arith.constant 288 : i32
// CHECK-NEXT: %[[AT:.+]] = arith.muli %[[LANE]], %[[C288]] : i32
// CHECK-NEXT: %[[SRC:.+]] = llvm.getelementptr %[[ROWS]][%[[AT]]] : (!llvm.ptr<3>, i32) -> !llvm.ptr<3>, i8
// CHECK-NEXT: %[[DSTI:.+]] = llvm.ptrtoint %[[DST]] : !llvm.ptr<1> to i64
// CHECK-NEXT: %[[SRCI:.+]] = llvm.ptrtoint %[[SRC]] : !llvm.ptr<3> to i32
// CHECK-NEXT: %[[BYTES:.+]] = arith.constant 256 : i32
// CHECK-NEXT: llvm.inline_asm has_side_effects "cp.reduce.async.bulk.global.shared::cta.bulk_group.add.f32 [$0], [$1], $2;", "l,r,r,~{memory}" %[[DSTI]], %[[SRCI]], %[[BYTES]] : (i64, i32, i32) -> ()
// CHECK-NEXT: }
// CHECK-NEXT: llvm.inline_asm has_side_effects "cp.async.bulk.commit_group;", "~{memory}"
// No atomics; the row lanes' last reductions complete before the kernel
// returns.
// CHECK-NOT: llvm.atomicrmw
// CHECK: %[[END:.+]] = arith.cmpi ult, %{{.+}}, %c16_i32{{.*}} : i32
// CHECK-NEXT: scf.if %[[END]] {
// CHECK-NEXT: llvm.inline_asm has_side_effects "cp.async.bulk.wait_group 0;", "~{memory}"
// CHECK-NEXT: }
// CHECK-NEXT: llvm.return
// CHECK-LABEL: llvm.func @fa_backward_dq_convert_0(

func.func @plain(%q: tensor<?x4x?x64xbf16>, %k: tensor<?x2x?x64xbf16>, %v: tensor<?x2x?x64xbf16>, %o: tensor<?x4x?x64xbf16>, %do: tensor<?x4x?x64xbf16>, %lse: tensor<?x4x?xf32>) -> (tensor<?x4x?x64xbf16>, tensor<?x2x?x64xbf16>, tensor<?x2x?x64xbf16>) {
  %dq, %dk, %dv = fa.attention_grad %q, %k, %v, %o, %do, %lse : tensor<?x4x?x64xbf16>, tensor<?x2x?x64xbf16>, tensor<?x2x?x64xbf16>, tensor<?x4x?x64xbf16>, tensor<?x4x?x64xbf16>, tensor<?x4x?xf32> -> tensor<?x4x?x64xbf16>, tensor<?x2x?x64xbf16>, tensor<?x2x?x64xbf16>
  return %dq, %dk, %dv : tensor<?x4x?x64xbf16>, tensor<?x2x?x64xbf16>, tensor<?x2x?x64xbf16>
}
