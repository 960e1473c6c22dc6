// RUN: fa-opt %s -split-input-file -verify-diagnostics

// One case per verifier error of fa.attention, fa.attention_grad and
// fa.score_tile (lib/Dialect/FA/IR/FAOps.cpp), and fa.yield outside of an fa
// op.

//===----------------------------------------------------------------------===//
// Q, K and V: ranks and element types
//===----------------------------------------------------------------------===//

func.func @query_rank(%q: tensor<8x128x64xf16>, %k: tensor<2x8x128x64xf16>, %v: tensor<2x8x128x64xf16>) {
  // expected-error @+1 {{'fa.attention' op query must be a rank-4 tensor [B, Hq, Nq, D], got 'tensor<8x128x64xf16>'}}
  %o = fa.attention %q, %k, %v : tensor<8x128x64xf16>, tensor<2x8x128x64xf16>, tensor<2x8x128x64xf16> -> tensor<2x8x128x64xf16>
  return
}

// -----

func.func @key_rank(%q: tensor<2x8x128x64xf16>, %k: tensor<1x2x8x128x64xf16>, %v: tensor<2x8x128x64xf16>) {
  // expected-error @+1 {{'fa.attention' op key must be a rank-4 tensor [B, Hkv, Nk, D], got 'tensor<1x2x8x128x64xf16>'}}
  %o = fa.attention %q, %k, %v : tensor<2x8x128x64xf16>, tensor<1x2x8x128x64xf16>, tensor<2x8x128x64xf16> -> tensor<2x8x128x64xf16>
  return
}

// -----

func.func @value_rank(%q: tensor<2x8x128x64xf16>, %k: tensor<2x8x128x64xf16>, %v: tensor<2x8x128xf16>) {
  // expected-error @+1 {{'fa.attention' op value must be a rank-4 tensor [B, Hkv, Nk, Dv], got 'tensor<2x8x128xf16>'}}
  %o = fa.attention %q, %k, %v : tensor<2x8x128x64xf16>, tensor<2x8x128x64xf16>, tensor<2x8x128xf16> -> tensor<2x8x128x64xf16>
  return
}

// -----

func.func @query_element_type(%q: tensor<2x8x128x64xf64>, %k: tensor<2x8x128x64xf64>, %v: tensor<2x8x128x64xf64>) {
  // expected-error @+1 {{'fa.attention' op query element type must be f16, bf16 or f32, got 'f64'}}
  %o = fa.attention %q, %k, %v : tensor<2x8x128x64xf64>, tensor<2x8x128x64xf64>, tensor<2x8x128x64xf64> -> tensor<2x8x128x64xf64>
  return
}

// -----

func.func @key_element_type(%q: tensor<2x8x128x64xf16>, %k: tensor<2x8x128x64xi8>, %v: tensor<2x8x128x64xf16>) {
  // expected-error @+1 {{'fa.attention' op key element type must be f16, bf16 or f32, got 'i8'}}
  %o = fa.attention %q, %k, %v : tensor<2x8x128x64xf16>, tensor<2x8x128x64xi8>, tensor<2x8x128x64xf16> -> tensor<2x8x128x64xf16>
  return
}

// -----

func.func @value_element_type(%q: tensor<2x8x128x64xf16>, %k: tensor<2x8x128x64xf16>, %v: tensor<2x8x128x64xf8E4M3FN>) {
  // expected-error @+1 {{'fa.attention' op value element type must be f16, bf16 or f32, got 'f8E4M3FN'}}
  %o = fa.attention %q, %k, %v : tensor<2x8x128x64xf16>, tensor<2x8x128x64xf16>, tensor<2x8x128x64xf8E4M3FN> -> tensor<2x8x128x64xf16>
  return
}

// -----

func.func @key_element_type_mismatch(%q: tensor<2x8x128x64xf16>, %k: tensor<2x8x128x64xbf16>, %v: tensor<2x8x128x64xf16>) {
  // expected-error @+1 {{'fa.attention' op key and value element types must match query ('f16'), got 'bf16' and 'f16'}}
  %o = fa.attention %q, %k, %v : tensor<2x8x128x64xf16>, tensor<2x8x128x64xbf16>, tensor<2x8x128x64xf16> -> tensor<2x8x128x64xf16>
  return
}

// -----

func.func @value_element_type_mismatch(%q: tensor<2x8x128x64xbf16>, %k: tensor<2x8x128x64xbf16>, %v: tensor<2x8x128x64xf32>) {
  // expected-error @+1 {{'fa.attention' op key and value element types must match query ('bf16'), got 'bf16' and 'f32'}}
  %o = fa.attention %q, %k, %v : tensor<2x8x128x64xbf16>, tensor<2x8x128x64xbf16>, tensor<2x8x128x64xf32> -> tensor<2x8x128x64xbf16>
  return
}

// -----

//===----------------------------------------------------------------------===//
// Q, K and V: shapes
//===----------------------------------------------------------------------===//

func.func @query_head_dim_dynamic(%q: tensor<2x8x128x?xf16>, %k: tensor<2x8x128x64xf16>, %v: tensor<2x8x128x64xf16>) {
  // expected-error @+1 {{'fa.attention' op head dims (D, Dv) must be static; a kernel is compiled per head dim}}
  %o = fa.attention %q, %k, %v : tensor<2x8x128x?xf16>, tensor<2x8x128x64xf16>, tensor<2x8x128x64xf16> -> tensor<2x8x128x64xf16>
  return
}

// -----

func.func @key_head_dim_dynamic(%q: tensor<2x8x128x64xf16>, %k: tensor<2x8x128x?xf16>, %v: tensor<2x8x128x64xf16>) {
  // expected-error @+1 {{'fa.attention' op head dims (D, Dv) must be static; a kernel is compiled per head dim}}
  %o = fa.attention %q, %k, %v : tensor<2x8x128x64xf16>, tensor<2x8x128x?xf16>, tensor<2x8x128x64xf16> -> tensor<2x8x128x64xf16>
  return
}

// -----

func.func @value_head_dim_dynamic(%q: tensor<2x8x128x64xf16>, %k: tensor<2x8x128x64xf16>, %v: tensor<2x8x128x?xf16>) {
  // expected-error @+1 {{'fa.attention' op head dims (D, Dv) must be static; a kernel is compiled per head dim}}
  %o = fa.attention %q, %k, %v : tensor<2x8x128x64xf16>, tensor<2x8x128x64xf16>, tensor<2x8x128x?xf16> -> tensor<2x8x128x?xf16>
  return
}

// -----

func.func @key_batch(%q: tensor<2x8x128x64xf16>, %k: tensor<3x8x128x64xf16>, %v: tensor<2x8x128x64xf16>) {
  // expected-error @+1 {{'fa.attention' op key batch size (3) does not match query batch size (2)}}
  %o = fa.attention %q, %k, %v : tensor<2x8x128x64xf16>, tensor<3x8x128x64xf16>, tensor<2x8x128x64xf16> -> tensor<2x8x128x64xf16>
  return
}

// -----

func.func @value_batch(%q: tensor<2x8x128x64xf16>, %k: tensor<2x8x128x64xf16>, %v: tensor<1x8x128x64xf16>) {
  // expected-error @+1 {{'fa.attention' op value batch size (1) does not match query batch size (2)}}
  %o = fa.attention %q, %k, %v : tensor<2x8x128x64xf16>, tensor<2x8x128x64xf16>, tensor<1x8x128x64xf16> -> tensor<2x8x128x64xf16>
  return
}

// -----

// With the query batch dynamic, K and V must still agree.
func.func @value_batch_vs_key(%q: tensor<?x8x128x64xf16>, %k: tensor<2x8x128x64xf16>, %v: tensor<3x8x128x64xf16>) {
  // expected-error @+1 {{'fa.attention' op value batch size (3) does not match key batch size (2)}}
  %o = fa.attention %q, %k, %v : tensor<?x8x128x64xf16>, tensor<2x8x128x64xf16>, tensor<3x8x128x64xf16> -> tensor<?x8x128x64xf16>
  return
}

// -----

func.func @key_head_dim(%q: tensor<2x8x128x64xf16>, %k: tensor<2x8x128x128xf16>, %v: tensor<2x8x128x64xf16>) {
  // expected-error @+1 {{'fa.attention' op key head dim (128) does not match query head dim (64)}}
  %o = fa.attention %q, %k, %v : tensor<2x8x128x64xf16>, tensor<2x8x128x128xf16>, tensor<2x8x128x64xf16> -> tensor<2x8x128x64xf16>
  return
}

// -----

func.func @value_heads(%q: tensor<2x8x128x64xf16>, %k: tensor<2x8x128x64xf16>, %v: tensor<2x4x128x64xf16>) {
  // expected-error @+1 {{'fa.attention' op value heads (4) does not match key heads (8)}}
  %o = fa.attention %q, %k, %v : tensor<2x8x128x64xf16>, tensor<2x8x128x64xf16>, tensor<2x4x128x64xf16> -> tensor<2x8x128x64xf16>
  return
}

// -----

func.func @value_seq_len(%q: tensor<2x8x128x64xf16>, %k: tensor<2x8x128x64xf16>, %v: tensor<2x8x256x64xf16>) {
  // expected-error @+1 {{'fa.attention' op value sequence length (256) does not match key sequence length (128)}}
  %o = fa.attention %q, %k, %v : tensor<2x8x128x64xf16>, tensor<2x8x128x64xf16>, tensor<2x8x256x64xf16> -> tensor<2x8x128x64xf16>
  return
}

// -----

func.func @heads_not_multiple(%q: tensor<2x8x128x64xf16>, %k: tensor<2x3x128x64xf16>, %v: tensor<2x3x128x64xf16>) {
  // expected-error @+1 {{'fa.attention' op query heads (8) must be a multiple of key/value heads (3)}}
  %o = fa.attention %q, %k, %v : tensor<2x8x128x64xf16>, tensor<2x3x128x64xf16>, tensor<2x3x128x64xf16> -> tensor<2x8x128x64xf16>
  return
}

// -----

// Hkv is known from V when K has dynamic heads.
func.func @heads_not_multiple_value(%q: tensor<2x8x128x64xf16>, %k: tensor<2x?x128x64xf16>, %v: tensor<2x3x128x64xf16>) {
  // expected-error @+1 {{'fa.attention' op query heads (8) must be a multiple of key/value heads (3)}}
  %o = fa.attention %q, %k, %v : tensor<2x8x128x64xf16>, tensor<2x?x128x64xf16>, tensor<2x3x128x64xf16> -> tensor<2x8x128x64xf16>
  return
}

// -----

