// RUN: fa-opt %S/Inputs/fagpu-causal-d64.mlir -convert-fa-to-nvvm | FileCheck %s
// RUN: sed -e 's/{heavy_first}/{heavy_first, head_group = 8}/' -e 's/{heavy_first, rematerialize}/{heavy_first, head_group = 8, rematerialize}/' %S/Inputs/fagpu-causal-d64.mlir | fa-opt -convert-fa-to-nvvm | FileCheck %s --check-prefix=GROUP
// RUN: sed -e 's/{heavy_first}/{heavy_first, batch_fastest}/' -e 's/{heavy_first, rematerialize}/{heavy_first, batch_fastest, rematerialize}/' %S/Inputs/fagpu-causal-d64.mlir | fa-opt -convert-fa-to-nvvm | FileCheck %s --check-prefix=BATCH

// convert-fa-to-nvvm on a kernel in fagpu ops (causal, bf16, D = 64, 128 x
// 64 tiles, one stage): the gpu.func becomes an llvm.func with the
// forward's ABI less the scale (the IR carries it), each op its NVVM.

// CHECK-LABEL: llvm.func @fa_forward_0(
// CHECK-SAME: fa.kernel_abi = #fa.kernel_abi<grid = [tiles(Nq, 128), Hq, B], threads = 128, shared = 32768, params = [q : ptr, k : ptr, v : ptr, o : ptr, lse : ptr, stride(q, 0) : i64, stride(q, 1) : i64, stride(q, 2) : i64, stride(k, 0) : i64, stride(k, 1) : i64, stride(k, 2) : i64, stride(v, 0) : i64, stride(v, 1) : i64, stride(v, 2) : i64, stride(o, 0) : i64, stride(o, 1) : i64, stride(o, 2) : i64, stride(lse, 0) : i64, stride(lse, 1) : i64, Nq : i32, Nk : i32, group : i32, Hq : i32, B : i32]>
// CHECK-SAME: nvvm.kernel
// The folded grid's prologue: CTAs past Hq x B return.
// CHECK: llvm.cond_br
// CHECK-NEXT: ^bb1:
// CHECK-NEXT: llvm.return
// By default the tile is nctaid.x - 1 - ctaid.x (the prologue's ctaid.x;
// head and batch as read).
// CHECK: %[[N:.*]] = nvvm.read.ptx.sreg.nctaid.x : i32
// CHECK-NEXT: arith.constant 1 : i32
// CHECK-NEXT: %[[LAST:.*]] = arith.subi %[[N]], %{{.*}} : i32
// CHECK-NEXT: arith.subi %[[LAST]], %{{[0-9]+}} : i32
// Q (one group), then K(0) if there are keys to visit.
// CHECK-COUNT-8: nvvm.cp.async.shared.global
// CHECK: nvvm.cp.async.commit.group
// CHECK: scf.if
// CHECK-COUNT-4: nvvm.cp.async.shared.global
// CHECK: nvvm.cp.async.commit.group
// Q's fragments once Q has landed: 2 m-tiles x 4 k-steps.
// CHECK: nvvm.cp.async.wait.group 1
// CHECK-NEXT: nvvm.barrier0
// CHECK-COUNT-8: nvvm.ldmatrix {{.*}}layout = #nvvm.mma_layout<row>
// The loop carries m and l (2 x 2 rows each) and acc (2 x 8 x 4).
// CHECK: scf.for {{.*}} -> (f32, f32, f32, f32, f32, f32, f32, f32, f32
// CHECK: nvvm.cp.async.wait.group 0
// CHECK-NEXT: nvvm.barrier0
// S = Q K^T: 4 k-steps x 4 pairs of n-tiles x 2 m-tiles x 2.
// CHECK-COUNT-64: nvvm.mma.sync
// CHECK: nvvm.cp.async.wait.group 0
// CHECK-NEXT: nvvm.barrier0
// The row max across the quad: two butterfly shuffles per row.
// CHECK: nvvm.shfl.sync  bfly
// Each row's rescale factor, right after it the row's 16 O values and its
// row sum (RowwisePlacer), then the next row's.
// CHECK: [[ALPHA:%[0-9]+]] = math.exp2 %{{[0-9]+}} : f32
// CHECK-NEXT: arith.mulf %arg{{[0-9]+}}, [[ALPHA]] : f32
// CHECK-NEXT: arith.mulf %arg{{[0-9]+}}, [[ALPHA]] : f32
// CHECK-COUNT-15: arith.mulf %arg{{[0-9]+}}, [[ALPHA]] : f32
// CHECK-NEXT: math.exp2
// O += P V: V through ldmatrix.trans; P's pairs are rounded to bf16 just
// before the mma that reads them.
// CHECK: nvvm.ldmatrix {{.*}}layout = #nvvm.mma_layout<col>
// CHECK-COUNT-4: llvm.fptrunc {{.*}} : vector<2xf32> to vector<2xbf16>
// CHECK-NEXT: [[P3:%[0-9]+]] = llvm.bitcast
// CHECK-NEXT: nvvm.mma.sync A[%{{[0-9]+}}, %{{[0-9]+}}, %{{[0-9]+}}, [[P3]]]
// CHECK-COUNT-63: nvvm.mma.sync
// CHECK: scf.yield
// The epilogue: O / l, lse = (m + lg2 l) ln 2.
// CHECK: llvm.inline_asm has_side_effects "mov.b32 $0, $1;"
// Rows below Nq store: 2 m-tiles x 2 rows x 8 column pairs of O, each one
// predicated st.global (no branch), then each row's lse.
// CHECK-COUNT-32: llvm.inline_asm has_side_effects "{ .reg .pred p; setp.ne.b32 p, $0, 0; @p st.global.b32 [$1], $2; }", "r,l,r,~{memory}"
// CHECK-NOT: scf.if
// CHECK: llvm.inline_asm "lg2.approx.f32 $0, $1;"
// CHECK-NOT: scf.if
// CHECK-COUNT-4: llvm.inline_asm has_side_effects "{ .reg .pred p; setp.ne.b32 p, $0, 0; @p st.global.f32 [$1], $2; }", "r,l,f,~{memory}"
// CHECK-NOT: fagpu.
// CHECK-NOT: builtin.unrealized_conversion_cast
// CHECK-NOT: nvvm.mma.sync

