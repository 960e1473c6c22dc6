// RUN: not fa-opt %s -fa-fuse="chip=sm_90a warp-specialize=1 block-kv=128" -fa-tile -fa-online-softmax -fa-warp-specialize=stages=5 2>&1 | FileCheck %s --check-prefix=STAGES
// RUN: not fa-opt %s -fa-fuse="chip=sm_90a warp-specialize=1 block-kv=128" -fa-tile -fa-warp-specialize 2>&1 | FileCheck %s --check-prefix=TWOPASS
// RUN: not fa-opt %s -fa-fuse="chip=sm_90a warp-specialize=1 block-kv=128" -fa-tile -fa-online-softmax -fa-warp-specialize=stages=4 2>&1 | FileCheck %s --check-prefix=SHARED
// STAGES: error: 'gpu.func' op fa-warp-specialize: stages must be 1 to 4 (got 5)
// TWOPASS: error: 'gpu.func' op fa-warp-specialize: the kernel still has fa-tile's two softmax loops (run fa-online-softmax first)
// SHARED: error: 'gpu.func' op fa-warp-specialize: 4 K/V stages of a 128 x 128 tile at D = 128 need 295056 bytes of shared memory; sm_90a gives a CTA 232448
func.func @d128(%q: tensor<?x8x?x128xbf16>, %k: tensor<?x8x?x128xbf16>, %v: tensor<?x8x?x128xbf16>) -> tensor<?x8x?x128xbf16> {
  %o = fa.attention %q, %k, %v : tensor<?x8x?x128xbf16>, tensor<?x8x?x128xbf16>, tensor<?x8x?x128xbf16> -> tensor<?x8x?x128xbf16>
  return %o : tensor<?x8x?x128xbf16>
}
