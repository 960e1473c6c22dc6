// The backward kernels assemble with ptxas for sm_80 and sm_90a and use no
// local memory for D = 64 and 128 (softcap, the most registers, included;
// plain D = 128, whose dkdv takes 64-row Q tiles on sm_90a),
// and so do the scored path's (bias, ALiBi, score_mod, mask_mod; four
// kernels with dBias) for D = 32 to 128; in both dQ modes (the dq kernel,
// the default, and bwd-atomic-dq). So do D = 256's (two column passes in
// dkdv): plain, and the scored path with dropout and softcap, but for its
// dBias kernel, which spills a few bytes (ptxas keeps the 16 k-steps' Q and
// dO fragments of D = 256 in flight).
// REQUIRES: ptxas
// RUN: split-file %s %t
// RUN: fa-opt %t/bf16-128-causal-gqa.mlir -fa-pipeline-cuda="chip=sm_90a bwd-atomic-dq=true" | %python %S/Inputs/ptx-of-binary.py > %t/90.128.ptx
// RUN: %ptxas -arch=sm_90a -v %t/90.128.ptx -o %t/90.128.cubin 2>&1 | FileCheck %s
// RUN: fa-opt %t/f16-64-softcap-window.mlir -fa-pipeline-cuda=chip=sm_90a | %python %S/Inputs/ptx-of-binary.py > %t/90.64.ptx
// RUN: %ptxas -arch=sm_90a -v %t/90.64.ptx -o %t/90.64.cubin 2>&1 | FileCheck %s
// RUN: fa-opt %t/f16-128-softcap-causal.mlir -fa-pipeline-cuda="chip=sm_80 bwd-atomic-dq=true" | %python %S/Inputs/ptx-of-binary.py > %t/80.128.ptx
// RUN: %ptxas -arch=sm_80 -v %t/80.128.ptx -o %t/80.128.cubin 2>&1 | FileCheck %s
// RUN: fa-opt %t/bf16-64-mqa-window.mlir -fa-pipeline-cuda=chip=sm_80 | %python %S/Inputs/ptx-of-binary.py > %t/80.64.ptx
// RUN: %ptxas -arch=sm_80 -v %t/80.64.ptx -o %t/80.64.cubin 2>&1 | FileCheck %s
// RUN: FileCheck %s --check-prefix=PTX < %t/90.128.ptx
// RUN: FileCheck %s --check-prefix=NOMMA < %t/90.128.ptx
// RUN: FileCheck %s --check-prefix=ATOM < %t/80.128.ptx
// RUN: fa-opt %t/bf16-128-causal-gqa.mlir -fa-pipeline-cuda="chip=sm_90a bwd-deterministic=true" | %python %S/Inputs/ptx-of-binary.py > %t/det.90.128.ptx
// RUN: %ptxas -arch=sm_90a -v %t/det.90.128.ptx -o %t/det.90.128.cubin 2>&1 | FileCheck %s
// RUN: FileCheck %s --check-prefix=DET < %t/det.90.128.ptx
// RUN: fa-opt %t/f16-128-plain.mlir -fa-pipeline-cuda="chip=sm_90a bwd-deterministic=true" | %python %S/Inputs/ptx-of-binary.py > %t/det.90.128.plain.ptx
// RUN: %ptxas -arch=sm_90a -v %t/det.90.128.plain.ptx -o %t/det.90.128.plain.cubin 2>&1 | FileCheck %s
// RUN: fa-opt %t/f16-128-plain.mlir -fa-pipeline-cuda=chip=sm_90a | %python %S/Inputs/ptx-of-binary.py > %t/90.128.plain.ptx
// RUN: FileCheck %s --check-prefix=PTX < %t/90.128.plain.ptx
// RUN: %ptxas -arch=sm_90a -v %t/90.128.plain.ptx -o %t/90.128.plain.cubin 2>&1 | FileCheck %s
// RUN: fa-opt %t/f16-128-plain.mlir -fa-pipeline-cuda=chip=sm_80 | %python %S/Inputs/ptx-of-binary.py > %t/det.80.128.plain.ptx
// RUN: %ptxas -arch=sm_80 -v %t/det.80.128.plain.ptx -o %t/det.80.128.plain.cubin 2>&1 | FileCheck %s
// RUN: fa-opt %t/f16-64-softcap-window.mlir -fa-pipeline-cuda=chip=sm_80 | %python %S/Inputs/ptx-of-binary.py > %t/det.80.64.ptx
// RUN: %ptxas -arch=sm_80 -v %t/det.80.64.ptx -o %t/det.80.64.cubin 2>&1 | FileCheck %s
// RUN: fa-opt %t/bf16-128-scored-all.mlir -fa-pipeline-cuda=chip=sm_90a | %python %S/Inputs/ptx-of-binary.py > %t/det.scored.ptx
// RUN: %ptxas -arch=sm_90a -v %t/det.scored.ptx -o %t/det.scored.cubin 2>&1 | FileCheck %s --check-prefix=SCOREDDB
// RUN: fa-opt %t/bf16-128-scored-all.mlir -fa-pipeline-cuda=chip=sm_90a | %python %S/Inputs/ptx-of-binary.py > %t/bf16-128-scored-all.sm_90a.ptx
// RUN: %ptxas -arch=sm_90a -v %t/bf16-128-scored-all.sm_90a.ptx -o %t/bf16-128-scored-all.sm_90a.cubin 2>&1 | FileCheck %s --check-prefix=SCOREDDB
// RUN: fa-opt %t/bf16-128-scored-all.mlir -fa-pipeline-cuda="chip=sm_80 bwd-atomic-dq=true" | %python %S/Inputs/ptx-of-binary.py > %t/bf16-128-scored-all.sm_80.ptx
// RUN: %ptxas -arch=sm_80 -v %t/bf16-128-scored-all.sm_80.ptx -o %t/bf16-128-scored-all.sm_80.cubin 2>&1 | FileCheck %s --check-prefix=SCOREDDB
// RUN: fa-opt %t/f16-64-bias-bcast-alibi-bh.mlir -fa-pipeline-cuda=chip=sm_80 | %python %S/Inputs/ptx-of-binary.py > %t/f16-64-bias-bcast-alibi-bh.sm_80.ptx
// RUN: %ptxas -arch=sm_80 -v %t/f16-64-bias-bcast-alibi-bh.sm_80.ptx -o %t/f16-64-bias-bcast-alibi-bh.sm_80.cubin 2>&1 | FileCheck %s --check-prefix=SCORED
// RUN: fa-opt %t/f16-64-bias-bcast-alibi-bh.mlir -fa-pipeline-cuda="chip=sm_90a bwd-atomic-dq=true" | %python %S/Inputs/ptx-of-binary.py > %t/f16-64-bias-bcast-alibi-bh.sm_90a.ptx
// RUN: %ptxas -arch=sm_90a -v %t/f16-64-bias-bcast-alibi-bh.sm_90a.ptx -o %t/f16-64-bias-bcast-alibi-bh.sm_90a.cubin 2>&1 | FileCheck %s --check-prefix=SCORED
// RUN: fa-opt %t/bf16-96-bias-rows-mask-window.mlir -fa-pipeline-cuda=chip=sm_80 | %python %S/Inputs/ptx-of-binary.py > %t/bf16-96-bias-rows-mask-window.sm_80.ptx
// RUN: %ptxas -arch=sm_80 -v %t/bf16-96-bias-rows-mask-window.sm_80.ptx -o %t/bf16-96-bias-rows-mask-window.sm_80.cubin 2>&1 | FileCheck %s --check-prefix=SCOREDDB
// RUN: fa-opt %t/f16-128-alibi-mask-causal.mlir -fa-pipeline-cuda=chip=sm_90a | %python %S/Inputs/ptx-of-binary.py > %t/f16-128-alibi-mask-causal.sm_90a.ptx
// RUN: %ptxas -arch=sm_90a -v %t/f16-128-alibi-mask-causal.sm_90a.ptx -o %t/f16-128-alibi-mask-causal.sm_90a.cubin 2>&1 | FileCheck %s
// RUN: fa-opt %t/bf16-64-bias-softcap-score-mod.mlir -fa-pipeline-cuda=chip=sm_90a | %python %S/Inputs/ptx-of-binary.py > %t/bf16-64-bias-softcap-score-mod.sm_90a.ptx
// RUN: %ptxas -arch=sm_90a -v %t/bf16-64-bias-softcap-score-mod.sm_90a.ptx -o %t/bf16-64-bias-softcap-score-mod.sm_90a.cubin 2>&1 | FileCheck %s --check-prefix=SCORED
// RUN: fa-opt %t/f16-32-bias-scalar.mlir -fa-pipeline-cuda=chip=sm_80 | %python %S/Inputs/ptx-of-binary.py > %t/f16-32-bias-scalar.sm_80.ptx
// RUN: %ptxas -arch=sm_80 -v %t/f16-32-bias-scalar.sm_80.ptx -o %t/f16-32-bias-scalar.sm_80.cubin 2>&1 | FileCheck %s --check-prefix=SCORED

