// RUN: fa-opt %s -convert-fa-to-nvvm=chip=sm_90a -split-input-file | FileCheck %s

// bf16, D = 64, GQA 2:1, a full f16 bias [B, Hq, Nq, Nk] with its gradient,
// ALiBi [Hq] and a score_mod with its derivative: the three kernels take the
// scored ABI tail, and a fourth writes dBias.

// CHECK: module attributes {gpu.container_module}

// The plain ABI, then bias, its strides (b, h, i, j), slopes, their batch
// stride, dBias and its strides.
// CHECK-LABEL: llvm.func @fa_backward_dsum_0(
// CHECK-SAME: %arg45: f32, %arg46: !llvm.ptr<1>, %arg47: i64, %arg48: i64, %arg49: i64, %arg50: i64, %arg51: !llvm.ptr<1>, %arg52: i64, %arg53: !llvm.ptr<1>, %arg54: i64, %arg55: i64, %arg56: i64, %arg57: i64)
// CHECK-SAME: fa.kernel_abi = #fa.kernel_abi<grid = [tiles(Nq, 64), Hq, B], threads = 128, shared = 0, params = {{\[}}{{.+}}, Nq : i32, Nk : i32, group : i32, Hq : i32, Hkv : i32, B : i32, scale_log2 : f32, scale : f32, bias : ptr, stride(bias, 0) : i64, stride(bias, 1) : i64, stride(bias, 2) : i64, stride(bias, 3) : i64, slopes : ptr, stride(slopes, 0) : i64, dbias : ptr, stride(dbias, 0) : i64, stride(dbias, 1) : i64, stride(dbias, 2) : i64, stride(dbias, 3) : i64]>

