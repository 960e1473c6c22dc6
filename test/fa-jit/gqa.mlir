// Grouped-query and multi-query attention.

// RUN: fa-jit --check --lse --shape=2,8,2,33,47,64 | FileCheck %s --check-prefix=GQA
// GQA: B=2 Hq=8 Hkv=2 Nq=33 Nk=47 D=64 Dv=64 variant=gqa,lse
// GQA-NEXT: {{^}}O rel_err={{.*}} ok
// GQA-NEXT: {{^}}lse rel_err={{.*}} ok

// RUN: fa-jit --check --lse --dtype=bf16 --causal=bottom-right --shape=1,8,1,64,64,128 | FileCheck %s --check-prefix=MQA
// MQA: bf16 B=1 Hq=8 Hkv=1 Nq=64 Nk=64 D=128 Dv=128 variant=mqa,causal=bottom_right,lse
// MQA-NEXT: {{^}}O rel_err={{.*}} ok
// MQA-NEXT: {{^}}lse rel_err={{.*}} ok

// RUN: fa-jit --check --dtype=f16 --shape=1,6,3,17,1000,32 | FileCheck %s --check-prefix=GQA3
// GQA3: Hq=6 Hkv=3 Nq=17 Nk=1000
// GQA3-NEXT: {{^}}O rel_err={{.*}} ok
