// RUN: fa-opt %s -split-input-file -verify-diagnostics

#acc = #fagpu.acc<warps = 4>
func.func @mma_shapes(%a: tensor<128x64xbf16, #fagpu.operand<warps = 4>>, %b: !fagpu.shared<1x32x64xbf16>, %i: index) {
  // expected-error @+1 {{shapes do not compose: A is 128x64, B 32x64, the result 128x64}}
  %c = fagpu.mma %a, %b[%i] : tensor<128x64xbf16, #fagpu.operand<warps = 4>>, !fagpu.shared<1x32x64xbf16> -> tensor<128x64xf32, #acc>
  return
}

// -----

func.func @mma_element_types(%a: tensor<64x64xf16, #fagpu.operand<warps = 4>>, %b: !fagpu.shared<1x64x64xbf16>, %i: index) {
  // expected-error @+1 {{A and B must have one element type ('f16' vs 'bf16')}}
  %c = fagpu.mma %a, %b[%i] {b_transposed} : tensor<64x64xf16, #fagpu.operand<warps = 4>>, !fagpu.shared<1x64x64xbf16> -> tensor<64x64xf32, #fagpu.acc<warps = 4>>
  return
}

// -----

func.func @mma_result_layout(%a: tensor<64x64xbf16, #fagpu.operand<warps = 4>>, %b: !fagpu.shared<1x64x64xbf16>, %i: index) {
  // expected-error @+1 {{result must be a tensor in #fagpu.acc layout (got 'tensor<64x64xf32>')}}
  %c = fagpu.mma %a, %b[%i] : tensor<64x64xbf16, #fagpu.operand<warps = 4>>, !fagpu.shared<1x64x64xbf16> -> tensor<64x64xf32>
  return
}

// -----

func.func @mma_shared_a_stages(%a: !fagpu.shared<2x64x64xbf16>, %b: !fagpu.shared<1x64x64xbf16>, %i: index) {
  // expected-error @+1 {{a shared A operand must have one stage}}
  %c = fagpu.mma %a, %b[%i] : !fagpu.shared<2x64x64xbf16>, !fagpu.shared<1x64x64xbf16> -> tensor<64x64xf32, #fagpu.acc<warps = 4>>
  return
}

// -----

func.func @rows_not_warp_multiple(%s: tensor<48x64xf32, #fagpu.acc<warps = 4>>, %i: index) {
  // expected-error @+1 {{scores has 48 rows: not a multiple of 16 x 4 warps}}
  %m = fagpu.mask %s at [%i, %i] of [%i, %i] : tensor<48x64xf32, #fagpu.acc<warps = 4>>
  return
}

// -----

func.func @reduce_partial_max(%s: tensor<64x64xf32, #fagpu.acc<warps = 4>>) {
  // expected-error @+1 {{only a sum may be left partial}}
  %m = fagpu.reduce_rows #fagpu.reduce<max> %s : tensor<64x64xf32, #fagpu.acc<warps = 4>> -> tensor<64xf32, #fagpu.rows<warps = 4, partial = true>>
  return
}

// -----

func.func @broadcast_partial(%l: tensor<64xf32, #fagpu.rows<warps = 4, partial = true>>) {
  // expected-error @+1 {{cannot broadcast a partial row sum}}
  %b = fagpu.broadcast_rows %l : tensor<64xf32, #fagpu.rows<warps = 4, partial = true>> -> tensor<64x64xf32, #fagpu.acc<warps = 4>>
  return
}

// -----

func.func @scale_by_partial(%acc: tensor<64x64xf32, #fagpu.acc<warps = 4>>, %l: tensor<64xf32, #fagpu.rows<warps = 4, partial = true>>) {
  // expected-error @+1 {{factors must be full row values, not a partial sum}}
  %s = fagpu.scale_rows %acc, %l : tensor<64x64xf32, #fagpu.acc<warps = 4>>, tensor<64xf32, #fagpu.rows<warps = 4, partial = true>>
  return
}

// -----

func.func @scale_rows_mismatch(%acc: tensor<128x64xf32, #fagpu.acc<warps = 4>>, %a: tensor<64xf32, #fagpu.rows<warps = 4>>) {
  // expected-error @+1 {{source and factors must have one row count and warps}}
  %s = fagpu.scale_rows %acc, %a : tensor<128x64xf32, #fagpu.acc<warps = 4>>, tensor<64xf32, #fagpu.rows<warps = 4>>
  return
}

// -----