// dkdv: Q tiles of 32 rows (the scored path at D = 64); the slope of each
// query head of the group; S^T's scores in the natural domain (buildScore's,
// after the bias load at (query clamped to Nq - 1, key)): scale, ALiBi,
// the bias, score_mod; ALiBi's distance converted to float once per tile,
// at the thread's first element (the next query, its column + 1, adds 1);
// masks on tiles that
// cross Nq; P^T with log2(e) in the fma; dS^T takes score_mod_grad's value,
// 0 where P is 0.
// CHECK-LABEL: llvm.func @fa_backward_dkdv_0(
// CHECK-SAME: %[[BIAS:arg46]]: !llvm.ptr<1>, %[[SB:arg47]]: i64, %[[SH:arg48]]: i64, %[[SI:arg49]]: i64, %[[SJ:arg50]]: i64, %[[SLOPES:arg51]]: !llvm.ptr<1>, %[[SS:arg52]]: i64,
// CHECK-SAME: fa.kernel_abi = #fa.kernel_abi<grid = [tiles(Nk, 64), Hkv, B], threads = 128, shared = 33280,
// CHECK: arith.muli %{{.+}}, %[[SJ]] : i64
// CHECK: arith.muli %{{.+}}, %[[SJ]] : i64
// CHECK: scf.for
// CHECK: %[[SAT:.+]] = arith.muli %{{.+}}, %[[SS]] : i64
// CHECK: llvm.getelementptr %[[SLOPES]][%{{.+}}] : (!llvm.ptr<1>, i64) -> !llvm.ptr<1>, f32
// CHECK: %[[SLOPE:.+]] = llvm.load %{{.+}} : !llvm.ptr<1> -> f32
// CHECK: llvm.getelementptr %[[BIAS]][%{{.+}}] : (!llvm.ptr<1>, i64) -> !llvm.ptr<1>, f16
// CHECK: scf.for
// CHECK-COUNT-16: nvvm.mma.sync
// CHECK-NOT: nvvm.mma.sync
// CHECK: scf.if %{{.+}} -> (i32, i32,
// CHECK: %[[DIST:.+]] = arith.sitofp %{{.+}} : i32 to f32
// CHECK-NOT: arith.sitofp
// CHECK: arith.minsi
// CHECK: arith.muli %{{.+}}, %[[SI]] : i64
// CHECK: %[[B:.+]] = llvm.load %{{.+}} : !llvm.ptr<1> -> f16
// CHECK: %[[SCALE:.+]] = arith.constant 1.250000e-01 : f32
// CHECK: arith.mulf %{{.+}}, %[[SCALE]] fastmath<contract> : f32
// CHECK: %[[ABS:.+]] = llvm.intr.fabs(%[[DIST]]) : (f32) -> f32
// CHECK: %[[ALIBI:.+]] = arith.mulf %[[SLOPE]], %[[ABS]] fastmath<contract> : f32
// CHECK: arith.subf %{{.+}}, %[[ALIBI]] fastmath<contract> : f32
// CHECK: arith.extf %[[B]] : f16 to f32
// CHECK: %[[HALF:.+]] = arith.constant 5.000000e-01 : f32
// CHECK: arith.mulf %{{.+}}, %[[HALF]] : f32
// CHECK: %[[GRADC:.+]] = arith.constant 5.000000e-01 : f32
// CHECK: %[[GRAD:.+]] = arith.mulf %{{.+}}, %[[GRADC]] : f32
// CHECK: %[[DIST1:.+]] = arith.addf %[[DIST]], %{{.+}} : f32
// CHECK-NEXT: llvm.intr.fabs(%[[DIST1]]) : (f32) -> f32
// CHECK-NOT: arith.sitofp
// CHECK: arith.select
// CHECK: %[[LOG2E:.+]] = arith.constant 1.44269502 : f32
// CHECK: math.fma %{{.+}}, %[[LOG2E]], %{{.+}} : f32
// CHECK: llvm.intr.exp2
// CHECK: %[[PD:.+]] = arith.mulf %{{.+}}, %[[GRAD]] : f32
// CHECK: %[[ZERO:.+]] = arith.cmpf oeq, %{{.+}}, %{{.+}} : f32
// CHECK: arith.select %[[ZERO]], %{{.+}}, %[[PD]] : f32
// CHECK: } else {
// CHECK: scf.yield
// CHECK-COUNT-48: nvvm.mma.sync
// CHECK-NOT: nvvm.mma.sync
// CHECK: llvm.return

// dq: the slope and the thread's two bias rows once; the keys clamped to
// Nk - 1.
// CHECK-LABEL: llvm.func @fa_backward_dq_0(
// CHECK: llvm.load %{{.+}} : !llvm.ptr<1> -> f32
// CHECK: arith.minsi
// CHECK: arith.minsi
// CHECK: scf.for
// CHECK-COUNT-32: nvvm.mma.sync
// CHECK-NOT: nvvm.mma.sync
// CHECK: scf.if %{{.+}} -> (f32,
// CHECK: arith.minsi
// CHECK: arith.muli %{{.+}}, %{{.+}} : i64
// CHECK: llvm.load %{{.+}} : !llvm.ptr<1> -> f16
// CHECK: llvm.return

// dbias: one block per (Q tile, head, batch); over the K/V tiles, one
// member each (nothing broadcasts): S, P, dP, dS = P (dP - Dsum) score_mod'
// into a 16 x 64 tile per warp, stored as f16 where in bounds.
// CHECK-LABEL: llvm.func @fa_backward_dbias_0(
// CHECK-SAME: fa.kernel_abi = #fa.kernel_abi<grid = [tiles(Nq, 64), Hq, B], threads = 128, shared = 33792,
// CHECK: scf.for
// CHECK: scf.for
// CHECK: scf.for
// CHECK: scf.for
// CHECK: llvm.inline_asm has_side_effects "mov.b32 $0, $1;"
// CHECK-COUNT-16: nvvm.cp.async.shared.global
// CHECK: nvvm.cp.async.wait.group 0
// CHECK-COUNT-32: nvvm.mma.sync
// CHECK-NOT: nvvm.mma.sync
// CHECK: arith.constant 5.000000e-01 : f32
// CHECK-NOT: scf.if
// CHECK: math.fma
// CHECK-COUNT-32: nvvm.mma.sync
// CHECK-NOT: nvvm.mma.sync
// CHECK: arith.subf
// CHECK-NEXT: arith.mulf
// CHECK: arith.addf
// CHECK-COUNT-32: arith.truncf %{{.+}} : f32 to f16
// CHECK-NOT: nvvm.shfl.sync
// CHECK-NOT: atomicrmw
// CHECK: llvm.return

