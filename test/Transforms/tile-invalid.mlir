// RUN: split-file --leading-lines %s %t
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
