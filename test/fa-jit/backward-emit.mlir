// --emit with the backward prints @fa_backward: fa.attention_grad's operands
// (Q, K, V, O, dO, lse, [bias], [alibi_slopes], [seed]), then dQ, dK, dV,
// all fully strided memrefs.

// RUN: fa-jit --backward --emit=kernel --dtype=bf16 --shape=1,8,2,16,16,64 --causal=bottom-right --alibi | FileCheck %s --check-prefix=KERNEL
// KERNEL-LABEL: func.func @fa_backward(
// KERNEL-SAME: %[[Q:[^:]+]]: memref<?x8x?x64xbf16, strided<[?, ?, ?, ?], offset: ?>> {llvm.noalias}
// KERNEL-SAME: %[[K:[^:]+]]: memref<?x2x?x64xbf16, strided<[?, ?, ?, ?], offset: ?>>
// KERNEL-SAME: %[[V:[^:]+]]: memref<?x2x?x64xbf16, strided<[?, ?, ?, ?], offset: ?>>
// KERNEL-SAME: %[[O:[^:]+]]: memref<?x8x?x64xbf16, strided<[?, ?, ?, ?], offset: ?>>
// KERNEL-SAME: %[[DO:[^:]+]]: memref<?x8x?x64xbf16, strided<[?, ?, ?, ?], offset: ?>>
// KERNEL-SAME: %[[L:[^:]+]]: memref<?x8x?xf32, strided<[?, ?, ?], offset: ?>>
// KERNEL-SAME: %[[S:[^:]+]]: memref<8xf32, strided<[?], offset: ?>>
// KERNEL-SAME: %[[DQ:[^:]+]]: memref<?x8x?x64xbf16, strided<[?, ?, ?, ?], offset: ?>>
// KERNEL-SAME: %[[DK:[^:]+]]: memref<?x2x?x64xbf16, strided<[?, ?, ?, ?], offset: ?>>
// KERNEL-SAME: %[[DV:[^:]+]]: memref<?x2x?x64xbf16, strided<[?, ?, ?, ?], offset: ?>> {llvm.noalias})
// KERNEL-SAME: attributes {llvm.emit_c_interface}
// KERNEL: %[[QT:.+]] = bufferization.to_tensor %[[Q]] restrict
// KERNEL: %[[KT:.+]] = bufferization.to_tensor %[[K]] restrict
// KERNEL: %[[VT:.+]] = bufferization.to_tensor %[[V]] restrict
// KERNEL: %[[OT:.+]] = bufferization.to_tensor %[[O]] restrict
// KERNEL: %[[DOT:.+]] = bufferization.to_tensor %[[DO]] restrict
// KERNEL: %[[LT:.+]] = bufferization.to_tensor %[[L]] restrict
// KERNEL: %[[ST:.+]] = bufferization.to_tensor %[[S]] restrict
// KERNEL: %[[RQ:[^ ,]+]], %[[RK:[^ ,]+]], %[[RV:[^ ]+]] = fa.attention_grad %[[QT]], %[[KT]], %[[VT]], %[[OT]], %[[DOT]], %[[LT]] alibi_slopes(%[[ST]] : tensor<8xf32>) {causal = #fa.causal<bottom_right>}
// KERNEL: bufferization.materialize_in_destination %[[RQ]] in restrict writable %[[DQ]]
// KERNEL: bufferization.materialize_in_destination %[[RK]] in restrict writable %[[DK]]
// KERNEL: bufferization.materialize_in_destination %[[RV]] in restrict writable %[[DV]]
// KERNEL: return

// The dropout seed is an i64 after the other inputs, as in @fa_forward.
// RUN: fa-jit %S/Inputs/dropout.mlir --backward --emit=kernel | FileCheck %s --check-prefix=SEED
// SEED: func.func @fa_backward({{.*}}: memref<?x2x?xf32, strided<[?, ?, ?], offset: ?>> {llvm.noalias}, %{{[^:]+}}: i64, %{{[^:]+}}: memref<?x2x?x32xf16, strided<[?, ?, ?, ?], offset: ?>> {llvm.noalias}

// RUN: fa-jit --backward --emit=mlir --shape=1,2,2,16,16,32 | FileCheck %s --check-prefix=MLIR
// MLIR-NOT: fa.attention
// MLIR: llvm.func @fa_backward(
// MLIR: llvm.func @_mlir_ciface_fa_backward(
// MLIR-NOT: fa.attention

// RUN: fa-jit --backward --emit=llvm --dtype=f16 --softcap=10 --shape=1,2,2,16,16,32 | FileCheck %s --check-prefix=LLVM
// LLVM: define void @fa_backward(
// LLVM: define void @_mlir_ciface_fa_backward(ptr