func.func @full_bias(%q: tensor<?x4x?x64xbf16>, %k: tensor<?x2x?x64xbf16>, %v: tensor<?x2x?x64xbf16>, %o: tensor<?x4x?x64xbf16>, %do: tensor<?x4x?x64xbf16>, %lse: tensor<?x4x?xf32>, %bias: tensor<?x4x?x?xf16>, %s: tensor<4xf32>) -> (tensor<?x4x?x64xbf16>, tensor<?x2x?x64xbf16>, tensor<?x2x?x64xbf16>, tensor<?x4x?x?xf16>) {
  %dq, %dk, %dv, %db = fa.attention_grad %q, %k, %v, %o, %do, %lse bias(%bias : tensor<?x4x?x?xf16>) alibi_slopes(%s : tensor<4xf32>) : tensor<?x4x?x64xbf16>, tensor<?x2x?x64xbf16>, tensor<?x2x?x64xbf16>, tensor<?x4x?x64xbf16>, tensor<?x4x?x64xbf16>, tensor<?x4x?xf32> -> tensor<?x4x?x64xbf16>, tensor<?x2x?x64xbf16>, tensor<?x2x?x64xbf16>, tensor<?x4x?x?xf16> score_mod {
  ^bb0(%x: f32, %b: index, %h: index, %i: index, %j: index):
    %half = arith.constant 5.000000e-01 : f32
    %r = arith.mulf %x, %half : f32
    fa.yield %r : f32
  } score_mod_grad {
  ^bb0(%x: f32, %b: index, %h: index, %i: index, %j: index):
    %half = arith.constant 5.000000e-01 : f32
    fa.yield %half : f32
  }
  return %dq, %dk, %dv, %db : tensor<?x4x?x64xbf16>, tensor<?x2x?x64xbf16>, tensor<?x2x?x64xbf16>, tensor<?x4x?x?xf16>
}

// -----

// f16, D = 128, mask_mod and causal, no bias gradient: three kernels; every
// tile is masked (no branch), mask_mod inlined per score in dkdv and dq.

