// RUN: fa-opt %s -fa-fuse=chip=sm_90a -fa-tile -fa-online-softmax -fa-async-copy -convert-fa-to-nvvm | FileCheck %s

// convert-fa-to-nvvm's wgmma form of fagpu.mma (sm_90a, causal D = 64,
// 64 x 128 tiles, one warpgroup): the copies' waits fence their writes to
// the async proxy before the barrier; S = Q K^T is 4 k-steps of m64n128k16
// from two descriptors (the first without the accumulator), P V 8 k-steps
// of m64n64k16 with P's fragments from registers; each product is fenced,
// committed and waited for where the op is.
// CHECK-LABEL: llvm.func @fa_forward_0(
// CHECK-SAME: threads = 128
// CHECK: scf.for
// CHECK: nvvm.cp.async.wait.group 0
// CHECK-NEXT: nvvm.fence.proxy {kind = #nvvm.proxy_kind<async.shared>, space = #nvvm.shared_space<cta>}
// CHECK-NEXT: nvvm.barrier0
// CHECK: llvm.inline_asm has_side_effects "wgmma.fence.sync.aligned;"
// CHECK-NEXT: llvm.inline_asm has_side_effects "{ .reg .pred p; setp.ne.b32 p, 0, 0; wgmma.mma_async.sync.aligned.m64n128k16.f32.bf16.bf16 {{.*}} $64, $65, p, 1, 1, 0, 0; }"
// CHECK-COUNT-3: setp.ne.b32 p, 1, 0; wgmma.mma_async.sync.aligned.m64n128k16.f32.bf16.bf16 {{.*}}, p, 1, 1, 0, 0; }"
// CHECK-NOT: wgmma.mma_async
// CHECK: "wgmma.commit_group.sync.aligned;"
// CHECK-NEXT: "wgmma.wait_group.sync.aligned 0;"
// CHECK: llvm.inline_asm has_side_effects "wgmma.fence.sync.aligned;"
// CHECK-COUNT-8: setp.ne.b32 p, 1, 0; wgmma.mma_async.sync.aligned.m64n64k16.f32.bf16.bf16 {{.*}}, {${{[0-9]+}}, ${{[0-9]+}}, ${{[0-9]+}}, ${{[0-9]+}}}, ${{[0-9]+}}, p, 1, 1, 1; }"
// CHECK-NOT: wgmma.mma_async
// CHECK: "wgmma.commit_group.sync.aligned;"
// CHECK-NEXT: "wgmma.wait_group.sync.aligned 0;"
func.func @d64(%q: tensor<?x8x?x64xbf16>, %k: tensor<?x2x?x64xbf16>, %v: tensor<?x2x?x64xbf16>) -> tensor<?x8x?x64xbf16> {
  %o = fa.attention %q, %k, %v {causal = #fa.causal<bottom_right>} : tensor<?x8x?x64xbf16>, tensor<?x2x?x64xbf16>, tensor<?x2x?x64xbf16> -> tensor<?x8x?x64xbf16>
  return %o : tensor<?x8x?x64xbf16>
}
