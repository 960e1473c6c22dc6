// RUN: fa-opt %s -convert-fa-to-nvvm="chip=sm_90a bwd-dkdv-warps=8" -split-input-file -verify-diagnostics
// RUN: not fa-opt %s -convert-fa-to-nvvm="chip=sm_90a bwd-dkdv-warps=6" -split-input-file 2>&1 | FileCheck %s --check-prefix=SIX

// bwd-dkdv-warps takes 0 (the default), 4 or 8, and 8 only where the dK/dV
// kernel's Q tile (and atomic dQ's columns) split evenly over 8 warps: never
// a kernel that would copy part of a tile or lose columns of dQ.

// SIX: error: 'fa.attention_grad' op convert-fa-to-nvvm: bwd-dkdv-warps must be 0, 4 or 8 (got 6)
// SIX: error: 'fa.attention_grad' op convert-fa-to-nvvm: bwd-dkdv-warps must be 0, 4 or 8 (got 6)
// SIX: error: 'fa.attention_grad' op convert-fa-to-nvvm: bwd-dkdv-warps must be 0, 4 or 8 (got 6)

// D = 96: Q tiles of 32 rows, 384 chunks of 16 bytes.
func.func @d96(%q: tensor<1x1x8x96xbf16>, %lse: tensor<1x1x8xf32>) -> tensor<1x1x8x96xbf16> {
  // expected-error @+1 {{'fa.attention_grad' op convert-fa-to-nvvm: bwd-dkdv-warps=8 does not fit D = 96 with a dK/dV Q tile of 32 rows (it takes D <= 128, Q tile rows x D a multiple of 2048 and, with atomic dQ, 16 columns or a multiple per warp)}}
  %dq, %dk, %dv = fa.attention_grad %q, %q, %q, %q, %q, %lse : tensor<1x1x8x96xbf16>, tensor<1x1x8x96xbf16>, tensor<1x1x8x96xbf16>, tensor<1x1x8x96xbf16>, tensor<1x1x8x96xbf16>, tensor<1x1x8xf32> -> tensor<1x1x8x96xbf16>, tensor<1x1x8x96xbf16>, tensor<1x1x8x96xbf16>
  return %dq : tensor<1x1x8x96xbf16>
}

// -----

// D = 256: two passes of 128 columns.
func.func @d256(%q: tensor<1x1x8x256xf16>, %lse: tensor<1x1x8xf32>) -> tensor<1x1x8x256xf16> {
  // expected-error @+1 {{'fa.attention_grad' op convert-fa-to-nvvm: bwd-dkdv-warps=8 does not fit D = 256 with a dK/dV Q tile of 16 rows (it takes D <= 128, Q tile rows x D a multiple of 2048 and, with atomic dQ, 16 columns or a multiple per warp)}}
  %dq, %dk, %dv = fa.attention_grad %q, %q, %q, %q, %q, %lse : tensor<1x1x8x256xf16>, tensor<1x1x8x256xf16>, tensor<1x1x8x256xf16>, tensor<1x1x8x256xf16>, tensor<1x1x8x256xf16>, tensor<1x1x8xf32> -> tensor<1x1x8x256xf16>, tensor<1x1x8x256xf16>, tensor<1x1x8x256xf16>
  return %dq : tensor<1x1x8x256xf16>
}

// -----

// D = 32 on the scored path (ALiBi): Q tiles of 32 rows, 128 chunks.
func.func @d32_alibi(%q: tensor<1x2x8x32xbf16>, %lse: tensor<1x2x8xf32>, %slopes: tensor<2xf32>) -> tensor<1x2x8x32xbf16> {
  // expected-error @+1 {{'fa.attention_grad' op convert-fa-to-nvvm: bwd-dkdv-warps=8 does not fit D = 32 with a dK/dV Q tile of 32 rows (it takes D <= 128, Q tile rows x D a multiple of 2048 and, with atomic dQ, 16 columns or a multiple per warp)}}
  %dq, %dk, %dv = fa.attention_grad %q, %q, %q, %q, %q, %lse alibi_slopes(%slopes : tensor<2xf32>) : tensor<1x2x8x32xbf16>, tensor<1x2x8x32xbf16>, tensor<1x2x8x32xbf16>, tensor<1x2x8x32xbf16>, tensor<1x2x8x32xbf16>, tensor<1x2x8xf32> -> tensor<1x2x8x32xbf16>, tensor<1x2x8x32xbf16>, tensor<1x2x8x32xbf16>
  return %dq : tensor<1x2x8x32xbf16>
}
