// --emit prints IR instead of running: the kernel module (@fa_forward with
// a fully strided memref ABI around a clone of the op), the LLVM dialect
// after fa-pipeline-host, or LLVM IR.

// RUN: fa-jit --emit=kernel --dtype=bf16 --shape=1,8,2,16,16,64 --causal=bottom-right --alibi --lse | FileCheck %s --check-prefix=KERNEL
// KERNEL-LABEL: func.func @fa_forward(
// KERNEL-SAME: %[[Q:[^:]+]]: memref<?x8x?x64xbf16, strided<[?, ?, ?, ?], offset: ?>> {llvm.noalias}
// KERNEL-SAME: %[[K:[^:]+]]: memref<?x2x?x64xbf16, strided<[?, ?, ?, ?], offset: ?>>
// KERNEL-SAME: %[[V:[^:]+]]: memref<?x2x?x64xbf16, strided<[?, ?, ?, ?], offset: ?>>
// KERNEL-SAME: %[[S:[^:]+]]: memref<8xf32, strided<[?], offset: ?>>
// KERNEL-SAME: %[[O:[^:]+]]: memref<?x8x?x64xbf16, strided<[?, ?, ?, ?], offset: ?>>
// KERNEL-SAME: %[[L:[^:]+]]: memref<?x8x?xf32, strided<[?, ?, ?], offset: ?>> {llvm.noalias})
// KERNEL-SAME: attributes {llvm.emit_c_interface}
// KERNEL: %[[QT:.+]] = bufferization.to_tensor %[[Q]] restrict
// KERNEL: %[[KT:.+]] = bufferization.to_tensor %[[K]] restrict
// KERNEL: %[[VT:.+]] = bufferization.to_tensor %[[V]] restrict
// KERNEL: %[[ST:.+]] = bufferization.to_tensor %[[S]] restrict
// KERNEL: %[[RO:[^ ,]+]], %[[RL:[^ ]+]] = fa.attention %[[QT]], %[[KT]], %[[VT]] alibi_slopes(%[[ST]] : tensor<8xf32>) {causal = #fa.causal<bottom_right>}
// KERNEL: bufferization.materialize_in_destination %[[RO]] in restrict writable %[[O]]
// KERNEL: bufferization.materialize_in_destination %[[RL]] in restrict writable %[[L]]
// KERNEL: return

// Regions and static shapes come through unchanged.
// RUN: fa-jit %S/Inputs/mask-mod.mlir --emit=kernel | FileCheck %s --check-prefix=REGION
// REGION: func.func @fa_forward(%{{.*}}: memref<2x2x64x32xbf16, strided<[?, ?, ?, ?], offset: ?>>
// REGION: fa.attention
// REGION: mask_mod {
// REGION: arith.divui
// REGION: fa.yield

// The dropout seed is an i64 argument after the other inputs.
// RUN: fa-jit %S/Inputs/dropout.mlir --emit=kernel | FileCheck %s --check-prefix=SEED
// SEED: func.func @fa_forward({{.*}}: memref<?x2x?x32xf16, strided<[?, ?, ?, ?], offset: ?>> {llvm.noalias}, %{{[^:]+}}: i64, %{{[^:]+}}: memref<?x2x?x32xf16, strided<[?, ?, ?, ?], offset: ?>> {llvm.noalias})

// RUN: fa-jit --emit=mlir --shape=1,2,2,16,16,32 | FileCheck %s --check-prefix=MLIR
// MLIR-NOT: fa.attention
// MLIR: llvm.func @fa_forward(
// MLIR: llvm.func @_mlir_ciface_fa_forward(
// MLIR-NOT: fa.attention

// RUN: fa-jit --emit=llvm --reference --dtype=f16 --shape=1,2,2,16,16,32 | FileCheck %s --check-prefix=LLVM
// LLVM: define void @fa_forward(
// LLVM: define void @_mlir_ciface_fa_forward(ptr

// fa-pipeline-host's vector-bits (the JIT passes its CPU's): the tile
// products' register blocks are two vectors wide, 8 rows with AVX-512's 32
// registers (16 accumulators of 16 lanes), 6 with AVX2's 16 (12 of 8); at
// 512 the functions also prefer 512-bit vectors.
// RUN: fa-jit --emit=mlir --shape=1,2,2,64,64,64 --host-vector-bits=512 | FileCheck %s --check-prefix=AVX512
// RUN: fa-jit --emit=mlir --shape=1,2,2,64,64,64 --host-vector-bits=256 | FileCheck %s --check-prefix=AVX2
// AVX512: llvm.func @fa_forward({{.*}}prefer_vector_width = "512"
// AVX512: ^bb{{[0-9]+}}(%{{[0-9]+}}: i64{{(, %[0-9]+: vector<16xf32>)(, %[0-9]+: vector<16xf32>)(, %[0-9]+: vector<16xf32>)(, %[0-9]+: vector<16xf32>)(, %[0-9]+: vector<16xf32>)(, %[0-9]+: vector<16xf32>)(, %[0-9]+: vector<16xf32>)(, %[0-9]+: vector<16xf32>)(, %[0-9]+: vector<16xf32>)(, %[0-9]+: vector<16xf32>)(, %[0-9]+: vector<16xf32>)(, %[0-9]+: vector<16xf32>)(, %[0-9]+: vector<16xf32>)(, %[0-9]+: vector<16xf32>)(, %[0-9]+: vector<16xf32>)(, %[0-9]+: vector<16xf32>)}}):
// AVX512: llvm.intr.fmuladd({{.*}}) : (vector<16xf32>, vector<16xf32>, vector<16xf32>) -> vector<16xf32>
// AVX2-NOT: prefer_vector_width
// AVX2: ^bb{{[0-9]+}}(%{{[0-9]+}}: i64{{(, %[0-9]+: vector<8xf32>)(, %[0-9]+: vector<8xf32>)(, %[0-9]+: vector<8xf32>)(, %[0-9]+: vector<8xf32>)(, %[0-9]+: vector<8xf32>)(, %[0-9]+: vector<8xf32>)(, %[0-9]+: vector<8xf32>)(, %[0-9]+: vector<8xf32>)(, %[0-9]+: vector<8xf32>)(, %[0-9]+: vector<8xf32>)(, %[0-9]+: vector<8xf32>)(, %[0-9]+: vector<8xf32>)}}):
// AVX2: llvm.intr.fmuladd({{.*}}) : (vector<8xf32>, vector<8xf32>, vector<8xf32>) -> vector<8xf32>
// AVX2-NOT: prefer_vector_width
