// REQUIRES: numpy
// The backward with a mask_mod: the forward's document mask (from a file
// holding fa.attention, with --backward), and a mask that empties whole
// rows (dQ exactly 0 there, no NaN).

// RUN: rm -rf %t && mkdir -p %t
// RUN: fa-jit %S/Inputs/mask-mod.mlir --backward --check | FileCheck %s --check-prefix=DOCS
// DOCS: fa-jit: ran fa.attention_grad on host: bf16 B=2 Hq=2 Hkv=2 Nq=64 Nk=64 D=32 Dv=32 variant=mask_mod compile=
// DOCS-NEXT: {{^}}dQ rel_err={{.*}} ok
// DOCS-NEXT: {{^}}dK rel_err={{.*}} ok
// DOCS-NEXT: {{^}}dV rel_err={{.*}} ok

// RUN: fa-jit %S/Inputs/backward-mask-mod.mlir --check --shape=2,4,2,50,61,64 \
// RUN:   --lse-output=%t/lse.npy --grad-outputs=%t/dq.npy,%t/dk.npy,%t/dv.npy | FileCheck %s --check-prefix=ROWS
// ROWS: f16 B=2 Hq=4 Hkv=2 Nq=50 Nk=61 D=64 Dv=64 variant=gqa,mask_mod compile=
// ROWS-NEXT: {{^}}dQ rel_err={{.*}} ok
// ROWS-NEXT: {{^}}dK rel_err={{.*}} ok
// ROWS-NEXT: {{^}}dV rel_err={{.*}} ok
// RUN: %python %S/Inputs/npy_util.py masked-grad %t/dq.npy %t/lse.npy | FileCheck %s --check-prefix=MASKED
// MASKED: masked_rows=80 of 400
// MASKED-NEXT: nan=0
// MASKED-NEXT: masked_dq_zero=True
// RUN: %python %S/Inputs/npy_util.py finite %t/dk.npy %t/dv.npy | FileCheck %s --check-prefix=FINITE
// FINITE: finite
