// RUN: fa-opt %s -fa-fuse="chip=sm_90a warp-specialize=1" -fa-tile -fa-online-softmax -fa-warp-specialize -convert-fa-to-nvvm | FileCheck %s

// A persistent kernel (fa-warp-specialize's, D = 128): its ABI's grid is
// persistent(Nq, blockQ, ctas_per_sm) in x (the launcher makes min(items,
// SMs x C) CTAs); the host launch in the IR, which has no SM count, makes one
// CTA an item: tiles(Nq) x Hq x B. The items come from Q's sizes (its batch
// is a parameter now), the slot from ctaid.x and nctaid.x; the turns start
// with the last warpgroup's arrival at warpgroup 0's named barrier (1) and
// end with warpgroup 0's sync on it.
// CHECK: %[[TILES:.*]] = arith.ceildivui %[[SIZES:.*]]#2, %{{.*}} : index
// CHECK-NEXT: %[[TH:.*]] = arith.muli %[[TILES]], %[[SIZES]]#1 : index
// CHECK-NEXT: %[[ITEMS:.*]] = arith.muli %[[TH]], %[[SIZES]]#0 : index
// CHECK: gpu.launch_func @fa_kernels::@fa_forward_0 blocks in (%[[ITEMS]], %{{.*}}, %{{.*}}) threads in (%{{.*}}, %{{.*}}, %{{.*}})
// CHECK-LABEL: llvm.func @fa_forward_0
// CHECK-SAME: fa.kernel_abi = #fa.kernel_abi<grid = [persistent(Nq, 128, 1), 1, 1], threads = 384
// CHECK: arith.muli %{{.*}}, %c8 : index
// CHECK: %[[FIRST:.*]] = nvvm.read.ptx.sreg.ctaid.x : i32
// CHECK-NEXT: %{{.*}} = arith.index_cast %[[FIRST]] : i32 to index
// CHECK-NEXT: %[[STRIDE:.*]] = nvvm.read.ptx.sreg.nctaid.x : i32
// CHECK: nvvm.setmaxregister increase 240
// CHECK: %[[WG:.*]] = arith.shrui %{{.*}}, %{{.*}} : i32
// CHECK-NEXT: %[[C1:.*]] = arith.constant 1 : i32
// CHECK-NEXT: %[[LAST:.*]] = arith.cmpi eq, %[[WG]], %[[C1]] : i32
// CHECK-NEXT: scf.if %[[LAST]] {
// CHECK: nvvm.barrier.arrive id = %{{.*}} number_of_threads = %{{.*}}
// The end of the turns: warpgroup 0's sync, just before the producer's
// branch.
// RUN: fa-opt %s -fa-fuse="chip=sm_90a warp-specialize=1" -fa-tile -fa-online-softmax -fa-warp-specialize -convert-fa-to-nvvm | grep -B8 "setmaxregister  decrease 24" | FileCheck %s --check-prefix=END
// END: %[[WG0:.*]] = arith.cmpi eq, %{{.*}}, %c0_i32{{.*}} : i32
// END-NEXT: scf.if %[[WG0]] {
// END: nvvm.barrier id = %{{.*}} number_of_threads = %{{.*}}
// END-NEXT: }
// END-NEXT: } else {
// END-NEXT: nvvm.setmaxregister decrease 24
func.func @d128(%q: tensor<?x8x?x128xbf16>, %k: tensor<?x2x?x128xbf16>, %v: tensor<?x2x?x128xbf16>) -> tensor<?x8x?x128xbf16> {
  %o = fa.attention %q, %k, %v : tensor<?x8x?x128xbf16>, tensor<?x2x?x128xbf16>, tensor<?x2x?x128xbf16> -> tensor<?x8x?x128xbf16>
  return %o : tensor<?x8x?x128xbf16>
}
