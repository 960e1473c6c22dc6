// The backward through a softcap (s = X tanh(s / X): d/ds is 1 - tanh^2),
// with the default and an explicit scale, a cap that saturates, and with
// a causal mask.

// RUN: fa-jit --backward --check --softcap=5 --shape=1,2,2,150,130,64 | FileCheck %s --check-prefix=CAP
// RUN: fa-jit --backward --check --softcap=2 --scale=0.5 --dtype=bf16 --shape=1,2,2,90,70,64 | FileCheck %s --check-prefix=CAP
// RUN: fa-jit --backward --check --softcap=0.5 --scale=1 --dtype=f16 --shape=2,2,1,40,70,128 | FileCheck %s --check-prefix=CAP
// CAP: variant={{.*}}softcap=
// CAP-NEXT: {{^}}dQ rel_err={{.*}} ok
// CAP-NEXT: {{^}}dK rel_err={{.*}} ok
// CAP-NEXT: {{^}}dV rel_err={{.*}} ok

// RUN: fa-jit --backward --check --softcap=30 --causal=top-left --dtype=bf16 --shape=1,4,2,64,64,64 | FileCheck %s --check-prefix=CAUSAL
// CAUSAL: variant=gqa,causal=top_left,softcap=30
// CAUSAL-NEXT: {{^}}dQ rel_err={{.*}} ok
// CAUSAL-NEXT: {{^}}dK rel_err={{.*}} ok
// CAUSAL-NEXT: {{^}}dV rel_err={{.*}} ok
