// RUN: fa-opt %s -split-input-file -fa-fuse=chip=sm_90a -fa-tile -fa-online-softmax -fa-async-copy -convert-fa-to-nvvm=chip=sm_90a | FileCheck %s

// A position term of fagpu.map's body (here 2 j - i, a relative position
// with a captured per-head factor) converts to f32 once per tile, at the
// thread's first element (row r, column c), and each element adds its
// constant 2 dc - dr: a 64 x 64 tile over 4 warps holds (r, c), (r, c + 1),
// (r + 8, c), (r + 8, c + 1), then the next 8 columns. The term takes the
// true positions: no read is at a position, so fa-tile's clamps are gone.

// CHECK-LABEL: llvm.func @fa_forward_0(
// CHECK: scf.for
// CHECK: %[[C2:.*]] = arith.muli %{{.*}}, %{{.*}} : index
// CHECK-NEXT: %[[D:.*]] = arith.subi %[[C2]], %{{.*}} : index
// CHECK-NEXT: %[[DI:.*]] = arith.index_cast %[[D]] : index to i64
// CHECK-NEXT: %[[F:.*]] = arith.sitofp %[[DI]] : i64 to f32
// CHECK-NOT: arith.sitofp
// CHECK: %[[SLOPE:.*]] = llvm.load %{{.*}} invariant : !llvm.ptr<1> -> f32
// CHECK: arith.mulf %[[SLOPE]], %[[F]] fastmath<contract> : f32
// CHECK: %[[K1:.*]] = arith.constant 2.000000e+00 : f32
// CHECK-NEXT: %[[F1:.*]] = arith.addf %[[F]], %[[K1]] : f32
// CHECK-NEXT: arith.mulf %{{.*}}, %[[F1]] fastmath<contract> : f32
// CHECK: %[[K2:.*]] = arith.constant -8.000000e+00 : f32
// CHECK-NEXT: arith.addf %[[F]], %[[K2]] : f32
// CHECK: %[[K3:.*]] = arith.constant -6.000000e+00 : f32
// CHECK-NEXT: arith.addf %[[F]], %[[K3]] : f32
// CHECK: %[[K4:.*]] = arith.constant 1.600000e+01 : f32
// CHECK-NEXT: arith.addf %[[F]], %[[K4]] : f32
// CHECK-NOT: arith.sitofp
// CHECK-NOT: arith.minui
// CHECK: llvm.return
func.func @relpos(%q: tensor<1x2x?x64xbf16>, %k: tensor<1x2x?x64xbf16>, %v: tensor<1x2x?x64xbf16>, %rel: tensor<2xf32>) -> tensor<1x2x?x64xbf16> {
  %o = fa.attention %q, %k, %v captures(%rel : tensor<2xf32>) : tensor<1x2x?x64xbf16>, tensor<1x2x?x64xbf16>, tensor<1x2x?x64xbf16> -> tensor<1x2x?x64xbf16> score_mod {
  ^bb0(%s: f32, %b: index, %h: index, %i: index, %j: index, %t: tensor<2xf32>):
    %r = tensor.extract %t[%h] : tensor<2xf32>
    %c2 = arith.constant 2 : index
    %j2 = arith.muli %j, %c2 : index
    %d = arith.subi %j2, %i : index
    %di = arith.index_cast %d : index to i64
    %df = arith.sitofp %di : i64 to f32
    %p = arith.mulf %r, %df : f32
    %y = arith.addf %s, %p : f32
    fa.yield %y : f32
  }
  return %o : tensor<1x2x?x64xbf16>
}

// -----

// A conversion of what is not a position term (j * j; a value the capture
// read, clamped) stays per element: 32 of each per K/V tile.

// CHECK-LABEL: llvm.func @fa_forward_0(
// CHECK: scf.for
// CHECK-COUNT-64: arith.sitofp
// CHECK-NOT: arith.sitofp
// CHECK: llvm.return
func.func @not_terms(%q: tensor<1x2x?x64xbf16>, %k: tensor<1x2x?x64xbf16>, %v: tensor<1x2x?x64xbf16>, %pos: tensor<?xi32>) -> tensor<1x2x?x64xbf16> {
  %o = fa.attention %q, %k, %v captures(%pos : tensor<?xi32>) : tensor<1x2x?x64xbf16>, tensor<1x2x?x64xbf16>, tensor<1x2x?x64xbf16> -> tensor<1x2x?x64xbf16> score_mod {
  ^bb0(%s: f32, %b: index, %h: index, %i: index, %j: index, %t: tensor<?xi32>):
    %jj = arith.muli %j, %j : index
    %ji = arith.index_cast %jj : index to i64
    %jf = arith.sitofp %ji : i64 to f32
    %p = tensor.extract %t[%j] : tensor<?xi32>
    %pf = arith.sitofp %p : i32 to f32
    %x = arith.addf %s, %jf : f32
    %y = arith.addf %x, %pf : f32
    fa.yield %y : f32
  }
  return %o : tensor<1x2x?x64xbf16>
}

// -----

// A term converted to f16 stays per element: f16 would round the sum of the
// first element's value and the constant a second time.

// CHECK-LABEL: llvm.func @fa_forward_0(
// CHECK: scf.for
// CHECK-COUNT-32: arith.sitofp %{{.*}} : i64 to f16
// CHECK-NOT: arith.sitofp
// CHECK: llvm.return
func.func @half(%q: tensor<1x2x?x64xbf16>, %k: tensor<1x2x?x64xbf16>, %v: tensor<1x2x?x64xbf16>) -> tensor<1x2x?x64xbf16> {
  %o = fa.attention %q, %k, %v : tensor<1x2x?x64xbf16>, tensor<1x2x?x64xbf16>, tensor<1x2x?x64xbf16> -> tensor<1x2x?x64xbf16> score_mod {
  ^bb0(%s: f32, %b: index, %h: index, %i: index, %j: index):
    %d = arith.subi %j, %i : index
    %di = arith.index_cast %d : index to i64
    %dh = arith.sitofp %di : i64 to f16
    %df = arith.extf %dh : f16 to f32
    %y = arith.addf %s, %df : f32
    fa.yield %y : f32
  }
  return %o : tensor<1x2x?x64xbf16>
}
