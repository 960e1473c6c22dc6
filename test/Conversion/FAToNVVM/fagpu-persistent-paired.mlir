// RUN: fa-opt %s -fa-fuse="chip=sm_90a warp-specialize=1" -fa-tile -fa-online-softmax -fa-warp-specialize="persistent=always causal-order=paired" -convert-fa-to-nvvm | FileCheck %s

// A causal persistent kernel's item (fagpu.block_coords {paired}): the
// producer's item 2 (first + (k / 2) stride) + k % 2 is unit u = item / 2,
// pair u / hT (hT = ceil(tiles / 2)) and j = u % hT; the even item is the
// heavy tile T - 1 - j, the odd one the light tile j - T % 2, or T (past the
// queries) where that is -1. The item's keys end at its first row where the
// tile is past Nq.
// CHECK: nvvm.setmaxregister  decrease 24
// CHECK: %[[K:.*]] = arith.index_cast %{{.*}} : i32 to index
// CHECK: %[[ROUND:.*]] = arith.shrui %[[K]], %{{.*}} : index
// CHECK-NEXT: %[[RS:.*]] = arith.muli %[[ROUND]], %{{.*}} : index
// CHECK-NEXT: %[[PAIR:.*]] = arith.addi %{{.*}}, %[[RS]] : index
// CHECK: %[[HALF:.*]] = arith.andi %[[K]], %{{.*}} : index
// CHECK: %[[TWICE:.*]] = arith.shli %[[PAIR]], %{{.*}} : index
// CHECK-NEXT: %[[ITEM:.*]] = arith.addi %[[TWICE]], %[[HALF]] : index
// CHECK-NEXT: %[[I:.*]] = arith.index_cast %[[ITEM]] : index to i32
// CHECK-NEXT: %[[T:.*]] = arith.index_cast %{{.*}} : index to i32
// CHECK: %[[U:.*]] = arith.shrui %[[I]], %{{.*}} : i32
// CHECK: %[[T1:.*]] = arith.addi %[[T]], %{{.*}} : i32
// CHECK: %[[HT:.*]] = arith.shrui %[[T1]], %{{.*}} : i32
// CHECK-NEXT: %[[J:.*]] = arith.remui %[[U]], %[[HT]] : i32
// CHECK-NEXT: %[[HB:.*]] = arith.divui %[[U]], %[[HT]] : i32
// CHECK: %[[LASTT:.*]] = arith.subi %[[T]], %{{.*}} : i32
// CHECK-NEXT: %[[HEAVY:.*]] = arith.subi %[[LASTT]], %[[J]] : i32
// CHECK: %[[ODD:.*]] = arith.andi %[[T]], %{{.*}} : i32
// CHECK-NEXT: %[[L:.*]] = arith.subi %[[J]], %[[ODD]] : i32
// CHECK-NEXT: %[[NONE:.*]] = arith.cmpi slt, %[[L]], %{{.*}} : i32
// CHECK-NEXT: %[[LIGHT:.*]] = arith.select %[[NONE]], %[[T]], %[[L]] : i32
// CHECK: %[[IH:.*]] = arith.andi %[[I]], %{{.*}} : i32
// CHECK-NEXT: %[[EVEN:.*]] = arith.cmpi eq, %[[IH]], %{{.*}} : i32
// CHECK-NEXT: %[[TILE:.*]] = arith.select %[[EVEN]], %[[HEAVY]], %[[LIGHT]] : i32
// CHECK-NEXT: arith.divui %[[HB]], %{{.*}} : i32
// CHECK: arith.remui %[[HB]], %{{.*}} : i32
// CHECK: %[[TI:.*]] = arith.index_cast %[[TILE]] : i32 to index
// CHECK: %[[ROW:.*]] = arith.muli %[[TI]], %c128 : index
// CHECK: %[[BEGIN:.*]] = arith.index_cast %{{.*}} : i32 to index
// CHECK-NEXT: %[[END:.*]] = arith.index_cast %{{.*}} : i32 to index
// CHECK-NEXT: %[[INSIDE:.*]] = arith.cmpi ult, %[[ROW]], %{{.*}} : index
// CHECK-NEXT: arith.select %[[INSIDE]], %[[END]], %[[BEGIN]] : index
func.func @causal(%q: tensor<?x8x?x128xbf16>, %k: tensor<?x8x?x128xbf16>, %v: tensor<?x8x?x128xbf16>) -> tensor<?x8x?x128xbf16> {
  %o = fa.attention %q, %k, %v {causal = #fa.causal<top_left>} : tensor<?x8x?x128xbf16>, tensor<?x8x?x128xbf16>, tensor<?x8x?x128xbf16> -> tensor<?x8x?x128xbf16>
  return %o : tensor<?x8x?x128xbf16>
}
