// RUN: fa-opt %s -fa-fuse=chip=sm_90a -fa-tile -fa-online-softmax -fa-async-copy -convert-fa-to-nvvm -split-input-file | FileCheck %s

// Captures on the GPU: after the kernel's own parameters, per capture a
// pointer and one i64 element stride per dim. tensor.extract in an inlined
// region (fagpu.map's body) becomes address arithmetic and an invariant
// global load of the element type, at the region's query and key clamped
// into [0, Nq - 1] and [0, Nk - 1] (ragged rows and keys read in bounds;
// fagpu.mask masks the keys past Nk by their true position).

// CHECK-LABEL: llvm.func @fa_forward_0(
// The plain ABI (the kernel carries its scale), then doc (1-D) and tab (2-D).
// CHECK-SAME: %{{.+}}: i32, %[[DOC:[^:]+]]: !llvm.ptr<1>, %[[DS:[^:]+]]: i64, %[[TAB:[^:]+]]: !llvm.ptr<1>, %[[TS0:[^:]+]]: i64, %[[TS1:[^:]+]]: i64)
// CHECK: scf.for
// CHECK: %[[I:.+]] = arith.minui %{{.+}}, %{{.+}} : index
// CHECK: %[[J:.+]] = arith.minui %{{.+}}, %{{.+}} : index
// score_mod: tab[h, j] (f16, extended by the region).
// CHECK: %[[O0:.+]] = arith.muli %{{.+}}, %[[TS0]] : i64
// CHECK: %[[J64:.+]] = arith.index_cast %[[J]] : index to i64
// CHECK: %[[O1:.+]] = arith.muli %[[J64]], %[[TS1]] : i64
// CHECK: %[[OFF:.+]] = arith.addi %[[O0]], %[[O1]] : i64
// CHECK: %[[P:.+]] = llvm.getelementptr %[[TAB]][%[[OFF]]] : (!llvm.ptr<1>, i64) -> !llvm.ptr<1>, f16
// CHECK: %[[T:.+]] = llvm.load %[[P]] invariant : !llvm.ptr<1> -> f16
// CHECK: arith.extf %[[T]] : f16 to f32
// mask_mod: doc[i] == doc[j] (i32).
// CHECK: %[[I64:.+]] = arith.index_cast %[[I]] : index to i64
// CHECK: %[[DI:.+]] = arith.muli %[[I64]], %[[DS]] : i64
// CHECK: llvm.getelementptr %[[DOC]][%[[DI]]] : (!llvm.ptr<1>, i64) -> !llvm.ptr<1>, i32
// CHECK: %[[DOCI:.+]] = llvm.load %{{.+}} invariant : !llvm.ptr<1> -> i32
// CHECK: %[[DOCJ:.+]] = llvm.load %{{.+}} invariant : !llvm.ptr<1> -> i32
// CHECK: arith.cmpi eq, %[[DOCI]], %[[DOCJ]] : i32
func.func @forward(%q: tensor<?x8x?x64xbf16>, %doc: tensor<?xi32>, %tab: tensor<8x?xf16>) -> tensor<?x8x?x64xbf16> {
  %o = fa.attention %q, %q, %q captures(%doc, %tab : tensor<?xi32>, tensor<8x?xf16>) : tensor<?x8x?x64xbf16>, tensor<?x8x?x64xbf16>, tensor<?x8x?x64xbf16> -> tensor<?x8x?x64xbf16> score_mod {
  ^bb0(%x: f32, %b: index, %h: index, %i: index, %j: index, %cd: tensor<?xi32>, %ct: tensor<8x?xf16>):
    %t = tensor.extract %ct[%h, %j] : tensor<8x?xf16>
    %t32 = arith.extf %t : f16 to f32
    %r = arith.addf %x, %t32 : f32
    fa.yield %r : f32
  } mask_mod {
  ^bb0(%b: index, %h: index, %i: index, %j: index, %cd: tensor<?xi32>, %ct: tensor<8x?xf16>):
    %di = tensor.extract %cd[%i] : tensor<?xi32>
    %dj = tensor.extract %cd[%j] : tensor<?xi32>
    %same = arith.cmpi eq, %di, %dj : i32
    fa.yield %same : i1
  }
  return %o : tensor<?x8x?x64xbf16>
}

// -----

// The backward: each of its kernels takes the captures after the scored
// ABI (58 parameters), and dK/dV and dQ read them.
// CHECK-LABEL: llvm.func @fa_backward_dsum_0(
// CHECK-SAME: %arg57: i64, %arg58: !llvm.ptr<1>, %arg59: i64)
// CHECK-LABEL: llvm.func @fa_backward_dkdv_0(
// CHECK-SAME: %arg57: i64, %[[DOC:[^:]+]]: !llvm.ptr<1>, %[[DS:[^:]+]]: i64)
// CHECK: arith.muli %{{.+}}, %[[DS]] : i64
// CHECK: llvm.load %{{.+}} invariant : !llvm.ptr<1> -> i32
// CHECK-LABEL: llvm.func @fa_backward_dq_0(
// CHECK-SAME: %arg57: i64, %[[DOC:[^:]+]]: !llvm.ptr<1>, %[[DS:[^:]+]]: i64)
// CHECK: arith.muli %{{.+}}, %[[DS]] : i64
// CHECK: llvm.load %{{.+}} invariant : !llvm.ptr<1> -> i32
func.func @grad(%q: tensor<1x1x8x64xbf16>, %lse: tensor<1x1x8xf32>, %doc: tensor<?xi32>) -> tensor<1x1x8x64xbf16> {
  %dq, %dk, %dv = fa.attention_grad %q, %q, %q, %q, %q, %lse captures(%doc : tensor<?xi32>) : tensor<1x1x8x64xbf16>, tensor<1x1x8x64xbf16>, tensor<1x1x8x64xbf16>, tensor<1x1x8x64xbf16>, tensor<1x1x8x64xbf16>, tensor<1x1x8xf32> -> tensor<1x1x8x64xbf16>, tensor<1x1x8x64xbf16>, tensor<1x1x8x64xbf16> mask_mod {
  ^bb0(%b: index, %h: index, %i: index, %j: index, %d: tensor<?xi32>):
    %di = tensor.extract %d[%i] : tensor<?xi32>
    %dj = tensor.extract %d[%j] : tensor<?xi32>
    %same = arith.cmpi eq, %di, %dj : i32
    fa.yield %same : i1
  }
  return %dq : tensor<1x1x8x64xbf16>
}
