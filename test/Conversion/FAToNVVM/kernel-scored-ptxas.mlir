// The scored forward kernel (bias + ALiBi + score_mod; mask_mod) assembles
// with ptxas for sm_80 and sm_90a at D = 64, 128 and 256 with no spills.
// REQUIRES: ptxas
// RUN: split-file %s %t
// RUN: fa-opt %t/bf16-128.mlir -fa-pipeline-cuda="chip=sm_90a" | %python %S/Inputs/ptx-of-binary.py > %t/90a.bf16-128.ptx
// RUN: %ptxas -arch=sm_90a -v %t/90a.bf16-128.ptx -o %t/90a.bf16-128.cubin 2>&1 | FileCheck %s
// RUN: fa-opt %t/bf16-128.mlir -fa-pipeline-cuda="chip=sm_80" | %python %S/Inputs/ptx-of-binary.py > %t/80.bf16-128.ptx
// RUN: %ptxas -arch=sm_80 -v %t/80.bf16-128.ptx -o %t/80.bf16-128.cubin 2>&1 | FileCheck %s
// RUN: fa-opt %t/f16-64.mlir -fa-pipeline-cuda="chip=sm_90a" | %python %S/Inputs/ptx-of-binary.py > %t/90a.f16-64.ptx
// RUN: %ptxas -arch=sm_90a -v %t/90a.f16-64.ptx -o %t/90a.f16-64.cubin 2>&1 | FileCheck %s
// RUN: fa-opt %t/f16-64.mlir -fa-pipeline-cuda="chip=sm_80" | %python %S/Inputs/ptx-of-binary.py > %t/80.f16-64.ptx
// RUN: %ptxas -arch=sm_80 -v %t/80.f16-64.ptx -o %t/80.f16-64.cubin 2>&1 | FileCheck %s
// RUN: fa-opt %t/f16-128-mask.mlir -fa-pipeline-cuda="chip=sm_90a" | %python %S/Inputs/ptx-of-binary.py > %t/90a.f16-128-mask.ptx
// RUN: %ptxas -arch=sm_90a -v %t/90a.f16-128-mask.ptx -o %t/90a.f16-128-mask.cubin 2>&1 | FileCheck %s
// RUN: fa-opt %t/bf16-64-mask.mlir -fa-pipeline-cuda="chip=sm_80" | %python %S/Inputs/ptx-of-binary.py > %t/80.bf16-64-mask.ptx
// RUN: %ptxas -arch=sm_80 -v %t/80.bf16-64-mask.ptx -o %t/80.bf16-64-mask.cubin 2>&1 | FileCheck %s
// RUN: fa-opt %t/bf16-256.mlir -fa-pipeline-cuda="chip=sm_90a" | %python %S/Inputs/ptx-of-binary.py > %t/90a.bf16-256.ptx
// RUN: %ptxas -arch=sm_90a -v %t/90a.bf16-256.ptx -o %t/90a.bf16-256.cubin 2>&1 | FileCheck %s
// RUN: fa-opt %t/bf16-256.mlir -fa-pipeline-cuda="chip=sm_80" | %python %S/Inputs/ptx-of-binary.py > %t/80.bf16-256.ptx
// RUN: %ptxas -arch=sm_80 -v %t/80.bf16-256.ptx -o %t/80.bf16-256.cubin 2>&1 | FileCheck %s
// RUN: FileCheck %s --check-prefix=PTX < %t/90a.bf16-128.ptx

// CHECK: Compiling entry function 'fa_forward_0'
// CHECK: {{^ +}}0 bytes stack frame, 0 bytes spill stores, 0 bytes spill loads
// CHECK-NOT: bytes spill

// The slope's load (invariant: ld.global.nc), the bias blocks' TMA copies
// (fa-bias-tiles) and each thread's pairs of them, the score_mod's tanh,
// masks and the softmax.
// PTX: .target sm_90a
// PTX: .visible .entry fa_forward_0(
// PTX-DAG: ld.global.nc.b32
// PTX-DAG: cp.async.bulk.tensor.5d.shared::cluster.global.tile.mbarrier::complete_tx::bytes
// PTX-DAG: ld.shared.v2.b16
// PTX-DAG: rcp.approx.ftz.f32
// PTX-DAG: wgmma.mma_async.sync.aligned.m64n{{[0-9]+}}k16.f32.bf16.bf16
// PTX-DAG: ex2.approx

