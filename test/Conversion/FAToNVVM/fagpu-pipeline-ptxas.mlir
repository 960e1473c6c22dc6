// fa-pipeline-cuda: the forward kernels fa-tile writes in
// fagpu ops assemble with ptxas for sm_90a and sm_80 with no spills, at
// the default tiles of D = 32, 64, 80 (persistent), 96 and 128 under a
// causal mask, and 256 with a window (wgmma with a producer warpgroup by
// default, and without: fwd-warp-specialize=0; D = 32, 80 and 96 in tiles
// padded to 64 and 128 columns; mma.sync on sm_80).
// REQUIRES: ptxas
// RUN: split-file %s %t
// RUN: fa-opt %t/d32.mlir -fa-pipeline-cuda="chip=sm_90a" | %python %S/Inputs/ptx-of-binary.py > %t/d32.ptx
// RUN: %ptxas -arch=sm_90a -v %t/d32.ptx -o %t/d32.cubin 2>&1 | FileCheck %s
// RUN: fa-opt %t/d64.mlir -fa-pipeline-cuda="chip=sm_90a fwd-warp-specialize=0" | %python %S/Inputs/ptx-of-binary.py > %t/d64.ptx
// RUN: %ptxas -arch=sm_90a -v %t/d64.ptx -o %t/d64.cubin 2>&1 | FileCheck %s
// With fa-warp-specialize (128 query rows: two consumer warpgroups and one
// CTA an SM): no spills, registers moved between the roles (the producer
// keeps 24 with TMA, 40 with cp.async or, as here, a causal grid's sorted
// tail to decode).
// RUN: fa-opt %t/d64.mlir -fa-pipeline-cuda="chip=sm_90a" | %python %S/Inputs/ptx-of-binary.py > %t/d64-ws.ptx
// RUN: %ptxas -arch=sm_90a -v %t/d64-ws.ptx -o %t/d64-ws.cubin 2>&1 | FileCheck %s
// RUN: FileCheck %s --check-prefix=WS64 < %t/d64-ws.ptx
// RUN: fa-opt %t/d128.mlir -fa-pipeline-cuda="chip=sm_90a" | %python %S/Inputs/ptx-of-binary.py > %t/d128-ws.ptx
// RUN: %ptxas -arch=sm_90a -v %t/d128-ws.ptx -o %t/d128-ws.cubin 2>&1 | FileCheck %s
// RUN: fa-opt %t/d256.mlir -fa-pipeline-cuda="chip=sm_90a" | %python %S/Inputs/ptx-of-binary.py > %t/d256-ws.ptx
// RUN: %ptxas -arch=sm_90a -v %t/d256-ws.ptx -o %t/d256-ws.cubin 2>&1 | FileCheck %s
// RUN: fa-opt %t/d64.mlir -fa-pipeline-cuda="chip=sm_90a fwd-tma=0" | %python %S/Inputs/ptx-of-binary.py > %t/d64-ws-cp.ptx
// RUN: %ptxas -arch=sm_90a -v %t/d64-ws-cp.ptx -o %t/d64-ws-cp.cubin 2>&1 | FileCheck %s
// RUN: FileCheck %s --check-prefix=WS64CP < %t/d64-ws-cp.ptx
// One consumer warpgroup (64 query rows): two CTAs an SM.
// RUN: fa-opt %t/d64.mlir -fa-pipeline-cuda="chip=sm_90a block-q=64" | %python %S/Inputs/ptx-of-binary.py > %t/d64-ws1.ptx
// RUN: %ptxas -arch=sm_90a -v %t/d64-ws1.ptx -o %t/d64-ws1.cubin 2>&1 | FileCheck %s
// RUN: FileCheck %s --check-prefix=WS64ONE < %t/d64-ws1.ptx
// WS64: .param .align 64 .b8 fa_forward_0_param_{{[0-9]+}}[128]
// WS64: .maxnreg 168
// WS64: setmaxnreg.inc.sync.aligned.u32 232;
// WS64: setmaxnreg.dec.sync.aligned.u32 40;
// WS64: cp.async.bulk.tensor.5d.shared::cluster.global.tile.mbarrier::complete_tx::bytes
// WS64CP: .maxnreg 168
// WS64CP: setmaxnreg.inc.sync.aligned.u32 232;
// WS64CP: setmaxnreg.dec.sync.aligned.u32 40;
// WS64CP-NOT: cp.async.bulk.tensor
// WS64ONE: .maxnreg 128
// WS64ONE: setmaxnreg.inc.sync.aligned.u32 232;
// WS64ONE: setmaxnreg.dec.sync.aligned.u32 24;
// With fa-overlap-softmax (D = 64 and 128, two stages, no producer
// warpgroup): no spills, and no wgmma serialized by ptxas.
// RUN: fa-opt %t/d64.mlir -fa-pipeline-cuda="chip=sm_90a fwd-overlap=true fwd-warp-specialize=0" | %python %S/Inputs/ptx-of-binary.py > %t/d64.ov.ptx
// RUN: %ptxas -arch=sm_90a -v %t/d64.ov.ptx -o %t/d64.ov.cubin 2>&1 | FileCheck %s --check-prefixes=CHECK,OVERLAP
// RUN: fa-opt %t/d128.mlir -fa-pipeline-cuda="chip=sm_90a fwd-overlap=true fwd-warp-specialize=0 kv-stages=2" | %python %S/Inputs/ptx-of-binary.py > %t/d128.ov.ptx
// RUN: %ptxas -arch=sm_90a -v %t/d128.ov.ptx -o %t/d128.ov.cubin 2>&1 | FileCheck %s --check-prefixes=CHECK,OVERLAP
// RUN: fa-opt %t/d64.mlir -fa-pipeline-cuda="chip=sm_80" | %python %S/Inputs/ptx-of-binary.py > %t/d64.80.ptx
// RUN: %ptxas -arch=sm_80 -v %t/d64.80.ptx -o %t/d64.80.cubin 2>&1 | FileCheck %s
// RUN: fa-opt %t/d96.mlir -fa-pipeline-cuda="chip=sm_90a" | %python %S/Inputs/ptx-of-binary.py > %t/d96.ptx
// RUN: %ptxas -arch=sm_90a -v %t/d96.ptx -o %t/d96.cubin 2>&1 | FileCheck %s
// RUN: fa-opt %t/d96.mlir -fa-pipeline-cuda="chip=sm_90a fwd-warp-specialize=0" | %python %S/Inputs/ptx-of-binary.py > %t/d96.nows.ptx
// RUN: %ptxas -arch=sm_90a -v %t/d96.nows.ptx -o %t/d96.nows.cubin 2>&1 | FileCheck %s
// RUN: fa-opt %t/d96.mlir -fa-pipeline-cuda="chip=sm_80" | %python %S/Inputs/ptx-of-binary.py > %t/d96.80.ptx
// RUN: %ptxas -arch=sm_80 -v %t/d96.80.ptx -o %t/d96.80.cubin 2>&1 | FileCheck %s
// RUN: fa-opt %t/d80.mlir -fa-pipeline-cuda="chip=sm_90a" | %python %S/Inputs/ptx-of-binary.py > %t/d80.ptx
// RUN: %ptxas -arch=sm_90a -v %t/d80.ptx -o %t/d80.cubin 2>&1 | FileCheck %s
// RUN: fa-opt %t/d128.mlir -fa-pipeline-cuda="chip=sm_90a fwd-warp-specialize=0" | %python %S/Inputs/ptx-of-binary.py > %t/d128.ptx
// RUN: %ptxas -arch=sm_90a -v %t/d128.ptx -o %t/d128.cubin 2>&1 | FileCheck %s
// RUN: fa-opt %t/d256.mlir -fa-pipeline-cuda="chip=sm_90a fwd-warp-specialize=0" | %python %S/Inputs/ptx-of-binary.py > %t/d256.ptx
// RUN: %ptxas -arch=sm_90a -v %t/d256.ptx -o %t/d256.cubin 2>&1 | FileCheck %s
// CHECK: Compiling entry function 'fa_forward_0'
// OVERLAP-NOT: Potential Performance Loss
// CHECK: {{^ +}}0 bytes stack frame, 0 bytes spill stores, 0 bytes spill loads

