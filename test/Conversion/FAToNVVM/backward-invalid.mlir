// RUN: fa-opt %s -convert-fa-to-nvvm -split-input-file -verify-diagnostics

// The backward kernels support what the forward does (but dropout); anything
// else is an error on the op, never a kernel.

func.func @f32(%q: tensor<1x1x8x64xf32>, %lse: tensor<1x1x8xf32>) -> tensor<1x1x8x64xf32> {
  // expected-error @+1 {{'fa.attention_grad' op convert-fa-to-nvvm: element type must be f16 or bf16 on the GPU}}
  %dq, %dk, %dv = fa.attention_grad %q, %q, %q, %q, %q, %lse : tensor<1x1x8x64xf32>, tensor<1x1x8x64xf32>, tensor<1x1x8x64xf32>, tensor<1x1x8x64xf32>, tensor<1x1x8x64xf32>, tensor<1x1x8xf32> -> tensor<1x1x8x64xf32>, tensor<1x1x8x64xf32>, tensor<1x1x8x64xf32>
  return %dq : tensor<1x1x8x64xf32>
}

// -----

func.func @d48(%q: tensor<1x1x8x48xbf16>, %lse: tensor<1x1x8xf32>) -> tensor<1x1x8x48xbf16> {
  // expected-error @+1 {{'fa.attention_grad' op convert-fa-to-nvvm: head dims must each be one of 32, 64, 80, 96, 128, 192, 256, with Dv <= D, on the GPU (got D = 48, Dv = 48)}}
  %dq, %dk, %dv = fa.attention_grad %q, %q, %q, %q, %q, %lse : tensor<1x1x8x48xbf16>, tensor<1x1x8x48xbf16>, tensor<1x1x8x48xbf16>, tensor<1x1x8x48xbf16>, tensor<1x1x8x48xbf16>, tensor<1x1x8xf32> -> tensor<1x1x8x48xbf16>, tensor<1x1x8x48xbf16>, tensor<1x1x8x48xbf16>
  return %dq : tensor<1x1x8x48xbf16>
}

// -----

func.func @dv(%q: tensor<1x1x8x64xf16>, %v: tensor<1x1x8x128xf16>, %o: tensor<1x1x8x128xf16>, %lse: tensor<1x1x8xf32>) -> tensor<1x1x8x64xf16> {
  // expected-error @+1 {{'fa.attention_grad' op convert-fa-to-nvvm: head dims must each be one of 32, 64, 80, 96, 128, 192, 256, with Dv <= D, on the GPU (got D = 64, Dv = 128)}}
  %dq, %dk, %dv = fa.attention_grad %q, %q, %v, %o, %o, %lse : tensor<1x1x8x64xf16>, tensor<1x1x8x64xf16>, tensor<1x1x8x128xf16>, tensor<1x1x8x128xf16>, tensor<1x1x8x128xf16>, tensor<1x1x8xf32> -> tensor<1x1x8x64xf16>, tensor<1x1x8x64xf16>, tensor<1x1x8x128xf16>
  return %dq : tensor<1x1x8x64xf16>
}

// -----

// convert-fa-to-nvvm inlines score_mod's derivative; fa-pipeline-cuda runs
// fa-differentiate-score-mod first.
func.func @score_mod_without_grad(%q: tensor<1x1x8x64xbf16>, %lse: tensor<1x1x8xf32>) -> tensor<1x1x8x64xbf16> {
  // expected-error @+1 {{'fa.attention_grad' op convert-fa-to-nvvm: score_mod has no score_mod_grad region; run fa-differentiate-score-mod first}}
  %dq, %dk, %dv = fa.attention_grad %q, %q, %q, %q, %q, %lse : tensor<1x1x8x64xbf16>, tensor<1x1x8x64xbf16>, tensor<1x1x8x64xbf16>, tensor<1x1x8x64xbf16>, tensor<1x1x8x64xbf16>, tensor<1x1x8xf32> -> tensor<1x1x8x64xbf16>, tensor<1x1x8x64xbf16>, tensor<1x1x8x64xbf16> score_mod {
  ^bb0(%s: f32, %b: index, %h: index, %i: index, %j: index):
    %half = arith.constant 5.000000e-01 : f32
    %r = arith.mulf %s, %half : f32
    fa.yield %r : f32
  }
  return %dq : tensor<1x1x8x64xbf16>
}

// -----

// The regions' ops must be ones the kernels can inline, the derivative's
// too.
func.func @score_mod_grad_op(%q: tensor<1x1x8x64xbf16>, %lse: tensor<1x1x8xf32>) -> tensor<1x1x8x64xbf16> {
  // expected-error @+1 {{'fa.attention_grad' op convert-fa-to-nvvm: score_mod_grad op 'math.atan' is not supported on the GPU (arith and f32 math.tanh, exp, exp2, log, log2, sin, cos, sqrt, rsqrt, absf, fma, floor, ceil are)}}
  %dq, %dk, %dv = fa.attention_grad %q, %q, %q, %q, %q, %lse : tensor<1x1x8x64xbf16>, tensor<1x1x8x64xbf16>, tensor<1x1x8x64xbf16>, tensor<1x1x8x64xbf16>, tensor<1x1x8x64xbf16>, tensor<1x1x8xf32> -> tensor<1x1x8x64xbf16>, tensor<1x1x8x64xbf16>, tensor<1x1x8x64xbf16> score_mod {
  ^bb0(%s: f32, %b: index, %h: index, %i: index, %j: index):
    %half = arith.constant 5.000000e-01 : f32
    %r = arith.mulf %s, %half : f32
    fa.yield %r : f32
  } score_mod_grad {
  ^bb0(%s: f32, %b: index, %h: index, %i: index, %j: index):
    %a = math.atan %s : f32
    fa.yield %a : f32
  }
  return %dq : tensor<1x1x8x64xbf16>
}

// -----

func.func @mask_mod_op(%q: tensor<1x1x8x64xf16>, %lse: tensor<1x1x8xf32>) -> tensor<1x1x8x64xf16> {
  // expected-error @+1 {{'fa.attention_grad' op convert-fa-to-nvvm: mask_mod op 'arith.ceildivui' is not supported on the GPU (arith and f32 math.tanh, exp, exp2, log, log2, sin, cos, sqrt, rsqrt, absf, fma, floor, ceil are)}}
  %dq, %dk, %dv = fa.attention_grad %q, %q, %q, %q, %q, %lse : tensor<1x1x8x64xf16>, tensor<1x1x8x64xf16>, tensor<1x1x8x64xf16>, tensor<1x1x8x64xf16>, tensor<1x1x8x64xf16>, tensor<1x1x8xf32> -> tensor<1x1x8x64xf16>, tensor<1x1x8x64xf16>, tensor<1x1x8x64xf16> mask_mod {
  ^bb0(%b: index, %h: index, %i: index, %j: index):
    %c = arith.constant 16 : index
    %d = arith.ceildivui %i, %c : index
    %keep = arith.cmpi ule, %d, %j : index
    fa.yield %keep : i1
  }
  return %dq : tensor<1x1x8x64xf16>
}
