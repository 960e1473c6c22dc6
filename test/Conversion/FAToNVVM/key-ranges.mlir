// RUN: fa-opt %s -fa-fuse="chip=sm_90a warp-specialize=1" -fa-key-ranges -fa-tile -fa-online-softmax -fa-warp-specialize=persistent=never -fa-async-copy -convert-fa-to-nvvm | FileCheck %s

// fa-key-ranges' two kernels after convert-fa-to-nvvm (KernelAbi.h, "Key
// ranges"), the forward a CTA an item (persistent=never; without the
// causal mask it would be persistent at D = 64:
// warp-specialize-persistent-key-ranges.mlir). The key-range kernel runs over the query tiles and key chunks
// (grid [tiles(Nq, 128), tiles(Nk, 128), 1], 4 warps; its chunk ctaid.z *
// nctaid.y + ctaid.y, below ceil(Nk / 128)) and takes the key ranges before the captures; each
// warp folds its rows' tiles with redux.sync (the min of the firsts, the
// max of the lasts, the max of the full runs' firsts, the min of their
// lasts) and its lane 0 merges them into the zeroed record at (tile * 4 +
// warp) * 5 with atomics: ~first and last + 1 by umax where the warp sees
// a tile; ~first and last + 1 of the full run by umax and its length by
// add where it has one. The forward takes the key ranges after its
// captures and reads the query tile's 4 records (20 invariant loads:
// visible_keys' 2 a warp, full_keys' 3) before its key loop. The host
// zeroes the ranges and launches the key-range kernel first.

