// RUN: fa-opt %s -split-input-file -verify-diagnostics

// fa.score_tile carries the whole bias and alibi_slopes operands of the
// fa.attention it came from, under the same constraints.

func.func @bias_rank(%qt: tensor<16x8xf32>, %kt: tensor<32x8xf32>, %i: index, %bias: tensor<16x32xf32>) {
  // expected-error @+1 {{'fa.score_tile' op bias must be a rank-4 f16, bf16 or f32 tensor, got 'tensor<16x32xf32>'}}
  %s = fa.score_tile %qt, %kt at [%i, %i, %i, %i] of [%i, %i] bias(%bias : tensor<16x32xf32>) {scale = 0.5 : f32} : tensor<16x8xf32>, tensor<32x8xf32> -> tensor<16x32xf32>
  return
}

// -----

func.func @bias_element_type(%qt: tensor<16x8xf32>, %kt: tensor<32x8xf32>, %i: index, %bias: tensor<1x1x16x32xi1>) {
  // expected-error @+1 {{'fa.score_tile' op bias must be a rank-4 f16, bf16 or f32 tensor, got 'tensor<1x1x16x32xi1>'}}
  %s = fa.score_tile %qt, %kt at [%i, %i, %i, %i] of [%i, %i] bias(%bias : tensor<1x1x16x32xi1>) {scale = 0.5 : f32} : tensor<16x8xf32>, tensor<32x8xf32> -> tensor<16x32xf32>
  return
}

// -----

func.func @alibi_rank(%qt: tensor<16x8xf32>, %kt: tensor<32x8xf32>, %i: index, %slopes: tensor<2x4x1xf32>) {
  // expected-error @+1 {{'fa.score_tile' op alibi_slopes must be an f32 tensor of shape [Hq] or [B, Hq], got 'tensor<2x4x1xf32>'}}
  %s = fa.score_tile %qt, %kt at [%i, %i, %i, %i] of [%i, %i] alibi_slopes(%slopes : tensor<2x4x1xf32>) {scale = 0.5 : f32} : tensor<16x8xf32>, tensor<32x8xf32> -> tensor<16x32xf32>
  return
}

// -----

func.func @alibi_element_type(%qt: tensor<16x8xf32>, %kt: tensor<32x8xf32>, %i: index, %slopes: tensor<4xf16>) {
  // expected-error @+1 {{'fa.score_tile' op alibi_slopes must be an f32 tensor of shape [Hq] or [B, Hq], got 'tensor<4xf16>'}}
  %s = fa.score_tile %qt, %kt at [%i, %i, %i, %i] of [%i, %i] alibi_slopes(%slopes : tensor<4xf16>) {scale = 0.5 : f32} : tensor<16x8xf32>, tensor<32x8xf32> -> tensor<16x32xf32>
  return
}
