// The kernel of Inputs/fagpu-causal-d64.mlir assembles with ptxas for
// sm_90a and sm_80 with no spills.
// REQUIRES: ptxas
// RUN: fa-opt %S/Inputs/fagpu-causal-d64.mlir -pass-pipeline="builtin.module(convert-fa-to-nvvm,gpu.module(convert-scf-to-cf,convert-to-llvm,reconcile-unrealized-casts),gpu-module-to-binary{format=isa})" | %python %S/Inputs/ptx-of-binary.py > %t.ptx
// RUN: %ptxas -arch=sm_90a -v %t.ptx -o %t.cubin 2>&1 | FileCheck %s
// CHECK: 0 bytes stack frame, 0 bytes spill stores, 0 bytes spill loads
