// RUN: fa-opt %s -split-input-file -fa-fuse="chip=sm_90a warp-specialize=1" -fa-key-ranges | FileCheck %s
// RUN: fa-opt %s -split-input-file -fa-fuse="chip=sm_90a warp-specialize=1" -fa-key-ranges -fa-tile | FileCheck %s --check-prefix=TILE
// Running the pass again changes nothing.
// RUN: fa-opt %s -split-input-file -fa-fuse="chip=sm_90a warp-specialize=1" -fa-key-ranges > %t.once
// RUN: fa-opt %s -split-input-file -fa-fuse="chip=sm_90a warp-specialize=1" -fa-key-ranges -fa-key-ranges > %t.twice
// RUN: diff %t.once %t.twice

// A document mask (reads i and j only): the host allocates the key ranges
// (20 i32 per query tile) and zeroes them, launches the key-range kernel
// over the query tiles and the key chunks (of 128 keys), then the forward,
// which takes the ranges last. The key-range kernel visits the K tiles of
// 128 keys of its chunk that the causal mask leaves; the mask_mod (reading
// the captures at clamped positions) gives each key its tile's number where
// kept, -1 where hidden and 0 past Nq or Nk. Per row, the max gives 1 + the
// first and 1 + the last tile where it keeps a key; the min (minus the max
// of the negated tile) whether the tile is full, which counts and moves the
// row's full run. After the loop, a row whose full tiles are no run (count
// != last - first + 1) has none; the warps merge the rest into the ranges.
// CHECK-LABEL: func.func @document
// CHECK: %[[TILES:.+]] = arith.ceildivui %{{.+}}, %c128 : index
// CHECK: scf.if
// CHECK: %[[C20:.+]] = arith.constant 20 : index
// CHECK-NEXT: %[[COUNT:.+]] = arith.muli %[[TILES]], %[[C20]] : index
// CHECK-NEXT: %[[RANGES:.+]] = memref.alloc(%[[COUNT]]) : memref<?xi32>
// CHECK-NEXT: %[[ZERO32:.+]] = arith.constant 0 : i32
// CHECK-NEXT: gpu.memset  %[[RANGES]], %[[ZERO32]] : memref<?xi32>, i32
// CHECK: %[[NK0:.+]] = memref.dim %{{.+}}, %{{.+}} : memref<?x2x?x64xbf16
// CHECK-NEXT: %[[C128:.+]] = arith.constant 128 : index
// CHECK-NEXT: %[[CHUNKS:.+]] = arith.ceildivui %[[NK0]], %[[C128]] : index
// CHECK: gpu.launch_func  @fa_kernels::@fa_forward_0_key_ranges blocks in (%[[TILES]], %[[CHUNKS]], %[[ONE:.+]]) threads in (%[[T128:.+]], %[[ONE]], %[[ONE]])  dynamic_shared_memory_size %{{.+}} args(%[[Q:[^ ]+]] : {{.+}}, %[[K:[^ ]+]] : {{.+}}, %[[V:[^ ]+]] : {{.+}}, %[[O:[^ ]+]] : {{.+}}, %[[RANGES]] : memref<?xi32>, %[[DOC:[^ ]+]] : memref<?xi32, strided<[?], offset: ?>>)
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
// CHECK: %[[VBEGIN:.+]], %[[VEND:.+]] = fagpu.visible_keys %[[Q0]] of [%[[NQ]], %[[NK]]] {block_kv = 128 : i64, block_q = 128 : i64, causal = #fa.causal<top_left>}
// CHECK-NEXT: %[[CHUNK:.+]] = fagpu.key_chunk
// CHECK-NEXT: %[[CK:.+]] = arith.constant 128 : index
// CHECK-NEXT: %[[CK0:.+]] = arith.muli %[[CHUNK]], %[[CK]] : index
// CHECK-NEXT: %[[BEGIN:.+]] = arith.maxui %[[VBEGIN]], %[[CK0]] : index
// CHECK-NEXT: %[[CK1:.+]] = arith.addi %[[CK0]], %[[CK]] : index
// CHECK-NEXT: %[[END:.+]] = arith.minui %[[VEND]], %[[CK1]] : index
// CHECK: %[[DT:.+]] = bufferization.to_tensor %[[D]] restrict
// CHECK: %[[ZT:.+]] = arith.constant dense<0.000000e+00> : tensor<128x128xf32, #fagpu.acc<warps = 4>>
// CHECK: %[[ZR:.+]] = arith.constant dense<0.000000e+00> : tensor<128xf32, #fagpu.rows<warps = 4>>
// CHECK: %[[LOOP:.+]]:5 = scf.for %[[KV0:.+]] = %[[BEGIN]] to %[[END]] step %{{.+}} iter_args(%[[FIRST:.+]] = %[[ZR]], %[[LAST:.+]] = %[[ZR]], %[[FF:.+]] = %[[ZR]], %[[FL:.+]] = %[[ZR]], %[[FN:.+]] = %[[ZR]])
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
// CHECK-NEXT: %[[MINUS1:.+]] = arith.constant -1.000000e+00 : f32
// CHECK-NEXT: %[[SEEN1:.+]] = arith.select %[[SAME]], %[[NUM]], %[[MINUS1]] : f32
// CHECK-NEXT: %[[ZERO:.+]] = arith.constant 0.000000e+00 : f32
// CHECK-NEXT: %[[V:.+]] = arith.select %[[IN]], %[[SEEN1]], %[[ZERO]] : f32
// CHECK-NEXT: fagpu.yield %[[V]] : f32
// CHECK: %[[MOST:.+]] = fagpu.reduce_rows <max> %[[KEPT]]
// CHECK-NEXT: %[[NEG:.+]] = arith.negf %[[KEPT]]
// CHECK-NEXT: %[[MLEAST:.+]] = fagpu.reduce_rows <max> %[[NEG]]
// CHECK-NEXT: %[[SEEN:.+]] = arith.maximumf %[[MOST]], %[[ZR]]
// CHECK-NEXT: %[[NEWLAST:.+]] = arith.maximumf %[[LAST]], %[[SEEN]]
// CHECK-NEXT: %[[NONE:.+]] = arith.cmpf oeq, %[[FIRST]], %[[ZR]]
// CHECK-NEXT: %[[NEWFIRST:.+]] = arith.select %[[NONE]], %[[SEEN]], %[[FIRST]]
// CHECK-NEXT: %[[FULL:.+]] = arith.cmpf ole, %[[MLEAST]], %[[ZR]]
// CHECK-NEXT: %[[NUMS:.+]] = tensor.splat %[[NUM]] : tensor<128xf32, #fagpu.rows<warps = 4>>
// CHECK-NEXT: %[[NOFULL:.+]] = arith.cmpf oeq, %[[FF]], %[[ZR]]
// CHECK-NEXT: %[[FIRSTFULL:.+]] = arith.andi %[[FULL]], %[[NOFULL]]
// CHECK-NEXT: %[[NEWFF:.+]] = arith.select %[[FIRSTFULL]], %[[NUMS]], %[[FF]]
// CHECK-NEXT: %[[NEWFL:.+]] = arith.select %[[FULL]], %[[NUMS]], %[[FL]]
// CHECK-NEXT: %[[ONES:.+]] = arith.constant dense<1.000000e+00>
// CHECK-NEXT: %[[ADD:.+]] = arith.select %[[FULL]], %[[ONES]], %[[ZR]]
// CHECK-NEXT: %[[NEWFN:.+]] = arith.addf %[[FN]], %[[ADD]]
// CHECK-NEXT: scf.yield %[[NEWFIRST]], %[[NEWLAST]], %[[NEWFF]], %[[NEWFL]], %[[NEWFN]]
// CHECK: %[[ONE1:.+]] = arith.constant dense<1.000000e+00>
// CHECK-NEXT: %[[SPAN0:.+]] = arith.subf %[[LOOP]]#3, %[[LOOP]]#2
// CHECK-NEXT: %[[SPAN:.+]] = arith.addf %[[SPAN0]], %[[ONE1]]
// CHECK-NEXT: %[[CONTIG:.+]] = arith.cmpf oeq, %[[SPAN]], %[[LOOP]]#4
// CHECK-NEXT: %[[RF:.+]] = arith.select %[[CONTIG]], %[[LOOP]]#2, %[[ZR]]
// CHECK-NEXT: %[[RL:.+]] = arith.select %[[CONTIG]], %[[LOOP]]#3, %[[ZR]]
// CHECK-NEXT: fagpu.merge_key_range %[[LOOP]]#0, %[[LOOP]]#1 full %[[RF]], %[[RL]] to %[[R]][%[[QTILE]]] : tensor<128xf32, #fagpu.rows<warps = 4>>, memref<?xi32>

