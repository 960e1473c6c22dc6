// RUN: fa-opt %s -fa-host-approximate-exp | FileCheck %s

// f32 math.exp, scalar or vector, becomes Cephes' polynomial: the input
// clamped, n = floor(x log2(e) + 1/2) (clamped to [-127, 127]), x - n ln 2
// in two steps, a polynomial in fma, and 2^n built from the exponent bits.
// Other types and other math ops are left as they are.

// CHECK-LABEL: func.func @exp_f32(
// CHECK-SAME: %[[X:.+]]: f32
// CHECK-NOT: math.exp
// CHECK-DAG: arith.constant 1.44269502 : f32
// CHECK: math.floor
// CHECK: math.fma
// CHECK: arith.fptosi %{{.+}} : f32 to i32
// CHECK: arith.shli
// CHECK: arith.bitcast %{{.+}} : i32 to f32
// CHECK: %[[R:.+]] = arith.mulf
// CHECK: return %[[R]] : f32
func.func @exp_f32(%x: f32) -> f32 {
  %e = math.exp %x : f32
  return %e : f32
}

// CHECK-LABEL: func.func @exp_vector(
// CHECK-NOT: math.exp
// CHECK: math.fma %{{.+}} : vector<8xf32>
// CHECK: arith.fptosi %{{.+}} : vector<8xf32> to vector<8xi32>
func.func @exp_vector(%x: vector<8xf32>) -> vector<8xf32> {
  %e = math.exp %x : vector<8xf32>
  return %e : vector<8xf32>
}

// CHECK-LABEL: func.func @kept(
// CHECK: math.exp %{{.+}} : f16
// CHECK: math.log %{{.+}} : f32
// CHECK: math.tanh %{{.+}} : f32
func.func @kept(%h: f16, %x: f32) -> (f16, f32, f32) {
  %e = math.exp %h : f16
  %l = math.log %x : f32
  %t = math.tanh %x : f32
  return %e, %l, %t : f16, f32, f32
}
