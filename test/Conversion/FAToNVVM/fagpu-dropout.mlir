// RUN: fa-opt %s -fa-fuse=chip=sm_90a -fa-tile -fa-online-softmax -fa-async-copy -convert-fa-to-nvvm | FileCheck %s

// Dropout on the kernel-level IR: the seed is the ABI's last parameter (an
// i64 scalar). The thread's 32 probabilities (one m-tile, 64 keys) each get
// their Philox4x32-10 keep (1) or drop (0) on (j, i, h, b), 10 rounds of two
// mului_extended, after the row sum took them undropped; 1 / (1 - p) scales
// O with 1 / l after the loop.

// CHECK-LABEL: llvm.func @fa_forward_0(
// CHECK-SAME: %{{.+}}: i32, %[[SEED:arg24]]: i64)
// CHECK: scf.for
// CHECK-NOT: arith.mului_extended
// CHECK: arith.trunci %[[SEED]] : i64 to i32
// CHECK-COUNT-640: arith.mului_extended
// CHECK-NOT: arith.mului_extended
// CHECK: scf.yield
// CHECK: arith.constant 1.33333337 : f32
func.func @dropout(%q: tensor<?x4x?x64xbf16>, %k: tensor<?x2x?x64xbf16>, %v: tensor<?x2x?x64xbf16>, %seed: i64) -> tensor<?x4x?x64xbf16> {
  %o = fa.attention %q, %k, %v dropout_seed(%seed) {dropout_p = 2.500000e-01 : f32} : tensor<?x4x?x64xbf16>, tensor<?x2x?x64xbf16>, tensor<?x2x?x64xbf16> -> tensor<?x4x?x64xbf16>
  return %o : tensor<?x4x?x64xbf16>
}
