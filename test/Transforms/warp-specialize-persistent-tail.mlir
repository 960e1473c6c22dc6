// RUN: fa-opt %s -fa-fuse="chip=sm_90a warp-specialize=1" -fa-tile -fa-online-softmax -fa-warp-specialize=causal-order=tail -fa-async-copy | FileCheck %s
// RUN: fa-opt %s -fa-fuse="chip=sm_90a warp-specialize=1" -fa-tile -fa-online-softmax -fa-warp-specialize=causal-order=paired -fa-async-copy | FileCheck %s --check-prefix=PAIRED
// RUN: not fa-opt %s -fa-fuse="chip=sm_90a warp-specialize=1" -fa-tile -fa-online-softmax -fa-warp-specialize=causal-order=snake 2>&1 | FileCheck %s --check-prefix=BAD
// BAD: error: 'gpu.func' op fa-warp-specialize: causal-order must be paired or tail (got 'snake')

// A causal persistent grid with a sorted tail: of the P = ceil(T / 2) Hq B
// pairs, those of the full rounds but the last (early = (max(P / stride, 1)
// - 1) stride) go round robin as pairs, the CTA's items 0 .. 2 heads - 1;
// the 2 (P - early) tiles of the rest, sorted by decreasing work
// (block_coords {sorted_tail}: items 2 early + u), go to the CTAs in snake
// order, round m = k - 2 heads to CTA first where m is even and
// stride - 1 - first where it is odd. The CTA's tail items: ceil((tiles -
// place) / stride) of its place in the last round (tiles / stride). The
// producer gets 40 registers (the decode spilled at 24).
// CHECK-LABEL: gpu.func @fa_forward_0
// CHECK: gpu.barrier
// CHECK: %[[HALVES:.*]] = arith.divui %{{.*}}, %c2{{.*}} : index
// CHECK: %[[HH:.*]] = arith.muli %[[HALVES]], %c8 : index
// CHECK: %[[PAIRS:.*]] = arith.muli %[[HH]], %{{.*}} : index
// CHECK: %[[FIRST:.*]], %[[STRIDE:.*]] = fagpu.work_slot
// CHECK: %[[ROUNDS:.*]] = arith.divui %[[PAIRS]], %[[STRIDE]] : index
// CHECK: %[[R1:.*]] = arith.maxui %[[ROUNDS]], %c1{{.*}} : index
// CHECK: %[[HEADS:.*]] = arith.subi %[[R1]], %c1{{.*}} : index
// CHECK: %[[EARLY:.*]] = arith.muli %[[HEADS]], %[[STRIDE]] : index
// CHECK: %[[REST:.*]] = arith.subi %[[PAIRS]], %[[EARLY]] : index
// CHECK: %[[TAIL:.*]] = arith.shli %[[REST]], %{{.*}} : index
// CHECK: %[[LASTR:.*]] = arith.divui %[[TAIL]], %[[STRIDE]] : index
// CHECK: %[[LODD:.*]] = arith.andi %[[LASTR]], %{{.*}} : index
// CHECK: %[[LISODD:.*]] = arith.cmpi ne, %[[LODD]], %{{.*}} : index
// CHECK: %[[LLAST:.*]] = arith.subi %[[STRIDE]], %{{.*}} : index
// CHECK: %[[LMIRROR:.*]] = arith.subi %[[LLAST]], %[[FIRST]] : index
// CHECK: %[[LPLACE:.*]] = arith.select %[[LISODD]], %[[LMIRROR]], %[[FIRST]] : index
// CHECK: %[[LEFT:.*]] = arith.subi %[[TAIL]], %[[LPLACE]] : index
// CHECK: %[[POS:.*]] = arith.maxsi %[[LEFT]], %{{.*}} : index
// CHECK: %[[SM1:.*]] = arith.subi %[[STRIDE]], %{{.*}} : index
// CHECK: %[[UP:.*]] = arith.addi %[[POS]], %[[SM1]] : index
// CHECK: %[[TAILS:.*]] = arith.divui %[[UP]], %[[STRIDE]] : index
// CHECK: %[[HEADITEMS:.*]] = arith.shli %[[HEADS]], %{{.*}} : index
// CHECK: %[[COUNT:.*]] = arith.addi %[[HEADITEMS]], %[[TAILS]] : index
// CHECK: fagpu.warp_specialize attributes {consumer_registers = 232 : i64, consumer_threads = 256 : i64, ctas_per_sm = 1 : i64, producer_registers = 40 : i64} producer {
// CHECK: scf.for %[[K:.*]] = %{{.*}} to %[[COUNT]] step %{{.*}} iter_args(%[[DONE:.*]] = %{{.*}}) -> (index) {
// CHECK: %[[ROUND:.*]] = arith.shrui %[[K]], %{{.*}} : index
// CHECK: %[[RS:.*]] = arith.muli %[[ROUND]], %[[STRIDE]] : index
// CHECK: %[[PAIR:.*]] = arith.addi %[[FIRST]], %[[RS]] : index
// CHECK: %[[HALF:.*]] = arith.andi %[[K]], %{{.*}} : index
// CHECK: %[[TWICE:.*]] = arith.shli %[[PAIR]], %{{.*}} : index
// CHECK: %[[PITEM:.*]] = arith.addi %[[TWICE]], %[[HALF]] : index
// CHECK: %[[START:.*]] = arith.shli %[[HEADS]], %{{.*}} : index
// CHECK: %[[M:.*]] = arith.subi %[[K]], %[[START]] : index
// CHECK: %[[MODD:.*]] = arith.andi %[[M]], %{{.*}} : index
// CHECK: %[[MISODD:.*]] = arith.cmpi ne, %[[MODD]], %{{.*}} : index
// CHECK: %[[MLAST:.*]] = arith.subi %[[STRIDE]], %{{.*}} : index
// CHECK: %[[MMIRROR:.*]] = arith.subi %[[MLAST]], %[[FIRST]] : index
// CHECK: %[[MPLACE:.*]] = arith.select %[[MISODD]], %[[MMIRROR]], %[[FIRST]] : index
// CHECK: %[[MS:.*]] = arith.muli %[[M]], %[[STRIDE]] : index
// CHECK: %[[E2:.*]] = arith.shli %[[EARLY]], %{{.*}} : index
// CHECK: %[[BASE:.*]] = arith.addi %[[E2]], %[[MS]] : index
// CHECK: %[[SORTED:.*]] = arith.addi %[[BASE]], %[[MPLACE]] : index
// CHECK: %[[INTAIL:.*]] = arith.cmpi uge, %[[K]], %[[START]] : index
// CHECK: %[[ITEM:.*]] = arith.select %[[INTAIL]], %[[SORTED]], %[[PITEM]] : index
// CHECK-NEXT: %{{.*}}, %{{.*}}, %[[TILE:.*]] = fagpu.block_coords of %[[ITEM]] in %{{.*}} {heavy_first, paired, sorted_tail}
// CHECK: %[[ROW:.*]] = arith.muli %[[TILE]], %{{.*}} : index
// CHECK: %[[BEGIN:.*]], %[[END:.*]] = fagpu.visible_keys %[[ROW]] of
// CHECK: %[[INSIDE:.*]] = arith.cmpi ult, %[[ROW]], %{{.*}} : index
// CHECK: %[[UB:.*]] = arith.select %[[INSIDE]], %[[END]], %[[BEGIN]] : index
// CHECK: %[[STAGE:.*]] = arith.remui %[[DONE]], %{{.*}} : index
// CHECK: scf.for %{{.*}} = %[[BEGIN]] to %[[UB]] step %{{.*}} iter_args(%{{.*}} = %[[STAGE]], %{{.*}})
// CHECK: } consumers {
// CHECK: scf.for %{{.*}} = %{{.*}} to %[[COUNT]] step %{{.*}} iter_args(%{{.*}} = %{{.*}}) -> (index) {
// CHECK: fagpu.block_coords of %[[CITEM:[0-9]+]] in %{{.*}} {heavy_first, paired, sorted_tail}
// CHECK: fagpu.block_coords of %[[CITEM]] in %{{.*}} {heavy_first, paired, sorted_tail}
// CHECK: fagpu.store
// CHECK: fagpu.take_turn of 2 {end}
// PAIRED-LABEL: gpu.func @fa_forward_0
// PAIRED: producer_registers = 24 : i64
// PAIRED: fagpu.block_coords of %{{.*}} in %{{.*}} {heavy_first, paired}
// PAIRED-NOT: sorted_tail
func.func @causal(%q: tensor<?x8x?x128xbf16>, %k: tensor<?x8x?x128xbf16>, %v: tensor<?x8x?x128xbf16>) -> tensor<?x8x?x128xbf16> {
  %o = fa.attention %q, %k, %v {causal = #fa.causal<top_left>} : tensor<?x8x?x128xbf16>, tensor<?x8x?x128xbf16>, tensor<?x8x?x128xbf16> -> tensor<?x8x?x128xbf16>
  return %o : tensor<?x8x?x128xbf16>
}
