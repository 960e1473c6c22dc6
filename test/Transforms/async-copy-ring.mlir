// RUN: fa-opt %s -fa-fuse="chip=sm_90a wgmma=false" -fa-tile -fa-online-softmax -fa-async-copy=stages=1 | FileCheck %s --check-prefix=ONE
// RUN: fa-opt %s -fa-fuse="chip=sm_90a wgmma=false" -fa-tile -fa-online-softmax -fa-async-copy=stages=3 | FileCheck %s --check-prefix=THREE

// fa-async-copy on fa-tile's kernel: the copies become asynchronous, into
// rings of K and V tiles, with each wait naming the group it waits for.

// One stage, FlashAttention-2's schedule: K(0) before the loop; per tile,
// wait for K(n), issue V(n), S = Q K(n)^T, wait for V(n), issue K(n + 1).
// ONE: %[[SQ:[0-9]+]] = fagpu.alloc_shared {offset = 0 : i64} : !fagpu.shared<1x128x64xbf16>
// ONE-NEXT: %[[SK:[0-9]+]] = fagpu.alloc_shared {offset = 16384 : i64} : !fagpu.shared<1x64x64xbf16>
// ONE-NEXT: %[[SV:[0-9]+]] = fagpu.alloc_shared {offset = 24576 : i64} : !fagpu.shared<1x64x64xbf16>
// ONE-NEXT: %[[TQ:[0-9]+]] = fagpu.async_copy %{{.*}} to %[[SQ]][%{{.*}}] :
// ONE-NEXT: %[[GQ:[0-9]+]] = fagpu.async_commit %[[TQ]]
// ONE-NOT: fagpu.async_wait
// ONE: %[[BEGIN:[a-z0-9_]+]], %[[END:[a-z0-9_]+]] = fagpu.visible_keys
// ONE: %[[HAS:[0-9]+]] = arith.cmpi slt, %[[BEGIN]], %[[END]] : index
// ONE: %[[TK0:[0-9]+]] = fagpu.async_copy %{{.*}}[%{{.*}}, %{{.*}}, %[[BEGIN]]] bound %{{.*}} to %[[SK]][%{{.*}}] if %[[HAS]]
// ONE-NEXT: %[[GK0:[0-9]+]] = fagpu.async_commit %[[TK0]]
// Q's fragments: Q has landed (the K group after it may be in flight).
// ONE-NEXT: fagpu.async_wait %[[GQ]] {pending = 1 : i64}
// ONE-NEXT: gpu.barrier
// ONE-NEXT: fagpu.load_operand %[[SQ]]
// ONE: scf.for %[[KV0:[a-z0-9]+]] = %[[BEGIN]] to %[[END]] step %[[STEP:[a-z0-9]+]] iter_args({{.*}}, %[[GK:[a-z0-9]+]] = %[[GK0]])
// ONE-NEXT: fagpu.async_wait %[[GK]] {pending = 0 : i64}
// ONE-NEXT: gpu.barrier
// ONE-NEXT: %[[TV:[0-9]+]] = fagpu.async_copy %{{.*}}[%{{.*}}, %{{.*}}, %[[KV0]]] bound %{{.*}} to %[[SV]]
// ONE-NEXT: %[[GV:[0-9]+]] = fagpu.async_commit %[[TV]]
// ONE-NEXT: fagpu.mma %{{.*}}, %[[SK]][%{{.*}}] {b_transposed}
// ONE-NEXT: fagpu.async_wait %[[GV]] {pending = 0 : i64}
// ONE-NEXT: gpu.barrier
// ONE-NEXT: %[[NEXT:[0-9]+]] = arith.addi %[[KV0]], %[[STEP]] : index
// ONE-NEXT: %[[MORE:[0-9]+]] = arith.cmpi slt, %[[NEXT]], %[[END]] : index
// ONE-NEXT: %[[TK:[0-9]+]] = fagpu.async_copy %{{.*}}[%{{.*}}, %{{.*}}, %[[NEXT]]] bound %{{.*}} to %[[SK]][%{{.*}}] if %[[MORE]]
// ONE-NEXT: %[[GK1:[0-9]+]] = fagpu.async_commit %[[TK]]
// ONE: fagpu.mma %{{.*}}, %[[SV]][%{{.*}}] acc
// ONE-NEXT: scf.yield %{{.*}}, %{{.*}}, %{{.*}}, %[[GK1]] :

