// RUN: fa-opt %s -split-input-file -fa-fuse="chip=sm_90a warp-specialize=1" -fa-key-ranges | FileCheck %s
// RUN: fa-opt %s -split-input-file -fa-fuse="chip=sm_90a warp-specialize=1" -fa-key-ranges -fa-tile | FileCheck %s --check-prefix=TILE
// Running the pass again changes nothing.
// RUN: fa-opt %s -split-input-file -fa-fuse="chip=sm_90a warp-specialize=1" -fa-key-ranges > %t.once
// RUN: fa-opt %s -split-input-file -fa-fuse="chip=sm_90a warp-specialize=1" -fa-key-ranges -fa-key-ranges > %t.twice
// RUN: diff %t.once %t.twice

// A document mask (reads i and j only): the host allocates the key ranges
// (8 i32 per query tile), launches the key-range kernel over the query
// tiles, then the forward, which takes the ranges last. The key-range
// kernel visits the K tiles of 128 keys the causal mask leaves and keeps,
// per row, 1 + the first and 1 + the last tile where the mask_mod keeps a
// key of a row below Nq and a key below Nk (reading the captures at
// clamped positions).
// CHECK-LABEL: func.func @document
// CHECK: %[[TILES:.+]] = arith.ceildivui %{{.+}}, %c128 : index
// CHECK: scf.if
// CHECK: %[[COUNT:.+]] = arith.muli %[[TILES]], %{{.+}} : index
// CHECK-NEXT: %[[RANGES:.+]] = memref.alloc(%[[COUNT]]) : memref<?xi32>
// CHECK: gpu.launch_func  @fa_kernels::@fa_forward_0_key_ranges blocks in (%[[TILES]], %[[ONE:.+]], %[[ONE]]) threads in (%[[T128:.+]], %[[ONE]], %[[ONE]])  dynamic_shared_memory_size %{{.+}} args(%[[Q:[^ ]+]] : {{.+}}, %[[K:[^ ]+]] : {{.+}}, %[[V:[^ ]+]] : {{.+}}, %[[O:[^ ]+]] : {{.+}}, %[[RANGES]] : memref<?xi32>, %[[DOC:[^ ]+]] : memref<?xi32, strided<[?], offset: ?>>)
// CHECK-NEXT: gpu.launch_func  @fa_kernels::@fa_forward_0 blocks in (%[[TILES]], %{{.+}}, %{{.+}}) {{.+}} args(%[[Q]] : {{.+}}, %[[K]] : {{.+}}, %[[V]] : {{.+}}, %[[O]] : {{.+}}, %[[DOC]] : memref<?xi32, strided<[?], offset: ?>>, %[[RANGES]] : memref<?xi32>)
// CHECK-NEXT: memref.dealloc %[[RANGES]] : memref<?xi32>
// CHECK: gpu.func @fa_forward_0(
// CHECK-SAME: %{{.+}}: memref<?xi32> {fa.abi = "key_ranges"})
// CHECK: gpu.func @fa_forward_0_key_ranges(
// CHECK-SAME: {fa.abi = "q"}, %[[KK:[a-z0-9]+]]: {{.+}} {fa.abi = "k"}, %{{.+}} {fa.abi = "v"}, %{{.+}} {fa.abi = "o"}, %[[R:[a-z0-9]+]]: memref<?xi32> {fa.abi = "key_ranges"}, %[[D:[a-z0-9]+]]: memref<?xi32, strided<[?], offset: ?>> {fa.abi = "capture0"})
// CHECK-SAME: kernel attributes {fa.block_q = 128 : i64, fa.key_ranges, known_block_size = array<i32: 128, 1, 1>}
// CHECK: %{{.+}}, %{{.+}}, %[[QTILE:.+]] = fagpu.block_coords
// CHECK: %[[Q0:.+]] = arith.muli %[[QTILE]], %{{.+}} : index
// CHECK: %[[NQ:.+]] = memref.dim %{{.+}}, %{{.+}}
// CHECK: %[[NK:.+]] = memref.dim %[[KK]], %{{.+}}
// CHECK: %[[BEGIN:.+]], %[[END:.+]] = fagpu.visible_keys %[[Q0]] of [%[[NQ]], %[[NK]]] {block_kv = 128 : i64, block_q = 128 : i64, causal = #fa.causal<top_left>}
// CHECK: %[[DT:.+]] = bufferization.to_tensor %[[D]] restrict
// CHECK: %[[ZT:.+]] = arith.constant dense<0.000000e+00> : tensor<128x128xf32, #fagpu.acc<warps = 4>>
// CHECK: %[[ZR:.+]] = arith.constant dense<0.000000e+00> : tensor<128xf32, #fagpu.rows<warps = 4>>
// CHECK: %[[LOOP:.+]]:2 = scf.for %[[KV0:.+]] = %[[BEGIN]] to %[[END]] step %{{.+}} iter_args(%[[FIRST:.+]] = %[[ZR]], %[[LAST:.+]] = %[[ZR]])
// CHECK: %[[NUM:.+]] = arith.uitofp %{{.+}} : i32 to f32
// CHECK: %[[KEPT:.+]] = fagpu.map %[[ZT]] at [%[[Q0]], %[[KV0]]]
// CHECK-NEXT: ^bb0(%{{.+}}: f32, %[[I:.+]]: index, %[[J:.+]]: index):
// CHECK-NEXT: %[[JIN:.+]] = arith.cmpi ult, %[[J]], %[[NK]] : index
// CHECK-NEXT: %[[IIN:.+]] = arith.cmpi ult, %[[I]], %[[NQ]] : index
// CHECK-NEXT: %[[IN:.+]] = arith.andi %[[IIN]], %[[JIN]] : i1
// CHECK: %[[IC:.+]] = arith.minui %[[I]], %{{.+}} : index
// CHECK: %[[JC:.+]] = arith.minui %[[J]], %{{.+}} : index
// CHECK: %[[DI:.+]] = tensor.extract %[[DT]][%[[IC]]] : tensor<?xi32>
// CHECK-NEXT: %[[DJ:.+]] = tensor.extract %[[DT]][%[[JC]]] : tensor<?xi32>
// CHECK-NEXT: %[[SAME:.+]] = arith.cmpi eq, %[[DI]], %[[DJ]] : i32
// CHECK-NEXT: %[[KEEP:.+]] = arith.andi %[[SAME]], %[[IN]] : i1
// CHECK: %[[V:.+]] = arith.select %[[KEEP]], %[[NUM]], %{{.+}} : f32
// CHECK-NEXT: fagpu.yield %[[V]] : f32
// CHECK: %[[SEEN:.+]] = fagpu.reduce_rows <max> %[[KEPT]]
// CHECK-NEXT: %[[NEWLAST:.+]] = arith.maximumf %[[LAST]], %[[SEEN]]
// CHECK-NEXT: %[[NONE:.+]] = arith.cmpf oeq, %[[FIRST]], %[[ZR]]
// CHECK-NEXT: %[[NEWFIRST:.+]] = arith.select %[[NONE]], %[[SEEN]], %[[FIRST]]
// CHECK-NEXT: scf.yield %[[NEWFIRST]], %[[NEWLAST]]
// CHECK: fagpu.store_key_range %[[LOOP]]#0, %[[LOOP]]#1 to %[[R]][%[[QTILE]]] : tensor<128xf32, #fagpu.rows<warps = 4>>, memref<?xi32>

