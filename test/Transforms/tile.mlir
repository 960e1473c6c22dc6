// RUN: fa-opt %s -fa-tile="block-q=32 block-kv=16" -split-input-file | FileCheck %s
// RUN: fa-opt %s -fa-tile -split-input-file | FileCheck %s --check-prefix=DEFAULT

// fa-tile: fa.attention -> scf.forall over (batch, query head, Q tile) with
// the two-pass softmax over K/V tiles (a row-max loop, then a row-sum and
// P V loop), scores as fa.score_tile.

// The whole structure for MHA (G = 1), static shapes, bf16, Dv != D, with
// the lse. Nq = 100 is not a multiple of 32: the last Q tile is ragged;
// Nk = 40 is not a multiple of 16: so is the last K/V tile.

// CHECK-DAG: #[[TILE:[a-z0-9_]+]] = affine_map<(d0, d1) -> (d0, d1)>
// CHECK-DAG: #[[ROW:[a-z0-9_]+]] = affine_map<(d0, d1) -> (d0)>
// CHECK-DAG: #[[PV_P:[a-z0-9_]+]] = affine_map<(d0, d1, d2) -> (d0, d1)>
// CHECK-DAG: #[[PV_V:[a-z0-9_]+]] = affine_map<(d0, d1, d2) -> (d1, d2)>
// CHECK-DAG: #[[PV_ACC:[a-z0-9_]+]] = affine_map<(d0, d1, d2) -> (d0, d2)>
// CHECK-DAG: #[[ID1:[a-z0-9_]+]] = affine_map<(d0) -> (d0)>
// CHECK-LABEL: func.func @mha
// CHECK-SAME: (%[[Q:[^:]+]]: tensor<2x4x100x32xbf16>, %[[K:[^:]+]]: tensor<2x4x40x32xbf16>, %[[V:[^:]+]]: tensor<2x4x40x16xbf16>)
// CHECK-DAG: %[[C2:[a-z0-9_]+]] = arith.constant 2 : index
// CHECK-DAG: %[[C4:[a-z0-9_]+]] = arith.constant 4 : index
// CHECK-DAG: %[[NQ:[a-z0-9_]+]] = arith.constant 100 : index
// CHECK-DAG: %[[NK:[a-z0-9_]+]] = arith.constant 40 : index
// CHECK-DAG: %[[G:[a-z0-9_]+]] = arith.constant 1 : index
// CHECK-DAG: %[[C32:[a-z0-9_]+]] = arith.constant 32 : index
// Number of Q tiles: ceil(Nq / 32).
// CHECK: %[[NQT:[a-z0-9_]+]] = arith.ceildivui %[[NQ]], %[[C32]] : index
// CHECK-NEXT: %[[OE:[a-z0-9_]+]] = tensor.empty() : tensor<2x4x100x16xbf16>
// CHECK-NEXT: %[[LE:[a-z0-9_]+]] = tensor.empty() : tensor<2x4x100xf32>
// CHECK-NEXT: %[[R:[a-z0-9_]+]]:2 = scf.forall (%[[B:[a-z0-9_]+]], %[[H:[a-z0-9_]+]], %[[T:[a-z0-9_]+]]) in (%[[C2]], %[[C4]], %[[NQT]]) shared_outs(%[[OS:[a-z0-9_]+]] = %[[OE]], %[[LS:[a-z0-9_]+]] = %[[LE]]) -> (tensor<2x4x100x16xbf16>, tensor<2x4x100xf32>) {
// q0 = t * 32, rows = min(32, Nq - q0), kv head = h / G.
// CHECK-NEXT:   %[[BQ:[a-z0-9_]+]] = arith.constant 32 : index
// CHECK-NEXT:   %[[Q0:[a-z0-9_]+]] = arith.muli %[[T]], %[[BQ]] : index
// CHECK-NEXT:   %[[QREM:[a-z0-9_]+]] = arith.subi %[[NQ]], %[[Q0]] : index
// CHECK-NEXT:   %[[BQ2:[a-z0-9_]+]] = arith.constant 32 : index
// CHECK-NEXT:   %[[ROWS:[a-z0-9_]+]] = arith.minsi %[[BQ2]], %[[QREM]] : index
// CHECK-NEXT:   %[[HK:[a-z0-9_]+]] = arith.divui %[[H]], %[[G]] : index
// CHECK-NEXT:   %[[QT:[a-z0-9_]+]] = tensor.extract_slice %[[Q]][%[[B]], %[[H]], %[[Q0]], 0] [1, 1, %[[ROWS]], 32] [1, 1, 1, 1] : tensor<2x4x100x32xbf16> to tensor<?x32xbf16>
// No mask: the K/V loops run over [0, Nk).
// CHECK-NEXT:   arith.addi %[[Q0]], %[[ROWS]] : index
// CHECK-NEXT:   %[[KV0:[a-z0-9_]+]] = arith.constant 0 : index
// CHECK-NEXT:   %[[STEP:[a-z0-9_]+]] = arith.constant 16 : index
// Pass 1: m = row max of the scores, from -inf.
// CHECK-NEXT:   %[[ME:[a-z0-9_]+]] = tensor.empty(%[[ROWS]]) : tensor<?xf32>
// CHECK-NEXT:   %[[NINF:[a-z0-9_]+]] = arith.constant 0xFF800000 : f32
// CHECK-NEXT:   %[[M0:[a-z0-9_]+]] = linalg.fill ins(%[[NINF]] : f32) outs(%[[ME]] : tensor<?xf32>) -> tensor<?xf32>
// CHECK-NEXT:   %[[M:[a-z0-9_]+]] = scf.for %[[K0:[a-z0-9_]+]] = %[[KV0]] to %[[NK]] step %[[STEP]] iter_args(%[[MI:[a-z0-9_]+]] = %[[M0]]) -> (tensor<?xf32>) {
// CHECK-NEXT:     %[[KREM:[a-z0-9_]+]] = arith.subi %[[NK]], %[[K0]] : index
// CHECK-NEXT:     %[[BKV:[a-z0-9_]+]] = arith.constant 16 : index
// CHECK-NEXT:     %[[COLS:[a-z0-9_]+]] = arith.minsi %[[BKV]], %[[KREM]] : index
// CHECK-NEXT:     %[[KT:[a-z0-9_]+]] = tensor.extract_slice %[[K]][%[[B]], %[[HK]], %[[K0]], 0] [1, 1, %[[COLS]], 32] [1, 1, 1, 1] : tensor<2x4x40x32xbf16> to tensor<?x32xbf16>
// CHECK-NEXT:     %[[S:[a-z0-9_]+]] = fa.score_tile %[[QT]], %[[KT]] at[%[[B]], %[[H]], %[[Q0]], %[[K0]]] of[%[[NQ]], %[[NK]]] {scale = 0.176776692 : f32} : tensor<?x32xbf16>, tensor<?x32xbf16> -> tensor<?x?xf32>
// CHECK-NEXT:     %[[MT:[a-z0-9_]+]] = linalg.generic {indexing_maps = [#[[TILE]], #[[ROW]]], iterator_types = ["parallel", "reduction"]} ins(%[[S]] : tensor<?x?xf32>) outs(%[[MI]] : tensor<?xf32>) {
// CHECK-NEXT:     ^bb0(%[[X:[a-z0-9_]+]]: f32, %[[Y:[a-z0-9_]+]]: f32):
// CHECK-NEXT:       %[[MX:[a-z0-9_]+]] = arith.maximumf %[[X]], %[[Y]] : f32
// CHECK-NEXT:       linalg.yield %[[MX]] : f32
// CHECK-NEXT:     } -> tensor<?xf32>
// CHECK-NEXT:     scf.yield %[[MT]] : tensor<?xf32>
// CHECK-NEXT:   } {fa.softmax_row_max = "exp"}
// Pass 2: l = sum exp(s - m) and acc = exp(s - m) V, from 0.
// CHECK-NEXT:   %[[LE0:[a-z0-9_]+]] = tensor.empty(%[[ROWS]]) : tensor<?xf32>
// CHECK-NEXT:   %[[Z:[a-z0-9_]+]] = arith.constant 0.000000e+00 : f32
// CHECK-NEXT:   %[[L0:[a-z0-9_]+]] = linalg.fill ins(%[[Z]] : f32) outs(%[[LE0]] : tensor<?xf32>) -> tensor<?xf32>
// CHECK-NEXT:   %[[AE:[a-z0-9_]+]] = tensor.empty(%[[ROWS]]) : tensor<?x16xf32>
// CHECK-NEXT:   %[[Z2:[a-z0-9_]+]] = arith.constant 0.000000e+00 : f32
// CHECK-NEXT:   %[[A0:[a-z0-9_]+]] = linalg.fill ins(%[[Z2]] : f32) outs(%[[AE]] : tensor<?x16xf32>) -> tensor<?x16xf32>
// CHECK-NEXT:   %[[LA:[a-z0-9_]+]]:2 = scf.for %[[K1:[a-z0-9_]+]] = %[[KV0]] to %[[NK]] step %[[STEP]] iter_args(%[[LI:[a-z0-9_]+]] = %[[L0]], %[[AI:[a-z0-9_]+]] = %[[A0]]) -> (tensor<?xf32>, tensor<?x16xf32>) {
// CHECK-NEXT:     %[[KREM1:[a-z0-9_]+]] = arith.subi %[[NK]], %[[K1]] : index
// CHECK-NEXT:     %[[BKV1:[a-z0-9_]+]] = arith.constant 16 : index
// CHECK-NEXT:     %[[COLS1:[a-z0-9_]+]] = arith.minsi %[[BKV1]], %[[KREM1]] : index
// CHECK-NEXT:     %[[KT1:[a-z0-9_]+]] = tensor.extract_slice %[[K]][%[[B]], %[[HK]], %[[K1]], 0] [1, 1, %[[COLS1]], 32] [1, 1, 1, 1] : tensor<2x4x40x32xbf16> to tensor<?x32xbf16>
// CHECK-NEXT:     %[[S1:[a-z0-9_]+]] = fa.score_tile %[[QT]], %[[KT1]] at[%[[B]], %[[H]], %[[Q0]], %[[K1]]] of[%[[NQ]], %[[NK]]] {scale = 0.176776692 : f32} : tensor<?x32xbf16>, tensor<?x32xbf16> -> tensor<?x?xf32>
// p = exp(s - m); a row still fully masked (m = -inf) uses m = 0, so p = 0.
// CHECK-NEXT:     %[[P:[a-z0-9_]+]] = linalg.generic {indexing_maps = [#[[ROW]], #[[TILE]]], iterator_types = ["parallel", "parallel"]} ins(%[[M]] : tensor<?xf32>) outs(%[[S1]] : tensor<?x?xf32>) {
// CHECK-NEXT:     ^bb0(%[[MV:[a-z0-9_]+]]: f32, %[[SV:[a-z0-9_]+]]: f32):
// CHECK-NEXT:       %[[NINF1:[a-z0-9_]+]] = arith.constant 0xFF800000 : f32
// CHECK-NEXT:       %[[ISM:[a-z0-9_]+]] = arith.cmpf oeq, %[[MV]], %[[NINF1]] : f32
// CHECK-NEXT:       %[[Z3:[a-z0-9_]+]] = arith.constant 0.000000e+00 : f32
// CHECK-NEXT:       %[[MS:[a-z0-9_]+]] = arith.select %[[ISM]], %[[Z3]], %[[MV]] : f32
// CHECK-NEXT:       %[[D:[a-z0-9_]+]] = arith.subf %[[SV]], %[[MS]] : f32
// CHECK-NEXT:       %[[E:[a-z0-9_]+]] = math.exp %[[D]] : f32
// CHECK-NEXT:       linalg.yield %[[E]] : f32
// CHECK-NEXT:     } -> tensor<?x?xf32>
// l += row sum of p.
// CHECK-NEXT:     %[[L:[a-z0-9_]+]] = linalg.generic {indexing_maps = [#[[TILE]], #[[ROW]]], iterator_types = ["parallel", "reduction"]} ins(%[[P]] : tensor<?x?xf32>) outs(%[[LI]] : tensor<?xf32>) {
// CHECK-NEXT:     ^bb0(%[[PV:[a-z0-9_]+]]: f32, %[[LV:[a-z0-9_]+]]: f32):
// CHECK-NEXT:       %[[LS1:[a-z0-9_]+]] = arith.addf %[[PV]], %[[LV]] fastmath<reassoc> : f32
// CHECK-NEXT:       linalg.yield %[[LS1]] : f32
// CHECK-NEXT:     } -> tensor<?xf32>
// acc += p V over (r, j, e), V read in bf16 and extended.
// CHECK-NEXT:     %[[VT:[a-z0-9_]+]] = tensor.extract_slice %[[V]][%[[B]], %[[HK]], %[[K1]], 0] [1, 1, %[[COLS1]], 16] [1, 1, 1, 1] : tensor<2x4x40x16xbf16> to tensor<?x16xbf16>
// CHECK-NEXT:     %[[ACC:[a-z0-9_]+]] = linalg.generic {indexing_maps = [#[[PV_P]], #[[PV_V]], #[[PV_ACC]]], iterator_types = ["parallel", "reduction", "parallel"]} ins(%[[P]], %[[VT]] : tensor<?x?xf32>, tensor<?x16xbf16>) outs(%[[AI]] : tensor<?x16xf32>) {
// CHECK-NEXT:     ^bb0(%[[PE:[a-z0-9_]+]]: f32, %[[VE:[a-z0-9_]+]]: bf16, %[[AV:[a-z0-9_]+]]: f32):
// CHECK-NEXT:       %[[VF:[a-z0-9_]+]] = arith.extf %[[VE]] : bf16 to f32
// CHECK-NEXT:       %[[PROD:[a-z0-9_]+]] = arith.mulf %[[PE]], %[[VF]] : f32
// CHECK-NEXT:       %[[SUM:[a-z0-9_]+]] = arith.addf %[[AV]], %[[PROD]] : f32
// CHECK-NEXT:       linalg.yield %[[SUM]] : f32
// CHECK-NEXT:     } -> tensor<?x16xf32>
// CHECK-NEXT:     scf.yield %[[L]], %[[ACC]] : tensor<?xf32>, tensor<?x16xf32>
// CHECK-NEXT:   } {fa.softmax_row_sum}
// O = acc / l (0 where l = 0), truncated to bf16.
// CHECK-NEXT:   %[[OTE:[a-z0-9_]+]] = tensor.empty(%[[ROWS]]) : tensor<?x16xbf16>
// CHECK-NEXT:   %[[OT:[a-z0-9_]+]] = linalg.generic {indexing_maps = [#[[TILE]], #[[ROW]], #[[TILE]]], iterator_types = ["parallel", "parallel"]} ins(%[[LA]]#1, %[[LA]]#0 : tensor<?x16xf32>, tensor<?xf32>) outs(%[[OTE]] : tensor<?x16xbf16>) {
// CHECK-NEXT:   ^bb0(%[[OA:[a-z0-9_]+]]: f32, %[[OL:[a-z0-9_]+]]: f32, %{{[a-z0-9_]+}}: bf16):
// CHECK-NEXT:     %[[Z4:[a-z0-9_]+]] = arith.constant 0.000000e+00 : f32
// CHECK-NEXT:     %[[EMPTY:[a-z0-9_]+]] = arith.cmpf oeq, %[[OL]], %[[Z4]] : f32
// CHECK-NEXT:     %[[QUO:[a-z0-9_]+]] = arith.divf %[[OA]], %[[OL]] : f32
// CHECK-NEXT:     %[[SEL:[a-z0-9_]+]] = arith.select %[[EMPTY]], %[[Z4]], %[[QUO]] : f32
// CHECK-NEXT:     %[[TR:[a-z0-9_]+]] = arith.truncf %[[SEL]] : f32 to bf16
// CHECK-NEXT:     linalg.yield %[[TR]] : bf16
// CHECK-NEXT:   } -> tensor<?x16xbf16>
// lse = m + log l.
// CHECK-NEXT:   %[[LTE:[a-z0-9_]+]] = tensor.empty(%[[ROWS]]) : tensor<?xf32>
// CHECK-NEXT:   %[[LT:[a-z0-9_]+]] = linalg.generic {indexing_maps = [#[[ID1]], #[[ID1]], #[[ID1]]], iterator_types = ["parallel"]} ins(%[[M]], %[[LA]]#0 : tensor<?xf32>, tensor<?xf32>) outs(%[[LTE]] : tensor<?xf32>) {
// CHECK-NEXT:   ^bb0(%[[LM:[a-z0-9_]+]]: f32, %[[LL:[a-z0-9_]+]]: f32, %{{[a-z0-9_]+}}: f32):
// CHECK-NEXT:     %[[LOG:[a-z0-9_]+]] = math.log %[[LL]] : f32
// CHECK-NEXT:     %[[LSE:[a-z0-9_]+]] = arith.addf %[[LM]], %[[LOG]] : f32
// CHECK-NEXT:     linalg.yield %[[LSE]] : f32
// CHECK-NEXT:   } -> tensor<?xf32>
// The tiles go to rows [q0, q0 + rows) of head (b, h).
// CHECK-NEXT:   scf.forall.in_parallel {
// CHECK-NEXT:     tensor.parallel_insert_slice %[[OT]] into %[[OS]][%[[B]], %[[H]], %[[Q0]], 0] [1, 1, %[[ROWS]], 16] [1, 1, 1, 1] : tensor<?x16xbf16> into tensor<2x4x100x16xbf16>
// CHECK-NEXT:     tensor.parallel_insert_slice %[[LT]] into %[[LS]][%[[B]], %[[H]], %[[Q0]]] [1, 1, %[[ROWS]]] [1, 1, 1] : tensor<?xf32> into tensor<2x4x100xf32>
// CHECK-NEXT:   }
// CHECK-NEXT: }
// CHECK-NEXT: return %[[R]]#0, %[[R]]#1 : tensor<2x4x100x16xbf16>, tensor<2x4x100xf32>
// CHECK-NOT: fa.attention

