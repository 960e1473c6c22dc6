// REQUIRES: numpy
// The backward with an additive bias: random f32 [1, Hq, Nq, Nk], and from
// .npy files (the fifth --inputs file) with broadcast dims and other dtypes.

// RUN: rm -rf %t && mkdir -p %t
// RUN: fa-jit --backward --check --bias --shape=2,4,2,40,56,64 | FileCheck %s --check-prefix=RANDOM
// RUN: fa-jit --backward --emit=kernel --bias --shape=2,4,2,40,56,64 | FileCheck %s --check-prefix=RANDOM-TYPE
// RANDOM: variant=gqa,bias compile=
// RANDOM-NEXT: {{^}}dQ rel_err={{.*}} ok
// RANDOM-NEXT: {{^}}dK rel_err={{.*}} ok
// RANDOM-NEXT: {{^}}dV rel_err={{.*}} ok
// RANDOM-TYPE: bias(%{{.*}} : tensor<1x4x?x?xf32>)

// A bf16 [1, 1, Nq, Nk] bias broadcast over B and heads, with bf16 inputs,
// checked by the numpy backward too.
// RUN: %python %S/Inputs/npy_util.py gen %t/a --shape=2,2,2,30,45,32 --dtype=bf16 --bias-shape=1,1,30,45 --bias-dtype=bf16 --grad
// RUN: fa-jit --backward --check --inputs=%t/a/q.npy,%t/a/k.npy,%t/a/v.npy,%t/a/do.npy,%t/a/bias.npy \
// RUN:   --grad-outputs=%t/a/dq.npy,%t/a/dk.npy,%t/a/dv.npy | FileCheck %s --check-prefix=BCAST
// RUN: fa-jit --backward --emit=kernel --inputs=%t/a/q.npy,%t/a/k.npy,%t/a/v.npy,%t/a/do.npy,%t/a/bias.npy | FileCheck %s --check-prefix=BCAST-TYPE
// BCAST: bf16 B=2 Hq=2 Hkv=2 Nq=30 Nk=45 D=32 Dv=32 variant=bias compile=
// BCAST-NEXT: {{^}}dQ rel_err={{.*}} ok
// BCAST-NEXT: {{^}}dK rel_err={{.*}} ok
// BCAST-NEXT: {{^}}dV rel_err={{.*}} ok
// BCAST-TYPE: bias(%{{.*}} : tensor<1x1x?x?xbf16>)
// RUN: %python %S/Inputs/npy_util.py grad-compare %t/a/dq.npy %t/a/dk.npy %t/a/dv.npy %t/a --bias --bound=4e-2 | FileCheck %s --check-prefix=NUMPY
// NUMPY: numpy dQ rel_err={{.*}} ok
// NUMPY-NEXT: numpy dK rel_err={{.*}} ok
// NUMPY-NEXT: numpy dV rel_err={{.*}} ok

// A key-padding-like [B, 1, 1, Nk] f32 bias, MQA, f16 inputs.
// RUN: %python %S/Inputs/npy_util.py gen %t/c --shape=2,4,1,17,33,64 --dtype=f16 --bias-shape=2,1,1,33 --grad
// RUN: fa-jit --backward --check --inputs=%t/c/q.npy,%t/c/k.npy,%t/c/v.npy,%t/c/do.npy,%t/c/bias.npy \
// RUN:   --grad-outputs=%t/c/dq.npy,%t/c/dk.npy,%t/c/dv.npy | FileCheck %s --check-prefix=KEYS
// KEYS: f16 B=2 Hq=4 Hkv=1 Nq=17 Nk=33 D=64 Dv=64 variant=mqa,bias compile=
// KEYS-NEXT: {{^}}dQ rel_err={{.*}} ok
// KEYS-NEXT: {{^}}dK rel_err={{.*}} ok
// KEYS-NEXT: {{^}}dV rel_err={{.*}} ok
// RUN: %python %S/Inputs/npy_util.py grad-compare %t/c/dq.npy %t/c/dk.npy %t/c/dv.npy %t/c --bias --bound=1e-2 | FileCheck %s --check-prefix=NUMPY

