// fa-fuse's warp-specialize on sm_90a: wgmma kernels of the plain path are
// marked `fa.warp_specialize` with a producer warpgroup's default tiles,
// 128 query rows (two consumer warpgroups) and K/V tiles of 128 rows (64 at
// D = 256; D = 96, padded to 128 columns, D = 128's), wider for plain
// kernels: without masks 192 at D = 64 and 80 at D = 256 (not with lse);
// 112 at D = 192, masked or not. D = 128 keeps 128.
// fa-warp-specialize leaves unmarked kernels alone (the UNMARKED run: the
// same kernels without the option). The scored path is marked too, with
// K/V tiles by its per-score terms beyond ALiBi's (bias, score_mod,
// mask_mod, dropout): 128 rows up to D = 128 with ALiBi alone or one
// score_mod, and at D = 64 with one term other than a bias; 64 rows with
// a bias or two terms, or at D = 128 one term other than a score_mod; 32
// rows with three terms, and at D = 256 with any.
// RUN: fa-opt %s -split-input-file -fa-fuse="chip=sm_90a warp-specialize=1" | FileCheck %s
// RUN: fa-opt %s -split-input-file -fa-fuse="chip=sm_90a" -fa-tile -fa-online-softmax -fa-warp-specialize | FileCheck %s --check-prefix=UNMARKED
// With bias-tiles (fa-bias-tiles will read the bias from shared memory), a
// bias alone takes the widest key tile of whole 128-byte panels whose two
// stages fit beside K's and V's: 128 keys of bf16 up to D = 128.
// RUN: fa-opt %s -split-input-file -fa-fuse="chip=sm_90a warp-specialize=1 bias-tiles=1" | FileCheck %s --check-prefix=TILES