// With the default options, 64 x 64 tiles.
// DEFAULT-LABEL: func.func @mha
// DEFAULT-DAG: %[[NQ:[a-z0-9_]+]] = arith.constant 100 : index
// DEFAULT-DAG: %[[NK:[a-z0-9_]+]] = arith.constant 40 : index
// DEFAULT-DAG: %[[C64:[a-z0-9_]+]] = arith.constant 64 : index
// DEFAULT: arith.ceildivui %[[NQ]], %[[C64]] : index
// DEFAULT: scf.forall
// DEFAULT: arith.muli
// DEFAULT: %[[BQ:[a-z0-9_]+]] = arith.constant 64 : index
// DEFAULT-NEXT: arith.minsi %[[BQ]], %{{[a-z0-9_]+}} : index
// DEFAULT: arith.addi
// DEFAULT-NEXT: %[[KV0:[a-z0-9_]+]] = arith.constant 0 : index
// DEFAULT-NEXT: %[[STEP:[a-z0-9_]+]] = arith.constant 64 : index
// DEFAULT: scf.for %{{[a-z0-9_]+}} = %[[KV0]] to %[[NK]] step %[[STEP]] iter_args
// DEFAULT: } {fa.softmax_row_max = "exp"}
// DEFAULT: scf.for %{{[a-z0-9_]+}} = %{{[a-z0-9_]+}} to %[[NK]] step %[[STEP]] iter_args
// DEFAULT: } {fa.softmax_row_sum}
func.func @mha(%q: tensor<2x4x100x32xbf16>, %k: tensor<2x4x40x32xbf16>, %v: tensor<2x4x40x16xbf16>) -> (tensor<2x4x100x16xbf16>, tensor<2x4x100xf32>) {
  %o, %lse = fa.attention %q, %k, %v : tensor<2x4x100x32xbf16>, tensor<2x4x40x32xbf16>, tensor<2x4x40x16xbf16> -> tensor<2x4x100x16xbf16>, tensor<2x4x100xf32>
  return %o, %lse : tensor<2x4x100x16xbf16>, tensor<2x4x100xf32>
}