func.func @zero_kv_heads(%q: tensor<2x8x128x64xf16>, %k: tensor<2x0x128x64xf16>, %v: tensor<2x0x128x64xf16>) {
  // expected-error @+1 {{'fa.attention' op query heads (8) must be a multiple of key/value heads (0)}}
  %o = fa.attention %q, %k, %v : tensor<2x8x128x64xf16>, tensor<2x0x128x64xf16>, tensor<2x0x128x64xf16> -> tensor<2x8x128x64xf16>
  return
}

// -----

//===----------------------------------------------------------------------===//
// Results of fa.attention
//===----------------------------------------------------------------------===//

// O has the value head dim Dv.
func.func @output_shape(%q: tensor<2x8x128x64xf16>, %k: tensor<2x8x128x64xf16>, %v: tensor<2x8x128x32xf16>) {
  // expected-error @+1 {{'fa.attention' op output must be compatible with 'tensor<2x8x128x32xf16>', got 'tensor<2x8x128x64xf16>'}}
  %o = fa.attention %q, %k, %v : tensor<2x8x128x64xf16>, tensor<2x8x128x64xf16>, tensor<2x8x128x32xf16> -> tensor<2x8x128x64xf16>
  return
}

// -----

// O has the query heads, not the key/value heads.
func.func @output_heads(%q: tensor<2x8x128x64xf16>, %k: tensor<2x2x128x64xf16>, %v: tensor<2x2x128x64xf16>) {
  // expected-error @+1 {{'fa.attention' op output must be compatible with 'tensor<2x8x128x64xf16>', got 'tensor<2x2x128x64xf16>'}}
  %o = fa.attention %q, %k, %v : tensor<2x8x128x64xf16>, tensor<2x2x128x64xf16>, tensor<2x2x128x64xf16> -> tensor<2x2x128x64xf16>
  return
}

// -----

func.func @output_element_type(%q: tensor<2x8x128x64xf16>, %k: tensor<2x8x128x64xf16>, %v: tensor<2x8x128x64xf16>) {
  // expected-error @+1 {{'fa.attention' op output must be compatible with 'tensor<2x8x128x64xf16>', got 'tensor<2x8x128x64xf32>'}}
  %o = fa.attention %q, %k, %v : tensor<2x8x128x64xf16>, tensor<2x8x128x64xf16>, tensor<2x8x128x64xf16> -> tensor<2x8x128x64xf32>
  return
}

// -----

func.func @output_rank(%q: tensor<?x8x?x64xbf16>, %k: tensor<?x8x?x64xbf16>, %v: tensor<?x8x?x64xbf16>) {
  // expected-error @+1 {{'fa.attention' op output must be compatible with 'tensor<?x8x?x64xbf16>', got 'tensor<8x128x64xbf16>'}}
  %o = fa.attention %q, %k, %v : tensor<?x8x?x64xbf16>, tensor<?x8x?x64xbf16>, tensor<?x8x?x64xbf16> -> tensor<8x128x64xbf16>
  return
}

// -----

func.func @lse_element_type(%q: tensor<2x8x128x64xf16>, %k: tensor<2x8x128x64xf16>, %v: tensor<2x8x128x64xf16>) {
  // expected-error @+1 {{'fa.attention' op lse must be compatible with 'tensor<2x8x128xf32>', got 'tensor<2x8x128xf16>'}}
  %o, %lse = fa.attention %q, %k, %v : tensor<2x8x128x64xf16>, tensor<2x8x128x64xf16>, tensor<2x8x128x64xf16> -> tensor<2x8x128x64xf16>, tensor<2x8x128xf16>
  return
}

// -----

func.func @lse_shape(%q: tensor<2x8x128x64xf16>, %k: tensor<2x8x128x64xf16>, %v: tensor<2x8x128x64xf16>) {
  // expected-error @+1 {{'fa.attention' op lse must be compatible with 'tensor<2x8x128xf32>', got 'tensor<2x8x128x1xf32>'}}
  %o, %lse = fa.attention %q, %k, %v : tensor<2x8x128x64xf16>, tensor<2x8x128x64xf16>, tensor<2x8x128x64xf16> -> tensor<2x8x128x64xf16>, tensor<2x8x128x1xf32>
  return
}

// -----

// B is known from K.
func.func @lse_batch(%q: tensor<?x8x?x64xf16>, %k: tensor<2x8x?x64xf16>, %v: tensor<?x8x?x64xf16>) {
  // expected-error @+1 {{'fa.attention' op lse must be compatible with 'tensor<2x8x?xf32>', got 'tensor<4x8x?xf32>'}}
  %o, %lse = fa.attention %q, %k, %v : tensor<?x8x?x64xf16>, tensor<2x8x?x64xf16>, tensor<?x8x?x64xf16> -> tensor<?x8x?x64xf16>, tensor<4x8x?xf32>
  return
}

// -----

//===----------------------------------------------------------------------===//
// Attributes
//===----------------------------------------------------------------------===//

func.func @scale_negative(%q: tensor<2x8x128x64xf16>, %k: tensor<2x8x128x64xf16>, %v: tensor<2x8x128x64xf16>) {
  // expected-error @+1 {{'fa.attention' op scale must be finite and positive, got -1.000000e+00}}
  %o = fa.attention %q, %k, %v {scale = -1.0 : f32} : tensor<2x8x128x64xf16>, tensor<2x8x128x64xf16>, tensor<2x8x128x64xf16> -> tensor<2x8x128x64xf16>
  return
}

// -----

func.func @scale_zero(%q: tensor<2x8x128x64xf16>, %k: tensor<2x8x128x64xf16>, %v: tensor<2x8x128x64xf16>) {
  // expected-error @+1 {{'fa.attention' op scale must be finite and positive, got 0.000000e+00}}
  %o = fa.attention %q, %k, %v {scale = 0.0 : f32} : tensor<2x8x128x64xf16>, tensor<2x8x128x64xf16>, tensor<2x8x128x64xf16> -> tensor<2x8x128x64xf16>
  return
}

// -----

func.func @scale_nan(%q: tensor<2x8x128x64xf16>, %k: tensor<2x8x128x64xf16>, %v: tensor<2x8x128x64xf16>) {
  // expected-error @+1 {{'fa.attention' op scale must be finite and positive, got nan}}
  %o = fa.attention %q, %k, %v {scale = 0x7FC00000 : f32} : tensor<2x8x128x64xf16>, tensor<2x8x128x64xf16>, tensor<2x8x128x64xf16> -> tensor<2x8x128x64xf16>
  return
}

// -----

func.func @scale_inf(%q: tensor<2x8x128x64xf16>, %k: tensor<2x8x128x64xf16>, %v: tensor<2x8x128x64xf16>) {
  // expected-error @+1 {{'fa.attention' op scale must be finite and positive, got INF}}
  %o = fa.attention %q, %k, %v {scale = 0x7F800000 : f32} : tensor<2x8x128x64xf16>, tensor<2x8x128x64xf16>, tensor<2x8x128x64xf16> -> tensor<2x8x128x64xf16>
  return
}

// -----

func.func @softcap_zero(%q: tensor<2x8x128x64xf16>, %k: tensor<2x8x128x64xf16>, %v: tensor<2x8x128x64xf16>) {
  // expected-error @+1 {{'fa.attention' op softcap must be finite and positive, got 0.000000e+00}}
  %o = fa.attention %q, %k, %v {softcap = 0.0 : f32} : tensor<2x8x128x64xf16>, tensor<2x8x128x64xf16>, tensor<2x8x128x64xf16> -> tensor<2x8x128x64xf16>
  return
}

// -----

func.func @softcap_negative(%q: tensor<2x8x128x64xf16>, %k: tensor<2x8x128x64xf16>, %v: tensor<2x8x128x64xf16>) {
  // expected-error @+1 {{'fa.attention' op softcap must be finite and positive, got -3.000000e+01}}
  %o = fa.attention %q, %k, %v {softcap = -30.0 : f32} : tensor<2x8x128x64xf16>, tensor<2x8x128x64xf16>, tensor<2x8x128x64xf16> -> tensor<2x8x128x64xf16>
  return
}

// -----

func.func @softcap_inf(%q: tensor<2x8x128x64xf16>, %k: tensor<2x8x128x64xf16>, %v: tensor<2x8x128x64xf16>) {
  // expected-error @+1 {{'fa.attention' op softcap must be finite and positive, got INF}}
  %o = fa.attention %q, %k, %v {softcap = 0x7F800000 : f32} : tensor<2x8x128x64xf16>, tensor<2x8x128x64xf16>, tensor<2x8x128x64xf16> -> tensor<2x8x128x64xf16>
  return
}

// -----

func.func @window_one_entry(%q: tensor<2x8x128x64xf16>, %k: tensor<2x8x128x64xf16>, %v: tensor<2x8x128x64xf16>) {
  // expected-error @+1 {{'fa.attention' op window must have two entries [left, right], got 1}}
  %o = fa.attention %q, %k, %v {window = array<i64: 128>} : tensor<2x8x128x64xf16>, tensor<2x8x128x64xf16>, tensor<2x8x128x64xf16> -> tensor<2x8x128x64xf16>
  return
}

// -----

func.func @window_three_entries(%q: tensor<2x8x128x64xf16>, %k: tensor<2x8x128x64xf16>, %v: tensor<2x8x128x64xf16>) {
  // expected-error @+1 {{'fa.attention' op window must have two entries [left, right], got 3}}
  %o = fa.attention %q, %k, %v {window = array<i64: 1, 2, 3>} : tensor<2x8x128x64xf16>, tensor<2x8x128x64xf16>, tensor<2x8x128x64xf16> -> tensor<2x8x128x64xf16>
  return
}

// -----

func.func @window_empty(%q: tensor<2x8x128x64xf16>, %k: tensor<2x8x128x64xf16>, %v: tensor<2x8x128x64xf16>) {
  // expected-error @+1 {{'fa.attention' op window must have two entries [left, right], got 0}}
  %o = fa.attention %q, %k, %v {window = array<i64>} : tensor<2x8x128x64xf16>, tensor<2x8x128x64xf16>, tensor<2x8x128x64xf16> -> tensor<2x8x128x64xf16>
  return
}

// -----

func.func @window_negative_left(%q: tensor<2x8x128x64xf16>, %k: tensor<2x8x128x64xf16>, %v: tensor<2x8x128x64xf16>) {
  // expected-error @+1 {{'fa.attention' op window sizes must be non-negative, got [-1, 0]}}
  %o = fa.attention %q, %k, %v {window = array<i64: -1, 0>} : tensor<2x8x128x64xf16>, tensor<2x8x128x64xf16>, tensor<2x8x128x64xf16> -> tensor<2x8x128x64xf16>
  return
}

// -----

func.func @window_negative_right(%q: tensor<2x8x128x64xf16>, %k: tensor<2x8x128x64xf16>, %v: tensor<2x8x128x64xf16>) {
  // expected-error @+1 {{'fa.attention' op window sizes must be non-negative, got [128, -5]}}
  %o = fa.attention %q, %k, %v {window = array<i64: 128, -5>} : tensor<2x8x128x64xf16>, tensor<2x8x128x64xf16>, tensor<2x8x128x64xf16> -> tensor<2x8x128x64xf16>
  return
}