// fa-tile bounds the forward's key loop within the ranges, and applies the
// mask_mod (after fagpu.mask, with the captures at clamped positions) only
// on tiles that need a mask or lie outside the full run; the others take
// the plain path (no map; the scale folds into the softmax).
// TILE-LABEL: func.func @document
// TILE: gpu.func @fa_forward_0(
// TILE-SAME: %[[R:[a-z0-9]+]]: memref<?xi32> {fa.abi = "key_ranges"})
// TILE: %[[DT:.+]] = bufferization.to_tensor
// TILE: %[[B:.+]], %[[E:.+]] = fagpu.visible_keys %[[Q0:.+]] of [%[[NQ:.+]], %[[NK:.+]]] within %[[R]] : memref<?xi32> {block_kv = 128 : i64, block_q = 128 : i64, causal = #fa.causal<top_left>}
// TILE-NEXT: %[[FB:.+]], %[[FE:.+]] = fagpu.full_keys %[[Q0]] within %[[R]] {block_q = 128 : i64} : memref<?xi32>
// TILE: scf.for %[[KV0:.+]] = %[[B]] to %[[E]]
// TILE: %[[S:.+]] = fagpu.mma
// TILE-NEXT: %[[EDGE:.+]] = fagpu.tile_needs_mask [%[[Q0]], %[[KV0]]] of [%[[NQ]], %[[NK]]]
// TILE-NEXT: %[[KV1:.+]] = arith.addi %[[KV0]], %{{.+}} : index
// TILE-NEXT: %[[AFTER:.+]] = arith.cmpi ugt, %[[KV1]], %[[FE]] : index
// TILE-NEXT: %[[BEFORE:.+]] = arith.cmpi ult, %[[KV0]], %[[FB]] : index
// TILE-NEXT: %[[OUT:.+]] = arith.ori %[[BEFORE]], %[[AFTER]] : i1
// TILE-NEXT: %[[CUT:.+]] = arith.ori %[[EDGE]], %[[OUT]] : i1
// TILE-NEXT: %{{.+}} = scf.if %[[CUT]]
// TILE-NEXT: %[[M:.+]] = fagpu.mask %[[S]]
// TILE-NEXT: %[[MM:.+]] = fagpu.map %[[M]] at [%[[Q0]], %[[KV0]]]
// TILE: tensor.extract %[[DT]]
// TILE: arith.select %{{.+}}, %{{.+}}, %{{.+}} : f32
// TILE-NEXT: fagpu.yield
// TILE-NEXT: }
// TILE-NEXT: scf.yield %[[MM]]
// TILE-NEXT: } else {
// TILE-NEXT: scf.yield %[[S]]
// TILE-NEXT: } {fa.softmax_scores}
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
