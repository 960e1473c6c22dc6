// RUN: fa-opt %s -fa-online-softmax -split-input-file -verify-diagnostics

// Hand-written loops with fa-tile's markers that break the contract
// fa-online-softmax relies on (lib/Transforms/OnlineSoftmax.cpp): one
// `fa.softmax_row_max` loop carrying the running max, whose result is used
// by one `fa.softmax_row_sum` loop over the same K/V tiles in the same block,
// carrying the running sum and accumulator and computing one fa.score_tile.

// The row max is only used after the loops.
func.func @max_without_sum(%m0: tensor<8xf32>, %s0: tensor<8xf32>, %a0: tensor<8x2xf32>) -> (tensor<8xf32>, tensor<8xf32>, tensor<8x2xf32>) {
  %c0 = arith.constant 0 : index
  %c8 = arith.constant 8 : index
  %c32 = arith.constant 32 : index
  // expected-error @+1 {{'scf.for' op fa-online-softmax: no row-sum loop uses this row-max loop}}
  %m = scf.for %k0 = %c0 to %c32 step %c8 iter_args(%mi = %m0) -> (tensor<8xf32>) {
    scf.yield %mi : tensor<8xf32>
  } {fa.softmax_row_max = "exp"}
  %la:2 = scf.for %k0 = %c0 to %c32 step %c8 iter_args(%li = %s0, %ai = %a0) -> (tensor<8xf32>, tensor<8x2xf32>) {
    scf.yield %li, %ai : tensor<8xf32>, tensor<8x2xf32>
  } {fa.softmax_row_sum}
  return %m, %la#0, %la#1 : tensor<8xf32>, tensor<8xf32>, tensor<8x2xf32>
}

// -----

// The row max is used in a loop that is not marked as a row-sum loop.
func.func @max_used_by_unmarked_loop(%m0: tensor<8xf32>, %a0: tensor<8x2xf32>) -> tensor<8xf32> {
  %c0 = arith.constant 0 : index
  %c8 = arith.constant 8 : index
  %c32 = arith.constant 32 : index
  // expected-error @+1 {{'scf.for' op fa-online-softmax: no row-sum loop uses this row-max loop}}
  %m = scf.for %k0 = %c0 to %c32 step %c8 iter_args(%mi = %m0) -> (tensor<8xf32>) {
    scf.yield %mi : tensor<8xf32>
  } {fa.softmax_row_max = "exp"}
  %l = scf.for %k0 = %c0 to %c32 step %c8 iter_args(%li = %m0) -> (tensor<8xf32>) {
    scf.yield %m : tensor<8xf32>
  }
  return %l : tensor<8xf32>
}

// -----

// A row-max loop carries the running max and nothing else.
func.func @max_two_results(%m0: tensor<8xf32>, %s0: tensor<8xf32>, %a0: tensor<8x2xf32>) -> tensor<8xf32> {
  %c0 = arith.constant 0 : index
  %c8 = arith.constant 8 : index
  %c32 = arith.constant 32 : index
  // expected-error @+1 {{'scf.for' op fa-online-softmax: a row-max loop must carry exactly the running max}}
  %m:2 = scf.for %k0 = %c0 to %c32 step %c8 iter_args(%mi = %m0, %ni = %m0) -> (tensor<8xf32>, tensor<8xf32>) {
    scf.yield %mi, %ni : tensor<8xf32>, tensor<8xf32>
  } {fa.softmax_row_max = "exp"}
  return %m#0 : tensor<8xf32>
}

// -----

// Different upper bounds: the loops do not visit the same K/V tiles.
func.func @different_bounds(%m0: tensor<8xf32>, %s0: tensor<8xf32>, %a0: tensor<8x2xf32>) -> (tensor<8xf32>, tensor<8x2xf32>) {
  %c0 = arith.constant 0 : index
  %c8 = arith.constant 8 : index
  %c16 = arith.constant 16 : index
  %c32 = arith.constant 32 : index
  // expected-error @+1 {{'scf.for' op fa-online-softmax: the row-max and row-sum loops must run over the same K/V tiles in the same block}}
  %m = scf.for %k0 = %c0 to %c32 step %c8 iter_args(%mi = %m0) -> (tensor<8xf32>) {
    scf.yield %mi : tensor<8xf32>
  } {fa.softmax_row_max = "exp"}
  %la:2 = scf.for %k0 = %c0 to %c16 step %c8 iter_args(%li = %s0, %ai = %a0) -> (tensor<8xf32>, tensor<8x2xf32>) {
    scf.yield %m, %ai : tensor<8xf32>, tensor<8x2xf32>
  } {fa.softmax_row_sum}
  return %la#0, %la#1 : tensor<8xf32>, tensor<8x2xf32>
}

