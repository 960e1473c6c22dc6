// RUN: fa-opt %s -convert-fa-to-linalg -split-input-file | FileCheck %s

// convert-fa-to-linalg: each fa.score_tile becomes the tile's Q K^T (a
// linalg.generic over (r, c, d) accumulating in f32) and one elementwise
// linalg.generic applying the variant at absolute positions
// i = query_offset + r, j = key_offset + c, in the order of fa.attention's
// definition: scale, softcap, ALiBi, bias, score_mod, masks.

// A plain f16 tile: extf of both operands, f32 accumulation (reassociation
// allowed), then only the scale. The positions are computed but unused.

// CHECK-DAG: #[[QK_Q:[a-z0-9_]+]] = affine_map<(d0, d1, d2) -> (d0, d2)>
// CHECK-DAG: #[[QK_K:[a-z0-9_]+]] = affine_map<(d0, d1, d2) -> (d1, d2)>
// CHECK-DAG: #[[QK_S:[a-z0-9_]+]] = affine_map<(d0, d1, d2) -> (d0, d1)>
// CHECK-DAG: #[[ALL2:[a-z0-9_]+]] = affine_map<(d0, d1) -> (d0, d1)>
// CHECK-LABEL: func.func @plain
// CHECK-SAME: (%[[Q:[^:]+]]: tensor<?x64xf16>, %[[K:[^:]+]]: tensor<?x64xf16>, %[[B:[^:]+]]: index, %[[H:[^:]+]]: index, %[[Q0:[^:]+]]: index, %[[K0:[^:]+]]: index, %[[NQ:[^:]+]]: index, %[[NK:[^:]+]]: index)
// CHECK-NEXT: %[[C0:[a-z0-9_]+]] = arith.constant 0 : index
// CHECK-NEXT: %[[ROWS:[a-z0-9_]+]] = tensor.dim %[[Q]], %[[C0]] : tensor<?x64xf16>
// CHECK-NEXT: %[[C0B:[a-z0-9_]+]] = arith.constant 0 : index
// CHECK-NEXT: %[[COLS:[a-z0-9_]+]] = tensor.dim %[[K]], %[[C0B]] : tensor<?x64xf16>
// CHECK-NEXT: %[[E:[a-z0-9_]+]] = tensor.empty(%[[ROWS]], %[[COLS]]) : tensor<?x?xf32>
// CHECK-NEXT: %[[Z:[a-z0-9_]+]] = arith.constant 0.000000e+00 : f32
// CHECK-NEXT: %[[S0:[a-z0-9_]+]] = linalg.fill ins(%[[Z]] : f32) outs(%[[E]] : tensor<?x?xf32>) -> tensor<?x?xf32>
// CHECK-NEXT: %[[DOT:[a-z0-9_]+]] = linalg.generic {indexing_maps = [#[[QK_Q]], #[[QK_K]], #[[QK_S]]], iterator_types = ["parallel", "parallel", "reduction"]} ins(%[[Q]], %[[K]] : tensor<?x64xf16>, tensor<?x64xf16>) outs(%[[S0]] : tensor<?x?xf32>) {
// CHECK-NEXT: ^bb0(%[[A:[a-z0-9_]+]]: f16, %[[BB:[a-z0-9_]+]]: f16, %[[ACC:[a-z0-9_]+]]: f32):
// CHECK-NEXT:   %[[AE:[a-z0-9_]+]] = arith.extf %[[A]] : f16 to f32
// CHECK-NEXT:   %[[BE:[a-z0-9_]+]] = arith.extf %[[BB]] : f16 to f32
// CHECK-NEXT:   %[[P:[a-z0-9_]+]] = arith.mulf %[[AE]], %[[BE]] : f32
// CHECK-NEXT:   %[[SUM:[a-z0-9_]+]] = arith.addf %[[ACC]], %[[P]] fastmath<reassoc,contract> : f32
// CHECK-NEXT:   linalg.yield %[[SUM]] : f32
// CHECK-NEXT: } -> tensor<?x?xf32>
// CHECK-NEXT: %[[S:[a-z0-9_]+]] = linalg.generic {indexing_maps = [#[[ALL2]]], iterator_types = ["parallel", "parallel"]} outs(%[[DOT]] : tensor<?x?xf32>) {
// CHECK-NEXT: ^bb0(%[[X:[a-z0-9_]+]]: f32):
// CHECK-NEXT:   %[[R:[a-z0-9_]+]] = linalg.index 0 : index
// CHECK-NEXT:   %[[C:[a-z0-9_]+]] = linalg.index 1 : index
// CHECK-NEXT:   %[[I:[a-z0-9_]+]] = arith.addi %[[Q0]], %[[R]] : index
// CHECK-NEXT:   %[[J:[a-z0-9_]+]] = arith.addi %[[K0]], %[[C]] : index
// CHECK-NEXT:   %[[SC:[a-z0-9_]+]] = arith.constant 1.250000e-01 : f32
// CHECK-NEXT:   %[[XS:[a-z0-9_]+]] = arith.mulf %[[X]], %[[SC]] fastmath<contract> : f32
// CHECK-NEXT:   linalg.yield %[[XS]] : f32
// CHECK-NEXT: } -> tensor<?x?xf32>
// CHECK-NEXT: return %[[S]] : tensor<?x?xf32>
func.func @plain(%q: tensor<?x64xf16>, %k: tensor<?x64xf16>, %b: index, %h: index, %q0: index, %k0: index, %nq: index, %nk: index) -> tensor<?x?xf32> {
  %s = fa.score_tile %q, %k at [%b, %h, %q0, %k0] of [%nq, %nk] {scale = 0.125 : f32} : tensor<?x64xf16>, tensor<?x64xf16> -> tensor<?x?xf32>
  return %s : tensor<?x?xf32>
}

