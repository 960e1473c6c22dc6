// RUN: fa-opt %s | fa-opt | FileCheck %s
// RUN: fa-opt %s -mlir-print-op-generic | fa-opt | FileCheck %s

// Captured tensors: the `captures` operand of fa.attention, fa.attention_grad
// and fa.score_tile, and the regions' trailing block arguments that read them
// with tensor.extract. Round trip in the custom form and the generic form.

// Document masking (per-token document ids) and a per-head table.
// CHECK-LABEL: func.func @attention_captures(
// CHECK-SAME: %[[Q:[^:]+]]: tensor<?x4x?x16xf32>, %[[K:[^:]+]]: tensor<?x4x?x16xf32>, %[[V:[^:]+]]: tensor<?x4x?x16xf32>, %[[DOC:[^:]+]]: tensor<?xi32>, %[[TAB:[^:]+]]: tensor<4xf32>)
// CHECK: %output, %lse = fa.attention %[[Q]], %[[K]], %[[V]] captures(%[[DOC]], %[[TAB]] : tensor<?xi32>, tensor<4xf32>) {causal = #fa.causal<top_left>} : tensor<?x4x?x16xf32>, tensor<?x4x?x16xf32>, tensor<?x4x?x16xf32> -> tensor<?x4x?x16xf32>, tensor<?x4x?xf32> score_mod {
// CHECK-NEXT: ^bb0(%[[S:.+]]: f32, %{{.+}}: index, %[[H:.+]]: index, %[[I:.+]]: index, %[[J:.+]]: index, %{{.+}}: tensor<?xi32>, %[[T:.+]]: tensor<4xf32>):
// CHECK-NEXT: %[[SLOPE:.+]] = tensor.extract %[[T]][%[[H]]] : tensor<4xf32>
// CHECK: } mask_mod {
// CHECK-NEXT: ^bb0(%{{.+}}: index, %{{.+}}: index, %[[MI:.+]]: index, %[[MJ:.+]]: index, %[[D:.+]]: tensor<?xi32>, %{{.+}}: tensor<4xf32>):
// CHECK-NEXT: %[[DI:.+]] = tensor.extract %[[D]][%[[MI]]] : tensor<?xi32>
// CHECK-NEXT: %[[DJ:.+]] = tensor.extract %[[D]][%[[MJ]]] : tensor<?xi32>
// CHECK-NEXT: %[[SAME:.+]] = arith.cmpi eq, %[[DI]], %[[DJ]] : i32
// CHECK-NEXT: fa.yield %[[SAME]] : i1
func.func @attention_captures(%q: tensor<?x4x?x16xf32>, %k: tensor<?x4x?x16xf32>, %v: tensor<?x4x?x16xf32>, %doc: tensor<?xi32>, %tab: tensor<4xf32>) -> (tensor<?x4x?x16xf32>, tensor<?x4x?xf32>) {
  %o, %lse = fa.attention %q, %k, %v captures(%doc, %tab : tensor<?xi32>, tensor<4xf32>) {causal = #fa.causal<top_left>} : tensor<?x4x?x16xf32>, tensor<?x4x?x16xf32>, tensor<?x4x?x16xf32> -> tensor<?x4x?x16xf32>, tensor<?x4x?xf32> score_mod {
  ^bb0(%s: f32, %b: index, %h: index, %i: index, %j: index, %d: tensor<?xi32>, %t: tensor<4xf32>):
    %slope = tensor.extract %t[%h] : tensor<4xf32>
    %dist = arith.subi %j, %i : index
    %di = arith.index_cast %dist : index to i64
    %df = arith.sitofp %di : i64 to f32
    %bias = arith.mulf %slope, %df : f32
    %r = arith.addf %s, %bias : f32
    fa.yield %r : f32
  } mask_mod {
  ^bb0(%b: index, %h: index, %i: index, %j: index, %d: tensor<?xi32>, %t: tensor<4xf32>):
    %di = tensor.extract %d[%i] : tensor<?xi32>
    %dj = tensor.extract %d[%j] : tensor<?xi32>
    %same = arith.cmpi eq, %di, %dj : i32
    fa.yield %same : i1
  }
  return %o, %lse : tensor<?x4x?x16xf32>, tensor<?x4x?xf32>
}

