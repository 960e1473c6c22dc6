// RUN: fa-opt %s -fa-fuse="chip=sm_90a exp2-fma=2" | FileCheck %s --check-prefix=FUSE
// RUN: fa-opt %s -fa-fuse="chip=sm_90a exp2-fma=0" | FileCheck %s --check-prefix=NONE
// RUN: fa-opt %s -fa-fuse="chip=sm_90a exp2-fma=2" -fa-tile -fa-bounded-softmax -fa-online-softmax -fa-async-copy -convert-fa-to-nvvm=chip=sm_90a | FileCheck %s
// RUN: not fa-opt %s -fa-fuse="chip=sm_90a exp2-fma=9" 2>&1 | FileCheck %s --check-prefix=BAD
// BAD: fa-fuse: exp2-fma must be -1 (the default) or 0 to 8, got 9

// fa-fuse's exp2-fma: of every 8 values of P a thread computes, this many
// take a polynomial on the FMA pipe (KernelBuilder::exp2Fma), the others
// the MUFU's ex2, which softcap's tanh uses twice more per score.
// FUSE: gpu.func @fa_forward_0
// FUSE-SAME: fa.exp2_fma = 2 : i64
// NONE: gpu.func @fa_forward_0
// NONE-NOT: fa.exp2_fma

// Values 0 and 1 of each 8: 2^x = 2^j 2^f, j = round(x) in the low bits of
// x + 1.5 * 2^23 (x at least -127.5: -inf gives a negative exponent, which
// the integer max makes 0; max.NaN keeps NaN), 2^f a degree-5 polynomial
// in f = x - j, 2^j added to its exponent bits.
// CHECK-LABEL: llvm.func @fa_forward_0
// CHECK: %[[LO:.+]] = arith.constant -1.275000e+02 : f32
// CHECK-NEXT: %[[XC:.+]] = arith.maximumf %[[X:.+]], %[[LO]] : f32
// CHECK-NEXT: %[[MAGIC:.+]] = arith.constant 0x4B400000 : f32
// CHECK-NEXT: %[[T:.+]] = arith.addf %[[XC]], %[[MAGIC]] : f32
// CHECK-NEXT: %[[MAGIC2:.+]] = arith.constant 0x4B400000 : f32
// CHECK-NEXT: %[[J:.+]] = arith.subf %[[T]], %[[MAGIC2]] : f32
// CHECK-NEXT: %[[F:.+]] = arith.subf %[[XC]], %[[J]] : f32
// CHECK-NEXT: %[[C5:.+]] = arith.constant 0.0013264661 : f32
// CHECK-NEXT: %[[C4:.+]] = arith.constant 0.00967149063 : f32
// CHECK-NEXT: %[[P4:.+]] = math.fma %[[C5]], %[[F]], %[[C4]] : f32
// CHECK-NEXT: %[[C3:.+]] = arith.constant 0.0555073358 : f32
// CHECK-NEXT: %[[P3:.+]] = math.fma %[[P4]], %[[F]], %[[C3]] : f32
// CHECK-NEXT: %[[C2:.+]] = arith.constant 0.240222424 : f32
// CHECK-NEXT: %[[P2:.+]] = math.fma %[[P3]], %[[F]], %[[C2]] : f32
// CHECK-NEXT: %[[C1:.+]] = arith.constant 6.931470e-01 : f32
// CHECK-NEXT: %[[P1:.+]] = math.fma %[[P2]], %[[F]], %[[C1]] : f32
// CHECK-NEXT: %[[C0:.+]] = arith.constant 1.000000e+00 : f32
// CHECK-NEXT: %[[P:.+]] = math.fma %[[P1]], %[[F]], %[[C0]] : f32
// CHECK-NEXT: %[[S:.+]] = arith.constant 23 : i32
// CHECK-NEXT: %[[TB:.+]] = llvm.bitcast %[[T]] : f32 to i32
// CHECK-NEXT: %[[E:.+]] = llvm.shl %[[TB]], %[[S]] : i32
// CHECK-NEXT: %[[PB:.+]] = llvm.bitcast %[[P]] : f32 to i32
// CHECK-NEXT: %[[SUM:.+]] = llvm.add %[[PB]], %[[E]] : i32
// CHECK-NEXT: %[[ZERO:.+]] = arith.constant 0 : i32
// CHECK-NEXT: %[[R:.+]] = arith.maxsi %[[SUM]], %[[ZERO]] : i32
// CHECK-NEXT: llvm.bitcast %[[R]] : i32 to f32
// CHECK: arith.maximumf
// Values 2 to 7 on the MUFU, then 8 and 9 again on the FMA pipe.
// CHECK-NOT: arith.maximumf
// CHECK-COUNT-6: math.exp2
// CHECK-NEXT: arith.constant -1.275000e+02 : f32
// CHECK-NEXT: arith.maximumf
func.func @softcap(%q: tensor<1x2x?x64xbf16>) -> tensor<1x2x?x64xbf16> {
  %o = fa.attention %q, %q, %q {softcap = 30.0 : f32} : tensor<1x2x?x64xbf16>, tensor<1x2x?x64xbf16>, tensor<1x2x?x64xbf16> -> tensor<1x2x?x64xbf16>
  return %o : tensor<1x2x?x64xbf16>
}