// CHECK-LABEL: func.func @document
// CHECK: gpu.memset
// CHECK: gpu.launch_func  @fa_kernels::@fa_forward_0_key_ranges blocks in (%{{.+}}, %{{.+}}, %{{.+}}) threads in (%c128
// CHECK: gpu.launch_func  @fa_kernels::@fa_forward_0 blocks in
// CHECK: llvm.func @fa_forward_0(
// CHECK-SAME: fa.kernel_abi = #fa.kernel_abi<grid = [tiles(Nq, 128), Hq, B], threads = 384, shared = {{[0-9]+}}, params = [{{.*}}, capture0 : ptr, stride(capture0, 0) : i64, key_ranges : ptr, tensor_map(q, 64, 128) : tmap, tensor_map(k, 64, 128) : tmap, tensor_map(v, 64, 128) : tmap]>
// CHECK-COUNT-20: llvm.load %{{.+}} invariant {alignment = 4 : i64} : !llvm.ptr<1> -> i32
// CHECK-NOT: llvm.load %{{.+}} invariant {alignment = 4 : i64} : !llvm.ptr<1> -> i32
// CHECK: llvm.func @fa_forward_0_key_ranges(
// CHECK-SAME: fa.kernel_abi = #fa.kernel_abi<grid = [tiles(Nq, 128), tiles(Nk, 128), 1], threads = 128, shared = 0, params = [{{.*}}, B : i32, key_ranges : ptr, capture0 : ptr, stride(capture0, 0) : i64]>
// Its prologue returns the CTAs of a folded grid past ceil(Nk / 128)
// chunks (not past Hq x B, as a forward's).
// CHECK: %[[C128:.+]] = arith.constant 128 : i32
// CHECK: %[[NK127:.+]] = arith.addi %arg20, %{{.+}} : i32
// CHECK-NEXT: %[[CHUNKS:.+]] = arith.divui %[[NK127]], %[[C128]] : i32
// CHECK: %[[ROWS:.+]] = arith.muli %[[CHUNKS]], %{{.+}} : i32
// CHECK-NEXT: %[[PAST:.+]] = arith.cmpi uge, %{{.+}}, %[[ROWS]] : i32
// CHECK-NEXT: llvm.cond_br %[[PAST]]
// The chunk (fagpu.key_chunk, read after the prologue's head and batch)
// bounds the loop over key tiles.
// CHECK: llvm.inline_asm has_side_effects "mov.b32 $0, $1;"
// CHECK: %[[Y:.+]] = nvvm.read.ptx.sreg.ctaid.y : i32
// CHECK-NEXT: %[[Z:.+]] = nvvm.read.ptx.sreg.ctaid.z : i32
// CHECK-NEXT: %[[NY:.+]] = nvvm.read.ptx.sreg.nctaid.y : i32
// CHECK-NEXT: %[[ZNY:.+]] = arith.muli %[[Z]], %[[NY]] : i32
// CHECK-NEXT: %[[CHUNK:.+]] = arith.addi %[[ZNY]], %[[Y]] : i32
// CHECK-NEXT: %[[CHUNKI:.+]] = arith.index_cast %[[CHUNK]] : i32 to index
// CHECK-NEXT: %[[CK:.+]] = arith.constant 128 : index
// CHECK-NEXT: %[[K0:.+]] = arith.muli %[[CHUNKI]], %[[CK]] : index
// CHECK-NEXT: arith.maxui %{{.+}}, %[[K0]] : index
// Each fold starts at its identity: INT_MAX for a min, -1 for a max.
// CHECK: %[[NONE:[^ ]+]] = arith.constant 2147483647 : i32
// CHECK: arith.minsi %[[NONE]], %{{.+}} : i32
// CHECK: %[[FIRST:.+]] = nvvm.redux.sync  min %{{.+}}, %{{.+}} : i32 -> i32
// CHECK-NEXT: %[[M1:.+]] = arith.constant -1 : i32
// CHECK: arith.maxsi %[[M1]], %{{.+}} : i32
// CHECK: %[[LAST:.+]] = nvvm.redux.sync  max %{{.+}}, %{{.+}} : i32 -> i32
// CHECK-NEXT: %[[M1B:.+]] = arith.constant -1 : i32
// CHECK: arith.maxsi %[[M1B]], %{{.+}} : i32
// CHECK: %[[FFIRST:.+]] = nvvm.redux.sync  max %{{.+}}, %{{.+}} : i32 -> i32
// CHECK-NOT: arith.constant -1 : i32
// CHECK: arith.minsi %[[NONE]], %{{.+}} : i32
// CHECK: %[[FLAST:.+]] = nvvm.redux.sync  min %{{.+}}, %{{.+}} : i32 -> i32
// CHECK: %[[WARP:.+]] = arith.shrui %{{.+}}, %c5_i32
// CHECK: %[[LANE:.+]] = arith.andi %{{.+}}, %c31_i32
// CHECK: %[[T4:.+]] = arith.muli %{{.+}}, %c4_i32 : i32
// CHECK-NEXT: %[[SLOT1:.+]] = arith.addi %[[T4]], %[[WARP]] : i32
// CHECK-NEXT: %[[SLOT:.+]] = arith.muli %[[SLOT1]], %c5_i32{{.*}} : i32
// CHECK: %[[LANE0:.+]] = arith.cmpi eq, %[[LANE]], %{{.+}} : i32
// CHECK: %[[ALL:.+]] = arith.constant -1 : i32
// CHECK: %[[SEES:.+]] = arith.cmpi sge, %[[LAST]], %{{.+}} : i32
// CHECK-NEXT: %[[MERGE:.+]] = arith.andi %[[LANE0]], %[[SEES]] : i1
// CHECK-NEXT: scf.if %[[MERGE]] {
// CHECK-NEXT: %[[NFIRST:.+]] = arith.xori %[[FIRST]], %[[ALL]] : i32
// CHECK: llvm.atomicrmw umax %{{.+}}, %[[NFIRST]] monotonic : !llvm.ptr<1>, i32
// CHECK: %[[LAST1:.+]] = arith.addi %[[LAST]], %{{.+}} : i32
// CHECK: llvm.atomicrmw umax %{{.+}}, %[[LAST1]] monotonic : !llvm.ptr<1>, i32
// CHECK-NEXT: }
// CHECK-NEXT: %[[HASFULL:.+]] = arith.cmpi sle, %[[FFIRST]], %[[FLAST]] : i32
// CHECK-NEXT: %[[MERGEF:.+]] = arith.andi %[[LANE0]], %[[HASFULL]] : i1
// CHECK-NEXT: scf.if %[[MERGEF]] {
// CHECK-NEXT: %[[NFFIRST:.+]] = arith.xori %[[FFIRST]], %[[ALL]] : i32
// CHECK: llvm.atomicrmw umax %{{.+}}, %[[NFFIRST]] monotonic : !llvm.ptr<1>, i32
// CHECK: %[[FLAST1:.+]] = arith.addi %[[FLAST]], %{{.+}} : i32
// CHECK: llvm.atomicrmw umax %{{.+}}, %[[FLAST1]] monotonic : !llvm.ptr<1>, i32
// CHECK: %[[SPAN:.+]] = arith.subi %[[FLAST]], %[[FFIRST]] : i32
// CHECK-NEXT: %[[LEN:.+]] = arith.addi %[[SPAN]], %{{.+}} : i32
// CHECK: llvm.atomicrmw add %{{.+}}, %[[LEN]] monotonic : !llvm.ptr<1>, i32
// CHECK-NEXT: }
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
