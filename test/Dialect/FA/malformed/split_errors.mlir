// RUN: not fa-opt %s -split-input-file 2>&1 | FileCheck %s

// More parse errors, one per chunk; each chunk fails on its own and fa-opt
// goes on to the next one.

// dropout_seed is always i64; its type is not written.
func.func @seed_i32(%q: tensor<2x8x128x64xf16>, %k: tensor<2x8x128x64xf16>, %v: tensor<2x8x128x64xf16>, %seed: i32) {
  // CHECK: {{.*}}split_errors.mlir:[[@LINE+1]]:45: error: use of value '%seed' expects different type than prior uses: 'i64' vs 'i32'
  %o = fa.attention %q, %k, %v dropout_seed(%seed) {dropout_p = 0.1 : f32} : tensor<2x8x128x64xf16>, tensor<2x8x128x64xf16>, tensor<2x8x128x64xf16> -> tensor<2x8x128x64xf16>
  return
}

// -----

// The result types are required.
func.func @no_results(%q: tensor<2x8x128x64xf16>, %k: tensor<2x8x128x64xf16>, %v: tensor<2x8x128x64xf16>) {
  // CHECK: {{.*}}split_errors.mlir:[[@LINE+1]]:104: error: expected '->'
  %o = fa.attention %q, %k, %v : tensor<2x8x128x64xf16>, tensor<2x8x128x64xf16>, tensor<2x8x128x64xf16>
  return
}

// -----

// A misspelled optional-operand keyword.
func.func @biass(%q: tensor<2x8x128x64xf16>, %k: tensor<2x8x128x64xf16>, %v: tensor<2x8x128x64xf16>, %b: tensor<1x1x1x128xf32>) {
  // CHECK: {{.*}}split_errors.mlir:[[@LINE+1]]:31: error: expected ':'
  %o = fa.attention %q, %k, %v biass(%b : tensor<1x1x1x128xf32>) : tensor<2x8x128x64xf16>, tensor<2x8x128x64xf16>, tensor<2x8x128x64xf16> -> tensor<2x8x128x64xf16>
  return
}

// -----

// An attribute without a value is a unit attribute, not an f32.
func.func @scale_unit(%q: tensor<2x8x128x64xf16>, %k: tensor<2x8x128x64xf16>, %v: tensor<2x8x128x64xf16>) {
  // CHECK: {{.*}}split_errors.mlir:[[@LINE+1]]:32: error: custom op 'fa.attention' 'fa.attention' op attribute 'scale' failed to satisfy constraint: 32-bit float attribute
  %o = fa.attention %q, %k, %v {scale} : tensor<2x8x128x64xf16>, tensor<2x8x128x64xf16>, tensor<2x8x128x64xf16> -> tensor<2x8x128x64xf16>
  return
}

// -----

func.func @causal_no_kind(%q: tensor<2x8x128x64xf16>, %k: tensor<2x8x128x64xf16>, %v: tensor<2x8x128x64xf16>) {
  // CHECK: {{.*}}split_errors.mlir:[[@LINE+1]]:52: error: expected '<'
  %o = fa.attention %q, %k, %v {causal = #fa.causal} : tensor<2x8x128x64xf16>, tensor<2x8x128x64xf16>, tensor<2x8x128x64xf16> -> tensor<2x8x128x64xf16>
  return
}

// -----

// The score_mod keyword must be followed by its region.
func.func @score_mod_no_region(%q: tensor<2x8x128x64xf16>, %k: tensor<2x8x128x64xf16>, %v: tensor<2x8x128x64xf16>) {
  // CHECK: {{.*}}split_errors.mlir:[[@LINE+1]]:140: error: expected '{' to begin a region
  %o = fa.attention %q, %k, %v : tensor<2x8x128x64xf16>, tensor<2x8x128x64xf16>, tensor<2x8x128x64xf16> -> tensor<2x8x128x64xf16> score_mod
  return
}

// CHECK-NOT: error:
