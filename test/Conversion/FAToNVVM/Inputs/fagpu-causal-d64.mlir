// The forward of causal (bottom-right) attention, bf16, D = 64, with lse,
// in the kernel-level IR: 128-query tiles, 64-key tiles in one-stage rings
// on FlashAttention-2's copy schedule (V(n) lands during S = Q K(n)^T,
// K(n + 1) during the softmax and O += P V(n)), the online softmax in the
// log2 domain (scale * log2(e) = 0.180336878).

#acc = #fagpu.acc<warps = 4>
#a = #fagpu.operand<warps = 4>
#rows = #fagpu.rows<warps = 4>
#partial = #fagpu.rows<warps = 4, partial = true>
!qkv = memref<?x?x?x64xbf16, strided<[?, ?, ?, 1], offset: ?>>
!lse = memref<?x?x?xf32, strided<[?, ?, 1], offset: ?>>
!sq = !fagpu.shared<1x128x64xbf16>
!skv = !fagpu.shared<1x64x64xbf16>

module attributes {gpu.container_module} {
gpu.module @fa_kernels [#nvvm.target<O = 3, chip = "sm_90a", features = "+ptx80">] {
gpu.func @fa_forward_0(%q: !qkv, %k: !qkv, %v: !qkv, %o: !qkv, %lse: !lse) kernel attributes {fa.block_q = 128 : i64, known_block_size = array<i32: 128, 1, 1>} {
  %c0 = arith.constant 0 : index
  %c2 = arith.constant 2 : index
  %c64 = arith.constant 64 : index
  %c128 = arith.constant 128 : index
  %b, %h, %t = fagpu.block_coords {heavy_first}
  %hk = fagpu.kv_head %h of %q, %k : !qkv, !qkv
  %q0 = arith.muli %t, %c128 : index
  %nq = memref.dim %q, %c2 : !qkv
  %nk = memref.dim %k, %c2 : !qkv
  %sq = fagpu.alloc_shared {offset = 0} : !sq
  %sk = fagpu.alloc_shared {offset = 16384} : !skv
  %sv = fagpu.alloc_shared {offset = 24576} : !skv
  %tq = fagpu.async_copy %q[%b, %h, %q0] bound %nq to %sq[%c0] : !qkv to !sq
  %gq = fagpu.async_commit %tq
  %begin, %end = fagpu.visible_keys %q0 of [%nq, %nk] {block_q = 128, block_kv = 64, causal = #fa.causal<bottom_right>}
  %any = arith.cmpi slt, %begin, %end : index
  %gk = scf.if %any -> !fagpu.token {
    %tk = fagpu.async_copy %k[%b, %hk, %begin] bound %nk to %sk[%c0] : !qkv to !skv
    %g = fagpu.async_commit %tk
    scf.yield %g : !fagpu.token
  } else {
    %g = fagpu.async_commit
    scf.yield %g : !fagpu.token
  }
  fagpu.async_wait %gq {pending = 1}
  gpu.barrier
  %qa = fagpu.load_operand %sq[%c0] : !sq -> tensor<128x64xbf16, #a>
  %ninf = arith.constant dense<0xFF800000> : tensor<128xf32, #rows>
  %zrows = arith.constant dense<0.0> : tensor<128xf32, #rows>
  %zl = arith.constant dense<0.0> : tensor<128xf32, #partial>
  %zacc = arith.constant dense<0.0> : tensor<128x64xf32, #acc>
  %cr = arith.constant dense<0.180336878> : tensor<128xf32, #rows>
  %ct = arith.constant dense<0.180336878> : tensor<128x64xf32, #acc>
  %res:4 = scf.for %kv0 = %begin to %end step %c64 iter_args(%m = %ninf, %l = %zl, %acc = %zacc, %gk1 = %gk) -> (tensor<128xf32, #rows>, tensor<128xf32, #partial>, tensor<128x64xf32, #acc>, !fagpu.token) {
    fagpu.async_wait %gk1 {pending = 0}
    gpu.barrier
    %tv = fagpu.async_copy %v[%b, %hk, %kv0] bound %nk to %sv[%c0] : !qkv to !skv
    %gv = fagpu.async_commit %tv
    %s = fagpu.mma %qa, %sk[%c0] {b_transposed} : tensor<128x64xbf16, #a>, !skv -> tensor<128x64xf32, #acc>
    fagpu.async_wait %gv {pending = 0}
    gpu.barrier
    %next = arith.addi %kv0, %c64 : index
    %more = arith.cmpi slt, %next, %end : index
    %gk2 = scf.if %more -> !fagpu.token {
      %tk = fagpu.async_copy %k[%b, %hk, %next] bound %nk to %sk[%c0] : !qkv to !skv
      %g = fagpu.async_commit %tk
      scf.yield %g : !fagpu.token
    } else {
      %g = fagpu.async_commit
      scf.yield %g : !fagpu.token
    }
    %cut = fagpu.tile_needs_mask [%q0, %kv0] of [%nq, %nk] {block_q = 128, block_kv = 64, causal = #fa.causal<bottom_right>}
    %sm = scf.if %cut -> tensor<128x64xf32, #acc> {
      %x = fagpu.mask %s at [%q0, %kv0] of [%nq, %nk] {causal = #fa.causal<bottom_right>} : tensor<128x64xf32, #acc>
      scf.yield %x : tensor<128x64xf32, #acc>
    } else {
      scf.yield %s : tensor<128x64xf32, #acc>
    }
    // m' = max(m, c rowmax(s)); alpha = exp2(m - m'), with m' = 0 for a row
    // that is still fully masked.
    %tmax = fagpu.reduce_rows #fagpu.reduce<max> %sm : tensor<128x64xf32, #acc> -> tensor<128xf32, #rows>
    %tmaxc = arith.mulf %tmax, %cr : tensor<128xf32, #rows>
    %mnew = arith.maximumf %m, %tmaxc : tensor<128xf32, #rows>
    %none = arith.cmpf oeq, %mnew, %ninf : tensor<128xf32, #rows>
    %msafe = arith.select %none, %zrows, %mnew : tensor<128xi1, #rows>, tensor<128xf32, #rows>
    %dm = arith.subf %m, %msafe : tensor<128xf32, #rows>
    %alpha = math.exp2 %dm : tensor<128xf32, #rows>
    // p = exp2(c s - m'), as one fma.
    %mb = fagpu.broadcast_rows %msafe : tensor<128xf32, #rows> -> tensor<128x64xf32, #acc>
    %negm = arith.negf %mb : tensor<128x64xf32, #acc>
    %arg = math.fma %sm, %ct, %negm : tensor<128x64xf32, #acc>
    %p = math.exp2 %arg : tensor<128x64xf32, #acc>
    %ls = fagpu.scale_rows %l, %alpha : tensor<128xf32, #partial>, tensor<128xf32, #rows>
    %accs = fagpu.scale_rows %acc, %alpha : tensor<128x64xf32, #acc>, tensor<128xf32, #rows>
    %l2 = fagpu.update_row_sum %ls, %p : tensor<128xf32, #partial>, tensor<128x64xf32, #acc>
    %pa = fagpu.to_operand %p : tensor<128x64xf32, #acc> -> tensor<128x64xbf16, #a>
    %acc2 = fagpu.mma %pa, %sv[%c0] acc %accs : tensor<128x64xbf16, #a>, !skv -> tensor<128x64xf32, #acc>
    scf.yield %mnew, %l2, %acc2, %gk2 : tensor<128xf32, #rows>, tensor<128xf32, #partial>, tensor<128x64xf32, #acc>, !fagpu.token
  }
  // O = acc / l (0 for an empty row); lse = (m + log2 l) ln 2 (-inf there).
  %b2, %h2, %t2 = fagpu.block_coords {heavy_first, rematerialize}
  %q02 = arith.muli %t2, %c128 : index
  %l = fagpu.reduce_rows #fagpu.reduce<sum> %res#1 : tensor<128xf32, #partial> -> tensor<128xf32, #rows>
  %empty = arith.cmpf oeq, %l, %zrows : tensor<128xf32, #rows>
  %one = arith.constant dense<1.0> : tensor<128xf32, #rows>
  %inv0 = arith.divf %one, %l : tensor<128xf32, #rows>
  %inv = arith.select %empty, %zrows, %inv0 : tensor<128xi1, #rows>, tensor<128xf32, #rows>
  %ib = fagpu.broadcast_rows %inv : tensor<128xf32, #rows> -> tensor<128x64xf32, #acc>
  %out = arith.mulf %res#2, %ib : tensor<128x64xf32, #acc>
  fagpu.store %out to %o[%b2, %h2, %q02] bound %nq : tensor<128x64xf32, #acc>, !qkv
  %log2l = math.log2 %l : tensor<128xf32, #rows>
  %ml = arith.addf %res#0, %log2l : tensor<128xf32, #rows>
  %ln2 = arith.constant dense<0.693147182> : tensor<128xf32, #rows>
  %lse0 = arith.mulf %ml, %ln2 : tensor<128xf32, #rows>
  %lsev = arith.select %empty, %ninf, %lse0 : tensor<128xi1, #rows>, tensor<128xf32, #rows>
  fagpu.store %lsev to %lse[%b2, %h2, %q02] bound %nq : tensor<128xf32, #rows>, !lse
  gpu.return
}
}
}
