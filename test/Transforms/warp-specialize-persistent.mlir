// RUN: fa-opt %s -split-input-file -fa-fuse="chip=sm_90a warp-specialize=1 block-kv=128" -fa-tile -fa-online-softmax -fa-warp-specialize -fa-async-copy | FileCheck %s
// RUN: fa-opt %s -split-input-file -fa-fuse="chip=sm_90a warp-specialize=1 block-kv=128" -fa-tile -fa-online-softmax -fa-warp-specialize="persistent=always causal-order=paired" -fa-async-copy | FileCheck %s --check-prefix=ALWAYS
// RUN: fa-opt %s -split-input-file -fa-fuse="chip=sm_90a warp-specialize=1 block-kv=128" -fa-tile -fa-online-softmax -fa-warp-specialize=persistent=never -fa-async-copy | FileCheck %s --check-prefix=NEVER
// RUN: not fa-opt %s -split-input-file -fa-fuse="chip=sm_90a warp-specialize=1 block-kv=128" -fa-tile -fa-online-softmax -fa-warp-specialize=persistent=sometimes 2>&1 | FileCheck %s --check-prefix=BAD
// BAD: error: 'gpu.func' op fa-warp-specialize: persistent must be auto, always or never (got 'sometimes')

// fa-warp-specialize's persistent grid (D = 128, no mask: every query tile
// visits the same keys). The keys are found once for the CTA (from row 0);
// the items, tiles(Nq) x Hq x B, are shared round robin from the CTA's slot,
// ceil((items - first) / stride) of them its own. Both roles loop over the
// CTA's items k = 0, 1, ...: the item first + k stride, its coordinates (the
// tile fastest) and what depends on them (K/V head, row). Every item visits
// the same number of key tiles, so the rings' stage and parity at item k
// follow from k (k * tiles % 2, k * tiles / 2 & 1), and Q's parity is
// k & 1. Q has an "empty" barrier (one arrival per consumer warpgroup): the
// producer waits for it with the other parity before copying the item's Q.
// The consumers release Q once the item's last S is done (before its last
// P V), or at once where the item has no key tile, and store O with the
// item's coordinates, recomputed from the item after the loop. One
// ping-pong rotation spans the items: started before the first (the last
// warpgroup passes) and ended after the last (warpgroup 0 takes); no take
// or pass inside is `first` or `last`.
// CHECK-LABEL: gpu.func @fa_forward_0
// CHECK: %[[QF:[0-9]+]] = fagpu.alloc_barriers {arrivals = 1 : i64, offset = 163840 : i64} : !fagpu.barriers<1>
// CHECK: %[[QE:[0-9]+]] = fagpu.alloc_barriers {arrivals = 2 : i64, offset = 163912 : i64} : !fagpu.barriers<1>
// CHECK: gpu.barrier
// CHECK: %[[C0:.*]] = arith.constant 0 : index
// CHECK: %[[BEGIN:.*]], %[[END:.*]] = fagpu.visible_keys %[[C0]] of
// CHECK: %[[NQ:.*]] = memref.dim %arg0, %{{.*}} : memref<?x8x?x128xbf16
// CHECK: %[[R:.*]] = arith.addi %[[NQ]], %{{.*}} : index
// CHECK: %[[TILES:.*]] = arith.divui %[[R]], %{{.*}} : index
// CHECK: %[[B:.*]] = memref.dim %arg0, %{{.*}} : memref<?x8x?x128xbf16
// CHECK: %[[TH:.*]] = arith.muli %[[TILES]], %{{.*}} : index
// CHECK: %[[ITEMS:.*]] = arith.muli %[[TH]], %[[B]] : index
// CHECK: %[[FIRST:.*]], %[[STRIDE:.*]] = fagpu.work_slot
// CHECK: %[[LEFT:.*]] = arith.subi %[[ITEMS]], %[[FIRST]] : index
// CHECK: %[[POS:.*]] = arith.maxsi %[[LEFT]], %{{.*}} : index
// CHECK: %[[COUNT:.*]] = arith.divui %{{.*}}, %[[STRIDE]] : index
// CHECK: fagpu.warp_specialize {{.*}} producer {
// CHECK: scf.for %[[K:.*]] = %{{.*}} to %[[COUNT]] step %{{.*}} {
// CHECK: %[[KS:.*]] = arith.muli %[[K]], %[[STRIDE]] : index
// CHECK: %[[ITEM:.*]] = arith.addi %[[FIRST]], %[[KS]] : index
// CHECK: %[[BATCH:.*]], %[[HEAD:.*]], %[[TILE:.*]] = fagpu.block_coords of %[[ITEM]] in %[[TILES]]
// CHECK: %[[KVH:.*]] = fagpu.kv_head %[[HEAD]] of
// CHECK: %[[ROW:.*]] = arith.muli %[[TILE]], %{{.*}} : index
// CHECK: %[[DONE:.*]] = arith.muli %[[K]], %{{.*}} : index
// CHECK: %[[STAGE:.*]] = arith.remui %[[DONE]], %{{.*}} : index
// CHECK: %[[LAP:.*]] = arith.divui %[[DONE]], %{{.*}} : index
// CHECK: %[[PAR:.*]] = arith.andi %[[LAP]], %{{.*}} : index
// CHECK: %[[QPAR:.*]] = arith.andi %[[K]], %{{.*}} : index
// CHECK: %[[FREE:.*]] = arith.xori %[[QPAR]], %{{.*}} : index
// CHECK: fagpu.barrier_wait %[[QE]][%{{.*}}] parity %[[FREE]]
// CHECK: fagpu.async_copy %arg0[%[[BATCH]], %[[HEAD]], %[[ROW]]] bound %{{.*}} signal %[[QF]]
// CHECK: scf.for %{{.*}} = %[[BEGIN]] to %[[END]] step %{{.*}} iter_args(%{{.*}} = %[[STAGE]], %{{.*}} = %[[PAR]])
// CHECK: fagpu.async_copy %arg1[%[[BATCH]], %[[KVH]], %{{.*}}]
// CHECK: } consumers {
// CHECK: fagpu.pass_turn of 2 {start}
// CHECK: scf.for %[[CK:.*]] = %{{.*}} to %[[COUNT]] step %{{.*}} {
// CHECK: %[[CITEM:.*]] = arith.addi %[[FIRST]], %{{.*}} : index
// CHECK: fagpu.block_coords of %[[CITEM]] in %[[TILES]]
// CHECK: %[[CQPAR:.*]] = arith.andi %[[CK]], %{{.*}} : index
// CHECK: fagpu.barrier_wait %[[QF]][%{{.*}}] parity %[[CQPAR]]
// CHECK: %[[ANY:.*]] = arith.cmpi slt, %[[BEGIN]], %[[END]] : index
// CHECK: scf.if %[[ANY]]
// CHECK-NOT: {first}
// CHECK-NOT: {last}
// CHECK: fagpu.barrier_arrive %[[QE]][%{{.*}}]
// CHECK: fagpu.barrier_wait
// CHECK: fagpu.take_turn of 2
// CHECK: fagpu.mma
// CHECK: } else {
// CHECK: fagpu.barrier_arrive %[[QE]][%{{.*}}]
// CHECK: %[[OB:.*]], %[[OH:.*]], %[[OT:.*]] = fagpu.block_coords of %[[CITEM]] in %[[TILES]]
// CHECK: %[[OROW:.*]] = arith.muli %[[OT]], %{{.*}} : index
// CHECK: fagpu.store %{{.*}} to %arg3[%[[OB]], %[[OH]], %[[OROW]]]
// CHECK: }
// CHECK: fagpu.take_turn of 2 {end}
// ALWAYS-LABEL: gpu.func @fa_forward_0
// ALWAYS: fagpu.work_slot
// NEVER-LABEL: gpu.func @fa_forward_0
// NEVER-NOT: fagpu.work_slot
// NEVER: fagpu.take_turn of 2 {first}
func.func @d128(%q: tensor<?x8x?x128xbf16>, %k: tensor<?x2x?x128xbf16>, %v: tensor<?x2x?x128xbf16>) -> tensor<?x8x?x128xbf16> {
  %o = fa.attention %q, %k, %v : tensor<?x8x?x128xbf16>, tensor<?x2x?x128xbf16>, tensor<?x2x?x128xbf16> -> tensor<?x8x?x128xbf16>
  return %o : tensor<?x8x?x128xbf16>
}

