// RUN: fa-opt %s -convert-fa-to-nvvm -split-input-file -verify-diagnostics

// The GPU backward does not read captures yet.
func.func @grad_captures(%q: tensor<1x1x8x64xbf16>, %lse: tensor<1x1x8xf32>, %doc: tensor<?xi32>) -> tensor<1x1x8x64xbf16> {
  // expected-error @+1 {{'fa.attention_grad' op convert-fa-to-nvvm: captures are not supported by the GPU backward yet}}
  %dq, %dk, %dv = fa.attention_grad %q, %q, %q, %q, %q, %lse captures(%doc : tensor<?xi32>) : tensor<1x1x8x64xbf16>, tensor<1x1x8x64xbf16>, tensor<1x1x8x64xbf16>, tensor<1x1x8x64xbf16>, tensor<1x1x8x64xbf16>, tensor<1x1x8xf32> -> tensor<1x1x8x64xbf16>, tensor<1x1x8x64xbf16>, tensor<1x1x8x64xbf16> mask_mod {
  ^bb0(%b: index, %h: index, %i: index, %j: index, %d: tensor<?xi32>):
    %di = tensor.extract %d[%i] : tensor<?xi32>
    %dj = tensor.extract %d[%j] : tensor<?xi32>
    %same = arith.cmpi eq, %di, %dj : i32
    fa.yield %same : i1
  }
  return %dq : tensor<1x1x8x64xbf16>
}

// -----

func.func @forward_captures(%q: tensor<1x1x8x64xbf16>, %doc: tensor<?xi32>) -> tensor<1x1x8x64xbf16> {
  // expected-error @+1 {{'fa.attention' op convert-fa-to-nvvm: captures are not supported on the GPU yet}}
  %o = fa.attention %q, %q, %q captures(%doc : tensor<?xi32>) : tensor<1x1x8x64xbf16>, tensor<1x1x8x64xbf16>, tensor<1x1x8x64xbf16> -> tensor<1x1x8x64xbf16> mask_mod {
  ^bb0(%b: index, %h: index, %i: index, %j: index, %d: tensor<?xi32>):
    %di = tensor.extract %d[%i] : tensor<?xi32>
    %dj = tensor.extract %d[%j] : tensor<?xi32>
    %same = arith.cmpi eq, %di, %dj : i32
    fa.yield %same : i1
  }
  return %o : tensor<1x1x8x64xbf16>
}