func.func @scale_operand(%x: tensor<64x64xbf16, #fagpu.operand<warps = 4>>, %a: tensor<64xf32, #fagpu.rows<warps = 4>>) {
  // expected-error @+1 {{source must be a tensor in #fagpu.acc or #fagpu.rows layout (got 'tensor<64x64xbf16, #fagpu.operand<warps = 4>>')}}
  %s = fagpu.scale_rows %x, %a : tensor<64x64xbf16, #fagpu.operand<warps = 4>>, tensor<64xf32, #fagpu.rows<warps = 4>>
  return
}

// -----

func.func @update_full_sum(%l: tensor<64xf32, #fagpu.rows<warps = 4>>, %p: tensor<64x64xf32, #fagpu.acc<warps = 4>>) {
  // expected-error @+1 {{sum must be a partial row sum}}
  %s = fagpu.update_row_sum %l, %p : tensor<64xf32, #fagpu.rows<warps = 4>>, tensor<64x64xf32, #fagpu.acc<warps = 4>>
  return
}

// -----

func.func @update_sum_rounded_f32(%l: tensor<64xf32, #fagpu.rows<warps = 4, partial = true>>, %p: tensor<64x64xf32, #fagpu.acc<warps = 4>>) {
  // expected-error @+1 {{rounded must be f16 or bf16 (got 'f32')}}
  %s = fagpu.update_row_sum %l, %p rounded f32 : tensor<64xf32, #fagpu.rows<warps = 4, partial = true>>, tensor<64x64xf32, #fagpu.acc<warps = 4>>
  return
}

// -----

func.func @store_partial(%l: tensor<64xf32, #fagpu.rows<warps = 4, partial = true>>, %lse: memref<?x?x?xf32>, %i: index) {
  // expected-error @+1 {{cannot store a partial row sum}}
  fagpu.store %l to %lse[%i, %i, %i] bound %i : tensor<64xf32, #fagpu.rows<warps = 4, partial = true>>, memref<?x?x?xf32>
  return
}

// -----

func.func @store_width(%o: tensor<64x64xf32, #fagpu.acc<warps = 4>>, %dest: memref<?x?x?x128xbf16>, %i: index) {
  // expected-error @+1 {{the tile has 64 columns, dest rows 128}}
  fagpu.store %o to %dest[%i, %i, %i] bound %i : tensor<64x64xf32, #fagpu.acc<warps = 4>>, memref<?x?x?x128xbf16>
  return
}

// -----

func.func @copy_width(%src: memref<?x?x?x128xbf16>, %dst: !fagpu.shared<1x64x64xbf16>, %i: index) {
  // expected-error @+1 {{source rows have 128 elements, the tile's 64}}
  fagpu.copy %src[%i, %i, %i] bound %i to %dst[%i] : memref<?x?x?x128xbf16> to !fagpu.shared<1x64x64xbf16>
  return
}

// -----

// Only wgmma's tiles are padded: 128 columns hold rows of 65 to 128.
func.func @copy_padded_width(%src: memref<?x?x?x96xbf16>, %dst: !fagpu.shared<1x64x128xbf16>, %i: index) {
  // expected-error @+1 {{source rows have 96 elements, the tile's 128}}
  fagpu.copy %src[%i, %i, %i] bound %i to %dst[%i] : memref<?x?x?x96xbf16> to !fagpu.shared<1x64x128xbf16>
  return
}

// -----

func.func @copy_wgmma_width(%src: memref<?x?x?x32xbf16>, %dst: !fagpu.shared<1x64x128xbf16, wgmma>, %i: index) {
  // expected-error @+1 {{source rows have 32 elements, the tile's 128 (with wgmma, the elements rounded up to a multiple of 64)}}
  fagpu.copy %src[%i, %i, %i] bound %i to %dst[%i] : memref<?x?x?x32xbf16> to !fagpu.shared<1x64x128xbf16, wgmma>
  return
}

// -----

func.func @mma_depth(%q: !fagpu.shared<1x128x128xbf16, wgmma>, %k: !fagpu.shared<2x128x128xbf16, wgmma>, %i: index) {
  // expected-error @+1 {{depth must be a multiple of 16 below K = 128 (got 88)}}
  %s = fagpu.mma %q, %k[%i] {b_transposed, depth = 88, wgmma} : !fagpu.shared<1x128x128xbf16, wgmma>, !fagpu.shared<2x128x128xbf16, wgmma> -> tensor<128x128xf32, #fagpu.acc<warps = 8>>
  return
}

// -----

func.func @mma_depth_k(%q: !fagpu.shared<1x128x128xbf16, wgmma>, %k: !fagpu.shared<2x128x128xbf16, wgmma>, %i: index) {
  // expected-error @+1 {{depth must be a multiple of 16 below K = 128 (got 128)}}
  %s = fagpu.mma %q, %k[%i] {b_transposed, depth = 128, wgmma} : !fagpu.shared<1x128x128xbf16, wgmma>, !fagpu.shared<2x128x128xbf16, wgmma> -> tensor<128x128xf32, #fagpu.acc<warps = 8>>
  return
}

