// RUN: fa-opt %s -fa-fuse=chip=sm_90a -fa-tile -fa-bounded-softmax -fa-online-softmax -fa-async-copy -convert-fa-to-nvvm | FileCheck %s
// RUN: fa-opt %s -fa-fuse=chip=sm_90a -fa-tile -fa-online-softmax -fa-async-copy -convert-fa-to-nvvm | FileCheck %s --check-prefix=ONLINE

// fa-bounded-softmax's row sum adds P as P V's bf16 operand holds it
// (`update_row_sum ... rounded bf16`): each value's bits plus half a bf16
// place, the lower half cleared, two integer ops, no conversion (a cvt
// before P V's wait would make ptxas serialize the wgmmas). Under the
// running max the row sum adds P as it is.
// CHECK-LABEL: llvm.func @fa_forward_0
// CHECK: %[[B:[0-9]+]] = llvm.bitcast %{{[0-9]+}} : f32 to i32
// CHECK-NEXT: %[[HALF:[a-z0-9_]+]] = arith.constant 32768 : i32
// CHECK-NEXT: %[[U:[0-9]+]] = llvm.add %[[B]], %[[HALF]] : i32
// CHECK-NEXT: %[[MASK:[a-z0-9_-]+]] = arith.constant -65536 : i32
// CHECK-NEXT: %[[R:[0-9]+]] = llvm.and %[[U]], %[[MASK]] : i32
// CHECK-NEXT: %[[P:[0-9]+]] = llvm.bitcast %[[R]] : i32 to f32
// CHECK: arith.addf %{{.*}}, %[[P]] : f32
// ONLINE-LABEL: llvm.func @fa_forward_0
// ONLINE-NOT: -65536
func.func @softcap(%q: tensor<?x8x?x64xbf16>, %k: tensor<?x2x?x64xbf16>, %v: tensor<?x2x?x64xbf16>) -> (tensor<?x8x?x64xbf16>, tensor<?x8x?xf32>) {
  %o, %lse = fa.attention %q, %k, %v {causal = #fa.causal<bottom_right>, softcap = 30.0 : f32} : tensor<?x8x?x64xbf16>, tensor<?x2x?x64xbf16>, tensor<?x2x?x64xbf16> -> tensor<?x8x?x64xbf16>, tensor<?x8x?xf32>
  return %o, %lse : tensor<?x8x?x64xbf16>, tensor<?x8x?xf32>
}