//--- bf16-128.mlir
func.func @f(%q: tensor<?x8x?x128xbf16>, %k: tensor<?x2x?x128xbf16>, %v: tensor<?x2x?x128xbf16>, %b: tensor<?x8x?x?xbf16>, %s: tensor<?x8xf32>) -> tensor<?x8x?x128xbf16> {
  %o = fa.attention %q, %k, %v bias(%b : tensor<?x8x?x?xbf16>) alibi_slopes(%s : tensor<?x8xf32>) {causal = #fa.causal<bottom_right>} : tensor<?x8x?x128xbf16>, tensor<?x2x?x128xbf16>, tensor<?x2x?x128xbf16> -> tensor<?x8x?x128xbf16> score_mod {
  ^bb0(%x: f32, %bb: index, %h: index, %i: index, %j: index):
    %cap = arith.constant 8.000000e+00 : f32
    %xs = arith.divf %x, %cap : f32
    %t = math.tanh %xs : f32
    %c = arith.mulf %t, %cap : f32
    %d = arith.subi %j, %i : index
    %di = arith.index_cast %d : index to i64
    %df = arith.sitofp %di : i64 to f32
    %w = arith.constant 1.000000e-02 : f32
    %rel = arith.mulf %w, %df : f32
    %r = arith.addf %c, %rel : f32
    fa.yield %r : f32
  }
  return %o : tensor<?x8x?x128xbf16>
}
//--- f16-64.mlir
func.func @f(%q: tensor<?x8x?x64xf16>, %k: tensor<?x2x?x64xf16>, %v: tensor<?x2x?x64xf16>, %b: tensor<1x8x1x?xf32>, %s: tensor<8xf32>) -> tensor<?x8x?x64xf16> {
  %o = fa.attention %q, %k, %v bias(%b : tensor<1x8x1x?xf32>) alibi_slopes(%s : tensor<8xf32>) {softcap = 3.000000e+01 : f32, window = array<i64: 64, 16>} : tensor<?x8x?x64xf16>, tensor<?x2x?x64xf16>, tensor<?x2x?x64xf16> -> tensor<?x8x?x64xf16> score_mod {
  ^bb0(%x: f32, %bb: index, %h: index, %i: index, %j: index):
    %cap = arith.constant 8.000000e+00 : f32
    %xs = arith.divf %x, %cap : f32
    %t = math.tanh %xs : f32
    %c = arith.mulf %t, %cap : f32
    %d = arith.subi %j, %i : index
    %di = arith.index_cast %d : index to i64
    %df = arith.sitofp %di : i64 to f32
    %w = arith.constant 1.000000e-02 : f32
    %rel = arith.mulf %w, %df : f32
    %r = arith.addf %c, %rel : f32
    fa.yield %r : f32
  }
  return %o : tensor<?x8x?x64xf16>
}
//--- f16-128-mask.mlir
func.func @f(%q: tensor<?x8x?x128xf16>, %k: tensor<?x2x?x128xf16>, %v: tensor<?x2x?x128xf16>, %b: tensor<?x8x?x?xf16>, %s: tensor<?x8xf32>) -> tensor<?x8x?x128xf16> {
  %o = fa.attention %q, %k, %v bias(%b : tensor<?x8x?x?xf16>) alibi_slopes(%s : tensor<?x8xf32>) {causal = #fa.causal<bottom_right>} : tensor<?x8x?x128xf16>, tensor<?x2x?x128xf16>, tensor<?x2x?x128xf16> -> tensor<?x8x?x128xf16> score_mod {
  ^bb0(%x: f32, %bb: index, %h: index, %i: index, %j: index):
    %cap = arith.constant 8.000000e+00 : f32
    %xs = arith.divf %x, %cap : f32
    %t = math.tanh %xs : f32
    %c = arith.mulf %t, %cap : f32
    %d = arith.subi %j, %i : index
    %di = arith.index_cast %d : index to i64
    %df = arith.sitofp %di : i64 to f32
    %w = arith.constant 1.000000e-02 : f32
    %rel = arith.mulf %w, %df : f32
    %r = arith.addf %c, %rel : f32
    fa.yield %r : f32
  } mask_mod {
  ^bb0(%bb: index, %h: index, %i: index, %j: index):
    %c37 = arith.constant 37 : index
    %di = arith.divui %i, %c37 : index
    %dj = arith.divui %j, %c37 : index
    %same = arith.cmpi eq, %di, %dj : index
    fa.yield %same : i1
  }
  return %o : tensor<?x8x?x128xf16>
}
//--- bf16-64-mask.mlir
func.func @f(%q: tensor<?x8x?x64xbf16>, %k: tensor<?x2x?x64xbf16>, %v: tensor<?x2x?x64xbf16>, %b: tensor<?x8x?x?xbf16>, %s: tensor<?x8xf32>) -> tensor<?x8x?x64xbf16> {
  %o = fa.attention %q, %k, %v bias(%b : tensor<?x8x?x?xbf16>) alibi_slopes(%s : tensor<?x8xf32>) {causal = #fa.causal<bottom_right>} : tensor<?x8x?x64xbf16>, tensor<?x2x?x64xbf16>, tensor<?x2x?x64xbf16> -> tensor<?x8x?x64xbf16> score_mod {
  ^bb0(%x: f32, %bb: index, %h: index, %i: index, %j: index):
    %cap = arith.constant 8.000000e+00 : f32
    %xs = arith.divf %x, %cap : f32
    %t = math.tanh %xs : f32
    %c = arith.mulf %t, %cap : f32
    %d = arith.subi %j, %i : index
    %di = arith.index_cast %d : index to i64
    %df = arith.sitofp %di : i64 to f32
    %w = arith.constant 1.000000e-02 : f32
    %rel = arith.mulf %w, %df : f32
    %r = arith.addf %c, %rel : f32
    fa.yield %r : f32
  } mask_mod {
  ^bb0(%bb: index, %h: index, %i: index, %j: index):
    %c37 = arith.constant 37 : index
    %di = arith.divui %i, %c37 : index
    %dj = arith.divui %j, %c37 : index
    %same = arith.cmpi eq, %di, %dj : index
    fa.yield %same : i1
  }
  return %o : tensor<?x8x?x64xbf16>
}
//--- bf16-256.mlir
func.func @f(%q: tensor<?x8x?x256xbf16>, %k: tensor<?x2x?x256xbf16>, %v: tensor<?x2x?x256xbf16>, %b: tensor<?x8x?x?xbf16>, %s: tensor<?x8xf32>) -> tensor<?x8x?x256xbf16> {
  %o = fa.attention %q, %k, %v bias(%b : tensor<?x8x?x?xbf16>) alibi_slopes(%s : tensor<?x8xf32>) {causal = #fa.causal<bottom_right>} : tensor<?x8x?x256xbf16>, tensor<?x2x?x256xbf16>, tensor<?x2x?x256xbf16> -> tensor<?x8x?x256xbf16> score_mod {
  ^bb0(%x: f32, %bb: index, %h: index, %i: index, %j: index):
    %cap = arith.constant 8.000000e+00 : f32
    %xs = arith.divf %x, %cap : f32
    %t = math.tanh %xs : f32
    %c = arith.mulf %t, %cap : f32
    %d = arith.subi %j, %i : index
    %di = arith.index_cast %d : index to i64
    %df = arith.sitofp %di : i64 to f32
    %w = arith.constant 1.000000e-02 : f32
    %rel = arith.mulf %w, %df : f32
    %r = arith.addf %c, %rel : f32
    fa.yield %r : f32
  }
  return %o : tensor<?x8x?x256xbf16>
}
