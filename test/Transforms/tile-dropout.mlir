// RUN: fa-opt %s -fa-tile="block-q=32 block-kv=16" | FileCheck %s
// RUN: fa-opt %s -fa-tile-grad="block-q=32 block-kv=16" | FileCheck %s --check-prefix=GRAD

// Dropout in the tiled forward: the row sum takes P as is, P V takes P times
// the dropout factor of each position, from Philox4x32-10 keyed by the seed
// on the counter (j, i, h, b).
// CHECK-LABEL: func.func @dropout(
// CHECK-SAME: %[[Q:[a-z0-9_]+]]: tensor<1x2x?x8xf32>, %[[SEED:[a-z0-9_]+]]: i64)
// CHECK: scf.forall (%[[B:[a-z0-9_]+]], %[[H:[a-z0-9_]+]], %{{[a-z0-9_]+}})
// CHECK: %[[Q0:[a-z0-9_]+]] = arith.muli
// CHECK: scf.for %[[K0:[a-z0-9_]+]] =
// CHECK: } {fa.softmax_row_max = "exp"}
// CHECK: scf.for %[[K1:[a-z0-9_]+]] =
// CHECK: %[[P:[a-z0-9_]+]] = linalg.generic
// CHECK: %[[L:[a-z0-9_]+]] = linalg.generic {{.*}} ins(%[[P]] : tensor<?x?xf32>)
// CHECK: %[[V:[a-z0-9_]+]] = tensor.extract_slice
// CHECK-NEXT: %[[PZ:[a-z0-9_]+]] = linalg.generic {{{.*}}iterator_types = ["parallel", "parallel"]} outs(%[[P]] : tensor<?x?xf32>) {
// CHECK-NEXT: ^bb0(%[[X:[a-z0-9_]+]]: f32):
// CHECK-NEXT: %[[R:[a-z0-9_]+]] = linalg.index 0 : index
// CHECK-NEXT: %[[I:[a-z0-9_]+]] = arith.addi %[[Q0]], %[[R]] : index
// CHECK-NEXT: %[[C:[a-z0-9_]+]] = linalg.index 1 : index
// CHECK-NEXT: %[[J:[a-z0-9_]+]] = arith.addi %[[K1]], %[[C]] : index
// CHECK-NEXT: %[[C0:[a-z0-9_]+]] = arith.index_castui %[[J]] : index to i32
// CHECK-NEXT: %[[C1:[a-z0-9_]+]] = arith.index_castui %[[I]] : index to i32
// CHECK-NEXT: %[[C2:[a-z0-9_]+]] = arith.index_castui %[[H]] : index to i32
// CHECK-NEXT: %[[C3:[a-z0-9_]+]] = arith.index_castui %[[B]] : index to i32
// CHECK-NEXT: %[[KEY0:[a-z0-9_]+]] = arith.trunci %[[SEED]] : i64 to i32
// CHECK-NEXT: %[[S32:[a-z0-9_]+]] = arith.constant 32 : i64
// CHECK-NEXT: %[[HI:[a-z0-9_]+]] = arith.shrui %[[SEED]], %[[S32]] : i64
// CHECK-NEXT: %[[KEY1:[a-z0-9_]+]] = arith.trunci %[[HI]] : i64 to i32
// Round 1: (hi(M1 c2) ^ c1 ^ k0, lo(M1 c2), hi(M0 c0) ^ c3 ^ k1, lo(M0 c0)).
// CHECK-NEXT: %[[M0:[a-z0-9_-]+]] = arith.constant -766435501 : i32
// CHECK-NEXT: %[[LO0:[a-z0-9_]+]], %[[HI0:[a-z0-9_]+]] = arith.mului_extended %[[M0]], %[[C0]] : i32
// CHECK-NEXT: %[[M1:[a-z0-9_-]+]] = arith.constant -845247145 : i32
// CHECK-NEXT: %[[LO1:[a-z0-9_]+]], %[[HI1:[a-z0-9_]+]] = arith.mului_extended %[[M1]], %[[C2]] : i32
// CHECK-NEXT: %[[X0:[a-z0-9_]+]] = arith.xori %[[HI1]], %[[C1]] : i32
// CHECK-NEXT: %[[N0:[a-z0-9_]+]] = arith.xori %[[X0]], %[[KEY0]] : i32
// CHECK-NEXT: %[[X2:[a-z0-9_]+]] = arith.xori %[[HI0]], %[[C3]] : i32
// CHECK-NEXT: %[[N2:[a-z0-9_]+]] = arith.xori %[[X2]], %[[KEY1]] : i32
// The key schedule: k0 += 0x9E3779B9, k1 += 0xBB67AE85.
// CHECK-NEXT: %[[W0:[a-z0-9_-]+]] = arith.constant -1640531527 : i32
// CHECK-NEXT: arith.addi %[[KEY0]], %[[W0]] : i32
// CHECK-NEXT: %[[W1:[a-z0-9_-]+]] = arith.constant -1150833019 : i32
// CHECK-NEXT: arith.addi %[[KEY1]], %[[W1]] : i32
// Nine more rounds (18 multiplications in all), then 24 bits against p.
// CHECK-COUNT-18: arith.mului_extended
// CHECK: %[[EIGHT:[a-z0-9_]+]] = arith.constant 8 : i32
// CHECK-NEXT: %[[BITS:[a-z0-9_]+]] = arith.shrui %[[OUT0:[a-z0-9_]+]], %[[EIGHT]] : i32
// CHECK-NEXT: %[[BF:[a-z0-9_]+]] = arith.uitofp %[[BITS]] : i32 to f32
// CHECK-NEXT: %[[ULP:[a-z0-9_]+]] = arith.constant 5.96046448E-8 : f32
// CHECK-NEXT: %[[U:[a-z0-9_]+]] = arith.mulf %[[BF]], %[[ULP]] : f32
// CHECK-NEXT: %[[PP:[a-z0-9_]+]] = arith.constant 2.500000e-01 : f32
// CHECK-NEXT: %[[KEEP:[a-z0-9_]+]] = arith.cmpf oge, %[[U]], %[[PP]] : f32
// CHECK-NEXT: %[[KEPT:[a-z0-9_]+]] = arith.constant 1.33333337 : f32
// CHECK-NEXT: %[[ZERO:[a-z0-9_]+]] = arith.constant 0.000000e+00 : f32
// CHECK-NEXT: %[[Z:[a-z0-9_]+]] = arith.select %[[KEEP]], %[[KEPT]], %[[ZERO]] : f32
// CHECK-NEXT: %[[Y:[a-z0-9_]+]] = arith.mulf %[[X]], %[[Z]] : f32
// CHECK-NEXT: linalg.yield %[[Y]] : f32
// CHECK: linalg.generic {{.*}} ins(%[[PZ]], %[[V]] : tensor<?x?xf32>, tensor<?x8xf32>)
// CHECK: } {fa.softmax_row_sum}
func.func @dropout(%q: tensor<1x2x?x8xf32>, %seed: i64) -> tensor<1x2x?x8xf32> {
  %o = fa.attention %q, %q, %q dropout_seed(%seed) {dropout_p = 0.25 : f32} : tensor<1x2x?x8xf32>, tensor<1x2x?x8xf32>, tensor<1x2x?x8xf32> -> tensor<1x2x?x8xf32>
  return %o : tensor<1x2x?x8xf32>
}

