// RUN: fa-opt %s -convert-fa-to-nvvm="chip=sm_90a bwd-atomic-dq=true bwd-deterministic=true" -verify-diagnostics

// Atomic dQ and the deterministic dq kernel are the two ways to compute dQ:
// asking for both is an error, not a silent pick.

func.func @both(%q: tensor<1x1x8x64xbf16>, %lse: tensor<1x1x8xf32>) -> tensor<1x1x8x64xbf16> {
  // expected-error @+1 {{'fa.attention_grad' op convert-fa-to-nvvm: bwd-atomic-dq and bwd-deterministic exclude each other}}
  %dq, %dk, %dv = fa.attention_grad %q, %q, %q, %q, %q, %lse : tensor<1x1x8x64xbf16>, tensor<1x1x8x64xbf16>, tensor<1x1x8x64xbf16>, tensor<1x1x8x64xbf16>, tensor<1x1x8x64xbf16>, tensor<1x1x8xf32> -> tensor<1x1x8x64xbf16>, tensor<1x1x8x64xbf16>, tensor<1x1x8x64xbf16>
  return %dq : tensor<1x1x8x64xbf16>
}
