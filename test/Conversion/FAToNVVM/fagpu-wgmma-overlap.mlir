// RUN: fa-opt %s -fa-fuse=chip=sm_90a -fa-tile -fa-online-softmax -fa-async-copy -fa-overlap-softmax -convert-fa-to-nvvm | FileCheck %s

// convert-fa-to-nvvm's async wgmma products (sm_90a, D = 64, 64 x 128
// tiles, two K/V stages, after fa-overlap-softmax): tile 0's S is waited
// for where it is; in the loop S(n) (4 k-steps of m64n128k16) and
// P(n - 1) V(n - 1) (8 of m64n64k16) are each fenced and committed without
// a wait, the softmax waits for S with one group pending and the rescale
// for P V with none; the last P V after the loop is waited for at once.
// CHECK-LABEL: llvm.func @fa_forward_0(
// CHECK: "wgmma.commit_group.sync.aligned;"
// CHECK-NEXT: "wgmma.wait_group.sync.aligned 0;"
// CHECK: scf.for
// CHECK: nvvm.cp.async.wait.group 0
// CHECK-NEXT: nvvm.fence.proxy
// CHECK-NEXT: nvvm.barrier0
// CHECK: "wgmma.fence.sync.aligned;"
// CHECK-COUNT-4: wgmma.mma_async.sync.aligned.m64n128k16.f32.bf16.bf16
// CHECK-NOT: wgmma.
// CHECK: "wgmma.commit_group.sync.aligned;"
// CHECK-NOT: wait_group
// CHECK: "wgmma.fence.sync.aligned;"
// CHECK-COUNT-8: wgmma.mma_async.sync.aligned.m64n64k16.f32.bf16.bf16
// CHECK-NOT: wgmma.
// CHECK: "wgmma.commit_group.sync.aligned;"
// CHECK-NEXT: "wgmma.wait_group.sync.aligned 1;"
// The waited registers pass through an empty asm before any read.
// CHECK-NEXT: llvm.inline_asm has_side_effects "", "=f,=f,
// CHECK-NOT: wgmma.mma_async
// CHECK: "wgmma.wait_group.sync.aligned 0;"
// CHECK-NEXT: llvm.inline_asm has_side_effects "", "=f,=f,
// CHECK: scf.yield
// CHECK: nvvm.cp.async.wait.group 0
// CHECK-NEXT: nvvm.fence.proxy
// CHECK-NEXT: nvvm.barrier0
// CHECK: "wgmma.fence.sync.aligned;"
// CHECK-COUNT-8: wgmma.mma_async.sync.aligned.m64n64k16.f32.bf16.bf16
// CHECK-NOT: wgmma.
// CHECK: "wgmma.commit_group.sync.aligned;"
// CHECK-NEXT: "wgmma.wait_group.sync.aligned 0;"
func.func @d64(%q: tensor<?x8x?x64xbf16>, %k: tensor<?x2x?x64xbf16>, %v: tensor<?x2x?x64xbf16>) -> tensor<?x8x?x64xbf16> {
  %o = fa.attention %q, %k, %v : tensor<?x8x?x64xbf16>, tensor<?x2x?x64xbf16>, tensor<?x2x?x64xbf16> -> tensor<?x8x?x64xbf16>
  return %o : tensor<?x8x?x64xbf16>
}
