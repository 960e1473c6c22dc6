// RUN: fa-opt %s -fa-tile="block-q=32 block-kv=16" -fa-online-softmax -split-input-file | FileCheck %s --check-prefixes=CHECK,HAND
// RUN: fa-opt %s -fa-online-softmax -split-input-file | FileCheck %s --check-prefixes=NOTILE,HAND

// fa-online-softmax: fa-tile's row-max and row-sum loops become one loop
// carrying (m, l, acc). Per K/V tile, right after the scores:
//   m' = max(m, rowmax(s)), alpha = exp(m - m') (m' = 0 while -inf: alpha
//   = 0 rescales a row's zero sum and accumulator),
//   l *= alpha, acc *= alpha,
// then the row-sum loop's body as is, reading m' instead of the final max:
//   p = exp(s - m'), l' = l + rowsum(p), acc' = acc + p V.
// The first RUN line tiles fa.attention first; the second runs on the
// hand-written two-loop form only (fa.attention is left alone).

// CHECK-DAG: #[[TILE:[a-z0-9_]+]] = affine_map<(d0, d1) -> (d0, d1)>
// CHECK-DAG: #[[ROW:[a-z0-9_]+]] = affine_map<(d0, d1) -> (d0)>
// CHECK-DAG: #[[ID1:[a-z0-9_]+]] = affine_map<(d0) -> (d0)>
// CHECK-DAG: #[[PV_P:[a-z0-9_]+]] = affine_map<(d0, d1, d2) -> (d0, d1)>
// CHECK-DAG: #[[PV_V:[a-z0-9_]+]] = affine_map<(d0, d1, d2) -> (d1, d2)>
// CHECK-DAG: #[[PV_ACC:[a-z0-9_]+]] = affine_map<(d0, d1, d2) -> (d0, d2)>
// CHECK-LABEL: func.func @mha
// CHECK-SAME: (%[[Q:[^:]+]]: tensor<1x2x64x16xf16>, %[[K:[^:]+]]: tensor<1x2x48x16xf16>, %[[V:[^:]+]]: tensor<1x2x48x8xf16>)
// CHECK-NOT: fa.softmax_row
// CHECK: scf.forall (%[[B:[a-z0-9_]+]], %[[H:[a-z0-9_]+]], %{{[a-z0-9_]+}}) in
// CHECK: %[[ROWS:[a-z0-9_]+]] = arith.minsi
// CHECK: %[[HK:[a-z0-9_]+]] = arith.divui %[[H]]
// CHECK: %[[QT:[a-z0-9_]+]] = tensor.extract_slice %[[Q]]
// CHECK: %[[KV0:[a-z0-9_]+]] = arith.constant 0 : index
// CHECK: %[[STEP:[a-z0-9_]+]] = arith.constant 16 : index
// The three initial values: m = -inf, l = 0, acc = 0.
// CHECK-NEXT: %[[ME:[a-z0-9_]+]] = tensor.empty(%[[ROWS]]) : tensor<?xf32>
// CHECK-NEXT: %[[NINF:[a-z0-9_]+]] = arith.constant 0xFF800000 : f32
// CHECK-NEXT: %[[M0:[a-z0-9_]+]] = linalg.fill ins(%[[NINF]] : f32) outs(%[[ME]] : tensor<?xf32>) -> tensor<?xf32>
// CHECK-NEXT: %[[LE:[a-z0-9_]+]] = tensor.empty(%[[ROWS]]) : tensor<?xf32>
// CHECK-NEXT: %[[Z:[a-z0-9_]+]] = arith.constant 0.000000e+00 : f32
// CHECK-NEXT: %[[L0:[a-z0-9_]+]] = linalg.fill ins(%[[Z]] : f32) outs(%[[LE]] : tensor<?xf32>) -> tensor<?xf32>
// CHECK-NEXT: %[[AE:[a-z0-9_]+]] = tensor.empty(%[[ROWS]]) : tensor<?x8xf32>
// CHECK-NEXT: %[[Z2:[a-z0-9_]+]] = arith.constant 0.000000e+00 : f32
// CHECK-NEXT: %[[A0:[a-z0-9_]+]] = linalg.fill ins(%[[Z2]] : f32) outs(%[[AE]] : tensor<?x8xf32>) -> tensor<?x8xf32>
// One loop over the K/V tiles, carrying (m, l, acc).
// CHECK-NEXT: %[[F:[a-z0-9_]+]]:3 = scf.for %[[K0:[a-z0-9_]+]] = %[[KV0]] to %[[NK:[a-z0-9_]+]] step %[[STEP]] iter_args(%[[M:[a-z0-9_]+]] = %[[M0]], %[[L:[a-z0-9_]+]] = %[[L0]], %[[ACC:[a-z0-9_]+]] = %[[A0]]) -> (tensor<?xf32>, tensor<?xf32>, tensor<?x8xf32>) {
// CHECK-NEXT:   %[[KREM:[a-z0-9_]+]] = arith.subi %[[NK]], %[[K0]] : index
// CHECK-NEXT:   %[[BKV:[a-z0-9_]+]] = arith.constant 16 : index
// CHECK-NEXT:   %[[COLS:[a-z0-9_]+]] = arith.minsi %[[BKV]], %[[KREM]] : index
// CHECK-NEXT:   %[[KT:[a-z0-9_]+]] = tensor.extract_slice %[[K]][%[[B]], %[[HK]], %[[K0]], 0] [1, 1, %[[COLS]], 16] [1, 1, 1, 1] : tensor<1x2x48x16xf16> to tensor<?x16xf16>
// CHECK-NEXT:   %[[S:[a-z0-9_]+]] = fa.score_tile %[[QT]], %[[KT]] at[%[[B]], %[[H]], %{{[a-z0-9_]+}}, %[[K0]]] of[%{{[a-z0-9_]+}}, %[[NK]]] {scale = 2.500000e-01 : f32} : tensor<?x16xf16>, tensor<?x16xf16> -> tensor<?x?xf32>
// The tile's row max, from -inf, without NaN checks (maxnumf, nnan).
// CHECK-NEXT:   %[[C0:[a-z0-9_]+]] = arith.constant 0 : index
// CHECK-NEXT:   %[[R:[a-z0-9_]+]] = tensor.dim %[[M]], %[[C0]] : tensor<?xf32>
// CHECK-NEXT:   %[[TME:[a-z0-9_]+]] = tensor.empty(%[[R]]) : tensor<?xf32>
// CHECK-NEXT:   %[[NINF1:[a-z0-9_]+]] = arith.constant 0xFF800000 : f32
// CHECK-NEXT:   %[[TM0:[a-z0-9_]+]] = linalg.fill ins(%[[NINF1]] : f32) outs(%[[TME]] : tensor<?xf32>) -> tensor<?xf32>
// CHECK-NEXT:   %[[TM:[a-z0-9_]+]] = linalg.generic {indexing_maps = [#[[TILE]], #[[ROW]]], iterator_types = ["parallel", "reduction"]} ins(%[[S]] : tensor<?x?xf32>) outs(%[[TM0]] : tensor<?xf32>) {
// CHECK-NEXT:   ^bb0(%[[X:[a-z0-9_]+]]: f32, %[[Y:[a-z0-9_]+]]: f32):
// CHECK-NEXT:     %[[MX:[a-z0-9_]+]] = arith.maxnumf %[[X]], %[[Y]] fastmath<nnan> : f32
// CHECK-NEXT:     linalg.yield %[[MX]] : f32
// CHECK-NEXT:   } -> tensor<?xf32>
// m' = max(m, tile max) (in place of m) and alpha = exp(m - m'), with m' = 0
// while it is -inf.
// CHECK-NEXT:   %[[AL0:[a-z0-9_]+]] = tensor.empty(%[[R]]) : tensor<?xf32>
// CHECK-NEXT:   %[[U:[a-z0-9_]+]]:2 = linalg.generic {indexing_maps = [#[[ID1]], #[[ID1]], #[[ID1]]], iterator_types = ["parallel"]} ins(%[[TM]] : tensor<?xf32>) outs(%[[M]], %[[AL0]] : tensor<?xf32>, tensor<?xf32>) {
// CHECK-NEXT:   ^bb0(%[[TMV:[a-z0-9_]+]]: f32, %[[MV:[a-z0-9_]+]]: f32, %{{[a-z0-9_]+}}: f32):
// CHECK-NEXT:     %[[NM:[a-z0-9_]+]] = arith.maximumf %[[MV]], %[[TMV]] : f32
// CHECK-NEXT:     %[[NINF2:[a-z0-9_]+]] = arith.constant 0xFF800000 : f32
// CHECK-NEXT:     %[[NONE:[a-z0-9_]+]] = arith.cmpf oeq, %[[NM]], %[[NINF2]] : f32
// CHECK-NEXT:     %[[ZM:[a-z0-9_]+]] = arith.constant 0.000000e+00 : f32
// CHECK-NEXT:     %[[MSAFE:[a-z0-9_]+]] = arith.select %[[NONE]], %[[ZM]], %[[NM]] : f32
// CHECK-NEXT:     %[[D:[a-z0-9_]+]] = arith.subf %[[MV]], %[[MSAFE]] : f32
// CHECK-NEXT:     %[[ALPHA:[a-z0-9_]+]] = math.exp %[[D]] : f32
// CHECK-NEXT:     linalg.yield %[[NM]], %[[ALPHA]] : f32, f32
// CHECK-NEXT:   } -> (tensor<?xf32>, tensor<?xf32>)
// l * alpha.
// CHECK-NEXT:   %[[LS:[a-z0-9_]+]] = linalg.generic {indexing_maps = [#[[ID1]], #[[ID1]]], iterator_types = ["parallel"]} ins(%[[U]]#1 : tensor<?xf32>) outs(%[[L]] : tensor<?xf32>) {
// CHECK-NEXT:   ^bb0(%[[A1:[a-z0-9_]+]]: f32, %[[L1:[a-z0-9_]+]]: f32):
// CHECK-NEXT:     %[[LSV:[a-z0-9_]+]] = arith.mulf %[[L1]], %[[A1]] : f32
// CHECK-NEXT:     linalg.yield %[[LSV]] : f32
// CHECK-NEXT:   } -> tensor<?xf32>
// acc * alpha, alpha broadcast over the columns.
// CHECK-NEXT:   %[[AS:[a-z0-9_]+]] = linalg.generic {indexing_maps = [#[[ROW]], #[[TILE]]], iterator_types = ["parallel", "parallel"]} ins(%[[U]]#1 : tensor<?xf32>) outs(%[[ACC]] : tensor<?x8xf32>) {
// CHECK-NEXT:   ^bb0(%[[A2:[a-z0-9_]+]]: f32, %[[ACC1:[a-z0-9_]+]]: f32):
// CHECK-NEXT:     %[[ASV:[a-z0-9_]+]] = arith.mulf %[[ACC1]], %[[A2]] : f32
// CHECK-NEXT:     linalg.yield %[[ASV]] : f32
// CHECK-NEXT:   } -> tensor<?x8xf32>
// p = exp(s - m'), with fa-tile's -inf guard.
// CHECK-NEXT:   %[[P:[a-z0-9_]+]] = linalg.generic {indexing_maps = [#[[ROW]], #[[TILE]]], iterator_types = ["parallel", "parallel"]} ins(%[[U]]#0 : tensor<?xf32>) outs(%[[S]] : tensor<?x?xf32>) {
// CHECK-NEXT:   ^bb0(%[[PM:[a-z0-9_]+]]: f32, %[[PS:[a-z0-9_]+]]: f32):
// CHECK-NEXT:     %[[NINF3:[a-z0-9_]+]] = arith.constant 0xFF800000 : f32
// CHECK-NEXT:     %[[ISM:[a-z0-9_]+]] = arith.cmpf oeq, %[[PM]], %[[NINF3]] : f32
// CHECK-NEXT:     %[[Z3:[a-z0-9_]+]] = arith.constant 0.000000e+00 : f32
// CHECK-NEXT:     %[[MS:[a-z0-9_]+]] = arith.select %[[ISM]], %[[Z3]], %[[PM]] : f32
// CHECK-NEXT:     %[[PD:[a-z0-9_]+]] = arith.subf %[[PS]], %[[MS]] : f32
// CHECK-NEXT:     %[[PE:[a-z0-9_]+]] = math.exp %[[PD]] : f32
// CHECK-NEXT:     linalg.yield %[[PE]] : f32
// CHECK-NEXT:   } -> tensor<?x?xf32>
// l' = l * alpha + row sum of p.
// CHECK-NEXT:   %[[NL:[a-z0-9_]+]] = linalg.generic {indexing_maps = [#[[TILE]], #[[ROW]]], iterator_types = ["parallel", "reduction"]} ins(%[[P]] : tensor<?x?xf32>) outs(%[[LS]] : tensor<?xf32>) {
// CHECK-NEXT:   ^bb0(%[[SP:[a-z0-9_]+]]: f32, %[[SL:[a-z0-9_]+]]: f32):
// CHECK-NEXT:     %[[SUM:[a-z0-9_]+]] = arith.addf %[[SP]], %[[SL]] fastmath<reassoc> : f32
// CHECK-NEXT:     linalg.yield %[[SUM]] : f32
// CHECK-NEXT:   } -> tensor<?xf32>
// acc' = acc * alpha + p V.
// CHECK-NEXT:   %[[VT:[a-z0-9_]+]] = tensor.extract_slice %[[V]][%[[B]], %[[HK]], %[[K0]], 0] [1, 1, %[[COLS]], 8] [1, 1, 1, 1] : tensor<1x2x48x8xf16> to tensor<?x8xf16>
// CHECK-NEXT:   %[[NACC:[a-z0-9_]+]] = linalg.generic {indexing_maps = [#[[PV_P]], #[[PV_V]], #[[PV_ACC]]], iterator_types = ["parallel", "reduction", "parallel"]} ins(%[[P]], %[[VT]] : tensor<?x?xf32>, tensor<?x8xf16>) outs(%[[AS]] : tensor<?x8xf32>) {
// CHECK-NEXT:   ^bb0(%[[PP:[a-z0-9_]+]]: f32, %[[VV:[a-z0-9_]+]]: f16, %[[AA:[a-z0-9_]+]]: f32):
// CHECK-NEXT:     %[[VF:[a-z0-9_]+]] = arith.extf %[[VV]] : f16 to f32
// CHECK-NEXT:     %[[PR:[a-z0-9_]+]] = arith.mulf %[[PP]], %[[VF]] : f32
// CHECK-NEXT:     %[[AR:[a-z0-9_]+]] = arith.addf %[[AA]], %[[PR]] : f32
// CHECK-NEXT:     linalg.yield %[[AR]] : f32
// CHECK-NEXT:   } -> tensor<?x8xf32>
// Yield order (m', l', acc'); no marker attribute on the fused loop.
// CHECK-NEXT:   scf.yield %[[U]]#0, %[[NL]], %[[NACC]] : tensor<?xf32>, tensor<?xf32>, tensor<?x8xf32>
// CHECK-NEXT: {{^ *}}}{{$}}
// O = acc / l, lse = m + log l from the fused loop's results.
// CHECK-NEXT: %[[OE:[a-z0-9_]+]] = tensor.empty(%[[ROWS]]) : tensor<?x8xf16>
// CHECK-NEXT: %[[OT:[a-z0-9_]+]] = linalg.generic {indexing_maps = [#[[TILE]], #[[ROW]], #[[TILE]]], iterator_types = ["parallel", "parallel"]} ins(%[[F]]#2, %[[F]]#1 : tensor<?x8xf32>, tensor<?xf32>) outs(%[[OE]] : tensor<?x8xf16>) {
// CHECK: arith.truncf %{{[a-z0-9_]+}} : f32 to f16
// CHECK: %[[LSE:[a-z0-9_]+]] = linalg.generic {indexing_maps = [#[[ID1]], #[[ID1]], #[[ID1]]], iterator_types = ["parallel"]} ins(%[[F]]#0, %[[F]]#1 : tensor<?xf32>, tensor<?xf32>)
// CHECK-NEXT: ^bb0(%[[LM:[a-z0-9_]+]]: f32, %[[LL:[a-z0-9_]+]]: f32, %{{[a-z0-9_]+}}: f32):
// CHECK-NEXT:   %[[LOG:[a-z0-9_]+]] = math.log %[[LL]] : f32
// CHECK-NEXT:   %[[LSEV:[a-z0-9_]+]] = arith.addf %[[LM]], %[[LOG]] : f32
// CHECK-NEXT:   linalg.yield %[[LSEV]] : f32
// CHECK: scf.forall.in_parallel {
// CHECK-NEXT: tensor.parallel_insert_slice %[[OT]]
// CHECK-NEXT: tensor.parallel_insert_slice %[[LSE]]
// CHECK-NOT: scf.for %
// CHECK-NOT: fa.score_tile
// CHECK-NOT: fa.softmax_row