// CHECK: module attributes {gpu.container_module}
// dkdv: k0 = 64 * ctaid.x; causal top-left (no offset): the Q loop runs
// over [max(0, k0), Nq); the first score of S^T (key row, query column) is
// kept if key <= query, the mask_mod holds on (query, key) and query < Nq.
// CHECK-LABEL: llvm.func @fa_backward_dkdv_0(
// CHECK-SAME: %[[NQ:[^:]+]]: i32, %[[NK:[^:]+]]: i32, %{{[^:]+}}: i32, %{{[^:]+}}: i32, %{{[^:]+}}: i32, %{{[^:]+}}: i32, %{{[^:]+}}: f32, %{{[^:]+}}: f32,
// CHECK-SAME: fa.kernel_abi = #fa.kernel_abi<grid = [tiles(Nk, 64), Hkv, B], threads = 128, shared = 49408,
// CHECK: %[[K0:.+]] = arith.muli %{{.+}}, %c{{[0-9]+}}_i32{{[_0-9]*}} : i32
// CHECK: %{{.+}} = arith.subi %[[NK]], %[[NQ]] : i32
// CHECK: %[[C0:.+]] = arith.constant 0 : i32
// CHECK-NEXT: %[[QBEGIN:.+]] = arith.maxsi %[[C0]], %[[K0]] : i32
// CHECK: scf.for
// CHECK: %[[QENDIDX:.+]] = arith.index_cast %[[NQ]] : i32 to index
// CHECK-NEXT: %[[QBIDX:.+]] = arith.index_cast %[[QBEGIN]] : i32 to index
// CHECK-NEXT: scf.for %{{.+}} = %[[QBIDX]] to %[[QENDIDX]] step %c16
// CHECK-COUNT-16: nvvm.mma.sync
// CHECK-NOT: nvvm.mma.sync
// CHECK-NOT: scf.if
// CHECK: %[[CAUSAL:.+]] = arith.cmpi sle, %[[KEY:.+]], %[[QUERY:.+]] : i32
// CHECK-NEXT: %[[I:.+]] = arith.index_cast %[[QUERY]] : i32 to index
// CHECK: arith.remui %[[I]], %{{.+}} : index
// CHECK: %[[BOTH:.+]] = arith.andi %[[CAUSAL]], %{{.+}} : i1
// CHECK-NEXT: %[[INQ:.+]] = arith.cmpi slt, %[[QUERY]], %[[NQ]] : i32
// CHECK-NEXT: %[[KEEP:.+]] = arith.andi %[[BOTH]], %[[INQ]] : i1
// CHECK-NEXT: arith.select %[[KEEP]], %{{.+}}, %{{.+}} : f32
// CHECK: llvm.intr.exp2
// dq: q0 = 64 * ctaid.x, the K/V loop over [0, max(0, min(Nk, q0 + 64)))
// (no offset); the first score is kept if key < Nk, key <= row (the
// mask_mod's i) and the mask_mod holds on (row, key).
// CHECK-LABEL: llvm.func @fa_backward_dq_0(
// CHECK-SAME: %[[NQ:[^:]+]]: i32, %[[NK:[^:]+]]: i32, %{{[^:]+}}: i32, %{{[^:]+}}: i32, %{{[^:]+}}: i32, %{{[^:]+}}: i32, %{{[^:]+}}: f32, %{{[^:]+}}: f32,
// CHECK: %[[Q0:.+]] = arith.muli %{{.+}}, %c{{[0-9]+}}_i32{{[_0-9]*}} : i32
// CHECK: nvvm.barrier0
// CHECK-NEXT: %[[C64:.+]] = arith.constant 64 : i32
// CHECK-NEXT: %[[QEND:.+]] = arith.addi %[[Q0]], %[[C64]] : i32
// CHECK-NEXT: %{{.+}} = arith.subi %[[NK]], %[[NQ]] : i32
// CHECK-NEXT: %[[BEGIN:.+]] = arith.constant 0 : i32
// CHECK-NEXT: %[[MIN:.+]] = arith.minsi %[[NK]], %[[QEND]] : i32
// CHECK-NEXT: %[[END:.+]] = arith.maxsi %[[BEGIN]], %[[MIN]] : i32
// CHECK: %[[ENDIDX:.+]] = arith.index_cast %[[END]] : i32 to index
// CHECK-NEXT: %[[BEGINIDX:.+]] = arith.index_cast %[[BEGIN]] : i32 to index
// CHECK-NEXT: scf.for %{{.+}} = %[[BEGINIDX]] to %[[ENDIDX]] step %c64
// CHECK-COUNT-64: nvvm.mma.sync
// CHECK-NOT: nvvm.mma.sync
// CHECK-NOT: scf.if
// CHECK: %[[INNK:.+]] = arith.cmpi slt, %[[KEY:.+]], %[[NK]] : i32
// CHECK-NEXT: %[[CAUSAL:.+]] = arith.cmpi sle, %[[KEY]], %[[R:.+]] : i32
// CHECK-NEXT: %[[BOTH:.+]] = arith.andi %[[INNK]], %[[CAUSAL]] : i1
// CHECK-NEXT: %[[I:.+]] = arith.index_cast %[[R]] : i32 to index
// CHECK: arith.remui %[[I]], %{{.+}} : index
// CHECK: %[[KEEP:.+]] = arith.andi %[[BOTH]], %{{.+}} : i1
// CHECK-NEXT: arith.select %[[KEEP]], %{{.+}}, %{{.+}} : f32
// CHECK: llvm.intr.exp2
// CHECK-NOT: llvm.func @fa_backward_dbias

