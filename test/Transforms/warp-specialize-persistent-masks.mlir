// RUN: fa-opt %s -split-input-file -fa-fuse="chip=sm_90a warp-specialize=1" -fa-tile -fa-online-softmax -fa-warp-specialize -fa-async-copy | FileCheck %s
// RUN: fa-opt %s -split-input-file -fa-fuse="chip=sm_90a warp-specialize=1" -fa-tile -fa-online-softmax -fa-warp-specialize=persistent=always -fa-async-copy | FileCheck %s --check-prefix=ALWAYS
// RUN: fa-opt %s -split-input-file -fa-fuse="chip=sm_90a warp-specialize=1" -fa-tile -fa-online-softmax -fa-warp-specialize=persistent=never -fa-async-copy | FileCheck %s --check-prefix=NEVER
// RUN: fa-opt %s -split-input-file -fa-fuse="chip=sm_90a warp-specialize=1 block-q=64 block-kv=64" -fa-tile -fa-online-softmax -fa-warp-specialize -fa-async-copy | FileCheck %s --check-prefix=TIGHT
// RUN: fa-opt %s -split-input-file -fa-fuse="chip=sm_90a warp-specialize=1 block-q=64 block-kv=64" -fa-tile -fa-online-softmax -fa-warp-specialize=persistent=always -fa-async-copy | FileCheck %s --check-prefix=TIGHT-ALWAYS

// Persistent grids under masks that make query tiles differ in work
// (warp-specialize-persistent.mlir has the causal kernel's IR).

// Causal at D = 128 with one consumer warpgroup (64 x 64 tiles, two CTAs an
// SM): carrying the tiles done spilled there, so not persistent by default;
// `always` still is, in pairs.
// TIGHT-LABEL: func.func @causal
// TIGHT: gpu.func @fa_forward_0
// TIGHT-SAME: fa.block_q = 64
// TIGHT-NOT: fagpu.work_slot
// TIGHT: gpu.return
// TIGHT-ALWAYS-LABEL: func.func @causal
// TIGHT-ALWAYS: fagpu.work_slot
// TIGHT-ALWAYS: fagpu.block_coords of %{{.*}} in %{{.*}} {heavy_first, paired}
func.func @causal(%q: tensor<?x8x?x128xbf16>, %k: tensor<?x8x?x128xbf16>, %v: tensor<?x8x?x128xbf16>) -> tensor<?x8x?x128xbf16> {
  %o = fa.attention %q, %k, %v {causal = #fa.causal<top_left>} : tensor<?x8x?x128xbf16>, tensor<?x8x?x128xbf16>, tensor<?x8x?x128xbf16> -> tensor<?x8x?x128xbf16>
  return %o : tensor<?x8x?x128xbf16>
}

// -----

// A window at D = 128: every tile but the first few sees as many keys, so
// the CTAs take single tiles round robin (not paired), each item finding
// its own keys, and both roles carry the key tiles done. The producer gets
// 40 registers rather than TMA's 24 (its window bounds spilled at 24).
// CHECK-LABEL: func.func @window128
// CHECK: fagpu.work_slot
// CHECK: fagpu.warp_specialize attributes {consumer_registers = 232 : i64, consumer_threads = 256 : i64, ctas_per_sm = 1 : i64, producer_registers = 40 : i64} producer {
// CHECK: scf.for %{{.*}} = %{{.*}} to %{{.*}} step %{{.*}} iter_args(%[[DONE:.*]] = %{{.*}}) -> (index) {
// CHECK: %[[ITEM:.*]] = arith.addi %{{.*}}, %{{.*}} : index
// CHECK-NEXT: %{{.*}}, %{{.*}}, %[[TILE:.*]] = fagpu.block_coords of %[[ITEM]] in %{{.*}}{{$}}
// CHECK: %[[ROW:.*]] = arith.muli %[[TILE]], %{{.*}} : index
// CHECK-NEXT: fagpu.visible_keys %[[ROW]] of {{.*}} window = array<i64: 256, 0>
// CHECK: arith.remui %[[DONE]], %{{.*}} : index
// CHECK: scf.yield %{{.*}} : index
// CHECK: } consumers {
// TIGHT-LABEL: func.func @window128
// TIGHT: fagpu.work_slot
func.func @window128(%q: tensor<?x8x?x128xbf16>, %k: tensor<?x8x?x128xbf16>, %v: tensor<?x8x?x128xbf16>) -> tensor<?x8x?x128xbf16> {
  %o = fa.attention %q, %k, %v {window = array<i64: 256, 0>} : tensor<?x8x?x128xbf16>, tensor<?x8x?x128xbf16>, tensor<?x8x?x128xbf16> -> tensor<?x8x?x128xbf16>
  return %o : tensor<?x8x?x128xbf16>
}

// -----

// A window below D = 128: persistent by default too, with the producer's
// 40 registers; not persistent, the producer keeps TMA's 24.
// CHECK-LABEL: func.func @window64
// CHECK: gpu.func @fa_forward_0
// CHECK: fagpu.work_slot
// CHECK: fagpu.warp_specialize attributes {consumer_registers = 232 : i64, consumer_threads = 256 : i64, ctas_per_sm = 1 : i64, producer_registers = 40 : i64}
// CHECK: fagpu.block_coords of %{{.*}} in %{{.*}}{{$}}
// NEVER-LABEL: func.func @window64
// NEVER: gpu.func @fa_forward_0
// NEVER-NOT: fagpu.work_slot
// NEVER: fagpu.warp_specialize attributes {consumer_registers = 240 : i64, consumer_threads = 256 : i64, ctas_per_sm = 1 : i64, producer_registers = 24 : i64}
// NEVER-NOT: fagpu.work_slot
// NEVER: gpu.return
// ALWAYS-LABEL: func.func @window64
// ALWAYS: fagpu.work_slot
// ALWAYS: fagpu.warp_specialize attributes {consumer_registers = 232 : i64, consumer_threads = 256 : i64, ctas_per_sm = 1 : i64, producer_registers = 40 : i64}
// ALWAYS: fagpu.block_coords of %{{.*}} in %{{.*}}{{$}}
func.func @window64(%q: tensor<?x8x?x64xbf16>, %k: tensor<?x8x?x64xbf16>, %v: tensor<?x8x?x64xbf16>) -> tensor<?x8x?x64xbf16> {
  %o = fa.attention %q, %k, %v {window = array<i64: 256, 0>} : tensor<?x8x?x64xbf16>, tensor<?x8x?x64xbf16>, tensor<?x8x?x64xbf16> -> tensor<?x8x?x64xbf16>
  return %o : tensor<?x8x?x64xbf16>
}
