// RUN: fa-opt %s -fa-fuse="chip=sm_90a warp-specialize=1 block-kv=128" -fa-tile -fa-online-softmax -fa-warp-specialize="overlap=0 persistent=never" -fa-async-copy | FileCheck %s
// RUN: fa-opt %s -fa-fuse="chip=sm_90a warp-specialize=1 block-kv=128" -fa-tile -fa-online-softmax -fa-warp-specialize="tma=0 pingpong=0 overlap=0 persistent=never" -fa-async-copy | FileCheck %s --check-prefix=CP
// RUN: fa-opt %s -fa-fuse="chip=sm_90a warp-specialize=1 block-kv=128" -fa-tile -fa-online-softmax -fa-warp-specialize=persistent=never -fa-async-copy | FileCheck %s --check-prefix=OV

// fa-warp-specialize on a wgmma kernel (sm_90a, D = 128, 128 x 128 tiles,
// two consumer warpgroups, two K/V stages): rings of K and V, mbarriers
// (Q full; K, V full and empty per stage) after them, initialized before
// a CTA barrier; a producer warpgroup (the 384 threads' last) copies Q and
// then K(n), V(n) into stage n % 2 once the stage is empty, each copy
// signalling its full barrier; the consumers wait for Q, for K(n) before
// S and V(n) before P V, and release each stage after its product.
// fa-async-copy leaves the kernel alone.
// The copies are bulk (TMA): one arrival per full barrier, each bounded by
// its own source's rows (V's from a dim of V, not K's); the producer keeps
// 24 registers, the consumers 240.
// Ping-pong (the default with two consumer warpgroups): a turn is P V(n)
// and the start of S(n + 1), whose wait follows the pass; warpgroup 0 takes
// the first turn, and the last warpgroup's last pass is dropped.
// The launch: 384 threads and the barriers' shared memory.
// CHECK: %[[SMEM:.*]] = arith.constant 163912 : i32
// CHECK: %[[T:.*]] = arith.constant 384 : index
// CHECK: gpu.launch_func @fa_kernels::@fa_forward_0 {{.*}} threads in (%[[T]], %{{.*}}, %{{.*}}) dynamic_shared_memory_size %[[SMEM]]
// CHECK-LABEL: gpu.func @fa_forward_0
// CHECK-SAME: fa.kv_stages = 2 : i64, fa.warp_specialize, fa.wgmma, known_block_size = array<i32: 384, 1, 1>
// CHECK: %[[NQ:.*]] = memref.dim %arg0, %c2
// CHECK-NEXT: %[[NK:.*]] = memref.dim %arg1, %c2
// CHECK-NEXT: %[[NV:.*]] = memref.dim %arg2, %c2
// CHECK: %[[SK:[0-9]+]] = fagpu.alloc_shared {offset = 32768 : i64} : !fagpu.shared<2x128x128xbf16, wgmma>
// CHECK-NEXT: %[[SV:[0-9]+]] = fagpu.alloc_shared {offset = 98304 : i64} : !fagpu.shared<2x128x128xbf16, wgmma>
// CHECK-NEXT: %[[QF:[0-9]+]] = fagpu.alloc_barriers {arrivals = 1 : i64, offset = 163840 : i64} : !fagpu.barriers<1>
// CHECK-NEXT: %[[KF:[0-9]+]] = fagpu.alloc_barriers {arrivals = 1 : i64, offset = 163848 : i64} : !fagpu.barriers<2>
// CHECK-NEXT: %[[VF:[0-9]+]] = fagpu.alloc_barriers {arrivals = 1 : i64, offset = 163864 : i64} : !fagpu.barriers<2>
// CHECK-NEXT: %[[KE:[0-9]+]] = fagpu.alloc_barriers {arrivals = 2 : i64, offset = 163880 : i64} : !fagpu.barriers<2>
// CHECK-NEXT: %[[VE:[0-9]+]] = fagpu.alloc_barriers {arrivals = 2 : i64, offset = 163896 : i64} : !fagpu.barriers<2>
// CHECK-NEXT: gpu.barrier
// CHECK: fagpu.warp_specialize attributes {consumer_registers = 240 : i64, consumer_threads = 256 : i64, ctas_per_sm = 1 : i64, producer_registers = 24 : i64} producer {
// CHECK: fagpu.async_copy %arg0[%batch, %head, %{{.*}}] bound %[[NQ]] to %{{.*}}[%{{.*}}] signal %[[QF]][%{{.*}}] {bulk} :
// CHECK: scf.for %[[ROW:.*]] = %begin to %end step %{{.*}} iter_args(%[[ST:.*]] = %{{.*}}, %[[PAR:.*]] = %{{.*}}) -> (index, index) {
// CHECK: %[[FREE:[0-9]+]] = arith.xori %[[PAR]], %{{.*}} : index
// CHECK-NEXT: fagpu.barrier_wait %[[KE]][%[[ST]]] parity %[[FREE]]
// CHECK-NEXT: fagpu.async_copy %arg1[%batch, %{{.*}}, %[[ROW]]] bound %[[NK]] to %[[SK]][%[[ST]]] signal %[[KF]][%[[ST]]] {bulk}
// CHECK-NEXT: fagpu.barrier_wait %[[VE]][%[[ST]]] parity %[[FREE]]
// CHECK-NEXT: fagpu.async_copy %arg2[%batch, %{{.*}}, %[[ROW]]] bound %[[NV]] to %[[SV]][%[[ST]]] signal %[[VF]][%[[ST]]] {bulk}
// CHECK: } consumers {
// CHECK: fagpu.barrier_wait %[[QF]][%[[C0:.*]]] parity %[[C0]]
// CHECK-NEXT: fagpu.take_turn of 2 {first}
// CHECK-NEXT: scf.for {{.*}} iter_args({{.*}}, %[[CST:[a-z0-9]+]] = %{{.*}}, %[[CPAR:[a-z0-9]+]] = %{{.*}})
// CHECK-NEXT: fagpu.barrier_wait %[[KF]][%[[CST]]] parity %[[CPAR]]
// CHECK-NEXT: %[[S:.*]] = fagpu.mma %{{.*}}, %[[SK]][%[[CST]]] {async, b_transposed, wgmma}
// CHECK-NEXT: fagpu.pass_turn of 2
// CHECK-NEXT: %[[SW:.*]] = fagpu.mma_wait %[[S]] {pending = 0 : i64}
// CHECK-NEXT: fagpu.barrier_arrive %[[KE]][%[[CST]]]
// CHECK-NEXT: fagpu.tile_needs_mask
// CHECK-NEXT: scf.if
// CHECK-NEXT: fagpu.mask %[[SW]]
// CHECK: fagpu.barrier_wait %[[VF]][%[[CST]]] parity %[[CPAR]]
// CHECK-NEXT: fagpu.take_turn of 2
// CHECK-NEXT: fagpu.mma %{{.*}}, %[[SV]][%[[CST]]] acc %{{.*}} {wgmma}
// CHECK-NEXT: fagpu.barrier_arrive %[[VE]][%[[CST]]]
// CHECK: scf.yield
// CHECK-NEXT: }
// CHECK-NEXT: fagpu.pass_turn of 2 {last}
// CHECK: fagpu.store
// CHECK-NEXT: }
// CHECK-NEXT: gpu.return