// With head_group = 8, the CTA's place, heaviest tiles first in groups of 8
// (head, batch) pairs:
// launched = (ctaid.z nctaid.y + ctaid.y) nctaid.x + ctaid.x; its group and
// place in it; the group's width min(Hq B - 8 group, 8); the tile
// nctaid.x - 1 - place / width, the pair 8 group + place % width.
// GROUP-LABEL: llvm.func @fa_forward_0(
// GROUP: llvm.return
// GROUP: %[[X:.*]] = nvvm.read.ptx.sreg.ctaid.x : i32
// GROUP-NEXT: %[[TILES:.*]] = nvvm.read.ptx.sreg.nctaid.x : i32
// GROUP-NEXT: %[[Y:.*]] = nvvm.read.ptx.sreg.ctaid.y : i32
// GROUP-NEXT: %[[Z:.*]] = nvvm.read.ptx.sreg.ctaid.z : i32
// GROUP-NEXT: %[[ROWS:.*]] = nvvm.read.ptx.sreg.nctaid.y : i32
// GROUP-NEXT: %[[ZR:.*]] = arith.muli %[[Z]], %[[ROWS]] : i32
// GROUP-NEXT: %[[ROW:.*]] = arith.addi %[[ZR]], %[[Y]] : i32
// GROUP-NEXT: %[[RT:.*]] = arith.muli %[[ROW]], %[[TILES]] : i32
// GROUP-NEXT: %[[L:.*]] = arith.addi %[[RT]], %[[X]] : i32
// GROUP-NEXT: %[[PAIRS:.*]] = arith.muli %[[HQ:arg[0-9]+]], %[[B:arg[0-9]+]] : i32
// GROUP-NEXT: %[[C8:.*]] = arith.constant 8 : i32
// GROUP-NEXT: %[[GC:.*]] = arith.muli %[[TILES]], %[[C8]] : i32
// GROUP-NEXT: %[[G:.*]] = arith.divui %[[L]], %[[GC]] : i32
// GROUP-NEXT: %[[GL:.*]] = arith.muli %[[G]], %[[GC]] : i32
// GROUP-NEXT: %[[IN:.*]] = arith.subi %[[L]], %[[GL]] : i32
// GROUP-NEXT: arith.constant 8 : i32
// GROUP-NEXT: %[[FIRST:.*]] = arith.muli %[[G]], %{{.*}} : i32
// GROUP-NEXT: arith.constant 8 : i32
// GROUP-NEXT: %[[LEFT:.*]] = arith.subi %[[PAIRS]], %[[FIRST]] : i32
// GROUP-NEXT: %[[W:.*]] = arith.minsi %[[LEFT]], %{{.*}} : i32
// GROUP-NEXT: %[[BACK:.*]] = arith.divui %[[IN]], %[[W]] : i32
// GROUP-NEXT: %[[BW:.*]] = arith.muli %[[BACK]], %[[W]] : i32
// GROUP-NEXT: %[[COL:.*]] = arith.subi %[[IN]], %[[BW]] : i32
// GROUP-NEXT: %[[PAIR:.*]] = arith.addi %[[FIRST]], %[[COL]] : i32
// GROUP-NEXT: arith.constant 1 : i32
// GROUP-NEXT: %[[LAST:.*]] = arith.subi %[[TILES]], %{{.*}} : i32
// GROUP-NEXT: %[[TILE:.*]] = arith.subi %[[LAST]], %[[BACK]] : i32
// GROUP-NEXT: arith.remui %[[PAIR]], %[[HQ]] : i32
// GROUP-NEXT: arith.divui %[[PAIR]], %[[HQ]] : i32