// -----

// mma.sync's B has the result's N columns.
func.func @mma_wide_b(%p: tensor<128x64xbf16, #fagpu.operand<warps = 4>>, %v: !fagpu.shared<1x64x128xbf16>, %i: index) {
  // expected-error @+1 {{shapes do not compose: A is 128x64, B 64x128, the result 128x96}}
  %o = fagpu.mma %p, %v[%i] : tensor<128x64xbf16, #fagpu.operand<warps = 4>>, !fagpu.shared<1x64x128xbf16> -> tensor<128x96xf32, #fagpu.acc<warps = 4>>
  return
}

// -----

func.func @copy_element(%src: memref<?x?x?x64xf16>, %dst: !fagpu.shared<1x64x64xbf16>, %i: index) {
  // expected-error @+1 {{source elements ('f16') differ from the tile's ('bf16')}}
  %t = fagpu.async_copy %src[%i, %i, %i] bound %i to %dst[%i] : memref<?x?x?x64xf16> to !fagpu.shared<1x64x64xbf16>
  return
}

// -----

func.func @operand_shape(%src: !fagpu.shared<1x64x64xbf16>, %i: index) {
  // expected-error @+1 {{must have the tile's shape and element type}}
  %a = fagpu.load_operand %src[%i] : !fagpu.shared<1x64x64xbf16> -> tensor<128x64xbf16, #fagpu.operand<warps = 4>>
  return
}

// -----

func.func @window(%i: index) {
  // expected-error @+1 {{window must be two sizes >= 0 (left, right)}}
  %b, %e = fagpu.visible_keys %i of [%i, %i] {block_q = 64, block_kv = 64, window = array<i64: 4>}
  return
}

// -----

func.func @tiling(%i: index) {
  // expected-error @+1 {{block_q and block_kv must be positive}}
  %m = fagpu.tile_needs_mask [%i, %i] of [%i, %i] {block_q = 0, block_kv = 64}
  return
}

// -----

// expected-error @+1 {{a shared tile's columns must be a multiple of 8 (16-byte chunks; got 12)}}
func.func @shared_cols(%s: !fagpu.shared<1x64x12xbf16>) {
  return
}

// -----

// expected-error @+1 {{a shared tile holds f16 or bf16, or f32 in wgmma's layout (got 'f32')}}
func.func @shared_element(%s: !fagpu.shared<1x64x64xf32>) {
  return
}

// -----

// expected-error @+1 {{a shared tile ring is stages x rows x columns (got 2 dims)}}
func.func @shared_rank(%s: !fagpu.shared<64x64xbf16>) {
  return
}

// -----

func.func @map_result_layout(%s: tensor<64x32xf32, #fagpu.acc<warps = 4>>, %i: index) {
  // expected-error @+1 {{result must be a tensor in #fagpu.acc layout (got 'tensor<64xf32, #fagpu.rows<warps = 4>>')}}
  %t = fagpu.map %s at [%i, %i] : tensor<64x32xf32, #fagpu.acc<warps = 4>> -> tensor<64xf32, #fagpu.rows<warps = 4>> {
  ^bb0(%x: f32, %r: index, %c: index):
    fagpu.yield %x : f32
  }
  return
}

// -----

func.func @map_input_shape(%s: tensor<64x32xf32, #fagpu.acc<warps = 4>>, %u: tensor<64x64xf32, #fagpu.acc<warps = 4>>, %i: index) {
  // expected-error @+1 {{input 'tensor<64x64xf32, #fagpu.acc<warps = 4>>' must have the result's shape and layout ('tensor<64x32xf32, #fagpu.acc<warps = 4>>')}}
  %t = fagpu.map %s, %u at [%i, %i] : tensor<64x32xf32, #fagpu.acc<warps = 4>>, tensor<64x64xf32, #fagpu.acc<warps = 4>> -> tensor<64x32xf32, #fagpu.acc<warps = 4>> {
  ^bb0(%x: f32, %y: f32, %r: index, %c: index):
    fagpu.yield %x : f32
  }
  return
}

// -----

func.func @map_block_args(%s: tensor<64x32xf32, #fagpu.acc<warps = 4>>, %i: index) {
  // expected-error @+1 {{body must take each input's element, then the row and column (index)}}
  %t = fagpu.map %s at [%i, %i] : tensor<64x32xf32, #fagpu.acc<warps = 4>> -> tensor<64x32xf32, #fagpu.acc<warps = 4>> {
  ^bb0(%x: f32, %r: index):
    fagpu.yield %x : f32
  }
  return
}