// -----

// GQA (Hq = 8, Hkv = 2, G = 4) with dynamic batch and lengths, f32, no lse:
// only O is a shared output, and f32 needs no extf/truncf.

// CHECK-LABEL: func.func @gqa_dynamic
// CHECK-SAME: (%[[Q:[^:]+]]: tensor<?x8x?x64xf32>, %[[K:[^:]+]]: tensor<?x2x?x64xf32>, %[[V:[^:]+]]: tensor<?x2x?x64xf32>)
// CHECK: %[[B:[a-z0-9_]+]] = tensor.dim %[[Q]], %{{[a-z0-9_]+}} : tensor<?x8x?x64xf32>
// CHECK: %[[C8:[a-z0-9_]+]] = arith.constant 8 : index
// CHECK: %[[NQ:[a-z0-9_]+]] = tensor.dim %[[Q]], %{{[a-z0-9_]+}} : tensor<?x8x?x64xf32>
// CHECK: %[[NK:[a-z0-9_]+]] = tensor.dim %[[K]], %{{[a-z0-9_]+}} : tensor<?x2x?x64xf32>
// CHECK: %[[G:[a-z0-9_]+]] = arith.constant 4 : index
// CHECK: %[[C32:[a-z0-9_]+]] = arith.constant 32 : index
// CHECK: %[[NQT:[a-z0-9_]+]] = arith.ceildivui %[[NQ]], %[[C32]] : index
// CHECK: %[[OE:[a-z0-9_]+]] = tensor.empty(%{{[a-z0-9_]+}}, %{{[a-z0-9_]+}}) : tensor<?x8x?x64xf32>
// CHECK-NEXT: %[[R:[a-z0-9_]+]] = scf.forall (%[[BI:[a-z0-9_]+]], %[[H:[a-z0-9_]+]], %[[T:[a-z0-9_]+]]) in (%[[B]], %[[C8]], %[[NQT]]) shared_outs(%[[OS:[a-z0-9_]+]] = %[[OE]]) -> (tensor<?x8x?x64xf32>) {
// CHECK-NEXT:   %[[BQ:[a-z0-9_]+]] = arith.constant 32 : index
// CHECK-NEXT:   %[[Q0:[a-z0-9_]+]] = arith.muli %[[T]], %[[BQ]] : index
// CHECK-NEXT:   %[[QREM:[a-z0-9_]+]] = arith.subi %[[NQ]], %[[Q0]] : index
// CHECK-NEXT:   %[[BQ2:[a-z0-9_]+]] = arith.constant 32 : index
// CHECK-NEXT:   %[[ROWS:[a-z0-9_]+]] = arith.minsi %[[BQ2]], %[[QREM]] : index
// CHECK-NEXT:   %[[HK:[a-z0-9_]+]] = arith.divui %[[H]], %[[G]] : index
// CHECK-NEXT:   %[[QT:[a-z0-9_]+]] = tensor.extract_slice %[[Q]][%[[BI]], %[[H]], %[[Q0]], 0] [1, 1, %[[ROWS]], 64] [1, 1, 1, 1] : tensor<?x8x?x64xf32> to tensor<?x64xf32>
// CHECK: scf.for %[[K0:[a-z0-9_]+]] = %{{[a-z0-9_]+}} to %[[NK]] step
// CHECK: %[[KT:[a-z0-9_]+]] = tensor.extract_slice %[[K]][%[[BI]], %[[HK]], %[[K0]], 0] [1, 1, %{{[a-z0-9_]+}}, 64] [1, 1, 1, 1] : tensor<?x2x?x64xf32> to tensor<?x64xf32>
// CHECK-NEXT: fa.score_tile %[[QT]], %[[KT]] at[%[[BI]], %[[H]], %[[Q0]], %[[K0]]] of[%[[NQ]], %[[NK]]] {scale = 1.250000e-01 : f32} : tensor<?x64xf32>, tensor<?x64xf32> -> tensor<?x?xf32>
// CHECK: } {fa.softmax_row_max = "exp"}
// CHECK: scf.for %[[K1:[a-z0-9_]+]] = %{{[a-z0-9_]+}} to %[[NK]] step
// CHECK: tensor.extract_slice %[[K]][%[[BI]], %[[HK]], %[[K1]], 0]
// CHECK: tensor.extract_slice %[[V]][%[[BI]], %[[HK]], %[[K1]], 0] [1, 1, %{{[a-z0-9_]+}}, 64] [1, 1, 1, 1] : tensor<?x2x?x64xf32> to tensor<?x64xf32>
// CHECK-NEXT: linalg.generic
// CHECK-NEXT: ^bb0(%[[PE:[a-z0-9_]+]]: f32, %[[VE:[a-z0-9_]+]]: f32, %[[AV:[a-z0-9_]+]]: f32):
// CHECK-NEXT:   %[[PROD:[a-z0-9_]+]] = arith.mulf %[[PE]], %[[VE]] : f32
// CHECK: } {fa.softmax_row_sum}
// CHECK: %[[OT:[a-z0-9_]+]] = linalg.generic {{.*}} outs(%{{[a-z0-9_]+}} : tensor<?x64xf32>) {
// CHECK-NEXT: ^bb0(%[[OA:[a-z0-9_]+]]: f32, %[[OL:[a-z0-9_]+]]: f32, %{{[a-z0-9_]+}}: f32):
// CHECK-NEXT:   %[[Z:[a-z0-9_]+]] = arith.constant 0.000000e+00 : f32
// CHECK-NEXT:   %[[EMPTY:[a-z0-9_]+]] = arith.cmpf oeq, %[[OL]], %[[Z]] : f32
// CHECK-NEXT:   %[[QUO:[a-z0-9_]+]] = arith.divf %[[OA]], %[[OL]] : f32
// CHECK-NEXT:   %[[SEL:[a-z0-9_]+]] = arith.select %[[EMPTY]], %[[Z]], %[[QUO]] : f32
// CHECK-NEXT:   linalg.yield %[[SEL]] : f32
// CHECK-NEXT: } -> tensor<?x64xf32>
// CHECK-NEXT: scf.forall.in_parallel {
// CHECK-NEXT:   tensor.parallel_insert_slice %[[OT]] into %[[OS]][%[[BI]], %[[H]], %[[Q0]], 0] [1, 1, %[[ROWS]], 64] [1, 1, 1, 1] : tensor<?x64xf32> into tensor<?x8x?x64xf32>
// CHECK-NEXT: }
// CHECK-NEXT: }
// CHECK-NEXT: return %[[R]] : tensor<?x8x?x64xf32>
func.func @gqa_dynamic(%q: tensor<?x8x?x64xf32>, %k: tensor<?x2x?x64xf32>, %v: tensor<?x2x?x64xf32>) -> tensor<?x8x?x64xf32> {
  %o = fa.attention %q, %k, %v : tensor<?x8x?x64xf32>, tensor<?x2x?x64xf32>, tensor<?x2x?x64xf32> -> tensor<?x8x?x64xf32>
  return %o : tensor<?x8x?x64xf32>
}