// batch_fastest: the launch index L read batch fastest (B is the last
// parameter), then the tile (last one first), then the head; the epilogue
// reads it again from the special registers.
// BATCH-LABEL: llvm.func @fa_forward_0(
// BATCH: llvm.return
// BATCH: %[[X:.*]] = nvvm.read.ptx.sreg.ctaid.x : i32
// BATCH-NEXT: %[[TILES:.*]] = nvvm.read.ptx.sreg.nctaid.x : i32
// BATCH-NEXT: %[[Y:.*]] = nvvm.read.ptx.sreg.ctaid.y : i32
// BATCH-NEXT: %[[Z:.*]] = nvvm.read.ptx.sreg.ctaid.z : i32
// BATCH-NEXT: %[[ROWS:.*]] = nvvm.read.ptx.sreg.nctaid.y : i32
// BATCH-NEXT: %[[ZR:.*]] = arith.muli %[[Z]], %[[ROWS]] : i32
// BATCH-NEXT: %[[ROW:.*]] = arith.addi %[[ZR]], %[[Y]] : i32
// BATCH-NEXT: %[[RT:.*]] = arith.muli %[[ROW]], %[[TILES]] : i32
// BATCH-NEXT: %[[L:.*]] = arith.addi %[[RT]], %[[X]] : i32
// BATCH-NEXT: %[[BATCH:.*]] = arith.remui %[[L]], %arg23 : i32
// BATCH-NEXT: %[[REST:.*]] = arith.divui %[[L]], %arg23 : i32
// BATCH-NEXT: %[[T:.*]] = arith.remui %[[REST]], %[[TILES]] : i32
// BATCH-NEXT: arith.constant 1 : i32
// BATCH-NEXT: %[[LAST:.*]] = arith.subi %[[TILES]], %{{.*}} : i32
// BATCH-NEXT: %[[TILE:.*]] = arith.subi %[[LAST]], %[[T]] : i32
// BATCH-NEXT: %[[HEAD:.*]] = arith.divui %[[REST]], %[[TILES]] : i32
// BATCH-NEXT: arith.index_cast %[[BATCH]] : i32 to index
// BATCH-NEXT: arith.index_cast %[[HEAD]] : i32 to index
// BATCH-NEXT: arith.index_cast %[[TILE]] : i32 to index
// BATCH: %[[X2:.*]] = nvvm.read.ptx.sreg.ctaid.x : i32
// BATCH-NEXT: llvm.inline_asm has_side_effects "mov.b32 $0, $1;", "=r,r" %[[X2]]
// BATCH: arith.remui %{{.*}}, %arg23 : i32
