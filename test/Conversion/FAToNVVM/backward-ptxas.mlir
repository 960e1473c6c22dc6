// The backward kernels assemble with ptxas for sm_80 and sm_90a and use no
// local memory for D = 64 and 128 (softcap, the most registers, included).
// REQUIRES: ptxas
// RUN: split-file %s %t
// RUN: fa-opt %t/bf16-128-causal-gqa.mlir -fa-pipeline-cuda=chip=sm_90a | %python %S/Inputs/ptx-of-binary.py > %t/90.128.ptx
// RUN: %ptxas -arch=sm_90a -v %t/90.128.ptx -o %t/90.128.cubin 2>&1 | FileCheck %s
// RUN: fa-opt %t/f16-64-softcap-window.mlir -fa-pipeline-cuda=chip=sm_90a | %python %S/Inputs/ptx-of-binary.py > %t/90.64.ptx
// RUN: %ptxas -arch=sm_90a -v %t/90.64.ptx -o %t/90.64.cubin 2>&1 | FileCheck %s
// RUN: fa-opt %t/f16-128-softcap-causal.mlir -fa-pipeline-cuda=chip=sm_80 | %python %S/Inputs/ptx-of-binary.py > %t/80.128.ptx
// RUN: %ptxas -arch=sm_80 -v %t/80.128.ptx -o %t/80.128.cubin 2>&1 | FileCheck %s
// RUN: fa-opt %t/bf16-64-mqa-window.mlir -fa-pipeline-cuda=chip=sm_80 | %python %S/Inputs/ptx-of-binary.py > %t/80.64.ptx
// RUN: %ptxas -arch=sm_80 -v %t/80.64.ptx -o %t/80.64.cubin 2>&1 | FileCheck %s
// RUN: FileCheck %s --check-prefix=PTX < %t/90.128.ptx

// Three kernels, each without spills.
// CHECK: Compiling entry function 'fa_backward_{{dsum|dkdv|dq}}_0'
// CHECK: {{^ +}}0 bytes stack frame, 0 bytes spill stores, 0 bytes spill loads
// CHECK: Compiling entry function 'fa_backward_{{dsum|dkdv|dq}}_0'
// CHECK: {{^ +}}0 bytes stack frame, 0 bytes spill stores, 0 bytes spill loads
// CHECK: Compiling entry function 'fa_backward_{{dsum|dkdv|dq}}_0'
// CHECK: {{^ +}}0 bytes stack frame, 0 bytes spill stores, 0 bytes spill loads
// CHECK-NOT: bytes spill

// PTX: .target sm_90a
// PTX-DAG: .visible .entry fa_backward_dsum_0(
// PTX-DAG: .visible .entry fa_backward_dkdv_0(
// PTX-DAG: .visible .entry fa_backward_dq_0(
// PTX-DAG: cp.async.cg.shared.global
// PTX-DAG: ldmatrix.sync.aligned.m8n8.x4.shared.b16
// PTX-DAG: ldmatrix.sync.aligned.m8n8.x4.trans.shared.b16
// PTX-DAG: mma.sync.aligned.m16n8k16.row.col.f32.bf16.bf16.f32
// PTX-DAG: ex2.approx
// PTX-NOT: atom.