// Three stages: tiles 0 and 1 before the loop; per tile, wait for tile n
// (one later group may stay in flight), issue tile n + 2 into the stage of
// tile n - 1, compute on stage n % 3.
// THREE: %[[SK:[0-9]+]] = fagpu.alloc_shared {offset = 16384 : i64} : !fagpu.shared<3x64x64xbf16>
// THREE-NEXT: %[[SV:[0-9]+]] = fagpu.alloc_shared {offset = 40960 : i64} : !fagpu.shared<3x64x64xbf16>
// THREE: %[[K0:[0-9]+]] = fagpu.async_copy %{{.*}} to %[[SK]][%[[S0:[a-z0-9_]+]]] if
// THREE-NEXT: %[[V0:[0-9]+]] = fagpu.async_copy %{{.*}} to %[[SV]][%[[S0]]] if
// THREE-NEXT: %[[G0:[0-9]+]] = fagpu.async_commit %[[K0]], %[[V0]]
// THREE: %[[K1:[0-9]+]] = fagpu.async_copy %{{.*}} to %[[SK]][%[[S1:[a-z0-9_]+]]] if
// THREE-NEXT: %[[V1:[0-9]+]] = fagpu.async_copy %{{.*}} to %[[SV]][%[[S1]]] if
// THREE-NEXT: %[[G1:[0-9]+]] = fagpu.async_commit %[[K1]], %[[V1]]
// THREE: fagpu.async_wait %{{.*}} {pending = 2 : i64}
// THREE: scf.for {{.*}} iter_args({{.*}}, %[[GA:[a-z0-9]+]] = %[[G0]], %[[GB:[a-z0-9]+]] = %[[G1]])
// THREE-NEXT: fagpu.async_wait %[[GA]] {pending = 1 : i64}
// THREE-NEXT: gpu.barrier
// THREE: arith.remui %{{.*}}, %{{.*}} : i32
// THREE-NEXT: %[[STAGE:[0-9]+]] = arith.index_castui
// THREE: arith.remui
// THREE-NEXT: %[[FREED:[0-9]+]] = arith.index_castui
// THREE: fagpu.async_copy %{{.*}} to %[[SK]][%[[FREED]]] if
// THREE-NEXT: fagpu.async_copy %{{.*}} to %[[SV]][%[[FREED]]] if
// THREE-NEXT: %[[GC:[0-9]+]] = fagpu.async_commit
// THREE-NEXT: fagpu.mma %{{.*}}, %[[SK]][%[[STAGE]]] {b_transposed}
// THREE: fagpu.mma %{{.*}}, %[[SV]][%[[STAGE]]] acc
// THREE-NEXT: scf.yield %{{.*}}, %{{.*}}, %{{.*}}, %[[GB]], %[[GC]] :
func.func @causal(%q: tensor<?x8x?x64xbf16>, %k: tensor<?x2x?x64xbf16>, %v: tensor<?x2x?x64xbf16>) -> (tensor<?x8x?x64xbf16>, tensor<?x8x?xf32>) {
  %o, %lse = fa.attention %q, %k, %v {causal = #fa.causal<bottom_right>} : tensor<?x8x?x64xbf16>, tensor<?x2x?x64xbf16>, tensor<?x2x?x64xbf16> -> tensor<?x8x?x64xbf16>, tensor<?x8x?xf32>
  return %o, %lse : tensor<?x8x?x64xbf16>, tensor<?x8x?xf32>
}