// -----

func.func @dropout_p_one(%q: tensor<2x8x128x64xf16>, %k: tensor<2x8x128x64xf16>, %v: tensor<2x8x128x64xf16>, %seed: i64) {
  // expected-error @+1 {{'fa.attention' op dropout_p must be in [0, 1), got 1.000000e+00}}
  %o = fa.attention %q, %k, %v dropout_seed(%seed) {dropout_p = 1.0 : f32} : tensor<2x8x128x64xf16>, tensor<2x8x128x64xf16>, tensor<2x8x128x64xf16> -> tensor<2x8x128x64xf16>
  return
}

// -----

func.func @dropout_p_negative(%q: tensor<2x8x128x64xf16>, %k: tensor<2x8x128x64xf16>, %v: tensor<2x8x128x64xf16>, %seed: i64) {
  // expected-error @+1 {{'fa.attention' op dropout_p must be in [0, 1), got -1.000000e-01}}
  %o = fa.attention %q, %k, %v dropout_seed(%seed) {dropout_p = -0.1 : f32} : tensor<2x8x128x64xf16>, tensor<2x8x128x64xf16>, tensor<2x8x128x64xf16> -> tensor<2x8x128x64xf16>
  return
}

// -----

func.func @dropout_p_nan(%q: tensor<2x8x128x64xf16>, %k: tensor<2x8x128x64xf16>, %v: tensor<2x8x128x64xf16>, %seed: i64) {
  // expected-error @+1 {{'fa.attention' op dropout_p must be in [0, 1), got nan}}
  %o = fa.attention %q, %k, %v dropout_seed(%seed) {dropout_p = 0x7FC00000 : f32} : tensor<2x8x128x64xf16>, tensor<2x8x128x64xf16>, tensor<2x8x128x64xf16> -> tensor<2x8x128x64xf16>
  return
}

// -----

func.func @dropout_p_without_seed(%q: tensor<2x8x128x64xf16>, %k: tensor<2x8x128x64xf16>, %v: tensor<2x8x128x64xf16>) {
  // expected-error @+1 {{'fa.attention' op dropout_p requires a dropout_seed operand}}
  %o = fa.attention %q, %k, %v {dropout_p = 0.1 : f32} : tensor<2x8x128x64xf16>, tensor<2x8x128x64xf16>, tensor<2x8x128x64xf16> -> tensor<2x8x128x64xf16>
  return
}

// -----

func.func @dropout_seed_without_p(%q: tensor<2x8x128x64xf16>, %k: tensor<2x8x128x64xf16>, %v: tensor<2x8x128x64xf16>, %seed: i64) {
  // expected-error @+1 {{'fa.attention' op dropout_seed requires a dropout_p attribute}}
  %o = fa.attention %q, %k, %v dropout_seed(%seed) : tensor<2x8x128x64xf16>, tensor<2x8x128x64xf16>, tensor<2x8x128x64xf16> -> tensor<2x8x128x64xf16>
  return
}

// -----

//===----------------------------------------------------------------------===//
// bias
//===----------------------------------------------------------------------===//

func.func @bias_rank(%q: tensor<2x8x128x64xf16>, %k: tensor<2x8x128x64xf16>, %v: tensor<2x8x128x64xf16>, %bias: tensor<128x128xf16>) {
  // expected-error @+1 {{'fa.attention' op bias must be a rank-4 tensor broadcastable to [B, Hq, Nq, Nk], got 'tensor<128x128xf16>'}}
  %o = fa.attention %q, %k, %v bias(%bias : tensor<128x128xf16>) : tensor<2x8x128x64xf16>, tensor<2x8x128x64xf16>, tensor<2x8x128x64xf16> -> tensor<2x8x128x64xf16>
  return
}

// -----

// A boolean mask is not a bias; use mask_mod.
func.func @bias_element_type(%q: tensor<2x8x128x64xf16>, %k: tensor<2x8x128x64xf16>, %v: tensor<2x8x128x64xf16>, %bias: tensor<1x1x128x128xi1>) {
  // expected-error @+1 {{'fa.attention' op bias element type must be f16, bf16 or f32, got 'i1'}}
  %o = fa.attention %q, %k, %v bias(%bias : tensor<1x1x128x128xi1>) : tensor<2x8x128x64xf16>, tensor<2x8x128x64xf16>, tensor<2x8x128x64xf16> -> tensor<2x8x128x64xf16>
  return
}

// -----

func.func @bias_batch(%q: tensor<2x8x128x64xf16>, %k: tensor<2x8x128x64xf16>, %v: tensor<2x8x128x64xf16>, %bias: tensor<3x8x128x128xf16>) {
  // expected-error @+1 {{'fa.attention' op bias dim 0 (3) is neither 1 nor B (2)}}
  %o = fa.attention %q, %k, %v bias(%bias : tensor<3x8x128x128xf16>) : tensor<2x8x128x64xf16>, tensor<2x8x128x64xf16>, tensor<2x8x128x64xf16> -> tensor<2x8x128x64xf16>
  return
}

// -----

// The bias has the query heads, not the key/value heads.
func.func @bias_heads(%q: tensor<2x8x128x64xf16>, %k: tensor<2x2x128x64xf16>, %v: tensor<2x2x128x64xf16>, %bias: tensor<1x2x128x128xf32>) {
  // expected-error @+1 {{'fa.attention' op bias dim 1 (2) is neither 1 nor Hq (8)}}
  %o = fa.attention %q, %k, %v bias(%bias : tensor<1x2x128x128xf32>) : tensor<2x8x128x64xf16>, tensor<2x2x128x64xf16>, tensor<2x2x128x64xf16> -> tensor<2x8x128x64xf16>
  return
}

// -----

func.func @bias_seq_q(%q: tensor<2x8x128x64xf16>, %k: tensor<2x8x128x64xf16>, %v: tensor<2x8x128x64xf16>, %bias: tensor<1x1x64x128xf16>) {
  // expected-error @+1 {{'fa.attention' op bias dim 2 (64) is neither 1 nor Nq (128)}}
  %o = fa.attention %q, %k, %v bias(%bias : tensor<1x1x64x128xf16>) : tensor<2x8x128x64xf16>, tensor<2x8x128x64xf16>, tensor<2x8x128x64xf16> -> tensor<2x8x128x64xf16>
  return
}

// -----

// Nk is known from V.
func.func @bias_seq_k(%q: tensor<?x8x?x64xf16>, %k: tensor<?x8x?x64xf16>, %v: tensor<?x8x512x64xf16>, %bias: tensor<?x?x?x256xf16>) {
  // expected-error @+1 {{'fa.attention' op bias dim 3 (256) is neither 1 nor Nk (512)}}
  %o = fa.attention %q, %k, %v bias(%bias : tensor<?x?x?x256xf16>) : tensor<?x8x?x64xf16>, tensor<?x8x?x64xf16>, tensor<?x8x512x64xf16> -> tensor<?x8x?x64xf16>
  return
}

// -----

//===----------------------------------------------------------------------===//
// alibi_slopes
//===----------------------------------------------------------------------===//

func.func @alibi_rank(%q: tensor<2x8x128x64xf16>, %k: tensor<2x8x128x64xf16>, %v: tensor<2x8x128x64xf16>, %s: tensor<2x8x1xf32>) {
  // expected-error @+1 {{'fa.attention' op alibi_slopes must be an f32 tensor of shape [Hq] or [B, Hq], got 'tensor<2x8x1xf32>'}}
  %o = fa.attention %q, %k, %v alibi_slopes(%s : tensor<2x8x1xf32>) : tensor<2x8x128x64xf16>, tensor<2x8x128x64xf16>, tensor<2x8x128x64xf16> -> tensor<2x8x128x64xf16>
  return
}

// -----

func.func @alibi_rank_zero(%q: tensor<2x8x128x64xf16>, %k: tensor<2x8x128x64xf16>, %v: tensor<2x8x128x64xf16>, %s: tensor<f32>) {
  // expected-error @+1 {{'fa.attention' op alibi_slopes must be an f32 tensor of shape [Hq] or [B, Hq], got 'tensor<f32>'}}
  %o = fa.attention %q, %k, %v alibi_slopes(%s : tensor<f32>) : tensor<2x8x128x64xf16>, tensor<2x8x128x64xf16>, tensor<2x8x128x64xf16> -> tensor<2x8x128x64xf16>
  return
}

// -----

func.func @alibi_element_type(%q: tensor<2x8x128x64xf16>, %k: tensor<2x8x128x64xf16>, %v: tensor<2x8x128x64xf16>, %s: tensor<8xf16>) {
  // expected-error @+1 {{'fa.attention' op alibi_slopes must be an f32 tensor of shape [Hq] or [B, Hq], got 'tensor<8xf16>'}}
  %o = fa.attention %q, %k, %v alibi_slopes(%s : tensor<8xf16>) : tensor<2x8x128x64xf16>, tensor<2x8x128x64xf16>, tensor<2x8x128x64xf16> -> tensor<2x8x128x64xf16>
  return
}

// -----

// One slope per query head, not per key/value head.
func.func @alibi_heads(%q: tensor<2x8x128x64xf16>, %k: tensor<2x2x128x64xf16>, %v: tensor<2x2x128x64xf16>, %s: tensor<2xf32>) {
  // expected-error @+1 {{'fa.attention' op alibi_slopes heads (2) does not match query heads (8)}}
  %o = fa.attention %q, %k, %v alibi_slopes(%s : tensor<2xf32>) : tensor<2x8x128x64xf16>, tensor<2x2x128x64xf16>, tensor<2x2x128x64xf16> -> tensor<2x8x128x64xf16>
  return
}

// -----

func.func @alibi_heads_2d(%q: tensor<2x8x128x64xf16>, %k: tensor<2x8x128x64xf16>, %v: tensor<2x8x128x64xf16>, %s: tensor<2x16xf32>) {
  // expected-error @+1 {{'fa.attention' op alibi_slopes heads (16) does not match query heads (8)}}
  %o = fa.attention %q, %k, %v alibi_slopes(%s : tensor<2x16xf32>) : tensor<2x8x128x64xf16>, tensor<2x8x128x64xf16>, tensor<2x8x128x64xf16> -> tensor<2x8x128x64xf16>
  return
}

// -----

func.func @alibi_batch(%q: tensor<2x8x128x64xf16>, %k: tensor<2x8x128x64xf16>, %v: tensor<2x8x128x64xf16>, %s: tensor<4x8xf32>) {
  // expected-error @+1 {{'fa.attention' op alibi_slopes batch size (4) does not match query batch size (2)}}
  %o = fa.attention %q, %k, %v alibi_slopes(%s : tensor<4x8xf32>) : tensor<2x8x128x64xf16>, tensor<2x8x128x64xf16>, tensor<2x8x128x64xf16> -> tensor<2x8x128x64xf16>
  return
}