// The backward applies the same factors to dP (before dS) and to P (for dV),
// from one evaluation of the Philox stream per position (one generic with
// both tiles as outputs).
// GRAD-LABEL: func.func @dropout_grad(
// GRAD: scf.forall
// GRAD: %[[P:[a-z0-9_]+]] = linalg.generic {{{.*}}iterator_types = ["parallel", "parallel"]} ins(%{{.*}} : tensor<?xf32>) outs(%result : tensor<?x?xf32>)
// GRAD: %[[DP:[a-z0-9_]+]] = linalg.generic {{{.*}}iterator_types = ["parallel", "parallel", "reduction"]}
// GRAD: %[[Z:[a-z0-9_]+]]:2 = linalg.generic {{{.*}}iterator_types = ["parallel", "parallel"]} outs(%[[P]], %[[DP]] : tensor<?x?xf32>, tensor<?x?xf32>)
// GRAD-NEXT: ^bb0(%[[PIN:[a-z0-9_]+]]: f32, %[[DPIN:[a-z0-9_]+]]: f32):
// GRAD-COUNT-20: arith.mului_extended
// GRAD-NOT: arith.mului_extended
// GRAD: %[[PZ:[a-z0-9_]+]] = arith.mulf %[[PIN]], %[[SCALE:[a-z0-9_]+]] : f32
// GRAD-NEXT: %[[DPZ:[a-z0-9_]+]] = arith.mulf %[[DPIN]], %[[SCALE]] : f32
// GRAD-NEXT: linalg.yield %[[PZ]], %[[DPZ]] : f32, f32
// GRAD: %[[DDOT:[a-z0-9_]+]] = linalg.generic {{.*}} outs(%[[Z]]#1 : tensor<?x?xf32>)
// GRAD-NOT: arith.mului_extended
// GRAD: linalg.generic {{{.*}}iterator_types = ["parallel", "reduction", "parallel"]} ins(%[[DDOT]], %{{.*}} : tensor<?x?xf32>, tensor<?x8xf32>)
// GRAD: linalg.generic {{{.*}}iterator_types = ["parallel", "reduction", "parallel"]} ins(%[[Z]]#0, %{{.*}} : tensor<?x?xf32>, tensor<?x8xf32>)
func.func @dropout_grad(%q: tensor<1x2x?x8xf32>, %lse: tensor<1x2x?xf32>, %seed: i64) -> tensor<1x2x?x8xf32> {
  %dq, %dk, %dv = fa.attention_grad %q, %q, %q, %q, %q, %lse dropout_seed(%seed) {dropout_p = 0.25 : f32} : tensor<1x2x?x8xf32>, tensor<1x2x?x8xf32>, tensor<1x2x?x8xf32>, tensor<1x2x?x8xf32>, tensor<1x2x?x8xf32>, tensor<1x2x?xf32> -> tensor<1x2x?x8xf32>, tensor<1x2x?x8xf32>, tensor<1x2x?x8xf32>
  return %dk : tensor<1x2x?x8xf32>
}