// -----

// D = 64: persistent by default too (the plain path at every D).
// CHECK-LABEL: gpu.func @fa_forward_0
// CHECK: fagpu.work_slot
// CHECK: fagpu.block_coords of
// ALWAYS-LABEL: gpu.func @fa_forward_0
// ALWAYS: fagpu.work_slot
// ALWAYS: fagpu.block_coords of
// NEVER-LABEL: gpu.func @fa_forward_0
// NEVER-NOT: fagpu.work_slot
// NEVER: gpu.return
func.func @d64(%q: tensor<?x8x?x64xbf16>, %k: tensor<?x8x?x64xbf16>, %v: tensor<?x8x?x64xbf16>) -> tensor<?x8x?x64xbf16> {
  %o = fa.attention %q, %k, %v : tensor<?x8x?x64xbf16>, tensor<?x8x?x64xbf16>, tensor<?x8x?x64xbf16> -> tensor<?x8x?x64xbf16>
  return %o : tensor<?x8x?x64xbf16>
}

// -----

// A term of the score alone (softcap: a fagpu.map that reads neither the
// position nor memory) is persistent by default: it measured faster so.
// CHECK-LABEL: gpu.func @fa_forward_0
// CHECK: fagpu.work_slot
// CHECK: fagpu.map
// ALWAYS-LABEL: gpu.func @fa_forward_0
// ALWAYS: fagpu.work_slot
// NEVER-LABEL: gpu.func @fa_forward_0
// NEVER-NOT: fagpu.work_slot
// NEVER: gpu.return
func.func @softcap(%q: tensor<?x8x?x64xbf16>, %k: tensor<?x8x?x64xbf16>, %v: tensor<?x8x?x64xbf16>) -> tensor<?x8x?x64xbf16> {
  %o = fa.attention %q, %k, %v {softcap = 30.0 : f32} : tensor<?x8x?x64xbf16>, tensor<?x8x?x64xbf16>, tensor<?x8x?x64xbf16> -> tensor<?x8x?x64xbf16>
  return %o : tensor<?x8x?x64xbf16>
}