// CHECK-LABEL: func.func @d64
// CHECK: gpu.func @fa_forward_0
// CHECK-SAME: fa.block_kv = 128 : i64, fa.block_q = 128 : i64, fa.warp_specialize, fa.wgmma, known_block_size = array<i32: 256, 1, 1>
// UNMARKED-LABEL: func.func @d64
// UNMARKED: gpu.func @fa_forward_0
// UNMARKED-NOT: fagpu.warp_specialize
// UNMARKED: fagpu.copy
func.func @d64(%q: tensor<1x1x8x64xf16>) -> tensor<1x1x8x64xf16> {
  %o = fa.attention %q, %q, %q {causal = #fa.causal<top_left>} : tensor<1x1x8x64xf16>, tensor<1x1x8x64xf16>, tensor<1x1x8x64xf16> -> tensor<1x1x8x64xf16>
  return %o : tensor<1x1x8x64xf16>
}

// -----

// Causal at D >= 128: the heaviest tiles of 8 heads first (fa.head_group;
// at D = 64 above, one head's tiles heavy to light).
// CHECK-LABEL: func.func @causal128
// CHECK: gpu.func @fa_forward_0
// CHECK-SAME: fa.block_kv = 128 : i64, fa.block_q = 128 : i64, fa.head_group = 8 : i64, fa.warp_specialize, fa.wgmma, known_block_size = array<i32: 256, 1, 1>
func.func @causal128(%q: tensor<1x1x8x128xbf16>) -> tensor<1x1x8x128xbf16> {
  %o = fa.attention %q, %q, %q {causal = #fa.causal<bottom_right>} : tensor<1x1x8x128xbf16>, tensor<1x1x8x128xbf16>, tensor<1x1x8x128xbf16> -> tensor<1x1x8x128xbf16>
  return %o : tensor<1x1x8x128xbf16>
}

// -----

// CHECK-LABEL: func.func @d256
// CHECK: gpu.func @fa_forward_0
// CHECK-SAME: fa.block_kv = 80 : i64, fa.block_q = 128 : i64, fa.warp_specialize, fa.wgmma, known_block_size = array<i32: 256, 1, 1>
func.func @d256(%q: tensor<1x1x8x256xbf16>) -> tensor<1x1x8x256xbf16> {
  %o = fa.attention %q, %q, %q : tensor<1x1x8x256xbf16>, tensor<1x1x8x256xbf16>, tensor<1x1x8x256xbf16> -> tensor<1x1x8x256xbf16>
  return %o : tensor<1x1x8x256xbf16>
}

// -----

// CHECK-LABEL: func.func @alibi128
// CHECK: gpu.func @fa_forward_0
// CHECK-SAME: fa.block_kv = 128 : i64, fa.block_q = 128 : i64, fa.warp_specialize, fa.wgmma, known_block_size = array<i32: 256, 1, 1>
func.func @alibi128(%q: tensor<1x1x8x128xbf16>, %s: tensor<1xf32>) -> tensor<1x1x8x128xbf16> {
  %o = fa.attention %q, %q, %q alibi_slopes(%s : tensor<1xf32>) : tensor<1x1x8x128xbf16>, tensor<1x1x8x128xbf16>, tensor<1x1x8x128xbf16> -> tensor<1x1x8x128xbf16>
  return %o : tensor<1x1x8x128xbf16>
}

// -----

// CHECK-LABEL: func.func @score128
// CHECK: gpu.func @fa_forward_0
// CHECK-SAME: fa.block_kv = 128 : i64, fa.block_q = 128 : i64, fa.warp_specialize, fa.wgmma, known_block_size = array<i32: 256, 1, 1>
func.func @score128(%q: tensor<1x1x8x128xbf16>) -> tensor<1x1x8x128xbf16> {
  %o = fa.attention %q, %q, %q : tensor<1x1x8x128xbf16>, tensor<1x1x8x128xbf16>, tensor<1x1x8x128xbf16> -> tensor<1x1x8x128xbf16> score_mod {
  ^bb0(%s: f32, %bi: index, %h: index, %i: index, %j: index):
    %d = arith.subi %j, %i : index
    %di = arith.index_cast %d : index to i64
    %df = arith.sitofp %di : i64 to f32
    %r = arith.addf %s, %df : f32
    fa.yield %r : f32
  }
  return %o : tensor<1x1x8x128xbf16>
}

// -----

// CHECK-LABEL: func.func @mask128
// CHECK: gpu.func @fa_forward_0
// CHECK-SAME: fa.block_kv = 64 : i64, fa.block_q = 128 : i64, fa.warp_specialize, fa.wgmma, known_block_size = array<i32: 256, 1, 1>
func.func @mask128(%q: tensor<1x1x8x128xbf16>) -> tensor<1x1x8x128xbf16> {
  %o = fa.attention %q, %q, %q : tensor<1x1x8x128xbf16>, tensor<1x1x8x128xbf16>, tensor<1x1x8x128xbf16> -> tensor<1x1x8x128xbf16> mask_mod {
  ^bb0(%bi: index, %h: index, %i: index, %j: index):
    %c = arith.cmpi uge, %i, %j : index
    fa.yield %c : i1
  }
  return %o : tensor<1x1x8x128xbf16>
}

// -----

// CHECK-LABEL: func.func @bias128
// CHECK: gpu.func @fa_forward_0
// CHECK-SAME: fa.block_kv = 64 : i64, fa.block_q = 128 : i64, fa.warp_specialize, fa.wgmma, known_block_size = array<i32: 256, 1, 1>
// TILES-LABEL: func.func @bias128
// TILES: fa.block_kv = 128 : i64, fa.block_q = 128 : i64
func.func @bias128(%q: tensor<1x1x8x128xbf16>, %b: tensor<1x1x8x8xbf16>) -> tensor<1x1x8x128xbf16> {
  %o = fa.attention %q, %q, %q bias(%b : tensor<1x1x8x8xbf16>) : tensor<1x1x8x128xbf16>, tensor<1x1x8x128xbf16>, tensor<1x1x8x128xbf16> -> tensor<1x1x8x128xbf16>
  return %o : tensor<1x1x8x128xbf16>
}

// -----

// CHECK-LABEL: func.func @bias64
// CHECK: gpu.func @fa_forward_0
// CHECK-SAME: fa.block_kv = 64 : i64, fa.block_q = 128 : i64, fa.warp_specialize, fa.wgmma, known_block_size = array<i32: 256, 1, 1>
// TILES-LABEL: func.func @bias64
// TILES: fa.block_kv = 128 : i64, fa.block_q = 128 : i64
func.func @bias64(%q: tensor<1x1x8x64xbf16>, %b: tensor<1x1x8x8xbf16>) -> tensor<1x1x8x64xbf16> {
  %o = fa.attention %q, %q, %q bias(%b : tensor<1x1x8x8xbf16>) : tensor<1x1x8x64xbf16>, tensor<1x1x8x64xbf16>, tensor<1x1x8x64xbf16> -> tensor<1x1x8x64xbf16>
  return %o : tensor<1x1x8x64xbf16>
}

// -----

// CHECK-LABEL: func.func @dropout64
// CHECK: gpu.func @fa_forward_0
// CHECK-SAME: fa.block_kv = 128 : i64, fa.block_q = 128 : i64, fa.warp_specialize, fa.wgmma, known_block_size = array<i32: 256, 1, 1>
func.func @dropout64(%q: tensor<1x1x8x64xbf16>, %seed: i64) -> tensor<1x1x8x64xbf16> {
  %o = fa.attention %q, %q, %q dropout_seed(%seed) {dropout_p = 1.000000e-01 : f32} : tensor<1x1x8x64xbf16>, tensor<1x1x8x64xbf16>, tensor<1x1x8x64xbf16> -> tensor<1x1x8x64xbf16>
  return %o : tensor<1x1x8x64xbf16>
}

// -----

// Two terms: a score_mod, and a mask_mod that reads h (no key ranges).
// CHECK-LABEL: func.func @two64
// CHECK: gpu.func @fa_forward_0
// CHECK-SAME: fa.block_kv = 64 : i64, fa.block_q = 128 : i64, fa.warp_specialize, fa.wgmma, known_block_size = array<i32: 256, 1, 1>
func.func @two64(%q: tensor<1x1x8x64xbf16>) -> tensor<1x1x8x64xbf16> {
  %o = fa.attention %q, %q, %q : tensor<1x1x8x64xbf16>, tensor<1x1x8x64xbf16>, tensor<1x1x8x64xbf16> -> tensor<1x1x8x64xbf16> score_mod {
  ^bb0(%s: f32, %bi: index, %h: index, %i: index, %j: index):
    %d = arith.subi %j, %i : index
    %di = arith.index_cast %d : index to i64
    %df = arith.sitofp %di : i64 to f32
    %r = arith.addf %s, %df : f32
    fa.yield %r : f32
  } mask_mod {
  ^bb0(%bi: index, %h: index, %i: index, %j: index):
    %ih = arith.addi %i, %h : index
    %c = arith.cmpi uge, %ih, %j : index
    fa.yield %c : i1
  }
  return %o : tensor<1x1x8x64xbf16>
}

// -----

// The same with a mask_mod of i and j only: fa-key-ranges will bound the
// loop, whose bounds then take registers: 32 keys (128 x 64 spills).
// CHECK-LABEL: func.func @two64_key_ranges
// CHECK: gpu.func @fa_forward_0
// CHECK-SAME: fa.block_kv = 32 : i64, fa.block_q = 128 : i64, fa.warp_specialize, fa.wgmma, known_block_size = array<i32: 256, 1, 1>
func.func @two64_key_ranges(%q: tensor<1x1x8x64xbf16>) -> tensor<1x1x8x64xbf16> {
  %o = fa.attention %q, %q, %q : tensor<1x1x8x64xbf16>, tensor<1x1x8x64xbf16>, tensor<1x1x8x64xbf16> -> tensor<1x1x8x64xbf16> score_mod {
  ^bb0(%s: f32, %bi: index, %h: index, %i: index, %j: index):
    %d = arith.subi %j, %i : index
    %di = arith.index_cast %d : index to i64
    %df = arith.sitofp %di : i64 to f32
    %r = arith.addf %s, %df : f32
    fa.yield %r : f32
  } mask_mod {
  ^bb0(%bi: index, %h: index, %i: index, %j: index):
    %c = arith.cmpi uge, %i, %j : index
    fa.yield %c : i1
  }
  return %o : tensor<1x1x8x64xbf16>
}

// -----

// CHECK-LABEL: func.func @three128
// CHECK: gpu.func @fa_forward_0
// CHECK-SAME: fa.block_kv = 32 : i64, fa.block_q = 128 : i64, fa.warp_specialize, fa.wgmma, known_block_size = array<i32: 256, 1, 1>
func.func @three128(%q: tensor<1x1x8x128xbf16>, %b: tensor<1x1x8x8xbf16>) -> tensor<1x1x8x128xbf16> {
  %o = fa.attention %q, %q, %q bias(%b : tensor<1x1x8x8xbf16>) : tensor<1x1x8x128xbf16>, tensor<1x1x8x128xbf16>, tensor<1x1x8x128xbf16> -> tensor<1x1x8x128xbf16> score_mod {
  ^bb0(%s: f32, %bi: index, %h: index, %i: index, %j: index):
    %d = arith.subi %j, %i : index
    %di = arith.index_cast %d : index to i64
    %df = arith.sitofp %di : i64 to f32
    %r = arith.addf %s, %df : f32
    fa.yield %r : f32
  } mask_mod {
  ^bb0(%bi: index, %h: index, %i: index, %j: index):
    %c = arith.cmpi uge, %i, %j : index
    fa.yield %c : i1
  }
  return %o : tensor<1x1x8x128xbf16>
}

// -----

// CHECK-LABEL: func.func @alibi256
// CHECK: gpu.func @fa_forward_0
// CHECK-SAME: fa.block_kv = 64 : i64, fa.block_q = 128 : i64, fa.warp_specialize, fa.wgmma, known_block_size = array<i32: 256, 1, 1>
func.func @alibi256(%q: tensor<1x1x8x256xbf16>, %s: tensor<1xf32>) -> tensor<1x1x8x256xbf16> {
  %o = fa.attention %q, %q, %q alibi_slopes(%s : tensor<1xf32>) : tensor<1x1x8x256xbf16>, tensor<1x1x8x256xbf16>, tensor<1x1x8x256xbf16> -> tensor<1x1x8x256xbf16>
  return %o : tensor<1x1x8x256xbf16>
}

// -----

// CHECK-LABEL: func.func @score256
// CHECK: gpu.func @fa_forward_0
// CHECK-SAME: fa.block_kv = 32 : i64, fa.block_q = 128 : i64, fa.warp_specialize, fa.wgmma, known_block_size = array<i32: 256, 1, 1>
func.func @score256(%q: tensor<1x1x8x256xbf16>) -> tensor<1x1x8x256xbf16> {
  %o = fa.attention %q, %q, %q : tensor<1x1x8x256xbf16>, tensor<1x1x8x256xbf16>, tensor<1x1x8x256xbf16> -> tensor<1x1x8x256xbf16> score_mod {
  ^bb0(%s: f32, %bi: index, %h: index, %i: index, %j: index):
    %d = arith.subi %j, %i : index
    %di = arith.index_cast %d : index to i64
    %df = arith.sitofp %di : i64 to f32
    %r = arith.addf %s, %df : f32
    fa.yield %r : f32
  }
  return %o : tensor<1x1x8x256xbf16>
}

// -----

// CHECK-LABEL: func.func @d64_wide
// CHECK: gpu.func @fa_forward_0
// CHECK-SAME: fa.block_kv = 192 : i64, fa.block_q = 128 : i64, fa.warp_specialize, fa.wgmma, known_block_size = array<i32: 256, 1, 1>
func.func @d64_wide(%q: tensor<1x1x8x64xbf16>) -> tensor<1x1x8x64xbf16> {
  %o = fa.attention %q, %q, %q : tensor<1x1x8x64xbf16>, tensor<1x1x8x64xbf16>, tensor<1x1x8x64xbf16> -> tensor<1x1x8x64xbf16>
  return %o : tensor<1x1x8x64xbf16>
}

// -----

// CHECK-LABEL: func.func @d128_plain
// CHECK: gpu.func @fa_forward_0
// CHECK-SAME: fa.block_kv = 128 : i64, fa.block_q = 128 : i64, fa.warp_specialize, fa.wgmma, known_block_size = array<i32: 256, 1, 1>
func.func @d128_plain(%q: tensor<1x1x8x128xbf16>) -> tensor<1x1x8x128xbf16> {
  %o = fa.attention %q, %q, %q : tensor<1x1x8x128xbf16>, tensor<1x1x8x128xbf16>, tensor<1x1x8x128xbf16> -> tensor<1x1x8x128xbf16>
  return %o : tensor<1x1x8x128xbf16>
}

// -----

// D = 256 with lse keeps 64 keys.
// CHECK-LABEL: func.func @d256_lse
// CHECK: gpu.func @fa_forward_0
// CHECK-SAME: fa.block_kv = 64 : i64, fa.block_q = 128 : i64, fa.warp_specialize, fa.wgmma, known_block_size = array<i32: 256, 1, 1>
func.func @d256_lse(%q: tensor<1x1x8x256xbf16>) -> (tensor<1x1x8x256xbf16>, tensor<1x1x8xf32>) {
  %o, %lse = fa.attention %q, %q, %q : tensor<1x1x8x256xbf16>, tensor<1x1x8x256xbf16>, tensor<1x1x8x256xbf16> -> tensor<1x1x8x256xbf16>, tensor<1x1x8xf32>
  return %o, %lse : tensor<1x1x8x256xbf16>, tensor<1x1x8xf32>
}

// -----

// Softcap and windows keep 128 keys.
// CHECK-LABEL: func.func @d128_softcap
// CHECK: gpu.func @fa_forward_0
// CHECK-SAME: fa.block_kv = 128 : i64, fa.block_q = 128 : i64, fa.tanh_fma = 4 : i64, fa.warp_specialize, fa.wgmma, known_block_size = array<i32: 256, 1, 1>
func.func @d128_softcap(%q: tensor<1x1x8x128xbf16>) -> tensor<1x1x8x128xbf16> {
  %o = fa.attention %q, %q, %q {softcap = 3.000000e+01 : f32} : tensor<1x1x8x128xbf16>, tensor<1x1x8x128xbf16>, tensor<1x1x8x128xbf16> -> tensor<1x1x8x128xbf16>
  return %o : tensor<1x1x8x128xbf16>
}

// -----

// CHECK-LABEL: func.func @d64_window
// CHECK: gpu.func @fa_forward_0
// CHECK-SAME: fa.block_kv = 128 : i64, fa.block_q = 128 : i64, fa.warp_specialize, fa.wgmma, known_block_size = array<i32: 256, 1, 1>
func.func @d64_window(%q: tensor<1x1x8x64xbf16>) -> tensor<1x1x8x64xbf16> {
  %o = fa.attention %q, %q, %q {window = array<i64: 16, 0>} : tensor<1x1x8x64xbf16>, tensor<1x1x8x64xbf16>, tensor<1x1x8x64xbf16> -> tensor<1x1x8x64xbf16>
  return %o : tensor<1x1x8x64xbf16>
}

// -----

// D = 192: 112 keys, causal too.
// CHECK-LABEL: func.func @causal192
// CHECK: gpu.func @fa_forward_0
// CHECK-SAME: fa.block_kv = 112 : i64, fa.block_q = 128 : i64, fa.head_group = 8 : i64, fa.warp_specialize, fa.wgmma, known_block_size = array<i32: 256, 1, 1>
func.func @causal192(%q: tensor<1x1x8x192xbf16>) -> tensor<1x1x8x192xbf16> {
  %o = fa.attention %q, %q, %q {causal = #fa.causal<top_left>} : tensor<1x1x8x192xbf16>, tensor<1x1x8x192xbf16>, tensor<1x1x8x192xbf16> -> tensor<1x1x8x192xbf16>
  return %o : tensor<1x1x8x192xbf16>
}

// -----

// D = 96: D = 128's tiles (fa-fuse pads it to wgmma's 128 columns).
// CHECK-LABEL: func.func @d96
// CHECK: gpu.func @fa_forward_0
// CHECK-SAME: fa.block_kv = 128 : i64, fa.block_q = 128 : i64, fa.warp_specialize, fa.wgmma, known_block_size = array<i32: 256, 1, 1>
func.func @d96(%q: tensor<1x1x8x96xbf16>) -> tensor<1x1x8x96xbf16> {
  %o = fa.attention %q, %q, %q : tensor<1x1x8x96xbf16>, tensor<1x1x8x96xbf16>, tensor<1x1x8x96xbf16> -> tensor<1x1x8x96xbf16>
  return %o : tensor<1x1x8x96xbf16>
}

// -----

// bias-tiles: an f32 bias at D = 128 (two 128-key stages would not fit: 64
// keys).
// TILES-LABEL: func.func @bias128_f32
// TILES: fa.block_kv = 64 : i64, fa.block_q = 128 : i64
// CHECK-LABEL: func.func @bias128_f32
// CHECK: fa.block_kv = 64 : i64
func.func @bias128_f32(%q: tensor<1x1x8x128xbf16>, %b: tensor<1x1x8x8xf32>) -> tensor<1x1x8x128xbf16> {
  %o = fa.attention %q, %q, %q bias(%b : tensor<1x1x8x8xf32>) : tensor<1x1x8x128xbf16>, tensor<1x1x8x128xbf16>, tensor<1x1x8x128xbf16> -> tensor<1x1x8x128xbf16>
  return %o : tensor<1x1x8x128xbf16>
}

// -----

// bias-tiles: a bf16 bias at D = 256, 64 keys (one load a score takes 32).
// TILES-LABEL: func.func @bias256
// TILES: fa.block_kv = 64 : i64, fa.block_q = 128 : i64
// CHECK-LABEL: func.func @bias256
// CHECK: fa.block_kv = 32 : i64
func.func @bias256(%q: tensor<1x1x8x256xbf16>, %b: tensor<1x1x8x8xbf16>) -> tensor<1x1x8x256xbf16> {
  %o = fa.attention %q, %q, %q bias(%b : tensor<1x1x8x8xbf16>) : tensor<1x1x8x256xbf16>, tensor<1x1x8x256xbf16>, tensor<1x1x8x256xbf16> -> tensor<1x1x8x256xbf16>
  return %o : tensor<1x1x8x256xbf16>
}