// -----

// Dynamic head counts: G = Hq / Hkv at run time, kv head = h / G.

// CHECK-LABEL: func.func @dynamic_heads
// CHECK-SAME: (%[[Q:[^:]+]]: tensor<1x?x8x16xbf16>, %[[K:[^:]+]]: tensor<1x?x8x16xbf16>
// CHECK: %[[HQ:[a-z0-9_]+]] = tensor.dim %[[Q]], %{{[a-z0-9_]+}} : tensor<1x?x8x16xbf16>
// CHECK: %[[HKV:[a-z0-9_]+]] = tensor.dim %[[K]], %{{[a-z0-9_]+}} : tensor<1x?x8x16xbf16>
// CHECK-NEXT: %[[G:[a-z0-9_]+]] = arith.divui %[[HQ]], %[[HKV]] : index
// CHECK: scf.forall (%{{[a-z0-9_]+}}, %[[H:[a-z0-9_]+]], %{{[a-z0-9_]+}}) in (%{{[a-z0-9_]+}}, %[[HQ]], %{{[a-z0-9_]+}})
// CHECK: arith.divui %[[H]], %[[G]] : index
func.func @dynamic_heads(%q: tensor<1x?x8x16xbf16>, %k: tensor<1x?x8x16xbf16>, %v: tensor<1x?x8x16xbf16>) -> tensor<1x?x8x16xbf16> {
  %o = fa.attention %q, %k, %v : tensor<1x?x8x16xbf16>, tensor<1x?x8x16xbf16>, tensor<1x?x8x16xbf16> -> tensor<1x?x8x16xbf16>
  return %o : tensor<1x?x8x16xbf16>
}

