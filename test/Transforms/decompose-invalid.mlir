// RUN: fa-opt %s -fa-decompose -split-input-file -verify-diagnostics

func.func @dropout(%q: tensor<1x1x8x4xf32>, %seed: i64) -> tensor<1x1x8x4xf32> {
  // expected-error @+1 {{'fa.attention' op dropout is not supported by fa-decompose (the reference has no Philox stream yet)}}
  %o = fa.attention %q, %q, %q dropout_seed(%seed) {dropout_p = 0.1 : f32} : tensor<1x1x8x4xf32>, tensor<1x1x8x4xf32>, tensor<1x1x8x4xf32> -> tensor<1x1x8x4xf32>
  return %o : tensor<1x1x8x4xf32>
}
