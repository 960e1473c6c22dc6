// RUN: fa-opt %s -fa-fuse=chip=sm_90a -fa-tile -fa-bounded-softmax -fa-online-softmax -fa-async-copy=stages=2 -fa-overlap-softmax | FileCheck %s

// fa-overlap-softmax where fa-bounded-softmax left no rescale (softcap 30,
// bf16, D = 128): P(n - 1) V(n - 1) adds to the carried accumulator and its
// wait's result is carried on as it is.
// CHECK-LABEL: gpu.func @fa_forward_0
// CHECK: scf.for %{{.*}} iter_args(%[[L:[a-z0-9_]+]] = %{{.*}}, %[[ACC:[a-z0-9_]+]] = %{{.*}}, %{{[a-z0-9_]+}} = %{{.*}}, %[[P:[a-z0-9_]+]] = %{{.*}}, %{{[a-z0-9_]+}} = %{{.*}})
// CHECK: %[[PV:[0-9]+]] = fagpu.mma %[[P]], %{{.*}} acc %[[ACC]] {async, wgmma}
// CHECK-NOT: fagpu.scale_rows
// CHECK: %[[O:[a-z0-9_]+]], %[[READY:[a-z0-9_]+]]:2 = fagpu.mma_wait %[[PV]] reads %[[P]]
// CHECK-NEXT: %[[PNEW:[0-9]+]] = fagpu.to_operand %[[READY]]#1
// CHECK-NEXT: scf.yield %[[READY]]#0, %[[O]], %{{.*}}, %[[PNEW]],
func.func @softcap(%q: tensor<?x16x?x128xbf16>) -> tensor<?x16x?x128xbf16> {
  %o = fa.attention %q, %q, %q {softcap = 30.0 : f32} : tensor<?x16x?x128xbf16>, tensor<?x16x?x128xbf16>, tensor<?x16x?x128xbf16> -> tensor<?x16x?x128xbf16>
  return %o : tensor<?x16x?x128xbf16>
}
