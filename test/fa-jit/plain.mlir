// Non-causal attention against the float64 reference, for each dtype and
// each head dim FA supports (the O bound is the dtype's; lse is f32).

// RUN: fa-jit --check --lse | FileCheck %s --check-prefix=F32
// F32: fa-jit: ran fa.attention on host: f32 B=1 Hq=4 Hkv=4 Nq=128 Nk=128 D=64 Dv=64 variant=lse compile={{[0-9.]+}}ms run={{[0-9.]+}}ms
// F32-NEXT: {{^}}O rel_err={{.*}} ok
// F32-NEXT: {{^}}lse rel_err={{.*}} ok

// RUN: fa-jit --check --dtype=f16 --shape=2,2,2,64,64,32 --lse | FileCheck %s --check-prefix=F16
// F16: f16 B=2 Hq=2 Hkv=2 Nq=64 Nk=64 D=32 Dv=32 variant=lse
// F16-NEXT: {{^}}O rel_err={{.*}} ok
// F16-NEXT: {{^}}lse rel_err={{.*}} ok

// --check judges lse with every forward: a variant without it runs with it.
// RUN: fa-jit --check --dtype=bf16 --shape=1,2,2,64,64,80 | FileCheck %s --check-prefix=BF16
// BF16: bf16 B=1 Hq=2 Hkv=2 Nq=64 Nk=64 D=80 Dv=80 variant=lse
// BF16-NEXT: {{^}}O rel_err={{.*}} row_err={{.*}} lowp_row_err={{.*}} bound={{.*}} ok
// BF16-NEXT: {{^}}lse rel_err={{.*}} ok

// RUN: fa-jit --check --dtype=f32 --shape=1,2,2,48,64,128 --lse | FileCheck %s --check-prefix=D128
// D128: D=128 Dv=128
// D128-NEXT: {{^}}O rel_err={{.*}} ok
// D128-NEXT: {{^}}lse rel_err={{.*}} ok

// RUN: fa-jit --check --dtype=bf16 --shape=1,2,2,32,40,256 --lse | FileCheck %s --check-prefix=D256
// D256: D=256 Dv=256
// D256-NEXT: {{^}}O rel_err={{.*}} ok
// D256-NEXT: {{^}}lse rel_err={{.*}} ok

// Dv != D.
// RUN: fa-jit --check --dtype=f16 --shape=1,2,2,32,40,64,32 | FileCheck %s --check-prefix=DV
// DV: D=64 Dv=32
// DV-NEXT: {{^}}O rel_err={{.*}} ok