// -----

//===----------------------------------------------------------------------===//
// score_mod and mask_mod regions
//===----------------------------------------------------------------------===//

func.func @score_mod_too_few_args(%q: tensor<2x8x128x64xf16>, %k: tensor<2x8x128x64xf16>, %v: tensor<2x8x128x64xf16>) {
  // expected-error @+1 {{'fa.attention' op score_mod region must have arguments (f32, index, index, index, index)}}
  %o = fa.attention %q, %k, %v : tensor<2x8x128x64xf16>, tensor<2x8x128x64xf16>, tensor<2x8x128x64xf16> -> tensor<2x8x128x64xf16> score_mod {
  ^bb0(%s: f32, %i: index, %j: index):
    fa.yield %s : f32
  }
  return
}

// -----

// The score is f32 whatever the element type of Q.
func.func @score_mod_arg_type(%q: tensor<2x8x128x64xf16>, %k: tensor<2x8x128x64xf16>, %v: tensor<2x8x128x64xf16>) {
  // expected-error @+1 {{'fa.attention' op score_mod region must have arguments (f32, index, index, index, index)}}
  %o = fa.attention %q, %k, %v : tensor<2x8x128x64xf16>, tensor<2x8x128x64xf16>, tensor<2x8x128x64xf16> -> tensor<2x8x128x64xf16> score_mod {
  ^bb0(%s: f16, %b: index, %h: index, %i: index, %j: index):
    %e = arith.extf %s : f16 to f32
    fa.yield %e : f32
  }
  return
}

// -----

func.func @score_mod_index_type(%q: tensor<2x8x128x64xf16>, %k: tensor<2x8x128x64xf16>, %v: tensor<2x8x128x64xf16>) {
  // expected-error @+1 {{'fa.attention' op score_mod region must have arguments (f32, index, index, index, index)}}
  %o = fa.attention %q, %k, %v : tensor<2x8x128x64xf16>, tensor<2x8x128x64xf16>, tensor<2x8x128x64xf16> -> tensor<2x8x128x64xf16> score_mod {
  ^bb0(%s: f32, %b: i64, %h: i64, %i: i64, %j: i64):
    fa.yield %s : f32
  }
  return
}

// -----

func.func @score_mod_yield_type(%q: tensor<2x8x128x64xf16>, %k: tensor<2x8x128x64xf16>, %v: tensor<2x8x128x64xf16>) {
  // expected-error @+1 {{'fa.attention' op score_mod region must yield one 'f32'}}
  %o = fa.attention %q, %k, %v : tensor<2x8x128x64xf16>, tensor<2x8x128x64xf16>, tensor<2x8x128x64xf16> -> tensor<2x8x128x64xf16> score_mod {
  ^bb0(%s: f32, %b: index, %h: index, %i: index, %j: index):
    %t = arith.truncf %s : f32 to f16
    fa.yield %t : f16
  }
  return
}

// -----

func.func @score_mod_yield_two(%q: tensor<2x8x128x64xf16>, %k: tensor<2x8x128x64xf16>, %v: tensor<2x8x128x64xf16>) {
  // expected-error @+1 {{'fa.attention' op score_mod region must yield one 'f32'}}
  %o = fa.attention %q, %k, %v : tensor<2x8x128x64xf16>, tensor<2x8x128x64xf16>, tensor<2x8x128x64xf16> -> tensor<2x8x128x64xf16> score_mod {
  ^bb0(%s: f32, %b: index, %h: index, %i: index, %j: index):
    fa.yield %s, %s : f32, f32
  }
  return
}

// -----

func.func @score_mod_yield_none(%q: tensor<2x8x128x64xf16>, %k: tensor<2x8x128x64xf16>, %v: tensor<2x8x128x64xf16>) {
  // expected-error @+1 {{'fa.attention' op score_mod region must yield one 'f32'}}
  %o = fa.attention %q, %k, %v : tensor<2x8x128x64xf16>, tensor<2x8x128x64xf16>, tensor<2x8x128x64xf16> -> tensor<2x8x128x64xf16> score_mod {
  ^bb0(%s: f32, %b: index, %h: index, %i: index, %j: index):
    fa.yield
  }
  return
}

// -----

func.func @score_mod_other_terminator(%q: tensor<2x8x128x64xf16>, %k: tensor<2x8x128x64xf16>, %v: tensor<2x8x128x64xf16>) {
  // expected-error @+1 {{'fa.attention' op score_mod region must yield one 'f32'}}
  %o = fa.attention %q, %k, %v : tensor<2x8x128x64xf16>, tensor<2x8x128x64xf16>, tensor<2x8x128x64xf16> -> tensor<2x8x128x64xf16> score_mod {
  ^bb0(%s: f32, %b: index, %h: index, %i: index, %j: index):
    llvm.unreachable
  }
  return
}

// -----

func.func @mask_mod_no_args(%q: tensor<2x8x128x64xf16>, %k: tensor<2x8x128x64xf16>, %v: tensor<2x8x128x64xf16>) {
  // expected-error @+1 {{'fa.attention' op mask_mod region must have arguments (index, index, index, index)}}
  %o = fa.attention %q, %k, %v : tensor<2x8x128x64xf16>, tensor<2x8x128x64xf16>, tensor<2x8x128x64xf16> -> tensor<2x8x128x64xf16> mask_mod {
    %t = arith.constant true
    fa.yield %t : i1
  }
  return
}

// -----

// mask_mod does not see the score.
func.func @mask_mod_score_arg(%q: tensor<2x8x128x64xf16>, %k: tensor<2x8x128x64xf16>, %v: tensor<2x8x128x64xf16>) {
  // expected-error @+1 {{'fa.attention' op mask_mod region must have arguments (index, index, index, index)}}
  %o = fa.attention %q, %k, %v : tensor<2x8x128x64xf16>, tensor<2x8x128x64xf16>, tensor<2x8x128x64xf16> -> tensor<2x8x128x64xf16> mask_mod {
  ^bb0(%s: f32, %b: index, %h: index, %i: index, %j: index):
    %t = arith.constant true
    fa.yield %t : i1
  }
  return
}

// -----

func.func @mask_mod_yield_type(%q: tensor<2x8x128x64xf16>, %k: tensor<2x8x128x64xf16>, %v: tensor<2x8x128x64xf16>) {
  // expected-error @+1 {{'fa.attention' op mask_mod region must yield one 'i1'}}
  %o = fa.attention %q, %k, %v : tensor<2x8x128x64xf16>, tensor<2x8x128x64xf16>, tensor<2x8x128x64xf16> -> tensor<2x8x128x64xf16> mask_mod {
  ^bb0(%b: index, %h: index, %i: index, %j: index):
    %c = arith.constant 1 : i32
    fa.yield %c : i32
  }
  return
}

// -----

func.func @mask_mod_yield_none(%q: tensor<2x8x128x64xf16>, %k: tensor<2x8x128x64xf16>, %v: tensor<2x8x128x64xf16>) {
  // expected-error @+1 {{'fa.attention' op mask_mod region must yield one 'i1'}}
  %o = fa.attention %q, %k, %v : tensor<2x8x128x64xf16>, tensor<2x8x128x64xf16>, tensor<2x8x128x64xf16> -> tensor<2x8x128x64xf16> mask_mod {
  ^bb0(%b: index, %h: index, %i: index, %j: index):
    fa.yield
  }
  return
}

// -----

func.func @mask_mod_after_valid_score_mod(%q: tensor<2x8x128x64xf16>, %k: tensor<2x8x128x64xf16>, %v: tensor<2x8x128x64xf16>) {
  // expected-error @+1 {{'fa.attention' op mask_mod region must have arguments (index, index, index, index)}}
  %o = fa.attention %q, %k, %v : tensor<2x8x128x64xf16>, tensor<2x8x128x64xf16>, tensor<2x8x128x64xf16> -> tensor<2x8x128x64xf16> score_mod {
  ^bb0(%s: f32, %b: index, %h: index, %i: index, %j: index):
    fa.yield %s : f32
  } mask_mod {
  ^bb0(%i: index, %j: index):
    %t = arith.cmpi ule, %j, %i : index
    fa.yield %t : i1
  }
  return
}

// -----

//===----------------------------------------------------------------------===//
// fa.attention_grad
//===----------------------------------------------------------------------===//

// fa.attention_grad shares the input checks of fa.attention.
func.func @grad_query_rank(%q: tensor<?x?x64xbf16>, %k: tensor<?x2x?x64xbf16>, %v: tensor<?x2x?x64xbf16>, %o: tensor<?x8x?x64xbf16>, %do: tensor<?x8x?x64xbf16>, %lse: tensor<?x8x?xf32>) {
  // expected-error @+1 {{'fa.attention_grad' op query must be a rank-4 tensor [B, Hq, Nq, D], got 'tensor<?x?x64xbf16>'}}
  %dq, %dk, %dv = fa.attention_grad %q, %k, %v, %o, %do, %lse : tensor<?x?x64xbf16>, tensor<?x2x?x64xbf16>, tensor<?x2x?x64xbf16>, tensor<?x8x?x64xbf16>, tensor<?x8x?x64xbf16>, tensor<?x8x?xf32> -> tensor<?x?x64xbf16>, tensor<?x2x?x64xbf16>, tensor<?x2x?x64xbf16>
  return
}

// -----

func.func @grad_heads_not_multiple(%q: tensor<?x8x?x64xbf16>, %k: tensor<?x3x?x64xbf16>, %v: tensor<?x3x?x64xbf16>, %o: tensor<?x8x?x64xbf16>, %do: tensor<?x8x?x64xbf16>, %lse: tensor<?x8x?xf32>) {
  // expected-error @+1 {{'fa.attention_grad' op query heads (8) must be a multiple of key/value heads (3)}}
  %dq, %dk, %dv = fa.attention_grad %q, %k, %v, %o, %do, %lse : tensor<?x8x?x64xbf16>, tensor<?x3x?x64xbf16>, tensor<?x3x?x64xbf16>, tensor<?x8x?x64xbf16>, tensor<?x8x?x64xbf16>, tensor<?x8x?xf32> -> tensor<?x8x?x64xbf16>, tensor<?x3x?x64xbf16>, tensor<?x3x?x64xbf16>
  return
}

// -----

