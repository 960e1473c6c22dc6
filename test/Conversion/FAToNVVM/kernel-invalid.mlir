// RUN: fa-opt %s -fa-fuse -fa-tile -fa-online-softmax -fa-async-copy -convert-fa-to-nvvm -split-input-file -verify-diagnostics

func.func @f32(%q: tensor<1x1x8x64xf32>) -> tensor<1x1x8x64xf32> {
  // expected-error @+1 {{'fa.attention' op convert-fa-to-nvvm: element type must be f16 or bf16 on the GPU}}
  %o = fa.attention %q, %q, %q : tensor<1x1x8x64xf32>, tensor<1x1x8x64xf32>, tensor<1x1x8x64xf32> -> tensor<1x1x8x64xf32>
  return %o : tensor<1x1x8x64xf32>
}

// -----

func.func @d48(%q: tensor<1x1x8x48xbf16>) -> tensor<1x1x8x48xbf16> {
  // expected-error @+1 {{'fa.attention' op convert-fa-to-nvvm: head dims must each be one of 32, 64, 80, 96, 128, 192, 256 on the GPU (got D = 48, Dv = 48)}}
  %o = fa.attention %q, %q, %q : tensor<1x1x8x48xbf16>, tensor<1x1x8x48xbf16>, tensor<1x1x8x48xbf16> -> tensor<1x1x8x48xbf16>
  return %o : tensor<1x1x8x48xbf16>
}

// -----

// Dk and Dv may differ, but each must be a supported head dim.
func.func @dv(%q: tensor<1x1x8x64xbf16>, %v: tensor<1x1x8x40xbf16>) -> tensor<1x1x8x40xbf16> {
  // expected-error @+1 {{'fa.attention' op convert-fa-to-nvvm: head dims must each be one of 32, 64, 80, 96, 128, 192, 256 on the GPU (got D = 64, Dv = 40)}}
  %o = fa.attention %q, %q, %v : tensor<1x1x8x64xbf16>, tensor<1x1x8x64xbf16>, tensor<1x1x8x40xbf16> -> tensor<1x1x8x40xbf16>
  return %o : tensor<1x1x8x40xbf16>
}

// -----

// The regions are inlined: math ops without a PTX instruction are refused.
func.func @atan(%q: tensor<1x1x8x64xbf16>) -> tensor<1x1x8x64xbf16> {
  // expected-error @+1 {{'fa.attention' op convert-fa-to-nvvm: score_mod op 'math.atan' is not supported on the GPU (arith and f32 math.tanh, exp, exp2, log, log2, sin, cos, sqrt, rsqrt, absf, fma, floor, ceil are)}}
  %o = fa.attention %q, %q, %q : tensor<1x1x8x64xbf16>, tensor<1x1x8x64xbf16>, tensor<1x1x8x64xbf16> -> tensor<1x1x8x64xbf16> score_mod {
  ^bb0(%s: f32, %b: index, %h: index, %i: index, %j: index):
    %t = math.atan %s : f32
    fa.yield %t : f32
  }
  return %o : tensor<1x1x8x64xbf16>
}

// -----

func.func @ceildiv(%q: tensor<1x1x8x64xbf16>) -> tensor<1x1x8x64xbf16> {
  // expected-error @+1 {{'fa.attention' op convert-fa-to-nvvm: mask_mod op 'arith.ceildivui' is not supported on the GPU}}
  %o = fa.attention %q, %q, %q : tensor<1x1x8x64xbf16>, tensor<1x1x8x64xbf16>, tensor<1x1x8x64xbf16> -> tensor<1x1x8x64xbf16> mask_mod {
  ^bb0(%b: index, %h: index, %i: index, %j: index):
    %c4 = arith.constant 4 : index
    %d = arith.ceildivui %i, %c4 : index
    %keep = arith.cmpi ule, %d, %j : index
    fa.yield %keep : i1
  }
  return %o : tensor<1x1x8x64xbf16>
}
