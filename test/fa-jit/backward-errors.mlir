// REQUIRES: numpy
// Errors of the backward's flags and files: one `fa-jit: error: ...` line
// and exit code 1.

// RUN: rm -rf %t && mkdir -p %t
// RUN: %python %S/Inputs/npy_util.py gen %t --shape=1,2,2,8,9,32 --grad --bias-shape=1,2,8,9
// RUN: %python %S/Inputs/npy_util.py array %t/do-short.npy --shape=1,2,7,32
// RUN: %python %S/Inputs/npy_util.py array %t/do16.npy --shape=1,2,8,32 --dtype=f16

// --inputs takes dO after V, and the bias last.
// RUN: not fa-jit --backward --inputs=%t/q.npy,%t/k.npy,%t/v.npy 2>&1 | FileCheck %s --check-prefix=COUNT
// RUN: not fa-jit --backward --inputs=%t/q.npy,%t/k.npy,%t/v.npy,%t/do.npy,%t/bias.npy,%t/bias.npy 2>&1 | FileCheck %s --check-prefix=COUNT
// COUNT: fa-jit: error: --inputs expects q.npy,k.npy,v.npy,do.npy[,bias.npy] with the backward, got '{{.*}}'
// RUN: not fa-jit --backward --inputs=%t/q.npy,%t/k.npy,%t/v.npy,%t/do-short.npy 2>&1 | FileCheck %s --check-prefix=DO-SHAPE
// DO-SHAPE: fa-jit: error: {{.*}}do-short.npy: expected shape [1, 2, 8, 32], got [1, 2, 7, 32]
// RUN: not fa-jit --backward --inputs=%t/q.npy,%t/k.npy,%t/v.npy,%t/do16.npy 2>&1 | FileCheck %s --check-prefix=DO-DTYPE
// DO-DTYPE: fa-jit: error: {{.*}}do16.npy: expected dtype f32, got f16
// RUN: not fa-jit %S/Inputs/backward-mask-mod.mlir --inputs=%t/q.npy,%t/k.npy,%t/v.npy,%t/do.npy,%t/bias.npy 2>&1 | FileCheck %s --check-prefix=NO-BIAS
// NO-BIAS: fa-jit: error: --inputs: {{.*}}bias.npy is a bias, but the op has no bias operand

// --grad-outputs: three files, and only for the backward.
// RUN: not fa-jit --backward --grad-outputs=%t/dq.npy,%t/dk.npy 2>&1 | FileCheck %s --check-prefix=GRAD-COUNT
// GRAD-COUNT: fa-jit: error: --grad-outputs expects dq.npy,dk.npy,dv.npy[,dbias.npy], got '{{.*}}dk.npy'
// RUN: not fa-jit --grad-outputs=%t/dq.npy,%t/dk.npy,%t/dv.npy 2>&1 | FileCheck %s --check-prefix=GRAD-FWD
// RUN: not fa-jit %S/Inputs/mask-mod.mlir --grad-outputs=%t/dq.npy,%t/dk.npy,%t/dv.npy 2>&1 | FileCheck %s --check-prefix=GRAD-FWD
// GRAD-FWD: fa-jit: error: --grad-outputs needs the backward (--backward, or a file holding fa.attention_grad)

// --dbias: the backward with a bias; four --grad-outputs only with dBias.
// RUN: not fa-jit --backward --dbias 2>&1 | FileCheck %s --check-prefix=DBIAS
// RUN: not fa-jit --dbias --bias 2>&1 | FileCheck %s --check-prefix=DBIAS
// DBIAS: fa-jit: error: --dbias needs the backward (--backward) and a bias (--bias or a bias file)
// RUN: not fa-jit %S/Inputs/backward-score-mod.mlir --dbias 2>&1 | FileCheck %s --check-prefix=DBIAS-GRAD
// DBIAS-GRAD: fa-jit: error: --dbias: the file's fa.attention_grad has no grad_bias result
// RUN: not fa-jit --backward --bias --grad-outputs=%t/dq.npy,%t/dk.npy,%t/dv.npy,%t/db.npy 2>&1 | FileCheck %s --check-prefix=NO-DBIAS
// NO-DBIAS: fa-jit: error: --grad-outputs: the op has no dBias result (give --dbias)

// A file with both passes holds two ops.
// RUN: not fa-jit %S/Inputs/forward-and-grad.mlir 2>&1 | FileCheck %s --check-prefix=BOTH
// BOTH: fa-jit: error: {{.*}}forward-and-grad.mlir: expected exactly one fa.attention or fa.attention_grad, found 2
// BOTH-NEXT: fa-jit: note: {{.*}}forward-and-grad.mlir:{{[0-9]+}}:{{[0-9]+}}: fa.attention here
// BOTH-NEXT: fa-jit: note: {{.*}}forward-and-grad.mlir:{{[0-9]+}}:{{[0-9]+}}: fa.attention_grad here

// The variant flags describe the op: not with a file.
// RUN: not fa-jit %S/Inputs/backward-alibi-batch.mlir --causal=top-left 2>&1 | FileCheck %s --check-prefix=FILE-FLAG
// FILE-FLAG: fa-jit: error: --causal cannot be combined with an input file; the file gives the variant

// GPU: f16 and bf16 only; host-only layouts; --bench on the host.
// RUN: not fa-jit --backward --target=sm_90a --emit=ptx --dtype=f32 --shape=1,1,1,4,4,64 2>&1 | FileCheck %s --check-prefix=GPU-F32
// GPU-F32: error: 'fa.attention_grad' op convert-fa-to-nvvm: element type must be f16 or bf16 on the GPU
// GPU-F32: fa-jit: error: fa-pipeline-cuda failed
// RUN: not fa-jit --backward --bench --shape=1,1,1,4,4,8 2>&1 | FileCheck %s --check-prefix=BENCH-HOST
// BENCH-HOST: fa-jit: error: --bench times GPU kernels; give --target=auto or a chip