//--- d32.mlir
func.func @f(%q: tensor<?x8x?x32xbf16>, %k: tensor<?x8x?x32xbf16>, %v: tensor<?x8x?x32xbf16>) -> tensor<?x8x?x32xbf16> {
  %o = fa.attention %q, %k, %v : tensor<?x8x?x32xbf16>, tensor<?x8x?x32xbf16>, tensor<?x8x?x32xbf16> -> tensor<?x8x?x32xbf16>
  return %o : tensor<?x8x?x32xbf16>
}
//--- d64.mlir
func.func @f(%q: tensor<?x8x?x64xbf16>, %k: tensor<?x2x?x64xbf16>, %v: tensor<?x2x?x64xbf16>) -> (tensor<?x8x?x64xbf16>, tensor<?x8x?xf32>) {
  %o, %lse = fa.attention %q, %k, %v {causal = #fa.causal<bottom_right>} : tensor<?x8x?x64xbf16>, tensor<?x2x?x64xbf16>, tensor<?x2x?x64xbf16> -> tensor<?x8x?x64xbf16>, tensor<?x8x?xf32>
  return %o, %lse : tensor<?x8x?x64xbf16>, tensor<?x8x?xf32>
}
//--- d80.mlir
func.func @f(%q: tensor<?x8x?x80xbf16>, %k: tensor<?x8x?x80xbf16>, %v: tensor<?x8x?x80xbf16>) -> tensor<?x8x?x80xbf16> {
  %o = fa.attention %q, %k, %v : tensor<?x8x?x80xbf16>, tensor<?x8x?x80xbf16>, tensor<?x8x?x80xbf16> -> tensor<?x8x?x80xbf16>
  return %o : tensor<?x8x?x80xbf16>
}
//--- d96.mlir
func.func @f(%q: tensor<?x8x?x96xf16>, %k: tensor<?x8x?x96xf16>, %v: tensor<?x8x?x96xf16>) -> (tensor<?x8x?x96xf16>, tensor<?x8x?xf32>) {
  %o, %lse = fa.attention %q, %k, %v {causal = #fa.causal<top_left>} : tensor<?x8x?x96xf16>, tensor<?x8x?x96xf16>, tensor<?x8x?x96xf16> -> tensor<?x8x?x96xf16>, tensor<?x8x?xf32>
  return %o, %lse : tensor<?x8x?x96xf16>, tensor<?x8x?xf32>
}
//--- d128.mlir
func.func @f(%q: tensor<?x16x?x128xbf16>, %k: tensor<?x16x?x128xbf16>, %v: tensor<?x16x?x128xbf16>) -> (tensor<?x16x?x128xbf16>, tensor<?x16x?xf32>) {
  %o, %lse = fa.attention %q, %k, %v {causal = #fa.causal<bottom_right>} : tensor<?x16x?x128xbf16>, tensor<?x16x?x128xbf16>, tensor<?x16x?x128xbf16> -> tensor<?x16x?x128xbf16>, tensor<?x16x?xf32>
  return %o, %lse : tensor<?x16x?x128xbf16>, tensor<?x16x?xf32>
}
//--- d256.mlir
func.func @f(%q: tensor<?x4x?x256xbf16>, %k: tensor<?x4x?x256xbf16>, %v: tensor<?x4x?x256xbf16>) -> (tensor<?x4x?x256xbf16>, tensor<?x4x?xf32>) {
  %o, %lse = fa.attention %q, %k, %v {window = array<i64: 256, 0>} : tensor<?x4x?x256xbf16>, tensor<?x4x?x256xbf16>, tensor<?x4x?x256xbf16> -> tensor<?x4x?x256xbf16>, tensor<?x4x?xf32>
  return %o, %lse : tensor<?x4x?x256xbf16>, tensor<?x4x?xf32>
}