// With tma=0 the copies are cp.async: each of the producer's 128 threads
// arrives on the full barriers, V is bounded by K's rows as fa-tile wrote
// it, and the producer keeps 40 registers for its addresses. With
// pingpong=0 the warpgroups do not take turns: S is waited for where it is.
// CP-LABEL: gpu.func @fa_forward_0
// CP-NOT: memref.dim %arg2
// CP: fagpu.alloc_barriers {arrivals = 128 : i64, offset = 163840 : i64} : !fagpu.barriers<1>
// CP-NEXT: fagpu.alloc_barriers {arrivals = 128 : i64, offset = 163848 : i64} : !fagpu.barriers<2>
// CP-NEXT: fagpu.alloc_barriers {arrivals = 128 : i64, offset = 163864 : i64} : !fagpu.barriers<2>
// CP: fagpu.warp_specialize attributes {consumer_registers = 232 : i64, consumer_threads = 256 : i64, ctas_per_sm = 1 : i64, producer_registers = 40 : i64} producer {
// CP-NOT: bulk
// CP: } consumers {
// CP-NOT: turn
// CP: fagpu.mma %{{.*}} {b_transposed, wgmma}
// CP-NOT: turn
// CP: gpu.return
// With overlap (the default) the consumers' loop is rotated: under a test
// that there is a tile, tile 0's S (the first turn) and softmax; then
// iteration n takes a turn to start S(n) and P(n - 1) V(n - 1) (V's stage
// and parity carried from the iteration before), passes it, waits for S
// alone (1 product pending), releases K(n), computes the softmax, waits for
// P V (reading P(n - 1), after the row state and P(n) in f32), releases
// V(n - 1), rounds P(n) and rescales; the last P V is the last turn.
// OV: fagpu.barrier_wait %[[QF:.*]][%[[C0:.*]]] parity %[[C0]]
// OV-NEXT: %[[ANY:.*]] = arith.cmpi slt, %begin, %end : index
// OV-NEXT: scf.if %[[ANY]]
// OV-NEXT: fagpu.barrier_wait %[[KF:.*]][%[[C0]]] parity %[[C0]]
// OV-NEXT: fagpu.take_turn of 2 {first}
// OV-NEXT: fagpu.mma %{{.*}}, %[[SK:.*]][%[[C0]]] {b_transposed, wgmma}
// OV-NEXT: fagpu.pass_turn of 2
// OV-NEXT: fagpu.barrier_arrive %[[KE:.*]][%[[C0]]]
// OV: %[[P0:.*]] = fagpu.to_operand
// OV: scf.for %{{.*}} = %{{.*}} to %end step %{{.*}} iter_args({{.*}}%[[ACC:arg[0-9]+]] = %{{.*}}, %[[ST:arg[0-9]+]] = %{{.*}}, %[[PAR:arg[0-9]+]] = %{{.*}}, %[[P:arg[0-9]+]] = %[[P0]], %[[VST:arg[0-9]+]] = %[[C0]], %[[VPAR:arg[0-9]+]] = %[[C0]])
// OV-NEXT: fagpu.barrier_wait %[[KF]][%[[ST]]] parity %[[PAR]]
// OV-NEXT: fagpu.take_turn of 2
// OV-NEXT: %[[S:.*]] = fagpu.mma %{{.*}}, %[[SK]][%[[ST]]] {async, b_transposed, wgmma}
// OV-NEXT: fagpu.barrier_wait %[[VF:.*]][%[[VST]]] parity %[[VPAR]]
// OV-NEXT: %[[PV:.*]] = fagpu.mma %[[P]], %[[SV:.*]][%[[VST]]] acc %[[ACC]] {async, wgmma}
// OV-NEXT: fagpu.pass_turn of 2
// OV-NEXT: fagpu.mma_wait %[[S]] {pending = 1 : i64}
// OV-NEXT: fagpu.barrier_arrive %[[KE]][%[[ST]]]
// OV: fagpu.mma_wait %[[PV]] reads %[[P]] : {{.*}} after {{.*}} {pending = 0 : i64}
// OV-NEXT: fagpu.barrier_arrive %[[VE:.*]][%[[VST]]]
// OV-NEXT: fagpu.to_operand
// OV-NEXT: fagpu.scale_rows
// OV-NEXT: scf.yield {{.*}}, %[[ST]], %[[PAR]] :
// OV-NEXT: }
// OV-NEXT: fagpu.barrier_wait %[[VF]][%[[LAST:.*]]#6] parity %[[LAST]]#7
// OV-NEXT: fagpu.take_turn of 2
// OV-NEXT: fagpu.mma %[[LAST]]#5, %[[SV]][%[[LAST]]#6] acc %[[LAST]]#2 {wgmma}
// OV-NEXT: fagpu.pass_turn of 2 {last}
// OV-NEXT: fagpu.barrier_arrive %[[VE]][%[[LAST]]#6]
// OV: } else {
// OV: fagpu.store
func.func @d128(%q: tensor<?x8x?x128xbf16>, %k: tensor<?x2x?x128xbf16>, %v: tensor<?x2x?x128xbf16>) -> tensor<?x8x?x128xbf16> {
  %o = fa.attention %q, %k, %v : tensor<?x8x?x128xbf16>, tensor<?x2x?x128xbf16>, tensor<?x2x?x128xbf16> -> tensor<?x8x?x128xbf16>
  return %o : tensor<?x8x?x128xbf16>
}
