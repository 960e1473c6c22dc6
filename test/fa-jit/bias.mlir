// REQUIRES: numpy
// An additive bias: random f32 [1, Hq, Nq, Nk], and from .npy files with
// broadcast dims and other dtypes.

// RUN: rm -rf %t && mkdir -p %t
// RUN: fa-jit --check --lse --bias --shape=2,4,2,40,56,64 | FileCheck %s --check-prefix=RANDOM
// RUN: fa-jit --emit=kernel --bias --shape=2,4,2,40,56,64 | FileCheck %s --check-prefix=RANDOM-TYPE
// RANDOM: variant=gqa,bias,lse
// RANDOM-NEXT: {{^}}O rel_err={{.*}} ok
// RANDOM-NEXT: {{^}}lse rel_err={{.*}} ok
// RANDOM-TYPE: bias(%{{.*}} : tensor<1x4x?x?xf32>)

// A bf16 [1, 1, Nq, Nk] bias broadcast over B and heads, with bf16 inputs.
// RUN: %python %S/Inputs/npy_util.py gen %t/a --shape=2,2,2,30,45,32 --dtype=bf16 --bias-shape=1,1,30,45 --bias-dtype=bf16
// RUN: fa-jit --check --lse --inputs=%t/a/q.npy,%t/a/k.npy,%t/a/v.npy,%t/a/bias.npy --output=%t/a/o.npy | FileCheck %s --check-prefix=BCAST
// RUN: fa-jit --emit=kernel --inputs=%t/a/q.npy,%t/a/k.npy,%t/a/v.npy,%t/a/bias.npy | FileCheck %s --check-prefix=BCAST-TYPE
// BCAST: bf16 B=2 Hq=2 Hkv=2 Nq=30 Nk=45 D=32 Dv=32 variant=bias,lse
// BCAST-NEXT: {{^}}O rel_err={{.*}} ok
// BCAST-NEXT: {{^}}lse rel_err={{.*}} ok
// BCAST-TYPE: bias(%{{.*}} : tensor<1x1x?x?xbf16>)
// RUN: %python %S/Inputs/npy_util.py compare %t/a/o.npy %t/a --bias --bound=2e-2 | FileCheck %s --check-prefix=NUMPY
// NUMPY: numpy O rel_err={{.*}} ok

// A full f16 [B, Hq, Nq, Nk] bias with f32 inputs.
// RUN: %python %S/Inputs/npy_util.py gen %t/b --shape=2,2,1,17,33,64 --bias-shape=2,2,17,33 --bias-dtype=f16
// RUN: fa-jit --check --inputs=%t/b/q.npy,%t/b/k.npy,%t/b/v.npy,%t/b/bias.npy --output=%t/b/o.npy | FileCheck %s --check-prefix=FULL
// FULL: f32 B=2 Hq=2 Hkv=1 Nq=17 Nk=33 D=64 Dv=64 variant=mqa,bias
// FULL-NEXT: {{^}}O rel_err={{.*}} ok
// RUN: %python %S/Inputs/npy_util.py compare %t/b/o.npy %t/b --bias | FileCheck %s --check-prefix=NUMPY