// -----

func.func @map_yield_type(%s: tensor<64x32xf32, #fagpu.acc<warps = 4>>, %i: index) {
  // expected-error @+1 {{body yields 'i1', the result holds 'f32'}}
  %t = fagpu.map %s at [%i, %i] : tensor<64x32xf32, #fagpu.acc<warps = 4>> -> tensor<64x32xf32, #fagpu.acc<warps = 4>> {
  ^bb0(%x: f32, %r: index, %c: index):
    %b = arith.cmpi eq, %r, %c : index
    fagpu.yield %b : i1
  }
  return
}

// -----

// expected-error @+1 {{a wgmma shared tile's rows must be a multiple of 8 and its columns of 64 (got 64 x 96)}}
func.func @wgmma_tile_columns(%b: !fagpu.shared<1x64x96xbf16, wgmma>) {
  return
}

// -----

func.func @wgmma_needs_wgmma_tiles(%a: tensor<64x64xbf16, #fagpu.operand<warps = 4>>, %b: !fagpu.shared<1x64x64xbf16>, %i: index) {
  // expected-error @+1 {{wgmma reads shared tiles in wgmma's swizzle (!fagpu.shared<..., wgmma>)}}
  %c = fagpu.mma %a, %b[%i] {b_transposed, wgmma} : tensor<64x64xbf16, #fagpu.operand<warps = 4>>, !fagpu.shared<1x64x64xbf16> -> tensor<64x64xf32, #fagpu.acc<warps = 4>>
  return
}

// -----

func.func @wgmma_tiles_need_wgmma(%a: tensor<64x64xbf16, #fagpu.operand<warps = 4>>, %b: !fagpu.shared<1x64x64xbf16, wgmma>, %i: index) {
  // expected-error @+1 {{tiles in wgmma's swizzle are read by wgmma only}}
  %c = fagpu.mma %a, %b[%i] {b_transposed} : tensor<64x64xbf16, #fagpu.operand<warps = 4>>, !fagpu.shared<1x64x64xbf16, wgmma> -> tensor<64x64xf32, #fagpu.acc<warps = 4>>
  return
}

// -----

func.func @wgmma_warpgroups(%a: tensor<32x64xbf16, #fagpu.operand<warps = 2>>, %b: !fagpu.shared<1x64x64xbf16, wgmma>, %i: index) {
  // expected-error @+1 {{wgmma needs the accumulator over whole warpgroups (a multiple of 4 warps), got 2}}
  %c = fagpu.mma %a, %b[%i] {b_transposed, wgmma} : tensor<32x64xbf16, #fagpu.operand<warps = 2>>, !fagpu.shared<1x64x64xbf16, wgmma> -> tensor<32x64xf32, #fagpu.acc<warps = 2>>
  return
}

// -----

func.func @mma_async_not_wgmma(%a: tensor<64x64xbf16, #fagpu.operand<warps = 4>>, %b: !fagpu.shared<1x64x64xbf16>, %i: index) {
  // expected-error @+1 {{only a wgmma product runs asynchronously}}
  %c = fagpu.mma %a, %b[%i] {async} : tensor<64x64xbf16, #fagpu.operand<warps = 4>>, !fagpu.shared<1x64x64xbf16> -> tensor<64x64xf32, #fagpu.acc<warps = 4>>
  return
}

// -----

func.func @mma_async_read_early(%a: tensor<64x64xbf16, #fagpu.operand<warps = 4>>, %b: !fagpu.shared<1x64x64xbf16, wgmma>, %i: index) -> tensor<64x64xf32, #fagpu.acc<warps = 4>> {
  // expected-error @+1 {{an async product's result is read only through fagpu.mma_wait}}
  %c = fagpu.mma %a, %b[%i] {async, wgmma} : tensor<64x64xbf16, #fagpu.operand<warps = 4>>, !fagpu.shared<1x64x64xbf16, wgmma> -> tensor<64x64xf32, #fagpu.acc<warps = 4>>
  return %c : tensor<64x64xf32, #fagpu.acc<warps = 4>>
}

// -----

func.func @mma_wait_sync(%a: tensor<64x64xbf16, #fagpu.operand<warps = 4>>, %b: !fagpu.shared<1x64x64xbf16, wgmma>, %i: index) {
  %c = fagpu.mma %a, %b[%i] {wgmma} : tensor<64x64xbf16, #fagpu.operand<warps = 4>>, !fagpu.shared<1x64x64xbf16, wgmma> -> tensor<64x64xf32, #fagpu.acc<warps = 4>>
  // expected-error @+1 {{source must be the result of an async fagpu.mma}}
  %w = fagpu.mma_wait %c {pending = 0 : i64} : tensor<64x64xf32, #fagpu.acc<warps = 4>>
  return
}

