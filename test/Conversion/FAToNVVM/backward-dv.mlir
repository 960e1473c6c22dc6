// RUN: fa-opt %s -convert-fa-to-nvvm=chip=sm_80 | %python %S/Inputs/schedule.py | FileCheck %s
// RUN: fa-opt %s -convert-fa-to-nvvm=chip=sm_80 | FileCheck %s --check-prefix=COPY

// Dv < D (DeepSeek's 192 / 128): the kernels work at D's width, with V's
// and dO's tiles zero past Dv (their copies read Dv's 16 chunks of a row and
// zero-fill the rest), so dP = dO V^T and dV = P^T dO are exact. dkdv's two
// passes of 128 and 64 columns store dK and dV, then dK alone (dV is zero
// past Dv). dq: S over 192 columns, dP over the padded 192, dQ 192.
// CHECK-LABEL: llvm.func @fa_backward_dkdv_0
// CHECK: 24 nvvm.cp.async.shared.global
// CHECK: 1 scf.for
// CHECK-NEXT: 1 place
// CHECK-NEXT: 1 scf.for
// CHECK: 24 nvvm.mma.sync
// CHECK: 56 nvvm.mma.sync
// CHECK-NEXT: 2 scf.yield
// CHECK-NEXT: 1 place
// CHECK-NEXT: 4 scf.if
// CHECK-NEXT: 1 scf.for
// CHECK-NEXT: 1 place
// CHECK-NEXT: 1 scf.for
// CHECK: 24 nvvm.mma.sync
// CHECK: 40 nvvm.mma.sync
// CHECK-NEXT: 2 scf.yield
// CHECK-NEXT: 1 place
// CHECK-NEXT: 2 scf.if
// CHECK-NEXT: llvm.func @fa_backward_dq_0

// A V chunk is read where its row is below Nk and its column below Dv's 16
// chunks; else 0 bytes (zero fill) from the row's start.
// COPY-LABEL: llvm.func @fa_backward_dkdv_0
// COPY: %[[COLOK:[0-9]+]] = arith.cmpi slt, %{{[0-9]+}}, %c16_i32{{[_0-9]*}} : i32
// COPY-NEXT: %[[OK:[0-9]+]] = arith.andi %{{[0-9]+}}, %[[COLOK]] : i1
// COPY-NEXT: %c0_i32{{[_0-9]*}} = arith.constant 0 : i32
// COPY-NEXT: %{{[0-9]+}} = arith.select %[[OK]], %{{[0-9]+}}, %c0_i32{{[_0-9]*}} : i32
func.func @dv(%q: tensor<1x2x64x192xbf16>, %k: tensor<1x2x64x192xbf16>, %v: tensor<1x2x64x128xbf16>, %o: tensor<1x2x64x128xbf16>, %lse: tensor<1x2x64xf32>) -> (tensor<1x2x64x192xbf16>, tensor<1x2x64x192xbf16>, tensor<1x2x64x128xbf16>) {
  %dq, %dk, %dv = fa.attention_grad %q, %k, %v, %o, %o, %lse : tensor<1x2x64x192xbf16>, tensor<1x2x64x192xbf16>, tensor<1x2x64x128xbf16>, tensor<1x2x64x128xbf16>, tensor<1x2x64x128xbf16>, tensor<1x2x64xf32> -> tensor<1x2x64x192xbf16>, tensor<1x2x64x192xbf16>, tensor<1x2x64x128xbf16>
  return %dq, %dk, %dv : tensor<1x2x64x192xbf16>, tensor<1x2x64x192xbf16>, tensor<1x2x64x128xbf16>
}
