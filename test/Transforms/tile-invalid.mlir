// RUN: split-file --leading-lines %s %t
// RUN: fa-opt %t/dropout.mlir -fa-tile="block-q=32 block-kv=16" -split-input-file -verify-diagnostics
// RUN: fa-opt %t/block-q.mlir -fa-tile="block-q=0 block-kv=16" -verify-diagnostics
// RUN: fa-opt %t/block-kv.mlir -fa-tile="block-q=32 block-kv=-4" -verify-diagnostics

// fa-tile's errors. Block sizes are checked before anything else, on the op
// the pass runs on (here the top-level module, written out so that the
// diagnostic has a line to point to).

//--- block-q.mlir

// expected-error @below {{fa-tile: block-q and block-kv must be positive, got 0 and 16}}
module {
  func.func @block_q_zero(%q: tensor<1x1x8x4xf32>) -> tensor<1x1x8x4xf32> {
    %o = fa.attention %q, %q, %q : tensor<1x1x8x4xf32>, tensor<1x1x8x4xf32>, tensor<1x1x8x4xf32> -> tensor<1x1x8x4xf32>
    return %o : tensor<1x1x8x4xf32>
  }
}

//--- block-kv.mlir

// expected-error @below {{fa-tile: block-q and block-kv must be positive, got 32 and -4}}
module {
  func.func @block_kv_negative(%q: tensor<1x1x8x4xf32>) -> tensor<1x1x8x4xf32> {
    %o = fa.attention %q, %q, %q : tensor<1x1x8x4xf32>, tensor<1x1x8x4xf32>, tensor<1x1x8x4xf32> -> tensor<1x1x8x4xf32>
    return %o : tensor<1x1x8x4xf32>
  }
}

//--- dropout.mlir

// Dropout has no Philox stream in the tiled form yet.
func.func @dropout(%q: tensor<1x1x8x4xf32>, %seed: i64) -> tensor<1x1x8x4xf32> {
  // expected-error @+1 {{'fa.attention' op dropout is not supported by fa-tile yet}}
  %o = fa.attention %q, %q, %q dropout_seed(%seed) {dropout_p = 0.1 : f32} : tensor<1x1x8x4xf32>, tensor<1x1x8x4xf32>, tensor<1x1x8x4xf32> -> tensor<1x1x8x4xf32>
  return %o : tensor<1x1x8x4xf32>
}

// -----

// dropout_p = 0 is still dropout: rejected, not silently dropped.
func.func @dropout_zero(%q: tensor<1x1x8x4xf32>, %seed: i64) -> tensor<1x1x8x4xf32> {
  // expected-error @+1 {{'fa.attention' op dropout is not supported by fa-tile yet}}
  %o = fa.attention %q, %q, %q dropout_seed(%seed) {dropout_p = 0.0 : f32} : tensor<1x1x8x4xf32>, tensor<1x1x8x4xf32>, tensor<1x1x8x4xf32> -> tensor<1x1x8x4xf32>
  return %o : tensor<1x1x8x4xf32>
}