// -----

func.func @mma_wait_reads(%a: tensor<64x64xbf16, #fagpu.operand<warps = 4>>, %x: tensor<64x64xbf16, #fagpu.operand<warps = 4>>, %b: !fagpu.shared<1x64x64xbf16, wgmma>, %i: index) {
  %c = fagpu.mma %a, %b[%i] {async, wgmma} : tensor<64x64xbf16, #fagpu.operand<warps = 4>>, !fagpu.shared<1x64x64xbf16, wgmma> -> tensor<64x64xf32, #fagpu.acc<warps = 4>>
  // expected-error @+1 {{reads must be the product's A operand}}
  %w = fagpu.mma_wait %c reads %x : tensor<64x64xbf16, #fagpu.operand<warps = 4>> {pending = 0 : i64} : tensor<64x64xf32, #fagpu.acc<warps = 4>>
  return
}

// -----

func.func @barriers_offset() {
  // expected-error @+1 {{offset 12 is not a multiple of 8 (an mbarrier's size)}}
  %b = fagpu.alloc_barriers {arrivals = 1 : i64, offset = 12 : i64} : !fagpu.barriers<2>
  return
}

// -----

func.func @barriers_stages() {
  // expected-error @+1 {{a barrier ring needs at least one stage (got 0)}}
  %b = fagpu.alloc_barriers {arrivals = 1 : i64, offset = 0 : i64} : !fagpu.barriers<0>
  return
}

// -----

gpu.module @m {
  gpu.func @roles_block() kernel attributes {known_block_size = array<i32: 256, 1, 1>} {
    // expected-error @+1 {{the kernel's known_block_size must be the consumers' threads plus the producer's 128 (384)}}
    fagpu.warp_specialize attributes {consumer_registers = 232 : i64, consumer_threads = 256 : i64, ctas_per_sm = 1 : i64, producer_registers = 40 : i64} producer {
      %a = arith.constant 0 : index
    } consumers {
      %b = arith.constant 0 : index
    }
    gpu.return
  }
}

// -----

gpu.module @m {
  gpu.func @roles_registers() kernel attributes {known_block_size = array<i32: 384, 1, 1>} {
    // expected-error @+1 {{the consumers' 2 x 240 and the producer's 40 registers per thread exceed the 3 x 168 of the launch (1 CTAs an SM)}}
    fagpu.warp_specialize attributes {consumer_registers = 240 : i64, consumer_threads = 256 : i64, ctas_per_sm = 1 : i64, producer_registers = 40 : i64} producer {
      %a = arith.constant 0 : index
    } consumers {
      %b = arith.constant 0 : index
    }
    gpu.return
  }
}

// -----

gpu.module @m {
  gpu.func @roles_setmaxnreg() kernel attributes {known_block_size = array<i32: 384, 1, 1>} {
    // expected-error @+1 {{registers per thread must be a multiple of 8 in [24, 256] (setmaxnreg; got 20)}}
    fagpu.warp_specialize attributes {consumer_registers = 232 : i64, consumer_threads = 256 : i64, ctas_per_sm = 1 : i64, producer_registers = 20 : i64} producer {
      %a = arith.constant 0 : index
    } consumers {
      %b = arith.constant 0 : index
    }
    gpu.return
  }
}

// -----

gpu.module @m {
  gpu.func @roles_cta_barrier() kernel attributes {known_block_size = array<i32: 384, 1, 1>} {
    // expected-error @+1 {{a role may not pass a CTA barrier (gpu.barrier): the roles synchronize through mbarriers}}
    fagpu.warp_specialize attributes {consumer_registers = 232 : i64, consumer_threads = 256 : i64, ctas_per_sm = 1 : i64, producer_registers = 40 : i64} producer {
      %a = arith.constant 0 : index
    } consumers {
      gpu.barrier
    }
    gpu.return
  }
}

// -----

gpu.module @m {
  gpu.func @turn_count() kernel attributes {known_block_size = array<i32: 384, 1, 1>} {
    fagpu.warp_specialize attributes {consumer_registers = 232 : i64, consumer_threads = 256 : i64, ctas_per_sm = 1 : i64, producer_registers = 40 : i64} producer {
      %a = arith.constant 0 : index
    } consumers {
      // expected-error @+1 {{turns of 3 warpgroups, but the consumers are 2}}
      fagpu.take_turn of 3 {first}
    }
    gpu.return
  }
}

// -----

