// RUN: fa-opt %s -fa-decompose | FileCheck %s --check-prefix=DECOMPOSE
// RUN: fa-opt %s -fa-tile="block-q=16 block-kv=16" | FileCheck %s --check-prefix=TILE
// RUN: fa-opt %s -fa-tile="block-q=16 block-kv=16" -fa-online-softmax | FileCheck %s --check-prefix=ONLINE
// RUN: fa-opt %s -fa-differentiate-score-mod | FileCheck %s --check-prefix=DIFF
// RUN: fa-opt %s -fa-differentiate-score-mod -fa-tile-grad="block-q=16 block-kv=16" | FileCheck %s --check-prefix=GRAD

// Captures through every pass that clones or inlines the regions: the
// reference inlines them into its elementwise generic, reading the
// function's tensors from above; the tiled forms forward the captures to
// each fa.score_tile with the regions as they are; the derivative of
// score_mod treats tensor.extract as not depending on the score.

// DECOMPOSE-LABEL: func.func @doc_mask(
// DECOMPOSE-SAME: %{{[^:]+}}: tensor<1x2x?x8xf32>, %{{[^:]+}}: tensor<1x2x?x8xf32>, %{{[^:]+}}: tensor<1x2x?x8xf32>, %[[DOC:[^:]+]]: tensor<?xi32>, %[[TAB:[^:]+]]: tensor<2xf32>)
// DECOMPOSE: linalg.generic {indexing_maps = [#{{.+}}], iterator_types = ["parallel", "parallel", "parallel", "parallel", "parallel"]} outs(%{{.+}} : tensor<1x2x1x?x?xf32>) {
// DECOMPOSE-NEXT: ^bb0(%[[S:.+]]: f32):
// DECOMPOSE-NEXT: linalg.index 0 : index
// DECOMPOSE-NEXT: %[[HK:.+]] = linalg.index 1 : index
// DECOMPOSE-NEXT: %[[HG:.+]] = linalg.index 2 : index
// DECOMPOSE-NEXT: %[[BASE:.+]] = arith.muli %[[HK]], %{{.+}} : index
// DECOMPOSE-NEXT: %[[H:.+]] = arith.addi %[[BASE]], %[[HG]] : index
// DECOMPOSE-NEXT: %[[I:.+]] = linalg.index 3 : index
// DECOMPOSE-NEXT: %[[J:.+]] = linalg.index 4 : index
// DECOMPOSE-NEXT: %[[SCALE:.+]] = arith.constant 0.353553385 : f32
// DECOMPOSE-NEXT: %[[SCALED:.+]] = arith.mulf %[[S]], %[[SCALE]] fastmath<contract> : f32
// DECOMPOSE-NEXT: %[[T:.+]] = tensor.extract %[[TAB]][%[[H]]] : tensor<2xf32>
// DECOMPOSE-NEXT: %[[MOD:.+]] = arith.addf %[[SCALED]], %[[T]] : f32
// DECOMPOSE-NEXT: %[[DI:.+]] = tensor.extract %[[DOC]][%[[I]]] : tensor<?xi32>
// DECOMPOSE-NEXT: %[[DJ:.+]] = tensor.extract %[[DOC]][%[[J]]] : tensor<?xi32>
// DECOMPOSE-NEXT: %[[KEEP:.+]] = arith.cmpi eq, %[[DI]], %[[DJ]] : i32
// DECOMPOSE-NEXT: %[[NINF:.+]] = arith.constant 0xFF800000 : f32
// DECOMPOSE-NEXT: %[[R:.+]] = arith.select %[[KEEP]], %[[MOD]], %[[NINF]] : f32
// DECOMPOSE-NEXT: linalg.yield %[[R]] : f32

// Both K/V loops (row max, row sum) compute their tile with the captures.
// TILE-LABEL: func.func @doc_mask(
// TILE-SAME: %[[DOC:[^:]+]]: tensor<?xi32>, %[[TAB:[^:]+]]: tensor<2xf32>)
// TILE: fa.score_tile %{{.+}}, %{{.+}} at[%{{.+}}, %{{.+}}, %{{.+}}, %{{.+}}] of[%{{.+}}, %{{.+}}] captures(%[[DOC]], %[[TAB]] : tensor<?xi32>, tensor<2xf32>) {scale = 0.353553385 : f32} : tensor<?x8xf32>, tensor<?x8xf32> -> tensor<?x?xf32> score_mod {
// TILE-NEXT: ^bb0(%[[S:.+]]: f32, %{{.+}}: index, %[[H:.+]]: index, %{{.+}}: index, %{{.+}}: index, %{{.+}}: tensor<?xi32>, %[[T:.+]]: tensor<2xf32>):
// TILE-NEXT: %[[X:.+]] = tensor.extract %[[T]][%[[H]]] : tensor<2xf32>
// TILE-NEXT: %[[R:.+]] = arith.addf %[[S]], %[[X]] : f32
// TILE-NEXT: fa.yield %[[R]] : f32
// TILE-NEXT: } mask_mod {
// TILE-NEXT: ^bb0(%{{.+}}: index, %{{.+}}: index, %[[I:.+]]: index, %[[J:.+]]: index, %[[D:.+]]: tensor<?xi32>, %{{.+}}: tensor<2xf32>):
// TILE-NEXT: %[[DI:.+]] = tensor.extract %[[D]][%[[I]]] : tensor<?xi32>
// TILE-NEXT: %[[DJ:.+]] = tensor.extract %[[D]][%[[J]]] : tensor<?xi32>
// TILE-NEXT: %[[SAME:.+]] = arith.cmpi eq, %[[DI]], %[[DJ]] : i32
// TILE-NEXT: fa.yield %[[SAME]] : i1
// TILE: } {fa.softmax_row_max = "exp"}
// TILE: fa.score_tile {{.+}} captures(%[[DOC]], %[[TAB]] : tensor<?xi32>, tensor<2xf32>) {scale = 0.353553385 : f32}
// TILE: } {fa.softmax_row_sum}

