// RUN: fa-opt %s -fa-fuse=chip=sm_80 -fa-tile -fa-online-softmax -fa-async-copy -convert-fa-to-nvvm=chip=sm_80 -split-input-file | FileCheck %s

// The masks (Masks.h, one definition with the host route) in a forward
// kernel, causal bottom-right and window [64, 16] together, 128 x 64 tiles,
// diag = Nk - Nq: the keys a Q tile visits, which K/V tiles need masking
// and a score's keep predicate.

// CHECK-LABEL: llvm.func @fa_forward_0(
// Keys from max(0, q0 + diag - 64) rounded down to a tile, to
// max(0, min(max(0, min(Nk, q0 + 128 + diag)), q0 + 128 + diag + 16)).
// CHECK: %[[QEND:.+]] = arith.addi %[[Q0:.+]], %c128_i32{{[_0-9]*}} : i32
// CHECK-NEXT: %[[DIAG:.+]] = arith.subi %[[NK:.+]], %{{.+}} : i32
// CHECK-NEXT: %[[C0:.+]] = arith.constant 0 : i32
// CHECK-NEXT: %[[CLAST:.+]] = arith.addi %[[QEND]], %[[DIAG]] : i32
// CHECK-NEXT: %[[CMIN:.+]] = arith.minsi %[[NK]], %[[CLAST]] : i32
// CHECK-NEXT: %[[CEND:.+]] = arith.maxsi %[[C0]], %[[CMIN]] : i32
// CHECK-NEXT: %[[LEFT:.+]] = arith.constant 64 : i32
// CHECK-NEXT: %[[FIRST:.+]] = arith.addi %[[Q0]], %[[DIAG]] : i32
// CHECK-NEXT: %[[LO:.+]] = arith.subi %[[FIRST]], %[[LEFT]] : i32
// CHECK-NEXT: %[[BKV:.+]] = arith.constant 64 : i32
// CHECK-NEXT: %[[FROM:.+]] = arith.maxsi %[[C0]], %[[LO]] : i32
// CHECK-NEXT: %[[TILES:.+]] = arith.divui %[[FROM]], %[[BKV]] : i32
// CHECK-NEXT: %[[BEGIN:.+]] = arith.muli %[[TILES]], %[[BKV]] : i32
// CHECK-NEXT: %[[RIGHT:.+]] = arith.constant 16 : i32
// CHECK-NEXT: %[[WLAST:.+]] = arith.addi %[[QEND]], %[[DIAG]] : i32
// CHECK-NEXT: %[[HI:.+]] = arith.addi %[[WLAST]], %[[RIGHT]] : i32
// CHECK-NEXT: %[[WMIN:.+]] = arith.minsi %[[CEND]], %[[HI]] : i32
// CHECK-NEXT: %[[END:.+]] = arith.maxsi %[[C0]], %[[WMIN]] : i32
// CHECK-NEXT: arith.index_cast %[[BEGIN]] : i32 to index
// CHECK-NEXT: arith.index_cast %[[END]] : i32 to index
// Tile [kv0, kv0 + 64) needs masks where it crosses Nk, where its last key
// is past the first row's diagonal (q0 + diag) or right edge (q0 + diag +
// 16), or its first key left of the last row's left edge (q0 + 127 + diag
// - 64).
// CHECK: %[[PASTNK:.+]] = arith.cmpi sgt, %[[TEND:.+]], %{{.+}} : i32
// CHECK-NEXT: %[[C127:.+]] = arith.constant 127 : i32
// CHECK-NEXT: %[[LASTROW:.+]] = arith.addi %[[TQ0:.+]], %[[C127]] : i32
// CHECK-NEXT: %[[ALIGNED0:.+]] = arith.addi %[[TQ0]], %[[TDIAG:.+]] : i32
// CHECK-NEXT: %[[ONE:.+]] = arith.constant 1 : i32
// CHECK-NEXT: %[[LASTKEY:.+]] = arith.subi %[[TEND]], %[[ONE]] : i32
// CHECK-NEXT: %[[PASTDIAG:.+]] = arith.cmpi sgt, %[[LASTKEY]], %[[ALIGNED0]] : i32
// CHECK-NEXT: %[[N1:.+]] = arith.ori %[[PASTNK]], %[[PASTDIAG]] : i1
// CHECK-NEXT: %[[TLEFT:.+]] = arith.constant 64 : i32
// CHECK-NEXT: %[[ALIGNED1:.+]] = arith.addi %[[LASTROW]], %[[TDIAG]] : i32
// CHECK-NEXT: %[[TLO:.+]] = arith.subi %[[ALIGNED1]], %[[TLEFT]] : i32
// CHECK-NEXT: %[[BEFORE:.+]] = arith.cmpi slt, %{{.+}}, %[[TLO]] : i32
// CHECK-NEXT: %[[N2:.+]] = arith.ori %[[N1]], %[[BEFORE]] : i1
// CHECK-NEXT: %[[TRIGHT:.+]] = arith.constant 16 : i32
// CHECK-NEXT: %[[ALIGNED2:.+]] = arith.addi %[[TQ0]], %[[TDIAG]] : i32
// CHECK-NEXT: %[[THI:.+]] = arith.addi %[[ALIGNED2]], %[[TRIGHT]] : i32
// CHECK-NEXT: %[[ONE2:.+]] = arith.constant 1 : i32
// CHECK-NEXT: %[[LASTKEY2:.+]] = arith.subi %[[TEND]], %[[ONE2]] : i32
// CHECK-NEXT: %[[AFTER:.+]] = arith.cmpi sgt, %[[LASTKEY2]], %[[THI]] : i32
// CHECK-NEXT: %[[NEED:.+]] = arith.ori %[[N2]], %[[AFTER]] : i1
// CHECK-NEXT: scf.if %[[NEED]]
// Query i keeps key j if j < Nk, j <= i + diag and i + diag - 64 <= j <=
// i + diag + 16.
// CHECK: %[[INNK:.+]] = arith.cmpi slt, %[[KEY:.+]], %{{.+}} : i32
// CHECK-NEXT: %[[LAST:.+]] = arith.addi %[[ROW:.+]], %[[MDIAG:.+]] : i32
// CHECK-NEXT: %[[CAUSAL:.+]] = arith.cmpi sle, %[[KEY]], %[[LAST]] : i32
// CHECK-NEXT: %[[K1:.+]] = arith.andi %[[INNK]], %[[CAUSAL]] : i1
// CHECK-NEXT: %[[CENTER:.+]] = arith.addi %[[ROW]], %[[MDIAG]] : i32
// CHECK-NEXT: %[[MLEFT:.+]] = arith.constant 64 : i32
// CHECK-NEXT: %[[KLO:.+]] = arith.subi %[[CENTER]], %[[MLEFT]] : i32
// CHECK-NEXT: %[[GE:.+]] = arith.cmpi sge, %[[KEY]], %[[KLO]] : i32
// CHECK-NEXT: %[[K2:.+]] = arith.andi %[[K1]], %[[GE]] : i1
// CHECK-NEXT: %[[MRIGHT:.+]] = arith.constant 16 : i32
// CHECK-NEXT: %[[KHI:.+]] = arith.addi %[[CENTER]], %[[MRIGHT]] : i32
// CHECK-NEXT: %[[LE:.+]] = arith.cmpi sle, %[[KEY]], %[[KHI]] : i32
// CHECK-NEXT: %[[KEEP:.+]] = arith.andi %[[K2]], %[[LE]] : i1
// CHECK-NEXT: %[[NINF:.+]] = arith.constant 0xFF800000 : f32
// CHECK-NEXT: arith.select %[[KEEP]], %{{.+}}, %[[NINF]] : f32
func.func @window_causal(%q: tensor<1x2x?x64xbf16>, %k: tensor<1x2x?x64xbf16>, %v: tensor<1x2x?x64xbf16>) -> tensor<1x2x?x64xbf16> {
  %o = fa.attention %q, %k, %v {causal = #fa.causal<bottom_right>, window = array<i64: 64, 16>} : tensor<1x2x?x64xbf16>, tensor<1x2x?x64xbf16>, tensor<1x2x?x64xbf16> -> tensor<1x2x?x64xbf16>
  return %o : tensor<1x2x?x64xbf16>
}

// -----

// A window wider than any sequence (2^40) is capped at 2^30: the i32
// bounds cannot overflow, and it masks nothing more.

// CHECK-LABEL: llvm.func @fa_forward_0(
// CHECK: %[[DIAG:.+]] = arith.subi %{{.+}}, %{{.+}} : i32
// CHECK-NEXT: %{{.+}} = arith.constant 0 : i32
// CHECK-NEXT: %[[LEFT:.+]] = arith.constant 1073741824 : i32
// CHECK-NEXT: %[[FIRST:.+]] = arith.addi %{{.+}}, %[[DIAG]] : i32
// CHECK-NEXT: arith.subi %[[FIRST]], %[[LEFT]] : i32
// CHECK-NOT: 1099511627776
func.func @wide_window(%q: tensor<1x2x?x64xbf16>, %k: tensor<1x2x?x64xbf16>, %v: tensor<1x2x?x64xbf16>) -> tensor<1x2x?x64xbf16> {
  %o = fa.attention %q, %k, %v {window = array<i64: 1099511627776, 0>} : tensor<1x2x?x64xbf16>, tensor<1x2x?x64xbf16>, tensor<1x2x?x64xbf16> -> tensor<1x2x?x64xbf16>
  return %o : tensor<1x2x?x64xbf16>
}
