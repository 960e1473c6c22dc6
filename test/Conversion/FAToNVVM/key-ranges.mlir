// RUN: fa-opt %s -fa-fuse="chip=sm_90a warp-specialize=1" -fa-key-ranges -fa-tile -fa-online-softmax -fa-warp-specialize -fa-async-copy -convert-fa-to-nvvm | FileCheck %s

// fa-key-ranges' two kernels after convert-fa-to-nvvm (KernelAbi.h, "Key
// ranges"). The key-range kernel runs over the query tiles only (grid
// [tiles(Nq, 128), 1, 1], 4 warps) and takes the key ranges before the
// captures; each warp folds its rows' tiles with redux.sync (the min of
// the firsts, the max of the lasts, the max of the full runs' firsts, the
// min of their lasts) and its lane 0 stores the four at (tile * 4 + warp)
// * 4. The forward takes the key ranges after its captures and reads the
// query tile's 4 records (16 invariant loads: visible_keys' and
// full_keys') before its key loop. The host launches the key-range kernel
// first.

// CHECK-LABEL: func.func @document
// CHECK: gpu.launch_func  @fa_kernels::@fa_forward_0_key_ranges blocks in (%{{.+}}, %{{.+}}, %{{.+}}) threads in (%c128
// CHECK: gpu.launch_func  @fa_kernels::@fa_forward_0 blocks in
// CHECK: llvm.func @fa_forward_0(
// CHECK-SAME: fa.kernel_abi = #fa.kernel_abi<grid = [tiles(Nq, 128), Hq, B], threads = 384, shared = {{[0-9]+}}, params = [{{.*}}, capture0 : ptr, stride(capture0, 0) : i64, key_ranges : ptr, tensor_map(q, 64, 128) : tmap, tensor_map(k, 64, 128) : tmap, tensor_map(v, 64, 128) : tmap]>
// CHECK-COUNT-16: llvm.load %{{.+}} invariant {alignment = 4 : i64} : !llvm.ptr<1> -> i32
// CHECK-NOT: llvm.load %{{.+}} invariant {alignment = 4 : i64} : !llvm.ptr<1> -> i32
// CHECK: llvm.func @fa_forward_0_key_ranges(
// CHECK-SAME: fa.kernel_abi = #fa.kernel_abi<grid = [tiles(Nq, 128), 1, 1], threads = 128, shared = 0, params = [{{.*}}, B : i32, key_ranges : ptr, capture0 : ptr, stride(capture0, 0) : i64]>
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
// CHECK: %[[FOUR:.+]] = arith.constant 4 : i32
// CHECK: %[[T4:.+]] = arith.muli %{{.+}}, %{{.+}} : i32
// CHECK-NEXT: %[[SLOT1:.+]] = arith.addi %[[T4]], %[[WARP]] : i32
// CHECK-NEXT: %[[SLOT:.+]] = arith.muli %[[SLOT1]], %[[FOUR]] : i32
// CHECK: %[[LANE0:.+]] = arith.cmpi eq, %[[LANE]], %{{.+}} : i32
// CHECK: scf.if %[[LANE0]]
// CHECK: llvm.store %[[FIRST]], %{{.+}} {alignment = 4 : i64} : i32, !llvm.ptr<1>
// CHECK: llvm.store %[[LAST]], %{{.+}} {alignment = 4 : i64} : i32, !llvm.ptr<1>
// CHECK: llvm.store %[[FFIRST]], %{{.+}} {alignment = 4 : i64} : i32, !llvm.ptr<1>
// CHECK: llvm.store %[[FLAST]], %{{.+}} {alignment = 4 : i64} : i32, !llvm.ptr<1>
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