// -----

// Different lower bounds, not known to be equal at compile time.
func.func @different_lower_bounds(%m0: tensor<8xf32>, %s0: tensor<8xf32>, %a0: tensor<8x2xf32>, %lb: index) -> (tensor<8xf32>, tensor<8x2xf32>) {
  %c0 = arith.constant 0 : index
  %c8 = arith.constant 8 : index
  %c32 = arith.constant 32 : index
  // expected-error @+1 {{'scf.for' op fa-online-softmax: the row-max and row-sum loops must run over the same K/V tiles in the same block}}
  %m = scf.for %k0 = %c0 to %c32 step %c8 iter_args(%mi = %m0) -> (tensor<8xf32>) {
    scf.yield %mi : tensor<8xf32>
  } {fa.softmax_row_max = "exp"}
  %la:2 = scf.for %k0 = %lb to %c32 step %c8 iter_args(%li = %s0, %ai = %a0) -> (tensor<8xf32>, tensor<8x2xf32>) {
    scf.yield %m, %ai : tensor<8xf32>, tensor<8x2xf32>
  } {fa.softmax_row_sum}
  return %la#0, %la#1 : tensor<8xf32>, tensor<8x2xf32>
}

// -----

// Different steps.
func.func @different_steps(%m0: tensor<8xf32>, %s0: tensor<8xf32>, %a0: tensor<8x2xf32>) -> (tensor<8xf32>, tensor<8x2xf32>) {
  %c0 = arith.constant 0 : index
  %c8 = arith.constant 8 : index
  %c16 = arith.constant 16 : index
  %c32 = arith.constant 32 : index
  // expected-error @+1 {{'scf.for' op fa-online-softmax: the row-max and row-sum loops must run over the same K/V tiles in the same block}}
  %m = scf.for %k0 = %c0 to %c32 step %c8 iter_args(%mi = %m0) -> (tensor<8xf32>) {
    scf.yield %mi : tensor<8xf32>
  } {fa.softmax_row_max = "exp"}
  %la:2 = scf.for %k0 = %c0 to %c32 step %c16 iter_args(%li = %s0, %ai = %a0) -> (tensor<8xf32>, tensor<8x2xf32>) {
    scf.yield %m, %ai : tensor<8xf32>, tensor<8x2xf32>
  } {fa.softmax_row_sum}
  return %la#0, %la#1 : tensor<8xf32>, tensor<8x2xf32>
}

// -----

// Same bounds, but the row-sum loop is in another block (inside scf.if).
func.func @different_block(%m0: tensor<8xf32>, %s0: tensor<8xf32>, %a0: tensor<8x2xf32>, %cond: i1) -> tensor<8xf32> {
  %c0 = arith.constant 0 : index
  %c8 = arith.constant 8 : index
  %c32 = arith.constant 32 : index
  // expected-error @+1 {{'scf.for' op fa-online-softmax: the row-max and row-sum loops must run over the same K/V tiles in the same block}}
  %m = scf.for %k0 = %c0 to %c32 step %c8 iter_args(%mi = %m0) -> (tensor<8xf32>) {
    scf.yield %mi : tensor<8xf32>
  } {fa.softmax_row_max = "exp"}
  %r = scf.if %cond -> tensor<8xf32> {
    %la:2 = scf.for %k0 = %c0 to %c32 step %c8 iter_args(%li = %s0, %ai = %a0) -> (tensor<8xf32>, tensor<8x2xf32>) {
      scf.yield %m, %ai : tensor<8xf32>, tensor<8x2xf32>
    } {fa.softmax_row_sum}
    scf.yield %la#0 : tensor<8xf32>
  } else {
    scf.yield %s0 : tensor<8xf32>
  }
  return %r : tensor<8xf32>
}

// -----