// ONLINE-LABEL: func.func @doc_mask(
// ONLINE-SAME: %[[DOC:[^:]+]]: tensor<?xi32>, %[[TAB:[^:]+]]: tensor<2xf32>)
// ONLINE: scf.for
// ONLINE: fa.score_tile {{.+}} captures(%[[DOC]], %[[TAB]] : tensor<?xi32>, tensor<2xf32>) {scale = 0.353553385 : f32} : tensor<?x8xf32>, tensor<?x8xf32> -> tensor<?x?xf32> score_mod {
// ONLINE-NOT: fa.score_tile
// ONLINE: return
func.func @doc_mask(%q: tensor<1x2x?x8xf32>, %k: tensor<1x2x?x8xf32>, %v: tensor<1x2x?x8xf32>, %doc: tensor<?xi32>, %tab: tensor<2xf32>) -> tensor<1x2x?x8xf32> {
  %o = fa.attention %q, %k, %v captures(%doc, %tab : tensor<?xi32>, tensor<2xf32>) : tensor<1x2x?x8xf32>, tensor<1x2x?x8xf32>, tensor<1x2x?x8xf32> -> tensor<1x2x?x8xf32> score_mod {
  ^bb0(%s: f32, %b: index, %h: index, %i: index, %j: index, %d: tensor<?xi32>, %t: tensor<2xf32>):
    %x = tensor.extract %t[%h] : tensor<2xf32>
    %r = arith.addf %s, %x : f32
    fa.yield %r : f32
  } mask_mod {
  ^bb0(%b: index, %h: index, %i: index, %j: index, %d: tensor<?xi32>, %t: tensor<2xf32>):
    %di = tensor.extract %d[%i] : tensor<?xi32>
    %dj = tensor.extract %d[%j] : tensor<?xi32>
    %same = arith.cmpi eq, %di, %dj : i32
    fa.yield %same : i1
  }
  return %o : tensor<1x2x?x8xf32>
}

// d (s * t[h] + t[h]) / ds = t[h]: the extracts carry no tangent.
// DIFF-LABEL: func.func @per_head_scale(
// DIFF: } score_mod_grad {
// DIFF-NEXT: ^bb0(%{{.+}}: f32, %{{.+}}: index, %[[H:.+]]: index, %{{.+}}: index, %{{.+}}: index, %[[T:.+]]: tensor<2xf32>):
// DIFF-NEXT: %[[ONE:.+]] = arith.constant 1.000000e+00 : f32
// DIFF-NEXT: %[[X:.+]] = tensor.extract %[[T]][%[[H]]] : tensor<2xf32>
// DIFF-NEXT: %[[D:.+]] = arith.mulf %[[ONE]], %[[X]] : f32
// DIFF-NEXT: fa.yield %[[D]] : f32
// DIFF-NEXT: }

// The dK/dV and dQ sweeps each compute their tile (and its derivative) with
// the captures and all three regions.
// GRAD-LABEL: func.func @per_head_scale(
// GRAD-SAME: %[[TAB:[^:]+]]: tensor<2xf32>)
// GRAD-COUNT-2: %result, %derivative = fa.score_tile {{.+}} captures(%[[TAB]] : tensor<2xf32>) {scale = 0.353553385 : f32} : tensor<?x8xf32>, tensor<?x8xf32> -> tensor<?x?xf32>, tensor<?x?xf32> score_mod {
// GRAD-NOT: fa.score_tile
// GRAD-NOT: fa.attention_grad
func.func @per_head_scale(%q: tensor<1x2x?x8xf32>, %o: tensor<1x2x?x8xf32>, %lse: tensor<1x2x?xf32>, %tab: tensor<2xf32>) -> tensor<1x2x?x8xf32> {
  %dq, %dk, %dv = fa.attention_grad %q, %q, %q, %o, %o, %lse captures(%tab : tensor<2xf32>) : tensor<1x2x?x8xf32>, tensor<1x2x?x8xf32>, tensor<1x2x?x8xf32>, tensor<1x2x?x8xf32>, tensor<1x2x?x8xf32>, tensor<1x2x?xf32> -> tensor<1x2x?x8xf32>, tensor<1x2x?x8xf32>, tensor<1x2x?x8xf32> score_mod {
  ^bb0(%s: f32, %b: index, %h: index, %i: index, %j: index, %t: tensor<2xf32>):
    %x = tensor.extract %t[%h] : tensor<2xf32>
    %m = arith.mulf %s, %x : f32
    %r = arith.addf %m, %x : f32
    fa.yield %r : f32
  }
  return %dq : tensor<1x2x?x8xf32>
}
