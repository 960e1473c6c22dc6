// RUN: fa-opt %s -fa-fuse="chip=sm_90a warp-specialize=1 block-kv=128" -fa-tile -fa-online-softmax -fa-warp-specialize="overlap=0 persistent=never" -convert-fa-to-nvvm | FileCheck %s

// convert-fa-to-nvvm's warp-specialized kernel copying with TMA (sm_90a,
// D = 128, 128 x 128 tiles, two consumer warpgroups taking turns; the loop
// not rotated: overlap=0, whose lowering fagpu-wgmma-overlap.mlir covers). The
// kernel takes a tensor map of Q, K and V, each 128 bytes by value as a grid
// constant (KernelAbi.h's tensor_map(t, D, 128): boxes of a whole 128-row
// tile, two 64-column slabs). The consumers wait for full stages without a
// proxy fence (TMA writes through the async proxy wgmma reads).
// Ping-pong: warpgroup w's turns are named barrier 1 + w of 256 threads;
// warpgroup 0 skips its first wait, a pass arrives on the next warpgroup's
// barrier after S's wgmmas are committed and before they are waited for,
// and after the loop every warpgroup but the last passes once more.
// wgmma reads fagpu's slab layout: K-major descriptors with 1024-byte 8-row
// atoms (SBO) and 128-byte swizzle (4611686293305360384: LBO 16, SBO 1024),
// the second warpgroup's Q rows 8192 bytes on; V's MN-major descriptor
// steps 16384 bytes (a 128-row slab) between 64-column blocks of N
// (4611686293372403712: LBO 16384, SBO 1024).
// The producer warpgroup gives its registers back (24), and its first
// thread alone copies: it expects a tile's 32768 bytes on the full barrier
// and issues one box at (0, row, 0, head, batch); no cp.async group
// remains to wait for.
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
// CHECK-SAME: fa.kernel_abi = #fa.kernel_abi<{{.*}}tensor_map(q, 128, 128) : tmap, tensor_map(k, 128, 128) : tmap, tensor_map(v, 128, 128) : tmap]>
// CHECK-SAME: nvvm.maxnreg = 168
// CHECK: %[[ONE:.*]] = arith.constant 1 : i32
// CHECK-NEXT: nvvm.mbarrier.init %{{.*}}, %[[ONE]] : !llvm.ptr<3>, i32
// CHECK: %[[CONSUMER:.*]] = arith.cmpi ult, %{{.*}}, %{{.*}} : i32
// CHECK-NEXT: scf.if %[[CONSUMER]] {
// CHECK-NEXT: nvvm.setmaxregister increase 240
// CHECK: nvvm.mbarrier.try_wait.parity
// CHECK-NEXT: %[[TID:.*]] = nvvm.read.ptx.sreg.tid.x : i32
// CHECK-NEXT: %[[C7:.*]] = arith.constant 7 : i32
// CHECK-NEXT: %[[WG:.*]] = arith.shrui %[[TID]], %[[C7]] : i32
// CHECK-NEXT: %[[C0:.*]] = arith.constant 0 : i32
// CHECK-NEXT: %[[NOT0:.*]] = arith.cmpi ne, %[[WG]], %[[C0]] : i32
// CHECK-NEXT: scf.if %[[NOT0]] {
// CHECK-NEXT: %[[N:.*]] = arith.constant 256 : i32
// CHECK-NEXT: %[[C1:.*]] = arith.constant 1 : i32
// CHECK-NEXT: %[[OWN:.*]] = arith.addi %[[WG]], %[[C1]] : i32
// CHECK-NEXT: nvvm.barrier id = %[[OWN]] number_of_threads = %[[N]]
// CHECK-NEXT: }
// CHECK: scf.for
// CHECK: nvvm.mbarrier.try_wait.parity
// CHECK-NOT: nvvm.fence.proxy
// CHECK: arith.constant 4611686293305360384 : i64
// CHECK: arith.constant 8192 : i32
// CHECK: arith.constant 4611686293305360384 : i64
// CHECK: wgmma.mma_async
// CHECK: wgmma.commit_group
// CHECK: %[[PWG:.*]] = arith.shrui %{{.*}}, %{{.*}} : i32
// CHECK-NEXT: %[[C1B:.*]] = arith.constant 1 : i32
// CHECK-NEXT: %[[LAST:.*]] = arith.cmpi eq, %[[PWG]], %[[C1B]] : i32
// CHECK-NEXT: %[[C1C:.*]] = arith.constant 1 : i32
// CHECK-NEXT: %[[SUCC:.*]] = arith.addi %[[PWG]], %[[C1C]] : i32
// CHECK-NEXT: %[[C0B:.*]] = arith.constant 0 : i32
// CHECK-NEXT: %[[NEXT:.*]] = arith.select %[[LAST]], %[[C0B]], %[[SUCC]] : i32
// CHECK-NEXT: %[[N2:.*]] = arith.constant 256 : i32
// CHECK-NEXT: %[[C1D:.*]] = arith.constant 1 : i32
// CHECK-NEXT: %[[THEIRS:.*]] = arith.addi %[[NEXT]], %[[C1D]] : i32
// CHECK-NEXT: nvvm.barrier.arrive id = %[[THEIRS]] number_of_threads = %[[N2]]
// CHECK-NEXT: wgmma.wait_group.sync.aligned 0
// CHECK: nvvm.barrier id = %{{.*}} number_of_threads = %{{.*}}
// CHECK: arith.constant 4611686293372403712 : i64
// CHECK: wgmma.mma_async
// CHECK: scf.yield
// CHECK: arith.xori %{{.*}}, %{{.*}} : i1
// CHECK-NEXT: scf.if
// CHECK: nvvm.barrier.arrive id
// CHECK: nvvm.setmaxregister decrease 24
// CHECK-NEXT: %[[FIRST:.*]] = arith.constant 256 : i32
// CHECK-NEXT: %[[IS:.*]] = arith.cmpi eq, %{{.*}}, %[[FIRST]] : i32
// CHECK-NEXT: scf.if %[[IS]] {
// CHECK: %[[QBYTES:.*]] = arith.constant 32768 : i32
// CHECK-NEXT: nvvm.mbarrier.arrive.expect_tx %[[QF:.*]], %[[QBYTES]] : !llvm.ptr<3>, i32
// CHECK: %[[Q0:.*]] = llvm.addrspacecast %{{.*}} : !llvm.ptr<3> to !llvm.ptr<7>
// CHECK: nvvm.cp.async.bulk.tensor.shared.cluster.global %[[Q0]], %[[QMAP]], %[[QF]], box[%{{.*}}, %{{.*}}, %{{.*}}, %{{.*}}, %{{.*}}] : !llvm.ptr<7>, !llvm.ptr
// CHECK-NOT: nvvm.cp.async.bulk.tensor
// CHECK: scf.for
// CHECK: nvvm.mbarrier.try_wait.parity
// CHECK: nvvm.mbarrier.arrive.expect_tx %[[KF:.*]], %{{.*}} : !llvm.ptr<3>, i32
// CHECK: nvvm.cp.async.bulk.tensor.shared.cluster.global %{{.*}}, %[[KMAP]], %[[KF]]
// CHECK-NOT: nvvm.cp.async.bulk.tensor
// CHECK: nvvm.mbarrier.try_wait.parity
// CHECK: nvvm.mbarrier.arrive.expect_tx %[[VF:.*]], %{{.*}} : !llvm.ptr<3>, i32
// CHECK: nvvm.cp.async.bulk.tensor.shared.cluster.global %{{.*}}, %[[VMAP]], %[[VF]]
// CHECK-NOT: nvvm.cp.async.bulk.tensor
// CHECK-NOT: nvvm.cp.async.commit.group
// CHECK: llvm.return
func.func @d128(%q: tensor<?x8x?x128xbf16>, %k: tensor<?x2x?x128xbf16>, %v: tensor<?x2x?x128xbf16>) -> tensor<?x8x?x128xbf16> {
  %o = fa.attention %q, %k, %v : tensor<?x8x?x128xbf16>, tensor<?x2x?x128xbf16>, tensor<?x2x?x128xbf16> -> tensor<?x8x?x128xbf16>
  return %o : tensor<?x8x?x128xbf16>
}
