// RUN: fa-opt %s -split-input-file -fa-fuse="chip=sm_90a warp-specialize=1" -fa-key-ranges -fa-tile -fa-online-softmax -fa-warp-specialize -fa-async-copy | FileCheck %s
// RUN: fa-opt %s -split-input-file -fa-fuse="chip=sm_90a warp-specialize=1" -fa-key-ranges -fa-tile -fa-online-softmax -fa-warp-specialize=persistent=always -fa-async-copy | FileCheck %s --check-prefix=ALWAYS

// A document mask's key-range kernel: each query tile visits the key tiles
// the key-range kernel found for it. Not persistent by default at D = 128
// (it measured level to 3% slower); `always` makes it so, one tile an item,
// each item finding its keys from the ranges and its full run, the producer
// at 24 registers (at 40 a mask_mod's consumers spilled at D = 64).
// CHECK-LABEL: gpu.func @fa_forward_0(
// CHECK-NOT: fagpu.work_slot
// CHECK: fagpu.warp_specialize attributes {{{.*}}producer_registers = 24 : i64}
// CHECK: gpu.return
// ALWAYS-LABEL: gpu.func @fa_forward_0(
// ALWAYS: fagpu.work_slot
// ALWAYS: fagpu.warp_specialize attributes {{{.*}}producer_registers = 24 : i64}
// ALWAYS: scf.for %{{.*}} = %{{.*}} to %{{.*}} step %{{.*}} iter_args(%{{.*}} = %{{.*}}) -> (index) {
// ALWAYS: %[[ITEM:.*]] = arith.addi %{{.*}}, %{{.*}} : index
// ALWAYS-NEXT: %{{.*}}, %{{.*}}, %[[TILE:.*]] = fagpu.block_coords of %[[ITEM]] in %{{.*}}{{$}}
// ALWAYS: %[[ROW:.*]] = arith.muli %[[TILE]], %{{.*}} : index
// ALWAYS-NEXT: fagpu.visible_keys %[[ROW]] of {{.*}} within
// ALWAYS-NEXT: fagpu.full_keys %[[ROW]] within
// ALWAYS: gpu.return
func.func @documents(%q: tensor<?x16x?x128xbf16>, %k: tensor<?x16x?x128xbf16>, %v: tensor<?x16x?x128xbf16>, %doc: tensor<?xi32>) -> tensor<?x16x?x128xbf16> {
  %o = fa.attention %q, %k, %v captures(%doc : tensor<?xi32>) : tensor<?x16x?x128xbf16>, tensor<?x16x?x128xbf16>, tensor<?x16x?x128xbf16> -> tensor<?x16x?x128xbf16> mask_mod {
  ^bb0(%b: index, %h: index, %i: index, %j: index, %d: tensor<?xi32>):
    %di = tensor.extract %d[%i] : tensor<?xi32>
    %dj = tensor.extract %d[%j] : tensor<?xi32>
    %same = arith.cmpi eq, %di, %dj : i32
    fa.yield %same : i1
  }
  return %o : tensor<?x16x?x128xbf16>
}

// -----

// At D = 64 without a causal mask persistent by default (+16-18% at
// N = 2048 on the H200), the captures' reads notwithstanding; with one, a
// CTA an item (-3% persistent).
// CHECK-LABEL: gpu.func @fa_forward_0(
// CHECK: fagpu.work_slot
// CHECK: fagpu.warp_specialize attributes {{{.*}}producer_registers = 24 : i64}
// CHECK: fagpu.block_coords of
// CHECK: fagpu.visible_keys {{.*}} within
// CHECK: gpu.return
// ALWAYS-LABEL: gpu.func @fa_forward_0(
// ALWAYS: fagpu.work_slot
func.func @documents_d64(%q: tensor<?x16x?x64xbf16>, %k: tensor<?x16x?x64xbf16>, %v: tensor<?x16x?x64xbf16>, %doc: tensor<?xi32>) -> tensor<?x16x?x64xbf16> {
  %o = fa.attention %q, %k, %v captures(%doc : tensor<?xi32>) : tensor<?x16x?x64xbf16>, tensor<?x16x?x64xbf16>, tensor<?x16x?x64xbf16> -> tensor<?x16x?x64xbf16> mask_mod {
  ^bb0(%b: index, %h: index, %i: index, %j: index, %d: tensor<?xi32>):
    %di = tensor.extract %d[%i] : tensor<?xi32>
    %dj = tensor.extract %d[%j] : tensor<?xi32>
    %same = arith.cmpi eq, %di, %dj : i32
    fa.yield %same : i1
  }
  return %o : tensor<?x16x?x64xbf16>
}

// -----

// CHECK-LABEL: gpu.func @fa_forward_0(
// CHECK-NOT: fagpu.work_slot
// CHECK: fagpu.warp_specialize attributes {{{.*}}producer_registers = 24 : i64}
// CHECK: gpu.return
// ALWAYS-LABEL: gpu.func @fa_forward_0(
// ALWAYS: fagpu.work_slot
func.func @causal_documents_d64(%q: tensor<?x16x?x64xbf16>, %k: tensor<?x16x?x64xbf16>, %v: tensor<?x16x?x64xbf16>, %doc: tensor<?xi32>) -> tensor<?x16x?x64xbf16> {
  %o = fa.attention %q, %k, %v captures(%doc : tensor<?xi32>) {causal = #fa.causal<top_left>} : tensor<?x16x?x64xbf16>, tensor<?x16x?x64xbf16>, tensor<?x16x?x64xbf16> -> tensor<?x16x?x64xbf16> mask_mod {
  ^bb0(%b: index, %h: index, %i: index, %j: index, %d: tensor<?xi32>):
    %di = tensor.extract %d[%i] : tensor<?xi32>
    %dj = tensor.extract %d[%j] : tensor<?xi32>
    %same = arith.cmpi eq, %di, %dj : i32
    fa.yield %same : i1
  }
  return %o : tensor<?x16x?x64xbf16>
}