gpu.module @m {
  gpu.func @turn_in_producer() kernel attributes {known_block_size = array<i32: 384, 1, 1>} {
    fagpu.warp_specialize attributes {consumer_registers = 232 : i64, consumer_threads = 256 : i64, ctas_per_sm = 1 : i64, producer_registers = 40 : i64} producer {
      // expected-error @+1 {{must be in the consumers of a fagpu.warp_specialize}}
      fagpu.pass_turn of 2
    } consumers {
      %b = arith.constant 0 : index
    }
    gpu.return
  }
}

// -----

func.func @turn_outside() {
  // expected-error @+1 {{must be in the consumers of a fagpu.warp_specialize}}
  fagpu.take_turn of 2
  return
}

// -----

func.func @turn_one_warpgroup() {
  // expected-error @+1 {{attribute 'warpgroups' failed to satisfy constraint}}
  fagpu.take_turn of 1
  return
}

// -----

func.func @bulk_rows(%k: memref<?x8x?x64xbf16>, %i: index) {
  %c2 = arith.constant 2 : index
  %n = memref.dim %k, %c2 : memref<?x8x?x64xbf16>
  %s = fagpu.alloc_shared {offset = 0 : i64} : !fagpu.shared<1x264x64xbf16, wgmma>
  %full = fagpu.alloc_barriers {arrivals = 1 : i64, offset = 33792 : i64} : !fagpu.barriers<1>
  // expected-error @+1 {{a bulk copy's tile must be in wgmma's layout with a multiple of 64 columns and at most 256 rows (one TMA box)}}
  %t = fagpu.async_copy %k[%i, %i, %i] bound %n to %s[%i] signal %full[%i] {bulk} : memref<?x8x?x64xbf16> to !fagpu.shared<1x264x64xbf16, wgmma>, !fagpu.barriers<1>
  return
}

// -----

func.func @bulk_unsignalled(%k: memref<?x8x?x128xbf16>, %i: index) {
  %c2 = arith.constant 2 : index
  %n = memref.dim %k, %c2 : memref<?x8x?x128xbf16>
  %s = fagpu.alloc_shared {offset = 0 : i64} : !fagpu.shared<2x128x128xbf16, wgmma>
  // expected-error @+1 {{a bulk copy must signal a barrier and have no predicate}}
  %t = fagpu.async_copy %k[%i, %i, %i] bound %n to %s[%i] {bulk} : memref<?x8x?x128xbf16> to !fagpu.shared<2x128x128xbf16, wgmma>
  return
}

// -----

func.func @bulk_unswizzled(%k: memref<?x8x?x128xbf16>, %i: index) {
  %c2 = arith.constant 2 : index
  %n = memref.dim %k, %c2 : memref<?x8x?x128xbf16>
  %s = fagpu.alloc_shared {offset = 0 : i64} : !fagpu.shared<2x128x128xbf16>
  %full = fagpu.alloc_barriers {arrivals = 1 : i64, offset = 65536 : i64} : !fagpu.barriers<2>
  // expected-error @+1 {{a bulk copy's tile must be in wgmma's layout with a multiple of 64 columns and at most 256 rows (one TMA box)}}
  %t = fagpu.async_copy %k[%i, %i, %i] bound %n to %s[%i] signal %full[%i] {bulk} : memref<?x8x?x128xbf16> to !fagpu.shared<2x128x128xbf16>, !fagpu.barriers<2>
  return
}

// -----

func.func @bulk_bound(%k: memref<?x8x?x128xbf16>, %i: index) {
  %s = fagpu.alloc_shared {offset = 0 : i64} : !fagpu.shared<2x128x128xbf16, wgmma>
  %full = fagpu.alloc_barriers {arrivals = 1 : i64, offset = 65536 : i64} : !fagpu.barriers<2>
  // expected-error @+1 {{a bulk copy's bound must be the source's row count (memref.dim of dim 2)}}
  %t = fagpu.async_copy %k[%i, %i, %i] bound %i to %s[%i] signal %full[%i] {bulk} : memref<?x8x?x128xbf16> to !fagpu.shared<2x128x128xbf16, wgmma>, !fagpu.barriers<2>
  return
}

// -----

func.func @bulk_bound_other(%k: memref<?x8x?x128xbf16>, %v: memref<?x8x?x128xbf16>, %i: index) {
  %c2 = arith.constant 2 : index
  %n = memref.dim %v, %c2 : memref<?x8x?x128xbf16>
  %s = fagpu.alloc_shared {offset = 0 : i64} : !fagpu.shared<2x128x128xbf16, wgmma>
  %full = fagpu.alloc_barriers {arrivals = 1 : i64, offset = 65536 : i64} : !fagpu.barriers<2>
  // expected-error @+1 {{a bulk copy's bound must be the source's row count (memref.dim of dim 2)}}
  %t = fagpu.async_copy %k[%i, %i, %i] bound %n to %s[%i] signal %full[%i] {bulk} : memref<?x8x?x128xbf16> to !fagpu.shared<2x128x128xbf16, wgmma>, !fagpu.barriers<2>
  return
}

