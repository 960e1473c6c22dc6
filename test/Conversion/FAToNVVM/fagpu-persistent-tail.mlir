// RUN: fa-opt %s -fa-fuse="chip=sm_90a warp-specialize=1" -fa-tile -fa-online-softmax -fa-warp-specialize=causal-order=tail -convert-fa-to-nvvm | FileCheck %s

// fagpu.block_coords {paired, sorted_tail} (fagpu-persistent-paired.mlir has
// the pairs): with P = hT Hq B pairs (hT = ceil(T / 2)) and C = nctaid.x,
// early = (P / C - 1) C (0 where P < C) pairs go as pairs; item 2 early + u
// is the u-th tile of the rest sorted by decreasing work. Those pairs are
// (head, batch) pair s = early / hT from j0 = early % hT on and the `full`
// = Hq B - 1 - s pairs after it, so level j holds `full` tiles below j0 and
// full + 1 from it on (s first). Heavy tiles (u < P - early) first, j
// ascending: u < j0 full is level u / full of pair s + 1 + u % full, else
// level j0 + (u - j0 full) / (full + 1) of pair s + (u - j0 full) % (full +
// 1); tile T - 1 - j. Then light ones, v = u - (P - early), j descending from
// hT - 1: v < (hT - j0)(full + 1) is level hT - 1 - v / (full + 1), else
// j0 - 1 - (v - that) / full; tile j - T % 2, or T (past the queries).
// `full` divides as max(full, 1): where it is 0 no item takes that branch.
// nctaid.x is read through an opaque mov, so that the decode stays in the
// item loop (hoisted, its invariants spilled 4-8 bytes at D = 32).
// CHECK: nvvm.setmaxregister  decrease 40
// CHECK: %[[CMP:.*]] = arith.cmpi uge, %{{.*}}, %{{.*}} : index
// CHECK-NEXT: %[[SEL:.*]] = arith.select %[[CMP]], %{{.*}}, %{{.*}} : index
// CHECK-NEXT: %[[ITEM:.*]] = arith.index_cast %[[SEL]] : index to i32
// CHECK-NEXT: %[[T:.*]] = arith.index_cast %{{.*}} : index to i32
// CHECK: arith.shrui %[[ITEM]]
// CHECK: %[[EVEN:.*]] = arith.cmpi eq, %{{.*}}, %{{.*}} : i32
// CHECK-NEXT: %[[PTILE:.*]] = arith.select %[[EVEN]], %{{.*}}, %{{.*}} : i32
// CHECK: %[[HT:.*]] = arith.shrui %{{.*}}, %{{.*}} : i32
// CHECK: %[[HB:.*]] = arith.muli %arg22, %arg23 : i32
// CHECK: %[[P:.*]] = arith.muli %[[HT]], %[[HB]] : i32
// CHECK: %[[NCTA:.*]] = nvvm.read.ptx.sreg.nctaid.x : i32
// CHECK: %[[C:.*]] = llvm.inline_asm has_side_effects "mov.b32 $0, $1;", "=r,r" %[[NCTA]] : (i32) -> i32
// CHECK: %[[R:.*]] = arith.divui %[[P]], %[[C]] : i32
// CHECK: %[[R1:.*]] = arith.subi %[[R]], %{{.*}} : i32
// CHECK: %[[NONE:.*]] = arith.cmpi eq, %[[R]], %{{.*}} : i32
// CHECK: %[[RH:.*]] = arith.select %[[NONE]], %[[R]], %[[R1]] : i32
// CHECK: %[[EARLY:.*]] = arith.muli %[[RH]], %[[C]] : i32
// CHECK: %[[E2:.*]] = arith.shli %[[EARLY]], %{{.*}} : i32
// CHECK: %[[U:.*]] = arith.subi %[[ITEM]], %[[E2]] : i32
// CHECK: %[[S:.*]] = arith.divui %[[EARLY]], %[[HT]] : i32
// CHECK: %[[J0:.*]] = arith.remui %[[EARLY]], %[[HT]] : i32
// CHECK: %[[HB1:.*]] = arith.subi %[[HB]], %{{.*}} : i32
// CHECK: %[[FULL:.*]] = arith.subi %[[HB1]], %[[S]] : i32
// CHECK: %[[FULL1:.*]] = arith.maxsi %[[FULL]], %{{.*}} : i32
// CHECK: %[[WITHS:.*]] = arith.addi %[[FULL]], %{{.*}} : i32
// CHECK: %[[HEAVIES:.*]] = arith.subi %[[P]], %[[EARLY]] : i32
// CHECK: %[[BELOW:.*]] = arith.muli %[[J0]], %[[FULL]] : i32
// CHECK: %[[INBELOW:.*]] = arith.cmpi ult, %[[U]], %[[BELOW]] : i32
// CHECK: %[[REST:.*]] = arith.subi %[[U]], %[[BELOW]] : i32
// CHECK: %[[RL:.*]] = arith.divui %[[REST]], %[[WITHS]] : i32
// CHECK: %[[JB:.*]] = arith.addi %[[J0]], %[[RL]] : i32
// CHECK: %[[JA:.*]] = arith.divui %[[U]], %[[FULL1]] : i32
// CHECK: %[[JH:.*]] = arith.select %[[INBELOW]], %[[JA]], %[[JB]] : i32
// CHECK: %[[HH:.*]] = arith.select %[[INBELOW]], %{{.*}}, %{{.*}} : i32
// CHECK: %[[TM1:.*]] = arith.subi %[[T]], %{{.*}} : i32
// CHECK: %[[HEAVY:.*]] = arith.subi %[[TM1]], %[[JH]] : i32
// CHECK: %[[V:.*]] = arith.subi %[[U]], %[[HEAVIES]] : i32
// CHECK: %[[LEVELS:.*]] = arith.subi %[[HT]], %[[J0]] : i32
// CHECK: %[[ABOVE:.*]] = arith.muli %[[LEVELS]], %[[WITHS]] : i32
// CHECK: %[[INABOVE:.*]] = arith.cmpi ult, %[[V]], %[[ABOVE]] : i32
// CHECK: %[[JL:.*]] = arith.select %[[INABOVE]], %{{.*}}, %{{.*}} : i32
// CHECK: %[[HL:.*]] = arith.select %[[INABOVE]], %{{.*}}, %{{.*}} : i32
// CHECK: %[[ODD:.*]] = arith.andi %[[T]], %{{.*}} : i32
// CHECK: %[[L:.*]] = arith.subi %[[JL]], %[[ODD]] : i32
// CHECK: %[[NEG:.*]] = arith.cmpi slt, %[[L]], %{{.*}} : i32
// CHECK: %[[LIGHT:.*]] = arith.select %[[NEG]], %[[T]], %[[L]] : i32
// CHECK: %[[ISHEAVY:.*]] = arith.cmpi ult, %[[U]], %[[HEAVIES]] : i32
// CHECK: %[[E2B:.*]] = arith.shli %[[EARLY]], %{{.*}} : i32
// CHECK: %[[INTAIL:.*]] = arith.cmpi uge, %[[ITEM]], %[[E2B]] : i32
// CHECK: %[[TT:.*]] = arith.select %[[ISHEAVY]], %[[HEAVY]], %[[LIGHT]] : i32
// CHECK: %[[TILE:.*]] = arith.select %[[INTAIL]], %[[TT]], %[[PTILE]] : i32
// CHECK: %[[TH:.*]] = arith.select %[[ISHEAVY]], %[[HH]], %[[HL]] : i32
// CHECK: %[[PAIR:.*]] = arith.select %[[INTAIL]], %[[TH]], %{{.*}} : i32
// CHECK: arith.divui %[[PAIR]], %arg22 : i32
// CHECK: arith.remui %[[PAIR]], %arg22 : i32
// CHECK: %[[TI:.*]] = arith.index_cast %[[TILE]] : i32 to index
func.func @causal(%q: tensor<?x8x?x128xbf16>, %k: tensor<?x8x?x128xbf16>, %v: tensor<?x8x?x128xbf16>) -> tensor<?x8x?x128xbf16> {
  %o = fa.attention %q, %k, %v {causal = #fa.causal<top_left>} : tensor<?x8x?x128xbf16>, tensor<?x8x?x128xbf16>, tensor<?x8x?x128xbf16> -> tensor<?x8x?x128xbf16>
  return %o : tensor<?x8x?x128xbf16>
}
