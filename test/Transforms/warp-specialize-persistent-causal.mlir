// RUN: fa-opt %s -fa-fuse="chip=sm_90a warp-specialize=1 block-q=64 block-kv=64" -fa-tile -fa-online-softmax -fa-warp-specialize -fa-async-copy | FileCheck %s --check-prefix=TIGHT
// RUN: fa-opt %s -fa-fuse="chip=sm_90a warp-specialize=1 block-q=64 block-kv=64" -fa-tile -fa-online-softmax -fa-warp-specialize=persistent=always -fa-async-copy | FileCheck %s --check-prefix=TIGHT-ALWAYS

// Causal at D = 128 with one consumer warpgroup (64 x 64 tiles, two CTAs an
// SM): carrying the tiles done spilled there, so not persistent by default;
// `always` still is.
// TIGHT-LABEL: gpu.func @fa_forward_0
// TIGHT-SAME: fa.block_q = 64
// TIGHT-NOT: fagpu.work_slot
// TIGHT: gpu.return
// TIGHT-ALWAYS-LABEL: gpu.func @fa_forward_0
// TIGHT-ALWAYS: fagpu.work_slot
// TIGHT-ALWAYS: fagpu.block_coords of %{{.*}} in %{{.*}} {heavy_first, paired}
func.func @causal_one_warpgroup(%q: tensor<?x8x?x128xbf16>, %k: tensor<?x8x?x128xbf16>, %v: tensor<?x8x?x128xbf16>) -> tensor<?x8x?x128xbf16> {
  %o = fa.attention %q, %k, %v {causal = #fa.causal<top_left>} : tensor<?x8x?x128xbf16>, tensor<?x8x?x128xbf16>, tensor<?x8x?x128xbf16> -> tensor<?x8x?x128xbf16>
  return %o : tensor<?x8x?x128xbf16>
}
