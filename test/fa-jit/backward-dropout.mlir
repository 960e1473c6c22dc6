// Dropout on the host, forward and backward, against the reference, which
// draws the same Philox stream from --seed.

// RUN: fa-jit --check --lse --dropout=0.2 --seed=5 --shape=2,2,2,60,70,64 | FileCheck %s --check-prefix=FWD
// FWD: variant=dropout,lse
// FWD-NEXT: {{^}}O rel_err={{.*}} ok
// FWD-NEXT: {{^}}lse rel_err={{.*}} ok

// RUN: fa-jit --backward --check --dropout=0.2 --seed=5 --causal=top-left --dtype=bf16 --shape=2,4,2,60,70,64 | FileCheck %s --check-prefix=BWD
// RUN: fa-jit %S/Inputs/dropout.mlir --backward --check --seed=11 --shape=1,2,2,33,47,32 | FileCheck %s --check-prefix=BWD
// BWD: variant={{.*}}dropout compile=
// BWD-NEXT: {{^}}dQ rel_err={{.*}} ok
// BWD-NEXT: {{^}}dK rel_err={{.*}} ok
// BWD-NEXT: {{^}}dV rel_err={{.*}} ok