// A row-sum loop carries the running sum and the accumulator: not only the
// sum.
func.func @sum_one_iter_arg(%m0: tensor<8xf32>, %s0: tensor<8xf32>) -> tensor<8xf32> {
  %c0 = arith.constant 0 : index
  %c8 = arith.constant 8 : index
  %c32 = arith.constant 32 : index
  %m = scf.for %k0 = %c0 to %c32 step %c8 iter_args(%mi = %m0) -> (tensor<8xf32>) {
    scf.yield %mi : tensor<8xf32>
  } {fa.softmax_row_max = "exp"}
  // expected-error @+1 {{'scf.for' op fa-online-softmax: a row-sum loop must carry exactly the running sum and accumulator}}
  %l = scf.for %k0 = %c0 to %c32 step %c8 iter_args(%li = %s0) -> (tensor<8xf32>) {
    scf.yield %m : tensor<8xf32>
  } {fa.softmax_row_sum}
  return %l : tensor<8xf32>
}

// -----

// ... and nothing more.
func.func @sum_three_iter_args(%m0: tensor<8xf32>, %s0: tensor<8xf32>, %a0: tensor<8x2xf32>) -> tensor<8xf32> {
  %c0 = arith.constant 0 : index
  %c8 = arith.constant 8 : index
  %c32 = arith.constant 32 : index
  %m = scf.for %k0 = %c0 to %c32 step %c8 iter_args(%mi = %m0) -> (tensor<8xf32>) {
    scf.yield %mi : tensor<8xf32>
  } {fa.softmax_row_max = "exp"}
  // expected-error @+1 {{'scf.for' op fa-online-softmax: a row-sum loop must carry exactly the running sum and accumulator}}
  %l:3 = scf.for %k0 = %c0 to %c32 step %c8 iter_args(%li = %s0, %ai = %a0, %xi = %s0) -> (tensor<8xf32>, tensor<8x2xf32>, tensor<8xf32>) {
    scf.yield %m, %ai, %xi : tensor<8xf32>, tensor<8x2xf32>, tensor<8xf32>
  } {fa.softmax_row_sum}
  return %l#0 : tensor<8xf32>
}

// -----

// The fused loop rescales right after the tile's scores: a row-sum loop
// without fa.score_tile has no such point.
func.func @sum_without_score_tile(%m0: tensor<8xf32>, %s0: tensor<8xf32>, %a0: tensor<8x2xf32>) -> (tensor<8xf32>, tensor<8x2xf32>) {
  %c0 = arith.constant 0 : index
  %c8 = arith.constant 8 : index
  %c32 = arith.constant 32 : index
  %m = scf.for %k0 = %c0 to %c32 step %c8 iter_args(%mi = %m0) -> (tensor<8xf32>) {
    scf.yield %mi : tensor<8xf32>
  } {fa.softmax_row_max = "exp"}
  // expected-error @+1 {{'scf.for' op fa-online-softmax: a row-sum loop must compute exactly one score tile (an fa.score_tile or an op marked 'fa.softmax_scores')}}
  %la:2 = scf.for %k0 = %c0 to %c32 step %c8 iter_args(%li = %s0, %ai = %a0) -> (tensor<8xf32>, tensor<8x2xf32>) {
    scf.yield %m, %ai : tensor<8xf32>, tensor<8x2xf32>
  } {fa.softmax_row_sum}
  return %la#0, %la#1 : tensor<8xf32>, tensor<8x2xf32>
}

// -----

// Two fa.score_tile ops: which one to rescale after is ambiguous.
func.func @sum_two_score_tiles(%m0: tensor<8xf32>, %s0: tensor<8xf32>, %a0: tensor<8x2xf32>, %qt: tensor<8x4xf32>, %kt: tensor<8x4xf32>, %i: index) -> (tensor<8xf32>, tensor<8x2xf32>) {
  %c0 = arith.constant 0 : index
  %c8 = arith.constant 8 : index
  %c32 = arith.constant 32 : index
  %m = scf.for %k0 = %c0 to %c32 step %c8 iter_args(%mi = %m0) -> (tensor<8xf32>) {
    scf.yield %mi : tensor<8xf32>
  } {fa.softmax_row_max = "exp"}
  // expected-error @+1 {{'scf.for' op fa-online-softmax: a row-sum loop must compute exactly one score tile (an fa.score_tile or an op marked 'fa.softmax_scores')}}
  %la:2 = scf.for %k0 = %c0 to %c32 step %c8 iter_args(%li = %s0, %ai = %a0) -> (tensor<8xf32>, tensor<8x2xf32>) {
    %s1 = fa.score_tile %qt, %kt at [%i, %i, %i, %k0] of [%i, %i] {scale = 1.0 : f32} : tensor<8x4xf32>, tensor<8x4xf32> -> tensor<8x8xf32>
    %s2 = fa.score_tile %qt, %kt at [%i, %i, %i, %k0] of [%i, %i] {scale = 1.0 : f32} : tensor<8x4xf32>, tensor<8x4xf32> -> tensor<8x8xf32>
    scf.yield %m, %ai : tensor<8xf32>, tensor<8x2xf32>
  } {fa.softmax_row_sum}
  return %la#0, %la#1 : tensor<8xf32>, tensor<8x2xf32>
}

