// REQUIRES: numpy
// Sliding windows, alone and with a causal mask, on both diagonals.

// RUN: rm -rf %t && mkdir -p %t
// RUN: fa-jit --check --lse --window=3,2 --shape=1,2,2,64,64,64 | FileCheck %s --check-prefix=W32
// W32: variant=window=3,2,lse
// W32-NEXT: {{^}}O rel_err={{.*}} ok
// W32-NEXT: {{^}}lse rel_err={{.*}} ok

// RUN: fa-jit --check --lse --window=16,0 --causal=bottom-right --dtype=bf16 --shape=1,2,2,40,90,64 | FileCheck %s --check-prefix=LOCAL
// LOCAL: variant=causal=bottom_right,window=16,0,lse
// LOCAL-NEXT: {{^}}O rel_err={{.*}} ok
// LOCAL-NEXT: {{^}}lse rel_err={{.*}} ok

// A window of one key on the bottom-right diagonal with Nq > Nk: the first
// Nq - Nk rows see nothing.
// RUN: fa-jit --check --lse --window=0,0 --dtype=f16 --shape=1,2,2,20,12,32 \
// RUN:   --output=%t/o.npy --lse-output=%t/lse.npy | FileCheck %s --check-prefix=DIAG
// DIAG: variant=window=0,0,lse
// DIAG-NEXT: {{^}}O rel_err={{.*}} ok
// DIAG-NEXT: {{^}}lse rel_err={{.*}} ok
// RUN: %python %S/Inputs/npy_util.py masked %t/o.npy %t/lse.npy | FileCheck %s --check-prefix=MASKED
// MASKED: masked_rows=16 of 40
// MASKED-NEXT: nan=0
// MASKED-NEXT: masked_o_zero=True

// RUN: fa-jit --check --window=1000,1000 --causal=top-left --shape=1,2,2,33,33,64 | FileCheck %s --check-prefix=WIDE
// WIDE: {{^}}O rel_err={{.*}} ok