// A full f16 [B, Hq, Nq, Nk] bias with f32 inputs.
// RUN: %python %S/Inputs/npy_util.py gen %t/b --shape=2,2,1,17,33,64 --bias-shape=2,2,17,33 --bias-dtype=f16 --grad
// RUN: fa-jit --backward --check --inputs=%t/b/q.npy,%t/b/k.npy,%t/b/v.npy,%t/b/do.npy,%t/b/bias.npy \
// RUN:   --grad-outputs=%t/b/dq.npy,%t/b/dk.npy,%t/b/dv.npy | FileCheck %s --check-prefix=FULL
// FULL: f32 B=2 Hq=2 Hkv=1 Nq=17 Nk=33 D=64 Dv=64 variant=mqa,bias compile=
// FULL-NEXT: {{^}}dQ rel_err={{.*}} ok
// FULL-NEXT: {{^}}dK rel_err={{.*}} ok
// FULL-NEXT: {{^}}dV rel_err={{.*}} ok
// RUN: %python %S/Inputs/npy_util.py grad-compare %t/b/dq.npy %t/b/dk.npy %t/b/dv.npy %t/b --bias | FileCheck %s --check-prefix=NUMPY

// dBias (--dbias, or a file whose fa.attention_grad has a grad_bias result):
// dS summed over the bias's broadcast dims, within the looser of the
// inputs' and the bias's bounds.
// RUN: fa-jit --backward --dbias --bias --check --shape=2,4,2,40,56,64 | FileCheck %s --check-prefix=DBIAS
// RUN: fa-jit --backward --dbias --bias --check --layout=bshd --dtype=bf16 --shape=2,4,2,40,56,64 | FileCheck %s --check-prefix=DBIAS
// DBIAS: variant={{(gqa,)?}}bias,dbias compile=
// DBIAS-NEXT: {{^}}dQ rel_err={{.*}} ok
// DBIAS-NEXT: {{^}}dK rel_err={{.*}} ok
// DBIAS-NEXT: {{^}}dV rel_err={{.*}} ok
// DBIAS-NEXT: {{^}}dBias rel_err={{.*}} ok
// RUN: fa-jit %S/Inputs/backward-dbias.mlir --check | FileCheck %s --check-prefix=DBIAS-FILE
// A file holding the forward with a bias: --backward --dbias takes the
// bias's gradient too.
// RUN: fa-jit %S/../gpu/Inputs/bias-bcast-bf16.mlir --backward --dbias --check --shape=2,4,1,30,40,64 | FileCheck %s --check-prefix=DBIAS-FWD-FILE
// DBIAS-FWD-FILE: bf16 B=2 Hq=4 Hkv=1 Nq=30 Nk=40 D=64 Dv=64 variant={{.*}}bias,dbias compile=
// DBIAS-FWD-FILE: dBias rel_err=
// DBIAS-FILE: f16 B=2 Hq=4 Hkv=2 Nq=20 Nk=30 D=64 Dv=64 variant=gqa,causal=bottom_right,bias,dbias compile=
// DBIAS-FILE-NEXT: {{^}}dQ rel_err={{.*}} ok
// DBIAS-FILE-NEXT: {{^}}dK rel_err={{.*}} ok
// DBIAS-FILE-NEXT: {{^}}dV rel_err={{.*}} ok
// DBIAS-FILE-NEXT: {{^}}dBias rel_err={{.*}} ok
// RUN: fa-jit --backward --dbias --check --inputs=%t/a/q.npy,%t/a/k.npy,%t/a/v.npy,%t/a/do.npy,%t/a/bias.npy \
// RUN:   --grad-outputs=%t/a/dq.npy,%t/a/dk.npy,%t/a/dv.npy,%t/a/dbias.npy | FileCheck %s --check-prefix=DBIAS
// RUN: %python %S/Inputs/npy_util.py grad-compare %t/a/dq.npy %t/a/dk.npy %t/a/dv.npy %t/a --bias \
// RUN:   --dbias=%t/a/dbias.npy --bound=4e-2 | FileCheck %s --check-prefix=NUMPY-DBIAS
// NUMPY-DBIAS: numpy dQ rel_err={{.*}} ok
// NUMPY-DBIAS-NEXT: numpy dK rel_err={{.*}} ok
// NUMPY-DBIAS-NEXT: numpy dV rel_err={{.*}} ok
// NUMPY-DBIAS-NEXT: numpy dBias rel_err={{.*}} ok
