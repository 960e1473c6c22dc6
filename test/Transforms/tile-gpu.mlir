// RUN: fa-opt %s -fa-fuse="chip=sm_90a wgmma=false" -fa-tile -split-input-file | FileCheck %s

// fa-tile's GPU flavour: the kernel fa-fuse outlined becomes the CTA's
// program in fagpu ops, with synchronous copies (fa-async-copy makes them
// asynchronous).

// Causal (bottom-right) GQA at D = 64, with the lse: 128 x 64 tiles, heavy
// query tiles first, Q's fragments in registers.
// CHECK-LABEL: gpu.func @fa_forward_0
// CHECK-SAME: (%[[Q:[a-z0-9]+]]: memref<?x8x?x64xbf16, strided<[?, ?, ?, 1], offset: ?>> {fa.abi = "q"}, %[[K:[a-z0-9]+]]: memref<?x2x?x64xbf16, strided<[?, ?, ?, 1], offset: ?>> {fa.abi = "k"}, %[[V:[a-z0-9]+]]: memref<?x2x?x64xbf16, strided<[?, ?, ?, 1], offset: ?>> {fa.abi = "v"}, %[[O:[a-z0-9]+]]: memref<?x8x?x64xbf16, strided<[?, ?, ?, 1], offset: ?>> {fa.abi = "o"}, %[[LSE:[a-z0-9]+]]: memref<?x8x?xf32, strided<[?, ?, 1], offset: ?>> {fa.abi = "lse"})
// CHECK-NOT: fa.attention
// CHECK: %[[B:[a-z0-9_]+]], %[[H:[a-z0-9_]+]], %[[T:[a-z0-9_]+]] = fagpu.block_coords {heavy_first}
// CHECK-NEXT: %[[HK:[0-9]+]] = fagpu.kv_head %[[H]] of %[[Q]], %[[K]]
// CHECK-NEXT: %[[Q0:[0-9]+]] = arith.muli %[[T]], %{{.*}} : index
// CHECK-NEXT: %[[NQ:[a-z0-9_]+]] = memref.dim %[[Q]], %{{.*}}
// CHECK-NEXT: %[[NK:[a-z0-9_]+]] = memref.dim %[[K]], %{{.*}}
// CHECK-NEXT: %[[SQ:[0-9]+]] = fagpu.alloc_shared {offset = 0 : i64} : !fagpu.shared<1x128x64xbf16>
// CHECK-NEXT: %[[SK:[0-9]+]] = fagpu.alloc_shared {offset = 16384 : i64} : !fagpu.shared<1x64x64xbf16>
// CHECK-NEXT: %[[SV:[0-9]+]] = fagpu.alloc_shared {offset = 24576 : i64} : !fagpu.shared<1x64x64xbf16>
// CHECK-NEXT: fagpu.copy %[[Q]][%[[B]], %[[H]], %[[Q0]]] bound %[[NQ]] to %[[SQ]][%{{.*}}]
// CHECK-NEXT: %[[QA:[0-9]+]] = fagpu.load_operand %[[SQ]][%{{.*}}] : !fagpu.shared<1x128x64xbf16> -> tensor<128x64xbf16, #fagpu.operand<warps = 4>>
// CHECK-NEXT: %[[BEGIN:[a-z0-9_]+]], %[[END:[a-z0-9_]+]] = fagpu.visible_keys %[[Q0]] of [%[[NQ]], %[[NK]]] {block_kv = 64 : i64, block_q = 128 : i64, causal = #fa.causal<bottom_right>}
// The softmax as two passes over the K/V tiles (fa-online-softmax fuses
// them), in the log2 domain: c = scale * log2(e) = 0.180336878.
// CHECK: %[[NINF:[a-z0-9_]+]] = arith.constant dense<0xFF800000> : tensor<128xf32, #fagpu.rows<warps = 4>>
// CHECK-NEXT: %[[ZROWS:[a-z0-9_]+]] = arith.constant dense<0.000000e+00> : tensor<128xf32, #fagpu.rows<warps = 4>>
// CHECK-NEXT: %[[CROWS:[a-z0-9_]+]] = arith.constant dense<0.180336878> : tensor<128xf32, #fagpu.rows<warps = 4>>
// CHECK-NEXT: %[[SCALE:[a-z0-9_]+]] = arith.constant dense<0.180336878> : tensor<128x64xf32, #fagpu.acc<warps = 4>>
// Pass 1: m = max_j c s from -inf, copying K only. The masked scores are
// marked for fa-online-softmax.
// CHECK-NEXT: %[[MAX:[0-9]+]] = scf.for %[[KV0:[a-z0-9]+]] = %[[BEGIN]] to %[[END]] step %{{.*}} iter_args(%[[M:[a-z0-9]+]] = %[[NINF]]) -> (tensor<128xf32, #fagpu.rows<warps = 4>>) {
// CHECK-NEXT: fagpu.copy %[[K]][%[[B]], %[[HK]], %[[KV0]]] bound %[[NK]] to %[[SK]]
// CHECK-NEXT: %[[S:[0-9]+]] = fagpu.mma %[[QA]], %[[SK]][%{{.*}}] {b_transposed}
// CHECK-NEXT: %[[CUT:[0-9]+]] = fagpu.tile_needs_mask [%[[Q0]], %[[KV0]]] of [%[[NQ]], %[[NK]]] {block_kv = 64 : i64, block_q = 128 : i64, causal = #fa.causal<bottom_right>}
// CHECK-NEXT: %[[SM:[0-9]+]] = scf.if %[[CUT]]
// CHECK-NEXT: %[[MASKED:[0-9]+]] = fagpu.mask %[[S]] at [%[[Q0]], %[[KV0]]] of [%[[NQ]], %[[NK]]] {causal = #fa.causal<bottom_right>}
// CHECK-NEXT: scf.yield %[[MASKED]]
// CHECK-NEXT: } else {
// CHECK-NEXT: scf.yield %[[S]]
// CHECK-NEXT: } {fa.softmax_scores}
// CHECK-NEXT: %[[TMAX:[0-9]+]] = fagpu.reduce_rows <max> %[[SM]] : tensor<128x64xf32, #fagpu.acc<warps = 4>> -> tensor<128xf32, #fagpu.rows<warps = 4>>
// CHECK-NEXT: %[[TMAXC:[0-9]+]] = arith.mulf %[[TMAX]], %[[CROWS]]
// CHECK-NEXT: %[[MNEW:[0-9]+]] = arith.maximumf %[[M]], %[[TMAXC]]
// CHECK-NEXT: scf.yield %[[MNEW]]
// CHECK-NEXT: } {fa.softmax_row_max = "exp2"}
// Pass 2: p = exp2(c s - m) as one fma (m = 0 for a row that is fully
// masked), l += rowsum(p) (a partial sum), acc += P V.
// CHECK-NEXT: %[[L0:[a-z0-9_]+]] = arith.constant dense<0.000000e+00> : tensor<128xf32, #fagpu.rows<warps = 4, partial = true>>
// CHECK-NEXT: %[[ACC0:[a-z0-9_]+]] = arith.constant dense<0.000000e+00> : tensor<128x64xf32, #fagpu.acc<warps = 4>>
// CHECK-NEXT: %[[SUM:[0-9]+]]:2 = scf.for %[[KV1:[a-z0-9]+]] = %[[BEGIN]] to %[[END]] step %{{.*}} iter_args(%[[L:[a-z0-9]+]] = %[[L0]], %[[ACC:[a-z0-9]+]] = %[[ACC0]]) -> (tensor<128xf32, #fagpu.rows<warps = 4, partial = true>>, tensor<128x64xf32, #fagpu.acc<warps = 4>>) {
// CHECK-NEXT: fagpu.copy %[[K]][%[[B]], %[[HK]], %[[KV1]]] bound %[[NK]] to %[[SK]]
// CHECK-NEXT: fagpu.copy %[[V]][%[[B]], %[[HK]], %[[KV1]]] bound %[[NK]] to %[[SV]]
// CHECK-NEXT: fagpu.mma %[[QA]], %[[SK]][%{{.*}}] {b_transposed}
// CHECK: %[[SM2:[0-9]+]] = scf.if
// CHECK: } {fa.softmax_scores}
// CHECK-NEXT: %[[NONE:[0-9]+]] = arith.cmpf oeq, %[[MAX]], %[[NINF]]
// CHECK-NEXT: %[[MSAFE:[0-9]+]] = arith.select %[[NONE]], %[[ZROWS]], %[[MAX]]
// CHECK-NEXT: %[[MB:[0-9]+]] = fagpu.broadcast_rows %[[MSAFE]] : tensor<128xf32, #fagpu.rows<warps = 4>> -> tensor<128x64xf32, #fagpu.acc<warps = 4>>
// CHECK-NEXT: %[[NEGM:[0-9]+]] = arith.negf %[[MB]]
// CHECK-NEXT: %[[E:[0-9]+]] = math.fma %[[SM2]], %[[SCALE]], %[[NEGM]]
// CHECK-NEXT: %[[P:[0-9]+]] = math.exp2 %[[E]]
// CHECK-NEXT: %[[LNEW:[0-9]+]] = fagpu.update_row_sum %[[L]], %[[P]] : tensor<128xf32, #fagpu.rows<warps = 4, partial = true>>, tensor<128x64xf32, #fagpu.acc<warps = 4>>
// CHECK-NEXT: %[[PA:[0-9]+]] = fagpu.to_operand %[[P]] : tensor<128x64xf32, #fagpu.acc<warps = 4>> -> tensor<128x64xbf16, #fagpu.operand<warps = 4>>
// CHECK-NEXT: %[[ACCNEW:[0-9]+]] = fagpu.mma %[[PA]], %[[SV]][%{{.*}}] acc %[[ACC]]
// CHECK-NEXT: scf.yield %[[LNEW]], %[[ACCNEW]]
// CHECK-NEXT: } {fa.softmax_row_sum}
// The epilogue reads the CTA's place again.
// CHECK: %[[B2:[a-z0-9_]+]], %[[H2:[a-z0-9_]+]], %{{.*}} = fagpu.block_coords {heavy_first, rematerialize}
// CHECK: fagpu.reduce_rows <sum> %{{.*}} : tensor<128xf32, #fagpu.rows<warps = 4, partial = true>> -> tensor<128xf32, #fagpu.rows<warps = 4>>
// CHECK: fagpu.store %{{.*}} to %[[O]][%[[B2]], %[[H2]], %{{.*}}] bound %[[NQ]] : tensor<128x64xf32, #fagpu.acc<warps = 4>>
// CHECK: %[[LOG2L:[0-9]+]] = math.log2
// CHECK: arith.addf %[[MAX]], %[[LOG2L]]
// CHECK: fagpu.store %{{.*}} to %[[LSE]][%[[B2]], %[[H2]], %{{.*}}] bound %[[NQ]] : tensor<128xf32, #fagpu.rows<warps = 4>>
// CHECK-NEXT: gpu.return
func.func @causal(%q: tensor<?x8x?x64xbf16>, %k: tensor<?x2x?x64xbf16>, %v: tensor<?x2x?x64xbf16>) -> (tensor<?x8x?x64xbf16>, tensor<?x8x?xf32>) {
  %o, %lse = fa.attention %q, %k, %v {causal = #fa.causal<bottom_right>} : tensor<?x8x?x64xbf16>, tensor<?x2x?x64xbf16>, tensor<?x2x?x64xbf16> -> tensor<?x8x?x64xbf16>, tensor<?x8x?xf32>
  return %o, %lse : tensor<?x8x?x64xbf16>, tensor<?x8x?xf32>
}

// -----

// A window at D = 256 without the lse: 64 x 64 tiles, tiles in order, Q read
// from shared memory by each product (128 fragments would not fit), no lse
// store.
// CHECK-LABEL: gpu.func @fa_forward_0
// CHECK: fagpu.block_coords{{$}}
// CHECK: %[[SQ:[0-9]+]] = fagpu.alloc_shared {offset = 0 : i64} : !fagpu.shared<1x64x256xf16>
// CHECK-NOT: fagpu.load_operand
// CHECK: fagpu.visible_keys %{{.*}} of [%{{.*}}, %{{.*}}] {block_kv = 64 : i64, block_q = 64 : i64, window = array<i64: 128, 0>}
// CHECK: fagpu.mma %[[SQ]], %{{.*}}[%{{.*}}] {b_transposed} : !fagpu.shared<1x64x256xf16>, !fagpu.shared<1x64x256xf16> -> tensor<64x64xf32, #fagpu.acc<warps = 4>>
// CHECK: fagpu.mask %{{.*}} {window = array<i64: 128, 0>}
// CHECK: fagpu.store
// CHECK-NOT: fagpu.store
// CHECK: gpu.return
func.func @window(%q: tensor<2x4x100x256xf16>, %k: tensor<2x4x300x256xf16>, %v: tensor<2x4x300x256xf16>) -> tensor<2x4x100x256xf16> {
  %o = fa.attention %q, %k, %v {window = array<i64: 128, 0>} : tensor<2x4x100x256xf16>, tensor<2x4x300x256xf16>, tensor<2x4x300x256xf16> -> tensor<2x4x100x256xf16>
  return %o : tensor<2x4x100x256xf16>
}

// -----

// A score_mod with an op no kernel lowers keeps the builder's kernel
// (convert-fa-to-nvvm names the op): the op stays in the kernel.
// CHECK-LABEL: gpu.func @fa_forward_0
// CHECK-NOT: fagpu.
// CHECK: fa.attention
func.func @kept(%q: tensor<1x2x64x64xbf16>, %k: tensor<1x2x64x64xbf16>, %v: tensor<1x2x64x64xbf16>) -> tensor<1x2x64x64xbf16> {
  %o = fa.attention %q, %k, %v : tensor<1x2x64x64xbf16>, tensor<1x2x64x64xbf16>, tensor<1x2x64x64xbf16> -> tensor<1x2x64x64xbf16> score_mod {
  ^bb0(%s: f32, %b: index, %h: index, %i: index, %j: index):
    %a = math.atan %s : f32
    fa.yield %a : f32
  }
  return %o : tensor<1x2x64x64xbf16>
}

// -----

// Dropout: the seed is an argument with its ABI role; after the row sum
// takes P undropped, an fagpu.map multiplies each probability by Philox's
// keep (1) or drop (0) on the counter (j, i, h, b) before P is rounded for
// P V; the epilogue divides 1 / (1 - p) by l.
// CHECK-LABEL: gpu.func @fa_forward_0(
// CHECK-SAME: %[[SEED:arg4]]: i64 {fa.abi = "seed"})
// CHECK: %[[B:batch]], %[[H:head]], %{{.*}} = fagpu.block_coords{{$}}
// CHECK: scf.for %[[KV0:arg5]] =
// CHECK: %[[P:[0-9]+]] = math.exp2 %{{.*}} : tensor<64x64xf32
// CHECK-NEXT: fagpu.update_row_sum %{{.*}}, %[[P]]
// CHECK-NEXT: %[[DROPPED:[0-9]+]] = fagpu.map %[[P]] at [%{{.*}}, %[[KV0]]]
// CHECK-NEXT: ^bb0(%[[X:.+]]: f32, %[[I:.+]]: index, %[[J:.+]]: index):
// CHECK-NEXT: arith.index_castui %[[J]] : index to i32
// CHECK-NEXT: arith.index_castui %[[I]] : index to i32
// CHECK-NEXT: arith.index_castui %[[H]] : index to i32
// CHECK-NEXT: arith.index_castui %[[B]] : index to i32
// CHECK-NEXT: arith.trunci %[[SEED]] : i64 to i32
// CHECK-COUNT-20: arith.mului_extended
// CHECK: %[[KEEP:.+]] = arith.cmpf oge, %{{.*}}, %cst_{{[0-9]+}} : f32
// CHECK-NEXT: %cst_{{[0-9]+}} = arith.constant 1.000000e+00 : f32
// CHECK-NEXT: %cst_{{[0-9]+}} = arith.constant 0.000000e+00 : f32
// CHECK-NEXT: %[[Z:.+]] = arith.select %[[KEEP]]
// CHECK-NEXT: %[[R:.+]] = arith.mulf %[[X]], %[[Z]] : f32
// CHECK-NEXT: fagpu.yield %[[R]] : f32
// CHECK: fagpu.to_operand %[[DROPPED]]
// CHECK: arith.constant dense<1.11111116> : tensor<64xf32, #fagpu.rows<warps = 4>>
// CHECK: gpu.return
func.func @dropout(%q: tensor<1x2x64x64xbf16>, %k: tensor<1x2x64x64xbf16>, %v: tensor<1x2x64x64xbf16>, %seed: i64) -> tensor<1x2x64x64xbf16> {
  %o = fa.attention %q, %k, %v dropout_seed(%seed) {dropout_p = 1.000000e-01 : f32} : tensor<1x2x64x64xbf16>, tensor<1x2x64x64xbf16>, tensor<1x2x64x64xbf16> -> tensor<1x2x64x64xbf16>
  return %o : tensor<1x2x64x64xbf16>
}

// -----

// Softcap, score_mod and mask_mod, causal: the score terms as the host
// route builds them (buildScore: cap tanh(dot scale / cap), then score_mod,
// then mask_mod's -inf) in an fagpu.map on every tile, at the tile's query
// and key offsets; the causal mask stays fagpu.mask's, on the edge tiles.
// The scale is in the terms, so the exponent's factor is log2(e).
// CHECK-LABEL: gpu.func @fa_forward_0
// CHECK: %[[B:[a-z0-9_]+]], %[[H:[a-z0-9_]+]], %{{.*}} = fagpu.block_coords {heavy_first}
// CHECK: %[[Q0:[0-9]+]] = arith.muli
// CHECK: %[[LOG2E:[a-z0-9_]+]] = arith.constant dense<1.44269502> : tensor<64x64xf32, #fagpu.acc<warps = 4>>
// CHECK: scf.for %[[KV0:[a-z0-9]+]] =
// CHECK: %[[S:[0-9]+]] = fagpu.mma
// CHECK-NEXT: %[[T:[0-9]+]] = fagpu.map %[[S]] at [%[[Q0]], %[[KV0]]] : tensor<64x64xf32, #fagpu.acc<warps = 4>> -> tensor<64x64xf32, #fagpu.acc<warps = 4>> {
// CHECK-NEXT: ^bb0(%[[X:[a-z0-9]+]]: f32, %[[I:[a-z0-9]+]]: index, %[[J:[a-z0-9]+]]: index):
// CHECK: %[[XS:[0-9]+]] = arith.mulf %[[X]], %{{.*}} fastmath<contract> : f32
// CHECK-NEXT: %[[TH:[0-9]+]] = math.tanh %[[XS]] : f32
// CHECK-NEXT: %[[CAPPED:[0-9]+]] = arith.mulf %{{.*}}, %[[TH]] fastmath<contract> : f32
// CHECK-NEXT: %[[D:[0-9]+]] = arith.subi %[[I]], %[[J]] : index
// CHECK-NEXT: %[[DI:[0-9]+]] = arith.index_cast %[[D]] : index to i64
// CHECK-NEXT: %[[DF:[0-9]+]] = arith.sitofp %[[DI]] : i64 to f32
// CHECK-NEXT: %[[MOD:[0-9]+]] = arith.subf %[[CAPPED]], %[[DF]] fastmath<contract> : f32
// CHECK-NEXT: %[[KEEP:[0-9]+]] = arith.cmpi ne, %[[H]], %[[J]] : index
// CHECK-NEXT: %[[NINF:[a-z0-9_]+]] = arith.constant 0xFF800000 : f32
// CHECK-NEXT: %[[SEL:[0-9]+]] = arith.select %[[KEEP]], %[[MOD]], %[[NINF]] : f32
// CHECK-NEXT: fagpu.yield %[[SEL]] : f32
// CHECK-NEXT: }
// CHECK-NEXT: fagpu.tile_needs_mask [%[[Q0]], %[[KV0]]]
// CHECK: fagpu.mask %[[T]] at [%[[Q0]], %[[KV0]]]
// CHECK: math.fma %{{.*}}, %[[LOG2E]]
func.func @score_terms(%q: tensor<1x2x?x64xbf16>, %k: tensor<1x2x?x64xbf16>, %v: tensor<1x2x?x64xbf16>) -> tensor<1x2x?x64xbf16> {
  %o = fa.attention %q, %k, %v {causal = #fa.causal<top_left>, softcap = 30.0 : f32} : tensor<1x2x?x64xbf16>, tensor<1x2x?x64xbf16>, tensor<1x2x?x64xbf16> -> tensor<1x2x?x64xbf16> score_mod {
  ^bb0(%s: f32, %b: index, %h: index, %i: index, %j: index):
    %d = arith.subi %i, %j : index
    %di = arith.index_cast %d : index to i64
    %df = arith.sitofp %di : i64 to f32
    %r = arith.subf %s, %df : f32
    fa.yield %r : f32
  } mask_mod {
  ^bb0(%b: index, %h: index, %i: index, %j: index):
    %ne = arith.cmpi ne, %h, %j : index
    fa.yield %ne : i1
  }
  return %o : tensor<1x2x?x64xbf16>
}

// -----

// A bias (its batch dim broadcasts: the CTAs run batch fastest, so that the
// batch's CTAs of a tile read it together), ALiBi slopes [Hq] and a capture
// the score_mod reads: each buffer has its role in the ABI (fa.abi); the slope
// is loaded once per CTA, the bias and the capture per element at the
// position clamped into [0, Nq) x [0, Nk) (a ragged tile's rows and keys
// past the ends read the last one's). ALiBi's distance takes the true
// positions (i + Nk - Nq - j), which the lowering converts once per tile.
// CHECK-LABEL: gpu.func @fa_forward_0(
// CHECK-SAME: {fa.abi = "q"}
// CHECK-SAME: %[[BIAS:[a-z0-9]+]]: memref<1x2x?x?xf32, strided<[?, ?, ?, ?], offset: ?>> {fa.abi = "bias"}
// CHECK-SAME: %[[SL:[a-z0-9]+]]: memref<2xf32, strided<[1], offset: ?>> {fa.abi = "slopes"}
// CHECK-SAME: %[[TAB:[a-z0-9]+]]: memref<?xf32, strided<[?], offset: ?>> {fa.abi = "capture0"}
// CHECK: %{{.*}}, %[[H:[a-z0-9_]+]], %{{.*}} = fagpu.block_coords {batch_fastest}
// CHECK: %[[NQ:[a-z0-9_]+]] = memref.dim
// CHECK: %[[NK:[a-z0-9_]+]] = memref.dim
// CHECK: %[[T:[0-9]+]] = bufferization.to_tensor %[[TAB]] restrict
// CHECK: %[[SLOPE:[0-9]+]] = memref.load %[[SL]][%[[H]]]
// CHECK: fagpu.map
// CHECK-NEXT: ^bb0(%[[X:[a-z0-9]+]]: f32, %[[I:[a-z0-9]+]]: index, %[[J:[a-z0-9]+]]: index):
// CHECK: %[[IC:[0-9]+]] = arith.minui %[[I]], %{{.*}} : index
// CHECK: %[[JC:[0-9]+]] = arith.minui %[[J]], %{{.*}} : index
// CHECK: %[[SHIFT:[0-9]+]] = arith.subi %[[NK]], %[[NQ]] : index
// CHECK: %[[QA:[0-9]+]] = arith.addi %[[I]], %[[SHIFT]] : index
// CHECK: %[[BV:[0-9]+]] = memref.load %[[BIAS]][%{{.*}}, %[[H]], %[[IC]], %[[JC]]]
// CHECK: %[[DIST:[0-9]+]] = arith.subi %[[QA]], %[[J]] : index
// CHECK: arith.index_cast %[[DIST]] : index to i32
// CHECK: arith.mulf %[[SLOPE]]
// CHECK: arith.addf %{{.*}}, %[[BV]] fastmath<contract> : f32
// CHECK: tensor.extract %[[T]][%[[JC]]]
// CHECK: fagpu.yield
func.func @terms(%q: tensor<2x2x?x64xbf16>, %k: tensor<2x2x?x64xbf16>, %v: tensor<2x2x?x64xbf16>, %bias: tensor<1x2x?x?xf32>, %slopes: tensor<2xf32>, %table: tensor<?xf32>) -> tensor<2x2x?x64xbf16> {
  %o = fa.attention %q, %k, %v bias(%bias : tensor<1x2x?x?xf32>) alibi_slopes(%slopes : tensor<2xf32>) captures(%table : tensor<?xf32>) : tensor<2x2x?x64xbf16>, tensor<2x2x?x64xbf16>, tensor<2x2x?x64xbf16> -> tensor<2x2x?x64xbf16> score_mod {
  ^bb0(%s: f32, %b: index, %h: index, %i: index, %j: index, %t: tensor<?xf32>):
    %x = tensor.extract %t[%j] : tensor<?xf32>
    %y = arith.addf %s, %x : f32
    fa.yield %y : f32
  }
  return %o : tensor<2x2x?x64xbf16>
}

// -----

// A bias of its own per batch: nothing to share, the default order.
// CHECK-LABEL: gpu.func @fa_forward_0(
// CHECK: fagpu.block_coords{{$}}
// CHECK-NOT: batch_fastest
func.func @bias_per_batch(%q: tensor<2x2x?x64xbf16>, %k: tensor<2x2x?x64xbf16>, %v: tensor<2x2x?x64xbf16>, %bias: tensor<2x2x?x?xf32>) -> tensor<2x2x?x64xbf16> {
  %o = fa.attention %q, %k, %v bias(%bias : tensor<2x2x?x?xf32>) : tensor<2x2x?x64xbf16>, tensor<2x2x?x64xbf16>, tensor<2x2x?x64xbf16> -> tensor<2x2x?x64xbf16>
  return %o : tensor<2x2x?x64xbf16>
}