// RUN: fa-opt %t/bf16-256-causal-gqa.mlir -fa-pipeline-cuda=chip=sm_90a | %python %S/Inputs/ptx-of-binary.py > %t/90.256.ptx
// RUN: %ptxas -arch=sm_90a -v %t/90.256.ptx -o %t/90.256.cubin 2>&1 | FileCheck %s
// RUN: fa-opt %t/bf16-256-causal-gqa.mlir -fa-pipeline-cuda="chip=sm_80 bwd-atomic-dq=true" | %python %S/Inputs/ptx-of-binary.py > %t/80.256.ptx
// RUN: %ptxas -arch=sm_80 -v %t/80.256.ptx -o %t/80.256.cubin 2>&1 | FileCheck %s
// RUN: fa-opt %t/f16-256-scored-dropout.mlir -fa-pipeline-cuda=chip=sm_80 | %python %S/Inputs/ptx-of-binary.py > %t/80.256.scored.ptx
// RUN: %ptxas -arch=sm_80 -v %t/80.256.scored.ptx -o %t/80.256.scored.cubin 2>&1 | FileCheck %s --check-prefix=SCORED256
// RUN: fa-opt %t/f16-256-scored-dropout.mlir -fa-pipeline-cuda="chip=sm_90a bwd-atomic-dq=true" | %python %S/Inputs/ptx-of-binary.py > %t/90.256.scored.ptx
// RUN: %ptxas -arch=sm_90a -v %t/90.256.scored.ptx -o %t/90.256.scored.cubin 2>&1 | FileCheck %s --check-prefix=SCORED256
// Three kernels, each without spills.
// CHECK: Compiling entry function 'fa_backward_{{dsum|dkdv|dq_convert|dq}}_0'
// CHECK: {{^ +}}0 bytes stack frame, 0 bytes spill stores, 0 bytes spill loads
// CHECK: Compiling entry function 'fa_backward_{{dsum|dkdv|dq_convert|dq}}_0'
// CHECK: {{^ +}}0 bytes stack frame, 0 bytes spill stores, 0 bytes spill loads
// CHECK: Compiling entry function 'fa_backward_{{dsum|dkdv|dq_convert|dq}}_0'
// CHECK: {{^ +}}0 bytes stack frame, 0 bytes spill stores, 0 bytes spill loads
// CHECK-NOT: bytes spill

