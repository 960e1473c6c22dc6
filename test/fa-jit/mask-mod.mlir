// REQUIRES: numpy
// A mask_mod region (document masking with a visible prefix: divui, remui,
// cmpi, ori, andi) on a static bf16 op, with its random inputs written out
// and fed back through --inputs.

// RUN: rm -rf %t && mkdir -p %t
// RUN: fa-jit %S/Inputs/mask-mod.mlir --check | FileCheck %s --check-prefix=MASK
// MASK: bf16 B=2 Hq=2 Hkv=2 Nq=64 Nk=64 D=32 Dv=32 variant=mask_mod,lse
// MASK-NEXT: {{^}}O rel_err={{.*}} ok
// MASK-NEXT: {{^}}lse rel_err={{.*}} ok

// RUN: %python %S/Inputs/npy_util.py gen %t --shape=2,2,2,64,64,32 --dtype=bf16 --seed=7
// RUN: fa-jit %S/Inputs/mask-mod.mlir --check --inputs=%t/q.npy,%t/k.npy,%t/v.npy \
// RUN:   --output=%t/o.npy --lse-output=%t/lse.npy | FileCheck %s --check-prefix=MASK
// RUN: %python %S/Inputs/npy_util.py finite %t/o.npy %t/lse.npy | FileCheck %s --check-prefix=FINITE
// FINITE: finite
