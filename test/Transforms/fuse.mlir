// RUN: fa-opt %s -fa-fuse="chip=sm_90a wgmma=false" -split-input-file | FileCheck %s
// RUN: fa-opt %s "-fa-fuse=block-q=64 block-kv=32" -split-input-file | FileCheck %s --check-prefix=TILE
// Ops already outlined stay where they are: a second fa-fuse changes nothing.
// RUN: fa-opt %s -fa-fuse -split-input-file > %t.once.mlir
// RUN: fa-opt %t.once.mlir -fa-fuse -split-input-file | diff %t.once.mlir -

// D = 64, GQA, causal, with lse, dynamic B and N (static sizes are
// constants): the host passes Q, K, V as
// buffers and allocates O and lse; one launch of (ceil(Nq / 128), Hq, B)
// CTAs of 128 threads with one K/V stage's shared memory, (128 + 2 * 64) *
// 64 * 2 bytes, and none when that grid is empty. The kernel reads its
// memrefs as tensors, computes the unchanged op and stores O and lse.

// CHECK-LABEL: module attributes {gpu.container_module}
// CHECK-LABEL: func.func @plain
// CHECK-SAME: (%[[QT:.+]]: tensor<?x8x?x64xbf16>, %[[KT:.+]]: tensor<?x2x?x64xbf16>, %[[VT:.+]]: tensor<?x2x?x64xbf16>)
// CHECK-NEXT: %[[Q:.+]] = bufferization.to_buffer %[[QT]] read_only : tensor<?x8x?x64xbf16> to memref<?x8x?x64xbf16, strided<[?, ?, ?, 1], offset: ?>>
// CHECK-NEXT: %[[K:.+]] = bufferization.to_buffer %[[KT]] read_only : tensor<?x2x?x64xbf16> to memref<?x2x?x64xbf16, strided<[?, ?, ?, 1], offset: ?>>
// CHECK-NEXT: %[[V:.+]] = bufferization.to_buffer %[[VT]] read_only : tensor<?x2x?x64xbf16> to memref<?x2x?x64xbf16, strided<[?, ?, ?, 1], offset: ?>>
// CHECK-NEXT: %[[C0:.+]] = arith.constant 0 : index
// CHECK-NEXT: %[[B:.+]] = memref.dim %[[Q]], %[[C0]]
// CHECK-NEXT: %[[H:.+]] = arith.constant 8 : index
// CHECK-NEXT: %[[C2:.+]] = arith.constant 2 : index
// CHECK-NEXT: %[[N:.+]] = memref.dim %[[Q]], %[[C2]]
// CHECK-NEXT: %[[OA:.+]] = memref.alloc(%[[B]], %[[N]]) : memref<?x8x?x64xbf16>
// CHECK-NEXT: %[[O:.+]] = memref.cast %[[OA]] : memref<?x8x?x64xbf16> to memref<?x8x?x64xbf16, strided<[?, ?, ?, 1], offset: ?>>
// CHECK-NEXT: %[[LA:.+]] = memref.alloc(%[[B]], %[[N]]) : memref<?x8x?xf32>
// CHECK-NEXT: %[[L:.+]] = memref.cast %[[LA]] : memref<?x8x?xf32> to memref<?x8x?xf32, strided<[?, ?, 1], offset: ?>>
// CHECK-NEXT: %[[BQ:.+]] = arith.constant 128 : index
// CHECK-NEXT: %[[TILES:.+]] = arith.ceildivui %[[N]], %[[BQ]] : index
// CHECK-NEXT: %[[TH:.+]] = arith.muli %[[TILES]], %[[H]] : index
// CHECK-NEXT: %[[CTAS:.+]] = arith.muli %[[TH]], %[[B]] : index
// CHECK-NEXT: %[[Z:.+]] = arith.constant 0 : index
// CHECK-NEXT: %[[ANY:.+]] = arith.cmpi ne, %[[CTAS]], %[[Z]] : index
// CHECK-NEXT: scf.if %[[ANY]] {
// CHECK-NEXT: %[[SMEM:.+]] = arith.constant 32768 : i32
// CHECK-NEXT: %[[ONE:.+]] = arith.constant 1 : index
// CHECK-NEXT: %[[T:.+]] = arith.constant 128 : index
// CHECK-NEXT: gpu.launch_func @fa_kernels::@fa_forward_0 blocks in (%[[TILES]], %[[H]], %[[B]]) threads in (%[[T]], %[[ONE]], %[[ONE]]) dynamic_shared_memory_size %[[SMEM]] args(%[[Q]] : memref<?x8x?x64xbf16, strided<[?, ?, ?, 1], offset: ?>>, %[[K]] : memref<?x2x?x64xbf16, strided<[?, ?, ?, 1], offset: ?>>, %[[V]] : memref<?x2x?x64xbf16, strided<[?, ?, ?, 1], offset: ?>>, %[[O]] : memref<?x8x?x64xbf16, strided<[?, ?, ?, 1], offset: ?>>, %[[L]] : memref<?x8x?xf32, strided<[?, ?, 1], offset: ?>>)
// CHECK-NEXT: }
// CHECK-NEXT: %[[OT:.+]] = bufferization.to_tensor %[[OA]] restrict writable : memref<?x8x?x64xbf16> to tensor<?x8x?x64xbf16>
// CHECK-NEXT: %[[LT:.+]] = bufferization.to_tensor %[[LA]] restrict writable : memref<?x8x?xf32> to tensor<?x8x?xf32>
// CHECK-NEXT: return %[[OT]], %[[LT]]
// CHECK: gpu.module @fa_kernels [#nvvm.target<O = 3, chip = "sm_90a", features = "+ptx80">] {
// CHECK-NEXT: gpu.func @fa_forward_0(%[[AQ:.+]]: memref<?x8x?x64xbf16, strided<[?, ?, ?, 1], offset: ?>>, %[[AK:.+]]: memref<?x2x?x64xbf16, strided<[?, ?, ?, 1], offset: ?>>, %[[AV:.+]]: memref<?x2x?x64xbf16, strided<[?, ?, ?, 1], offset: ?>>, %[[AO:.+]]: memref<?x8x?x64xbf16, strided<[?, ?, ?, 1], offset: ?>>, %[[AL:.+]]: memref<?x8x?xf32, strided<[?, ?, 1], offset: ?>>) kernel attributes {fa.block_kv = 64 : i64, fa.block_q = 128 : i64, known_block_size = array<i32: 128, 1, 1>} {
// CHECK-NEXT: %[[TQ:.+]] = bufferization.to_tensor %[[AQ]] restrict
// CHECK-NEXT: %[[TK:.+]] = bufferization.to_tensor %[[AK]] restrict
// CHECK-NEXT: %[[TV:.+]] = bufferization.to_tensor %[[AV]] restrict
// CHECK-NEXT: %[[RO:.+]], %[[RL:.+]] = fa.attention %[[TQ]], %[[TK]], %[[TV]] {causal = #fa.causal<bottom_right>}
// CHECK-NEXT: bufferization.materialize_in_destination %[[RO]] in restrict writable %[[AO]]
// CHECK-NEXT: bufferization.materialize_in_destination %[[RL]] in restrict writable %[[AL]]
// CHECK-NEXT: gpu.return

