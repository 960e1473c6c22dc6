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

// --gqa=G sets Hkv = Hq / G (G = Hq: MQA).
// RUN: fa-jit --check --lse --gqa=4 --shape=1,8,8,33,40,64 | FileCheck %s --check-prefix=FLAG
// FLAG: B=1 Hq=8 Hkv=2 Nq=33 Nk=40 D=64 Dv=64 variant=gqa,lse
// FLAG-NEXT: {{^}}O rel_err={{.*}} ok
// RUN: fa-jit --check --gqa=8 --dtype=f16 --shape=1,8,8,20,20,32 | FileCheck %s --check-prefix=FLAG-MQA
// FLAG-MQA: f16 B=1 Hq=8 Hkv=1 Nq=20 Nk=20 D=32 Dv=32 variant=mqa
// RUN: not fa-jit --gqa=3 --shape=1,8,8,4,4,16 2>&1 | FileCheck %s --check-prefix=FLAG-DIVIDE
// FLAG-DIVIDE: fa-jit: error: --gqa=3 does not divide Hq (8)
// RUN: not fa-jit --gqa=8 --shape=1,8,4,4,4,16 2>&1 | FileCheck %s --check-prefix=FLAG-CONFLICT
// FLAG-CONFLICT: fa-jit: error: --gqa=8 gives Hkv = 1, but --shape gives Hkv = 4
// RUN: not fa-jit --gqa=2 2>&1 | FileCheck %s --check-prefix=FLAG-SHAPE
// FLAG-SHAPE: fa-jit: error: --gqa needs Hq: give --shape=B,Hq,Hkv,Nq,Nk,D
