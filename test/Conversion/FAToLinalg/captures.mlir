// RUN: fa-opt %s -convert-fa-to-linalg | FileCheck %s

// convert-fa-to-linalg with captures: the regions are inlined into the
// elementwise linalg.generic with their capture arguments bound to the
// fa.score_tile's captures, which the body reads from above with
// tensor.extract (score_mod, its derivative and mask_mod).

// CHECK-LABEL: func.func @score_tile_captures(
// CHECK-SAME: %[[QT:[^:]+]]: tensor<?x8xf32>, %[[KT:[^:]+]]: tensor<?x8xf32>, %[[B:[^:]+]]: index, %[[H:[^:]+]]: index, %[[Q0:[^:]+]]: index, %[[K0:[^:]+]]: index, %{{[^:]+}}: index, %{{[^:]+}}: index, %[[DOC:[^:]+]]: tensor<?xi32>, %[[TAB:[^:]+]]: tensor<4x2xf16>)
// CHECK: %[[S:.+]]:2 = linalg.generic {indexing_maps = [#{{.+}}, #{{.+}}], iterator_types = ["parallel", "parallel"]} outs(%{{.+}}, %{{.+}} : tensor<?x?xf32>, tensor<?x?xf32>) {
// CHECK-NEXT: ^bb0(%[[DOT:.+]]: f32, %{{.+}}: f32):
// CHECK-NEXT: %[[R:.+]] = linalg.index 0 : index
// CHECK-NEXT: %[[C:.+]] = linalg.index 1 : index
// CHECK-NEXT: %[[I:.+]] = arith.addi %[[Q0]], %[[R]] : index
// CHECK-NEXT: %[[J:.+]] = arith.addi %[[K0]], %[[C]] : index
// CHECK-NEXT: %[[HALF:.+]] = arith.constant 5.000000e-01 : f32
// CHECK-NEXT: %[[SCALED:.+]] = arith.mulf %[[DOT]], %[[HALF]] fastmath<contract> : f32
// CHECK-NEXT: %[[DS0:.+]] = arith.constant 5.000000e-01 : f32
// CHECK-NEXT: %[[W:.+]] = tensor.extract %[[TAB]][%[[H]], %[[B]]] : tensor<4x2xf16>
// CHECK-NEXT: %[[WF:.+]] = arith.extf %[[W]] : f16 to f32
// CHECK-NEXT: %[[MOD:.+]] = arith.mulf %[[SCALED]], %[[WF]] : f32
// CHECK-NEXT: %[[GW:.+]] = tensor.extract %[[TAB]][%[[H]], %[[B]]] : tensor<4x2xf16>
// CHECK-NEXT: %[[GWF:.+]] = arith.extf %[[GW]] : f16 to f32
// CHECK-NEXT: %[[DS:.+]] = arith.mulf %[[DS0]], %[[GWF]] : f32
// CHECK-NEXT: %[[DI:.+]] = tensor.extract %[[DOC]][%[[I]]] : tensor<?xi32>
// CHECK-NEXT: %[[DJ:.+]] = tensor.extract %[[DOC]][%[[J]]] : tensor<?xi32>
// CHECK-NEXT: %[[KEEP:.+]] = arith.cmpi eq, %[[DI]], %[[DJ]] : i32
// CHECK-NEXT: %[[NINF:.+]] = arith.constant 0xFF800000 : f32
// CHECK-NEXT: %[[OUT:.+]] = arith.select %[[KEEP]], %[[MOD]], %[[NINF]] : f32
// CHECK-NEXT: %[[ZERO:.+]] = arith.constant 0.000000e+00 : f32
// CHECK-NEXT: %[[DOUT:.+]] = arith.select %[[KEEP]], %[[DS]], %[[ZERO]] : f32
// CHECK-NEXT: linalg.yield %[[OUT]], %[[DOUT]] : f32, f32
// CHECK: return %[[S]]#0, %[[S]]#1
func.func @score_tile_captures(%qt: tensor<?x8xf32>, %kt: tensor<?x8xf32>, %b: index, %h: index, %q0: index, %k0: index, %nq: index, %nk: index, %doc: tensor<?xi32>, %tab: tensor<4x2xf16>) -> (tensor<?x?xf32>, tensor<?x?xf32>) {
  %s, %d = fa.score_tile %qt, %kt at [%b, %h, %q0, %k0] of [%nq, %nk] captures(%doc, %tab : tensor<?xi32>, tensor<4x2xf16>) {scale = 0.5 : f32} : tensor<?x8xf32>, tensor<?x8xf32> -> tensor<?x?xf32>, tensor<?x?xf32> score_mod {
  ^bb0(%x: f32, %bb: index, %hh: index, %i: index, %j: index, %dc: tensor<?xi32>, %t: tensor<4x2xf16>):
    %w = tensor.extract %t[%hh, %bb] : tensor<4x2xf16>
    %wf = arith.extf %w : f16 to f32
    %r = arith.mulf %x, %wf : f32
    fa.yield %r : f32
  } mask_mod {
  ^bb0(%bb: index, %hh: index, %i: index, %j: index, %dc: tensor<?xi32>, %t: tensor<4x2xf16>):
    %di = tensor.extract %dc[%i] : tensor<?xi32>
    %dj = tensor.extract %dc[%j] : tensor<?xi32>
    %same = arith.cmpi eq, %di, %dj : i32
    fa.yield %same : i1
  } score_mod_grad {
  ^bb0(%x: f32, %bb: index, %hh: index, %i: index, %j: index, %dc: tensor<?xi32>, %t: tensor<4x2xf16>):
    %w = tensor.extract %t[%hh, %bb] : tensor<4x2xf16>
    %wf = arith.extf %w : f16 to f32
    fa.yield %wf : f32
  }
  return %s, %d : tensor<?x?xf32>, tensor<?x?xf32>
}
