// RUN: fa-opt %s -fa-fuse="chip=sm_90a warp-specialize=1" -fa-tile -fa-online-softmax -fa-warp-specialize=tma=0 -convert-fa-to-nvvm | FileCheck %s

// convert-fa-to-nvvm's warp-specialized kernel copying with cp.async
// (tma=0; fagpu-warp-specialize-tma.mlir: TMA) (sm_90a, D = 128, 128 x 128
// tiles, two consumer warpgroups): launched with 168 registers a thread
// (384 threads, one CTA an SM); thread 0 initializes the mbarriers (128
// producer arrivals for full, one per consumer warpgroup for empty) before
// the CTA barrier; threads below 256 raise their registers to 232 and wait
// for full stages (fencing cp.async's writes to wgmma's reads), their
// warpgroups' first threads release stages (a predicated arrive, not a
// branch); the producer lowers its
// registers to 40, waits for empty stages and has each copy's landing
// arrive on the full barrier.
// CHECK-LABEL: llvm.func @fa_forward_0(
// CHECK-SAME: nvvm.maxnreg = 168
// CHECK-SAME: nvvm.maxntid = array<i32: 384, 1, 1>
// CHECK: nvvm.mbarrier.init %{{.*}}, %{{.*}} : !llvm.ptr<3>, i32
// CHECK: nvvm.barrier0
// CHECK: %[[TID:.*]] = nvvm.read.ptx.sreg.tid.x : i32
// CHECK-NEXT: %[[N:.*]] = arith.constant 256 : i32
// CHECK-NEXT: %[[CONSUMER:.*]] = arith.cmpi ult, %[[TID]], %[[N]] : i32
// CHECK-NEXT: scf.if %[[CONSUMER]] {
// CHECK-NEXT: nvvm.setmaxregister increase 232
// CHECK: nvvm.mbarrier.try_wait.parity
// CHECK-NEXT: nvvm.fence.proxy {kind = #nvvm.proxy_kind<async.shared>, space = #nvvm.shared_space<cta>}
// CHECK: scf.for
// CHECK: nvvm.mbarrier.try_wait.parity
// CHECK-NEXT: nvvm.fence.proxy
// CHECK: wgmma.mma_async
// CHECK: %[[M127:.*]] = arith.constant 127 : i32
// CHECK-NEXT: %[[LANE:.*]] = arith.andi %{{.*}}, %[[M127]] : i32
// CHECK-NOT: scf.if
// CHECK: %[[FIRST:.*]] = arith.cmpi eq, %[[LANE]], %{{.*}} : i32
// CHECK-NEXT: %[[P:.*]] = llvm.zext %[[FIRST]] : i1 to i32
// CHECK-NEXT: llvm.inline_asm has_side_effects "{ .reg .pred p; setp.ne.b32 p, $0, 0; @p mbarrier.arrive.shared.b64 _, [$1]; }", "r,l,~{memory}" %[[P]], %{{.*}} : (i32, !llvm.ptr<3>) -> ()
// CHECK: nvvm.setmaxregister decrease 40
// CHECK: nvvm.cp.async.shared.global
// CHECK: nvvm.cp.async.mbarrier.arrive %{{.*}} {noinc = true} : !llvm.ptr<3>
// CHECK: scf.for
// CHECK: nvvm.mbarrier.try_wait.parity
// CHECK-NOT: nvvm.fence.proxy
// CHECK: nvvm.cp.async.mbarrier.arrive %{{.*}} {noinc = true}
// CHECK: nvvm.mbarrier.try_wait.parity
// CHECK: nvvm.cp.async.mbarrier.arrive %{{.*}} {noinc = true}
// CHECK: nvvm.cp.async.commit.group
// CHECK-NEXT: nvvm.cp.async.wait.group 0
func.func @d128(%q: tensor<?x8x?x128xbf16>, %k: tensor<?x2x?x128xbf16>, %v: tensor<?x2x?x128xbf16>) -> tensor<?x8x?x128xbf16> {
  %o = fa.attention %q, %k, %v : tensor<?x8x?x128xbf16>, tensor<?x2x?x128xbf16>, tensor<?x2x?x128xbf16> -> tensor<?x8x?x128xbf16>
  return %o : tensor<?x8x?x128xbf16>
}