func.func @grad_output_type(%q: tensor<?x8x?x64xbf16>, %k: tensor<?x2x?x64xbf16>, %v: tensor<?x2x?x64xbf16>, %o: tensor<?x2x?x64xbf16>, %do: tensor<?x8x?x64xbf16>, %lse: tensor<?x8x?xf32>) {
  // expected-error @+1 {{'fa.attention_grad' op output must be compatible with 'tensor<?x8x?x64xbf16>', got 'tensor<?x2x?x64xbf16>'}}
  %dq, %dk, %dv = fa.attention_grad %q, %k, %v, %o, %do, %lse : tensor<?x8x?x64xbf16>, tensor<?x2x?x64xbf16>, tensor<?x2x?x64xbf16>, tensor<?x2x?x64xbf16>, tensor<?x8x?x64xbf16>, tensor<?x8x?xf32> -> tensor<?x8x?x64xbf16>, tensor<?x2x?x64xbf16>, tensor<?x2x?x64xbf16>
  return
}

// -----

func.func @grad_output_element_type(%q: tensor<?x8x?x64xbf16>, %k: tensor<?x2x?x64xbf16>, %v: tensor<?x2x?x64xbf16>, %o: tensor<?x8x?x64xf32>, %do: tensor<?x8x?x64xbf16>, %lse: tensor<?x8x?xf32>) {
  // expected-error @+1 {{'fa.attention_grad' op output must be compatible with 'tensor<?x8x?x64xbf16>', got 'tensor<?x8x?x64xf32>'}}
  %dq, %dk, %dv = fa.attention_grad %q, %k, %v, %o, %do, %lse : tensor<?x8x?x64xbf16>, tensor<?x2x?x64xbf16>, tensor<?x2x?x64xbf16>, tensor<?x8x?x64xf32>, tensor<?x8x?x64xbf16>, tensor<?x8x?xf32> -> tensor<?x8x?x64xbf16>, tensor<?x2x?x64xbf16>, tensor<?x2x?x64xbf16>
  return
}

// -----

func.func @grad_grad_output_type(%q: tensor<?x8x?x64xbf16>, %k: tensor<?x2x?x64xbf16>, %v: tensor<?x2x?x64xbf16>, %o: tensor<?x8x?x64xbf16>, %do: tensor<?x8x?x32xbf16>, %lse: tensor<?x8x?xf32>) {
  // expected-error @+1 {{'fa.attention_grad' op grad_output must be compatible with 'tensor<?x8x?x64xbf16>', got 'tensor<?x8x?x32xbf16>'}}
  %dq, %dk, %dv = fa.attention_grad %q, %k, %v, %o, %do, %lse : tensor<?x8x?x64xbf16>, tensor<?x2x?x64xbf16>, tensor<?x2x?x64xbf16>, tensor<?x8x?x64xbf16>, tensor<?x8x?x32xbf16>, tensor<?x8x?xf32> -> tensor<?x8x?x64xbf16>, tensor<?x2x?x64xbf16>, tensor<?x2x?x64xbf16>
  return
}

// -----

func.func @grad_lse_type(%q: tensor<?x8x?x64xbf16>, %k: tensor<?x2x?x64xbf16>, %v: tensor<?x2x?x64xbf16>, %o: tensor<?x8x?x64xbf16>, %do: tensor<?x8x?x64xbf16>, %lse: tensor<?x8x?xbf16>) {
  // expected-error @+1 {{'fa.attention_grad' op lse must be compatible with 'tensor<?x8x?xf32>', got 'tensor<?x8x?xbf16>'}}
  %dq, %dk, %dv = fa.attention_grad %q, %k, %v, %o, %do, %lse : tensor<?x8x?x64xbf16>, tensor<?x2x?x64xbf16>, tensor<?x2x?x64xbf16>, tensor<?x8x?x64xbf16>, tensor<?x8x?x64xbf16>, tensor<?x8x?xbf16> -> tensor<?x8x?x64xbf16>, tensor<?x2x?x64xbf16>, tensor<?x2x?x64xbf16>
  return
}

// -----

func.func @grad_lse_shape(%q: tensor<?x8x?x64xbf16>, %k: tensor<?x2x?x64xbf16>, %v: tensor<?x2x?x64xbf16>, %o: tensor<?x8x?x64xbf16>, %do: tensor<?x8x?x64xbf16>, %lse: tensor<?x8x?x1xf32>) {
  // expected-error @+1 {{'fa.attention_grad' op lse must be compatible with 'tensor<?x8x?xf32>', got 'tensor<?x8x?x1xf32>'}}
  %dq, %dk, %dv = fa.attention_grad %q, %k, %v, %o, %do, %lse : tensor<?x8x?x64xbf16>, tensor<?x2x?x64xbf16>, tensor<?x2x?x64xbf16>, tensor<?x8x?x64xbf16>, tensor<?x8x?x64xbf16>, tensor<?x8x?x1xf32> -> tensor<?x8x?x64xbf16>, tensor<?x2x?x64xbf16>, tensor<?x2x?x64xbf16>
  return
}

// -----

func.func @grad_query_result(%q: tensor<?x8x?x64xbf16>, %k: tensor<?x2x?x64xbf16>, %v: tensor<?x2x?x64xbf16>, %o: tensor<?x8x?x64xbf16>, %do: tensor<?x8x?x64xbf16>, %lse: tensor<?x8x?xf32>) {
  // expected-error @+1 {{'fa.attention_grad' op grad_query must be compatible with 'tensor<?x8x?x64xbf16>', got 'tensor<?x8x?x64xf32>'}}
  %dq, %dk, %dv = fa.attention_grad %q, %k, %v, %o, %do, %lse : tensor<?x8x?x64xbf16>, tensor<?x2x?x64xbf16>, tensor<?x2x?x64xbf16>, tensor<?x8x?x64xbf16>, tensor<?x8x?x64xbf16>, tensor<?x8x?xf32> -> tensor<?x8x?x64xf32>, tensor<?x2x?x64xbf16>, tensor<?x2x?x64xbf16>
  return
}

// -----

// dK has the key/value heads: GQA gradients are summed.
func.func @grad_key_result(%q: tensor<?x8x?x64xbf16>, %k: tensor<?x2x?x64xbf16>, %v: tensor<?x2x?x64xbf16>, %o: tensor<?x8x?x64xbf16>, %do: tensor<?x8x?x64xbf16>, %lse: tensor<?x8x?xf32>) {
  // expected-error @+1 {{'fa.attention_grad' op grad_key must be compatible with 'tensor<?x2x?x64xbf16>', got 'tensor<?x8x?x64xbf16>'}}
  %dq, %dk, %dv = fa.attention_grad %q, %k, %v, %o, %do, %lse : tensor<?x8x?x64xbf16>, tensor<?x2x?x64xbf16>, tensor<?x2x?x64xbf16>, tensor<?x8x?x64xbf16>, tensor<?x8x?x64xbf16>, tensor<?x8x?xf32> -> tensor<?x8x?x64xbf16>, tensor<?x8x?x64xbf16>, tensor<?x2x?x64xbf16>
  return
}

// -----

func.func @grad_value_result(%q: tensor<?x8x?x64xbf16>, %k: tensor<?x2x?x64xbf16>, %v: tensor<?x2x?x64xbf16>, %o: tensor<?x8x?x64xbf16>, %do: tensor<?x8x?x64xbf16>, %lse: tensor<?x8x?xf32>) {
  // expected-error @+1 {{'fa.attention_grad' op grad_value must be compatible with 'tensor<?x2x?x64xbf16>', got 'tensor<?x2x?x128xbf16>'}}
  %dq, %dk, %dv = fa.attention_grad %q, %k, %v, %o, %do, %lse : tensor<?x8x?x64xbf16>, tensor<?x2x?x64xbf16>, tensor<?x2x?x64xbf16>, tensor<?x8x?x64xbf16>, tensor<?x8x?x64xbf16>, tensor<?x8x?xf32> -> tensor<?x8x?x64xbf16>, tensor<?x2x?x64xbf16>, tensor<?x2x?x128xbf16>
  return
}

// -----

func.func @grad_dropout_without_seed(%q: tensor<?x8x?x64xbf16>, %k: tensor<?x2x?x64xbf16>, %v: tensor<?x2x?x64xbf16>, %o: tensor<?x8x?x64xbf16>, %do: tensor<?x8x?x64xbf16>, %lse: tensor<?x8x?xf32>) {
  // expected-error @+1 {{'fa.attention_grad' op dropout_p requires a dropout_seed operand}}
  %dq, %dk, %dv = fa.attention_grad %q, %k, %v, %o, %do, %lse {dropout_p = 0.1 : f32} : tensor<?x8x?x64xbf16>, tensor<?x2x?x64xbf16>, tensor<?x2x?x64xbf16>, tensor<?x8x?x64xbf16>, tensor<?x8x?x64xbf16>, tensor<?x8x?xf32> -> tensor<?x8x?x64xbf16>, tensor<?x2x?x64xbf16>, tensor<?x2x?x64xbf16>
  return
}

// -----

func.func @grad_window(%q: tensor<?x8x?x64xbf16>, %k: tensor<?x2x?x64xbf16>, %v: tensor<?x2x?x64xbf16>, %o: tensor<?x8x?x64xbf16>, %do: tensor<?x8x?x64xbf16>, %lse: tensor<?x8x?xf32>) {
  // expected-error @+1 {{'fa.attention_grad' op window sizes must be non-negative, got [-1, -1]}}
  %dq, %dk, %dv = fa.attention_grad %q, %k, %v, %o, %do, %lse {window = array<i64: -1, -1>} : tensor<?x8x?x64xbf16>, tensor<?x2x?x64xbf16>, tensor<?x2x?x64xbf16>, tensor<?x8x?x64xbf16>, tensor<?x8x?x64xbf16>, tensor<?x8x?xf32> -> tensor<?x8x?x64xbf16>, tensor<?x2x?x64xbf16>, tensor<?x2x?x64xbf16>
  return
}

// -----

func.func @grad_bias(%q: tensor<?x8x?x64xbf16>, %k: tensor<?x2x?x64xbf16>, %v: tensor<?x2x?x64xbf16>, %o: tensor<?x8x?x64xbf16>, %do: tensor<?x8x?x64xbf16>, %lse: tensor<?x8x?xf32>, %bias: tensor<1x2x1x?xf32>) {
  // expected-error @+1 {{'fa.attention_grad' op bias dim 1 (2) is neither 1 nor Hq (8)}}
  %dq, %dk, %dv = fa.attention_grad %q, %k, %v, %o, %do, %lse bias(%bias : tensor<1x2x1x?xf32>) : tensor<?x8x?x64xbf16>, tensor<?x2x?x64xbf16>, tensor<?x2x?x64xbf16>, tensor<?x8x?x64xbf16>, tensor<?x8x?x64xbf16>, tensor<?x8x?xf32> -> tensor<?x8x?x64xbf16>, tensor<?x2x?x64xbf16>, tensor<?x2x?x64xbf16>
  return
}

// -----