// -----

func.func @key_ranges_type(%i: index, %r: memref<?xi64>) {
  // expected-error @+1 {{key ranges are a rank-1 i32 memref}}
  %b, %e = fagpu.visible_keys %i of [%i, %i] within %r : memref<?xi64> {block_q = 128, block_kv = 64}
  return
}

// -----

func.func @key_ranges_block(%i: index, %r: memref<?xi32>) {
  // expected-error @+1 {{block_kv must divide the key ranges' 128 keys}}
  %b, %e = fagpu.visible_keys %i of [%i, %i] within %r : memref<?xi32> {block_q = 128, block_kv = 96}
  return
}

// -----

func.func @merge_key_range_warps(%f: tensor<128xf32, #fagpu.rows<warps = 8>>, %r: memref<?xi32>, %t: index) {
  // expected-error @+1 {{the tiles are f32 rows of 4 warps}}
  fagpu.merge_key_range %f, %f full %f, %f to %r[%t] : tensor<128xf32, #fagpu.rows<warps = 8>>, memref<?xi32>
  return
}

// -----

func.func @merge_key_range_partial(%f: tensor<128xf32, #fagpu.rows<warps = 4, partial = true>>, %r: memref<?xi32>, %t: index) {
  // expected-error @+1 {{first must be whole rows, not partial ones}}
  fagpu.merge_key_range %f, %f full %f, %f to %r[%t] : tensor<128xf32, #fagpu.rows<warps = 4, partial = true>>, memref<?xi32>
  return
}

// -----

