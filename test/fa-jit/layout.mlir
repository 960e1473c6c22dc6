// The kernel takes any strides and offsets: Q, K, V, O and lse handed over
// as [B, N, H, D] in memory (heads and sequence swapped) after a few
// elements of padding.

// RUN: fa-jit --layout=bshd --check --lse --causal=bottom-right --dtype=bf16 --shape=2,8,2,33,47,64 | FileCheck %s --check-prefix=GQA
// GQA: variant=gqa,causal=bottom_right,lse
// GQA-NEXT: {{^}}O rel_err={{.*}} ok
// GQA-NEXT: {{^}}lse rel_err={{.*}} ok

// RUN: fa-jit --layout=bshd --check --lse --alibi --bias --dtype=f16 --shape=1,4,4,20,20,32,16 | FileCheck %s --check-prefix=VARIANT
// VARIANT: variant=alibi,bias,lse
// VARIANT-NEXT: {{^}}O rel_err={{.*}} ok
// VARIANT-NEXT: {{^}}lse rel_err={{.*}} ok

// RUN: not fa-jit --layout=sbhd 2>&1 | FileCheck %s --check-prefix=BAD
// BAD: fa-jit: error: --layout must be bhsd or bshd, got 'sbhd'
