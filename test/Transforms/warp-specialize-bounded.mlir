// RUN: fa-opt %s -fa-fuse="chip=sm_90a warp-specialize=1" -fa-tile -fa-bounded-softmax -fa-online-softmax -fa-warp-specialize -fa-async-copy | FileCheck %s

// fa-warp-specialize's rotated loop where fa-bounded-softmax left no
// rescale (softcap 30, bf16, D = 128): the loop carries the accumulator
// itself, P(n - 1) V(n - 1) adds to it, and its wait's result is the next
// iteration's accumulator; the row sum is carried with no factor.
// CHECK-LABEL: gpu.func @fa_forward_0
// CHECK: } consumers {
// CHECK: scf.for %{{.*}} iter_args(%[[L:[a-z0-9_]+]] = %{{.*}}, %[[ACC:[a-z0-9_]+]] = %{{.*}}, %{{[a-z0-9_]+}} = %{{.*}}, %{{[a-z0-9_]+}} = %{{.*}}, %[[P:[a-z0-9_]+]] = %{{.*}}, %{{[a-z0-9_]+}} = %{{.*}}, %{{[a-z0-9_]+}} = %{{.*}})
// CHECK: fagpu.take_turn of 2
// CHECK-NEXT: %[[S:[0-9]+]] = fagpu.mma {{.*}} {async, b_transposed, wgmma}
// CHECK-NEXT: fagpu.barrier_wait
// CHECK-NEXT: %[[PV:[0-9]+]] = fagpu.mma %[[P]], %{{.*}} acc %[[ACC]] {async, wgmma}
// CHECK-NOT: fagpu.scale_rows
// CHECK-NOT: fagpu.reduce_rows <max>
// CHECK: %[[LNEW:[0-9]+]] = fagpu.update_row_sum %[[L]], %[[E:[0-9]+]]
// CHECK: %[[O:[a-z0-9_]+]], %[[READY:[a-z0-9_]+]]:2 = fagpu.mma_wait %[[PV]] reads %[[P]] {{.*}} after %[[LNEW]], %[[E]]
// CHECK-NEXT: fagpu.barrier_arrive
// CHECK-NEXT: %[[PNEW:[0-9]+]] = fagpu.to_operand %[[READY]]#1
// CHECK-NEXT: scf.yield %[[READY]]#0, %[[O]], %{{.*}}, %{{.*}}, %[[PNEW]],
func.func @softcap(%q: tensor<?x16x?x128xbf16>) -> tensor<?x16x?x128xbf16> {
  %o = fa.attention %q, %q, %q {softcap = 30.0 : f32} : tensor<?x16x?x128xbf16>, tensor<?x16x?x128xbf16>, tensor<?x16x?x128xbf16> -> tensor<?x16x?x128xbf16>
  return %o : tensor<?x16x?x128xbf16>
}
