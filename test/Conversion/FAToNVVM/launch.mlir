// RUN: fa-opt %s -fa-fuse="chip=sm_90a wgmma=false" -fa-tile -fa-online-softmax -fa-async-copy -convert-fa-to-nvvm | FileCheck %s
// RUN: fa-opt %s --dump-pass-pipeline --pass-pipeline="builtin.module(fa-pipeline-cuda{chip=sm_90a})" -o /dev/null 2>&1 | FileCheck %s --check-prefix=DUMP

// fa-pipeline-cuda's passes, in order: the forward through fa-fuse,
// fa-key-ranges (without fwd-key-ranges=0), fa-tile, fa-bounded-softmax
// (without fwd-bounded-softmax=0), fa-online-softmax, fa-bias-tiles (without
// fwd-bias-tiles=0 or fwd-tma=0), fa-warp-specialize (without
// fwd-warp-specialize=0) and
// fa-async-copy before the conversion (fa-overlap-softmax only with
// fwd-overlap).
// DUMP: builtin.module(
// DUMP-NEXT: fa-differentiate-score-mod,
// DUMP-NEXT: fa-fuse{bias-tiles=true block-kv=0 block-q=0 chip=sm_90a exp2-fma=-1 head-group=0 tanh-fma=-1 warp-specialize=true wgmma=true},
// DUMP-NEXT: fa-key-ranges,
// DUMP-NEXT: fa-tile{block-kv=64 block-q=64},
// DUMP-NEXT: fa-bounded-softmax,
// DUMP-NEXT: fa-online-softmax,
// DUMP-NEXT: fa-bias-tiles,
// DUMP-NEXT: fa-warp-specialize{causal-order=tail overlap=true persistent=auto pingpong=true stages=0 tma=true},
// DUMP-NEXT: fa-async-copy{stages=0},
// DUMP-NEXT: convert-fa-to-nvvm{{.*}}chip=sm_90a},
// DUMP-NEXT: gpu.module(

// The launch of a forward kernel after convert-fa-to-nvvm (rewriteLaunch):
// its operands are the kernel's ABI (#fa.kernel_abi), its grid the ABI's
// rule. bf16, D = 128, GQA, causal bottom-right, with lse: Q tiles of 64
// rows, K/V tiles of 128 (the default at D = 128 with a mask), one stage.