// Captures come after the other variant operands; a region need not read
// them, but still takes them.
// CHECK-LABEL: func.func @grad_captures(
// CHECK: fa.attention_grad %{{.+}}, %{{.+}}, %{{.+}}, %{{.+}}, %{{.+}}, %{{.+}} bias(%{{.+}} : tensor<1x1x8x8xf32>) captures(%{{.+}} : tensor<2x8xi64>) : {{.*}} score_mod {
// CHECK-NEXT: ^bb0(%{{.+}}: f32, %{{.+}}: index, %{{.+}}: index, %{{.+}}: index, %{{.+}}: index, %{{.+}}: tensor<2x8xi64>):
// CHECK: } score_mod_grad {
// CHECK-NEXT: ^bb0(%{{.+}}: f32, %{{.+}}: index, %{{.+}}: index, %{{.+}}: index, %{{.+}}: index, %{{.+}}: tensor<2x8xi64>):
func.func @grad_captures(%q: tensor<2x1x8x4xf32>, %o: tensor<2x1x8x4xf32>, %lse: tensor<2x1x8xf32>, %bias: tensor<1x1x8x8xf32>, %pos: tensor<2x8xi64>) -> tensor<2x1x8x4xf32> {
  %dq, %dk, %dv = fa.attention_grad %q, %q, %q, %o, %o, %lse bias(%bias : tensor<1x1x8x8xf32>) captures(%pos : tensor<2x8xi64>) : tensor<2x1x8x4xf32>, tensor<2x1x8x4xf32>, tensor<2x1x8x4xf32>, tensor<2x1x8x4xf32>, tensor<2x1x8x4xf32>, tensor<2x1x8xf32> -> tensor<2x1x8x4xf32>, tensor<2x1x8x4xf32>, tensor<2x1x8x4xf32> score_mod {
  ^bb0(%s: f32, %b: index, %h: index, %i: index, %j: index, %p: tensor<2x8xi64>):
    %pi = tensor.extract %p[%b, %i] : tensor<2x8xi64>
    %pf = arith.sitofp %pi : i64 to f32
    %r = arith.mulf %s, %pf : f32
    fa.yield %r : f32
  } score_mod_grad {
  ^bb0(%s: f32, %b: index, %h: index, %i: index, %j: index, %p: tensor<2x8xi64>):
    %pi = tensor.extract %p[%b, %i] : tensor<2x8xi64>
    %pf = arith.sitofp %pi : i64 to f32
    fa.yield %pf : f32
  }
  return %dq : tensor<2x1x8x4xf32>
}

// CHECK-LABEL: func.func @score_tile_captures(
// CHECK: %{{.+}} = fa.score_tile %arg0, %arg1 at[%arg2, %arg2, %arg2, %arg2] of[%arg2, %arg2] captures(%arg3 : tensor<?xf16>) {scale = 5.000000e-01 : f32} : tensor<16x8xf32>, tensor<32x8xf32> -> tensor<16x32xf32> mask_mod {
// CHECK-NEXT: ^bb0(%{{.+}}: index, %{{.+}}: index, %{{.+}}: index, %{{.+}}: index, %{{.+}}: tensor<?xf16>):
func.func @score_tile_captures(%qt: tensor<16x8xf32>, %kt: tensor<32x8xf32>, %i: index, %c: tensor<?xf16>) -> tensor<16x32xf32> {
  %s = fa.score_tile %qt, %kt at [%i, %i, %i, %i] of [%i, %i] captures(%c : tensor<?xf16>) {scale = 0.5 : f32} : tensor<16x8xf32>, tensor<32x8xf32> -> tensor<16x32xf32> mask_mod {
  ^bb0(%b: index, %h: index, %qi: index, %kj: index, %t: tensor<?xf16>):
    %x = tensor.extract %t[%kj] : tensor<?xf16>
    %zero = arith.constant 0.0 : f16
    %keep = arith.cmpf oge, %x, %zero : f16
    fa.yield %keep : i1
  }
  return %s : tensor<16x32xf32>
}
