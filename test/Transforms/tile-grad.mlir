// RUN: fa-opt %s -fa-tile-grad="block-q=32 block-kv=16" | FileCheck %s

// Step 1: Dsum = rowsum(dO * O) in f32, over the whole [B, Hq, Nq].
// The row-reducing map of the dBias test below.
// CHECK-DAG: #[[ROW0:map[0-9]*]] = affine_map<(d0, d1) -> (0, d1)>

// CHECK-LABEL: func.func @causal_gqa(
// CHECK-SAME: %[[Q:[a-z0-9_]+]]: tensor<2x4x?x16xbf16>, %[[K:[a-z0-9_]+]]: tensor<2x2x?x16xbf16>, %[[V:[a-z0-9_]+]]: tensor<2x2x?x16xbf16>, %[[O:[a-z0-9_]+]]: tensor<2x4x?x16xbf16>, %[[DO:[a-z0-9_]+]]: tensor<2x4x?x16xbf16>, %[[LSE:[a-z0-9_]+]]: tensor<2x4x?xf32>)
// CHECK: %[[DSUM:[a-z0-9_]+]] = linalg.generic {{{.*}}iterator_types = ["parallel", "parallel", "parallel", "reduction"]} ins(%[[DO]], %[[O]] : tensor<2x4x?x16xbf16>, tensor<2x4x?x16xbf16>) outs(%{{.*}} : tensor<2x4x?xf32>)
// CHECK: arith.mulf
// CHECK-NEXT: arith.addf
// Step 2: dK, dV per (batch, kv head, K/V tile of 16 rows).
// CHECK: %[[NKT:[a-z0-9_]+]] = arith.ceildivui %{{.*}}, %{{.*}} : index
// CHECK: %[[KV:[a-z0-9_]+]]:2 = scf.forall (%[[B:[a-z0-9_]+]], %[[HK:[a-z0-9_]+]], %[[T:[a-z0-9_]+]]) in (%{{.*}}, %{{.*}}, %[[NKT]]) shared_outs(%[[DKS:[a-z0-9_]+]] = %{{.*}}, %[[DVS:[a-z0-9_]+]] = %{{.*}}) -> (tensor<2x2x?x16xbf16>, tensor<2x2x?x16xbf16>) {
// CHECK: %[[K0:[a-z0-9_]+]] = arith.muli %[[T]], %{{.*}} : index
// CHECK: %[[COLS:[a-z0-9_]+]] = arith.minsi
// CHECK-NEXT: %[[KT:[a-z0-9_]+]] = tensor.extract_slice %[[K]][%[[B]], %[[HK]], %[[K0]], 0] [1, 1, %[[COLS]], 16]
// CHECK-NEXT: %[[VT:[a-z0-9_]+]] = tensor.extract_slice %[[V]][%[[B]], %[[HK]], %[[K0]], 0] [1, 1, %[[COLS]], 16]
// Causal top-left: queries from k0 on see this tile.
// CHECK-NEXT: arith.addi %[[K0]], %[[COLS]] : index
// CHECK-NEXT: %[[Z:[a-z0-9_]+]] = arith.constant 0 : index
// CHECK-NEXT: %[[QBEGIN:[a-z0-9_]+]] = arith.maxsi %[[Z]], %[[K0]] : index
// Over the two query heads of the group, then their Q tiles.
// CHECK: scf.for %[[GI:[a-z0-9_]+]] = %{{.*}} to %[[G:[a-z0-9_]+]] step %{{.*}} iter_args
// CHECK-NEXT: %[[HBASE:[a-z0-9_]+]] = arith.muli %[[HK]], %[[G]] : index
// CHECK-NEXT: %[[H:[a-z0-9_]+]] = arith.addi %[[HBASE]], %[[GI]] : index
// CHECK-NEXT: %[[BQ:[a-z0-9_]+]] = arith.constant 32 : index
// CHECK-NEXT: scf.for %[[Q0:[a-z0-9_]+]] = %[[QBEGIN]] to %{{.*}} step %[[BQ]] iter_args(%[[DKA:[a-z0-9_]+]] = %{{.*}}, %[[DVA:[a-z0-9_]+]] = %{{.*}})
// CHECK: %[[QT:[a-z0-9_]+]] = tensor.extract_slice %[[Q]][%[[B]], %[[H]], %[[Q0]], 0]
// CHECK-NEXT: %[[DOT:[a-z0-9_]+]] = tensor.extract_slice %[[DO]][%[[B]], %[[H]], %[[Q0]], 0]
// CHECK-NEXT: %[[LT:[a-z0-9_]+]] = tensor.extract_slice %[[LSE]][%[[B]], %[[H]], %[[Q0]]]
// CHECK-NEXT: %[[DT:[a-z0-9_]+]] = tensor.extract_slice %[[DSUM]][%[[B]], %[[H]], %[[Q0]]]
// CHECK-NEXT: %[[S:[a-z0-9_]+]], %[[DS:[a-z0-9_]+]] = fa.score_tile %[[QT]], %[[KT]] at[%[[B]], %[[H]], %[[Q0]], %[[K0]]] of[%{{.*}}, %{{.*}}] {causal = #fa.causal<top_left>, scale = 5.000000e-01 : f32} : tensor<?x16xbf16>, tensor<?x16xbf16> -> tensor<?x?xf32>, tensor<?x?xf32>
// P = exp(s - lse), 0 where lse = -inf.
// CHECK-NEXT: %[[P:[a-z0-9_]+]] = linalg.generic {{.*}} ins(%[[LT]] : tensor<?xf32>) outs(%[[S]] : tensor<?x?xf32>)
// CHECK-NEXT: ^bb0(%[[L:[a-z0-9_]+]]: f32, %[[SV:[a-z0-9_]+]]: f32):
// CHECK-NEXT: %[[NINF:[a-z0-9_]+]] = arith.constant 0xFF800000 : f32
// CHECK-NEXT: %[[EMPTY:[a-z0-9_]+]] = arith.cmpf oeq, %[[L]], %[[NINF]] : f32
// CHECK-NEXT: %[[DIFF:[a-z0-9_]+]] = arith.subf %[[SV]], %[[L]] : f32
// CHECK-NEXT: %[[E:[a-z0-9_]+]] = math.exp %[[DIFF]] : f32
// CHECK-NEXT: %[[ZF:[a-z0-9_]+]] = arith.constant 0.000000e+00 : f32
// CHECK-NEXT: %[[PV:[a-z0-9_]+]] = arith.select %[[EMPTY]], %[[ZF]], %[[E]] : f32
// CHECK-NEXT: linalg.yield %[[PV]] : f32
// dP = dO V^T.
// CHECK: %[[DP:[a-z0-9_]+]] = linalg.generic {{{.*}}iterator_types = ["parallel", "parallel", "reduction"]} ins(%[[DOT]], %[[VT]] : tensor<?x16xbf16>, tensor<?x16xbf16>)
// dS * d s / d dot = P * (dP - Dsum) * ds.
// CHECK: %[[DDOT:[a-z0-9_]+]] = linalg.generic {{.*}} ins(%[[P]], %[[DT]], %[[DS]] : tensor<?x?xf32>, tensor<?xf32>, tensor<?x?xf32>) outs(%[[DP]] : tensor<?x?xf32>)
// CHECK-NEXT: ^bb0(%[[PA:[a-z0-9_]+]]: f32, %[[DA:[a-z0-9_]+]]: f32, %[[DSA:[a-z0-9_]+]]: f32, %[[DPA:[a-z0-9_]+]]: f32):
// CHECK-NEXT: %[[C:[a-z0-9_]+]] = arith.subf %[[DPA]], %[[DA]] : f32
// CHECK-NEXT: %[[M:[a-z0-9_]+]] = arith.mulf %[[PA]], %[[C]] : f32
// CHECK-NEXT: %[[R:[a-z0-9_]+]] = arith.mulf %[[M]], %[[DSA]] : f32
// CHECK-NEXT: linalg.yield %[[R]] : f32
// dK += dDot^T Q and dV += P^T dO, contracting over the query rows.
// CHECK: %[[DK:[a-z0-9_]+]] = linalg.generic {{{.*}}iterator_types = ["parallel", "reduction", "parallel"]} ins(%[[DDOT]], %[[QT]] : tensor<?x?xf32>, tensor<?x16xbf16>) outs(%[[DKA]] : tensor<?x16xf32>)
// CHECK: %[[DV:[a-z0-9_]+]] = linalg.generic {{{.*}}iterator_types = ["parallel", "reduction", "parallel"]} ins(%[[P]], %[[DOT]] : tensor<?x?xf32>, tensor<?x16xbf16>) outs(%[[DVA]] : tensor<?x16xf32>)
// CHECK: scf.yield %[[DK]], %[[DV]] : tensor<?x16xf32>, tensor<?x16xf32>
// CHECK: arith.truncf %{{.*}} : f32 to bf16
// CHECK: arith.truncf %{{.*}} : f32 to bf16
// CHECK: scf.forall.in_parallel {
// CHECK-NEXT: tensor.parallel_insert_slice %{{.*}} into %[[DKS]][%[[B]], %[[HK]], %[[K0]], 0] [1, 1, %[[COLS]], 16]
// CHECK-NEXT: tensor.parallel_insert_slice %{{.*}} into %[[DVS]][%[[B]], %[[HK]], %[[K0]], 0] [1, 1, %[[COLS]], 16]
// Step 3: dQ per (batch, query head, Q tile), over the K/V tiles it sees.
// CHECK: %[[DQ:[a-z0-9_]+]] = scf.forall (%[[B2:[a-z0-9_]+]], %[[H2:[a-z0-9_]+]], %{{[a-z0-9_]+}}) in (%{{.*}}, %{{.*}}, %{{.*}}) shared_outs(%[[DQS:[a-z0-9_]+]] = %{{.*}}) -> (tensor<2x4x?x16xbf16>) {
// CHECK: %[[QEND:[a-z0-9_]+]] = arith.addi
// CHECK-NEXT: %[[Z2:[a-z0-9_]+]] = arith.constant 0 : index
// CHECK-NEXT: %[[KVMIN:[a-z0-9_]+]] = arith.minsi %{{.*}}, %[[QEND]] : index
// CHECK-NEXT: %[[KVEND:[a-z0-9_]+]] = arith.maxsi %[[Z2]], %[[KVMIN]] : index
// CHECK: scf.for %[[K02:[a-z0-9_]+]] = %{{.*}} to %[[KVEND]] step %{{.*}} iter_args(%[[DQA:[a-z0-9_]+]] = %{{.*}}) -> (tensor<?x16xf32>) {
// CHECK: %[[KT2:[a-z0-9_]+]] = tensor.extract_slice %[[K]]
// CHECK: fa.score_tile {{.*}} -> tensor<?x?xf32>, tensor<?x?xf32>
// CHECK: %[[DDOT2:[a-z0-9_]+]] = linalg.generic {{.*}} ins(%{{.*}}, %{{.*}}, %{{.*}} : tensor<?x?xf32>, tensor<?xf32>, tensor<?x?xf32>)
// CHECK: %[[DQN:[a-z0-9_]+]] = linalg.generic {{{.*}}iterator_types = ["parallel", "reduction", "parallel"]} ins(%[[DDOT2]], %[[KT2]] : tensor<?x?xf32>, tensor<?x16xbf16>) outs(%[[DQA]] : tensor<?x16xf32>)
// CHECK: scf.yield %[[DQN]] : tensor<?x16xf32>
// CHECK: tensor.parallel_insert_slice %{{.*}} into %[[DQS]][%[[B2]], %[[H2]]
// CHECK: return %[[DQ]], %[[KV]]#0, %[[KV]]#1
func.func @causal_gqa(%q: tensor<2x4x?x16xbf16>, %k: tensor<2x2x?x16xbf16>, %v: tensor<2x2x?x16xbf16>, %o: tensor<2x4x?x16xbf16>, %do: tensor<2x4x?x16xbf16>, %lse: tensor<2x4x?xf32>) -> (tensor<2x4x?x16xbf16>, tensor<2x2x?x16xbf16>, tensor<2x2x?x16xbf16>) {
  %dq, %dk, %dv = fa.attention_grad %q, %k, %v, %o, %do, %lse {causal = #fa.causal<top_left>, scale = 0.5 : f32} : tensor<2x4x?x16xbf16>, tensor<2x2x?x16xbf16>, tensor<2x2x?x16xbf16>, tensor<2x4x?x16xbf16>, tensor<2x4x?x16xbf16>, tensor<2x4x?xf32> -> tensor<2x4x?x16xbf16>, tensor<2x2x?x16xbf16>, tensor<2x2x?x16xbf16>
  return %dq, %dk, %dv : tensor<2x4x?x16xbf16>, tensor<2x2x?x16xbf16>, tensor<2x2x?x16xbf16>
}

// Bottom-right window: the Q rows a K/V tile [k0, k0 + cols) can see are
// [k0 - off - right, k0 + cols - off + left) with off = Nk - Nq.
// CHECK-LABEL: func.func @window_queries(
// CHECK: scf.forall
// CHECK: %[[K0:[a-z0-9_]+]] = arith.muli
// CHECK: %[[COLS:[a-z0-9_]+]] = arith.minsi
// CHECK: %[[KEND:[a-z0-9_]+]] = arith.addi %[[K0]], %[[COLS]] : index
// CHECK-NEXT: %[[OFF:[a-z0-9_]+]] = arith.subi %[[NK:[a-z0-9_]+]], %[[NQ:[a-z0-9_]+]] : index
// CHECK-NEXT: %[[Z:[a-z0-9_]+]] = arith.constant 0 : index
// CHECK-NEXT: %[[FIRST:[a-z0-9_]+]] = arith.subi %[[K0]], %[[OFF]] : index
// CHECK-NEXT: %[[BEGIN0:[a-z0-9_]+]] = arith.maxsi %[[Z]], %[[FIRST]] : index
// CHECK-NEXT: %[[RIGHT:[a-z0-9_]+]] = arith.constant 2 : index
// CHECK-NEXT: %[[A:[a-z0-9_]+]] = arith.subi %[[K0]], %[[OFF]] : index
// CHECK-NEXT: %[[LO:[a-z0-9_]+]] = arith.subi %[[A]], %[[RIGHT]] : index
// CHECK-NEXT: %[[BEGIN:[a-z0-9_]+]] = arith.maxsi %[[BEGIN0]], %[[LO]] : index
// CHECK-NEXT: %[[LEFT:[a-z0-9_]+]] = arith.constant 7 : index
// CHECK-NEXT: %[[B:[a-z0-9_]+]] = arith.subi %[[KEND]], %[[OFF]] : index
// CHECK-NEXT: %[[HI:[a-z0-9_]+]] = arith.addi %[[B]], %[[LEFT]] : index
// CHECK-NEXT: %[[END:[a-z0-9_]+]] = arith.minsi %[[NQ]], %[[HI]] : index
// CHECK: scf.for %{{.*}} = %[[BEGIN]] to %[[END]] step
func.func @window_queries(%q: tensor<1x1x?x8xf16>, %k: tensor<1x1x?x8xf16>, %o: tensor<1x1x?x8xf16>, %lse: tensor<1x1x?xf32>) -> tensor<1x1x?x8xf16> {
  %dq, %dk, %dv = fa.attention_grad %q, %k, %k, %o, %o, %lse {causal = #fa.causal<bottom_right>, window = array<i64: 7, 2>} : tensor<1x1x?x8xf16>, tensor<1x1x?x8xf16>, tensor<1x1x?x8xf16>, tensor<1x1x?x8xf16>, tensor<1x1x?x8xf16>, tensor<1x1x?xf32> -> tensor<1x1x?x8xf16>, tensor<1x1x?x8xf16>, tensor<1x1x?x8xf16>
  return %dk : tensor<1x1x?x8xf16>
}

// The score tiles carry the variant's regions, score_mod_grad included; f32
// accumulators need no cast.
// CHECK-LABEL: func.func @score_mod_f32(
// CHECK: fa.score_tile {{.*}} -> tensor<?x?xf32>, tensor<?x?xf32> score_mod {
// CHECK: math.tanh
// CHECK: } score_mod_grad {
// CHECK: arith.constant 4.200000e+01 : f32
// CHECK-NOT: arith.truncf
// CHECK: return
func.func @score_mod_f32(%q: tensor<1x1x?x8xf32>, %o: tensor<1x1x?x8xf32>, %lse: tensor<1x1x?xf32>) -> tensor<1x1x?x8xf32> {
  %dq, %dk, %dv = fa.attention_grad %q, %q, %q, %o, %o, %lse : tensor<1x1x?x8xf32>, tensor<1x1x?x8xf32>, tensor<1x1x?x8xf32>, tensor<1x1x?x8xf32>, tensor<1x1x?x8xf32>, tensor<1x1x?xf32> -> tensor<1x1x?x8xf32>, tensor<1x1x?x8xf32>, tensor<1x1x?x8xf32> score_mod {
  ^bb0(%s: f32, %b: index, %h: index, %i: index, %j: index):
    %t = math.tanh %s : f32
    fa.yield %t : f32
  } score_mod_grad {
  ^bb0(%s: f32, %b: index, %h: index, %i: index, %j: index):
    %c = arith.constant 42.0 : f32
    fa.yield %c : f32
  }
  return %dq : tensor<1x1x?x8xf32>
}

// dBias of a bias broadcast over batches and query rows ([1, H, 1, Nk]): one
// block per bias head; it loops over every batch and Q tile, adds d s / d
// bias tiles reduced over their rows into columns [k0, k0 + cols) of a
// [1, Nk] accumulator, and writes its block once.
// CHECK-LABEL: func.func @bias_grad(
// CHECK-SAME: %[[BIAS:[a-z0-9_]+]]: tensor<1x4x1x?xf32>)
// CHECK: %[[DB:[a-z0-9_]+]] = scf.forall (%[[BB:[a-z0-9_]+]], %[[HH:[a-z0-9_]+]], %{{[a-z0-9_]+}}) in (%[[ONE:[a-z0-9_]+]], %{{[a-z0-9_]+}}, %[[ONE]]) shared_outs(%[[DBS:[a-z0-9_]+]] = %{{.*}}) -> (tensor<1x4x1x?xf32>) {
// CHECK: %[[ACC0:[a-z0-9_]+]] = linalg.fill {{.*}} -> tensor<?x?xf32>
// CHECK: scf.for %[[B:[a-z0-9_]+]] = %{{.*}} to %{{.*}} step %[[ONE]] iter_args(%{{.*}} = %[[ACC0]])
// CHECK-NEXT: scf.for %[[H:[a-z0-9_]+]] = %[[HH]] to %{{.*}} step %[[ONE]]
// CHECK: scf.for %[[Q0:[a-z0-9_]+]] = %{{.*}} to %{{.*}} step
// CHECK: scf.for %[[K0:[a-z0-9_]+]] = %{{.*}} to %{{.*}} step %{{.*}} iter_args(%[[ACC:[a-z0-9_]+]] = %{{.*}})
// CHECK: fa.score_tile {{.*}} at[%[[B]], %[[H]], %[[Q0]], %[[K0]]] {{.*}} bias(%[[BIAS]] : tensor<1x4x1x?xf32>) {bias_derivative, scale = 2.500000e-01 : f32}
// CHECK: %[[G:[a-z0-9_]+]] = linalg.generic {{.*}} ins(%{{.*}}, %{{.*}}, %{{.*}} : tensor<?x?xf32>, tensor<?xf32>, tensor<?x?xf32>)
// CHECK: %[[SL:[a-z0-9_]+]] = tensor.extract_slice %[[ACC]][0, %[[K0]]] [%[[ONE]], %[[COLS:[a-z0-9_]+]]] [1, 1]
// CHECK-NEXT: %[[SUM:[a-z0-9_]+]] = linalg.generic {indexing_maps = [#{{.*}}, #[[ROW0]]], iterator_types = ["reduction", "parallel"]} ins(%[[G]] : tensor<?x?xf32>) outs(%[[SL]] : tensor<?x?xf32>)
// CHECK: tensor.insert_slice %[[SUM]] into %[[ACC]][0, %[[K0]]] [%[[ONE]], %[[COLS]]] [1, 1]
// CHECK: scf.forall.in_parallel {
// CHECK-NEXT: tensor.parallel_insert_slice %{{.*}} into %[[DBS]][%[[BB]], %[[HH]], 0, 0] [1, 1, %[[ONE]], %{{.*}}] [1, 1, 1, 1] : tensor<?x?xf32> into tensor<1x4x1x?xf32>
// CHECK: return %[[DB]]
func.func @bias_grad(%q: tensor<2x4x?x16xf16>, %k: tensor<2x4x?x16xf16>, %o: tensor<2x4x?x16xf16>, %lse: tensor<2x4x?xf32>, %bias: tensor<1x4x1x?xf32>) -> tensor<1x4x1x?xf32> {
  %dq, %dk, %dv, %db = fa.attention_grad %q, %k, %k, %o, %o, %lse bias(%bias : tensor<1x4x1x?xf32>) : tensor<2x4x?x16xf16>, tensor<2x4x?x16xf16>, tensor<2x4x?x16xf16>, tensor<2x4x?x16xf16>, tensor<2x4x?x16xf16>, tensor<2x4x?xf32> -> tensor<2x4x?x16xf16>, tensor<2x4x?x16xf16>, tensor<2x4x?x16xf16>, tensor<1x4x1x?xf32>
  return %db : tensor<1x4x1x?xf32>
}