// -----

// The row max is read between the loops: after fusion it would not exist yet.
func.func @max_used_between_loops(%m0: tensor<8xf32>, %s0: tensor<8xf32>, %a0: tensor<8x2xf32>) -> (tensor<8xf32>, tensor<8x2xf32>) {
  %c0 = arith.constant 0 : index
  %c8 = arith.constant 8 : index
  %c32 = arith.constant 32 : index
  %m = scf.for %k0 = %c0 to %c32 step %c8 iter_args(%mi = %m0) -> (tensor<8xf32>) {
    scf.yield %mi : tensor<8xf32>
  } {fa.softmax_row_max = "exp"}
  // expected-error @+1 {{'math.exp' op fa-online-softmax: uses the row max before the row-sum loop}}
  %early = math.exp %m : tensor<8xf32>
  %la:2 = scf.for %k0 = %c0 to %c32 step %c8 iter_args(%li = %s0, %ai = %a0) -> (tensor<8xf32>, tensor<8x2xf32>) {
    %use = arith.addf %m, %li : tensor<8xf32>
    scf.yield %use, %ai : tensor<8xf32>, tensor<8x2xf32>
  } {fa.softmax_row_sum}
  return %la#0, %la#1 : tensor<8xf32>, tensor<8x2xf32>
}

// -----

// The row-max loop must name the exponential the row-sum loop takes.
func.func @no_exponential(%m0: tensor<8xf32>, %s0: tensor<8xf32>, %a0: tensor<8x2xf32>, %qt: tensor<8x4xf32>, %kt: tensor<8x4xf32>, %i: index) -> (tensor<8xf32>, tensor<8x2xf32>) {
  %c0 = arith.constant 0 : index
  %c8 = arith.constant 8 : index
  %c32 = arith.constant 32 : index
  // expected-error @+1 {{'scf.for' op fa-online-softmax: 'fa.softmax_row_max' must name the row-sum loop's exponential, "exp" or "exp2"}}
  %m = scf.for %k0 = %c0 to %c32 step %c8 iter_args(%mi = %m0) -> (tensor<8xf32>) {
    scf.yield %mi : tensor<8xf32>
  } {fa.softmax_row_max}
  %la:2 = scf.for %k0 = %c0 to %c32 step %c8 iter_args(%li = %s0, %ai = %a0) -> (tensor<8xf32>, tensor<8x2xf32>) {
    %s = fa.score_tile %qt, %kt at [%i, %i, %i, %k0] of [%i, %i] {scale = 1.0 : f32} : tensor<8x4xf32>, tensor<8x4xf32> -> tensor<8x8xf32>
    %use = arith.addf %m, %li : tensor<8xf32>
    scf.yield %use, %ai : tensor<8xf32>, tensor<8x2xf32>
  } {fa.softmax_row_sum}
  return %la#0, %la#1 : tensor<8xf32>, tensor<8x2xf32>
}

// -----