func.func @grad_alibi(%q: tensor<?x8x?x64xbf16>, %k: tensor<?x2x?x64xbf16>, %v: tensor<?x2x?x64xbf16>, %o: tensor<?x8x?x64xbf16>, %do: tensor<?x8x?x64xbf16>, %lse: tensor<?x8x?xf32>, %s: tensor<2xf32>) {
  // expected-error @+1 {{'fa.attention_grad' op alibi_slopes heads (2) does not match query heads (8)}}
  %dq, %dk, %dv = fa.attention_grad %q, %k, %v, %o, %do, %lse alibi_slopes(%s : tensor<2xf32>) : tensor<?x8x?x64xbf16>, tensor<?x2x?x64xbf16>, tensor<?x2x?x64xbf16>, tensor<?x8x?x64xbf16>, tensor<?x8x?x64xbf16>, tensor<?x8x?xf32> -> tensor<?x8x?x64xbf16>, tensor<?x2x?x64xbf16>, tensor<?x2x?x64xbf16>
  return
}

// -----

func.func @grad_score_mod(%q: tensor<?x8x?x64xbf16>, %k: tensor<?x2x?x64xbf16>, %v: tensor<?x2x?x64xbf16>, %o: tensor<?x8x?x64xbf16>, %do: tensor<?x8x?x64xbf16>, %lse: tensor<?x8x?xf32>) {
  // expected-error @+1 {{'fa.attention_grad' op score_mod region must yield one 'f32'}}
  %dq, %dk, %dv = fa.attention_grad %q, %k, %v, %o, %do, %lse : tensor<?x8x?x64xbf16>, tensor<?x2x?x64xbf16>, tensor<?x2x?x64xbf16>, tensor<?x8x?x64xbf16>, tensor<?x8x?x64xbf16>, tensor<?x8x?xf32> -> tensor<?x8x?x64xbf16>, tensor<?x2x?x64xbf16>, tensor<?x2x?x64xbf16> score_mod {
  ^bb0(%s: f32, %b: index, %h: index, %i: index, %j: index):
    %t = arith.cmpi eq, %i, %j : index
    fa.yield %t : i1
  }
  return
}

// -----

func.func @grad_mask_mod(%q: tensor<?x8x?x64xbf16>, %k: tensor<?x2x?x64xbf16>, %v: tensor<?x2x?x64xbf16>, %o: tensor<?x8x?x64xbf16>, %do: tensor<?x8x?x64xbf16>, %lse: tensor<?x8x?xf32>) {
  // expected-error @+1 {{'fa.attention_grad' op mask_mod region must have arguments (index, index, index, index)}}
  %dq, %dk, %dv = fa.attention_grad %q, %k, %v, %o, %do, %lse : tensor<?x8x?x64xbf16>, tensor<?x2x?x64xbf16>, tensor<?x2x?x64xbf16>, tensor<?x8x?x64xbf16>, tensor<?x8x?x64xbf16>, tensor<?x8x?xf32> -> tensor<?x8x?x64xbf16>, tensor<?x2x?x64xbf16>, tensor<?x2x?x64xbf16> mask_mod {
  ^bb0(%b: index, %h: index, %i: index):
    %t = arith.constant true
    fa.yield %t : i1
  }
  return
}

// -----

//===----------------------------------------------------------------------===//
// fa.score_tile (ScoreTileOp::verify and the shared region checks)
//===----------------------------------------------------------------------===//

// Tiles are [rows, D] and [cols, D]: one head of one batch.
func.func @score_tile_query_rank(%qt: tensor<1x16x8xf32>, %kt: tensor<32x8xf32>, %i: index) {
  // expected-error @+1 {{'fa.score_tile' op query and key tiles must be rank 2, got 'tensor<1x16x8xf32>' and 'tensor<32x8xf32>'}}
  %s = fa.score_tile %qt, %kt at [%i, %i, %i, %i] of [%i, %i] {scale = 0.5 : f32} : tensor<1x16x8xf32>, tensor<32x8xf32> -> tensor<16x32xf32>
  return
}

// -----

func.func @score_tile_key_rank(%qt: tensor<16x8xf32>, %kt: tensor<1x32x8xf32>, %i: index) {
  // expected-error @+1 {{'fa.score_tile' op query and key tiles must be rank 2, got 'tensor<16x8xf32>' and 'tensor<1x32x8xf32>'}}
  %s = fa.score_tile %qt, %kt at [%i, %i, %i, %i] of [%i, %i] {scale = 0.5 : f32} : tensor<16x8xf32>, tensor<1x32x8xf32> -> tensor<16x32xf32>
  return
}

// -----

func.func @score_tile_element_type(%qt: tensor<16x8xf64>, %kt: tensor<32x8xf64>, %i: index) {
  // expected-error @+1 {{'fa.score_tile' op query and key tiles must share an f16, bf16 or f32 element type, got 'f64' and 'f64'}}
  %s = fa.score_tile %qt, %kt at [%i, %i, %i, %i] of [%i, %i] {scale = 0.5 : f32} : tensor<16x8xf64>, tensor<32x8xf64> -> tensor<16x32xf32>
  return
}

// -----

func.func @score_tile_element_type_mismatch(%qt: tensor<16x8xf16>, %kt: tensor<32x8xbf16>, %i: index) {
  // expected-error @+1 {{'fa.score_tile' op query and key tiles must share an f16, bf16 or f32 element type, got 'f16' and 'bf16'}}
  %s = fa.score_tile %qt, %kt at [%i, %i, %i, %i] of [%i, %i] {scale = 0.5 : f32} : tensor<16x8xf16>, tensor<32x8xbf16> -> tensor<16x32xf32>
  return
}

// -----

func.func @score_tile_head_dim(%qt: tensor<16x8xf32>, %kt: tensor<32x16xf32>, %i: index) {
  // expected-error @+1 {{'fa.score_tile' op key head dim (16) does not match query head dim (8)}}
  %s = fa.score_tile %qt, %kt at [%i, %i, %i, %i] of [%i, %i] {scale = 0.5 : f32} : tensor<16x8xf32>, tensor<32x16xf32> -> tensor<16x32xf32>
  return
}

// -----

// The result is [rows, cols]: rows of Q, rows of K.
func.func @score_tile_result_shape(%qt: tensor<16x8xf32>, %kt: tensor<32x8xf32>, %i: index) {
  // expected-error @+1 {{'fa.score_tile' op result must be compatible with 'tensor<16x32xf32>', got 'tensor<32x16xf32>'}}
  %s = fa.score_tile %qt, %kt at [%i, %i, %i, %i] of [%i, %i] {scale = 0.5 : f32} : tensor<16x8xf32>, tensor<32x8xf32> -> tensor<32x16xf32>
  return
}

// -----

// Scores are f32 whatever the element type of the tiles.
func.func @score_tile_result_element_type(%qt: tensor<16x8xf16>, %kt: tensor<32x8xf16>, %i: index) {
  // expected-error @+1 {{'fa.score_tile' op result must be compatible with 'tensor<16x32xf32>', got 'tensor<16x32xf16>'}}
  %s = fa.score_tile %qt, %kt at [%i, %i, %i, %i] of [%i, %i] {scale = 0.5 : f32} : tensor<16x8xf16>, tensor<32x8xf16> -> tensor<16x32xf16>
  return
}

// -----

func.func @score_tile_result_rank(%qt: tensor<?x8xf32>, %kt: tensor<?x8xf32>, %i: index) {
  // expected-error @+1 {{'fa.score_tile' op result must be compatible with 'tensor<?x?xf32>', got 'tensor<?xf32>'}}
  %s = fa.score_tile %qt, %kt at [%i, %i, %i, %i] of [%i, %i] {scale = 0.5 : f32} : tensor<?x8xf32>, tensor<?x8xf32> -> tensor<?xf32>
  return
}

// -----

// fa-tile resolves the default scale: the attribute is required.
func.func @score_tile_scale_missing(%qt: tensor<16x8xf32>, %kt: tensor<32x8xf32>, %i: index) {
  // expected-error @+1 {{'fa.score_tile' op requires attribute 'scale'}}
  %s = fa.score_tile %qt, %kt at [%i, %i, %i, %i] of [%i, %i] : tensor<16x8xf32>, tensor<32x8xf32> -> tensor<16x32xf32>
  return
}

// -----

func.func @score_tile_scale_zero(%qt: tensor<16x8xf32>, %kt: tensor<32x8xf32>, %i: index) {
  // expected-error @+1 {{'fa.score_tile' op scale must be finite and positive, got 0.000000e+00}}
  %s = fa.score_tile %qt, %kt at [%i, %i, %i, %i] of [%i, %i] {scale = 0.0 : f32} : tensor<16x8xf32>, tensor<32x8xf32> -> tensor<16x32xf32>
  return
}

// -----

func.func @score_tile_scale_nan(%qt: tensor<16x8xf32>, %kt: tensor<32x8xf32>, %i: index) {
  // expected-error @+1 {{'fa.score_tile' op scale must be finite and positive, got nan}}
  %s = fa.score_tile %qt, %kt at [%i, %i, %i, %i] of [%i, %i] {scale = 0x7FC00000 : f32} : tensor<16x8xf32>, tensor<32x8xf32> -> tensor<16x32xf32>
  return
}

// -----

func.func @score_tile_softcap_negative(%qt: tensor<16x8xf32>, %kt: tensor<32x8xf32>, %i: index) {
  // expected-error @+1 {{'fa.score_tile' op softcap must be finite and positive, got -3.000000e+01}}
  %s = fa.score_tile %qt, %kt at [%i, %i, %i, %i] of [%i, %i] {scale = 0.5 : f32, softcap = -30.0 : f32} : tensor<16x8xf32>, tensor<32x8xf32> -> tensor<16x32xf32>
  return
}

// -----

func.func @score_tile_softcap_inf(%qt: tensor<16x8xf32>, %kt: tensor<32x8xf32>, %i: index) {
  // expected-error @+1 {{'fa.score_tile' op softcap must be finite and positive, got INF}}
  %s = fa.score_tile %qt, %kt at [%i, %i, %i, %i] of [%i, %i] {scale = 0.5 : f32, softcap = 0x7F800000 : f32} : tensor<16x8xf32>, tensor<32x8xf32> -> tensor<16x32xf32>
  return
}

// -----

func.func @score_tile_window_one_entry(%qt: tensor<16x8xf32>, %kt: tensor<32x8xf32>, %i: index) {
  // expected-error @+1 {{'fa.score_tile' op window must be two non-negative sizes}}
  %s = fa.score_tile %qt, %kt at [%i, %i, %i, %i] of [%i, %i] {scale = 0.5 : f32, window = array<i64: 4>} : tensor<16x8xf32>, tensor<32x8xf32> -> tensor<16x32xf32>
  return
}

// -----