// The scored path with dBias: four kernels, each without spills; but where
// mask_mod's or score_mod's index arguments (the block's head and batch)
// are live across dBias's loops (SCOREDDB), its kernel spills a few dozen
// bytes (20 to 80 on 2026-11-25): those are no longer ctaid.y and ctaid.z,
// which ptxas rematerializes, but the values of a branch (unfolded ctaid,
// or the folded grid's remainder and quotient: KernelAbi.h).
// SCORED: Compiling entry function 'fa_backward_{{dsum|dkdv|dq_convert|dq|dbias}}_0'
// SCORED: {{^ +}}0 bytes stack frame, 0 bytes spill stores, 0 bytes spill loads
// SCORED: Compiling entry function 'fa_backward_{{dsum|dkdv|dq_convert|dq|dbias}}_0'
// SCORED: {{^ +}}0 bytes stack frame, 0 bytes spill stores, 0 bytes spill loads
// SCORED: Compiling entry function 'fa_backward_{{dsum|dkdv|dq_convert|dq|dbias}}_0'
// SCORED: {{^ +}}0 bytes stack frame, 0 bytes spill stores, 0 bytes spill loads
// SCORED: Compiling entry function 'fa_backward_{{dsum|dkdv|dq_convert|dq|dbias}}_0'
// SCORED: {{^ +}}0 bytes stack frame, 0 bytes spill stores, 0 bytes spill loads
// SCORED-NOT: bytes spill
// SCOREDDB: Compiling entry function 'fa_backward_dbias_0'
// SCOREDDB: Compiling entry function 'fa_backward_{{dq_convert|dq}}_0'
// SCOREDDB-NEXT: Function properties
// SCOREDDB-NEXT: {{^ +}}0 bytes stack frame, 0 bytes spill stores, 0 bytes spill loads
// SCOREDDB: Compiling entry function 'fa_backward_dkdv_0'
// SCOREDDB-NEXT: Function properties
// SCOREDDB-NEXT: {{^ +}}0 bytes stack frame, 0 bytes spill stores, 0 bytes spill loads
// SCOREDDB: Compiling entry function 'fa_backward_dsum_0'
// SCOREDDB-NEXT: Function properties
// SCOREDDB-NEXT: {{^ +}}0 bytes stack frame, 0 bytes spill stores, 0 bytes spill loads

