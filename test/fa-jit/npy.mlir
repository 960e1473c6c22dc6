// REQUIRES: numpy
// .npy round trip: inputs written by numpy (f32, and bf16 through
// ml_dtypes), read by fa-jit, O and lse written back and compared with a
// float64 numpy reference.

// RUN: rm -rf %t && mkdir -p %t
// RUN: %python %S/Inputs/npy_util.py gen %t/f32 --shape=2,4,2,37,53,64 --seed=3
// RUN: fa-jit --inputs=%t/f32/q.npy,%t/f32/k.npy,%t/f32/v.npy --check \
// RUN:   --output=%t/f32/o.npy --lse-output=%t/f32/lse.npy | FileCheck %s --check-prefix=F32
// F32: f32 B=2 Hq=4 Hkv=2 Nq=37 Nk=53 D=64 Dv=64 variant=gqa,lse
// F32-NEXT: {{^}}O rel_err={{.*}} ok
// F32-NEXT: {{^}}lse rel_err={{.*}} ok
// RUN: %python %S/Inputs/npy_util.py compare %t/f32/o.npy %t/f32 --lse=%t/f32/lse.npy | FileCheck %s --check-prefix=NUMPY
// NUMPY: numpy O rel_err={{.*}} ok
// NUMPY-NEXT: numpy lse rel_err={{.*}} ok

// bf16 in and out; --dtype agrees with the files.
// RUN: %python %S/Inputs/npy_util.py gen %t/bf16 --shape=1,2,2,64,64,32 --dtype=bf16 --seed=4
// RUN: fa-jit --dtype=bf16 --inputs=%t/bf16/q.npy,%t/bf16/k.npy,%t/bf16/v.npy --output=%t/bf16/o.npy \
// RUN:   | FileCheck %s --check-prefix=BF16
// BF16: bf16 B=1 Hq=2 Hkv=2 Nq=64 Nk=64 D=32 Dv=32 variant=plain
// RUN: %python %S/Inputs/npy_util.py compare %t/bf16/o.npy %t/bf16 --bound=2e-2 | FileCheck %s --check-prefix=NUMPY-O
// NUMPY-O: numpy O rel_err={{.*}} ok

// Random inputs are reproducible from --seed.
// RUN: fa-jit --seed=5 --shape=1,2,2,16,16,32 --output=%t/s5a.npy
// RUN: fa-jit --seed=5 --shape=1,2,2,16,16,32 --output=%t/s5b.npy
// RUN: fa-jit --seed=6 --shape=1,2,2,16,16,32 --output=%t/s6.npy
// RUN: cmp %t/s5a.npy %t/s5b.npy
// RUN: not cmp %t/s5a.npy %t/s6.npy
