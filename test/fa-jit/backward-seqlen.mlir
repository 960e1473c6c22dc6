// The backward at sequence lengths 1, 17, 1000 (Nq != Nk both ways) and
// 4096 (one head, D = 64, so that lit stays fast).

// RUN: fa-jit --backward --check --shape=1,2,2,1,1,64 | FileCheck %s --check-prefix=ONE
// ONE: Nq=1 Nk=1
// ONE-NEXT: {{^}}dQ rel_err={{.*}} ok
// ONE-NEXT: {{^}}dK rel_err={{.*}} ok
// ONE-NEXT: {{^}}dV rel_err={{.*}} ok

// RUN: fa-jit --backward --check --dtype=f16 --shape=3,2,2,17,17,64 | FileCheck %s --check-prefix=N17
// N17: B=3 Hq=2 Hkv=2 Nq=17 Nk=17
// N17-NEXT: {{^}}dQ rel_err={{.*}} ok
// N17-NEXT: {{^}}dK rel_err={{.*}} ok
// N17-NEXT: {{^}}dV rel_err={{.*}} ok

// RUN: fa-jit --backward --check --dtype=bf16 --shape=1,2,2,1,1000,64 | FileCheck %s --check-prefix=DECODE
// DECODE: Nq=1 Nk=1000
// DECODE-NEXT: {{^}}dQ rel_err={{.*}} ok
// DECODE-NEXT: {{^}}dK rel_err={{.*}} ok
// DECODE-NEXT: {{^}}dV rel_err={{.*}} ok

// RUN: fa-jit --backward --check --shape=1,2,2,1000,17,128 | FileCheck %s --check-prefix=TALL
// TALL: Nq=1000 Nk=17
// TALL-NEXT: {{^}}dQ rel_err={{.*}} ok
// TALL-NEXT: {{^}}dK rel_err={{.*}} ok
// TALL-NEXT: {{^}}dV rel_err={{.*}} ok

// RUN: fa-jit --backward --check --dtype=f16 --shape=1,2,2,1000,1000,64 | FileCheck %s --check-prefix=N1000
// N1000: Nq=1000 Nk=1000
// N1000-NEXT: {{^}}dQ rel_err={{.*}} ok
// N1000-NEXT: {{^}}dK rel_err={{.*}} ok
// N1000-NEXT: {{^}}dV rel_err={{.*}} ok

// RUN: fa-jit --backward --check --shape=1,1,1,4096,4096,64 | FileCheck %s --check-prefix=N4096
// RUN: fa-jit --backward --check --causal=bottom-right --dtype=bf16 --shape=1,1,1,4096,4096,64 | FileCheck %s --check-prefix=N4096
// N4096: Nq=4096 Nk=4096
// N4096-NEXT: {{^}}dQ rel_err={{.*}} ok
// N4096-NEXT: {{^}}dK rel_err={{.*}} ok
// N4096-NEXT: {{^}}dV rel_err={{.*}} ok