// D = 256's scored path: dBias assembles; the other three do without
// spills.
// SCORED256: Compiling entry function 'fa_backward_dbias_0'
// SCORED256: Compiling entry function 'fa_backward_{{dq_convert|dq}}_0'
// SCORED256-NEXT: Function properties
// SCORED256-NEXT: {{^ +}}0 bytes stack frame, 0 bytes spill stores, 0 bytes spill loads
// SCORED256: Compiling entry function 'fa_backward_dkdv_0'
// SCORED256-NEXT: Function properties
// SCORED256-NEXT: {{^ +}}0 bytes stack frame, 0 bytes spill stores, 0 bytes spill loads
// SCORED256: Compiling entry function 'fa_backward_dsum_0'
// SCORED256-NEXT: Function properties
// SCORED256-NEXT: {{^ +}}0 bytes stack frame, 0 bytes spill stores, 0 bytes spill loads

// PTX: .target sm_90a
// PTX-DAG: .visible .entry fa_backward_dsum_0(
// PTX-DAG: .visible .entry fa_backward_dkdv_0(
// PTX-DAG: .visible .entry fa_backward_dq_convert_0(
// PTX-DAG: cp.async.cg.shared.global
// dkdv multiplies with wgmma (dsum and dq_convert have no products).
// PTX-DAG: wgmma.mma_async.sync.aligned.m64n64k16.f32.{{bf16.bf16|f16.f16}}
// PTX-DAG: wgmma.mma_async.sync.aligned.m64n128k16.f32.{{bf16.bf16|f16.f16}}
// NOMMA-NOT: mma.sync.aligned
// PTX-DAG: ex2.approx
// PTX-DAG: cp.reduce.async.bulk.global.shared::cta.bulk_group.add.f32
// PTX-NOT: atom.global

// sm_80 adds dQ with atomics.
// ATOM: atom.global.add.f32

// bwd-deterministic: dq instead of dq_convert, and no atomics. (By default
// the plain path at D = 64 and 128 on sm_90a takes atomic dQ: PTX above.)
// DET: .visible .entry fa_backward_dq_0(
// DET-NOT: atom.

