// RUN: fa-opt %s | fa-opt | FileCheck %s
// RUN: fa-opt %s -mlir-print-op-generic | fa-opt | FileCheck %s

// Round trip of fa.attention, fa.attention_grad and fa.score_tile in the
// custom form, and through the generic form. Result names (%output, %lse,
// %grad_*) come from the ODS result names (fa.score_tile's `result` prints
// as a number); attributes print sorted by name.

//===----------------------------------------------------------------------===//
// fa.attention
//===----------------------------------------------------------------------===//

// Plain multi-head attention, static shapes, f16.
// CHECK-LABEL: func.func @mha_static(
// CHECK: %output = fa.attention %arg0, %arg1, %arg2 : tensor<2x8x128x64xf16>, tensor<2x8x128x64xf16>, tensor<2x8x128x64xf16> -> tensor<2x8x128x64xf16>
// CHECK-NEXT: return %output : tensor<2x8x128x64xf16>
func.func @mha_static(%q: tensor<2x8x128x64xf16>, %k: tensor<2x8x128x64xf16>, %v: tensor<2x8x128x64xf16>) -> tensor<2x8x128x64xf16> {
  %o = fa.attention %q, %k, %v : tensor<2x8x128x64xf16>, tensor<2x8x128x64xf16>, tensor<2x8x128x64xf16> -> tensor<2x8x128x64xf16>
  return %o : tensor<2x8x128x64xf16>
}

// Dynamic batch and sequence lengths, bf16.
// CHECK-LABEL: func.func @dynamic_batch_seq(
// CHECK: %output = fa.attention %arg0, %arg1, %arg2 : tensor<?x8x?x64xbf16>, tensor<?x8x?x64xbf16>, tensor<?x8x?x64xbf16> -> tensor<?x8x?x64xbf16>
// CHECK-NEXT: return %output : tensor<?x8x?x64xbf16>
func.func @dynamic_batch_seq(%q: tensor<?x8x?x64xbf16>, %k: tensor<?x8x?x64xbf16>, %v: tensor<?x8x?x64xbf16>) -> tensor<?x8x?x64xbf16> {
  %o = fa.attention %q, %k, %v : tensor<?x8x?x64xbf16>, tensor<?x8x?x64xbf16>, tensor<?x8x?x64xbf16> -> tensor<?x8x?x64xbf16>
  return %o : tensor<?x8x?x64xbf16>
}

// Dynamic head counts too: only D and Dv must be static.
// CHECK-LABEL: func.func @dynamic_heads(
// CHECK: %output = fa.attention %arg0, %arg1, %arg2 : tensor<?x?x?x128xf16>, tensor<?x?x?x128xf16>, tensor<?x?x?x128xf16> -> tensor<?x?x?x128xf16>
// CHECK-NEXT: return %output : tensor<?x?x?x128xf16>
func.func @dynamic_heads(%q: tensor<?x?x?x128xf16>, %k: tensor<?x?x?x128xf16>, %v: tensor<?x?x?x128xf16>) -> tensor<?x?x?x128xf16> {
  %o = fa.attention %q, %k, %v : tensor<?x?x?x128xf16>, tensor<?x?x?x128xf16>, tensor<?x?x?x128xf16> -> tensor<?x?x?x128xf16>
  return %o : tensor<?x?x?x128xf16>
}

// Nq != Nk; a static result is compatible with dynamic inputs.
// CHECK-LABEL: func.func @cross_attention(
// CHECK: %output = fa.attention %arg0, %arg1, %arg2 : tensor<?x4x?x64xf16>, tensor<2x4x?x64xf16>, tensor<?x4x512x64xf16> -> tensor<2x4x100x64xf16>
// CHECK-NEXT: return %output : tensor<2x4x100x64xf16>
func.func @cross_attention(%q: tensor<?x4x?x64xf16>, %k: tensor<2x4x?x64xf16>, %v: tensor<?x4x512x64xf16>) -> tensor<2x4x100x64xf16> {
  %o = fa.attention %q, %k, %v : tensor<?x4x?x64xf16>, tensor<2x4x?x64xf16>, tensor<?x4x512x64xf16> -> tensor<2x4x100x64xf16>
  return %o : tensor<2x4x100x64xf16>
}

// Grouped-query attention (8 query heads over 2 key/value heads) with lse.
// CHECK-LABEL: func.func @gqa_lse(
// CHECK: %output, %lse = fa.attention %arg0, %arg1, %arg2 : tensor<?x8x?x64xbf16>, tensor<?x2x?x64xbf16>, tensor<?x2x?x64xbf16> -> tensor<?x8x?x64xbf16>, tensor<?x8x?xf32>
// CHECK-NEXT: return %output, %lse : tensor<?x8x?x64xbf16>, tensor<?x8x?xf32>
func.func @gqa_lse(%q: tensor<?x8x?x64xbf16>, %k: tensor<?x2x?x64xbf16>, %v: tensor<?x2x?x64xbf16>) -> (tensor<?x8x?x64xbf16>, tensor<?x8x?xf32>) {
  %o, %lse = fa.attention %q, %k, %v : tensor<?x8x?x64xbf16>, tensor<?x2x?x64xbf16>, tensor<?x2x?x64xbf16> -> tensor<?x8x?x64xbf16>, tensor<?x8x?xf32>
  return %o, %lse : tensor<?x8x?x64xbf16>, tensor<?x8x?xf32>
}

// Multi-query attention (one key/value head), f32, Dv != D.
// CHECK-LABEL: func.func @mqa_f32(
// CHECK: %output, %lse = fa.attention %arg0, %arg1, %arg2 : tensor<2x16x128x128xf32>, tensor<2x1x256x128xf32>, tensor<2x1x256x64xf32> -> tensor<2x16x128x64xf32>, tensor<2x16x128xf32>
// CHECK-NEXT: return %output, %lse : tensor<2x16x128x64xf32>, tensor<2x16x128xf32>
func.func @mqa_f32(%q: tensor<2x16x128x128xf32>, %k: tensor<2x1x256x128xf32>, %v: tensor<2x1x256x64xf32>) -> (tensor<2x16x128x64xf32>, tensor<2x16x128xf32>) {
  %o, %lse = fa.attention %q, %k, %v : tensor<2x16x128x128xf32>, tensor<2x1x256x128xf32>, tensor<2x1x256x64xf32> -> tensor<2x16x128x64xf32>, tensor<2x16x128xf32>
  return %o, %lse : tensor<2x16x128x64xf32>, tensor<2x16x128xf32>
}