// -----

// A term of the position (ALiBi's slope, loaded per item, times |i - j|):
// persistent by default.
// CHECK-LABEL: gpu.func @fa_forward_0
// CHECK: fagpu.work_slot
// CHECK: memref.load
// CHECK: fagpu.map
// ALWAYS-LABEL: gpu.func @fa_forward_0
// ALWAYS: fagpu.work_slot
// ALWAYS: fagpu.map
// NEVER-LABEL: gpu.func @fa_forward_0
// NEVER-NOT: fagpu.work_slot
// NEVER: gpu.return
func.func @alibi(%q: tensor<?x8x?x64xbf16>, %k: tensor<?x8x?x64xbf16>, %v: tensor<?x8x?x64xbf16>, %slopes: tensor<8xf32>) -> tensor<?x8x?x64xbf16> {
  %o = fa.attention %q, %k, %v alibi_slopes(%slopes : tensor<8xf32>) : tensor<?x8x?x64xbf16>, tensor<?x8x?x64xbf16>, tensor<?x8x?x64xbf16> -> tensor<?x8x?x64xbf16>
  return %o : tensor<?x8x?x64xbf16>
}

// -----

// A score_mod of the score alone is persistent by default.
// CHECK-LABEL: gpu.func @fa_forward_0
// CHECK: fagpu.work_slot
// CHECK: fagpu.map
// ALWAYS-LABEL: gpu.func @fa_forward_0
// ALWAYS: fagpu.work_slot
func.func @score_alone(%q: tensor<?x8x?x64xbf16>, %k: tensor<?x8x?x64xbf16>, %v: tensor<?x8x?x64xbf16>) -> tensor<?x8x?x64xbf16> {
  %o = fa.attention %q, %k, %v : tensor<?x8x?x64xbf16>, tensor<?x8x?x64xbf16>, tensor<?x8x?x64xbf16> -> tensor<?x8x?x64xbf16> score_mod {
  ^bb0(%s: f32, %b: index, %h: index, %i: index, %j: index):
    %two = arith.constant 2.0 : f32
    %r = arith.mulf %s, %two : f32
    fa.yield %r : f32
  }
  return %o : tensor<?x8x?x64xbf16>
}

// -----

