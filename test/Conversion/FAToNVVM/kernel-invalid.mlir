// RUN: fa-opt %s -convert-fa-to-nvvm -split-input-file -verify-diagnostics

func.func @f32(%q: tensor<1x1x8x64xf32>) -> tensor<1x1x8x64xf32> {
  // expected-error @+1 {{'fa.attention' op convert-fa-to-nvvm: element type must be f16 or bf16 on the GPU}}
  %o = fa.attention %q, %q, %q : tensor<1x1x8x64xf32>, tensor<1x1x8x64xf32>, tensor<1x1x8x64xf32> -> tensor<1x1x8x64xf32>
  return %o : tensor<1x1x8x64xf32>
}

// -----

func.func @d256(%q: tensor<1x1x8x256xbf16>) -> tensor<1x1x8x256xbf16> {
  // expected-error @+1 {{'fa.attention' op convert-fa-to-nvvm: head dims must be equal and one of 32, 64, 96, 128 on the GPU (got D = 256, Dv = 256)}}
  %o = fa.attention %q, %q, %q : tensor<1x1x8x256xbf16>, tensor<1x1x8x256xbf16>, tensor<1x1x8x256xbf16> -> tensor<1x1x8x256xbf16>
  return %o : tensor<1x1x8x256xbf16>
}

// -----

func.func @bias(%q: tensor<1x1x8x64xbf16>, %b: tensor<1x1x8x8xf32>) -> tensor<1x1x8x64xbf16> {
  // expected-error @+1 {{'fa.attention' op convert-fa-to-nvvm: bias, ALiBi, dropout, score_mod and mask_mod are not supported on the GPU yet}}
  %o = fa.attention %q, %q, %q bias(%b : tensor<1x1x8x8xf32>) : tensor<1x1x8x64xbf16>, tensor<1x1x8x64xbf16>, tensor<1x1x8x64xbf16> -> tensor<1x1x8x64xbf16>
  return %o : tensor<1x1x8x64xbf16>
}
