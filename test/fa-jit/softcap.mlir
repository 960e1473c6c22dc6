// Softcap, with the default and an explicit scale.

// RUN: fa-jit --check --lse --softcap=30 --shape=1,2,2,64,64,64 | FileCheck %s --check-prefix=CAP30
// CAP30: variant=softcap=30,lse
// CAP30-NEXT: {{^}}O rel_err={{.*}} ok
// CAP30-NEXT: {{^}}lse rel_err={{.*}} ok

// A cap small enough to bite, on scores made large by the scale.
// RUN: fa-jit --check --lse --softcap=2.5 --scale=0.5 --dtype=bf16 --causal=top-left --shape=1,4,2,50,70,64 | FileCheck %s --check-prefix=CAP2
// CAP2: variant=gqa,causal=top_left,softcap=2.5,scale=0.5,lse
// CAP2-NEXT: {{^}}O rel_err={{.*}} ok
// CAP2-NEXT: {{^}}lse rel_err={{.*}} ok