// One that reads a capture (by head, no position) is not: a load a score.
// CHECK-LABEL: gpu.func @fa_forward_0
// CHECK-NOT: fagpu.work_slot
// CHECK: fagpu.map
// CHECK-NOT: fagpu.work_slot
// CHECK: gpu.return
// ALWAYS-LABEL: gpu.func @fa_forward_0
// ALWAYS: fagpu.work_slot
func.func @capture(%q: tensor<?x8x?x64xbf16>, %k: tensor<?x8x?x64xbf16>, %v: tensor<?x8x?x64xbf16>, %tab: tensor<8xf32>) -> tensor<?x8x?x64xbf16> {
  %o = fa.attention %q, %k, %v captures(%tab : tensor<8xf32>) : tensor<?x8x?x64xbf16>, tensor<?x8x?x64xbf16>, tensor<?x8x?x64xbf16> -> tensor<?x8x?x64xbf16> score_mod {
  ^bb0(%s: f32, %b: index, %h: index, %i: index, %j: index, %t: tensor<8xf32>):
    %x = tensor.extract %t[%h] : tensor<8xf32>
    %r = arith.addf %s, %x : f32
    fa.yield %r : f32
  }
  return %o : tensor<?x8x?x64xbf16>
}

// -----

// A causal mask: query tiles visit different keys. By default the grid's
// last rounds go as single tiles sorted by decreasing work
// (warp-specialize-persistent-tail.mlir); with causal-order=paired (ALWAYS)
// the CTAs share pairs of one heavy and one light tile
// round robin (block_coords {paired}): ceil(tiles / 2) x Hq x B pairs, two
// items each, the CTA's k-th item 2 (first + (k / 2) stride) + k % 2. Each
// item finds its own keys (from its row), none where the tile is past Nq
// (the heaviest tile's partner where the tiles are odd). The items visit
// different numbers of key tiles, so both roles carry the tiles done so far
// (from 0) and the rings' stage and parity follow from it (done % 2,
// done / 2 & 1); each item adds its ceil((end - begin) / 128).
// CHECK-LABEL: gpu.func @fa_forward_0
// CHECK: fagpu.work_slot
// CHECK: fagpu.block_coords of %{{.*}} in %{{.*}} {heavy_first, paired, sorted_tail}
// NEVER-LABEL: gpu.func @fa_forward_0
// NEVER-NOT: fagpu.work_slot
// NEVER: fagpu.take_turn of 2 {first}
// ALWAYS-LABEL: gpu.func @fa_forward_0
// ALWAYS: %[[TILES:.*]] = arith.divui %{{.*}}, %{{.*}} : index
// ALWAYS: %[[T1:.*]] = arith.addi %[[TILES]], %{{.*}} : index
// ALWAYS-NEXT: %[[HALVES:.*]] = arith.divui %[[T1]], %{{.*}} : index
// ALWAYS: %[[HH:.*]] = arith.muli %[[HALVES]], %{{.*}} : index
// ALWAYS-NEXT: %[[PAIRS:.*]] = arith.muli %[[HH]], %{{.*}} : index
// ALWAYS-NEXT: %[[FIRST:.*]], %[[STRIDE:.*]] = fagpu.work_slot
// ALWAYS: arith.subi %[[PAIRS]], %[[FIRST]] : index
// ALWAYS: %[[MINE:.*]] = arith.divui %{{.*}}, %[[STRIDE]] : index
// ALWAYS: %[[COUNT:.*]] = arith.shli %[[MINE]], %{{.*}} : index
// ALWAYS: producer {
// ALWAYS: %[[ZERO:.*]] = arith.constant 0 : index
// ALWAYS: scf.for %[[K:.*]] = %{{.*}} to %[[COUNT]] step %{{.*}} iter_args(%[[DONE:.*]] = %[[ZERO]]) -> (index) {
// ALWAYS-NEXT: %{{.*}} = arith.constant 1 : index
// ALWAYS-NEXT: %[[ROUND:.*]] = arith.shrui %[[K]], %{{.*}} : index
// ALWAYS-NEXT: %[[RS:.*]] = arith.muli %[[ROUND]], %[[STRIDE]] : index
// ALWAYS-NEXT: %[[PAIR:.*]] = arith.addi %[[FIRST]], %[[RS]] : index
// ALWAYS-NEXT: %{{.*}} = arith.constant 1 : index
// ALWAYS-NEXT: %[[HALF:.*]] = arith.andi %[[K]], %{{.*}} : index
// ALWAYS-NEXT: %{{.*}} = arith.constant 1 : index
// ALWAYS-NEXT: %[[TWICE:.*]] = arith.shli %[[PAIR]], %{{.*}} : index
// ALWAYS-NEXT: %[[ITEM:.*]] = arith.addi %[[TWICE]], %[[HALF]] : index
// ALWAYS-NEXT: %{{.*}}, %{{.*}}, %[[TILE:.*]] = fagpu.block_coords of %[[ITEM]] in %[[TILES]] {heavy_first, paired}
// ALWAYS: %[[ROW:.*]] = arith.muli %[[TILE]], %{{.*}} : index
// ALWAYS-NEXT: %[[BEGIN:.*]], %[[END:.*]] = fagpu.visible_keys %[[ROW]] of
// ALWAYS-NEXT: %[[INSIDE:.*]] = arith.cmpi ult, %[[ROW]], %{{.*}} : index
// ALWAYS-NEXT: %[[UB:.*]] = arith.select %[[INSIDE]], %[[END]], %[[BEGIN]] : index
// ALWAYS: %[[STAGE:.*]] = arith.remui %[[DONE]], %{{.*}} : index
// ALWAYS: %[[LAP:.*]] = arith.divui %[[DONE]], %{{.*}} : index
// ALWAYS-NEXT: %[[PAR:.*]] = arith.andi %[[LAP]], %{{.*}} : index
// ALWAYS: scf.for %{{.*}} = %[[BEGIN]] to %[[UB]] step %{{.*}} iter_args(%{{.*}} = %[[STAGE]], %{{.*}} = %[[PAR]])
// ALWAYS: %[[SPAN:.*]] = arith.subi %[[UB]], %[[BEGIN]] : index
// ALWAYS: %[[N:.*]] = arith.divui %{{.*}}, %c128{{.*}} : index
// ALWAYS-NEXT: %[[NEXT:.*]] = arith.addi %[[DONE]], %[[N]] : index
// ALWAYS-NEXT: scf.yield %[[NEXT]] : index
// ALWAYS: } consumers {
// ALWAYS: scf.for %{{.*}} = %{{.*}} to %[[COUNT]] step %{{.*}} iter_args(%[[CDONE:.*]] = %{{.*}}) -> (index) {
// ALWAYS: fagpu.block_coords of %{{.*}} in %[[TILES]] {heavy_first, paired}
// ALWAYS: %[[CSTAGE:.*]] = arith.remui %[[CDONE]], %{{.*}} : index
// ALWAYS: %[[CN:.*]] = arith.divui %{{.*}}, %c128{{.*}} : index
// ALWAYS-NEXT: %[[CNEXT:.*]] = arith.addi %[[CDONE]], %[[CN]] : index
// ALWAYS: fagpu.block_coords of %{{.*}} in %[[TILES]] {heavy_first, paired}
// ALWAYS: fagpu.store
// ALWAYS-NEXT: scf.yield %[[CNEXT]] : index
// ALWAYS-NEXT: }
// ALWAYS-NEXT: fagpu.take_turn of 2 {end}
func.func @causal(%q: tensor<?x8x?x128xbf16>, %k: tensor<?x8x?x128xbf16>, %v: tensor<?x8x?x128xbf16>) -> tensor<?x8x?x128xbf16> {
  %o = fa.attention %q, %k, %v {causal = #fa.causal<top_left>} : tensor<?x8x?x128xbf16>, tensor<?x8x?x128xbf16>, tensor<?x8x?x128xbf16> -> tensor<?x8x?x128xbf16>
  return %o : tensor<?x8x?x128xbf16>
}

// -----

// Dropout draws random bits per score (-2 to -4% persistent): a CTA an item
// unless `always`.
// CHECK-LABEL: gpu.func @fa_forward_0
// CHECK-NOT: fagpu.work_slot
// CHECK: arith.mului_extended
// CHECK-NOT: fagpu.work_slot
// CHECK: gpu.return
// ALWAYS-LABEL: gpu.func @fa_forward_0
// ALWAYS: fagpu.work_slot
func.func @dropout(%q: tensor<?x8x?x64xbf16>, %k: tensor<?x8x?x64xbf16>, %v: tensor<?x8x?x64xbf16>, %seed: i64) -> tensor<?x8x?x64xbf16> {
  %o = fa.attention %q, %k, %v dropout_seed(%seed) {dropout_p = 1.000000e-01 : f32} : tensor<?x8x?x64xbf16>, tensor<?x8x?x64xbf16>, tensor<?x8x?x64xbf16> -> tensor<?x8x?x64xbf16>
  return %o : tensor<?x8x?x64xbf16>
}
