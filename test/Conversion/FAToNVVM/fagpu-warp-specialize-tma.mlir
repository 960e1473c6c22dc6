// RUN: fa-opt %s -fa-fuse="chip=sm_90a warp-specialize=1" -fa-tile -fa-online-softmax -fa-warp-specialize -convert-fa-to-nvvm | FileCheck %s

// convert-fa-to-nvvm's warp-specialized kernel copying with TMA (sm_90a,
// D = 128, 128 x 128 tiles, two consumer warpgroups). The kernel takes a
// tensor map of Q, K and V, each 128 bytes by value as a grid constant
// (KernelAbi.h's tensor_map(t, D, 8): 8-row boxes of all 128 columns). The
// consumers wait for full stages without a proxy fence (TMA writes through
// the async proxy wgmma reads). The producer warpgroup gives its registers
// back (24), and its first thread alone copies: it expects a tile's 32768
// bytes on the full barrier and issues 16 boxes, rows 0, 8, ..., 120 of the
// tile at 2048-byte steps of shared memory (one swizzle group of 8 rows x
// 128 columns each), at coordinates (0, row, 0, head, batch); no cp.async
// group remains to wait for.
// The host's launch holds the maps' places with null pointers (FA's
// launcher encodes them per call).
// CHECK: %[[M0:.*]] = llvm.mlir.zero : !llvm.ptr{{$}}
// CHECK-NEXT: %[[M1:.*]] = llvm.mlir.zero : !llvm.ptr
// CHECK-NEXT: %[[M2:.*]] = llvm.mlir.zero : !llvm.ptr
// CHECK: gpu.launch_func @fa_kernels::@fa_forward_0 {{.*}}, %[[M0]] : !llvm.ptr, %[[M1]] : !llvm.ptr, %[[M2]] : !llvm.ptr)
// CHECK-LABEL: llvm.func @fa_forward_0(
// CHECK-SAME: %[[QMAP:arg[0-9]+]]: !llvm.ptr {llvm.align = 64 : i64, llvm.byval = !llvm.array<128 x i8>, nvvm.grid_constant}
// CHECK-SAME: %[[KMAP:arg[0-9]+]]: !llvm.ptr {llvm.align = 64 : i64, llvm.byval = !llvm.array<128 x i8>, nvvm.grid_constant}
// CHECK-SAME: %[[VMAP:arg[0-9]+]]: !llvm.ptr {llvm.align = 64 : i64, llvm.byval = !llvm.array<128 x i8>, nvvm.grid_constant})
// CHECK-SAME: fa.kernel_abi = #fa.kernel_abi<{{.*}}tensor_map(q, 128, 8) : tmap, tensor_map(k, 128, 8) : tmap, tensor_map(v, 128, 8) : tmap]>
// CHECK-SAME: nvvm.maxnreg = 168
// CHECK: %[[ONE:.*]] = arith.constant 1 : i32
// CHECK-NEXT: nvvm.mbarrier.init %{{.*}}, %[[ONE]] : !llvm.ptr<3>, i32
// CHECK: %[[CONSUMER:.*]] = arith.cmpi ult, %{{.*}}, %{{.*}} : i32
// CHECK-NEXT: scf.if %[[CONSUMER]] {
// CHECK-NEXT: nvvm.setmaxregister increase 240
// CHECK: nvvm.mbarrier.try_wait.parity
// CHECK-NOT: nvvm.fence.proxy
// CHECK: wgmma.mma_async
// CHECK: nvvm.setmaxregister decrease 24
// CHECK-NEXT: %[[FIRST:.*]] = arith.constant 256 : i32
// CHECK-NEXT: %[[IS:.*]] = arith.cmpi eq, %{{.*}}, %[[FIRST]] : i32
// CHECK-NEXT: scf.if %[[IS]] {
// CHECK: nvvm.mbarrier.arrive.expect_tx %[[QF:.*]], %{{.*}} : !llvm.ptr<3>, i32
// CHECK: %[[Q0:.*]] = llvm.addrspacecast %{{.*}} : !llvm.ptr<3> to !llvm.ptr<7>
// CHECK: nvvm.cp.async.bulk.tensor.shared.cluster.global %[[Q0]], %[[QMAP]], %[[QF]], box[%{{.*}}, %[[ROW:.*]], %{{.*}}, %[[HEAD:.*]], %[[BATCH:.*]]] : !llvm.ptr<7>, !llvm.ptr
// CHECK: %[[OFF:.*]] = arith.constant 2048 : i32
// CHECK-NEXT: %[[AT:.*]] = llvm.getelementptr %{{.*}}[%[[OFF]]]
// CHECK-NEXT: %[[Q1:.*]] = llvm.addrspacecast %[[AT]]
// CHECK: %[[EIGHT:.*]] = arith.constant 8 : i32
// CHECK-NEXT: %[[ROW8:.*]] = arith.addi %[[ROW]], %[[EIGHT]] : i32
// CHECK: nvvm.cp.async.bulk.tensor.shared.cluster.global %[[Q1]], %[[QMAP]], %[[QF]], box[%{{.*}}, %[[ROW8]], %{{.*}}, %[[HEAD]], %[[BATCH]]]
// CHECK-COUNT-14: nvvm.cp.async.bulk.tensor.shared.cluster.global %{{.*}}, %[[QMAP]], %[[QF]]
// CHECK: scf.for
// CHECK: nvvm.mbarrier.try_wait.parity
// CHECK: nvvm.mbarrier.arrive.expect_tx %[[KF:.*]], %{{.*}} : !llvm.ptr<3>, i32
// CHECK-COUNT-16: nvvm.cp.async.bulk.tensor.shared.cluster.global %{{.*}}, %[[KMAP]], %[[KF]]
// CHECK: nvvm.mbarrier.try_wait.parity
// CHECK: nvvm.mbarrier.arrive.expect_tx %[[VF:.*]], %{{.*}} : !llvm.ptr<3>, i32
// CHECK-COUNT-16: nvvm.cp.async.bulk.tensor.shared.cluster.global %{{.*}}, %[[VMAP]], %[[VF]]
// CHECK-NOT: nvvm.cp.async.commit.group
// CHECK: llvm.return
func.func @d128(%q: tensor<?x8x?x128xbf16>, %k: tensor<?x2x?x128xbf16>, %v: tensor<?x2x?x128xbf16>) -> tensor<?x8x?x128xbf16> {
  %o = fa.attention %q, %k, %v : tensor<?x8x?x128xbf16>, tensor<?x2x?x128xbf16>, tensor<?x2x?x128xbf16> -> tensor<?x8x?x128xbf16>
  return %o : tensor<?x8x?x128xbf16>
}
