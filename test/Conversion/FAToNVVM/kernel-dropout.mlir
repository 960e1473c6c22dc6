// RUN: fa-opt %s -fa-fuse=chip=sm_90a -fa-async-copy -convert-fa-to-nvvm | FileCheck %s

// Dropout takes the scored path: the seed is the last parameter (after the
// bias and slopes), and each probability is multiplied by its Philox4x32-10
// keep (1) or drop (0) (10 rounds: two mului_extended each) on the counter
// (j, i, h, b), after the row sum took it undropped and before it is packed
// for P V; 1 / (1 - p) scales O with 1 / l.

// CHECK-LABEL: llvm.func @fa_forward_0(
// CHECK-SAME: %arg30: !llvm.ptr<1>, %arg31: i64, %[[SEED:arg32]]: i64)
// The CTA's head and batch (the thread place: ctaid.y and ctaid.z, or the
// folded grid's remainder and quotient).
// CHECK: %[[PLACE:.*]]:2 = scf.if %{{.*}} -> (i32, i32) {
// CHECK: %[[LANE:.*]] = arith.andi %{{.*}}, %c31_i32 : i32
// CHECK: %[[G:.*]] = arith.shrui %[[LANE]], %c2_i32 : i32
// CHECK: %[[TQ:.*]] = arith.andi %[[LANE]], %c3_i32 : i32
// The thread's first row, i = q0 + 16 warp + g.
// CHECK: %[[ROW:.*]] = arith.addi %{{.*}}, %[[G]] : i32
// CHECK: scf.for %[[IV:arg[0-9]+]] = 
// CHECK: %[[KV0:.*]] = arith.index_cast %[[IV]] : index to i32

// The probabilities and the row sums, undropped.
// CHECK: %[[A0:.*]] = math.fma %{{.*}}#0, %{{.*}}, %{{.*}} : f32
// CHECK-NEXT: %[[P0:.*]] = llvm.intr.exp2(%[[A0]]) : (f32) -> f32
// CHECK-NEXT: arith.addf %{{.*}}, %[[P0]] : f32
// CHECK-NOT: mului_extended
// CHECK: %[[A31:.*]] = math.fma %{{.*}}#31, %{{.*}}, %{{.*}} : f32
// CHECK-NEXT: %[[P31:.*]] = llvm.intr.exp2(%[[A31]]) : (f32) -> f32
// CHECK-NEXT: %[[SUM1:.*]] = arith.addf %{{.*}}, %[[P31]] : f32

// The first element's factor: key j = kv0 + 2 tq, row i.
// CHECK-NEXT: %[[C0:.*]] = arith.constant 0 : i32
// CHECK-NEXT: %[[C1:.*]] = arith.constant 1 : i32
// CHECK-NEXT: %[[TQ2:.*]] = arith.shli %[[TQ]], %[[C1]] : i32
// CHECK-NEXT: %[[E:.*]] = arith.addi %[[TQ2]], %[[C0]] : i32
// CHECK-NEXT: arith.constant 0 : i32
// CHECK-NEXT: %[[NT:.*]] = arith.addi %{{.*}}, %[[E]] : i32
// CHECK-NEXT: %[[KEY:.*]] = arith.addi %[[KV0]], %[[NT]] : i32
// CHECK-NEXT: %[[K0:.*]] = arith.trunci %[[SEED]] : i64 to i32
// CHECK-NEXT: %[[C32:.*]] = arith.constant 32 : i64
// CHECK-NEXT: %[[SHI:.*]] = arith.shrui %[[SEED]], %[[C32]] : i64
// CHECK-NEXT: %[[K1:.*]] = arith.trunci %[[SHI]] : i64 to i32
// CHECK-NEXT: %[[M0:.*]] = arith.constant -766435501 : i32
// CHECK-NEXT: %[[L0:.*]], %[[H0:.*]] = arith.mului_extended %[[M0]], %[[KEY]] : i32
// CHECK-NEXT: %[[M1:.*]] = arith.constant -845247145 : i32
// CHECK-NEXT: %[[L1:.*]], %[[H1:.*]] = arith.mului_extended %[[M1]], %[[PLACE]]#0 : i32
// CHECK-NEXT: %[[X0:.*]] = arith.xori %[[H1]], %[[ROW]] : i32
// CHECK-NEXT: arith.xori %[[X0]], %[[K0]] : i32
// CHECK-NEXT: %[[X2:.*]] = arith.xori %[[H0]], %[[PLACE]]#1 : i32
// CHECK-NEXT: arith.xori %[[X2]], %[[K1]] : i32
// CHECK-COUNT-18: arith.mului_extended
// CHECK-NOT: arith.mului_extended
// CHECK: %[[BITS:.*]] = arith.shrui %{{.*}}, %{{.*}} : i32
// CHECK-NEXT: %[[BF:.*]] = arith.uitofp %[[BITS]] : i32 to f32
// CHECK-NEXT: %[[ULP:.*]] = arith.constant 5.96046448E-8 : f32
// CHECK-NEXT: %[[U:.*]] = arith.mulf %[[BF]], %[[ULP]] : f32
// CHECK-NEXT: %[[P:.*]] = arith.constant 2.500000e-01 : f32
// CHECK-NEXT: %[[KEEP:.*]] = arith.cmpf oge, %[[U]], %[[P]] : f32
// CHECK-NEXT: %[[KEPT:.*]] = arith.constant 1.000000e+00 : f32
// CHECK-NEXT: %[[DROP:.*]] = arith.constant 0.000000e+00 : f32
// CHECK-NEXT: %[[Z0:.*]] = arith.select %[[KEEP]], %[[KEPT]], %[[DROP]] : f32
// CHECK-NEXT: %[[PZ0:.*]] = arith.mulf %[[P0]], %[[Z0]] : f32

// 32 elements per thread (one m-tile, 64 keys): 640 multiplies in all.
// CHECK-COUNT-620: arith.mului_extended
// CHECK-NOT: arith.mului_extended
// CHECK: %[[PZ31:.*]] = arith.mulf %[[P31]], %{{.*}} : f32
// l = l * alpha + the undropped sum.
// CHECK: arith.addf %{{.*}}, %[[SUM1]] : f32
// P * Z is what P V reads.
// CHECK: llvm.insertelement %[[PZ0]], %{{.*}} : vector<2xf32>
// CHECK-NOT: arith.mului_extended
// CHECK: nvvm.mma.sync
// The epilogue: O = acc * (1 / (1 - p)) / l.
// CHECK: %[[RP:.*]] = arith.constant 1.33333337 : f32
// CHECK-NEXT: arith.divf %[[RP]], %{{.*}} : f32
func.func @dropout(%q: tensor<?x4x?x64xbf16>, %k: tensor<?x2x?x64xbf16>, %v: tensor<?x2x?x64xbf16>, %seed: i64) -> tensor<?x4x?x64xbf16> {
  %o = fa.attention %q, %k, %v dropout_seed(%seed) {dropout_p = 2.500000e-01 : f32} : tensor<?x4x?x64xbf16>, tensor<?x2x?x64xbf16>, tensor<?x2x?x64xbf16> -> tensor<?x4x?x64xbf16>
  return %o : tensor<?x4x?x64xbf16>
}