//--- f16-128-plain.mlir
func.func @g(%q: tensor<1x16x?x128xf16>, %k: tensor<1x16x?x128xf16>, %v: tensor<1x16x?x128xf16>, %o: tensor<1x16x?x128xf16>, %do: tensor<1x16x?x128xf16>, %lse: tensor<1x16x?xf32>) -> (tensor<1x16x?x128xf16>, tensor<1x16x?x128xf16>, tensor<1x16x?x128xf16>) {
  %dq, %dk, %dv = fa.attention_grad %q, %k, %v, %o, %do, %lse : tensor<1x16x?x128xf16>, tensor<1x16x?x128xf16>, tensor<1x16x?x128xf16>, tensor<1x16x?x128xf16>, tensor<1x16x?x128xf16>, tensor<1x16x?xf32> -> tensor<1x16x?x128xf16>, tensor<1x16x?x128xf16>, tensor<1x16x?x128xf16>
  return %dq, %dk, %dv : tensor<1x16x?x128xf16>, tensor<1x16x?x128xf16>, tensor<1x16x?x128xf16>
}

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

//--- bf16-128-scored-all.mlir
func.func @g(%q: tensor<?x8x?x128xbf16>, %k: tensor<?x2x?x128xbf16>, %v: tensor<?x2x?x128xbf16>, %o: tensor<?x8x?x128xbf16>, %do: tensor<?x8x?x128xbf16>, %lse: tensor<?x8x?xf32>, %bias: tensor<?x8x?x?xbf16>, %s: tensor<8xf32>) -> (tensor<?x8x?x128xbf16>, tensor<?x2x?x128xbf16>, tensor<?x2x?x128xbf16>, tensor<?x8x?x?xbf16>) {
  %dq, %dk, %dv, %db = fa.attention_grad %q, %k, %v, %o, %do, %lse bias(%bias : tensor<?x8x?x?xbf16>) alibi_slopes(%s : tensor<8xf32>) {softcap = 30.0 : f32, causal = #fa.causal<bottom_right>} : tensor<?x8x?x128xbf16>, tensor<?x2x?x128xbf16>, tensor<?x2x?x128xbf16>, tensor<?x8x?x128xbf16>, tensor<?x8x?x128xbf16>, tensor<?x8x?xf32> -> tensor<?x8x?x128xbf16>, tensor<?x2x?x128xbf16>, tensor<?x2x?x128xbf16>, tensor<?x8x?x?xbf16> score_mod {
  ^bb0(%x: f32, %b: index, %h: index, %i: index, %j: index):
    %c = arith.constant 20.0 : f32
    %y = arith.divf %x, %c : f32
    %t = math.tanh %y : f32
    %z = arith.mulf %t, %c : f32
    %d = arith.subi %j, %i : index
    %di = arith.index_cast %d : index to i64
    %df = arith.sitofp %di : i64 to f32
    %w = arith.constant 0.01 : f32
    %rp = arith.mulf %df, %w : f32
    %r = arith.addf %z, %rp : f32
    fa.yield %r : f32
  } mask_mod {
  ^bb0(%b: index, %h: index, %i: index, %j: index):
    %c64 = arith.constant 64 : index
    %di = arith.divui %i, %c64 : index
    %dj = arith.divui %j, %c64 : index
    %same = arith.cmpi eq, %di, %dj : index
    fa.yield %same : i1
  }
  return %dq, %dk, %dv, %db : tensor<?x8x?x128xbf16>, tensor<?x2x?x128xbf16>, tensor<?x2x?x128xbf16>, tensor<?x8x?x?xbf16>
}

