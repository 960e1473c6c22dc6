// The forward kernel with dropout (the scored path plus the Philox stream
// per probability) assembles with ptxas for sm_80 and sm_90a at D = 64 and
// 128 with no spills, alone and with bias.
// REQUIRES: ptxas
// RUN: split-file %s %t
// RUN: fa-opt %t/bf16-64.mlir -fa-pipeline-cuda=chip=sm_90a | %python %S/Inputs/ptx-of-binary.py > %t/90a.bf16-64.ptx
// RUN: %ptxas -arch=sm_90a -v %t/90a.bf16-64.ptx -o %t/90a.bf16-64.cubin 2>&1 | FileCheck %s
// RUN: fa-opt %t/bf16-64.mlir -fa-pipeline-cuda=chip=sm_80 | %python %S/Inputs/ptx-of-binary.py > %t/80.bf16-64.ptx
// RUN: %ptxas -arch=sm_80 -v %t/80.bf16-64.ptx -o %t/80.bf16-64.cubin 2>&1 | FileCheck %s
// RUN: fa-opt %t/f16-128.mlir -fa-pipeline-cuda=chip=sm_90a | %python %S/Inputs/ptx-of-binary.py > %t/90a.f16-128.ptx
// RUN: %ptxas -arch=sm_90a -v %t/90a.f16-128.ptx -o %t/90a.f16-128.cubin 2>&1 | FileCheck %s
// RUN: fa-opt %t/f16-128.mlir -fa-pipeline-cuda=chip=sm_80 | %python %S/Inputs/ptx-of-binary.py > %t/80.f16-128.ptx
// RUN: %ptxas -arch=sm_80 -v %t/80.f16-128.ptx -o %t/80.f16-128.cubin 2>&1 | FileCheck %s
// RUN: fa-opt %t/bf16-128-bias.mlir -fa-pipeline-cuda=chip=sm_90a | %python %S/Inputs/ptx-of-binary.py > %t/90a.bf16-128-bias.ptx
// RUN: %ptxas -arch=sm_90a -v %t/90a.bf16-128-bias.ptx -o %t/90a.bf16-128-bias.cubin 2>&1 | FileCheck %s
// RUN: fa-opt %t/bf16-128-bias.mlir -fa-pipeline-cuda=chip=sm_80 | %python %S/Inputs/ptx-of-binary.py > %t/80.bf16-128-bias.ptx
// RUN: %ptxas -arch=sm_80 -v %t/80.bf16-128-bias.ptx -o %t/80.bf16-128-bias.cubin 2>&1 | FileCheck %s
// RUN: FileCheck %s --check-prefix=PTX < %t/90a.f16-128.ptx

// CHECK: Compiling entry function 'fa_forward_0'
// CHECK: {{^ +}}0 bytes stack frame, 0 bytes spill stores, 0 bytes spill loads
// CHECK-NOT: bytes spill

// The kernel-level IR: the seed follows the 24 parameters of the plain
// forward, and the TMA maps of Q, K and V follow it (the warp-specialized
// kernel); Philox's 32 x 32 -> 64 multiplies.
// PTX: .target sm_90a
// PTX: .visible .entry fa_forward_0(
// PTX: .param .u64 fa_forward_0_param_24,
// PTX-NEXT: .param .align 64 .b8 fa_forward_0_param_25[128],
// PTX-NEXT: .param .align 64 .b8 fa_forward_0_param_26[128],
// PTX-NEXT: .param .align 64 .b8 fa_forward_0_param_27[128]
// PTX-NEXT: )
// PTX-DAG: mul.hi.u32
// PTX-DAG: wgmma.mma_async.sync.aligned.m64n{{[0-9]+}}k16.f32.f16.f16

//--- bf16-64.mlir
func.func @f(%q: tensor<?x8x?x64xbf16>, %k: tensor<?x2x?x64xbf16>, %v: tensor<?x2x?x64xbf16>, %seed: i64) -> (tensor<?x8x?x64xbf16>, tensor<?x8x?xf32>) {
  %o, %l = fa.attention %q, %k, %v dropout_seed(%seed) {causal = #fa.causal<bottom_right>, dropout_p = 2.000000e-01 : f32} : tensor<?x8x?x64xbf16>, tensor<?x2x?x64xbf16>, tensor<?x2x?x64xbf16> -> tensor<?x8x?x64xbf16>, tensor<?x8x?xf32>
  return %o, %l : tensor<?x8x?x64xbf16>, tensor<?x8x?xf32>
}

//--- f16-128.mlir
func.func @f(%q: tensor<?x8x?x128xf16>, %k: tensor<?x8x?x128xf16>, %v: tensor<?x8x?x128xf16>, %seed: i64) -> (tensor<?x8x?x128xf16>, tensor<?x8x?xf32>) {
  %o, %l = fa.attention %q, %k, %v dropout_seed(%seed) {dropout_p = 1.000000e-01 : f32, window = array<i64: 64, 16>} : tensor<?x8x?x128xf16>, tensor<?x8x?x128xf16>, tensor<?x8x?x128xf16> -> tensor<?x8x?x128xf16>, tensor<?x8x?xf32>
  return %o, %l : tensor<?x8x?x128xf16>, tensor<?x8x?xf32>
}

//--- bf16-128-bias.mlir
func.func @f(%q: tensor<?x8x?x128xbf16>, %k: tensor<?x2x?x128xbf16>, %v: tensor<?x2x?x128xbf16>, %b: tensor<?x8x?x?xbf16>, %seed: i64) -> tensor<?x8x?x128xbf16> {
  %o = fa.attention %q, %k, %v bias(%b : tensor<?x8x?x?xbf16>) dropout_seed(%seed) {causal = #fa.causal<bottom_right>, dropout_p = 5.000000e-01 : f32} : tensor<?x8x?x128xbf16>, tensor<?x2x?x128xbf16>, tensor<?x2x?x128xbf16> -> tensor<?x8x?x128xbf16>
  return %o : tensor<?x8x?x128xbf16>
}