// Without fa-tile, there is nothing to fuse.
// NOTILE-LABEL: func.func @mha
// NOTILE-NEXT: fa.attention
// NOTILE-NOT: scf.for %
func.func @mha(%q: tensor<1x2x64x16xf16>, %k: tensor<1x2x48x16xf16>, %v: tensor<1x2x48x8xf16>) -> (tensor<1x2x64x8xf16>, tensor<1x2x64xf32>) {
  %o, %lse = fa.attention %q, %k, %v : tensor<1x2x64x16xf16>, tensor<1x2x48x16xf16>, tensor<1x2x48x8xf16> -> tensor<1x2x64x8xf16>, tensor<1x2x64xf32>
  return %o, %lse : tensor<1x2x64x8xf16>, tensor<1x2x64xf32>
}

// -----

// Two fa.attention ops, each with its own pair of loops: each pair becomes
// one loop, over the same (mask-narrowed) bounds as the pair, with exactly
// one fa.score_tile.

// CHECK-LABEL: func.func @two_ops
// CHECK-NOT: fa.softmax_row
// CHECK: %[[QEND:[a-z0-9_]+]] = arith.addi
// CHECK-NEXT: %[[DIAG:[a-z0-9_]+]] = arith.subi
// CHECK-NEXT: %[[C0:[a-z0-9_]+]] = arith.constant 0 : index
// CHECK-NEXT: %[[LAST:[a-z0-9_]+]] = arith.addi %[[QEND]], %[[DIAG]] : index
// CHECK-NEXT: %[[MIN1:[a-z0-9_]+]] = arith.minsi %{{[a-z0-9_]+}}, %[[LAST]] : index
// CHECK-NEXT: %[[END1:[a-z0-9_]+]] = arith.maxsi %[[C0]], %[[MIN1]] : index
// CHECK: scf.for %{{[a-z0-9_]+}} = %{{[a-z0-9_]+}} to %[[END1]] step %{{[a-z0-9_]+}} iter_args(%{{[a-z0-9_]+}} = %{{[a-z0-9_]+}}, %{{[a-z0-9_]+}} = %{{[a-z0-9_]+}}, %{{[a-z0-9_]+}} = %{{[a-z0-9_]+}}) -> (tensor<?xf32>, tensor<?xf32>, tensor<?x8xf32>) {
// CHECK: fa.score_tile {{.*}} {causal = #fa.causal<bottom_right>, scale = 0.353553385 : f32}
// CHECK-NOT: fa.score_tile
// CHECK: scf.yield
// CHECK-NEXT: {{^ *}}}{{$}}
// CHECK-NOT: scf.for %
// CHECK: scf.forall.in_parallel
// CHECK: arith.maxsi
// CHECK: arith.divui
// CHECK-NEXT: %[[BEGIN2:[a-z0-9_]+]] = arith.muli
// CHECK: scf.for %{{[a-z0-9_]+}} = %[[BEGIN2]] to %{{[a-z0-9_]+}} step %{{[a-z0-9_]+}} iter_args(%{{[a-z0-9_]+}} = %{{[a-z0-9_]+}}, %{{[a-z0-9_]+}} = %{{[a-z0-9_]+}}, %{{[a-z0-9_]+}} = %{{[a-z0-9_]+}}) -> (tensor<?xf32>, tensor<?xf32>, tensor<?x8xf32>) {
// CHECK: fa.score_tile {{.*}} {scale = 0.353553385 : f32, window = array<i64: 8, 0>}
// CHECK-NOT: fa.score_tile
// CHECK: scf.yield
// CHECK-NEXT: {{^ *}}}{{$}}
// CHECK-NOT: scf.for %
// CHECK-NOT: fa.softmax_row
// CHECK: return
func.func @two_ops(%q: tensor<?x4x?x8xf32>, %k: tensor<?x2x?x8xf32>, %v: tensor<?x2x?x8xf32>) -> (tensor<?x4x?x8xf32>, tensor<?x4x?x8xf32>) {
  %o1 = fa.attention %q, %k, %v {causal = #fa.causal<bottom_right>} : tensor<?x4x?x8xf32>, tensor<?x2x?x8xf32>, tensor<?x2x?x8xf32> -> tensor<?x4x?x8xf32>
  %o2 = fa.attention %q, %k, %v {window = array<i64: 8, 0>} : tensor<?x4x?x8xf32>, tensor<?x2x?x8xf32>, tensor<?x2x?x8xf32> -> tensor<?x4x?x8xf32>
  return %o1, %o2 : tensor<?x4x?x8xf32>, tensor<?x4x?x8xf32>
}

// -----

// The two-loop form written by hand, static shapes, f32. The bounds of the
// two loops are equal constants defined by different ops. The uses of the
// final max, sum and accumulator after the loops read the fused results.

// HAND-LABEL: func.func @hand
// HAND-SAME: (%[[QT:[^:]+]]: tensor<8x4xf32>, %[[K:[^:]+]]: tensor<32x4xf32>, %[[V:[^:]+]]: tensor<32x2xf32>, %[[B:[^:]+]]: index, %[[H:[^:]+]]: index, %[[Q0:[^:]+]]: index, %[[NQ:[^:]+]]: index, %[[NK:[^:]+]]: index)
// HAND: %[[M0:[a-z0-9_]+]] = linalg.fill ins(%{{[a-z0-9_]+}} : f32) outs(%{{[a-z0-9_]+}} : tensor<8xf32>) -> tensor<8xf32>
// HAND-NEXT: %[[L0:[a-z0-9_]+]] = linalg.fill ins(%{{[a-z0-9_]+}} : f32) outs(%{{[a-z0-9_]+}} : tensor<8xf32>) -> tensor<8xf32>
// HAND-NEXT: tensor.empty() : tensor<8x2xf32>
// HAND-NEXT: %[[A0:[a-z0-9_]+]] = linalg.fill ins(%{{[a-z0-9_]+}} : f32) outs(%{{[a-z0-9_]+}} : tensor<8x2xf32>) -> tensor<8x2xf32>
// The fused loop takes the row-sum loop's bounds and the inits (m0, l0, acc0).
// HAND-NEXT: %[[C0:[a-z0-9_]+]] = arith.constant 0 : index
// HAND-NEXT: %[[C8:[a-z0-9_]+]] = arith.constant 8 : index
// HAND-NEXT: %[[C32:[a-z0-9_]+]] = arith.constant 32 : index
// HAND-NEXT: %[[F:[a-z0-9_]+]]:3 = scf.for %[[K0:[a-z0-9_]+]] = %[[C0]] to %[[C32]] step %[[C8]] iter_args(%[[M:[a-z0-9_]+]] = %[[M0]], %[[L:[a-z0-9_]+]] = %[[L0]], %[[ACC:[a-z0-9_]+]] = %[[A0]]) -> (tensor<8xf32>, tensor<8xf32>, tensor<8x2xf32>) {
// HAND-NEXT:   %[[KT:[a-z0-9_]+]] = tensor.extract_slice %[[K]][%[[K0]], 0] [8, 4] [1, 1] : tensor<32x4xf32> to tensor<8x4xf32>
// HAND-NEXT:   %[[S:[a-z0-9_]+]] = fa.score_tile %[[QT]], %[[KT]] at[%[[B]], %[[H]], %[[Q0]], %[[K0]]] of[%[[NQ]], %[[NK]]] {scale = 5.000000e-01 : f32} : tensor<8x4xf32>, tensor<8x4xf32> -> tensor<8x8xf32>
// HAND-NEXT:   %[[TME:[a-z0-9_]+]] = tensor.empty() : tensor<8xf32>
// HAND-NEXT:   %[[NINF:[a-z0-9_]+]] = arith.constant 0xFF800000 : f32
// HAND-NEXT:   %[[TM0:[a-z0-9_]+]] = linalg.fill ins(%[[NINF]] : f32) outs(%[[TME]] : tensor<8xf32>) -> tensor<8xf32>
// HAND-NEXT:   %[[TM:[a-z0-9_]+]] = linalg.generic {indexing_maps = {{.*}}iterator_types = ["parallel", "reduction"]} ins(%[[S]] : tensor<8x8xf32>) outs(%[[TM0]] : tensor<8xf32>) {
// HAND-NEXT:   ^bb0(%[[X:[a-z0-9_]+]]: f32, %[[Y:[a-z0-9_]+]]: f32):
// HAND-NEXT:     %[[MX:[a-z0-9_]+]] = arith.maxnumf %[[X]], %[[Y]] fastmath<nnan> : f32
// HAND-NEXT:     linalg.yield %[[MX]] : f32
// HAND-NEXT:   } -> tensor<8xf32>
// HAND-NEXT:   %[[AL0:[a-z0-9_]+]] = tensor.empty() : tensor<8xf32>
// HAND-NEXT:   %[[U:[a-z0-9_]+]]:2 = linalg.generic {indexing_maps = {{.*}}iterator_types = ["parallel"]} ins(%[[TM]] : tensor<8xf32>) outs(%[[M]], %[[AL0]] : tensor<8xf32>, tensor<8xf32>) {
// HAND-NEXT:   ^bb0(%[[TMV:[a-z0-9_]+]]: f32, %[[MV:[a-z0-9_]+]]: f32, %{{[a-z0-9_]+}}: f32):
// HAND-NEXT:     %[[NM:[a-z0-9_]+]] = arith.maximumf %[[MV]], %[[TMV]] : f32
// HAND-NEXT:     %[[NINF2:[a-z0-9_]+]] = arith.constant 0xFF800000 : f32
// HAND-NEXT:     %[[NONE:[a-z0-9_]+]] = arith.cmpf oeq, %[[NM]], %[[NINF2]] : f32
// HAND-NEXT:     %[[ZM:[a-z0-9_]+]] = arith.constant 0.000000e+00 : f32
// HAND-NEXT:     %[[MSAFE:[a-z0-9_]+]] = arith.select %[[NONE]], %[[ZM]], %[[NM]] : f32
// HAND-NEXT:     %[[D:[a-z0-9_]+]] = arith.subf %[[MV]], %[[MSAFE]] : f32
// HAND-NEXT:     %[[ALPHA:[a-z0-9_]+]] = math.exp %[[D]] : f32
// HAND-NEXT:     linalg.yield %[[NM]], %[[ALPHA]] : f32, f32
// HAND-NEXT:   } -> (tensor<8xf32>, tensor<8xf32>)
// HAND-NEXT:   %[[LS:[a-z0-9_]+]] = linalg.generic {{.*}} ins(%[[U]]#1 : tensor<8xf32>) outs(%[[L]] : tensor<8xf32>) {
// HAND-NEXT:   ^bb0(%[[A1:[a-z0-9_]+]]: f32, %[[L1:[a-z0-9_]+]]: f32):
// HAND-NEXT:     %[[LSV:[a-z0-9_]+]] = arith.mulf %[[L1]], %[[A1]] : f32
// HAND-NEXT:     linalg.yield %[[LSV]] : f32
// HAND-NEXT:   } -> tensor<8xf32>
// HAND-NEXT:   %[[AS:[a-z0-9_]+]] = linalg.generic {{.*}} ins(%[[U]]#1 : tensor<8xf32>) outs(%[[ACC]] : tensor<8x2xf32>) {
// HAND-NEXT:   ^bb0(%[[A2:[a-z0-9_]+]]: f32, %[[ACC1:[a-z0-9_]+]]: f32):
// HAND-NEXT:     %[[ASV:[a-z0-9_]+]] = arith.mulf %[[ACC1]], %[[A2]] : f32
// HAND-NEXT:     linalg.yield %[[ASV]] : f32
// HAND-NEXT:   } -> tensor<8x2xf32>
// The row-sum body as written, with m' for the final max and the rescaled
// l and acc for its iter_args.
// HAND-NEXT:   %[[P:[a-z0-9_]+]] = linalg.generic {{.*}} ins(%[[U]]#0 : tensor<8xf32>) outs(%[[S]] : tensor<8x8xf32>) {
// HAND-NEXT:   ^bb0(%[[PM:[a-z0-9_]+]]: f32, %[[PS:[a-z0-9_]+]]: f32):
// HAND-NEXT:     %[[PD:[a-z0-9_]+]] = arith.subf %[[PS]], %[[PM]] : f32
// HAND-NEXT:     %[[PE:[a-z0-9_]+]] = math.exp %[[PD]] : f32
// HAND-NEXT:     linalg.yield %[[PE]] : f32
// HAND-NEXT:   } -> tensor<8x8xf32>
// HAND-NEXT:   %[[NL:[a-z0-9_]+]] = linalg.generic {{.*}} ins(%[[P]] : tensor<8x8xf32>) outs(%[[LS]] : tensor<8xf32>) {
// HAND:        } -> tensor<8xf32>
// HAND-NEXT:   %[[VT:[a-z0-9_]+]] = tensor.extract_slice %[[V]][%[[K0]], 0] [8, 2] [1, 1] : tensor<32x2xf32> to tensor<8x2xf32>
// HAND-NEXT:   %[[NACC:[a-z0-9_]+]] = linalg.generic {{.*}} ins(%[[P]], %[[VT]] : tensor<8x8xf32>, tensor<8x2xf32>) outs(%[[AS]] : tensor<8x2xf32>) {
// HAND:        } -> tensor<8x2xf32>
// HAND-NEXT:   scf.yield %[[U]]#0, %[[NL]], %[[NACC]] : tensor<8xf32>, tensor<8xf32>, tensor<8x2xf32>
// HAND-NEXT: {{^ *}}}{{$}}
// HAND-NEXT: return %[[F]]#0, %[[F]]#1, %[[F]]#2 : tensor<8xf32>, tensor<8xf32>, tensor<8x2xf32>
// HAND-NOT: scf.for %
// HAND-NOT: fa.score_tile
// HAND-NOT: fa.softmax_row
#tile = affine_map<(d0, d1) -> (d0, d1)>
#row = affine_map<(d0, d1) -> (d0)>
#pv_p = affine_map<(d0, d1, d2) -> (d0, d1)>
#pv_v = affine_map<(d0, d1, d2) -> (d1, d2)>
#pv_acc = affine_map<(d0, d1, d2) -> (d0, d2)>
func.func @hand(%qt: tensor<8x4xf32>, %k: tensor<32x4xf32>, %v: tensor<32x2xf32>, %b: index, %h: index, %q0: index, %nq: index, %nk: index) -> (tensor<8xf32>, tensor<8xf32>, tensor<8x2xf32>) {
  %c0 = arith.constant 0 : index
  %c8 = arith.constant 8 : index
  %c32 = arith.constant 32 : index
  %ninf = arith.constant 0xFF800000 : f32
  %zero = arith.constant 0.0 : f32
  %e = tensor.empty() : tensor<8xf32>
  %m0 = linalg.fill ins(%ninf : f32) outs(%e : tensor<8xf32>) -> tensor<8xf32>
  %m = scf.for %k0 = %c0 to %c32 step %c8 iter_args(%mi = %m0) -> (tensor<8xf32>) {
    %kt = tensor.extract_slice %k[%k0, 0] [8, 4] [1, 1] : tensor<32x4xf32> to tensor<8x4xf32>
    %s = fa.score_tile %qt, %kt at [%b, %h, %q0, %k0] of [%nq, %nk] {scale = 0.5 : f32} : tensor<8x4xf32>, tensor<8x4xf32> -> tensor<8x8xf32>
    %mt = linalg.generic {indexing_maps = [#tile, #row], iterator_types = ["parallel", "reduction"]} ins(%s : tensor<8x8xf32>) outs(%mi : tensor<8xf32>) {
    ^bb0(%x: f32, %y: f32):
      %r = arith.maximumf %x, %y : f32
      linalg.yield %r : f32
    } -> tensor<8xf32>
    scf.yield %mt : tensor<8xf32>
  } {fa.softmax_row_max = "exp"}
  %l0 = linalg.fill ins(%zero : f32) outs(%e : tensor<8xf32>) -> tensor<8xf32>
  %ea = tensor.empty() : tensor<8x2xf32>
  %a0 = linalg.fill ins(%zero : f32) outs(%ea : tensor<8x2xf32>) -> tensor<8x2xf32>
  %c0b = arith.constant 0 : index
  %c8b = arith.constant 8 : index
  %c32b = arith.constant 32 : index
  %la:2 = scf.for %k0 = %c0b to %c32b step %c8b iter_args(%li = %l0, %ai = %a0) -> (tensor<8xf32>, tensor<8x2xf32>) {
    %kt = tensor.extract_slice %k[%k0, 0] [8, 4] [1, 1] : tensor<32x4xf32> to tensor<8x4xf32>
    %s = fa.score_tile %qt, %kt at [%b, %h, %q0, %k0] of [%nq, %nk] {scale = 0.5 : f32} : tensor<8x4xf32>, tensor<8x4xf32> -> tensor<8x8xf32>
    %p = linalg.generic {indexing_maps = [#row, #tile], iterator_types = ["parallel", "parallel"]} ins(%m : tensor<8xf32>) outs(%s : tensor<8x8xf32>) {
    ^bb0(%mv: f32, %sv: f32):
      %d = arith.subf %sv, %mv : f32
      %ex = math.exp %d : f32
      linalg.yield %ex : f32
    } -> tensor<8x8xf32>
    %l = linalg.generic {indexing_maps = [#tile, #row], iterator_types = ["parallel", "reduction"]} ins(%p : tensor<8x8xf32>) outs(%li : tensor<8xf32>) {
    ^bb0(%x: f32, %y: f32):
      %r = arith.addf %x, %y : f32
      linalg.yield %r : f32
    } -> tensor<8xf32>
    %vt = tensor.extract_slice %v[%k0, 0] [8, 2] [1, 1] : tensor<32x2xf32> to tensor<8x2xf32>
    %acc = linalg.generic {indexing_maps = [#pv_p, #pv_v, #pv_acc], iterator_types = ["parallel", "reduction", "parallel"]} ins(%p, %vt : tensor<8x8xf32>, tensor<8x2xf32>) outs(%ai : tensor<8x2xf32>) {
    ^bb0(%x: f32, %y: f32, %z: f32):
      %pr = arith.mulf %x, %y : f32
      %r = arith.addf %z, %pr : f32
      linalg.yield %r : f32
    } -> tensor<8x2xf32>
    scf.yield %l, %acc : tensor<8xf32>, tensor<8x2xf32>
  } {fa.softmax_row_sum}
  return %m, %la#0, %la#1 : tensor<8xf32>, tensor<8xf32>, tensor<8x2xf32>
}