// fa-tile bounds the forward's key loop within the ranges.
// TILE-LABEL: func.func @document
// TILE: gpu.func @fa_forward_0(
// TILE-SAME: %[[R:[a-z0-9]+]]: memref<?xi32> {fa.abi = "key_ranges"})
// TILE: %[[B:.+]], %[[E:.+]] = fagpu.visible_keys %{{.+}} of [%{{.+}}, %{{.+}}] within %[[R]] : memref<?xi32> {block_kv = 128 : i64, block_q = 128 : i64, causal = #fa.causal<top_left>}
// TILE: scf.for %{{.+}} = %[[B]] to %[[E]]
func.func @document(%q: tensor<?x8x?x64xbf16>, %k: tensor<?x2x?x64xbf16>, %v: tensor<?x2x?x64xbf16>, %doc: tensor<?xi32>) -> tensor<?x8x?x64xbf16> {
  %o = fa.attention %q, %k, %v captures(%doc : tensor<?xi32>) {causal = #fa.causal<top_left>} : tensor<?x8x?x64xbf16>, tensor<?x2x?x64xbf16>, tensor<?x2x?x64xbf16> -> tensor<?x8x?x64xbf16> mask_mod {
  ^bb0(%b: index, %h: index, %i: index, %j: index, %d: tensor<?xi32>):
    %di = tensor.extract %d[%i] : tensor<?xi32>
    %dj = tensor.extract %d[%j] : tensor<?xi32>
    %same = arith.cmpi eq, %di, %dj : i32
    fa.yield %same : i1
  }
  return %o : tensor<?x8x?x64xbf16>
}

// -----

// A mask_mod that reads h sees other keys per head: no key ranges.
// CHECK-LABEL: func.func @per_head
// CHECK-NOT: key_ranges
// CHECK: gpu.func @fa_forward_0(
// CHECK-NOT: key_ranges
// CHECK: gpu.return
// TILE-LABEL: func.func @per_head
// TILE: fagpu.visible_keys %{{.+}} of [%{{.+}}, %{{.+}}] {block_kv
func.func @per_head(%q: tensor<?x8x?x64xbf16>) -> tensor<?x8x?x64xbf16> {
  %o = fa.attention %q, %q, %q : tensor<?x8x?x64xbf16>, tensor<?x8x?x64xbf16>, tensor<?x8x?x64xbf16> -> tensor<?x8x?x64xbf16> mask_mod {
  ^bb0(%b: index, %h: index, %i: index, %j: index):
    %ih = arith.addi %i, %h : index
    %keep = arith.cmpi uge, %ih, %j : index
    fa.yield %keep : i1
  }
  return %o : tensor<?x8x?x64xbf16>
}