func.func @merge_key_range_types(%f: tensor<128xf32, #fagpu.rows<warps = 4>>, %g: tensor<64xf32, #fagpu.rows<warps = 4>>, %r: memref<?xi32>, %t: index) {
  // expected-error @+1 {{all of {first, last, full_first, full_last} have same type}}
  "fagpu.merge_key_range"(%f, %f, %f, %g, %r, %t) : (tensor<128xf32, #fagpu.rows<warps = 4>>, tensor<128xf32, #fagpu.rows<warps = 4>>, tensor<128xf32, #fagpu.rows<warps = 4>>, tensor<64xf32, #fagpu.rows<warps = 4>>, memref<?xi32>, index) -> ()
  return
}

// -----

func.func @full_keys_type(%i: index, %r: memref<?xf32>) {
  // expected-error @+1 {{key ranges are a rank-1 i32 memref}}
  %b, %e = fagpu.full_keys %i within %r {block_q = 128} : memref<?xf32>
  return
}

// -----

func.func @full_keys_block(%i: index, %r: memref<?xi32>) {
  // expected-error @+1 {{block_q must be positive}}
  %b, %e = fagpu.full_keys %i within %r {block_q = 0} : memref<?xi32>
  return
}

// -----

func.func @merge_key_range_buffer(%f: tensor<128xf32, #fagpu.rows<warps = 4>>, %r: memref<?x2xi32>, %t: index) {
  // expected-error @+1 {{key ranges are a rank-1 i32 memref}}
  fagpu.merge_key_range %f, %f full %f, %f to %r[%t] : tensor<128xf32, #fagpu.rows<warps = 4>>, memref<?x2xi32>
  return
}

// -----

gpu.module @m {
  gpu.func @turn_first_and_end() kernel attributes {known_block_size = array<i32: 384, 1, 1>} {
    fagpu.warp_specialize attributes {consumer_registers = 232 : i64, consumer_threads = 256 : i64, ctas_per_sm = 1 : i64, producer_registers = 40 : i64} producer {
      %a = arith.constant 0 : index
    } consumers {
      // expected-error @+1 {{is either the first take or the end, not both}}
      fagpu.take_turn of 2 {end, first}
    }
    gpu.return
  }
}

// -----

gpu.module @m {
  gpu.func @turn_last_and_start() kernel attributes {known_block_size = array<i32: 384, 1, 1>} {
    fagpu.warp_specialize attributes {consumer_registers = 232 : i64, consumer_threads = 256 : i64, ctas_per_sm = 1 : i64, producer_registers = 40 : i64} producer {
      %a = arith.constant 0 : index
    } consumers {
      // expected-error @+1 {{is either the last pass or the start, not both}}
      fagpu.pass_turn of 2 {last, start}
    }
    gpu.return
  }
}

// -----

func.func @coords_remat(%i: index) {
  // expected-error @+1 {{of a work item cannot be rematerialized (the item is a value, not a special register)}}
  %b, %h, %t = fagpu.block_coords of %i in %i {rematerialize}
  return
}

// -----

func.func @coords_work_without_tiles(%i: index) {
  // expected-error @+1 {{takes a work item and its tiles together}}
  %b, %h, %t = "fagpu.block_coords"(%i) {operandSegmentSizes = array<i32: 1, 0>} : (index) -> (index, index, index)
  return
}

// -----

func.func @coords_paired_without_work() {
  // expected-error @+1 {{takes paired with a work item and heavy_first only}}
  %b, %h, %t = fagpu.block_coords {heavy_first, paired}
  return
}

// -----

func.func @coords_paired_without_heavy_first(%i: index) {
  // expected-error @+1 {{takes paired with a work item and heavy_first only}}
  %b, %h, %t = fagpu.block_coords of %i in %i {paired}
  return
}

// -----

func.func @coords_sorted_tail_unpaired(%i: index) {
  // expected-error @+1 {{takes sorted_tail with paired only}}
  %b, %h, %t = fagpu.block_coords of %i in %i {heavy_first, sorted_tail}
  return
}

// -----

func.func @coords_group_without_heavy_first() {
  // expected-error @+1 {{takes head_group with heavy_first only, not with a work item}}
  %b, %h, %t = fagpu.block_coords {head_group = 8 : i64}
  return
}

// -----

func.func @coords_group_zero() {
  // expected-error @+1 {{attribute 'head_group' failed to satisfy constraint: 64-bit signless integer attribute whose value is positive}}
  %b, %h, %t = fagpu.block_coords {heavy_first, head_group = 0 : i64}
  return
}

// -----

func.func @coords_batch_fastest_with_group() {
  // expected-error @+1 {{takes batch_fastest without a work item or head_group (each is an order of its own)}}
  %b, %h, %t = fagpu.block_coords {batch_fastest, head_group = 8 : i64, heavy_first}
  return
}

// -----

func.func @coords_batch_fastest_with_work(%i: index) {
  // expected-error @+1 {{takes batch_fastest without a work item or head_group (each is an order of its own)}}
  %b, %h, %t = fagpu.block_coords of %i in %i {batch_fastest}
  return
}

// -----

func.func @block_copy_not_bulk(%bias: memref<1x8x?x?xbf16>, %i: index) -> !fagpu.token {
  %t = fagpu.alloc_shared {offset = 0 : i64} : !fagpu.shared<1x128x64xbf16, wgmma>
  // expected-error @+1 {{a copy with a column must be bulk}}
  %tok = fagpu.async_copy %bias[%i, %i, %i, %i] bound %i to %t[%i] : memref<1x8x?x?xbf16> to !fagpu.shared<1x128x64xbf16, wgmma>
  return %tok : !fagpu.token
}

// -----

func.func @row_copy_of_f32(%k: memref<?x8x?x64xf32>, %i: index) -> !fagpu.token {
  %t = fagpu.alloc_shared {offset = 0 : i64} : !fagpu.shared<1x64x64xf32, wgmma>
  // expected-error @+1 {{a copy of rows moves 16-bit elements; only a copy with a column moves 'f32'}}
  %tok = fagpu.async_copy %k[%i, %i, %i] bound %i to %t[%i] : memref<?x8x?x64xf32> to !fagpu.shared<1x64x64xf32, wgmma>
  return %tok : !fagpu.token
}

// -----

func.func @load_tile_unswizzled(%t: !fagpu.shared<1x64x64xbf16>, %i: index) {
  // expected-error @+1 {{the tile must be in wgmma's layout (128-byte swizzled panels, as TMA writes it)}}
  %b = fagpu.load_tile %t[%i] : !fagpu.shared<1x64x64xbf16> -> tensor<64x64xbf16, #fagpu.acc<warps = 4>>
  return
}

// -----

func.func @load_tile_shape(%t: !fagpu.shared<1x64x64xbf16, wgmma>, %i: index) {
  // expected-error @+1 {{result 'tensor<64x64xf32, #fagpu.acc<warps = 4>>' must have the tile's shape and element type ('!fagpu.shared<1x64x64xbf16, wgmma>')}}
  %b = fagpu.load_tile %t[%i] : !fagpu.shared<1x64x64xbf16, wgmma> -> tensor<64x64xf32, #fagpu.acc<warps = 4>>
  return
}

// -----

// expected-error @+1 {{a wgmma shared tile's rows must be a multiple of 8 and its columns of 32 (got 64 x 16)}}
func.func @f32_half_panel(%s: !fagpu.shared<1x64x16xf32, wgmma>) {
  return
}