func.func @mask_mod(%q: tensor<?x2x?x128xf16>, %o: tensor<?x2x?x128xf16>, %lse: tensor<?x2x?xf32>) -> tensor<?x2x?x128xf16> {
  %dq, %dk, %dv = fa.attention_grad %q, %q, %q, %o, %o, %lse {causal = #fa.causal<top_left>} : tensor<?x2x?x128xf16>, tensor<?x2x?x128xf16>, tensor<?x2x?x128xf16>, tensor<?x2x?x128xf16>, tensor<?x2x?x128xf16>, tensor<?x2x?xf32> -> tensor<?x2x?x128xf16>, tensor<?x2x?x128xf16>, tensor<?x2x?x128xf16> mask_mod {
  ^bb0(%b: index, %h: index, %i: index, %j: index):
    %c2 = arith.constant 2 : index
    %r = arith.remui %i, %c2 : index
    %z = arith.constant 0 : index
    %even = arith.cmpi eq, %r, %z : index
    fa.yield %even : i1
  }
  return %dq : tensor<?x2x?x128xf16>
}

// -----

// A bias broadcast over batch and rows, [1, Hq, 1, Nk] f32: its gradient
// block is one row of a head; the CTA loops over every batch and Q tile
// and sums columns over the warp's rows (shuffles) and the warps (shared
// memory, in warp order): no atomics.

// Its grid: one block per head, [1, Hq, 1] (the broadcast dims are 1).
// CHECK-LABEL: llvm.func @fa_backward_dbias_0(
// CHECK-SAME: %[[HQ:arg41]]: i32, %{{[^:]+}}: i32, %[[B:arg43]]: i32,
// CHECK-SAME: fa.kernel_abi = #fa.kernel_abi<grid = [1, Hq, 1], threads = 128, shared = 33792,
// CHECK: scf.for
// CHECK: scf.for %{{.+}} = %{{.+}} to %{{.+}} step %{{.+}} iter_args
// CHECK: scf.for
// CHECK: scf.for
// CHECK-COUNT-32: nvvm.mma.sync
// CHECK: llvm.load %{{.+}} : !llvm.ptr<1> -> f32
// CHECK-COUNT-32: nvvm.mma.sync
// CHECK: nvvm.shfl.sync bfly %{{.+}}, %{{.+}}, %[[C4:.+]], %{{.+}} : f32 -> f32
// CHECK: llvm.store %{{.+}}, %{{.+}} : f32, !llvm.ptr<3>
// CHECK: nvvm.barrier0
// CHECK-COUNT-4: llvm.load %{{.+}} : !llvm.ptr<3> -> f32
// CHECK: llvm.store %{{.+}}, %{{.+}} : f32, !llvm.ptr<1>
// CHECK: nvvm.barrier0
// CHECK-NOT: atomicrmw
// CHECK: llvm.return

func.func @broadcast_bias(%q: tensor<?x4x?x64xbf16>, %o: tensor<?x4x?x64xbf16>, %lse: tensor<?x4x?xf32>, %bias: tensor<1x4x1x?xf32>) -> tensor<1x4x1x?xf32> {
  %dq, %dk, %dv, %db = fa.attention_grad %q, %q, %q, %o, %o, %lse bias(%bias : tensor<1x4x1x?xf32>) : tensor<?x4x?x64xbf16>, tensor<?x4x?x64xbf16>, tensor<?x4x?x64xbf16>, tensor<?x4x?x64xbf16>, tensor<?x4x?x64xbf16>, tensor<?x4x?xf32> -> tensor<?x4x?x64xbf16>, tensor<?x4x?x64xbf16>, tensor<?x4x?x64xbf16>, tensor<1x4x1x?xf32>
  return %db : tensor<1x4x1x?xf32>
}

