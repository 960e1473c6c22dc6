// RUN: fa-opt %s | fa-opt | FileCheck %s
// RUN: fa-opt %s -mlir-print-op-generic | fa-opt | FileCheck %s

// The forward of causal attention at D = 64, as the kernel-level IR says
// it: one CTA per (batch, head, 128-query tile), K/V tiles of 64 rows copied
// asynchronously into one-stage rings, S = Q K^T and O += P V on tensor
// cores, the online softmax on the fragments.

#acc = #fagpu.acc<warps = 4>
#a = #fagpu.operand<warps = 4>
#rows = #fagpu.rows<warps = 4>
#partial = #fagpu.rows<warps = 4, partial = true>
!qkv = memref<?x?x?x64xbf16, strided<[?, ?, ?, 1], offset: ?>>
!lse = memref<?x?x?xf32, strided<[?, ?, 1], offset: ?>>

// CHECK-LABEL: func.func @forward
// CHECK-SAME: %[[Q:[a-z0-9]+]]: memref<?x?x?x64xbf16, strided<[?, ?, ?, 1], offset: ?>>
func.func @forward(%q: !qkv, %k: !qkv, %v: !qkv, %o: !qkv, %lse: !lse) {
  %c0 = arith.constant 0 : index
  %c2 = arith.constant 2 : index
  %c64 = arith.constant 64 : index
  %c128 = arith.constant 128 : index
  // CHECK: %[[B:[a-z0-9]+]], %[[H:[a-z0-9]+]], %[[T:[a-z0-9]+]] = fagpu.block_coords {heavy_first}
  %b, %h, %t = fagpu.block_coords {heavy_first}
  // CHECK: %[[HK:[a-z0-9]+]] = fagpu.kv_head %[[H]] of %[[Q]], %{{.*}} : memref<?x?x?x64xbf16, strided<[?, ?, ?, 1], offset: ?>>, memref<?x?x?x64xbf16, strided<[?, ?, ?, 1], offset: ?>>
  %hk = fagpu.kv_head %h of %q, %k : !qkv, !qkv
  %q0 = arith.muli %t, %c128 : index
  %nq = memref.dim %q, %c2 : !qkv
  %nk = memref.dim %k, %c2 : !qkv
  // CHECK: fagpu.alloc_shared {offset = 0 : i64} : !fagpu.shared<1x128x64xbf16>
  %sq = fagpu.alloc_shared {offset = 0} : !fagpu.shared<1x128x64xbf16>
  %sk = fagpu.alloc_shared {offset = 16384} : !fagpu.shared<1x64x64xbf16>
  %sv = fagpu.alloc_shared {offset = 24576} : !fagpu.shared<1x64x64xbf16>
  // CHECK: %[[TQ:[a-z0-9]+]] = fagpu.async_copy %[[Q]][%[[B]], %[[H]], %{{.*}}] bound %{{.*}} to %{{.*}}[%{{.*}}] : memref<?x?x?x64xbf16, strided<[?, ?, ?, 1], offset: ?>> to !fagpu.shared<1x128x64xbf16>
  %tq = fagpu.async_copy %q[%b, %h, %q0] bound %nq to %sq[%c0] : !qkv to !fagpu.shared<1x128x64xbf16>
  // CHECK: %[[GQ:[a-z0-9]+]] = fagpu.async_commit %[[TQ]]
  %gq = fagpu.async_commit %tq
  // CHECK: %{{.*}}, %{{.*}} = fagpu.visible_keys %{{.*}} of [%{{.*}}, %{{.*}}] {block_kv = 64 : i64, block_q = 128 : i64, causal = #fa.causal<bottom_right>}
  %begin, %end = fagpu.visible_keys %q0 of [%nq, %nk] {block_q = 128, block_kv = 64, causal = #fa.causal<bottom_right>}
  %any = arith.cmpi slt, %begin, %end : index
  // CHECK: scf.if %{{.*}} -> (!fagpu.token)
  %gk = scf.if %any -> !fagpu.token {
    %tk = fagpu.async_copy %k[%b, %hk, %begin] bound %nk to %sk[%c0] : !qkv to !fagpu.shared<1x64x64xbf16>
    %g = fagpu.async_commit %tk
    scf.yield %g : !fagpu.token
  } else {
    // CHECK: fagpu.async_commit{{ *$}}
    %g = fagpu.async_commit
    scf.yield %g : !fagpu.token
  }
  // CHECK: fagpu.async_wait %[[GQ]] {pending = 1 : i64}
  fagpu.async_wait %gq {pending = 1}
  gpu.barrier
  // CHECK: fagpu.load_operand %{{.*}}[%{{.*}}] : !fagpu.shared<1x128x64xbf16> -> tensor<128x64xbf16, #fagpu.operand<warps = 4>>
  %qa = fagpu.load_operand %sq[%c0] : !fagpu.shared<1x128x64xbf16> -> tensor<128x64xbf16, #a>
  %ninf = arith.constant dense<0xFF800000> : tensor<128xf32, #rows>
  %zl = arith.constant dense<0.0> : tensor<128xf32, #partial>
  %zacc = arith.constant dense<0.0> : tensor<128x64xf32, #acc>
  %scale = arith.constant dense<0.180336878> : tensor<128x64xf32, #acc>
  %res:4 = scf.for %kv0 = %begin to %end step %c64 iter_args(%m = %ninf, %l = %zl, %acc = %zacc, %gk1 = %gk) -> (tensor<128xf32, #rows>, tensor<128xf32, #partial>, tensor<128x64xf32, #acc>, !fagpu.token) {
    fagpu.async_wait %gk1 {pending = 0}
    gpu.barrier
    %tv = fagpu.async_copy %v[%b, %hk, %kv0] bound %nk to %sv[%c0] : !qkv to !fagpu.shared<1x64x64xbf16>
    %gv = fagpu.async_commit %tv
    // CHECK: fagpu.mma %{{.*}}, %{{.*}}[%{{.*}}] {b_transposed} : tensor<128x64xbf16, #fagpu.operand<warps = 4>>, !fagpu.shared<1x64x64xbf16> -> tensor<128x64xf32, #fagpu.acc<warps = 4>>
    %s = fagpu.mma %qa, %sk[%c0] {b_transposed} : tensor<128x64xbf16, #a>, !fagpu.shared<1x64x64xbf16> -> tensor<128x64xf32, #acc>
    fagpu.async_wait %gv {pending = 0}
    gpu.barrier
    %next = arith.addi %kv0, %c64 : index
    %more = arith.cmpi slt, %next, %end : index
    %gk2 = scf.if %more -> !fagpu.token {
      %tk = fagpu.async_copy %k[%b, %hk, %next] bound %nk to %sk[%c0] : !qkv to !fagpu.shared<1x64x64xbf16>
      %g = fagpu.async_commit %tk
      scf.yield %g : !fagpu.token
    } else {
      %g = fagpu.async_commit
      scf.yield %g : !fagpu.token
    }
    // CHECK: fagpu.tile_needs_mask [%{{.*}}, %{{.*}}] of [%{{.*}}, %{{.*}}] {block_kv = 64 : i64, block_q = 128 : i64, causal = #fa.causal<bottom_right>}
    %cut = fagpu.tile_needs_mask [%q0, %kv0] of [%nq, %nk] {block_q = 128, block_kv = 64, causal = #fa.causal<bottom_right>}
    %sm = scf.if %cut -> tensor<128x64xf32, #acc> {
      // CHECK: fagpu.mask %{{.*}} at [%{{.*}}, %{{.*}}] of [%{{.*}}, %{{.*}}] {causal = #fa.causal<bottom_right>} : tensor<128x64xf32, #fagpu.acc<warps = 4>>
      %x = fagpu.mask %s at [%q0, %kv0] of [%nq, %nk] {causal = #fa.causal<bottom_right>} : tensor<128x64xf32, #acc>
      scf.yield %x : tensor<128x64xf32, #acc>
    } else {
      scf.yield %s : tensor<128x64xf32, #acc>
    }
    // CHECK: fagpu.reduce_rows <max> %{{.*}} : tensor<128x64xf32, #fagpu.acc<warps = 4>> -> tensor<128xf32, #fagpu.rows<warps = 4>>
    %tmax = fagpu.reduce_rows #fagpu.reduce<max> %sm : tensor<128x64xf32, #acc> -> tensor<128xf32, #rows>
    %mnew = arith.maximumf %m, %tmax : tensor<128xf32, #rows>
    %alpha = math.exp2 %mnew : tensor<128xf32, #rows>
    // CHECK: fagpu.broadcast_rows %{{.*}} : tensor<128xf32, #fagpu.rows<warps = 4>> -> tensor<128x64xf32, #fagpu.acc<warps = 4>>
    %mb = fagpu.broadcast_rows %mnew : tensor<128xf32, #rows> -> tensor<128x64xf32, #acc>
    %x = arith.mulf %sm, %scale : tensor<128x64xf32, #acc>
    %y = arith.subf %x, %mb : tensor<128x64xf32, #acc>
    %p = math.exp2 %y : tensor<128x64xf32, #acc>
    // CHECK: fagpu.reduce_rows <sum> %{{.*}} : tensor<128x64xf32, #fagpu.acc<warps = 4>> -> tensor<128xf32, #fagpu.rows<warps = 4, partial = true>>
    %ps = fagpu.reduce_rows #fagpu.reduce<sum> %p : tensor<128x64xf32, #acc> -> tensor<128xf32, #partial>
    // CHECK: fagpu.scale_rows %{{.*}}, %{{.*}} : tensor<128xf32, #fagpu.rows<warps = 4, partial = true>>, tensor<128xf32, #fagpu.rows<warps = 4>>
    %ls = fagpu.scale_rows %l, %alpha : tensor<128xf32, #partial>, tensor<128xf32, #rows>
    // CHECK: fagpu.update_row_sum %{{.*}}, %{{.*}} : tensor<128xf32, #fagpu.rows<warps = 4, partial = true>>, tensor<128x64xf32, #fagpu.acc<warps = 4>>
    %l2 = fagpu.update_row_sum %ls, %p : tensor<128xf32, #partial>, tensor<128x64xf32, #acc>
    // CHECK: fagpu.update_row_sum %{{.*}}, %{{.*}} rounded bf16 : tensor<128xf32, #fagpu.rows<warps = 4, partial = true>>, tensor<128x64xf32, #fagpu.acc<warps = 4>>
    %l3 = fagpu.update_row_sum %ls, %p rounded bf16 : tensor<128xf32, #partial>, tensor<128x64xf32, #acc>
    // CHECK: fagpu.scale_rows %{{.*}}, %{{.*}} : tensor<128x64xf32, #fagpu.acc<warps = 4>>, tensor<128xf32, #fagpu.rows<warps = 4>>
    %accs = fagpu.scale_rows %acc, %alpha : tensor<128x64xf32, #acc>, tensor<128xf32, #rows>
    // CHECK: fagpu.to_operand %{{.*}} : tensor<128x64xf32, #fagpu.acc<warps = 4>> -> tensor<128x64xbf16, #fagpu.operand<warps = 4>>
    %pa = fagpu.to_operand %p : tensor<128x64xf32, #acc> -> tensor<128x64xbf16, #a>
    // CHECK: fagpu.mma %{{.*}}, %{{.*}}[%{{.*}}] acc %{{.*}} : tensor<128x64xbf16, #fagpu.operand<warps = 4>>, !fagpu.shared<1x64x64xbf16> -> tensor<128x64xf32, #fagpu.acc<warps = 4>>
    %acc2 = fagpu.mma %pa, %sv[%c0] acc %accs : tensor<128x64xbf16, #a>, !fagpu.shared<1x64x64xbf16> -> tensor<128x64xf32, #acc>
    scf.yield %mnew, %l2, %acc2, %gk2 : tensor<128xf32, #rows>, tensor<128xf32, #partial>, tensor<128x64xf32, #acc>, !fagpu.token
  }
  // CHECK: fagpu.block_coords {heavy_first, rematerialize}
  %b2, %h2, %t2 = fagpu.block_coords {heavy_first, rematerialize}
  // CHECK: fagpu.block_coords {head_group = 8 : i64, heavy_first}
  %b3, %h3, %t3 = fagpu.block_coords {heavy_first, head_group = 8 : i64}
  // CHECK: fagpu.block_coords {batch_fastest, heavy_first}
  %b4, %h4, %t4 = fagpu.block_coords {batch_fastest, heavy_first}
  %q02 = arith.muli %t2, %c128 : index
  // CHECK: fagpu.reduce_rows <sum> %{{.*}} : tensor<128xf32, #fagpu.rows<warps = 4, partial = true>> -> tensor<128xf32, #fagpu.rows<warps = 4>>
  %l = fagpu.reduce_rows #fagpu.reduce<sum> %res#1 : tensor<128xf32, #partial> -> tensor<128xf32, #rows>
  %lb = fagpu.broadcast_rows %l : tensor<128xf32, #rows> -> tensor<128x64xf32, #acc>
  %out = arith.divf %res#2, %lb : tensor<128x64xf32, #acc>
  // CHECK: fagpu.store %{{.*}} to %{{.*}}[%{{.*}}, %{{.*}}, %{{.*}}] bound %{{.*}} : tensor<128x64xf32, #fagpu.acc<warps = 4>>, memref<?x?x?x64xbf16, strided<[?, ?, ?, 1], offset: ?>>
  fagpu.store %out to %o[%b2, %h2, %q02] bound %nq : tensor<128x64xf32, #acc>, !qkv
  // CHECK: fagpu.store %{{.*}} to %{{.*}}[%{{.*}}, %{{.*}}, %{{.*}}] bound %{{.*}} : tensor<128xf32, #fagpu.rows<warps = 4>>, memref<?x?x?xf32, strided<[?, ?, 1], offset: ?>>
  fagpu.store %l to %lse[%b2, %h2, %q02] bound %nq : tensor<128xf32, #rows>, !lse
  return
}

// A variant's score terms on a tile: softcap, and a mask_mod that keeps
// keys of the same parity as the query.
// CHECK-LABEL: func.func @score_terms
// CHECK: fagpu.map %{{.*}} at [%{{.*}}, %{{.*}}] : tensor<64x32xf32, #fagpu.acc<warps = 4>> -> tensor<64x32xf32, #fagpu.acc<warps = 4>> {
// CHECK-NEXT: ^bb0(%[[X:.*]]: f32, %[[I:.*]]: index, %[[J:.*]]: index):
// CHECK: math.tanh
// CHECK: arith.select
// CHECK-NEXT: fagpu.yield %{{.*}} : f32
// CHECK-NEXT: }
func.func @score_terms(%s: tensor<64x32xf32, #acc>, %q0: index, %k0: index) -> tensor<64x32xf32, #acc> {
  %t = fagpu.map %s at [%q0, %k0] : tensor<64x32xf32, #acc> -> tensor<64x32xf32, #acc> {
  ^bb0(%x: f32, %i: index, %j: index):
    %cap = arith.constant 30.0 : f32
    %inf = arith.constant 0xFF800000 : f32
    %c2 = arith.constant 2 : index
    %y = arith.divf %x, %cap : f32
    %th = math.tanh %y : f32
    %c = arith.mulf %th, %cap : f32
    %d = arith.subi %i, %j : index
    %r = arith.remui %d, %c2 : index
    %c0 = arith.constant 0 : index
    %same = arith.cmpi eq, %r, %c0 : index
    %v = arith.select %same, %c, %inf : f32
    fagpu.yield %v : f32
  }
  return %t : tensor<64x32xf32, #acc>
}

// wgmma: tiles in wgmma's 128-byte swizzle, S from Q and K in shared memory,
// P V with P from registers; 8 warps are two warpgroups.
// CHECK-LABEL: func.func @wgmma
func.func @wgmma(%q: !fagpu.shared<1x128x128xbf16, wgmma>, %k: !fagpu.shared<2x128x128xbf16, wgmma>, %p: tensor<128x128xbf16, #fagpu.operand<warps = 8>>, %acc: tensor<128x128xf32, #fagpu.acc<warps = 8>>, %i: index) -> tensor<128x128xf32, #fagpu.acc<warps = 8>> {
  // CHECK: fagpu.mma %{{.*}}, %{{.*}}[%{{.*}}] {b_transposed, wgmma} : !fagpu.shared<1x128x128xbf16, wgmma>, !fagpu.shared<2x128x128xbf16, wgmma> -> tensor<128x128xf32, #fagpu.acc<warps = 8>>
  %s = fagpu.mma %q, %k[%i] {b_transposed, wgmma} : !fagpu.shared<1x128x128xbf16, wgmma>, !fagpu.shared<2x128x128xbf16, wgmma> -> tensor<128x128xf32, #fagpu.acc<warps = 8>>
  // CHECK: fagpu.mma %{{.*}}, %{{.*}}[%{{.*}}] acc %{{.*}} {wgmma} : tensor<128x128xbf16, #fagpu.operand<warps = 8>>, !fagpu.shared<2x128x128xbf16, wgmma> -> tensor<128x128xf32, #fagpu.acc<warps = 8>>
  %o = fagpu.mma %p, %k[%i] acc %acc {wgmma} : tensor<128x128xbf16, #fagpu.operand<warps = 8>>, !fagpu.shared<2x128x128xbf16, wgmma> -> tensor<128x128xf32, #fagpu.acc<warps = 8>>
  return %o : tensor<128x128xf32, #fagpu.acc<warps = 8>>
}

// A head dim between wgmma's panels (Dk = 80, Dv = 96) in 128-column tiles:
// S over the first 80 columns (depth), P V of 96 columns from V's 128, and
// copies of the 80- and 96-element rows into them.
// CHECK-LABEL: func.func @wgmma_padded
func.func @wgmma_padded(%qg: memref<?x?x?x80xbf16>, %vg: memref<?x?x?x96xbf16>, %q: !fagpu.shared<1x128x128xbf16, wgmma>, %k: !fagpu.shared<2x128x128xbf16, wgmma>, %p: tensor<128x128xbf16, #fagpu.operand<warps = 8>>, %acc: tensor<128x96xf32, #fagpu.acc<warps = 8>>, %i: index) -> (tensor<128x128xf32, #fagpu.acc<warps = 8>>, tensor<128x96xf32, #fagpu.acc<warps = 8>>) {
  // CHECK: fagpu.copy %{{.*}} to %{{.*}}[%{{.*}}] : memref<?x?x?x80xbf16> to !fagpu.shared<1x128x128xbf16, wgmma>
  fagpu.copy %qg[%i, %i, %i] bound %i to %q[%i] : memref<?x?x?x80xbf16> to !fagpu.shared<1x128x128xbf16, wgmma>
  // CHECK: fagpu.copy %{{.*}} to %{{.*}}[%{{.*}}] : memref<?x?x?x96xbf16> to !fagpu.shared<2x128x128xbf16, wgmma>
  fagpu.copy %vg[%i, %i, %i] bound %i to %k[%i] : memref<?x?x?x96xbf16> to !fagpu.shared<2x128x128xbf16, wgmma>
  // CHECK: fagpu.mma %{{.*}}, %{{.*}}[%{{.*}}] {b_transposed, depth = 80 : i64, wgmma} : !fagpu.shared<1x128x128xbf16, wgmma>, !fagpu.shared<2x128x128xbf16, wgmma> -> tensor<128x128xf32, #fagpu.acc<warps = 8>>
  %s = fagpu.mma %q, %k[%i] {b_transposed, depth = 80, wgmma} : !fagpu.shared<1x128x128xbf16, wgmma>, !fagpu.shared<2x128x128xbf16, wgmma> -> tensor<128x128xf32, #fagpu.acc<warps = 8>>
  // CHECK: fagpu.mma %{{.*}}, %{{.*}}[%{{.*}}] acc %{{.*}} {wgmma} : tensor<128x128xbf16, #fagpu.operand<warps = 8>>, !fagpu.shared<2x128x128xbf16, wgmma> -> tensor<128x96xf32, #fagpu.acc<warps = 8>>
  %o = fagpu.mma %p, %k[%i] acc %acc {wgmma} : tensor<128x128xbf16, #fagpu.operand<warps = 8>>, !fagpu.shared<2x128x128xbf16, wgmma> -> tensor<128x96xf32, #fagpu.acc<warps = 8>>
  return %s, %o : tensor<128x128xf32, #fagpu.acc<warps = 8>>, tensor<128x96xf32, #fagpu.acc<warps = 8>>
}

// Async products and their waits: S and P V in flight together, S waited
// for with P V still pending.
// CHECK-LABEL: func.func @wgmma_async
func.func @wgmma_async(%q: !fagpu.shared<1x128x128xbf16, wgmma>, %k: !fagpu.shared<2x128x128xbf16, wgmma>, %p: tensor<128x128xbf16, #fagpu.operand<warps = 8>>, %acc: tensor<128x128xf32, #fagpu.acc<warps = 8>>, %i: index) -> (tensor<128x128xf32, #fagpu.acc<warps = 8>>, tensor<128x128xf32, #fagpu.acc<warps = 8>>) {
  // CHECK: %[[S:.*]] = fagpu.mma %{{.*}}, %{{.*}}[%{{.*}}] {async, b_transposed, wgmma}
  %s = fagpu.mma %q, %k[%i] {async, b_transposed, wgmma} : !fagpu.shared<1x128x128xbf16, wgmma>, !fagpu.shared<2x128x128xbf16, wgmma> -> tensor<128x128xf32, #fagpu.acc<warps = 8>>
  // CHECK: %[[O:.*]] = fagpu.mma %{{.*}}, %{{.*}}[%{{.*}}] acc %{{.*}} {async, wgmma}
  %o = fagpu.mma %p, %k[%i] acc %acc {async, wgmma} : tensor<128x128xbf16, #fagpu.operand<warps = 8>>, !fagpu.shared<2x128x128xbf16, wgmma> -> tensor<128x128xf32, #fagpu.acc<warps = 8>>
  // CHECK: fagpu.mma_wait %[[S]] {pending = 1 : i64} : tensor<128x128xf32, #fagpu.acc<warps = 8>>
  %sw = fagpu.mma_wait %s {pending = 1 : i64} : tensor<128x128xf32, #fagpu.acc<warps = 8>>
  // P V's wait: its A registers kept until it, S computed before it.
  // CHECK: fagpu.mma_wait %[[O]] reads %{{.*}} : tensor<128x128xbf16, #fagpu.operand<warps = 8>> after %{{.*}} : tensor<128x128xf32, #fagpu.acc<warps = 8>> {pending = 0 : i64} : tensor<128x128xf32, #fagpu.acc<warps = 8>>
  %ow, %s2 = fagpu.mma_wait %o reads %p : tensor<128x128xbf16, #fagpu.operand<warps = 8>> after %sw : tensor<128x128xf32, #fagpu.acc<warps = 8>> {pending = 0 : i64} : tensor<128x128xf32, #fagpu.acc<warps = 8>>
  return %s2, %ow : tensor<128x128xf32, #fagpu.acc<warps = 8>>, tensor<128x128xf32, #fagpu.acc<warps = 8>>
}

// mbarrier rings and a warp-specialized kernel's roles.
// CHECK-LABEL: gpu.func @roles
// CHECK: %[[F:.*]] = fagpu.alloc_barriers {arrivals = 128 : i64, offset = 32768 : i64} : !fagpu.barriers<2>
// CHECK: fagpu.warp_specialize attributes {consumer_registers = 232 : i64, consumer_threads = 256 : i64, ctas_per_sm = 1 : i64, producer_registers = 40 : i64} producer {
// CHECK: fagpu.barrier_wait %{{.*}}[%{{.*}}] parity %{{.*}} : !fagpu.barriers<2>
// CHECK: fagpu.async_copy %{{.*}}[%{{.*}}, %{{.*}}, %{{.*}}] bound %{{.*}} to %{{.*}}[%{{.*}}] signal %[[F]][%{{.*}}] : memref<?x8x?x64xbf16> to !fagpu.shared<2x128x64xbf16, wgmma>, !fagpu.barriers<2>
// CHECK: } consumers {
// CHECK: fagpu.take_turn of 2 {first}
// CHECK-NEXT: fagpu.barrier_arrive %{{.*}}[%{{.*}}] : !fagpu.barriers<2>
// CHECK-NEXT: fagpu.pass_turn of 2
// CHECK-NEXT: fagpu.take_turn of 2
// CHECK-NEXT: fagpu.pass_turn of 2 {last}
gpu.module @m {
  gpu.func @roles(%k: memref<?x8x?x64xbf16>, %i: index) kernel attributes {known_block_size = array<i32: 384, 1, 1>} {
    %s = fagpu.alloc_shared {offset = 0 : i64} : !fagpu.shared<2x128x64xbf16, wgmma>
    %full = fagpu.alloc_barriers {arrivals = 128 : i64, offset = 32768 : i64} : !fagpu.barriers<2>
    %empty = fagpu.alloc_barriers {arrivals = 2 : i64, offset = 32784 : i64} : !fagpu.barriers<2>
    gpu.barrier
    fagpu.warp_specialize attributes {consumer_registers = 232 : i64, consumer_threads = 256 : i64, ctas_per_sm = 1 : i64, producer_registers = 40 : i64} producer {
      fagpu.barrier_wait %empty[%i] parity %i : !fagpu.barriers<2>
      %t = fagpu.async_copy %k[%i, %i, %i] bound %i to %s[%i] signal %full[%i] : memref<?x8x?x64xbf16> to !fagpu.shared<2x128x64xbf16, wgmma>, !fagpu.barriers<2>
    } consumers {
      fagpu.barrier_wait %full[%i] parity %i : !fagpu.barriers<2>
      fagpu.take_turn of 2 {first}
      fagpu.barrier_arrive %empty[%i] : !fagpu.barriers<2>
      fagpu.pass_turn of 2
      fagpu.take_turn of 2
      fagpu.pass_turn of 2 {last}
    }
    gpu.return
  }
}

// A persistent kernel's slot, items and turns across them.
// CHECK-LABEL: gpu.func @persistent
// CHECK: %[[FIRST:.*]], %[[STRIDE:.*]] = fagpu.work_slot
// CHECK: fagpu.pass_turn of 2 {start}
// CHECK: scf.for %[[ITEM:.*]] = %[[FIRST]] to %{{.*}} step %[[STRIDE]]
// CHECK-NEXT: fagpu.block_coords of %[[ITEM]] in %{{.*}} {heavy_first}
// CHECK-NEXT: fagpu.block_coords of %[[ITEM]] in %{{.*}} {heavy_first, paired}
// CHECK-NEXT: fagpu.block_coords of %[[ITEM]] in %{{.*}} {heavy_first, paired, sorted_tail}
// CHECK: fagpu.take_turn of 2 {end}
gpu.module @persistent_m {
  gpu.func @persistent(%items: index, %tiles: index) kernel attributes {known_block_size = array<i32: 384, 1, 1>} {
    %first, %stride = fagpu.work_slot
    fagpu.warp_specialize attributes {consumer_registers = 232 : i64, consumer_threads = 256 : i64, ctas_per_sm = 1 : i64, producer_registers = 40 : i64} producer {
      %a = arith.constant 0 : index
    } consumers {
      fagpu.pass_turn of 2 {start}
      scf.for %item = %first to %items step %stride {
        %b, %h, %t = fagpu.block_coords of %item in %tiles {heavy_first}
        %b2, %h2, %t2 = fagpu.block_coords of %item in %tiles {heavy_first, paired}
        %b3, %h3, %t3 = fagpu.block_coords of %item in %tiles {heavy_first, paired, sorted_tail}
        fagpu.take_turn of 2
        fagpu.pass_turn of 2
      }
      fagpu.take_turn of 2 {end}
    }
    gpu.return
  }
}

// A bulk (TMA) copy: bounded by its source's rows, signalling one arrival.
// CHECK-LABEL: func.func @bulk_copy
// CHECK: %[[N:.*]] = memref.dim %[[K:.*]], %{{.*}} : memref<?x8x?x128xbf16>
// CHECK: fagpu.async_copy %[[K]][%{{.*}}, %{{.*}}, %{{.*}}] bound %[[N]] to %{{.*}}[%{{.*}}] signal %{{.*}}[%{{.*}}] {bulk} : memref<?x8x?x128xbf16> to !fagpu.shared<2x128x128xbf16, wgmma>, !fagpu.barriers<2>
func.func @bulk_copy(%k: memref<?x8x?x128xbf16>, %i: index) -> !fagpu.token {
  %c2 = arith.constant 2 : index
  %n = memref.dim %k, %c2 : memref<?x8x?x128xbf16>
  %s = fagpu.alloc_shared {offset = 0 : i64} : !fagpu.shared<2x128x128xbf16, wgmma>
  %full = fagpu.alloc_barriers {arrivals = 1 : i64, offset = 65536 : i64} : !fagpu.barriers<2>
  %t = fagpu.async_copy %k[%i, %i, %i] bound %n to %s[%i] signal %full[%i] {bulk} : memref<?x8x?x128xbf16> to !fagpu.shared<2x128x128xbf16, wgmma>, !fagpu.barriers<2>
  return %t : !fagpu.token
}

// A key-range kernel's chunk and merge (KernelAbi.h, "Key ranges").
// CHECK-LABEL: func.func @key_ranges
// CHECK-NEXT: %[[C:.+]] = fagpu.key_chunk
// CHECK-NEXT: fagpu.merge_key_range %{{.+}}, %{{.+}} full %{{.+}}, %{{.+}} to %{{.+}}[%[[C]]] : tensor<128xf32, #fagpu.rows<warps = 4>>, memref<?xi32>
func.func @key_ranges(%f: tensor<128xf32, #fagpu.rows<warps = 4>>, %r: memref<?xi32>) {
  %c = fagpu.key_chunk
  fagpu.merge_key_range %f, %f full %f, %f to %r[%c] : tensor<128xf32, #fagpu.rows<warps = 4>>, memref<?xi32>
  return
}

// A bias block (fa-bias-tiles): a bulk copy with a column of an f32 [B, H,
// Nq, Nk] bias into 128-byte panels, and each thread's elements of it in
// the accumulator's layout, a map's second input.
// CHECK-LABEL: func.func @bias_block
// CHECK: %[[N:.*]] = memref.dim %[[BIAS:.*]], %{{.*}} : memref<1x8x?x?xf32>
// CHECK: fagpu.async_copy %[[BIAS]][%{{.*}}, %{{.*}}, %[[ROW:.*]], %[[COL:.*]]] bound %[[N]] to %[[T:.*]][%{{.*}}] signal %{{.*}}[%{{.*}}] {bulk} : memref<1x8x?x?xf32> to !fagpu.shared<2x128x64xf32, wgmma>, !fagpu.barriers<2>
// CHECK: %[[V:.*]] = fagpu.load_tile %[[T]][%{{.*}}] : !fagpu.shared<2x128x64xf32, wgmma> -> tensor<128x64xf32, #fagpu.acc<warps = 8>>
// CHECK: fagpu.map %{{.*}}, %[[V]] at [%[[ROW]], %[[COL]]] : tensor<128x64xf32, #fagpu.acc<warps = 8>>, tensor<128x64xf32, #fagpu.acc<warps = 8>> -> tensor<128x64xf32, #fagpu.acc<warps = 8>>
func.func @bias_block(%bias: memref<1x8x?x?xf32>, %s: tensor<128x64xf32, #fagpu.acc<warps = 8>>, %row: index, %col: index) -> tensor<128x64xf32, #fagpu.acc<warps = 8>> {
  %c0 = arith.constant 0 : index
  %c2 = arith.constant 2 : index
  %n = memref.dim %bias, %c2 : memref<1x8x?x?xf32>
  %t = fagpu.alloc_shared {offset = 0 : i64} : !fagpu.shared<2x128x64xf32, wgmma>
  %full = fagpu.alloc_barriers {arrivals = 1 : i64, offset = 65536 : i64} : !fagpu.barriers<2>
  %tok = fagpu.async_copy %bias[%c0, %c0, %row, %col] bound %n to %t[%c0] signal %full[%c0] {bulk} : memref<1x8x?x?xf32> to !fagpu.shared<2x128x64xf32, wgmma>, !fagpu.barriers<2>
  %b = fagpu.load_tile %t[%c0] : !fagpu.shared<2x128x64xf32, wgmma> -> tensor<128x64xf32, #fagpu.acc<warps = 8>>
  %r = fagpu.map %s, %b at [%row, %col] : tensor<128x64xf32, #fagpu.acc<warps = 8>>, tensor<128x64xf32, #fagpu.acc<warps = 8>> -> tensor<128x64xf32, #fagpu.acc<warps = 8>> {
  ^bb0(%x: f32, %e: f32, %i: index, %j: index):
    %y = arith.addf %x, %e : f32
    fagpu.yield %y : f32
  }
  return %r : tensor<128x64xf32, #fagpu.acc<warps = 8>>
}
