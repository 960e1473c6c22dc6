// RUN: fa-opt %s -convert-fa-to-nvvm="chip=sm_90a bwd-atomic-dq=true" -verify-diagnostics

// Atomic dQ splits each dK/dV warp's share of dQ in ldmatrix pairs of 16
// columns: at D = 80 (4 warps, Q tiles of 32 rows: 40 columns each) asking
// for it is an error; by default that D takes the dq kernel.

func.func @d80(%q: tensor<1x1x8x80xbf16>, %lse: tensor<1x1x8xf32>) -> tensor<1x1x8x80xbf16> {
  // expected-error @+1 {{'fa.attention_grad' op convert-fa-to-nvvm: bwd-atomic-dq does not fit D = 80 (each dK/dV warp's dQ columns, D x Q-tile rows / 16 / warps, must be a multiple of 16); its dq kernel computes dQ}}
  %dq, %dk, %dv = fa.attention_grad %q, %q, %q, %q, %q, %lse : tensor<1x1x8x80xbf16>, tensor<1x1x8x80xbf16>, tensor<1x1x8x80xbf16>, tensor<1x1x8x80xbf16>, tensor<1x1x8x80xbf16>, tensor<1x1x8xf32> -> tensor<1x1x8x80xbf16>, tensor<1x1x8x80xbf16>, tensor<1x1x8x80xbf16>
  return %dq : tensor<1x1x8x80xbf16>
}