// -----

// A bias broadcast over heads and keys, [B, 1, Nq, 1] f16 (D = 96: K/V
// tiles of 32 keys). dBias's row sums are exactly 0 (softmax is
// shift-invariant): the kernel must still sum every key once. Two f32 row
// accumulators, 0.0 before the K/V loop, carried through every member loop;
// 8 dS terms per row per tile (keys past Nk and rows past Nq have P = 0 and
// zero-filled K/V); after the loop a quad reduction (lanes 1, 2 hold the
// row's other columns), stored once by tq == 0 for rows < Nq.

// CHECK-LABEL: llvm.func @fa_backward_dbias_0(
// CHECK-SAME: fa.kernel_abi = #fa.kernel_abi<grid = [tiles(Nq, 64), 1, B], threads = 128, shared = 37376,
// CHECK: %[[ZERO:.+]] = arith.constant 0.000000e+00 : f32
// CHECK: %[[STEP:.+]] = arith.constant 32 : i32
// CHECK: %[[ACC:.+]]:2 = scf.for %{{.+}} = %{{.+}} to %{{.+}} step %{{.+}} iter_args(%{{.+}} = %[[ZERO]], %{{.+}} = %[[ZERO]]) -> (f32, f32)
// CHECK: scf.for {{.+}} -> (f32, f32)
// CHECK: scf.for {{.+}} -> (f32, f32)
// CHECK: scf.for {{.+}} -> (f32, f32)
// CHECK: llvm.inline_asm has_side_effects "mov.b32 $0, $1;"
// CHECK-COUNT-48: nvvm.mma.sync
// CHECK-COUNT-16: arith.addf %{{.+}}, %{{.+}} : f32
// CHECK-NEXT: scf.yield %{{.+}}, %{{.+}} : f32, f32
// CHECK: nvvm.shfl.sync  bfly %{{.+}}, %[[ACC]]#0, %{{.+}}, %{{.+}} : f32 -> f32
// CHECK: nvvm.shfl.sync  bfly
// CHECK-NOT: nvvm.shfl.sync
// CHECK: arith.cmpi eq
// CHECK: arith.cmpi slt
// CHECK: scf.if
// CHECK: arith.truncf %{{.+}} : f32 to f16
// CHECK-NEXT: llvm.store
// CHECK: nvvm.shfl.sync  bfly %{{.+}}, %[[ACC]]#1, %{{.+}}, %{{.+}} : f32 -> f32
// CHECK: nvvm.shfl.sync  bfly
// CHECK-NOT: nvvm.shfl.sync
// CHECK: scf.if
// CHECK: arith.truncf %{{.+}} : f32 to f16
// CHECK-NEXT: llvm.store
// CHECK-NOT: atomicrmw
// CHECK-NOT: nvvm.barrier0
// CHECK: llvm.return

func.func @rows_bias(%q: tensor<?x2x?x96xbf16>, %o: tensor<?x2x?x96xbf16>, %lse: tensor<?x2x?xf32>, %bias: tensor<?x1x?x1xf16>) -> tensor<?x1x?x1xf16> {
  %dq, %dk, %dv, %db = fa.attention_grad %q, %q, %q, %o, %o, %lse bias(%bias : tensor<?x1x?x1xf16>) : tensor<?x2x?x96xbf16>, tensor<?x2x?x96xbf16>, tensor<?x2x?x96xbf16>, tensor<?x2x?x96xbf16>, tensor<?x2x?x96xbf16>, tensor<?x2x?xf32> -> tensor<?x2x?x96xbf16>, tensor<?x2x?x96xbf16>, tensor<?x2x?x96xbf16>, tensor<?x1x?x1xf16>
  return %db : tensor<?x1x?x1xf16>
}

