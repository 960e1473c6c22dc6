// RUN: fa-opt %s -fa-fuse=chip=sm_90a -fa-tile -fa-online-softmax -fa-async-copy -fa-overlap-softmax | FileCheck %s
// A rotated kernel stays as it is:
// RUN: fa-opt %s -fa-fuse=chip=sm_90a -fa-tile -fa-online-softmax -fa-async-copy -fa-overlap-softmax -fa-overlap-softmax | FileCheck %s

// fa-overlap-softmax on a wgmma kernel with two K/V stages (sm_90a, D = 128,
// 128 x 128 tiles): tile 0's scores and softmax are peeled under "there is a
// tile"; the loop from tile 1 starts S(n) and P(n - 1) V(n - 1) as async
// products, waits for S(n) alone (one product pending), computes the
// softmax, then waits for P V, rounds P and rescales the accumulator; the
// last P V
// follows the loop once its V has landed. V's copies run one tile behind
// K's: tile 0's group holds K(0) alone, iteration n's K(n + 1) and V(n).
// CHECK-LABEL: gpu.func @fa_forward_0
// CHECK-SAME: fa.kv_stages = 2 : i64, fa.wgmma
// CHECK: %[[SK:[0-9]+]] = fagpu.alloc_shared {offset = 32768 : i64} : !fagpu.shared<2x128x128xbf16, wgmma>
// CHECK-NEXT: %[[SV:[0-9]+]] = fagpu.alloc_shared {offset = 98304 : i64} : !fagpu.shared<2x128x128xbf16, wgmma>
// CHECK: %begin, %end = fagpu.visible_keys
// CHECK: %[[K0:[0-9]+]] = fagpu.async_copy %arg1[%batch, %{{[0-9]+}}, %begin] bound %{{.*}} to %[[SK]][%{{.*}}] if
// CHECK-NEXT: %[[G0:[0-9]+]] = fagpu.async_commit %[[K0]]{{$}}
// CHECK-NEXT: %[[ANY:[0-9]+]] = arith.cmpi slt, %begin, %end : index
// CHECK-NEXT: %[[R:[0-9]+]]:4 = scf.if %[[ANY]] -> (tensor<128xf32, #fagpu.rows<warps = 8>>, tensor<128xf32, #fagpu.rows<warps = 8, partial = true>>, tensor<128x128xf32, #fagpu.acc<warps = 8>>, !fagpu.token) {
// CHECK-NEXT: fagpu.async_wait %[[G0]] {pending = 0 : i64}
// CHECK-NEXT: gpu.barrier
// Tile 0: K(1) and V(0) issued, S(0) waited for where it is.
// CHECK: %[[K1:[0-9]+]] = fagpu.async_copy %arg1[%batch, %{{[0-9]+}}, %{{[0-9]+}}] bound %{{.*}} to %[[SK]][%{{[0-9]+}}] if
// CHECK-NEXT: %[[V0:[0-9]+]] = fagpu.async_copy %arg2[%batch, %{{[0-9]+}}, %begin] bound %{{.*}} to %[[SV]][%[[ST0:[0-9]+]]] :
// CHECK-NEXT: %[[G1:[0-9]+]] = fagpu.async_commit %[[K1]], %[[V0]]
// CHECK-NEXT: fagpu.mma %{{[0-9]+}}, %[[SK]][%[[ST0]]] {b_transposed, wgmma}
// CHECK: %[[ACC0:[0-9]+]] = fagpu.scale_rows %cst{{.*}} : tensor<128x128xf32, #fagpu.acc<warps = 8>>
// CHECK: %[[P0:[0-9]+]] = fagpu.to_operand
// CHECK-NOT: fagpu.mma
// CHECK: %[[F:[0-9]+]]:6 = scf.for %[[KV0:[a-z0-9]+]] = %{{[0-9]+}} to %end step %{{.*}} iter_args(%[[M:[a-z0-9]+]] = %{{[0-9]+}}, %[[L:[a-z0-9]+]] = %{{[0-9]+}}, %[[ACC:[a-z0-9]+]] = %[[ACC0]], %[[G:[a-z0-9]+]] = %[[G1]], %[[P:[a-z0-9]+]] = %[[P0]], %[[ST:[a-z0-9]+]] = %[[ST0]])
// CHECK-SAME: -> (tensor<128xf32, #fagpu.rows<warps = 8>>, tensor<128xf32, #fagpu.rows<warps = 8, partial = true>>, tensor<128x128xf32, #fagpu.acc<warps = 8>>, !fagpu.token, tensor<128x128xbf16, #fagpu.operand<warps = 8>>, index)
// CHECK-NEXT: fagpu.async_wait %[[G]] {pending = 0 : i64}
// CHECK-NEXT: gpu.barrier
// CHECK: %[[KN:[0-9]+]] = fagpu.async_copy %arg1[%batch, %{{[0-9]+}}, %{{[0-9]+}}] bound %{{.*}} to %[[SK]][%{{[0-9]+}}] if
// CHECK-NEXT: %[[VN:[0-9]+]] = fagpu.async_copy %arg2[%batch, %{{[0-9]+}}, %[[KV0]]] bound %{{.*}} to %[[SV]][%[[STN:[0-9]+]]] :
// CHECK-NEXT: %[[GN:[0-9]+]] = fagpu.async_commit %[[KN]], %[[VN]]
// CHECK-NEXT: %[[S:[0-9]+]] = fagpu.mma %{{[0-9]+}}, %[[SK]][%[[STN]]] {async, b_transposed, wgmma}
// CHECK-NEXT: %[[PV:[0-9]+]] = fagpu.mma %[[P]], %[[SV]][%[[ST]]] acc %[[ACC]] {async, wgmma}
// CHECK-NEXT: %[[SW:[a-z0-9_]+]] = fagpu.mma_wait %[[S]] {pending = 1 : i64} : tensor<128x128xf32, #fagpu.acc<warps = 8>>
// CHECK-NEXT: fagpu.tile_needs_mask
// CHECK-NEXT: scf.if
// CHECK-NEXT: fagpu.mask %[[SW]]
// CHECK: %[[MN:[0-9]+]] = arith.maximumf %[[M]]
// CHECK: %[[ALPHA:[0-9]+]] = math.exp2
// CHECK: %[[PF:[0-9]+]] = math.exp2
// CHECK-NEXT: %[[LN:[0-9]+]] = fagpu.update_row_sum
// P V's wait keeps P(n - 1)'s registers until it and has m, l and P (f32)
// computed before it; P is rounded into P V's A operand after it.
// CHECK-NEXT: %[[PVW:[a-z0-9_]+]], %[[RDY:[a-z0-9_]+]]:3 = fagpu.mma_wait %[[PV]] reads %[[P]] : tensor<128x128xbf16, #fagpu.operand<warps = 8>> after %[[MN]], %[[LN]], %[[PF]] : tensor<128xf32, #fagpu.rows<warps = 8>>, tensor<128xf32, #fagpu.rows<warps = 8, partial = true>>, tensor<128x128xf32, #fagpu.acc<warps = 8>> {pending = 0 : i64} : tensor<128x128xf32, #fagpu.acc<warps = 8>>
// CHECK-NEXT: %[[PN:[0-9]+]] = fagpu.to_operand %[[RDY]]#2
// CHECK-NEXT: %[[ACCN:[0-9]+]] = fagpu.scale_rows %[[PVW]], %[[ALPHA]]
// CHECK-NEXT: scf.yield %[[RDY]]#0, %[[RDY]]#1, %[[ACCN]], %[[GN]], %[[PN]], %[[STN]]
// CHECK-NEXT: }
// CHECK-NEXT: fagpu.async_wait %[[F]]#3 {pending = 0 : i64}
// CHECK-NEXT: gpu.barrier
// CHECK-NEXT: %[[LAST:[0-9]+]] = fagpu.mma %[[F]]#4, %[[SV]][%[[F]]#5] acc %[[F]]#2 {wgmma}
// CHECK-NEXT: scf.yield %[[F]]#0, %[[F]]#1, %[[LAST]], %[[F]]#3
// CHECK-NEXT: } else {
// CHECK-NEXT: scf.yield %cst, %cst{{.*}}, %cst{{.*}}, %[[G0]]
// CHECK-NEXT: }
// CHECK: fagpu.reduce_rows <sum> %[[R]]#1
// CHECK: arith.mulf %[[R]]#2
func.func @d128(%q: tensor<?x8x?x128xbf16>, %k: tensor<?x2x?x128xbf16>, %v: tensor<?x2x?x128xbf16>) -> tensor<?x8x?x128xbf16> {
  %o = fa.attention %q, %k, %v : tensor<?x8x?x128xbf16>, tensor<?x2x?x128xbf16>, tensor<?x2x?x128xbf16> -> tensor<?x8x?x128xbf16>
  return %o : tensor<?x8x?x128xbf16>
}

// One K/V stage (D = 256's 64 x 64 tiles): FlashAttention-2's schedule has
// no buffer for V(n - 1); the kernel is left as it is.
// CHECK-LABEL: gpu.func @fa_forward_1
// CHECK-SAME: fa.kv_stages = 1 : i64, fa.wgmma
// CHECK-NOT: async,
// CHECK-NOT: fagpu.mma_wait
// CHECK: gpu.return
func.func @d256(%q: tensor<?x8x?x256xbf16>, %k: tensor<?x8x?x256xbf16>, %v: tensor<?x8x?x256xbf16>) -> tensor<?x8x?x256xbf16> {
  %o = fa.attention %q, %k, %v : tensor<?x8x?x256xbf16>, tensor<?x8x?x256xbf16>, tensor<?x8x?x256xbf16> -> tensor<?x8x?x256xbf16>
  return %o : tensor<?x8x?x256xbf16>
}
