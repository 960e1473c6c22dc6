// fa-bias-tiles: the scores' map of a kernel marked for a producer
// warpgroup reads its bias from a shared tile, copied beside K (a copy with
// a column after V's) and read in the accumulator's layout (load_tile) as
// the map's second input; the global load and its clamps are gone. Left
// alone: kernels not marked fa.warp_specialize, and key tiles that are
// not whole 128-byte panels (32 keys of bf16).
// RUN: fa-opt %s -split-input-file -fa-fuse="chip=sm_90a warp-specialize=1" -fa-tile -fa-online-softmax -fa-bias-tiles | FileCheck %s
// RUN: fa-opt %s -split-input-file -fa-fuse="chip=sm_90a" -fa-tile -fa-online-softmax -fa-bias-tiles | FileCheck %s --check-prefix=UNMARKED

// CHECK-LABEL: func.func @bf16
// CHECK: gpu.func @fa_forward_0({{.*}}%[[BIAS:arg4]]: memref<1x4x?x?xbf16, strided<[?, ?, ?, ?], offset: ?>> {fa.abi = "bias"})
// CHECK: %[[BATCH:.*]], %[[HEAD:.*]], %[[TILE:.*]] = fagpu.block_coords
// CHECK: %[[ROW:.*]] = arith.muli %[[TILE]], %c128
// CHECK: fagpu.alloc_shared {offset = 24576 : i64} : !fagpu.shared<1x64x64xbf16, wgmma>
// CHECK-NEXT: %[[BT:.*]] = fagpu.alloc_shared {offset = 32768 : i64} : !fagpu.shared<1x128x64xbf16, wgmma>
// CHECK: %[[NQ:.*]] = memref.dim %[[BIAS]], %{{.*}} : memref<1x4x?x?xbf16
// CHECK-NEXT: scf.for %[[KEY:.*]] = %begin to %end
// CHECK-NEXT: fagpu.copy %arg1
// CHECK-NEXT: fagpu.copy %arg2
// CHECK-NEXT: fagpu.copy %[[BIAS]][%c0, %[[HEAD]], %[[ROW]], %[[KEY]]] bound %[[NQ]] to %[[BT]][%[[C0:.*]]] : memref<1x4x?x?xbf16, strided<[?, ?, ?, ?], offset: ?>> to !fagpu.shared<1x128x64xbf16, wgmma>
// CHECK: %[[S:.*]] = fagpu.mma
// CHECK-NEXT: %[[B:.*]] = fagpu.load_tile %[[BT]][%[[C0]]] : !fagpu.shared<1x128x64xbf16, wgmma> -> tensor<128x64xbf16, #fagpu.acc<warps = 8>>
// CHECK-NEXT: fagpu.map %[[S]], %[[B]] at [%[[ROW]], %[[KEY]]] : tensor<128x64xf32, #fagpu.acc<warps = 8>>, tensor<128x64xbf16, #fagpu.acc<warps = 8>> -> tensor<128x64xf32, #fagpu.acc<warps = 8>> {
// CHECK-NEXT: ^bb0(%[[X:.*]]: f32, %[[E:.*]]: bf16, %{{.*}}: index, %{{.*}}: index):
// CHECK-NEXT: %[[SCALE:.*]] = arith.constant 1.250000e-01 : f32
// CHECK-NEXT: %[[XS:.*]] = arith.mulf %[[X]], %[[SCALE]] fastmath<contract> : f32
// CHECK-NEXT: %[[EF:.*]] = arith.extf %[[E]] : bf16 to f32
// CHECK-NEXT: %[[R:.*]] = arith.addf %[[XS]], %[[EF]] fastmath<contract> : f32
// CHECK-NEXT: fagpu.yield %[[R]] : f32
// CHECK-NOT: memref.load
// UNMARKED-LABEL: func.func @bf16
// UNMARKED-NOT: fagpu.load_tile
// UNMARKED: memref.load %arg4
// UNMARKED-NOT: fagpu.load_tile
func.func @bf16(%q: tensor<2x4x?x64xbf16>, %b: tensor<1x4x?x?xbf16>) -> tensor<2x4x?x64xbf16> {
  %o = fa.attention %q, %q, %q bias(%b : tensor<1x4x?x?xbf16>) : tensor<2x4x?x64xbf16>, tensor<2x4x?x64xbf16>, tensor<2x4x?x64xbf16> -> tensor<2x4x?x64xbf16>
  return %o : tensor<2x4x?x64xbf16>
}

// -----

// An f32 bias, broadcast over heads too, at D = 128: 32-key panels.
// CHECK-LABEL: func.func @f32
// CHECK: fagpu.alloc_shared {{.*}} : !fagpu.shared<1x128x64xf32, wgmma>
// CHECK: fagpu.copy %arg4[%c0{{.*}}, %c0{{.*}}, %{{.*}}, %{{.*}}] bound %{{.*}} to %{{.*}} : memref<1x1x?x?xf32, strided<[?, ?, ?, ?], offset: ?>> to !fagpu.shared<1x128x64xf32, wgmma>
// CHECK: fagpu.load_tile {{.*}} -> tensor<128x64xf32, #fagpu.acc<warps = 8>>
// CHECK-NOT: memref.load
func.func @f32(%q: tensor<2x4x?x128xbf16>, %b: tensor<1x1x?x?xf32>) -> tensor<2x4x?x128xbf16> {
  %o = fa.attention %q, %q, %q bias(%b : tensor<1x1x?x?xf32>) : tensor<2x4x?x128xbf16>, tensor<2x4x?x128xbf16>, tensor<2x4x?x128xbf16> -> tensor<2x4x?x128xbf16>
  return %o : tensor<2x4x?x128xbf16>
}

// -----

// Four per-score terms: 32-key tiles, half a panel of bf16: left alone.
// CHECK-LABEL: func.func @narrow
// CHECK-NOT: fagpu.load_tile
// CHECK: memref.load %arg4
func.func @narrow(%q: tensor<1x4x?x64xbf16>, %b: tensor<1x4x?x?xbf16>, %seed: i64) -> tensor<1x4x?x64xbf16> {
  %o = fa.attention %q, %q, %q bias(%b : tensor<1x4x?x?xbf16>) dropout_seed(%seed) {dropout_p = 1.000000e-01 : f32} : tensor<1x4x?x64xbf16>, tensor<1x4x?x64xbf16>, tensor<1x4x?x64xbf16> -> tensor<1x4x?x64xbf16> score_mod {
  ^bb0(%x: f32, %bb: index, %h: index, %i: index, %j: index):
    %t = math.tanh %x : f32
    fa.yield %t : f32
  } mask_mod {
  ^bb0(%bb: index, %h: index, %i: index, %j: index):
    %keep = arith.cmpi ne, %i, %j : index
    fa.yield %keep : i1
  }
  return %o : tensor<1x4x?x64xbf16>
}
