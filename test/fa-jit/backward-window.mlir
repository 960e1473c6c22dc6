// REQUIRES: numpy
// The backward with a sliding window, alone, with a causal mask, and with
// Nq > Nk where the window leaves the first rows with no key (dQ exactly 0
// there, no NaN).

// RUN: rm -rf %t && mkdir -p %t
// RUN: fa-jit --backward --check --window=16,8 --shape=1,2,2,150,130,64 | FileCheck %s --check-prefix=WINDOW
// RUN: fa-jit --backward --check --window=0,0 --dtype=bf16 --shape=1,2,2,40,40,64 | FileCheck %s --check-prefix=WINDOW
// WINDOW: variant=window=
// WINDOW-NEXT: {{^}}dQ rel_err={{.*}} ok
// WINDOW-NEXT: {{^}}dK rel_err={{.*}} ok
// WINDOW-NEXT: {{^}}dV rel_err={{.*}} ok

// RUN: fa-jit --backward --check --window=32,0 --causal=bottom-right --dtype=f16 --shape=2,2,2,100,120,128 | FileCheck %s --check-prefix=CAUSAL
// CAUSAL: variant=causal=bottom_right,window=32,0
// CAUSAL-NEXT: {{^}}dQ rel_err={{.*}} ok
// CAUSAL-NEXT: {{^}}dK rel_err={{.*}} ok
// CAUSAL-NEXT: {{^}}dV rel_err={{.*}} ok

// Nq = 50, Nk = 30: row i sees keys i - 22 .. i - 17, none for i < 17.
// RUN: fa-jit --backward --check --window=2,3 --dtype=bf16 --shape=1,2,2,50,30,64 \
// RUN:   --lse-output=%t/lse.npy --grad-outputs=%t/dq.npy,%t/dk.npy,%t/dv.npy | FileCheck %s --check-prefix=EMPTY
// EMPTY: variant=window=2,3
// EMPTY-NEXT: {{^}}dQ rel_err={{.*}} ok
// EMPTY-NEXT: {{^}}dK rel_err={{.*}} ok
// EMPTY-NEXT: {{^}}dV rel_err={{.*}} ok
// RUN: %python %S/Inputs/npy_util.py masked-grad %t/dq.npy %t/lse.npy | FileCheck %s --check-prefix=MASKED
// MASKED: masked_rows=34 of 100
// MASKED-NEXT: nan=0
// MASKED-NEXT: masked_dq_zero=True
