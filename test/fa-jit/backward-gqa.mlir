// The backward with grouped K/V heads: dK and dV of a K/V head sum over the
// query heads that share it. GQA (--gqa=G), MQA (Hkv = 1), with masks.

// RUN: fa-jit --backward --check --gqa=4 --shape=2,8,8,90,70,64 | FileCheck %s --check-prefix=GQA
// RUN: fa-jit --backward --check --gqa=2 --causal=bottom-right --dtype=bf16 --shape=1,8,8,64,100,128 | FileCheck %s --check-prefix=GQA
// GQA: Hq=8 Hkv={{[24]}}
// GQA-SAME: variant=gqa
// GQA-NEXT: {{^}}dQ rel_err={{.*}} ok
// GQA-NEXT: {{^}}dK rel_err={{.*}} ok
// GQA-NEXT: {{^}}dV rel_err={{.*}} ok

// RUN: fa-jit --backward --check --dtype=f16 --shape=1,4,1,90,70,128 | FileCheck %s --check-prefix=MQA
// RUN: fa-jit --backward --check --gqa=6 --window=8,8 --dtype=bf16 --shape=2,6,6,40,40,64 | FileCheck %s --check-prefix=MQA
// MQA: Hkv=1
// MQA-SAME: variant=mqa
// MQA-NEXT: {{^}}dQ rel_err={{.*}} ok
// MQA-NEXT: {{^}}dK rel_err={{.*}} ok
// MQA-NEXT: {{^}}dV rel_err={{.*}} ok