// The tile options replace the default, and the grid and shared memory
// follow: ceil(Nq / 64) CTAs, (64 + 2 * 32) * 64 * 2 bytes.
// TILE-LABEL: func.func @plain
// TILE: %[[BQ:.+]] = arith.constant 64 : index
// TILE-NEXT: %[[TILES:.+]] = arith.ceildivui %{{.+}}, %[[BQ]] : index
// TILE: arith.constant 16384 : i32
// TILE: gpu.module @fa_kernels [#nvvm.target<O = 3, chip = "sm_80", features = "+ptx70">]
// TILE: kernel attributes {fa.block_kv = 32 : i64, fa.block_q = 64 : i64
func.func @plain(%q: tensor<?x8x?x64xbf16>, %k: tensor<?x2x?x64xbf16>, %v: tensor<?x2x?x64xbf16>) -> (tensor<?x8x?x64xbf16>, tensor<?x8x?xf32>) {
  %o, %lse = fa.attention %q, %k, %v {causal = #fa.causal<bottom_right>} : tensor<?x8x?x64xbf16>, tensor<?x2x?x64xbf16>, tensor<?x2x?x64xbf16> -> tensor<?x8x?x64xbf16>, tensor<?x8x?xf32>
  return %o, %lse : tensor<?x8x?x64xbf16>, tensor<?x8x?xf32>
}

// -----

// Static shapes, no lse, the scored path with every operand: the kernel
// takes them in ABI order (Q, K, V, O, bias, ALiBi slopes, seed, captures);
// bias and captures with any strides, slopes with contiguous rows. The
// scored path's default tile at D = 128 is 64 x 32: (64 + 2 * 32) * 128 * 2
// bytes.

// CHECK-LABEL: func.func @scored
// CHECK-SAME: (%[[QT:.+]]: tensor<2x4x100x128xf16>, %[[KT:.+]]: tensor<2x4x300x128xf16>, %[[VT:.+]]: tensor<2x4x300x128xf16>, %[[BT:.+]]: tensor<1x4x100x300xf32>, %[[ST:.+]]: tensor<4xf32>, %[[SEED:.+]]: i64, %[[CT:.+]]: tensor<300xf32>)
// CHECK: %[[Q:.+]] = bufferization.to_buffer %[[QT]]
// CHECK: %[[K:.+]] = bufferization.to_buffer %[[KT]]
// CHECK: %[[V:.+]] = bufferization.to_buffer %[[VT]]
// CHECK-NEXT: %[[B:.+]] = arith.constant 2 : index
// CHECK-NEXT: %[[H:.+]] = arith.constant 4 : index
// CHECK-NEXT: %[[N:.+]] = arith.constant 100 : index
// CHECK-NEXT: %[[OA:.+]] = memref.alloc() : memref<2x4x100x128xf16>
// CHECK-NEXT: %[[O:.+]] = memref.cast %[[OA]]
// CHECK-NEXT: %[[BIAS:.+]] = bufferization.to_buffer %[[BT]] read_only : tensor<1x4x100x300xf32> to memref<1x4x100x300xf32, strided<[?, ?, ?, ?], offset: ?>>
// CHECK-NEXT: %[[SL:.+]] = bufferization.to_buffer %[[ST]] read_only : tensor<4xf32> to memref<4xf32, strided<[1], offset: ?>>
// CHECK-NEXT: %[[CAP:.+]] = bufferization.to_buffer %[[CT]] read_only : tensor<300xf32> to memref<300xf32, strided<[?], offset: ?>>
// CHECK: arith.constant 32768 : i32
// CHECK: gpu.launch_func @fa_kernels::@fa_forward_0
// CHECK-SAME: args(%[[Q]] : {{.+}}, %[[K]] : {{.+}}, %[[V]] : {{.+}}, %[[O]] : {{.+}}, %[[BIAS]] : {{.+}}, %[[SL]] : {{.+}}, %[[SEED]] : i64, %[[CAP]] : memref<300xf32, strided<[?], offset: ?>>)
// CHECK: gpu.func @fa_forward_0(
// CHECK-SAME: %[[AS:[^:]+]]: i64, %[[AC:[^:]+]]: memref<300xf32, strided<[?], offset: ?>>) kernel attributes {fa.block_kv = 32 : i64, fa.block_q = 64 : i64
// CHECK: %[[TC:.+]] = bufferization.to_tensor %[[AC]] restrict
// CHECK-NEXT: fa.attention {{.+}} dropout_seed(%[[AS]]) captures(%[[TC]] : tensor<300xf32>)
// CHECK: score_mod {
// CHECK: tensor.extract
func.func @scored(%q: tensor<2x4x100x128xf16>, %k: tensor<2x4x300x128xf16>, %v: tensor<2x4x300x128xf16>, %bias: tensor<1x4x100x300xf32>, %slopes: tensor<4xf32>, %seed: i64, %table: tensor<300xf32>) -> tensor<2x4x100x128xf16> {
  %o = fa.attention %q, %k, %v bias(%bias : tensor<1x4x100x300xf32>) alibi_slopes(%slopes : tensor<4xf32>) dropout_seed(%seed) captures(%table : tensor<300xf32>) {dropout_p = 1.000000e-01 : f32} : tensor<2x4x100x128xf16>, tensor<2x4x300x128xf16>, tensor<2x4x300x128xf16> -> tensor<2x4x100x128xf16> score_mod {
  ^bb0(%s: f32, %b: index, %h: index, %i: index, %j: index, %t: tensor<300xf32>):
    %x = tensor.extract %t[%j] : tensor<300xf32>
    %y = arith.addf %s, %x : f32
    fa.yield %y : f32
  }
  return %o : tensor<2x4x100x128xf16>
}

// -----

// Two ops, two kernels numbered in order, each with its own tile (D = 128
// causal: 64 x 128; D = 256: 64 x 64); the backward op is not outlined.

// CHECK-LABEL: func.func @two
// CHECK: gpu.launch_func @fa_kernels::@fa_forward_0
// CHECK: gpu.launch_func @fa_kernels::@fa_forward_1
// CHECK: fa.attention_grad
// CHECK: gpu.func @fa_forward_0({{.+}}) kernel attributes {fa.block_kv = 128 : i64, fa.block_q = 64 : i64
// CHECK: gpu.func @fa_forward_1({{.+}}) kernel attributes {fa.block_kv = 64 : i64, fa.block_q = 64 : i64
func.func @two(%q: tensor<1x2x64x128xbf16>, %q2: tensor<1x2x64x256xbf16>, %lse: tensor<1x2x64xf32>) -> (tensor<1x2x64x128xbf16>, tensor<1x2x64x256xbf16>, tensor<1x2x64x128xbf16>) {
  %o = fa.attention %q, %q, %q {causal = #fa.causal<top_left>} : tensor<1x2x64x128xbf16>, tensor<1x2x64x128xbf16>, tensor<1x2x64x128xbf16> -> tensor<1x2x64x128xbf16>
  %o2 = fa.attention %q2, %q2, %q2 : tensor<1x2x64x256xbf16>, tensor<1x2x64x256xbf16>, tensor<1x2x64x256xbf16> -> tensor<1x2x64x256xbf16>
  %dq, %dk, %dv = fa.attention_grad %q, %q, %q, %o, %o, %lse : tensor<1x2x64x128xbf16>, tensor<1x2x64x128xbf16>, tensor<1x2x64x128xbf16>, tensor<1x2x64x128xbf16>, tensor<1x2x64x128xbf16>, tensor<1x2x64xf32> -> tensor<1x2x64x128xbf16>, tensor<1x2x64x128xbf16>, tensor<1x2x64x128xbf16>
  return %o, %o2, %dq : tensor<1x2x64x128xbf16>, tensor<1x2x64x256xbf16>, tensor<1x2x64x128xbf16>
}