//--- f16-64-bias-bcast-alibi-bh.mlir
func.func @g(%q: tensor<?x8x?x64xf16>, %k: tensor<?x2x?x64xf16>, %v: tensor<?x2x?x64xf16>, %o: tensor<?x8x?x64xf16>, %do: tensor<?x8x?x64xf16>, %lse: tensor<?x8x?xf32>, %bias: tensor<1x8x1x?xf32>, %s: tensor<?x8xf32>) -> (tensor<?x8x?x64xf16>, tensor<?x2x?x64xf16>, tensor<?x2x?x64xf16>, tensor<1x8x1x?xf32>) {
  %dq, %dk, %dv, %db = fa.attention_grad %q, %k, %v, %o, %do, %lse bias(%bias : tensor<1x8x1x?xf32>) alibi_slopes(%s : tensor<?x8xf32>)  : tensor<?x8x?x64xf16>, tensor<?x2x?x64xf16>, tensor<?x2x?x64xf16>, tensor<?x8x?x64xf16>, tensor<?x8x?x64xf16>, tensor<?x8x?xf32> -> tensor<?x8x?x64xf16>, tensor<?x2x?x64xf16>, tensor<?x2x?x64xf16>, tensor<1x8x1x?xf32> score_mod {
  ^bb0(%x: f32, %b: index, %h: index, %i: index, %j: index):
    %c = arith.constant 20.0 : f32
    %y = arith.divf %x, %c : f32
    %t = math.tanh %y : f32
    %z = arith.mulf %t, %c : f32
    %d = arith.subi %j, %i : index
    %di = arith.index_cast %d : index to i64
    %df = arith.sitofp %di : i64 to f32
    %w = arith.constant 0.01 : f32
    %rp = arith.mulf %df, %w : f32
    %r = arith.addf %z, %rp : f32
    fa.yield %r : f32
  }
  return %dq, %dk, %dv, %db : tensor<?x8x?x64xf16>, tensor<?x2x?x64xf16>, tensor<?x2x?x64xf16>, tensor<1x8x1x?xf32>
}

//--- bf16-96-bias-rows-mask-window.mlir
func.func @g(%q: tensor<?x8x?x96xbf16>, %k: tensor<?x2x?x96xbf16>, %v: tensor<?x2x?x96xbf16>, %o: tensor<?x8x?x96xbf16>, %do: tensor<?x8x?x96xbf16>, %lse: tensor<?x8x?xf32>, %bias: tensor<?x1x?x1xbf16>) -> (tensor<?x8x?x96xbf16>, tensor<?x2x?x96xbf16>, tensor<?x2x?x96xbf16>, tensor<?x1x?x1xbf16>) {
  %dq, %dk, %dv, %db = fa.attention_grad %q, %k, %v, %o, %do, %lse bias(%bias : tensor<?x1x?x1xbf16>) {window = array<i64: 100, 20>} : tensor<?x8x?x96xbf16>, tensor<?x2x?x96xbf16>, tensor<?x2x?x96xbf16>, tensor<?x8x?x96xbf16>, tensor<?x8x?x96xbf16>, tensor<?x8x?xf32> -> tensor<?x8x?x96xbf16>, tensor<?x2x?x96xbf16>, tensor<?x2x?x96xbf16>, tensor<?x1x?x1xbf16> mask_mod {
  ^bb0(%b: index, %h: index, %i: index, %j: index):
    %c64 = arith.constant 64 : index
    %di = arith.divui %i, %c64 : index
    %dj = arith.divui %j, %c64 : index
    %same = arith.cmpi eq, %di, %dj : index
    fa.yield %same : i1
  }
  return %dq, %dk, %dv, %db : tensor<?x8x?x96xbf16>, tensor<?x2x?x96xbf16>, tensor<?x2x?x96xbf16>, tensor<?x1x?x1xbf16>
}

//--- f16-128-alibi-mask-causal.mlir
func.func @g(%q: tensor<?x8x?x128xf16>, %k: tensor<?x2x?x128xf16>, %v: tensor<?x2x?x128xf16>, %o: tensor<?x8x?x128xf16>, %do: tensor<?x8x?x128xf16>, %lse: tensor<?x8x?xf32>, %s: tensor<8xf32>) -> (tensor<?x8x?x128xf16>, tensor<?x2x?x128xf16>, tensor<?x2x?x128xf16>) {
  %dq, %dk, %dv = fa.attention_grad %q, %k, %v, %o, %do, %lse alibi_slopes(%s : tensor<8xf32>) {causal = #fa.causal<top_left>} : tensor<?x8x?x128xf16>, tensor<?x2x?x128xf16>, tensor<?x2x?x128xf16>, tensor<?x8x?x128xf16>, tensor<?x8x?x128xf16>, tensor<?x8x?xf32> -> tensor<?x8x?x128xf16>, tensor<?x2x?x128xf16>, tensor<?x2x?x128xf16> mask_mod {
  ^bb0(%b: index, %h: index, %i: index, %j: index):
    %c64 = arith.constant 64 : index
    %di = arith.divui %i, %c64 : index
    %dj = arith.divui %j, %c64 : index
    %same = arith.cmpi eq, %di, %dj : index
    fa.yield %same : i1
  }
  return %dq, %dk, %dv : tensor<?x8x?x128xf16>, tensor<?x2x?x128xf16>, tensor<?x2x?x128xf16>
}