func.func @score_tile_window_negative(%qt: tensor<16x8xf32>, %kt: tensor<32x8xf32>, %i: index) {
  // expected-error @+1 {{'fa.score_tile' op window must be two non-negative sizes}}
  %s = fa.score_tile %qt, %kt at [%i, %i, %i, %i] of [%i, %i] {scale = 0.5 : f32, window = array<i64: 4, -1>} : tensor<16x8xf32>, tensor<32x8xf32> -> tensor<16x32xf32>
  return
}

// -----

func.func @score_tile_score_mod_args(%qt: tensor<16x8xf32>, %kt: tensor<32x8xf32>, %i: index) {
  // expected-error @+1 {{'fa.score_tile' op score_mod region must have arguments (f32, index, index, index, index)}}
  %s = fa.score_tile %qt, %kt at [%i, %i, %i, %i] of [%i, %i] {scale = 0.5 : f32} : tensor<16x8xf32>, tensor<32x8xf32> -> tensor<16x32xf32> score_mod {
  ^bb0(%sc: f32, %ii: index, %j: index):
    fa.yield %sc : f32
  }
  return
}

// -----

func.func @score_tile_score_mod_yield(%qt: tensor<16x8xf32>, %kt: tensor<32x8xf32>, %i: index) {
  // expected-error @+1 {{'fa.score_tile' op score_mod region must yield one 'f32'}}
  %s = fa.score_tile %qt, %kt at [%i, %i, %i, %i] of [%i, %i] {scale = 0.5 : f32} : tensor<16x8xf32>, tensor<32x8xf32> -> tensor<16x32xf32> score_mod {
  ^bb0(%sc: f32, %b: index, %h: index, %ii: index, %j: index):
    %t = arith.truncf %sc : f32 to f16
    fa.yield %t : f16
  }
  return
}

// -----

func.func @score_tile_mask_mod_args(%qt: tensor<16x8xf32>, %kt: tensor<32x8xf32>, %i: index) {
  // expected-error @+1 {{'fa.score_tile' op mask_mod region must have arguments (index, index, index, index)}}
  %s = fa.score_tile %qt, %kt at [%i, %i, %i, %i] of [%i, %i] {scale = 0.5 : f32} : tensor<16x8xf32>, tensor<32x8xf32> -> tensor<16x32xf32> mask_mod {
  ^bb0(%sc: f32, %b: index, %h: index, %ii: index, %j: index):
    %t = arith.constant true
    fa.yield %t : i1
  }
  return
}

// -----

func.func @score_tile_mask_mod_yield(%qt: tensor<16x8xf32>, %kt: tensor<32x8xf32>, %i: index) {
  // expected-error @+1 {{'fa.score_tile' op mask_mod region must yield one 'i1'}}
  %s = fa.score_tile %qt, %kt at [%i, %i, %i, %i] of [%i, %i] {scale = 0.5 : f32} : tensor<16x8xf32>, tensor<32x8xf32> -> tensor<16x32xf32> mask_mod {
  ^bb0(%b: index, %h: index, %ii: index, %j: index):
    fa.yield
  }
  return
}

// -----

// Positions are indices (the custom form implies it; the generic one does not).
func.func @score_tile_position_type(%qt: tensor<16x8xf32>, %kt: tensor<32x8xf32>, %i: index, %x: i64) {
  // expected-error @+1 {{'fa.score_tile' op operand #2 must be index, but got 'i64'}}
  %s = "fa.score_tile"(%qt, %kt, %x, %i, %i, %i, %i, %i) <{operandSegmentSizes = array<i32: 1, 1, 1, 1, 1, 1, 1, 1, 0, 0, 0>, scale = 5.000000e-01 : f32}> ({}, {}, {}) : (tensor<16x8xf32>, tensor<32x8xf32>, i64, index, index, index, index, index) -> tensor<16x32xf32>
  return
}

// -----

//===----------------------------------------------------------------------===//
// Constraints from ODS (types, attribute kinds, segments, regions)
//===----------------------------------------------------------------------===//

func.func @scale_f64(%q: tensor<2x8x128x64xf16>, %k: tensor<2x8x128x64xf16>, %v: tensor<2x8x128x64xf16>) {
  // expected-error @+1 {{'fa.attention' op attribute 'scale' failed to satisfy constraint: 32-bit float attribute}}
  %o = fa.attention %q, %k, %v {scale = 0.125 : f64} : tensor<2x8x128x64xf16>, tensor<2x8x128x64xf16>, tensor<2x8x128x64xf16> -> tensor<2x8x128x64xf16>
  return
}

// -----

func.func @causal_bool(%q: tensor<2x8x128x64xf16>, %k: tensor<2x8x128x64xf16>, %v: tensor<2x8x128x64xf16>) {
  // expected-error @+1 {{'fa.attention' op attribute 'causal' failed to satisfy constraint: Which diagonal a causal mask follows when Nq != Nk}}
  %o = fa.attention %q, %k, %v {causal = true} : tensor<2x8x128x64xf16>, tensor<2x8x128x64xf16>, tensor<2x8x128x64xf16> -> tensor<2x8x128x64xf16>
  return
}

// -----

func.func @window_i32(%q: tensor<2x8x128x64xf16>, %k: tensor<2x8x128x64xf16>, %v: tensor<2x8x128x64xf16>) {
  // expected-error @+1 {{'fa.attention' op attribute 'window' failed to satisfy constraint: i64 dense array attribute}}
  %o = fa.attention %q, %k, %v {window = array<i32: 1, 2>} : tensor<2x8x128x64xf16>, tensor<2x8x128x64xf16>, tensor<2x8x128x64xf16> -> tensor<2x8x128x64xf16>
  return
}

// -----

func.func @lse_two(%q: tensor<2x8x128x64xf16>, %k: tensor<2x8x128x64xf16>, %v: tensor<2x8x128x64xf16>) {
  // expected-error @+1 {{'fa.attention' op result group starting at #1 requires 0 or 1 element, but found 2}}
  %o:3 = fa.attention %q, %k, %v : tensor<2x8x128x64xf16>, tensor<2x8x128x64xf16>, tensor<2x8x128x64xf16> -> tensor<2x8x128x64xf16>, tensor<2x8x128xf32>, tensor<2x8x128xf32>
  return
}

// -----

// The generic form needs operandSegmentSizes.
func.func @missing_segments(%q: tensor<2x8x128x64xf16>, %k: tensor<2x8x128x64xf16>, %v: tensor<2x8x128x64xf16>) {
  // expected-error @+1 {{'fa.attention' op operand count (3) does not match with the total size (0) specified in attribute 'operandSegmentSizes'}}
  %o = "fa.attention"(%q, %k, %v) ({}, {}) : (tensor<2x8x128x64xf16>, tensor<2x8x128x64xf16>, tensor<2x8x128x64xf16>) -> tensor<2x8x128x64xf16>
  return
}

// -----

func.func @score_mod_two_blocks(%q: tensor<2x8x128x64xf16>, %k: tensor<2x8x128x64xf16>, %v: tensor<2x8x128x64xf16>) {
  // expected-error @+1 {{'fa.attention' op region #0 ('score_mod') failed to verify constraint: region with at most 1 blocks}}
  %o = "fa.attention"(%q, %k, %v) <{operandSegmentSizes = array<i32: 1, 1, 1, 0, 0, 0, 0>}> ({
  ^bb0(%s: f32, %b: index, %h: index, %i: index, %j: index):
    fa.yield %s : f32
  ^bb1:
    %c = arith.constant 0.0 : f32
    fa.yield %c : f32
  }, {}) : (tensor<2x8x128x64xf16>, tensor<2x8x128x64xf16>, tensor<2x8x128x64xf16>) -> tensor<2x8x128x64xf16>
  return
}

// -----

// Regions are isolated from above: values come in as arguments only.
func.func @score_mod_isolated(%q: tensor<2x8x128x64xf16>, %k: tensor<2x8x128x64xf16>, %v: tensor<2x8x128x64xf16>, %c: f32) {
  // expected-note @+1 {{required by region isolation constraints}}
  %o = fa.attention %q, %k, %v : tensor<2x8x128x64xf16>, tensor<2x8x128x64xf16>, tensor<2x8x128x64xf16> -> tensor<2x8x128x64xf16> score_mod {
  ^bb0(%s: f32, %b: index, %h: index, %i: index, %j: index):
    // expected-error @+1 {{using value defined outside the region}}
    %r = arith.addf %s, %c : f32
    fa.yield %r : f32
  }
  return
}

func.func @grad_score_mod_grad_without_score_mod(%q: tensor<2x1x8x4xf32>, %o: tensor<2x1x8x4xf32>, %lse: tensor<2x1x8xf32>) {
  // expected-error @+1 {{'fa.attention_grad' op score_mod_grad needs a score_mod}}
  %dq, %dk, %dv = fa.attention_grad %q, %q, %q, %o, %o, %lse : tensor<2x1x8x4xf32>, tensor<2x1x8x4xf32>, tensor<2x1x8x4xf32>, tensor<2x1x8x4xf32>, tensor<2x1x8x4xf32>, tensor<2x1x8xf32> -> tensor<2x1x8x4xf32>, tensor<2x1x8x4xf32>, tensor<2x1x8x4xf32> score_mod_grad {
  ^bb0(%s: f32, %b: index, %h: index, %i: index, %j: index):
    fa.yield %s : f32
  }
  return
}

// -----

func.func @grad_score_mod_grad_signature(%q: tensor<2x1x8x4xf32>, %o: tensor<2x1x8x4xf32>, %lse: tensor<2x1x8xf32>) {
  // expected-error @+1 {{'fa.attention_grad' op score_mod_grad region must have arguments (f32, index, index, index, index)}}
  %dq, %dk, %dv = fa.attention_grad %q, %q, %q, %o, %o, %lse : tensor<2x1x8x4xf32>, tensor<2x1x8x4xf32>, tensor<2x1x8x4xf32>, tensor<2x1x8x4xf32>, tensor<2x1x8x4xf32>, tensor<2x1x8xf32> -> tensor<2x1x8x4xf32>, tensor<2x1x8x4xf32>, tensor<2x1x8x4xf32> score_mod {
  ^bb0(%s: f32, %b: index, %h: index, %i: index, %j: index):
    fa.yield %s : f32
  } score_mod_grad {
  ^bb0(%s: f32):
    fa.yield %s : f32
  }
  return
}

// -----

