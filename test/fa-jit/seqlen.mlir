// Sequence lengths: a single query and key, odd sizes, Nq != Nk both ways,
// a batch, and long sequences.

// RUN: fa-jit --check --lse --shape=1,2,2,1,1,64 | FileCheck %s --check-prefix=ONE
// ONE: Nq=1 Nk=1
// ONE-NEXT: {{^}}O rel_err={{.*}} ok
// ONE-NEXT: {{^}}lse rel_err={{.*}} ok

// RUN: fa-jit --check --lse --dtype=f16 --shape=3,2,2,17,17,32 | FileCheck %s --check-prefix=N17
// N17: B=3 Hq=2 Hkv=2 Nq=17 Nk=17
// N17-NEXT: {{^}}O rel_err={{.*}} ok
// N17-NEXT: {{^}}lse rel_err={{.*}} ok

// RUN: fa-jit --check --lse --shape=1,2,2,1,1000,64 | FileCheck %s --check-prefix=DECODE
// DECODE: Nq=1 Nk=1000
// DECODE-NEXT: {{^}}O rel_err={{.*}} ok
// DECODE-NEXT: {{^}}lse rel_err={{.*}} ok

// RUN: fa-jit --check --lse --dtype=bf16 --shape=1,2,2,1000,17,64 | FileCheck %s --check-prefix=TALL
// TALL: Nq=1000 Nk=17
// TALL-NEXT: {{^}}O rel_err={{.*}} ok
// TALL-NEXT: {{^}}lse rel_err={{.*}} ok

// RUN: fa-jit --check --lse --dtype=bf16 --shape=1,2,2,1000,1000,64 | FileCheck %s --check-prefix=N1000
// N1000: Nq=1000 Nk=1000
// N1000-NEXT: {{^}}O rel_err={{.*}} ok
// N1000-NEXT: {{^}}lse rel_err={{.*}} ok

// RUN: fa-jit --check --lse --shape=1,1,1,4096,4096,32 | FileCheck %s --check-prefix=N4096
// N4096: Nq=4096 Nk=4096
// N4096-NEXT: {{^}}O rel_err={{.*}} ok
// N4096-NEXT: {{^}}lse rel_err={{.*}} ok