//--- bf16-64-bias-softcap-score-mod.mlir
func.func @g(%q: tensor<?x8x?x64xbf16>, %k: tensor<?x2x?x64xbf16>, %v: tensor<?x2x?x64xbf16>, %o: tensor<?x8x?x64xbf16>, %do: tensor<?x8x?x64xbf16>, %lse: tensor<?x8x?xf32>, %bias: tensor<?x8x?x?xf16>, %s: tensor<?x8xf32>) -> (tensor<?x8x?x64xbf16>, tensor<?x2x?x64xbf16>, tensor<?x2x?x64xbf16>, tensor<?x8x?x?xf16>) {
  %dq, %dk, %dv, %db = fa.attention_grad %q, %k, %v, %o, %do, %lse bias(%bias : tensor<?x8x?x?xf16>) alibi_slopes(%s : tensor<?x8xf32>) {softcap = 25.0 : f32, causal = #fa.causal<top_left>} : tensor<?x8x?x64xbf16>, tensor<?x2x?x64xbf16>, tensor<?x2x?x64xbf16>, tensor<?x8x?x64xbf16>, tensor<?x8x?x64xbf16>, tensor<?x8x?xf32> -> tensor<?x8x?x64xbf16>, tensor<?x2x?x64xbf16>, tensor<?x2x?x64xbf16>, tensor<?x8x?x?xf16> score_mod {
  ^bb0(%x: f32, %b: index, %h: index, %i: index, %j: index):
    %c = arith.constant 20.0 : f32
    %y = arith.divf %x, %c : f32
    %t = math.tanh %y : f32
    %z = arith.mulf %t, %c : f32
    %d = arith.subi %j, %i : index
    %di = arith.index_cast %d : index to i64
    %df = arith.sitofp %di : i64 to f32
    %w = arith.constant 0.01 : f32
    %rp = arith.mulf %df, %w : f32
    %r = arith.addf %z, %rp : f32
    fa.yield %r : f32
  }
  return %dq, %dk, %dv, %db : tensor<?x8x?x64xbf16>, tensor<?x2x?x64xbf16>, tensor<?x2x?x64xbf16>, tensor<?x8x?x?xf16>
}

