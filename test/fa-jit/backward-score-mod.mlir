// The backward through a score_mod: fa-differentiate-score-mod derives
// d score_mod / d score inside the pipeline, while --check's reference
// takes a central difference of the region. The forward's relative-position
// mod (a file holding fa.attention, with --backward), and a nonlinear one
// (soft cap, index-dependent term, floor) from a file holding
// fa.attention_grad.

// RUN: fa-jit %S/Inputs/score-mod.mlir --backward --check --shape=2,4,2,33,47,64 | FileCheck %s --check-prefix=REL
// REL: f32 B=2 Hq=4 Hkv=2 Nq=33 Nk=47 D=64 Dv=64 variant=gqa,score_mod compile=
// REL-NEXT: {{^}}dQ rel_err={{.*}} ok
// REL-NEXT: {{^}}dK rel_err={{.*}} ok
// REL-NEXT: {{^}}dV rel_err={{.*}} ok

// RUN: fa-jit %S/Inputs/score-mod.mlir --backward --check --shape=1,4,2,1,300,64 | FileCheck %s --check-prefix=DECODE
// DECODE: Nq=1 Nk=300
// DECODE-NEXT: {{^}}dQ rel_err={{.*}} ok
// DECODE-NEXT: {{^}}dK rel_err={{.*}} ok
// DECODE-NEXT: {{^}}dV rel_err={{.*}} ok

// RUN: fa-jit %S/Inputs/backward-score-mod.mlir --check --shape=2,4,2,77,93,128 | FileCheck %s --check-prefix=SOFT
// SOFT: fa-jit: ran fa.attention_grad on host: bf16 B=2 Hq=4 Hkv=2 Nq=77 Nk=93 D=128 Dv=128 variant=gqa,score_mod compile=
// SOFT-NEXT: {{^}}dQ rel_err={{.*}} ok
// SOFT-NEXT: {{^}}dK rel_err={{.*}} ok
// SOFT-NEXT: {{^}}dV rel_err={{.*}} ok

// The derivative region comes from the pipeline, not the file.
// RUN: fa-jit %S/Inputs/backward-score-mod.mlir --emit=kernel | FileCheck %s --check-prefix=KERNEL
// KERNEL: fa.attention_grad
// KERNEL-SAME: score_mod {
// KERNEL-NOT: score_mod_grad
// KERNEL: return