func.func @causal_gqa(%q: tensor<?x8x?x128xbf16>, %k: tensor<?x2x?x128xbf16>, %v: tensor<?x2x?x128xbf16>) -> (tensor<?x8x?x128xbf16>, tensor<?x8x?xf32>) {
  %o, %lse = fa.attention %q, %k, %v {causal = #fa.causal<bottom_right>} : tensor<?x8x?x128xbf16>, tensor<?x2x?x128xbf16>, tensor<?x2x?x128xbf16> -> tensor<?x8x?x128xbf16>, tensor<?x8x?xf32>
  return %o, %lse : tensor<?x8x?x128xbf16>, tensor<?x8x?xf32>
}

// CHECK: module attributes {gpu.container_module}
// CHECK-LABEL: func.func @causal_gqa
// CHECK: %[[Q:.+]] = bufferization.to_buffer %arg0 read_only
// CHECK: %[[K:.+]] = bufferization.to_buffer %arg1 read_only
// CHECK: %[[V:.+]] = bufferization.to_buffer %arg2 read_only
// CHECK: %[[O:.+]] = memref.cast %{{.+}} : memref<?x8x?x128xbf16> to memref<?x8x?x128xbf16, strided<[?, ?, ?, 1], offset: ?>>
// CHECK: %[[LSE:.+]] = memref.cast %{{.+}} : memref<?x8x?xf32> to memref<?x8x?xf32, strided<[?, ?, 1], offset: ?>>
// CHECK: scf.if
// Each memref is passed as the address of its first element (the aligned
// pointer plus its offset) and its element strides.
// CHECK: %{{.+}}, %[[QOFF:.+]], %[[QSIZE:.+]]:4, %[[QSTRIDE:.+]]:4 = memref.extract_strided_metadata %[[Q]]
// CHECK-NEXT: %[[QADDR:.+]] = memref.extract_aligned_pointer_as_index %[[Q]]
// CHECK-NEXT: %[[QINT:.+]] = arith.index_cast %[[QADDR]] : index to i64
// CHECK-NEXT: %[[QBASE:.+]] = llvm.inttoptr %[[QINT]] : i64 to !llvm.ptr<1>
// CHECK-NEXT: %[[QOFF64:.+]] = arith.index_cast %[[QOFF]] : index to i64
// CHECK-NEXT: %[[QPTR:.+]] = llvm.getelementptr %[[QBASE]][%[[QOFF64]]] : (!llvm.ptr<1>, i64) -> !llvm.ptr<1>, bf16
// CHECK: %{{.+}}, %{{.+}}, %[[KSIZE:.+]]:4, %{{.+}}:4 = memref.extract_strided_metadata %[[K]]
// CHECK: %[[KPTR:.+]] = llvm.getelementptr
// CHECK: memref.extract_strided_metadata %[[V]]
// CHECK: %[[VPTR:.+]] = llvm.getelementptr
// CHECK: memref.extract_strided_metadata %[[O]]
// CHECK: %[[OPTR:.+]] = llvm.getelementptr
// CHECK: memref.extract_strided_metadata %[[LSE]]
// CHECK: %[[LPTR:.+]] = llvm.getelementptr %{{.+}} : (!llvm.ptr<1>, i64) -> !llvm.ptr<1>, f32
// CHECK-NEXT: %[[QS0:.+]] = arith.index_cast %[[QSTRIDE]]#0 : index to i64
// CHECK-NEXT: %[[QS1:.+]] = arith.index_cast %[[QSTRIDE]]#1 : index to i64
// CHECK-NEXT: %[[QS2:.+]] = arith.index_cast %[[QSTRIDE]]#2 : index to i64
// CHECK-COUNT-11: arith.index_cast %{{.+}} : index to i64
// Nq, Nk, Hq / Hkv, Hq, B in the order of the kernel's ABI; the kernel
// carries its scale.
// CHECK-NEXT: %[[NQ:.+]] = arith.index_cast %[[QSIZE]]#2 : index to i32
// CHECK-NEXT: %[[NK:.+]] = arith.index_cast %[[KSIZE]]#2 : index to i32
// CHECK-NEXT: %[[G:.+]] = arith.divui %[[QSIZE]]#1, %[[KSIZE]]#1 : index
// CHECK-NEXT: %[[G32:.+]] = arith.index_cast %[[G]] : index to i32
// CHECK-NEXT: %[[HQ:.+]] = arith.index_cast %[[QSIZE]]#1 : index to i32
// CHECK-NEXT: %[[B:.+]] = arith.index_cast %[[QSIZE]]#0 : index to i32
// The grid of the ABI's rule: (ceil(Nq / 64), Hq, B), y and z folded
// (min(Hq B, 65535), ceil(Hq B / 65535)) where Hq or B exceeds 65535.
// CHECK-NEXT: %[[LIMIT:.+]] = arith.constant 65535 : index
// CHECK-NEXT: %[[BFITS:.+]] = arith.cmpi ule, %[[QSIZE]]#0, %[[LIMIT]] : index
// CHECK-NEXT: %[[HFITS:.+]] = arith.cmpi ule, %[[QSIZE]]#1, %[[LIMIT]] : index
// CHECK-NEXT: %[[FITS:.+]] = arith.andi %[[HFITS]], %[[BFITS]] : i1
// CHECK-NEXT: %[[HB:.+]] = arith.muli %[[QSIZE]]#1, %[[QSIZE]]#0 : index
// CHECK-NEXT: %[[C64:.+]] = arith.constant 64 : index
// CHECK-NEXT: %[[TILES:.+]] = arith.ceildivui %[[QSIZE]]#2, %[[C64]] : index
// CHECK-NEXT: %[[MIN:.+]] = arith.minui %[[HB]], %[[LIMIT]] : index
// CHECK-NEXT: %[[GY:.+]] = arith.select %[[FITS]], %[[QSIZE]]#1, %[[MIN]] : index
// CHECK-NEXT: %[[ROWS:.+]] = arith.ceildivui %[[HB]], %[[LIMIT]] : index
// CHECK-NEXT: %[[GZ:.+]] = arith.select %[[FITS]], %[[QSIZE]]#0, %[[ROWS]] : index
// Shared memory: the Q tile (16 KB) and a K and a V tile (2 x 32 KB).
// CHECK-NEXT: %[[SMEM:.+]] = arith.constant 81920 : i32
// CHECK-NEXT: gpu.launch_func @fa_kernels::@fa_forward_0 blocks in (%[[TILES]], %[[GY]], %[[GZ]]) threads in (%c128, %{{.+}}, %{{.+}}) dynamic_shared_memory_size %[[SMEM]] args(%[[QPTR]] : !llvm.ptr<1>, %[[KPTR]] : !llvm.ptr<1>, %[[VPTR]] : !llvm.ptr<1>, %[[OPTR]] : !llvm.ptr<1>, %[[LPTR]] : !llvm.ptr<1>, %[[QS0]] : i64, %[[QS1]] : i64, %[[QS2]] : i64,
// CHECK-SAME: : i64, %[[NQ]] : i32, %[[NK]] : i32, %[[G32]] : i32, %[[HQ]] : i32, %[[B]] : i32)
// The kernel the launch calls, with the same ABI.
// CHECK: gpu.module @fa_kernels [#nvvm.target<O = 3, chip = "sm_90a", features = "+ptx80">]
// CHECK-NEXT: llvm.mlir.global external @fa_smem() {addr_space = 3 : i32, alignment = 1024 : i64} : !llvm.array<0 x i8>
// CHECK-NEXT: llvm.func @fa_forward_0(
// CHECK-SAME: fa.kernel_abi = #fa.kernel_abi<grid = [tiles(Nq, 64), Hq, B], threads = 128, shared = 81920, params = [q : ptr, k : ptr, v : ptr, o : ptr, lse : ptr, stride(q, 0) : i64, stride(q, 1) : i64, stride(q, 2) : i64, stride(k, 0) : i64, stride(k, 1) : i64, stride(k, 2) : i64, stride(v, 0) : i64, stride(v, 1) : i64, stride(v, 2) : i64, stride(o, 0) : i64, stride(o, 1) : i64, stride(o, 2) : i64, stride(lse, 0) : i64, stride(lse, 1) : i64, Nq : i32, Nk : i32, group : i32, Hq : i32, B : i32]>

// fa-pipeline-cuda passes its tile and stage options on: Q tiles of 128
// rows, K/V tiles of 32 in three stages ((128 + 2 x 3 x 32) x 128 x 2
// bytes of shared memory).
// RUN: fa-opt %s "-fa-pipeline-cuda=chip=sm_80 block-q=128 block-kv=32 kv-stages=3" -mlir-print-ir-after=convert-fa-to-nvvm 2>&1 >/dev/null | FileCheck %s --check-prefix=PIPE
// PIPE: gpu.launch_func @fa_kernels::@fa_forward_0
// PIPE: llvm.func @fa_forward_0(
// PIPE-SAME: fa.kernel_abi = #fa.kernel_abi<grid = [tiles(Nq, 128), Hq, B], threads = 128, shared = 81920,