//--- f16-32-bias-scalar.mlir
func.func @g(%q: tensor<?x8x?x32xf16>, %k: tensor<?x2x?x32xf16>, %v: tensor<?x2x?x32xf16>, %o: tensor<?x8x?x32xf16>, %do: tensor<?x8x?x32xf16>, %lse: tensor<?x8x?xf32>, %bias: tensor<1x1x1x1xf32>, %s: tensor<8xf32>) -> (tensor<?x8x?x32xf16>, tensor<?x2x?x32xf16>, tensor<?x2x?x32xf16>, tensor<1x1x1x1xf32>) {
  %dq, %dk, %dv, %db = fa.attention_grad %q, %k, %v, %o, %do, %lse bias(%bias : tensor<1x1x1x1xf32>) alibi_slopes(%s : tensor<8xf32>) {causal = #fa.causal<bottom_right>} : tensor<?x8x?x32xf16>, tensor<?x2x?x32xf16>, tensor<?x2x?x32xf16>, tensor<?x8x?x32xf16>, tensor<?x8x?x32xf16>, tensor<?x8x?xf32> -> tensor<?x8x?x32xf16>, tensor<?x2x?x32xf16>, tensor<?x2x?x32xf16>, tensor<1x1x1x1xf32> score_mod {
  ^bb0(%x: f32, %b: index, %h: index, %i: index, %j: index):
    %c = arith.constant 20.0 : f32
    %y = arith.divf %x, %c : f32
    %t = math.tanh %y : f32
    %z = arith.mulf %t, %c : f32
    %d = arith.subi %j, %i : index
    %di = arith.index_cast %d : index to i64
    %df = arith.sitofp %di : i64 to f32
    %w = arith.constant 0.01 : f32
    %rp = arith.mulf %df, %w : f32
    %r = arith.addf %z, %rp : f32
    fa.yield %r : f32
  } mask_mod {
  ^bb0(%b: index, %h: index, %i: index, %j: index):
    %c64 = arith.constant 64 : index
    %di = arith.divui %i, %c64 : index
    %dj = arith.divui %j, %c64 : index
    %same = arith.cmpi eq, %di, %dj : index
    fa.yield %same : i1
  }
  return %dq, %dk, %dv, %db : tensor<?x8x?x32xf16>, tensor<?x2x?x32xf16>, tensor<?x2x?x32xf16>, tensor<1x1x1x1xf32>
}

//--- bf16-256-causal-gqa.mlir
func.func @g(%q: tensor<?x4x?x256xbf16>, %k: tensor<?x2x?x256xbf16>, %v: tensor<?x2x?x256xbf16>, %o: tensor<?x4x?x256xbf16>, %do: tensor<?x4x?x256xbf16>, %lse: tensor<?x4x?xf32>) -> (tensor<?x4x?x256xbf16>, tensor<?x2x?x256xbf16>, tensor<?x2x?x256xbf16>) {
  %dq, %dk, %dv = fa.attention_grad %q, %k, %v, %o, %do, %lse {causal = #fa.causal<top_left>} : tensor<?x4x?x256xbf16>, tensor<?x2x?x256xbf16>, tensor<?x2x?x256xbf16>, tensor<?x4x?x256xbf16>, tensor<?x4x?x256xbf16>, tensor<?x4x?xf32> -> tensor<?x4x?x256xbf16>, tensor<?x2x?x256xbf16>, tensor<?x2x?x256xbf16>
  return %dq, %dk, %dv : tensor<?x4x?x256xbf16>, tensor<?x2x?x256xbf16>, tensor<?x2x?x256xbf16>
}

//--- f16-256-scored-dropout.mlir
func.func @g(%q: tensor<?x4x?x256xf16>, %k: tensor<?x2x?x256xf16>, %v: tensor<?x2x?x256xf16>, %o: tensor<?x4x?x256xf16>, %do: tensor<?x4x?x256xf16>, %lse: tensor<?x4x?xf32>, %bias: tensor<?x4x?x?xf32>, %s: tensor<4xf32>, %seed: i64) -> (tensor<?x4x?x256xf16>, tensor<?x2x?x256xf16>, tensor<?x2x?x256xf16>, tensor<?x4x?x?xf32>) {
  %dq, %dk, %dv, %db = fa.attention_grad %q, %k, %v, %o, %do, %lse bias(%bias : tensor<?x4x?x?xf32>) alibi_slopes(%s : tensor<4xf32>) dropout_seed(%seed) {softcap = 30.0 : f32, window = array<i64: 64, 16>, dropout_p = 0.1 : f32} : tensor<?x4x?x256xf16>, tensor<?x2x?x256xf16>, tensor<?x2x?x256xf16>, tensor<?x4x?x256xf16>, tensor<?x4x?x256xf16>, tensor<?x4x?xf32> -> tensor<?x4x?x256xf16>, tensor<?x2x?x256xf16>, tensor<?x2x?x256xf16>, tensor<?x4x?x?xf32>
  return %dq, %dk, %dv, %db : tensor<?x4x?x256xf16>, tensor<?x2x?x256xf16>, tensor<?x2x?x256xf16>, tensor<?x4x?x?xf32>
}
