// Softcap's default kernels on sm_90a (a producer warpgroup, 128 x 128 or
// 128 x 64 tiles) assemble without spills: the tanh of each score is ex2
// and rcp with a multiply, an add, an fma and the sign beside them
// (KernelBuilder::accurateTanh).

// REQUIRES: ptxas
// RUN: fa-jit --target=sm_90a --emit=ptx --dtype=bf16 --shape=1,32,32,1,1,64 --softcap=30 > %t.64.ptx
// RUN: %ptxas -arch=sm_90a -v %t.64.ptx -o %t.cubin 2>&1 | FileCheck %s
// RUN: fa-jit --target=sm_90a --emit=ptx --dtype=bf16 --shape=1,16,16,1,1,128 --softcap=30 --causal=bottom-right --lse > %t.128.ptx
// RUN: %ptxas -arch=sm_90a -v %t.128.ptx -o %t.cubin 2>&1 | FileCheck %s
// RUN: fa-jit --target=sm_90a --emit=ptx --dtype=f16 --shape=1,8,8,1,1,256 --softcap=30 --lse > %t.256.ptx
// RUN: %ptxas -arch=sm_90a -v %t.256.ptx -o %t.cubin 2>&1 | FileCheck %s
// RUN: fa-jit --target=sm_90a --emit=ptx --dtype=bf16 --shape=1,8,8,1,1,192,128 --softcap=30 --window=64,16 > %t.192.ptx
// RUN: %ptxas -arch=sm_90a -v %t.192.ptx -o %t.cubin 2>&1 | FileCheck %s

// CHECK: Compiling entry function 'fa_forward_0'
// CHECK: {{^ +}}0 bytes stack frame, 0 bytes spill stores, 0 bytes spill loads
// CHECK-NOT: bytes spill