// -----

// Static f32 tiles: no extf, no tensor.dim; causal top-left keeps j <= i.

// CHECK-LABEL: func.func @causal_top_left
// CHECK-SAME: (%[[Q:[^:]+]]: tensor<16x8xf32>, %[[K:[^:]+]]: tensor<8x8xf32>, %{{[^:]+}}: index, %{{[^:]+}}: index, %[[Q0:[^:]+]]: index, %[[K0:[^:]+]]: index
// CHECK-NEXT: %[[E:[a-z0-9_]+]] = tensor.empty() : tensor<16x8xf32>
// CHECK: linalg.generic {{.*}} ins(%[[Q]], %[[K]] : tensor<16x8xf32>, tensor<8x8xf32>) outs(%{{[a-z0-9_]+}} : tensor<16x8xf32>) {
// CHECK-NEXT: ^bb0(%[[A:[a-z0-9_]+]]: f32, %[[BB:[a-z0-9_]+]]: f32, %[[ACC:[a-z0-9_]+]]: f32):
// CHECK-NEXT:   %[[P:[a-z0-9_]+]] = arith.mulf %[[A]], %[[BB]] : f32
// CHECK-NEXT:   arith.addf %[[ACC]], %[[P]] fastmath<reassoc,contract> : f32
// CHECK: linalg.generic
// CHECK-NEXT: ^bb0(%[[X:[a-z0-9_]+]]: f32):
// CHECK-NEXT:   %[[R:[a-z0-9_]+]] = linalg.index 0 : index
// CHECK-NEXT:   %[[C:[a-z0-9_]+]] = linalg.index 1 : index
// CHECK-NEXT:   %[[I:[a-z0-9_]+]] = arith.addi %[[Q0]], %[[R]] : index
// CHECK-NEXT:   %[[J:[a-z0-9_]+]] = arith.addi %[[K0]], %[[C]] : index
// CHECK-NEXT:   %[[SC:[a-z0-9_]+]] = arith.constant 5.000000e-01 : f32
// CHECK-NEXT:   %[[S:[a-z0-9_]+]] = arith.mulf %[[X]], %[[SC]] fastmath<contract> : f32
// CHECK-NEXT:   %[[KEEP:[a-z0-9_]+]] = arith.cmpi sle, %[[J]], %[[I]] : index
// CHECK-NEXT:   %[[NINF:[a-z0-9_]+]] = arith.constant 0xFF800000 : f32
// CHECK-NEXT:   %[[RES:[a-z0-9_]+]] = arith.select %[[KEEP]], %[[S]], %[[NINF]] : f32
// CHECK-NEXT:   linalg.yield %[[RES]] : f32
// CHECK-NOT: tensor.cast
func.func @causal_top_left(%q: tensor<16x8xf32>, %k: tensor<8x8xf32>, %b: index, %h: index, %q0: index, %k0: index, %nq: index, %nk: index) -> tensor<16x8xf32> {
  %s = fa.score_tile %q, %k at [%b, %h, %q0, %k0] of [%nq, %nk] {causal = #fa.causal<top_left>, scale = 0.5 : f32} : tensor<16x8xf32>, tensor<8x8xf32> -> tensor<16x8xf32>
  return %s : tensor<16x8xf32>
}

// -----

// Causal bottom-right: keep j <= i + Nk - Nq, with key_len - query_len
// computed once, outside the generic.

// CHECK-LABEL: func.func @causal_bottom_right
// CHECK-SAME: %[[Q0:[^:]+]]: index, %[[K0:[^:]+]]: index, %[[NQ:[^:]+]]: index, %[[NK:[^:]+]]: index)
// CHECK: %[[DIAG:[a-z0-9_]+]] = arith.subi %[[NK]], %[[NQ]] : index
// CHECK-NEXT: linalg.generic
// CHECK-NEXT: ^bb0(%[[X:[a-z0-9_]+]]: f32):
// CHECK-NEXT:   %[[R:[a-z0-9_]+]] = linalg.index 0 : index
// CHECK-NEXT:   %[[C:[a-z0-9_]+]] = linalg.index 1 : index
// CHECK-NEXT:   %[[I:[a-z0-9_]+]] = arith.addi %[[Q0]], %[[R]] : index
// CHECK-NEXT:   %[[J:[a-z0-9_]+]] = arith.addi %[[K0]], %[[C]] : index
// CHECK-NEXT:   %[[IA:[a-z0-9_]+]] = arith.addi %[[I]], %[[DIAG]] : index
// CHECK-NEXT:   %[[SC:[a-z0-9_]+]] = arith.constant 5.000000e-01 : f32
// CHECK-NEXT:   %[[S:[a-z0-9_]+]] = arith.mulf %[[X]], %[[SC]] fastmath<contract> : f32
// CHECK-NEXT:   %[[KEEP:[a-z0-9_]+]] = arith.cmpi sle, %[[J]], %[[IA]] : index
// CHECK-NEXT:   %[[NINF:[a-z0-9_]+]] = arith.constant 0xFF800000 : f32
// CHECK-NEXT:   %[[RES:[a-z0-9_]+]] = arith.select %[[KEEP]], %[[S]], %[[NINF]] : f32
// CHECK-NEXT:   linalg.yield %[[RES]] : f32
func.func @causal_bottom_right(%q: tensor<?x8xf32>, %k: tensor<?x8xf32>, %b: index, %h: index, %q0: index, %k0: index, %nq: index, %nk: index) -> tensor<?x?xf32> {
  %s = fa.score_tile %q, %k at [%b, %h, %q0, %k0] of [%nq, %nk] {causal = #fa.causal<bottom_right>, scale = 0.5 : f32} : tensor<?x8xf32>, tensor<?x8xf32> -> tensor<?x?xf32>
  return %s : tensor<?x?xf32>
}

// -----

// Window [3, 1] on the bottom-right diagonal: i' - 3 <= j <= i' + 1.

// CHECK-LABEL: func.func @window
// CHECK-SAME: %[[Q0:[^:]+]]: index, %[[K0:[^:]+]]: index, %[[NQ:[^:]+]]: index, %[[NK:[^:]+]]: index)
// CHECK: %[[DIAG:[a-z0-9_]+]] = arith.subi %[[NK]], %[[NQ]] : index
// CHECK-NEXT: linalg.generic
// CHECK-NEXT: ^bb0(%[[X:[a-z0-9_]+]]: f32):
// CHECK-NEXT:   %[[R:[a-z0-9_]+]] = linalg.index 0 : index
// CHECK-NEXT:   %[[C:[a-z0-9_]+]] = linalg.index 1 : index
// CHECK-NEXT:   %[[I:[a-z0-9_]+]] = arith.addi %[[Q0]], %[[R]] : index
// CHECK-NEXT:   %[[J:[a-z0-9_]+]] = arith.addi %[[K0]], %[[C]] : index
// CHECK-NEXT:   %[[IA:[a-z0-9_]+]] = arith.addi %[[I]], %[[DIAG]] : index
// CHECK-NEXT:   arith.constant
// CHECK-NEXT:   %[[S:[a-z0-9_]+]] = arith.mulf %[[X]]
// CHECK-NEXT:   %[[LEFT:[a-z0-9_]+]] = arith.constant 3 : index
// CHECK-NEXT:   %[[LO:[a-z0-9_]+]] = arith.subi %[[IA]], %[[LEFT]] : index
// CHECK-NEXT:   %[[K1:[a-z0-9_]+]] = arith.cmpi sge, %[[J]], %[[LO]] : index
// CHECK-NEXT:   %[[RIGHT:[a-z0-9_]+]] = arith.constant 1 : index
// CHECK-NEXT:   %[[HI:[a-z0-9_]+]] = arith.addi %[[IA]], %[[RIGHT]] : index
// CHECK-NEXT:   %[[K2:[a-z0-9_]+]] = arith.cmpi sle, %[[J]], %[[HI]] : index
// CHECK-NEXT:   %[[KEEP:[a-z0-9_]+]] = arith.andi %[[K1]], %[[K2]] : i1
// CHECK-NEXT:   %[[NINF:[a-z0-9_]+]] = arith.constant 0xFF800000 : f32
// CHECK-NEXT:   %[[RES:[a-z0-9_]+]] = arith.select %[[KEEP]], %[[S]], %[[NINF]] : f32
// CHECK-NEXT:   linalg.yield %[[RES]] : f32
func.func @window(%q: tensor<?x8xf32>, %k: tensor<?x8xf32>, %b: index, %h: index, %q0: index, %k0: index, %nq: index, %nk: index) -> tensor<?x?xf32> {
  %s = fa.score_tile %q, %k at [%b, %h, %q0, %k0] of [%nq, %nk] {scale = 0.5 : f32, window = array<i64: 3, 1>} : tensor<?x8xf32>, tensor<?x8xf32> -> tensor<?x?xf32>
  return %s : tensor<?x?xf32>
}

// -----

// A bias broadcast over B and Nq, [1, Hq, 1, Nk] in bf16: read at
// (0, h, 0, j) with constant 0 indices on the size-1 dims, then extended.

// CHECK-LABEL: func.func @bias_broadcast
// CHECK-SAME: %[[BIAS:[^:]+]]: tensor<1x4x1x?xbf16>, %[[B:[^:]+]]: index, %[[H:[^:]+]]: index, %[[Q0:[^:]+]]: index, %[[K0:[^:]+]]: index
// CHECK: linalg.generic
// CHECK: linalg.generic
// CHECK-NEXT: ^bb0(%[[X:[a-z0-9_]+]]: f32):
// CHECK-NEXT:   %[[R:[a-z0-9_]+]] = linalg.index 0 : index
// CHECK-NEXT:   %[[C:[a-z0-9_]+]] = linalg.index 1 : index
// CHECK-NEXT:   %[[I:[a-z0-9_]+]] = arith.addi %[[Q0]], %[[R]] : index
// CHECK-NEXT:   %[[J:[a-z0-9_]+]] = arith.addi %[[K0]], %[[C]] : index
// CHECK-NEXT:   %[[Z0:[a-z0-9_]+]] = arith.constant 0 : index
// CHECK-NEXT:   %[[Z2:[a-z0-9_]+]] = arith.constant 0 : index
// CHECK-NEXT:   %[[BV:[a-z0-9_]+]] = tensor.extract %[[BIAS]][%[[Z0]], %[[H]], %[[Z2]], %[[J]]] : tensor<1x4x1x?xbf16>
// CHECK-NEXT:   %[[SC:[a-z0-9_]+]] = arith.constant 1.250000e-01 : f32
// CHECK-NEXT:   %[[S:[a-z0-9_]+]] = arith.mulf %[[X]], %[[SC]] fastmath<contract> : f32
// CHECK-NEXT:   %[[BE:[a-z0-9_]+]] = arith.extf %[[BV]] : bf16 to f32
// CHECK-NEXT:   %[[RES:[a-z0-9_]+]] = arith.addf %[[S]], %[[BE]] fastmath<contract> : f32
// CHECK-NEXT:   linalg.yield %[[RES]] : f32
func.func @bias_broadcast(%q: tensor<?x8xbf16>, %k: tensor<?x8xbf16>, %bias: tensor<1x4x1x?xbf16>, %b: index, %h: index, %q0: index, %k0: index, %nq: index, %nk: index) -> tensor<?x?xf32> {
  %s = fa.score_tile %q, %k at [%b, %h, %q0, %k0] of [%nq, %nk] bias(%bias : tensor<1x4x1x?xbf16>) {scale = 0.125 : f32} : tensor<?x8xbf16>, tensor<?x8xbf16> -> tensor<?x?xf32>
  return %s : tensor<?x?xf32>
}

// -----

// A full f32 bias [B, Hq, Nq, Nk] is read at (b, h, i, j) and needs no extf.

// CHECK-LABEL: func.func @bias_full
// CHECK-SAME: %[[BIAS:[^:]+]]: tensor<2x4x?x?xf32>, %[[B:[^:]+]]: index, %[[H:[^:]+]]: index, %[[Q0:[^:]+]]: index, %[[K0:[^:]+]]: index
// CHECK: %[[I:[a-z0-9_]+]] = arith.addi %[[Q0]], %{{[a-z0-9_]+}} : index
// CHECK-NEXT: %[[J:[a-z0-9_]+]] = arith.addi %[[K0]], %{{[a-z0-9_]+}} : index
// CHECK-NEXT: %[[BV:[a-z0-9_]+]] = tensor.extract %[[BIAS]][%[[B]], %[[H]], %[[I]], %[[J]]] : tensor<2x4x?x?xf32>
// CHECK-NEXT: arith.constant
// CHECK-NEXT: %[[S:[a-z0-9_]+]] = arith.mulf
// CHECK-NEXT: %[[RES:[a-z0-9_]+]] = arith.addf %[[S]], %[[BV]] fastmath<contract> : f32
// CHECK-NEXT: linalg.yield %[[RES]] : f32
func.func @bias_full(%q: tensor<?x8xf32>, %k: tensor<?x8xf32>, %bias: tensor<2x4x?x?xf32>, %b: index, %h: index, %q0: index, %k0: index, %nq: index, %nk: index) -> tensor<?x?xf32> {
  %s = fa.score_tile %q, %k at [%b, %h, %q0, %k0] of [%nq, %nk] bias(%bias : tensor<2x4x?x?xf32>) {scale = 0.125 : f32} : tensor<?x8xf32>, tensor<?x8xf32> -> tensor<?x?xf32>
  return %s : tensor<?x?xf32>
}

// -----

// ALiBi with slopes [Hq]: s -= slope[h] * |i + Nk - Nq - j|.

// CHECK-LABEL: func.func @alibi_heads
// CHECK-SAME: %[[SL:[^:]+]]: tensor<4xf32>, %[[B:[^:]+]]: index, %[[H:[^:]+]]: index, %[[Q0:[^:]+]]: index, %[[K0:[^:]+]]: index, %[[NQ:[^:]+]]: index, %[[NK:[^:]+]]: index)
// CHECK: %[[DIAG:[a-z0-9_]+]] = arith.subi %[[NK]], %[[NQ]] : index
// CHECK-NEXT: linalg.generic
// CHECK-NEXT: ^bb0(%[[X:[a-z0-9_]+]]: f32):
// CHECK-NEXT:   %[[R:[a-z0-9_]+]] = linalg.index 0 : index
// CHECK-NEXT:   %[[C:[a-z0-9_]+]] = linalg.index 1 : index
// CHECK-NEXT:   %[[I:[a-z0-9_]+]] = arith.addi %[[Q0]], %[[R]] : index
// CHECK-NEXT:   %[[J:[a-z0-9_]+]] = arith.addi %[[K0]], %[[C]] : index
// CHECK-NEXT:   %[[IA:[a-z0-9_]+]] = arith.addi %[[I]], %[[DIAG]] : index
// CHECK-NEXT:   %[[SLOPE:[a-z0-9_]+]] = tensor.extract %[[SL]][%[[H]]] : tensor<4xf32>
// CHECK-NEXT:   %[[SC:[a-z0-9_]+]] = arith.constant 1.250000e-01 : f32
// CHECK-NEXT:   %[[S:[a-z0-9_]+]] = arith.mulf %[[X]], %[[SC]] fastmath<contract> : f32
// CHECK-NEXT:   %[[DIST:[a-z0-9_]+]] = arith.subi %[[IA]], %[[J]] : index
// CHECK-NEXT:   %[[D32:[a-z0-9_]+]] = arith.index_cast %[[DIST]] : index to i32
// CHECK-NEXT:   %[[DF:[a-z0-9_]+]] = arith.sitofp %[[D32]] : i32 to f32
// CHECK-NEXT:   %[[ABS:[a-z0-9_]+]] = math.absf %[[DF]] : f32
// CHECK-NEXT:   %[[PEN:[a-z0-9_]+]] = arith.mulf %[[SLOPE]], %[[ABS]] fastmath<contract> : f32
// CHECK-NEXT:   %[[RES:[a-z0-9_]+]] = arith.subf %[[S]], %[[PEN]] fastmath<contract> : f32
// CHECK-NEXT:   linalg.yield %[[RES]] : f32
func.func @alibi_heads(%q: tensor<?x8xf32>, %k: tensor<?x8xf32>, %slopes: tensor<4xf32>, %b: index, %h: index, %q0: index, %k0: index, %nq: index, %nk: index) -> tensor<?x?xf32> {
  %s = fa.score_tile %q, %k at [%b, %h, %q0, %k0] of [%nq, %nk] alibi_slopes(%slopes : tensor<4xf32>) {scale = 0.125 : f32} : tensor<?x8xf32>, tensor<?x8xf32> -> tensor<?x?xf32>
  return %s : tensor<?x?xf32>
}

// -----

// ALiBi with slopes [B, Hq]: the slope is read at (b, h).

// CHECK-LABEL: func.func @alibi_batch_heads
// CHECK-SAME: %[[SL:[^:]+]]: tensor<2x4xf32>, %[[B:[^:]+]]: index, %[[H:[^:]+]]: index
// CHECK: %[[SLOPE:[a-z0-9_]+]] = tensor.extract %[[SL]][%[[B]], %[[H]]] : tensor<2x4xf32>
// CHECK: %[[PEN:[a-z0-9_]+]] = arith.mulf %[[SLOPE]], %{{[a-z0-9_]+}} fastmath<contract> : f32
// CHECK-NEXT: arith.subf %{{[a-z0-9_]+}}, %[[PEN]] fastmath<contract> : f32
func.func @alibi_batch_heads(%q: tensor<?x8xf32>, %k: tensor<?x8xf32>, %slopes: tensor<2x4xf32>, %b: index, %h: index, %q0: index, %k0: index, %nq: index, %nk: index) -> tensor<?x?xf32> {
  %s = fa.score_tile %q, %k at [%b, %h, %q0, %k0] of [%nq, %nk] alibi_slopes(%slopes : tensor<2x4xf32>) {scale = 0.125 : f32} : tensor<?x8xf32>, tensor<?x8xf32> -> tensor<?x?xf32>
  return %s : tensor<?x?xf32>
}

// -----

// ALiBi with slopes [1, Hq], broadcast over the batch: read at (0, h).

// CHECK-LABEL: func.func @alibi_broadcast_batch
// CHECK-SAME: %[[SL:[^:]+]]: tensor<1x4xf32>, %[[B:[^:]+]]: index, %[[H:[^:]+]]: index
// CHECK: linalg.index 1 : index
// CHECK: %[[Z:[a-z0-9_]+]] = arith.constant 0 : index
// CHECK-NEXT: %[[SLOPE:[a-z0-9_]+]] = tensor.extract %[[SL]][%[[Z]], %[[H]]] : tensor<1x4xf32>
func.func @alibi_broadcast_batch(%q: tensor<?x8xf32>, %k: tensor<?x8xf32>, %slopes: tensor<1x4xf32>, %b: index, %h: index, %q0: index, %k0: index, %nq: index, %nk: index) -> tensor<?x?xf32> {
  %s = fa.score_tile %q, %k at [%b, %h, %q0, %k0] of [%nq, %nk] alibi_slopes(%slopes : tensor<1x4xf32>) {scale = 0.125 : f32} : tensor<?x8xf32>, tensor<?x8xf32> -> tensor<?x?xf32>
  return %s : tensor<?x?xf32>
}

// -----

// Softcap after the scale: s = 30 * tanh(s / 30).

// CHECK-LABEL: func.func @softcap
// CHECK: ^bb0(%[[X:[a-z0-9_]+]]: f32):
// CHECK-NEXT:   linalg.index 0
// CHECK-NEXT:   linalg.index 1
// CHECK-NEXT:   arith.addi
// CHECK-NEXT:   arith.addi
// CHECK-NEXT:   %[[CAP:[a-z0-9_]+]] = arith.constant 3.000000e+01 : f32
// CHECK-NEXT:   %[[SC:[a-z0-9_]+]] = arith.constant 0.0166666675 : f32
// CHECK-NEXT:   %[[S:[a-z0-9_]+]] = arith.mulf %[[X]], %[[SC]] : f32
// CHECK-NEXT:   %[[T:[a-z0-9_]+]] = math.tanh %[[S]] : f32
// CHECK-NEXT:   %[[RES:[a-z0-9_]+]] = arith.mulf %[[CAP]], %[[T]] : f32
// CHECK-NEXT:   linalg.yield %[[RES]] : f32
func.func @softcap(%q: tensor<?x8xf32>, %k: tensor<?x8xf32>, %b: index, %h: index, %q0: index, %k0: index, %nq: index, %nk: index) -> tensor<?x?xf32> {
  %s = fa.score_tile %q, %k at [%b, %h, %q0, %k0] of [%nq, %nk] {scale = 0.5 : f32, softcap = 30.0 : f32} : tensor<?x8xf32>, tensor<?x8xf32> -> tensor<?x?xf32>
  return %s : tensor<?x?xf32>
}

// -----

// score_mod is inlined with (s, b, h, i, j), i and j absolute; mask_mod's i1
// with (b, h, i, j), combined with causal by `and`.

// CHECK-LABEL: func.func @mods
// CHECK-SAME: %[[B:[^:]+]]: index, %[[H:[^:]+]]: index, %[[Q0:[^:]+]]: index, %[[K0:[^:]+]]: index
// CHECK: linalg.generic
// CHECK: linalg.generic
// CHECK-NEXT: ^bb0(%[[X:[a-z0-9_]+]]: f32):
// CHECK-NEXT:   %[[R:[a-z0-9_]+]] = linalg.index 0 : index
// CHECK-NEXT:   %[[C:[a-z0-9_]+]] = linalg.index 1 : index
// CHECK-NEXT:   %[[I:[a-z0-9_]+]] = arith.addi %[[Q0]], %[[R]] : index
// CHECK-NEXT:   %[[J:[a-z0-9_]+]] = arith.addi %[[K0]], %[[C]] : index
// CHECK-NEXT:   arith.constant
// CHECK-NEXT:   %[[S:[a-z0-9_]+]] = arith.mulf %[[X]]
// CHECK-NEXT:   %[[D:[a-z0-9_]+]] = arith.subi %[[J]], %[[I]] : index
// CHECK-NEXT:   %[[DI:[a-z0-9_]+]] = arith.index_cast %[[D]] : index to i64
// CHECK-NEXT:   %[[DF:[a-z0-9_]+]] = arith.sitofp %[[DI]] : i64 to f32
// CHECK-NEXT:   %[[HI:[a-z0-9_]+]] = arith.index_cast %[[H]] : index to i64
// CHECK-NEXT:   %[[HF:[a-z0-9_]+]] = arith.sitofp %[[HI]] : i64 to f32
// CHECK-NEXT:   %[[T:[a-z0-9_]+]] = arith.addf %[[S]], %[[DF]] : f32
// CHECK-NEXT:   %[[SM:[a-z0-9_]+]] = arith.addf %[[T]], %[[HF]] : f32
// CHECK-NEXT:   %[[CAUSAL:[a-z0-9_]+]] = arith.cmpi sle, %[[J]], %[[I]] : index
// CHECK-NEXT:   %[[NB:[a-z0-9_]+]] = arith.cmpi ne, %[[B]], %[[J]] : index
// CHECK-NEXT:   %[[KEEP:[a-z0-9_]+]] = arith.andi %[[CAUSAL]], %[[NB]] : i1
// CHECK-NEXT:   %[[NINF:[a-z0-9_]+]] = arith.constant 0xFF800000 : f32
// CHECK-NEXT:   %[[RES:[a-z0-9_]+]] = arith.select %[[KEEP]], %[[SM]], %[[NINF]] : f32
// CHECK-NEXT:   linalg.yield %[[RES]] : f32
// CHECK-NOT: fa.score_tile
// CHECK-NOT: fa.yield
func.func @mods(%q: tensor<?x8xf32>, %k: tensor<?x8xf32>, %b: index, %h: index, %q0: index, %k0: index, %nq: index, %nk: index) -> tensor<?x?xf32> {
  %s = fa.score_tile %q, %k at [%b, %h, %q0, %k0] of [%nq, %nk] {causal = #fa.causal<top_left>, scale = 0.5 : f32} : tensor<?x8xf32>, tensor<?x8xf32> -> tensor<?x?xf32> score_mod {
  ^bb0(%sc: f32, %bb: index, %hh: index, %i: index, %j: index):
    %d = arith.subi %j, %i : index
    %di = arith.index_cast %d : index to i64
    %df = arith.sitofp %di : i64 to f32
    %hi = arith.index_cast %hh : index to i64
    %hf = arith.sitofp %hi : i64 to f32
    %t = arith.addf %sc, %df : f32
    %r = arith.addf %t, %hf : f32
    fa.yield %r : f32
  } mask_mod {
  ^bb0(%bb: index, %hh: index, %i: index, %j: index):
    %ne = arith.cmpi ne, %bb, %j : index
    fa.yield %ne : i1
  }
  return %s : tensor<?x?xf32>
}

// -----

// Every step at once, in the order of the definition: scale, softcap,
// ALiBi, bias, score_mod, then causal, window and mask_mod and-ed. A result
// type more static than the tiles gets a tensor.cast.

// CHECK-LABEL: func.func @all_at_once
// CHECK-SAME: %[[BIAS:[^:]+]]: tensor<2x4x?x?xf32>, %[[SL:[^:]+]]: tensor<1x4xf32>, %[[B:[^:]+]]: index, %[[H:[^:]+]]: index, %[[Q0:[^:]+]]: index, %[[K0:[^:]+]]: index, %[[NQ:[^:]+]]: index, %[[NK:[^:]+]]: index)
// CHECK: %[[DIAG:[a-z0-9_]+]] = arith.subi %[[NK]], %[[NQ]] : index
// CHECK-NEXT: %[[RS:[a-z0-9_]+]] = linalg.generic
// CHECK-NEXT: ^bb0(%[[X:[a-z0-9_]+]]: f32):
// CHECK-NEXT:   %[[R:[a-z0-9_]+]] = linalg.index 0 : index
// CHECK-NEXT:   %[[C:[a-z0-9_]+]] = linalg.index 1 : index
// CHECK-NEXT:   %[[I:[a-z0-9_]+]] = arith.addi %[[Q0]], %[[R]] : index
// CHECK-NEXT:   %[[J:[a-z0-9_]+]] = arith.addi %[[K0]], %[[C]] : index
// CHECK-NEXT:   %[[IA:[a-z0-9_]+]] = arith.addi %[[I]], %[[DIAG]] : index
// CHECK-NEXT:   %[[BV:[a-z0-9_]+]] = tensor.extract %[[BIAS]][%[[B]], %[[H]], %[[I]], %[[J]]] : tensor<2x4x?x?xf32>
// CHECK-NEXT:   %[[Z:[a-z0-9_]+]] = arith.constant 0 : index
// CHECK-NEXT:   %[[SLOPE:[a-z0-9_]+]] = tensor.extract %[[SL]][%[[Z]], %[[H]]] : tensor<1x4xf32>
// CHECK-NEXT:   %[[CAP:[a-z0-9_]+]] = arith.constant 2.000000e+01 : f32
// CHECK-NEXT:   %[[SC:[a-z0-9_]+]] = arith.constant 6.250000e-03 : f32
// CHECK-NEXT:   %[[S1:[a-z0-9_]+]] = arith.mulf %[[X]], %[[SC]] : f32
// CHECK-NEXT:   %[[TANH:[a-z0-9_]+]] = math.tanh %[[S1]] : f32
// CHECK-NEXT:   %[[S2:[a-z0-9_]+]] = arith.mulf %[[CAP]], %[[TANH]] : f32
// CHECK-NEXT:   %[[DIST:[a-z0-9_]+]] = arith.subi %[[IA]], %[[J]] : index
// CHECK-NEXT:   %[[D32:[a-z0-9_]+]] = arith.index_cast %[[DIST]] : index to i32
// CHECK-NEXT:   %[[DF:[a-z0-9_]+]] = arith.sitofp %[[D32]] : i32 to f32
// CHECK-NEXT:   %[[ABS:[a-z0-9_]+]] = math.absf %[[DF]] : f32
// CHECK-NEXT:   %[[PEN:[a-z0-9_]+]] = arith.mulf %[[SLOPE]], %[[ABS]] fastmath<contract> : f32
// CHECK-NEXT:   %[[S3:[a-z0-9_]+]] = arith.subf %[[S2]], %[[PEN]] fastmath<contract> : f32
// CHECK-NEXT:   %[[S4:[a-z0-9_]+]] = arith.addf %[[S3]], %[[BV]] fastmath<contract> : f32
// CHECK-NEXT:   %[[HALF:[a-z0-9_]+]] = arith.constant 5.000000e-01 : f32
// CHECK-NEXT:   %[[S5:[a-z0-9_]+]] = arith.mulf %[[S4]], %[[HALF]] : f32
// CHECK-NEXT:   %[[CAUSAL:[a-z0-9_]+]] = arith.cmpi sle, %[[J]], %[[I]] : index
// CHECK-NEXT:   %[[LEFT:[a-z0-9_]+]] = arith.constant 5 : index
// CHECK-NEXT:   %[[LO:[a-z0-9_]+]] = arith.subi %[[IA]], %[[LEFT]] : index
// CHECK-NEXT:   %[[W1:[a-z0-9_]+]] = arith.cmpi sge, %[[J]], %[[LO]] : index
// CHECK-NEXT:   %[[K1:[a-z0-9_]+]] = arith.andi %[[CAUSAL]], %[[W1]] : i1
// CHECK-NEXT:   %[[RIGHT:[a-z0-9_]+]] = arith.constant 2 : index
// CHECK-NEXT:   %[[HI:[a-z0-9_]+]] = arith.addi %[[IA]], %[[RIGHT]] : index
// CHECK-NEXT:   %[[W2:[a-z0-9_]+]] = arith.cmpi sle, %[[J]], %[[HI]] : index
// CHECK-NEXT:   %[[K2:[a-z0-9_]+]] = arith.andi %[[K1]], %[[W2]] : i1
// CHECK-NEXT:   %[[MM:[a-z0-9_]+]] = arith.cmpi ne, %[[B]], %[[H]] : index
// CHECK-NEXT:   %[[KEEP:[a-z0-9_]+]] = arith.andi %[[K2]], %[[MM]] : i1
// CHECK-NEXT:   %[[NINF:[a-z0-9_]+]] = arith.constant 0xFF800000 : f32
// CHECK-NEXT:   %[[RES:[a-z0-9_]+]] = arith.select %[[KEEP]], %[[S5]], %[[NINF]] : f32
// CHECK-NEXT:   linalg.yield %[[RES]] : f32
// CHECK-NEXT: } -> tensor<?x?xf32>
// CHECK-NEXT: %[[CAST:[a-z0-9_]+]] = tensor.cast %[[RS]] : tensor<?x?xf32> to tensor<16x16xf32>
// CHECK-NEXT: return %[[CAST]] : tensor<16x16xf32>
func.func @all_at_once(%q: tensor<?x8xf32>, %k: tensor<?x8xf32>, %bias: tensor<2x4x?x?xf32>, %slopes: tensor<1x4xf32>, %b: index, %h: index, %q0: index, %k0: index, %nq: index, %nk: index) -> tensor<16x16xf32> {
  %s = fa.score_tile %q, %k at [%b, %h, %q0, %k0] of [%nq, %nk] bias(%bias : tensor<2x4x?x?xf32>) alibi_slopes(%slopes : tensor<1x4xf32>) {scale = 0.125 : f32, softcap = 20.0 : f32, causal = #fa.causal<top_left>, window = array<i64: 5, 2>} : tensor<?x8xf32>, tensor<?x8xf32> -> tensor<16x16xf32> score_mod {
  ^bb0(%sc: f32, %bb: index, %hh: index, %i: index, %j: index):
    %half = arith.constant 0.5 : f32
    %r = arith.mulf %sc, %half : f32
    fa.yield %r : f32
  } mask_mod {
  ^bb0(%bb: index, %hh: index, %i: index, %j: index):
    %ne = arith.cmpi ne, %bb, %hh : index
    fa.yield %ne : i1
  }
  return %s : tensor<16x16xf32>
}