// Register tiles (GPU kernels): the fused loop repeats the row-max loop's
// update of the max on its own scores, so the row-max loop must mark its
// scores too.
#rows = #fagpu.rows<warps = 4>
#partial = #fagpu.rows<warps = 4, partial = true>
#acc = #fagpu.acc<warps = 4>
func.func @registers_max_without_scores(%m0: tensor<64xf32, #rows>, %l0: tensor<64xf32, #partial>, %a0: tensor<64x64xf32, #acc>, %x: tensor<64x64xf32, #acc>) -> (tensor<64xf32, #partial>, tensor<64x64xf32, #acc>) {
  %c0 = arith.constant 0 : index
  %c64 = arith.constant 64 : index
  %c256 = arith.constant 256 : index
  // expected-error @+1 {{'scf.for' op fa-online-softmax: a row-max loop must compute exactly one score tile (an fa.score_tile or an op marked 'fa.softmax_scores')}}
  %m = scf.for %k0 = %c0 to %c256 step %c64 iter_args(%mi = %m0) -> (tensor<64xf32, #rows>) {
    %t = fagpu.reduce_rows <max> %x : tensor<64x64xf32, #acc> -> tensor<64xf32, #rows>
    %mn = arith.maximumf %mi, %t : tensor<64xf32, #rows>
    scf.yield %mn : tensor<64xf32, #rows>
  } {fa.softmax_row_max = "exp2"}
  %la:2 = scf.for %k0 = %c0 to %c256 step %c64 iter_args(%li = %l0, %ai = %a0) -> (tensor<64xf32, #partial>, tensor<64x64xf32, #acc>) {
    %s = arith.addf %x, %x {fa.softmax_scores} : tensor<64x64xf32, #acc>
    %mb = fagpu.broadcast_rows %m : tensor<64xf32, #rows> -> tensor<64x64xf32, #acc>
    %d = arith.subf %s, %mb : tensor<64x64xf32, #acc>
    %p = math.exp2 %d : tensor<64x64xf32, #acc>
    %ln = fagpu.update_row_sum %li, %p : tensor<64xf32, #partial>, tensor<64x64xf32, #acc>
    scf.yield %ln, %ai : tensor<64xf32, #partial>, tensor<64x64xf32, #acc>
  } {fa.softmax_row_sum}
  return %la#0, %la#1 : tensor<64xf32, #partial>, tensor<64x64xf32, #acc>
}

// -----

// Register tiles: the row-max loop's update of the max may read only the
// scores, the running max and values from outside the loop.
#rows = #fagpu.rows<warps = 4>
#partial = #fagpu.rows<warps = 4, partial = true>
#acc = #fagpu.acc<warps = 4>
func.func @registers_max_reads_other(%m0: tensor<64xf32, #rows>, %l0: tensor<64xf32, #partial>, %a0: tensor<64x64xf32, #acc>, %x: tensor<64x64xf32, #acc>) -> (tensor<64xf32, #partial>, tensor<64x64xf32, #acc>) {
  %c0 = arith.constant 0 : index
  %c64 = arith.constant 64 : index
  %c256 = arith.constant 256 : index
  %m = scf.for %k0 = %c0 to %c256 step %c64 iter_args(%mi = %m0) -> (tensor<64xf32, #rows>) {
    %y = arith.mulf %x, %x : tensor<64x64xf32, #acc>
    %s = arith.addf %x, %x {fa.softmax_scores} : tensor<64x64xf32, #acc>
    // expected-error @+1 {{'arith.addf' op fa-online-softmax: the row-max loop must update the max from the scores and the running max alone}}
    %z = arith.addf %s, %y : tensor<64x64xf32, #acc>
    %t = fagpu.reduce_rows <max> %z : tensor<64x64xf32, #acc> -> tensor<64xf32, #rows>
    %mn = arith.maximumf %mi, %t : tensor<64xf32, #rows>
    scf.yield %mn : tensor<64xf32, #rows>
  } {fa.softmax_row_max = "exp2"}
  %la:2 = scf.for %k0 = %c0 to %c256 step %c64 iter_args(%li = %l0, %ai = %a0) -> (tensor<64xf32, #partial>, tensor<64x64xf32, #acc>) {
    %s = arith.addf %x, %x {fa.softmax_scores} : tensor<64x64xf32, #acc>
    %mb = fagpu.broadcast_rows %m : tensor<64xf32, #rows> -> tensor<64x64xf32, #acc>
    %d = arith.subf %s, %mb : tensor<64x64xf32, #acc>
    %p = math.exp2 %d : tensor<64x64xf32, #acc>
    %ln = fagpu.update_row_sum %li, %p : tensor<64xf32, #partial>, tensor<64x64xf32, #acc>
    scf.yield %ln, %ai : tensor<64xf32, #partial>, tensor<64x64xf32, #acc>
  } {fa.softmax_row_sum}
  return %la#0, %la#1 : tensor<64xf32, #partial>, tensor<64x64xf32, #acc>
}