//--- bf16-128-causal-gqa.mlir
func.func @g(%q: tensor<?x8x?x128xbf16>, %k: tensor<?x2x?x128xbf16>, %v: tensor<?x2x?x128xbf16>, %o: tensor<?x8x?x128xbf16>, %do: tensor<?x8x?x128xbf16>, %lse: tensor<?x8x?xf32>) -> (tensor<?x8x?x128xbf16>, tensor<?x2x?x128xbf16>, tensor<?x2x?x128xbf16>) {
  %dq, %dk, %dv = fa.attention_grad %q, %k, %v, %o, %do, %lse {causal = #fa.causal<bottom_right>} : tensor<?x8x?x128xbf16>, tensor<?x2x?x128xbf16>, tensor<?x2x?x128xbf16>, tensor<?x8x?x128xbf16>, tensor<?x8x?x128xbf16>, tensor<?x8x?xf32> -> tensor<?x8x?x128xbf16>, tensor<?x2x?x128xbf16>, tensor<?x2x?x128xbf16>
  return %dq, %dk, %dv : tensor<?x8x?x128xbf16>, tensor<?x2x?x128xbf16>, tensor<?x2x?x128xbf16>
}

//--- f16-64-softcap-window.mlir
func.func @g(%q: tensor<?x4x?x64xf16>, %k: tensor<?x4x?x64xf16>, %v: tensor<?x4x?x64xf16>, %o: tensor<?x4x?x64xf16>, %do: tensor<?x4x?x64xf16>, %lse: tensor<?x4x?xf32>) -> (tensor<?x4x?x64xf16>, tensor<?x4x?x64xf16>, tensor<?x4x?x64xf16>) {
  %dq, %dk, %dv = fa.attention_grad %q, %k, %v, %o, %do, %lse {softcap = 30.0 : f32, window = array<i64: 100, 20>} : tensor<?x4x?x64xf16>, tensor<?x4x?x64xf16>, tensor<?x4x?x64xf16>, tensor<?x4x?x64xf16>, tensor<?x4x?x64xf16>, tensor<?x4x?xf32> -> tensor<?x4x?x64xf16>, tensor<?x4x?x64xf16>, tensor<?x4x?x64xf16>
  return %dq, %dk, %dv : tensor<?x4x?x64xf16>, tensor<?x4x?x64xf16>, tensor<?x4x?x64xf16>
}

//--- f16-128-softcap-causal.mlir
func.func @g(%q: tensor<?x4x?x128xf16>, %k: tensor<?x1x?x128xf16>, %v: tensor<?x1x?x128xf16>, %o: tensor<?x4x?x128xf16>, %do: tensor<?x4x?x128xf16>, %lse: tensor<?x4x?xf32>) -> (tensor<?x4x?x128xf16>, tensor<?x1x?x128xf16>, tensor<?x1x?x128xf16>) {
  %dq, %dk, %dv = fa.attention_grad %q, %k, %v, %o, %do, %lse {softcap = 20.0 : f32, causal = #fa.causal<top_left>} : tensor<?x4x?x128xf16>, tensor<?x1x?x128xf16>, tensor<?x1x?x128xf16>, tensor<?x4x?x128xf16>, tensor<?x4x?x128xf16>, tensor<?x4x?xf32> -> tensor<?x4x?x128xf16>, tensor<?x1x?x128xf16>, tensor<?x1x?x128xf16>
  return %dq, %dk, %dv : tensor<?x4x?x128xf16>, tensor<?x1x?x128xf16>, tensor<?x1x?x128xf16>
}

//--- bf16-64-mqa-window.mlir
func.func @g(%q: tensor<?x8x?x64xbf16>, %k: tensor<?x1x?x64xbf16>, %v: tensor<?x1x?x64xbf16>, %o: tensor<?x8x?x64xbf16>, %do: tensor<?x8x?x64xbf16>, %lse: tensor<?x8x?xf32>) -> (tensor<?x8x?x64xbf16>, tensor<?x1x?x64xbf16>, tensor<?x1x?x64xbf16>) {
  %dq, %dk, %dv = fa.attention_grad %q, %k, %v, %o, %do, %lse {window = array<i64: 128, 0>} : tensor<?x8x?x64xbf16>, tensor<?x1x?x64xbf16>, tensor<?x1x?x64xbf16>, tensor<?x8x?x64xbf16>, tensor<?x8x?x64xbf16>, tensor<?x8x?xf32> -> tensor<?x8x?x64xbf16>, tensor<?x1x?x64xbf16>, tensor<?x1x?x64xbf16>
  return %dq, %dk, %dv : tensor<?x8x?x64xbf16>, tensor<?x1x?x64xbf16>, tensor<?x1x?x64xbf16>
}