// -----

// A scalar bias [1, 1, 1, 1] f32 (D = 32): one CTA, one f32 accumulator
// from 0.0 through every loop; a butterfly over all 32 lanes, lane 0 of
// each warp writes its sum to shared memory, a barrier, thread 0 adds the 4
// warps in order and stores, a barrier.

// CHECK-LABEL: llvm.func @fa_backward_dbias_0(
// CHECK-SAME: fa.kernel_abi = #fa.kernel_abi<grid = [1, 1, 1], threads = 128, shared = 17408,
// CHECK: %[[ZERO:.+]] = arith.constant 0.000000e+00 : f32
// CHECK: %[[ACC:.+]] = scf.for %{{.+}} = %{{.+}} to %{{.+}} step %{{.+}} iter_args(%{{.+}} = %[[ZERO]]) -> (f32)
// CHECK: scf.for {{.+}} -> (f32)
// CHECK: scf.for {{.+}} -> (f32)
// CHECK: scf.for {{.+}} -> (f32)
// CHECK-COUNT-32: nvvm.mma.sync
// CHECK-COUNT-32: arith.addf %{{.+}}, %{{.+}} : f32
// CHECK-NEXT: scf.yield %{{.+}} : f32
// CHECK: %[[C1:.+]] = arith.constant 1 : i32
// CHECK: nvvm.shfl.sync  bfly %{{.+}}, %[[ACC]], %[[C1]], %{{.+}} : f32 -> f32
// CHECK: %[[C2:.+]] = arith.constant 2 : i32
// CHECK: nvvm.shfl.sync  bfly %{{.+}}, %{{.+}}, %[[C2]], %{{.+}} : f32 -> f32
// CHECK: %[[C4:.+]] = arith.constant 4 : i32
// CHECK: nvvm.shfl.sync  bfly %{{.+}}, %{{.+}}, %[[C4]], %{{.+}} : f32 -> f32
// CHECK: %[[C8:.+]] = arith.constant 8 : i32
// CHECK: nvvm.shfl.sync  bfly %{{.+}}, %{{.+}}, %[[C8]], %{{.+}} : f32 -> f32
// CHECK: %[[C16:.+]] = arith.constant 16 : i32
// CHECK: nvvm.shfl.sync  bfly %{{.+}}, %{{.+}}, %[[C16]], %{{.+}} : f32 -> f32
// CHECK: %[[SUM:.+]] = arith.addf
// CHECK: arith.cmpi eq
// CHECK-NEXT: scf.if
// CHECK: llvm.store %[[SUM]], %{{.+}} : f32, !llvm.ptr<3>
// CHECK: nvvm.barrier0
// CHECK: arith.cmpi slt
// CHECK-NEXT: scf.if
// CHECK-COUNT-4: llvm.load %{{.+}} : !llvm.ptr<3> -> f32
// CHECK: llvm.store %{{.+}}, %{{.+}} : f32, !llvm.ptr<1>
// CHECK: nvvm.barrier0
// CHECK-NEXT: llvm.return

func.func @scalar_bias(%q: tensor<?x2x?x32xf16>, %o: tensor<?x2x?x32xf16>, %lse: tensor<?x2x?xf32>, %bias: tensor<1x1x1x1xf32>) -> tensor<1x1x1x1xf32> {
  %dq, %dk, %dv, %db = fa.attention_grad %q, %q, %q, %o, %o, %lse bias(%bias : tensor<1x1x1x1xf32>) : tensor<?x2x?x32xf16>, tensor<?x2x?x32xf16>, tensor<?x2x?x32xf16>, tensor<?x2x?x32xf16>, tensor<?x2x?x32xf16>, tensor<?x2x?xf32> -> tensor<?x2x?x32xf16>, tensor<?x2x?x32xf16>, tensor<?x2x?x32xf16>, tensor<1x1x1x1xf32>
  return %db : tensor<1x1x1x1xf32>
}