// CHECK-LABEL: func.func @scale(
// CHECK: %output = fa.attention %arg0, %arg1, %arg2 {scale = 1.250000e-01 : f32} : tensor<1x4x64x96xf16>, tensor<1x4x64x96xf16>, tensor<1x4x64x96xf16> -> tensor<1x4x64x96xf16>
// CHECK-NEXT: return %output : tensor<1x4x64x96xf16>
func.func @scale(%q: tensor<1x4x64x96xf16>, %k: tensor<1x4x64x96xf16>, %v: tensor<1x4x64x96xf16>) -> tensor<1x4x64x96xf16> {
  %o = fa.attention %q, %k, %v {scale = 0.125 : f32} : tensor<1x4x64x96xf16>, tensor<1x4x64x96xf16>, tensor<1x4x64x96xf16> -> tensor<1x4x64x96xf16>
  return %o : tensor<1x4x64x96xf16>
}

// CHECK-LABEL: func.func @causal_top_left(
// CHECK: %output = fa.attention %arg0, %arg1, %arg2 {causal = #fa.causal<top_left>} : tensor<?x8x?x64xbf16>, tensor<?x8x?x64xbf16>, tensor<?x8x?x64xbf16> -> tensor<?x8x?x64xbf16>
// CHECK-NEXT: return %output : tensor<?x8x?x64xbf16>
func.func @causal_top_left(%q: tensor<?x8x?x64xbf16>, %k: tensor<?x8x?x64xbf16>, %v: tensor<?x8x?x64xbf16>) -> tensor<?x8x?x64xbf16> {
  %o = fa.attention %q, %k, %v {causal = #fa.causal<top_left>} : tensor<?x8x?x64xbf16>, tensor<?x8x?x64xbf16>, tensor<?x8x?x64xbf16> -> tensor<?x8x?x64xbf16>
  return %o : tensor<?x8x?x64xbf16>
}

// CHECK-LABEL: func.func @causal_bottom_right(
// CHECK: %output, %lse = fa.attention %arg0, %arg1, %arg2 {causal = #fa.causal<bottom_right>} : tensor<?x8x?x64xbf16>, tensor<?x2x?x64xbf16>, tensor<?x2x?x64xbf16> -> tensor<?x8x?x64xbf16>, tensor<?x8x?xf32>
// CHECK-NEXT: return %output, %lse : tensor<?x8x?x64xbf16>, tensor<?x8x?xf32>
func.func @causal_bottom_right(%q: tensor<?x8x?x64xbf16>, %k: tensor<?x2x?x64xbf16>, %v: tensor<?x2x?x64xbf16>) -> (tensor<?x8x?x64xbf16>, tensor<?x8x?xf32>) {
  %o, %lse = fa.attention %q, %k, %v {causal = #fa.causal<bottom_right>} : tensor<?x8x?x64xbf16>, tensor<?x2x?x64xbf16>, tensor<?x2x?x64xbf16> -> tensor<?x8x?x64xbf16>, tensor<?x8x?xf32>
  return %o, %lse : tensor<?x8x?x64xbf16>, tensor<?x8x?xf32>
}

// Sliding window (local) attention: 256 keys to the left, none to the right.
// CHECK-LABEL: func.func @window(
// CHECK: %output = fa.attention %arg0, %arg1, %arg2 {window = array<i64: 256, 0>} : tensor<1x8x1024x64xf16>, tensor<1x8x1024x64xf16>, tensor<1x8x1024x64xf16> -> tensor<1x8x1024x64xf16>
// CHECK-NEXT: return %output : tensor<1x8x1024x64xf16>
func.func @window(%q: tensor<1x8x1024x64xf16>, %k: tensor<1x8x1024x64xf16>, %v: tensor<1x8x1024x64xf16>) -> tensor<1x8x1024x64xf16> {
  %o = fa.attention %q, %k, %v {window = array<i64: 256, 0>} : tensor<1x8x1024x64xf16>, tensor<1x8x1024x64xf16>, tensor<1x8x1024x64xf16> -> tensor<1x8x1024x64xf16>
  return %o : tensor<1x8x1024x64xf16>
}

// Window and causal together; zero-sized windows are valid.
// CHECK-LABEL: func.func @window_zero_causal(
// CHECK: %output = fa.attention %arg0, %arg1, %arg2 {causal = #fa.causal<top_left>, window = array<i64: 0, 0>} : tensor<1x8x128x64xf16>, tensor<1x8x128x64xf16>, tensor<1x8x128x64xf16> -> tensor<1x8x128x64xf16>
// CHECK-NEXT: return %output : tensor<1x8x128x64xf16>
func.func @window_zero_causal(%q: tensor<1x8x128x64xf16>, %k: tensor<1x8x128x64xf16>, %v: tensor<1x8x128x64xf16>) -> tensor<1x8x128x64xf16> {
  %o = fa.attention %q, %k, %v {causal = #fa.causal<top_left>, window = array<i64: 0, 0>} : tensor<1x8x128x64xf16>, tensor<1x8x128x64xf16>, tensor<1x8x128x64xf16> -> tensor<1x8x128x64xf16>
  return %o : tensor<1x8x128x64xf16>
}

// CHECK-LABEL: func.func @softcap(
// CHECK: %output = fa.attention %arg0, %arg1, %arg2 {softcap = 5.000000e+01 : f32} : tensor<?x16x?x256xbf16>, tensor<?x8x?x256xbf16>, tensor<?x8x?x256xbf16> -> tensor<?x16x?x256xbf16>
// CHECK-NEXT: return %output : tensor<?x16x?x256xbf16>
func.func @softcap(%q: tensor<?x16x?x256xbf16>, %k: tensor<?x8x?x256xbf16>, %v: tensor<?x8x?x256xbf16>) -> tensor<?x16x?x256xbf16> {
  %o = fa.attention %q, %k, %v {softcap = 50.0 : f32} : tensor<?x16x?x256xbf16>, tensor<?x8x?x256xbf16>, tensor<?x8x?x256xbf16> -> tensor<?x16x?x256xbf16>
  return %o : tensor<?x16x?x256xbf16>
}

// Bias of the full shape [B, Hq, Nq, Nk].
// CHECK-LABEL: func.func @bias_full(
// CHECK: %output = fa.attention %arg0, %arg1, %arg2 bias(%arg3 : tensor<2x8x128x256xf16>) : tensor<2x8x128x64xf16>, tensor<2x2x256x64xf16>, tensor<2x2x256x64xf16> -> tensor<2x8x128x64xf16>
// CHECK-NEXT: return %output : tensor<2x8x128x64xf16>
func.func @bias_full(%q: tensor<2x8x128x64xf16>, %k: tensor<2x2x256x64xf16>, %v: tensor<2x2x256x64xf16>, %bias: tensor<2x8x128x256xf16>) -> tensor<2x8x128x64xf16> {
  %o = fa.attention %q, %k, %v bias(%bias : tensor<2x8x128x256xf16>) : tensor<2x8x128x64xf16>, tensor<2x2x256x64xf16>, tensor<2x2x256x64xf16> -> tensor<2x8x128x64xf16>
  return %o : tensor<2x8x128x64xf16>
}

// Bias broadcast over B, Hq and Nq (a key padding mask), in f32.
// CHECK-LABEL: func.func @bias_broadcast(
// CHECK: %output = fa.attention %arg0, %arg1, %arg2 bias(%arg3 : tensor<1x1x1x256xf32>) : tensor<2x8x128x64xbf16>, tensor<2x8x256x64xbf16>, tensor<2x8x256x64xbf16> -> tensor<2x8x128x64xbf16>
// CHECK-NEXT: return %output : tensor<2x8x128x64xbf16>
func.func @bias_broadcast(%q: tensor<2x8x128x64xbf16>, %k: tensor<2x8x256x64xbf16>, %v: tensor<2x8x256x64xbf16>, %bias: tensor<1x1x1x256xf32>) -> tensor<2x8x128x64xbf16> {
  %o = fa.attention %q, %k, %v bias(%bias : tensor<1x1x1x256xf32>) : tensor<2x8x128x64xbf16>, tensor<2x8x256x64xbf16>, tensor<2x8x256x64xbf16> -> tensor<2x8x128x64xbf16>
  return %o : tensor<2x8x128x64xbf16>
}

// Per-head bias [1, Hq, Nq, Nk] with dynamic sequence lengths.
// CHECK-LABEL: func.func @bias_per_head_dynamic(
// CHECK: %output = fa.attention %arg0, %arg1, %arg2 bias(%arg3 : tensor<1x8x?x?xbf16>) : tensor<?x8x?x64xbf16>, tensor<?x8x?x64xbf16>, tensor<?x8x?x64xbf16> -> tensor<?x8x?x64xbf16>
// CHECK-NEXT: return %output : tensor<?x8x?x64xbf16>
func.func @bias_per_head_dynamic(%q: tensor<?x8x?x64xbf16>, %k: tensor<?x8x?x64xbf16>, %v: tensor<?x8x?x64xbf16>, %bias: tensor<1x8x?x?xbf16>) -> tensor<?x8x?x64xbf16> {
  %o = fa.attention %q, %k, %v bias(%bias : tensor<1x8x?x?xbf16>) : tensor<?x8x?x64xbf16>, tensor<?x8x?x64xbf16>, tensor<?x8x?x64xbf16> -> tensor<?x8x?x64xbf16>
  return %o : tensor<?x8x?x64xbf16>
}

// ALiBi slopes per query head, [Hq].
// CHECK-LABEL: func.func @alibi_heads(
// CHECK: %output = fa.attention %arg0, %arg1, %arg2 alibi_slopes(%arg3 : tensor<8xf32>) {causal = #fa.causal<bottom_right>} : tensor<?x8x?x64xf16>, tensor<?x2x?x64xf16>, tensor<?x2x?x64xf16> -> tensor<?x8x?x64xf16>
// CHECK-NEXT: return %output : tensor<?x8x?x64xf16>
func.func @alibi_heads(%q: tensor<?x8x?x64xf16>, %k: tensor<?x2x?x64xf16>, %v: tensor<?x2x?x64xf16>, %slopes: tensor<8xf32>) -> tensor<?x8x?x64xf16> {
  %o = fa.attention %q, %k, %v alibi_slopes(%slopes : tensor<8xf32>) {causal = #fa.causal<bottom_right>} : tensor<?x8x?x64xf16>, tensor<?x2x?x64xf16>, tensor<?x2x?x64xf16> -> tensor<?x8x?x64xf16>
  return %o : tensor<?x8x?x64xf16>
}

// ALiBi slopes per batch and query head, [B, Hq].
// CHECK-LABEL: func.func @alibi_batch_heads(
// CHECK: %output = fa.attention %arg0, %arg1, %arg2 alibi_slopes(%arg3 : tensor<4x8xf32>) : tensor<4x8x?x64xf16>, tensor<4x8x?x64xf16>, tensor<4x8x?x64xf16> -> tensor<4x8x?x64xf16>
// CHECK-NEXT: return %output : tensor<4x8x?x64xf16>
func.func @alibi_batch_heads(%q: tensor<4x8x?x64xf16>, %k: tensor<4x8x?x64xf16>, %v: tensor<4x8x?x64xf16>, %slopes: tensor<4x8xf32>) -> tensor<4x8x?x64xf16> {
  %o = fa.attention %q, %k, %v alibi_slopes(%slopes : tensor<4x8xf32>) : tensor<4x8x?x64xf16>, tensor<4x8x?x64xf16>, tensor<4x8x?x64xf16> -> tensor<4x8x?x64xf16>
  return %o : tensor<4x8x?x64xf16>
}

// CHECK-LABEL: func.func @dropout(
// CHECK: %output, %lse = fa.attention %arg0, %arg1, %arg2 dropout_seed(%arg3) {dropout_p = 1.000000e-01 : f32} : tensor<?x8x?x64xbf16>, tensor<?x8x?x64xbf16>, tensor<?x8x?x64xbf16> -> tensor<?x8x?x64xbf16>, tensor<?x8x?xf32>
// CHECK-NEXT: return %output, %lse : tensor<?x8x?x64xbf16>, tensor<?x8x?xf32>
func.func @dropout(%q: tensor<?x8x?x64xbf16>, %k: tensor<?x8x?x64xbf16>, %v: tensor<?x8x?x64xbf16>, %seed: i64) -> (tensor<?x8x?x64xbf16>, tensor<?x8x?xf32>) {
  %o, %lse = fa.attention %q, %k, %v dropout_seed(%seed) {dropout_p = 0.1 : f32} : tensor<?x8x?x64xbf16>, tensor<?x8x?x64xbf16>, tensor<?x8x?x64xbf16> -> tensor<?x8x?x64xbf16>, tensor<?x8x?xf32>
  return %o, %lse : tensor<?x8x?x64xbf16>, tensor<?x8x?xf32>
}

// score_mod: a relative-position bias, s + (j - i).
// CHECK-LABEL: func.func @score_mod(
// CHECK: %output = fa.attention %arg0, %arg1, %arg2 : tensor<?x8x?x64xf16>, tensor<?x8x?x64xf16>, tensor<?x8x?x64xf16> -> tensor<?x8x?x64xf16> score_mod {
// CHECK-NEXT: ^bb0(%arg3: f32, %arg4: index, %arg5: index, %arg6: index, %arg7: index):
// CHECK-NEXT: %0 = arith.subi %arg7, %arg6 : index
// CHECK-NEXT: %1 = arith.index_cast %0 : index to i64
// CHECK-NEXT: %2 = arith.sitofp %1 : i64 to f32
// CHECK-NEXT: %3 = arith.addf %arg3, %2 : f32
// CHECK-NEXT: fa.yield %3 : f32
// CHECK-NEXT: }
// CHECK-NEXT: return %output : tensor<?x8x?x64xf16>
func.func @score_mod(%q: tensor<?x8x?x64xf16>, %k: tensor<?x8x?x64xf16>, %v: tensor<?x8x?x64xf16>) -> tensor<?x8x?x64xf16> {
  %o = fa.attention %q, %k, %v : tensor<?x8x?x64xf16>, tensor<?x8x?x64xf16>, tensor<?x8x?x64xf16> -> tensor<?x8x?x64xf16> score_mod {
  ^bb0(%s: f32, %b: index, %h: index, %i: index, %j: index):
    %d = arith.subi %j, %i : index
    %di = arith.index_cast %d : index to i64
    %df = arith.sitofp %di : i64 to f32
    %r = arith.addf %s, %df : f32
    fa.yield %r : f32
  }
  return %o : tensor<?x8x?x64xf16>
}

// mask_mod: prefix-LM mask, keys 0..63 visible to all queries, causal after.
// CHECK-LABEL: func.func @mask_mod(
// CHECK: %output, %lse = fa.attention %arg0, %arg1, %arg2 : tensor<?x8x?x64xf16>, tensor<?x8x?x64xf16>, tensor<?x8x?x64xf16> -> tensor<?x8x?x64xf16>, tensor<?x8x?xf32> mask_mod {
// CHECK-NEXT: ^bb0(%arg3: index, %arg4: index, %arg5: index, %arg6: index):
// CHECK-NEXT: %c64 = arith.constant 64 : index
// CHECK-NEXT: %0 = arith.cmpi ult, %arg6, %c64 : index
// CHECK-NEXT: %1 = arith.cmpi ule, %arg6, %arg5 : index
// CHECK-NEXT: %2 = arith.ori %0, %1 : i1
// CHECK-NEXT: fa.yield %2 : i1
// CHECK-NEXT: }
// CHECK-NEXT: return %output, %lse : tensor<?x8x?x64xf16>, tensor<?x8x?xf32>
func.func @mask_mod(%q: tensor<?x8x?x64xf16>, %k: tensor<?x8x?x64xf16>, %v: tensor<?x8x?x64xf16>) -> (tensor<?x8x?x64xf16>, tensor<?x8x?xf32>) {
  %o, %lse = fa.attention %q, %k, %v : tensor<?x8x?x64xf16>, tensor<?x8x?x64xf16>, tensor<?x8x?x64xf16> -> tensor<?x8x?x64xf16>, tensor<?x8x?xf32> mask_mod {
  ^bb0(%b: index, %h: index, %i: index, %j: index):
    %c64 = arith.constant 64 : index
    %prefix = arith.cmpi ult, %j, %c64 : index
    %causal = arith.cmpi ule, %j, %i : index
    %keep = arith.ori %prefix, %causal : i1
    fa.yield %keep : i1
  }
  return %o, %lse : tensor<?x8x?x64xf16>, tensor<?x8x?xf32>
}

// Every variant at once.
// CHECK-LABEL: func.func @all_at_once(
// CHECK: %output, %lse = fa.attention %arg0, %arg1, %arg2 bias(%arg3 : tensor<2x1x128x256xbf16>) alibi_slopes(%arg4 : tensor<2x8xf32>) dropout_seed(%arg5) {causal = #fa.causal<bottom_right>, dropout_p = 2.500000e-01 : f32, scale = 1.250000e-01 : f32, softcap = 3.000000e+01 : f32, window = array<i64: 64, 0>} : tensor<2x8x128x64xbf16>, tensor<2x2x256x64xbf16>, tensor<2x2x256x64xbf16> -> tensor<2x8x128x64xbf16>, tensor<2x8x128xf32> score_mod {
// CHECK-NEXT: ^bb0(%arg6: f32, %arg7: index, %arg8: index, %arg9: index, %arg10: index):
// CHECK-NEXT: %cst = arith.constant 5.000000e-01 : f32
// CHECK-NEXT: %0 = arith.mulf %arg6, %cst : f32
// CHECK-NEXT: fa.yield %0 : f32
// CHECK-NEXT: } mask_mod {
// CHECK-NEXT: ^bb0(%arg6: index, %arg7: index, %arg8: index, %arg9: index):
// CHECK-NEXT: %0 = arith.cmpi ne, %arg8, %arg9 : index
// CHECK-NEXT: fa.yield %0 : i1
// CHECK-NEXT: }
// CHECK-NEXT: return %output, %lse : tensor<2x8x128x64xbf16>, tensor<2x8x128xf32>
func.func @all_at_once(%q: tensor<2x8x128x64xbf16>, %k: tensor<2x2x256x64xbf16>, %v: tensor<2x2x256x64xbf16>, %bias: tensor<2x1x128x256xbf16>, %slopes: tensor<2x8xf32>, %seed: i64) -> (tensor<2x8x128x64xbf16>, tensor<2x8x128xf32>) {
  %o, %lse = fa.attention %q, %k, %v bias(%bias : tensor<2x1x128x256xbf16>) alibi_slopes(%slopes : tensor<2x8xf32>) dropout_seed(%seed) {scale = 0.125 : f32, causal = #fa.causal<bottom_right>, window = array<i64: 64, 0>, softcap = 30.0 : f32, dropout_p = 0.25 : f32} : tensor<2x8x128x64xbf16>, tensor<2x2x256x64xbf16>, tensor<2x2x256x64xbf16> -> tensor<2x8x128x64xbf16>, tensor<2x8x128xf32> score_mod {
  ^bb0(%s: f32, %b: index, %h: index, %i: index, %j: index):
    %half = arith.constant 5.000000e-01 : f32
    %r = arith.mulf %s, %half : f32
    fa.yield %r : f32
  } mask_mod {
  ^bb0(%b: index, %h: index, %i: index, %j: index):
    %keep = arith.cmpi ne, %i, %j : index
    fa.yield %keep : i1
  }
  return %o, %lse : tensor<2x8x128x64xbf16>, tensor<2x8x128xf32>
}

//===----------------------------------------------------------------------===//
// fa.attention_grad
//===----------------------------------------------------------------------===//

// CHECK-LABEL: func.func @grad_mha(
// CHECK: %grad_query, %grad_key, %grad_value = fa.attention_grad %arg0, %arg1, %arg2, %arg3, %arg4, %arg5 : tensor<2x8x128x64xf16>, tensor<2x8x128x64xf16>, tensor<2x8x128x64xf16>, tensor<2x8x128x64xf16>, tensor<2x8x128x64xf16>, tensor<2x8x128xf32> -> tensor<2x8x128x64xf16>, tensor<2x8x128x64xf16>, tensor<2x8x128x64xf16>
// CHECK-NEXT: return %grad_query, %grad_key, %grad_value : tensor<2x8x128x64xf16>, tensor<2x8x128x64xf16>, tensor<2x8x128x64xf16>
func.func @grad_mha(%q: tensor<2x8x128x64xf16>, %k: tensor<2x8x128x64xf16>, %v: tensor<2x8x128x64xf16>, %o: tensor<2x8x128x64xf16>, %do: tensor<2x8x128x64xf16>, %lse: tensor<2x8x128xf32>) -> (tensor<2x8x128x64xf16>, tensor<2x8x128x64xf16>, tensor<2x8x128x64xf16>) {
  %dq, %dk, %dv = fa.attention_grad %q, %k, %v, %o, %do, %lse : tensor<2x8x128x64xf16>, tensor<2x8x128x64xf16>, tensor<2x8x128x64xf16>, tensor<2x8x128x64xf16>, tensor<2x8x128x64xf16>, tensor<2x8x128xf32> -> tensor<2x8x128x64xf16>, tensor<2x8x128x64xf16>, tensor<2x8x128x64xf16>
  return %dq, %dk, %dv : tensor<2x8x128x64xf16>, tensor<2x8x128x64xf16>, tensor<2x8x128x64xf16>
}

// GQA with dynamic B/N, causal, bf16: dK and dV have the key/value heads.
// CHECK-LABEL: func.func @grad_gqa_causal(
// CHECK: %grad_query, %grad_key, %grad_value = fa.attention_grad %arg0, %arg1, %arg2, %arg3, %arg4, %arg5 {causal = #fa.causal<bottom_right>} : tensor<?x8x?x64xbf16>, tensor<?x2x?x64xbf16>, tensor<?x2x?x64xbf16>, tensor<?x8x?x64xbf16>, tensor<?x8x?x64xbf16>, tensor<?x8x?xf32> -> tensor<?x8x?x64xbf16>, tensor<?x2x?x64xbf16>, tensor<?x2x?x64xbf16>
// CHECK-NEXT: return %grad_query, %grad_key, %grad_value : tensor<?x8x?x64xbf16>, tensor<?x2x?x64xbf16>, tensor<?x2x?x64xbf16>
func.func @grad_gqa_causal(%q: tensor<?x8x?x64xbf16>, %k: tensor<?x2x?x64xbf16>, %v: tensor<?x2x?x64xbf16>, %o: tensor<?x8x?x64xbf16>, %do: tensor<?x8x?x64xbf16>, %lse: tensor<?x8x?xf32>) -> (tensor<?x8x?x64xbf16>, tensor<?x2x?x64xbf16>, tensor<?x2x?x64xbf16>) {
  %dq, %dk, %dv = fa.attention_grad %q, %k, %v, %o, %do, %lse {causal = #fa.causal<bottom_right>} : tensor<?x8x?x64xbf16>, tensor<?x2x?x64xbf16>, tensor<?x2x?x64xbf16>, tensor<?x8x?x64xbf16>, tensor<?x8x?x64xbf16>, tensor<?x8x?xf32> -> tensor<?x8x?x64xbf16>, tensor<?x2x?x64xbf16>, tensor<?x2x?x64xbf16>
  return %dq, %dk, %dv : tensor<?x8x?x64xbf16>, tensor<?x2x?x64xbf16>, tensor<?x2x?x64xbf16>
}

// MQA in f32 with Dv != D.
// CHECK-LABEL: func.func @grad_mqa_f32(
// CHECK: %grad_query, %grad_key, %grad_value = fa.attention_grad %arg0, %arg1, %arg2, %arg3, %arg4, %arg5 {scale = 0.0883883461 : f32} : tensor<1x4x32x128xf32>, tensor<1x1x64x128xf32>, tensor<1x1x64x32xf32>, tensor<1x4x32x32xf32>, tensor<1x4x32x32xf32>, tensor<1x4x32xf32> -> tensor<1x4x32x128xf32>, tensor<1x1x64x128xf32>, tensor<1x1x64x32xf32>
// CHECK-NEXT: return %grad_query, %grad_key, %grad_value : tensor<1x4x32x128xf32>, tensor<1x1x64x128xf32>, tensor<1x1x64x32xf32>
func.func @grad_mqa_f32(%q: tensor<1x4x32x128xf32>, %k: tensor<1x1x64x128xf32>, %v: tensor<1x1x64x32xf32>, %o: tensor<1x4x32x32xf32>, %do: tensor<1x4x32x32xf32>, %lse: tensor<1x4x32xf32>) -> (tensor<1x4x32x128xf32>, tensor<1x1x64x128xf32>, tensor<1x1x64x32xf32>) {
  %dq, %dk, %dv = fa.attention_grad %q, %k, %v, %o, %do, %lse {scale = 0.0883883461 : f32} : tensor<1x4x32x128xf32>, tensor<1x1x64x128xf32>, tensor<1x1x64x32xf32>, tensor<1x4x32x32xf32>, tensor<1x4x32x32xf32>, tensor<1x4x32xf32> -> tensor<1x4x32x128xf32>, tensor<1x1x64x128xf32>, tensor<1x1x64x32xf32>
  return %dq, %dk, %dv : tensor<1x4x32x128xf32>, tensor<1x1x64x128xf32>, tensor<1x1x64x32xf32>
}

// The backward of @all_at_once.
// CHECK-LABEL: func.func @grad_all_at_once(
// CHECK: %grad_query, %grad_key, %grad_value = fa.attention_grad %arg0, %arg1, %arg2, %arg3, %arg4, %arg5 bias(%arg6 : tensor<1x8x1x256xf32>) alibi_slopes(%arg7 : tensor<8xf32>) dropout_seed(%arg8) {causal = #fa.causal<top_left>, dropout_p = 2.500000e-01 : f32, scale = 1.250000e-01 : f32, softcap = 3.000000e+01 : f32, window = array<i64: 64, 16>} : tensor<2x8x128x64xbf16>, tensor<2x2x256x64xbf16>, tensor<2x2x256x64xbf16>, tensor<2x8x128x64xbf16>, tensor<2x8x128x64xbf16>, tensor<2x8x128xf32> -> tensor<2x8x128x64xbf16>, tensor<2x2x256x64xbf16>, tensor<2x2x256x64xbf16> score_mod {
// CHECK-NEXT: ^bb0(%arg9: f32, %arg10: index, %arg11: index, %arg12: index, %arg13: index):
// CHECK-NEXT: %cst = arith.constant 5.000000e-01 : f32
// CHECK-NEXT: %0 = arith.mulf %arg9, %cst : f32
// CHECK-NEXT: fa.yield %0 : f32
// CHECK-NEXT: } mask_mod {
// CHECK-NEXT: ^bb0(%arg9: index, %arg10: index, %arg11: index, %arg12: index):
// CHECK-NEXT: %0 = arith.cmpi ne, %arg11, %arg12 : index
// CHECK-NEXT: fa.yield %0 : i1
// CHECK-NEXT: }
// CHECK-NEXT: return %grad_query, %grad_key, %grad_value : tensor<2x8x128x64xbf16>, tensor<2x2x256x64xbf16>, tensor<2x2x256x64xbf16>
func.func @grad_all_at_once(%q: tensor<2x8x128x64xbf16>, %k: tensor<2x2x256x64xbf16>, %v: tensor<2x2x256x64xbf16>, %o: tensor<2x8x128x64xbf16>, %do: tensor<2x8x128x64xbf16>, %lse: tensor<2x8x128xf32>, %bias: tensor<1x8x1x256xf32>, %slopes: tensor<8xf32>, %seed: i64) -> (tensor<2x8x128x64xbf16>, tensor<2x2x256x64xbf16>, tensor<2x2x256x64xbf16>) {
  %dq, %dk, %dv = fa.attention_grad %q, %k, %v, %o, %do, %lse bias(%bias : tensor<1x8x1x256xf32>) alibi_slopes(%slopes : tensor<8xf32>) dropout_seed(%seed) {scale = 0.125 : f32, causal = #fa.causal<top_left>, window = array<i64: 64, 16>, softcap = 30.0 : f32, dropout_p = 0.25 : f32} : tensor<2x8x128x64xbf16>, tensor<2x2x256x64xbf16>, tensor<2x2x256x64xbf16>, tensor<2x8x128x64xbf16>, tensor<2x8x128x64xbf16>, tensor<2x8x128xf32> -> tensor<2x8x128x64xbf16>, tensor<2x2x256x64xbf16>, tensor<2x2x256x64xbf16> score_mod {
  ^bb0(%s: f32, %b: index, %h: index, %i: index, %j: index):
    %half = arith.constant 5.000000e-01 : f32
    %r = arith.mulf %s, %half : f32
    fa.yield %r : f32
  } mask_mod {
  ^bb0(%b: index, %h: index, %i: index, %j: index):
    %keep = arith.cmpi ne, %i, %j : index
    fa.yield %keep : i1
  }
  return %dq, %dk, %dv : tensor<2x8x128x64xbf16>, tensor<2x2x256x64xbf16>, tensor<2x2x256x64xbf16>
}

// Forward and backward in one function: the lse of fa.attention feeds
// fa.attention_grad.
// CHECK-LABEL: func.func @forward_backward(
// CHECK: %output, %lse = fa.attention %arg0, %arg1, %arg2 {causal = #fa.causal<top_left>} : tensor<?x8x?x64xbf16>, tensor<?x2x?x64xbf16>, tensor<?x2x?x64xbf16> -> tensor<?x8x?x64xbf16>, tensor<?x8x?xf32>
// CHECK-NEXT: %grad_query, %grad_key, %grad_value = fa.attention_grad %arg0, %arg1, %arg2, %output, %arg3, %lse {causal = #fa.causal<top_left>} : tensor<?x8x?x64xbf16>, tensor<?x2x?x64xbf16>, tensor<?x2x?x64xbf16>, tensor<?x8x?x64xbf16>, tensor<?x8x?x64xbf16>, tensor<?x8x?xf32> -> tensor<?x8x?x64xbf16>, tensor<?x2x?x64xbf16>, tensor<?x2x?x64xbf16>
// CHECK-NEXT: return %grad_query, %grad_key, %grad_value : tensor<?x8x?x64xbf16>, tensor<?x2x?x64xbf16>, tensor<?x2x?x64xbf16>
func.func @forward_backward(%q: tensor<?x8x?x64xbf16>, %k: tensor<?x2x?x64xbf16>, %v: tensor<?x2x?x64xbf16>, %do: tensor<?x8x?x64xbf16>) -> (tensor<?x8x?x64xbf16>, tensor<?x2x?x64xbf16>, tensor<?x2x?x64xbf16>) {
  %o, %lse = fa.attention %q, %k, %v {causal = #fa.causal<top_left>} : tensor<?x8x?x64xbf16>, tensor<?x2x?x64xbf16>, tensor<?x2x?x64xbf16> -> tensor<?x8x?x64xbf16>, tensor<?x8x?xf32>
  %dq, %dk, %dv = fa.attention_grad %q, %k, %v, %o, %do, %lse {causal = #fa.causal<top_left>} : tensor<?x8x?x64xbf16>, tensor<?x2x?x64xbf16>, tensor<?x2x?x64xbf16>, tensor<?x8x?x64xbf16>, tensor<?x8x?x64xbf16>, tensor<?x8x?xf32> -> tensor<?x8x?x64xbf16>, tensor<?x2x?x64xbf16>, tensor<?x2x?x64xbf16>
  return %dq, %dk, %dv : tensor<?x8x?x64xbf16>, tensor<?x2x?x64xbf16>, tensor<?x2x?x64xbf16>
}

//===----------------------------------------------------------------------===//
// fa.score_tile
//===----------------------------------------------------------------------===//

// The scores of a static f32 tile pair with only the (resolved) scale.
// CHECK-LABEL: func.func @score_tile_static(
// CHECK: %result = fa.score_tile %arg0, %arg1 at[%arg2, %arg3, %arg4, %arg5] of[%arg6, %arg7] {scale = 5.000000e-01 : f32} : tensor<16x8xf32>, tensor<32x8xf32> -> tensor<16x32xf32>
// CHECK-NEXT: return %result : tensor<16x32xf32>
func.func @score_tile_static(%qt: tensor<16x8xf32>, %kt: tensor<32x8xf32>, %b: index, %h: index, %q0: index, %k0: index, %nq: index, %nk: index) -> tensor<16x32xf32> {
  %s = fa.score_tile %qt, %kt at [%b, %h, %q0, %k0] of [%nq, %nk] {scale = 0.5 : f32} : tensor<16x8xf32>, tensor<32x8xf32> -> tensor<16x32xf32>
  return %s : tensor<16x32xf32>
}

// Ragged tiles as fa-tile makes them: dynamic rows and columns, bf16, causal.
// CHECK-LABEL: func.func @score_tile_dynamic_causal(
// CHECK: %result = fa.score_tile %arg0, %arg1 at[%arg2, %arg3, %arg4, %arg5] of[%arg6, %arg7] {causal = #fa.causal<top_left>, scale = 1.250000e-01 : f32} : tensor<?x64xbf16>, tensor<?x64xbf16> -> tensor<?x?xf32>
// CHECK-NEXT: return %result : tensor<?x?xf32>
func.func @score_tile_dynamic_causal(%qt: tensor<?x64xbf16>, %kt: tensor<?x64xbf16>, %b: index, %h: index, %q0: index, %k0: index, %nq: index, %nk: index) -> tensor<?x?xf32> {
  %s = fa.score_tile %qt, %kt at [%b, %h, %q0, %k0] of [%nq, %nk] {causal = #fa.causal<top_left>, scale = 0.125 : f32} : tensor<?x64xbf16>, tensor<?x64xbf16> -> tensor<?x?xf32>
  return %s : tensor<?x?xf32>
}

// A static result is compatible with dynamic tiles; the same SSA value may
// be used for several positions.
// CHECK-LABEL: func.func @score_tile_static_result(
// CHECK: %result = fa.score_tile %arg0, %arg1 at[%arg2, %arg2, %arg2, %arg2] of[%arg2, %arg2] {scale = 1.000000e+00 : f32} : tensor<?x16xf16>, tensor<?x16xf16> -> tensor<64x32xf32>
// CHECK-NEXT: return %result : tensor<64x32xf32>
func.func @score_tile_static_result(%qt: tensor<?x16xf16>, %kt: tensor<?x16xf16>, %i: index) -> tensor<64x32xf32> {
  %s = fa.score_tile %qt, %kt at [%i, %i, %i, %i] of [%i, %i] {scale = 1.0 : f32} : tensor<?x16xf16>, tensor<?x16xf16> -> tensor<64x32xf32>
  return %s : tensor<64x32xf32>
}

// ALiBi slopes per query head only.
// CHECK-LABEL: func.func @score_tile_alibi(
// CHECK: %result = fa.score_tile %arg0, %arg1 at[%arg2, %arg3, %arg4, %arg5] of[%arg6, %arg7] alibi_slopes(%arg8 : tensor<8xf32>) {scale = 1.250000e-01 : f32} : tensor<?x64xf16>, tensor<?x64xf16> -> tensor<?x?xf32>
// CHECK-NEXT: return %result : tensor<?x?xf32>
func.func @score_tile_alibi(%qt: tensor<?x64xf16>, %kt: tensor<?x64xf16>, %b: index, %h: index, %q0: index, %k0: index, %nq: index, %nk: index, %slopes: tensor<8xf32>) -> tensor<?x?xf32> {
  %s = fa.score_tile %qt, %kt at [%b, %h, %q0, %k0] of [%nq, %nk] alibi_slopes(%slopes : tensor<8xf32>) {scale = 0.125 : f32} : tensor<?x64xf16>, tensor<?x64xf16> -> tensor<?x?xf32>
  return %s : tensor<?x?xf32>
}

// Every variant at once: the whole bias and slopes operands, the compile-time
// attributes and both regions.
// CHECK-LABEL: func.func @score_tile_all_at_once(
// CHECK: %result = fa.score_tile %arg0, %arg1 at[%arg2, %arg3, %arg4, %arg5] of[%arg6, %arg7] bias(%arg8 : tensor<2x1x128x256xbf16>) alibi_slopes(%arg9 : tensor<2x8xf32>) {causal = #fa.causal<bottom_right>, scale = 1.250000e-01 : f32, softcap = 3.000000e+01 : f32, window = array<i64: 64, 0>} : tensor<?x64xbf16>, tensor<?x64xbf16> -> tensor<?x?xf32> score_mod {
// CHECK-NEXT: ^bb0(%arg10: f32, %arg11: index, %arg12: index, %arg13: index, %arg14: index):
// CHECK-NEXT: %cst = arith.constant 5.000000e-01 : f32
// CHECK-NEXT: %0 = arith.mulf %arg10, %cst : f32
// CHECK-NEXT: fa.yield %0 : f32
// CHECK-NEXT: } mask_mod {
// CHECK-NEXT: ^bb0(%arg10: index, %arg11: index, %arg12: index, %arg13: index):
// CHECK-NEXT: %0 = arith.cmpi ne, %arg12, %arg13 : index
// CHECK-NEXT: fa.yield %0 : i1
// CHECK-NEXT: }
// CHECK-NEXT: return %result : tensor<?x?xf32>
func.func @score_tile_all_at_once(%qt: tensor<?x64xbf16>, %kt: tensor<?x64xbf16>, %b: index, %h: index, %q0: index, %k0: index, %nq: index, %nk: index, %bias: tensor<2x1x128x256xbf16>, %slopes: tensor<2x8xf32>) -> tensor<?x?xf32> {
  %s = fa.score_tile %qt, %kt at [%b, %h, %q0, %k0] of [%nq, %nk] bias(%bias : tensor<2x1x128x256xbf16>) alibi_slopes(%slopes : tensor<2x8xf32>) {scale = 0.125 : f32, causal = #fa.causal<bottom_right>, window = array<i64: 64, 0>, softcap = 30.0 : f32} : tensor<?x64xbf16>, tensor<?x64xbf16> -> tensor<?x?xf32> score_mod {
  ^bb0(%s0: f32, %bb: index, %hh: index, %i: index, %j: index):
    %half = arith.constant 5.000000e-01 : f32
    %r = arith.mulf %s0, %half : f32
    fa.yield %r : f32
  } mask_mod {
  ^bb0(%bb: index, %hh: index, %i: index, %j: index):
    %keep = arith.cmpi ne, %i, %j : index
    fa.yield %keep : i1
  }
  return %s : tensor<?x?xf32>
}

// The backward form: score_mod with its derivative; a score tile with one.
// CHECK-LABEL: func.func @grad_score_mod_grad(
// CHECK: fa.attention_grad {{.*}} score_mod {
// CHECK: math.tanh
// CHECK: } score_mod_grad {
// CHECK-NEXT: ^bb0(%{{.*}}: f32, %{{.*}}: index, %{{.*}}: index, %{{.*}}: index, %{{.*}}: index):
// CHECK: arith.mulf
// CHECK: fa.yield
func.func @grad_score_mod_grad(%q: tensor<2x1x8x4xf32>, %o: tensor<2x1x8x4xf32>, %lse: tensor<2x1x8xf32>) -> tensor<2x1x8x4xf32> {
  %dq, %dk, %dv = fa.attention_grad %q, %q, %q, %o, %o, %lse : tensor<2x1x8x4xf32>, tensor<2x1x8x4xf32>, tensor<2x1x8x4xf32>, tensor<2x1x8x4xf32>, tensor<2x1x8x4xf32>, tensor<2x1x8xf32> -> tensor<2x1x8x4xf32>, tensor<2x1x8x4xf32>, tensor<2x1x8x4xf32> score_mod {
  ^bb0(%s: f32, %b: index, %h: index, %i: index, %j: index):
    %t = math.tanh %s : f32
    fa.yield %t : f32
  } score_mod_grad {
  ^bb0(%s: f32, %b: index, %h: index, %i: index, %j: index):
    %t = math.tanh %s : f32
    %t2 = arith.mulf %t, %t : f32
    %one = arith.constant 1.0 : f32
    %d = arith.subf %one, %t2 : f32
    fa.yield %d : f32
  }
  return %dq : tensor<2x1x8x4xf32>
}

// CHECK-LABEL: func.func @score_tile_derivative(
// CHECK: %result, %derivative = fa.score_tile %arg0, %arg1 at[%arg2, %arg2, %arg2, %arg2] of[%arg2, %arg2] {scale = 5.000000e-01 : f32} : tensor<16x8xf32>, tensor<32x8xf32> -> tensor<16x32xf32>, tensor<16x32xf32>
func.func @score_tile_derivative(%qt: tensor<16x8xf32>, %kt: tensor<32x8xf32>, %i: index) -> tensor<16x32xf32> {
  %s, %d = fa.score_tile %qt, %kt at [%i, %i, %i, %i] of [%i, %i] {scale = 0.5 : f32} : tensor<16x8xf32>, tensor<32x8xf32> -> tensor<16x32xf32>, tensor<16x32xf32>
  return %d : tensor<16x32xf32>
}
