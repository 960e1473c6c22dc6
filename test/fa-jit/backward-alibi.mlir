// The backward with ALiBi: slopes [Hq] from the flags (alone, causal, GQA)
// and per-batch slopes [B, Hq] from a file holding an fa.attention_grad.

// RUN: fa-jit --backward --check --alibi --shape=1,4,4,64,64,64 | FileCheck %s --check-prefix=ALIBI
// ALIBI: variant=alibi compile=
// ALIBI-NEXT: {{^}}dQ rel_err={{.*}} ok
// ALIBI-NEXT: {{^}}dK rel_err={{.*}} ok
// ALIBI-NEXT: {{^}}dV rel_err={{.*}} ok

// RUN: fa-jit --backward --check --alibi --causal=bottom-right --dtype=f16 --shape=2,8,2,40,64,32 | FileCheck %s --check-prefix=CAUSAL
// CAUSAL: variant=gqa,causal=bottom_right,alibi compile=
// CAUSAL-NEXT: {{^}}dQ rel_err={{.*}} ok
// CAUSAL-NEXT: {{^}}dK rel_err={{.*}} ok
// CAUSAL-NEXT: {{^}}dV rel_err={{.*}} ok

// RUN: fa-jit %S/Inputs/backward-alibi-batch.mlir --check | FileCheck %s --check-prefix=BATCH
// BATCH: fa-jit: ran fa.attention_grad on host: f16 B=3 Hq=4 Hkv=4 Nq=40 Nk=56 D=64 Dv=64 variant=causal=bottom_right,alibi compile=
// BATCH-NEXT: {{^}}dQ rel_err={{.*}} ok
// BATCH-NEXT: {{^}}dK rel_err={{.*}} ok
// BATCH-NEXT: {{^}}dV rel_err={{.*}} ok
