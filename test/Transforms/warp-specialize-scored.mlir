// RUN: fa-opt %s -fa-fuse="chip=sm_90a warp-specialize=1" -fa-tile -fa-online-softmax -fa-warp-specialize -fa-async-copy | FileCheck %s

// fa-warp-specialize on the scored path (ALiBi and dropout, D = 64: 128 x
// 128 tiles, two consumer warpgroups): the producer is the plain path's,
// and the per-score terms stay where fa-online-softmax put them, so the
// rotated loop runs them under P(n - 1) V(n - 1): ALiBi's map on S(n)
// before the row max, dropout's on P(n) before P V's wait, which it feeds
// (`after`), and only then P(n) is rounded into P V's A registers.
// CHECK-LABEL: gpu.func @fa_forward_0
// CHECK-SAME: fa.block_kv = 128 : i64, fa.block_q = 128 : i64, fa.kv_stages = 2 : i64, fa.warp_specialize, fa.wgmma, known_block_size = array<i32: 384, 1, 1>
// CHECK: %[[SLOPE:.*]] = memref.load %arg4[%head]
// CHECK: fagpu.warp_specialize
// CHECK-SAME: consumer_registers = 240 : i64, consumer_threads = 256 : i64, ctas_per_sm = 1 : i64, producer_registers = 24 : i64
// CHECK: } consumers {
// CHECK: scf.for %[[N:.*]] = %{{.*}} to %{{.*}} step %{{.*}} iter_args({{.*}}, %[[P:[a-z0-9_]+]] = %{{.*}}, %{{[a-z0-9_]+}} = %{{.*}}, %{{[a-z0-9_]+}} = %{{.*}})
// CHECK: fagpu.take_turn of 2
// CHECK-NEXT: %[[S:.*]] = fagpu.mma {{.*}} {async, b_transposed, wgmma}
// CHECK-NEXT: fagpu.barrier_wait
// CHECK-NEXT: %[[PV:.*]] = fagpu.mma %[[P]], {{.*}} {async, wgmma}
// CHECK-NEXT: fagpu.pass_turn of 2
// CHECK-NEXT: %[[SR:.*]] = fagpu.mma_wait %[[S]] {pending = 1 : i64}
// CHECK-NEXT: fagpu.barrier_arrive
// CHECK-NEXT: %[[ALIBI:.*]] = fagpu.map %[[SR]] at [%{{.*}}, %[[N]]]
// CHECK: arith.mulf %[[SLOPE]], %{{.*}} : f32
// CHECK: fagpu.reduce_rows <max> %{{.*}}
// CHECK: %[[E:.*]] = math.exp2 %{{.*}} : tensor<128x128xf32, #fagpu.acc<warps = 8>>
// CHECK: %[[SUM:.*]] = fagpu.update_row_sum %{{.*}}, %[[E]]
// CHECK-NEXT: %[[DROP:.*]] = fagpu.map %[[E]] at [%{{.*}}, %[[N]]]
// CHECK: arith.mului_extended
// CHECK: fagpu.yield
// CHECK: %{{.*}}, %[[READY:.*]]:3 = fagpu.mma_wait %[[PV]] reads %[[P]] : {{.*}} after %{{.*}}, %[[SUM]], %[[DROP]] :
// CHECK-NEXT: fagpu.barrier_arrive
// CHECK-NEXT: fagpu.to_operand %[[READY]]#2
func.func @scored(%q: tensor<?x8x?x64xbf16>, %k: tensor<?x2x?x64xbf16>, %v: tensor<?x2x?x64xbf16>, %s: tensor<8xf32>, %seed: i64) -> tensor<?x8x?x64xbf16> {
  %o = fa.attention %q, %k, %v alibi_slopes(%s : tensor<8xf32>) dropout_seed(%seed) {dropout_p = 1.000000e-01 : f32} : tensor<?x8x?x64xbf16>, tensor<?x2x?x64xbf16>, tensor<?x2x?x64xbf16> -> tensor<?x8x?x64xbf16>
  return %o : tensor<?x8x?x64xbf16>
}