// -----

// Causal, top-left: the last row of the tile, q0 + rows - 1, sees keys up to
// itself, so the K/V loops end at max(0, min(Nk, q0 + rows)).

// CHECK-LABEL: func.func @causal_top_left
// CHECK-SAME: (%[[Q:[^:]+]]: tensor<1x1x?x4xf32>, %[[K:[^:]+]]: tensor<1x1x?x4xf32>
// CHECK: %[[NQ:[a-z0-9_]+]] = tensor.dim %[[Q]], %{{[a-z0-9_]+}} : tensor<1x1x?x4xf32>
// CHECK: %[[NK:[a-z0-9_]+]] = tensor.dim %[[K]], %{{[a-z0-9_]+}} : tensor<1x1x?x4xf32>
// CHECK: scf.forall
// CHECK: %[[Q0:[a-z0-9_]+]] = arith.muli
// CHECK: %[[ROWS:[a-z0-9_]+]] = arith.minsi
// CHECK: %[[QEND:[a-z0-9_]+]] = arith.addi %[[Q0]], %[[ROWS]] : index
// CHECK-NEXT: %[[KV0:[a-z0-9_]+]] = arith.constant 0 : index
// CHECK-NEXT: %[[MIN:[a-z0-9_]+]] = arith.minsi %[[NK]], %[[QEND]] : index
// CHECK-NEXT: %[[KVEND:[a-z0-9_]+]] = arith.maxsi %[[KV0]], %[[MIN]] : index
// CHECK-NEXT: %[[STEP:[a-z0-9_]+]] = arith.constant 16 : index
// CHECK: scf.for %{{[a-z0-9_]+}} = %[[KV0]] to %[[KVEND]] step %[[STEP]]
// CHECK: fa.score_tile {{.*}} of[%[[NQ]], %[[NK]]] {causal = #fa.causal<top_left>, scale = 5.000000e-01 : f32}
// CHECK: } {fa.softmax_row_max = "exp"}
// CHECK: scf.for %{{[a-z0-9_]+}} = %[[KV0]] to %[[KVEND]] step %[[STEP]]
// CHECK: fa.score_tile {{.*}} {causal = #fa.causal<top_left>, scale = 5.000000e-01 : f32}
// CHECK: } {fa.softmax_row_sum}
func.func @causal_top_left(%q: tensor<1x1x?x4xf32>, %k: tensor<1x1x?x4xf32>, %v: tensor<1x1x?x4xf32>) -> tensor<1x1x?x4xf32> {
  %o = fa.attention %q, %k, %v {causal = #fa.causal<top_left>, scale = 0.5 : f32} : tensor<1x1x?x4xf32>, tensor<1x1x?x4xf32>, tensor<1x1x?x4xf32> -> tensor<1x1x?x4xf32>
  return %o : tensor<1x1x?x4xf32>
}

// -----

// Causal, bottom-right: the diagonal is shifted by Nk - Nq, the K/V loops
// end at max(0, min(Nk, q0 + rows + Nk - Nq)).

// CHECK-LABEL: func.func @causal_bottom_right
// CHECK-SAME: (%[[Q:[^:]+]]: tensor<1x1x?x4xf32>, %[[K:[^:]+]]: tensor<1x1x?x4xf32>
// CHECK: %[[NQ:[a-z0-9_]+]] = tensor.dim %[[Q]], %{{[a-z0-9_]+}} : tensor<1x1x?x4xf32>
// CHECK: %[[NK:[a-z0-9_]+]] = tensor.dim %[[K]], %{{[a-z0-9_]+}} : tensor<1x1x?x4xf32>
// CHECK: scf.forall
// CHECK: %[[Q0:[a-z0-9_]+]] = arith.muli
// CHECK: %[[ROWS:[a-z0-9_]+]] = arith.minsi
// CHECK: %[[QEND:[a-z0-9_]+]] = arith.addi %[[Q0]], %[[ROWS]] : index
// CHECK-NEXT: %[[DIAG:[a-z0-9_]+]] = arith.subi %[[NK]], %[[NQ]] : index
// CHECK-NEXT: %[[KV0:[a-z0-9_]+]] = arith.constant 0 : index
// CHECK-NEXT: %[[LAST:[a-z0-9_]+]] = arith.addi %[[QEND]], %[[DIAG]] : index
// CHECK-NEXT: %[[MIN:[a-z0-9_]+]] = arith.minsi %[[NK]], %[[LAST]] : index
// CHECK-NEXT: %[[KVEND:[a-z0-9_]+]] = arith.maxsi %[[KV0]], %[[MIN]] : index
// CHECK-NEXT: %[[STEP:[a-z0-9_]+]] = arith.constant 16 : index
// CHECK: scf.for %{{[a-z0-9_]+}} = %[[KV0]] to %[[KVEND]] step %[[STEP]]
// CHECK: fa.score_tile {{.*}} of[%[[NQ]], %[[NK]]] {causal = #fa.causal<bottom_right>, scale = 5.000000e-01 : f32}
// CHECK: } {fa.softmax_row_max = "exp"}
// CHECK: scf.for %{{[a-z0-9_]+}} = %[[KV0]] to %[[KVEND]] step %[[STEP]]
// CHECK: } {fa.softmax_row_sum}
func.func @causal_bottom_right(%q: tensor<1x1x?x4xf32>, %k: tensor<1x1x?x4xf32>, %v: tensor<1x1x?x4xf32>) -> tensor<1x1x?x4xf32> {
  %o = fa.attention %q, %k, %v {causal = #fa.causal<bottom_right>} : tensor<1x1x?x4xf32>, tensor<1x1x?x4xf32>, tensor<1x1x?x4xf32> -> tensor<1x1x?x4xf32>
  return %o : tensor<1x1x?x4xf32>
}

// -----

// Window [40, 3]: keys from max(0, q0 + Nk - Nq - 40), rounded down to a
// multiple of block-kv = 16, to max(0, min(Nk, q0 + rows + Nk - Nq + 3)).

// CHECK-LABEL: func.func @window
// CHECK-SAME: (%[[Q:[^:]+]]: tensor<1x1x?x4xf32>, %[[K:[^:]+]]: tensor<1x1x?x4xf32>
// CHECK: %[[NQ:[a-z0-9_]+]] = tensor.dim %[[Q]], %{{[a-z0-9_]+}} : tensor<1x1x?x4xf32>
// CHECK: %[[NK:[a-z0-9_]+]] = tensor.dim %[[K]], %{{[a-z0-9_]+}} : tensor<1x1x?x4xf32>
// CHECK: scf.forall
// CHECK: %[[Q0:[a-z0-9_]+]] = arith.muli
// CHECK: %[[ROWS:[a-z0-9_]+]] = arith.minsi
// CHECK: %[[QEND:[a-z0-9_]+]] = arith.addi %[[Q0]], %[[ROWS]] : index
// CHECK-NEXT: %[[DIAG:[a-z0-9_]+]] = arith.subi %[[NK]], %[[NQ]] : index
// CHECK-NEXT: %[[C0:[a-z0-9_]+]] = arith.constant 0 : index
// CHECK-NEXT: %[[LEFT:[a-z0-9_]+]] = arith.constant 40 : index
// CHECK-NEXT: %[[FIRST:[a-z0-9_]+]] = arith.addi %[[Q0]], %[[DIAG]] : index
// CHECK-NEXT: %[[LO:[a-z0-9_]+]] = arith.subi %[[FIRST]], %[[LEFT]] : index
// CHECK-NEXT: %[[BKV:[a-z0-9_]+]] = arith.constant 16 : index
// CHECK-NEXT: %[[BEGIN:[a-z0-9_]+]] = arith.maxsi %[[C0]], %[[LO]] : index
// CHECK-NEXT: %[[NT:[a-z0-9_]+]] = arith.divui %[[BEGIN]], %[[BKV]] : index
// CHECK-NEXT: %[[KVBEGIN:[a-z0-9_]+]] = arith.muli %[[NT]], %[[BKV]] : index
// CHECK-NEXT: %[[RIGHT:[a-z0-9_]+]] = arith.constant 3 : index
// CHECK-NEXT: %[[LAST:[a-z0-9_]+]] = arith.addi %[[QEND]], %[[DIAG]] : index
// CHECK-NEXT: %[[HI:[a-z0-9_]+]] = arith.addi %[[LAST]], %[[RIGHT]] : index
// CHECK-NEXT: %[[MIN:[a-z0-9_]+]] = arith.minsi %[[NK]], %[[HI]] : index
// CHECK-NEXT: %[[KVEND:[a-z0-9_]+]] = arith.maxsi %[[C0]], %[[MIN]] : index
// CHECK-NEXT: %[[STEP:[a-z0-9_]+]] = arith.constant 16 : index
// CHECK: scf.for %{{[a-z0-9_]+}} = %[[KVBEGIN]] to %[[KVEND]] step %[[STEP]]
// CHECK: fa.score_tile {{.*}} of[%[[NQ]], %[[NK]]] {scale = 5.000000e-01 : f32, window = array<i64: 40, 3>}
// CHECK: } {fa.softmax_row_max = "exp"}
// CHECK: scf.for %{{[a-z0-9_]+}} = %[[KVBEGIN]] to %[[KVEND]] step %[[STEP]]
// CHECK: } {fa.softmax_row_sum}
func.func @window(%q: tensor<1x1x?x4xf32>, %k: tensor<1x1x?x4xf32>, %v: tensor<1x1x?x4xf32>) -> tensor<1x1x?x4xf32> {
  %o = fa.attention %q, %k, %v {window = array<i64: 40, 3>} : tensor<1x1x?x4xf32>, tensor<1x1x?x4xf32>, tensor<1x1x?x4xf32> -> tensor<1x1x?x4xf32>
  return %o : tensor<1x1x?x4xf32>
}

// -----

// Window and top-left causal: the end is the smaller of both bounds.

// CHECK-LABEL: func.func @window_causal
// CHECK-SAME: (%[[Q:[^:]+]]: tensor<1x1x?x4xf32>, %[[K:[^:]+]]: tensor<1x1x?x4xf32>
// CHECK: %[[NK:[a-z0-9_]+]] = tensor.dim %[[K]], %{{[a-z0-9_]+}} : tensor<1x1x?x4xf32>
// CHECK: %[[QEND:[a-z0-9_]+]] = arith.addi %[[Q0:[a-z0-9_]+]], %[[ROWS:[a-z0-9_]+]] : index
// CHECK-NEXT: %[[DIAG:[a-z0-9_]+]] = arith.subi %[[NK]], %{{[a-z0-9_]+}} : index
// CHECK-NEXT: %[[C0:[a-z0-9_]+]] = arith.constant 0 : index
// CHECK-NEXT: %[[CMIN:[a-z0-9_]+]] = arith.minsi %[[NK]], %[[QEND]] : index
// CHECK-NEXT: %[[CEND:[a-z0-9_]+]] = arith.maxsi %[[C0]], %[[CMIN]] : index
// CHECK: %[[KVBEGIN:[a-z0-9_]+]] = arith.muli %{{[a-z0-9_]+}}, %{{[a-z0-9_]+}} : index
// CHECK-NEXT: %[[RIGHT:[a-z0-9_]+]] = arith.constant 3 : index
// CHECK-NEXT: %[[LAST:[a-z0-9_]+]] = arith.addi %[[QEND]], %[[DIAG]] : index
// CHECK-NEXT: %[[HI:[a-z0-9_]+]] = arith.addi %[[LAST]], %[[RIGHT]] : index
// CHECK-NEXT: %[[MIN:[a-z0-9_]+]] = arith.minsi %[[CEND]], %[[HI]] : index
// CHECK-NEXT: %[[KVEND:[a-z0-9_]+]] = arith.maxsi %[[C0]], %[[MIN]] : index
// CHECK: scf.for %{{[a-z0-9_]+}} = %[[KVBEGIN]] to %[[KVEND]] step
// CHECK: fa.score_tile {{.*}} {causal = #fa.causal<top_left>, scale = 5.000000e-01 : f32, window = array<i64: 40, 3>}
func.func @window_causal(%q: tensor<1x1x?x4xf32>, %k: tensor<1x1x?x4xf32>, %v: tensor<1x1x?x4xf32>) -> tensor<1x1x?x4xf32> {
  %o = fa.attention %q, %k, %v {causal = #fa.causal<top_left>, window = array<i64: 40, 3>} : tensor<1x1x?x4xf32>, tensor<1x1x?x4xf32>, tensor<1x1x?x4xf32> -> tensor<1x1x?x4xf32>
  return %o : tensor<1x1x?x4xf32>
}

// -----

// bias, alibi_slopes, scale and softcap are forwarded to both fa.score_tile
// ops as is (the whole operands, read at absolute positions), score_mod and
// mask_mod are cloned into them. f16 V is extended in the P V product.

// CHECK-LABEL: func.func @variants
// CHECK-SAME: %[[BIAS:[^:]+]]: tensor<1x4x1x48xf16>, %[[SL:[^:]+]]: tensor<2x4xf32>)
// CHECK: scf.for
// CHECK: fa.score_tile %{{[a-z0-9_]+}}, %{{[a-z0-9_]+}} at[%{{[a-z0-9_]+}}, %{{[a-z0-9_]+}}, %{{[a-z0-9_]+}}, %{{[a-z0-9_]+}}] of[%{{[a-z0-9_]+}}, %{{[a-z0-9_]+}}] bias(%[[BIAS]] : tensor<1x4x1x48xf16>) alibi_slopes(%[[SL]] : tensor<2x4xf32>) {scale = 2.500000e-01 : f32, softcap = 3.000000e+01 : f32} : tensor<?x8xf16>, tensor<?x8xf16> -> tensor<?x?xf32> score_mod {
// CHECK-NEXT: ^bb0(%[[S:[a-z0-9_]+]]: f32, %{{[a-z0-9_]+}}: index, %[[H:[a-z0-9_]+]]: index, %{{[a-z0-9_]+}}: index, %{{[a-z0-9_]+}}: index):
// CHECK-NEXT:   %[[HI:[a-z0-9_]+]] = arith.index_cast %[[H]] : index to i64
// CHECK-NEXT:   %[[HF:[a-z0-9_]+]] = arith.sitofp %[[HI]] : i64 to f32
// CHECK-NEXT:   %[[R:[a-z0-9_]+]] = arith.addf %[[S]], %[[HF]] : f32
// CHECK-NEXT:   fa.yield %[[R]] : f32
// CHECK-NEXT: } mask_mod {
// CHECK-NEXT: ^bb0(%{{[a-z0-9_]+}}: index, %{{[a-z0-9_]+}}: index, %[[I:[a-z0-9_]+]]: index, %[[J:[a-z0-9_]+]]: index):
// CHECK-NEXT:   %[[NE:[a-z0-9_]+]] = arith.cmpi ne, %[[I]], %[[J]] : index
// CHECK-NEXT:   fa.yield %[[NE]] : i1
// CHECK-NEXT: }
// CHECK: } {fa.softmax_row_max = "exp"}
// CHECK: scf.for
// CHECK: fa.score_tile {{.*}} bias(%[[BIAS]] : tensor<1x4x1x48xf16>) alibi_slopes(%[[SL]] : tensor<2x4xf32>) {scale = 2.500000e-01 : f32, softcap = 3.000000e+01 : f32} : tensor<?x8xf16>, tensor<?x8xf16> -> tensor<?x?xf32> score_mod {
// CHECK-NEXT: ^bb0(%[[S2:[a-z0-9_]+]]: f32, %{{[a-z0-9_]+}}: index, %[[H2:[a-z0-9_]+]]: index, %{{[a-z0-9_]+}}: index, %{{[a-z0-9_]+}}: index):
// CHECK-NEXT:   %[[HI2:[a-z0-9_]+]] = arith.index_cast %[[H2]] : index to i64
// CHECK: } mask_mod {
// CHECK-NEXT: ^bb0(%{{[a-z0-9_]+}}: index, %{{[a-z0-9_]+}}: index, %[[I2:[a-z0-9_]+]]: index, %[[J2:[a-z0-9_]+]]: index):
// CHECK-NEXT:   %[[NE2:[a-z0-9_]+]] = arith.cmpi ne, %[[I2]], %[[J2]] : index
// CHECK: ^bb0(%{{[a-z0-9_]+}}: f32, %[[VE:[a-z0-9_]+]]: f16, %{{[a-z0-9_]+}}: f32):
// CHECK-NEXT:   arith.extf %[[VE]] : f16 to f32
// CHECK: } {fa.softmax_row_sum}
// CHECK: arith.truncf %{{[a-z0-9_]+}} : f32 to f16
func.func @variants(%q: tensor<2x4x64x8xf16>, %k: tensor<2x2x48x8xf16>, %v: tensor<2x2x48x8xf16>, %bias: tensor<1x4x1x48xf16>, %slopes: tensor<2x4xf32>) -> tensor<2x4x64x8xf16> {
  %o = fa.attention %q, %k, %v bias(%bias : tensor<1x4x1x48xf16>) alibi_slopes(%slopes : tensor<2x4xf32>) {scale = 0.25 : f32, softcap = 30.0 : f32} : tensor<2x4x64x8xf16>, tensor<2x2x48x8xf16>, tensor<2x2x48x8xf16> -> tensor<2x4x64x8xf16> score_mod {
  ^bb0(%s: f32, %b: index, %h: index, %i: index, %j: index):
    %hi = arith.index_cast %h : index to i64
    %hf = arith.sitofp %hi : i64 to f32
    %r = arith.addf %s, %hf : f32
    fa.yield %r : f32
  } mask_mod {
  ^bb0(%b: index, %h: index, %i: index, %j: index):
    %ne = arith.cmpi ne, %i, %j : index
    fa.yield %ne : i1
  }
  return %o : tensor<2x4x64x8xf16>
}

// -----

// A result type more static than Q: the forall result is cast to it.

// CHECK-LABEL: func.func @static_result
// CHECK: %[[R:[a-z0-9_]+]] = scf.forall {{.*}} -> (tensor<?x4x?x64xf16>) {
// CHECK: %[[C:[a-z0-9_]+]] = tensor.cast %[[R]] : tensor<?x4x?x64xf16> to tensor<2x4x100x64xf16>
// CHECK-NEXT: return %[[C]] : tensor<2x4x100x64xf16>
func.func @static_result(%q: tensor<?x4x?x64xf16>, %k: tensor<2x4x?x64xf16>, %v: tensor<?x4x512x64xf16>) -> tensor<2x4x100x64xf16> {
  %o = fa.attention %q, %k, %v : tensor<?x4x?x64xf16>, tensor<2x4x?x64xf16>, tensor<?x4x512x64xf16> -> tensor<2x4x100x64xf16>
  return %o : tensor<2x4x100x64xf16>
}

// -----

// fa.attention_grad is not tiled: it stays.

// CHECK-LABEL: func.func @grad_untouched
// CHECK-NEXT: fa.attention_grad
// CHECK-NOT: scf.forall
func.func @grad_untouched(%q: tensor<1x1x8x4xf32>, %o: tensor<1x1x8x4xf32>, %lse: tensor<1x1x8xf32>) -> (tensor<1x1x8x4xf32>, tensor<1x1x8x4xf32>, tensor<1x1x8x4xf32>) {
  %dq, %dk, %dv = fa.attention_grad %q, %q, %q, %o, %o, %lse : tensor<1x1x8x4xf32>, tensor<1x1x8x4xf32>, tensor<1x1x8x4xf32>, tensor<1x1x8x4xf32>, tensor<1x1x8x4xf32>, tensor<1x1x8xf32> -> tensor<1x1x8x4xf32>, tensor<1x1x8x4xf32>, tensor<1x1x8x4xf32>
  return %dq, %dk, %dv : tensor<1x1x8x4xf32>, tensor<1x1x8x4xf32>, tensor<1x1x8x4xf32>
}
