// ALiBi slopes 2^(-8(h+1)/Hq), alone, with a causal mask and with GQA.

// RUN: fa-jit --check --lse --alibi --shape=1,4,4,64,64,64 | FileCheck %s --check-prefix=ALIBI
// ALIBI: variant=alibi,lse
// ALIBI-NEXT: {{^}}O rel_err={{.*}} ok
// ALIBI-NEXT: {{^}}lse rel_err={{.*}} ok

// RUN: fa-jit --check --lse --alibi --causal=bottom-right --dtype=f16 --shape=2,8,2,40,64,32 | FileCheck %s --check-prefix=CAUSAL
// CAUSAL: variant=gqa,causal=bottom_right,alibi,lse
// CAUSAL-NEXT: {{^}}O rel_err={{.*}} ok
// CAUSAL-NEXT: {{^}}lse rel_err={{.*}} ok