func.func @grad_score_mod_grad_yield(%q: tensor<2x1x8x4xf32>, %o: tensor<2x1x8x4xf32>, %lse: tensor<2x1x8xf32>) {
  // expected-error @+1 {{'fa.attention_grad' op score_mod_grad region must yield one 'f32'}}
  %dq, %dk, %dv = fa.attention_grad %q, %q, %q, %o, %o, %lse : tensor<2x1x8x4xf32>, tensor<2x1x8x4xf32>, tensor<2x1x8x4xf32>, tensor<2x1x8x4xf32>, tensor<2x1x8x4xf32>, tensor<2x1x8xf32> -> tensor<2x1x8x4xf32>, tensor<2x1x8x4xf32>, tensor<2x1x8x4xf32> score_mod {
  ^bb0(%s: f32, %b: index, %h: index, %i: index, %j: index):
    fa.yield %s : f32
  } score_mod_grad {
  ^bb0(%s: f32, %b: index, %h: index, %i: index, %j: index):
    fa.yield %i : index
  }
  return
}

// -----

func.func @score_tile_derivative_type(%qt: tensor<16x8xf32>, %kt: tensor<32x8xf32>, %i: index) {
  // expected-error @+1 {{'fa.score_tile' op derivative must be compatible with 'tensor<16x32xf32>', got 'tensor<16x32xf16>'}}
  %s, %d = fa.score_tile %qt, %kt at [%i, %i, %i, %i] of [%i, %i] {scale = 0.5 : f32} : tensor<16x8xf32>, tensor<32x8xf32> -> tensor<16x32xf32>, tensor<16x32xf16>
  return
}

// -----

func.func @score_tile_derivative_needs_score_mod_grad(%qt: tensor<16x8xf32>, %kt: tensor<32x8xf32>, %i: index) {
  // expected-error @+1 {{'fa.score_tile' op a derivative of a score_mod needs a score_mod_grad region; run fa-differentiate-score-mod}}
  %s, %d = fa.score_tile %qt, %kt at [%i, %i, %i, %i] of [%i, %i] {scale = 0.5 : f32} : tensor<16x8xf32>, tensor<32x8xf32> -> tensor<16x32xf32>, tensor<16x32xf32> score_mod {
  ^bb0(%s0: f32, %b: index, %h: index, %q: index, %k: index):
    fa.yield %s0 : f32
  }
  return
}

func.func @grad_bias_without_bias(%q: tensor<2x1x8x4xf32>, %o: tensor<2x1x8x4xf32>, %lse: tensor<2x1x8xf32>) {
  // expected-error @+1 {{'fa.attention_grad' op grad_bias needs a bias operand}}
  %dq, %dk, %dv, %db = fa.attention_grad %q, %q, %q, %o, %o, %lse : tensor<2x1x8x4xf32>, tensor<2x1x8x4xf32>, tensor<2x1x8x4xf32>, tensor<2x1x8x4xf32>, tensor<2x1x8x4xf32>, tensor<2x1x8xf32> -> tensor<2x1x8x4xf32>, tensor<2x1x8x4xf32>, tensor<2x1x8x4xf32>, tensor<1x1x8x8xf32>
  return
}

// -----

func.func @grad_bias_type(%q: tensor<2x1x8x4xf32>, %o: tensor<2x1x8x4xf32>, %lse: tensor<2x1x8xf32>, %bias: tensor<1x1x8x8xbf16>) {
  // expected-error @+1 {{'fa.attention_grad' op grad_bias must have the bias's type 'tensor<1x1x8x8xbf16>', got 'tensor<1x1x8x8xf32>'}}
  %dq, %dk, %dv, %db = fa.attention_grad %q, %q, %q, %o, %o, %lse bias(%bias : tensor<1x1x8x8xbf16>) : tensor<2x1x8x4xf32>, tensor<2x1x8x4xf32>, tensor<2x1x8x4xf32>, tensor<2x1x8x4xf32>, tensor<2x1x8x4xf32>, tensor<2x1x8xf32> -> tensor<2x1x8x4xf32>, tensor<2x1x8x4xf32>, tensor<2x1x8x4xf32>, tensor<1x1x8x8xf32>
  return
}

// -----

func.func @score_tile_bias_derivative_alone(%qt: tensor<16x8xf32>, %kt: tensor<32x8xf32>, %i: index) {
  // expected-error @+1 {{'fa.score_tile' op bias_derivative needs a derivative result}}
  %s = fa.score_tile %qt, %kt at [%i, %i, %i, %i] of [%i, %i] {bias_derivative, scale = 0.5 : f32} : tensor<16x8xf32>, tensor<32x8xf32> -> tensor<16x32xf32>
  return
}

// -----

//===----------------------------------------------------------------------===//
// fa.yield
//===----------------------------------------------------------------------===//

func.func @yield_outside() {
  %c = arith.constant 1.0 : f32
  // expected-error @+1 {{'fa.yield' op expects parent op to be one of 'fa.attention, fa.attention_grad, fa.score_tile'}}
  fa.yield %c : f32
}

// -----

// fa.yield is not a terminator of other ops' regions.
func.func @yield_in_scf(%cond: i1) -> f32 {
  %r = scf.if %cond -> f32 {
    %c = arith.constant 1.0 : f32
    // expected-error @+1 {{'fa.yield' op expects parent op to be one of 'fa.attention, fa.attention_grad, fa.score_tile'}}
    fa.yield %c : f32
  } else {
    %c = arith.constant 0.0 : f32
    scf.yield %c : f32
  }
  return %r : f32
}

// -----

//===----------------------------------------------------------------------===//
// captures
//===----------------------------------------------------------------------===//

func.func @capture_rank0(%q: tensor<2x8x128x64xf16>, %c: tensor<f32>) {
  // expected-error @+1 {{'fa.attention' op capture #0 must be a tensor of rank >= 1 with i8, i16, i32, i64, f16, bf16, f32 or f64 elements, got 'tensor<f32>'}}
  %o = fa.attention %q, %q, %q captures(%c : tensor<f32>) : tensor<2x8x128x64xf16>, tensor<2x8x128x64xf16>, tensor<2x8x128x64xf16> -> tensor<2x8x128x64xf16>
  return
}

// -----

func.func @capture_element_type(%q: tensor<2x8x128x64xf16>, %a: tensor<8xi32>, %c: tensor<8xi1>) {
  // expected-error @+1 {{'fa.attention_grad' op capture #1 must be a tensor of rank >= 1 with i8, i16, i32, i64, f16, bf16, f32 or f64 elements, got 'tensor<8xi1>'}}
  %dq, %dk, %dv = fa.attention_grad %q, %q, %q, %q, %q, %q captures(%a, %c : tensor<8xi32>, tensor<8xi1>) : tensor<2x8x128x64xf16>, tensor<2x8x128x64xf16>, tensor<2x8x128x64xf16>, tensor<2x8x128x64xf16>, tensor<2x8x128x64xf16>, tensor<2x8x128x64xf16> -> tensor<2x8x128x64xf16>, tensor<2x8x128x64xf16>, tensor<2x8x128x64xf16>
  return
}

// -----

func.func @capture_index_elements(%qt: tensor<16x8xf32>, %i: index, %c: tensor<4xindex>) {
  // expected-error @+1 {{'fa.score_tile' op capture #0 must be a tensor of rank >= 1 with i8, i16, i32, i64, f16, bf16, f32 or f64 elements, got 'tensor<4xindex>'}}
  %s = fa.score_tile %qt, %qt at [%i, %i, %i, %i] of [%i, %i] captures(%c : tensor<4xindex>) {scale = 0.5 : f32} : tensor<16x8xf32>, tensor<16x8xf32> -> tensor<16x16xf32>
  return
}

// -----

// A region takes every capture, after its index arguments.
func.func @capture_missing_block_arg(%q: tensor<2x8x128x64xf16>, %d: tensor<?xi32>) {
  // expected-error @+1 {{'fa.attention' op mask_mod region must have arguments (index, index, index, index, tensor<?xi32>)}}
  %o = fa.attention %q, %q, %q captures(%d : tensor<?xi32>) : tensor<2x8x128x64xf16>, tensor<2x8x128x64xf16>, tensor<2x8x128x64xf16> -> tensor<2x8x128x64xf16> mask_mod {
  ^bb0(%b: index, %h: index, %i: index, %j: index):
    %t = arith.constant true
    fa.yield %t : i1
  }
  return
}

// -----

func.func @capture_block_arg_type(%q: tensor<2x8x128x64xf16>, %d: tensor<?xi32>, %t: tensor<8xf32>) {
  // expected-error @+1 {{'fa.attention' op score_mod region must have arguments (f32, index, index, index, index, tensor<?xi32>, tensor<8xf32>)}}
  %o = fa.attention %q, %q, %q captures(%d, %t : tensor<?xi32>, tensor<8xf32>) : tensor<2x8x128x64xf16>, tensor<2x8x128x64xf16>, tensor<2x8x128x64xf16> -> tensor<2x8x128x64xf16> score_mod {
  ^bb0(%s: f32, %b: index, %h: index, %i: index, %j: index, %x: tensor<8xf32>, %y: tensor<?xi32>):
    fa.yield %s : f32
  }
  return
}

// -----

// The regions stay isolated: captures reach them only as block arguments.
func.func @capture_used_from_above(%q: tensor<2x8x128x64xf16>, %d: tensor<?xi32>) {
  // expected-note @+1 {{required by region isolation constraints}}
  %o = fa.attention %q, %q, %q captures(%d : tensor<?xi32>) : tensor<2x8x128x64xf16>, tensor<2x8x128x64xf16>, tensor<2x8x128x64xf16> -> tensor<2x8x128x64xf16> mask_mod {
  ^bb0(%b: index, %h: index, %i: index, %j: index, %x: tensor<?xi32>):
    // expected-error @+1 {{using value defined outside the region}}
    %di = tensor.extract %d[%i] : tensor<?xi32>
    %z = arith.constant 0 : i32
    %keep = arith.cmpi eq, %di, %z : i32
    fa.yield %keep : i1
  }
  return
}

// -----

func.func @score_mod_grad_captures(%q: tensor<2x1x8x4xf32>, %lse: tensor<2x1x8xf32>, %p: tensor<8xi64>) {
  // expected-error @+1 {{'fa.attention_grad' op score_mod_grad region must have arguments (f32, index, index, index, index, tensor<8xi64>)}}
  %dq, %dk, %dv = fa.attention_grad %q, %q, %q, %q, %q, %lse captures(%p : tensor<8xi64>) : tensor<2x1x8x4xf32>, tensor<2x1x8x4xf32>, tensor<2x1x8x4xf32>, tensor<2x1x8x4xf32>, tensor<2x1x8x4xf32>, tensor<2x1x8xf32> -> tensor<2x1x8x4xf32>, tensor<2x1x8x4xf32>, tensor<2x1x8x4xf32> score_mod {
  ^bb0(%s: f32, %b: index, %h: index, %i: index, %j: index, %x: tensor<8xi64>):
    fa.yield %s : f32
  } score_mod_grad {
  ^bb0(%s: f32, %b: index, %h: index, %i: index, %j: index):
    %one = arith.constant 1.0 : f32
    fa.yield %one : f32
  }
  return
}
