// A score_mod region (relative position through index casts, sitofp, tanh)
// compiled into the kernel and evaluated by --check's region evaluator.
// The op has dynamic B and N: --shape gives them.

// RUN: fa-jit %S/Inputs/score-mod.mlir --check --shape=2,4,2,33,47,64 | FileCheck %s --check-prefix=MOD
// MOD: f32 B=2 Hq=4 Hkv=2 Nq=33 Nk=47 D=64 Dv=64 variant=gqa,score_mod,lse
// MOD-NEXT: {{^}}O rel_err={{.*}} ok
// MOD-NEXT: {{^}}lse rel_err={{.*}} ok

// RUN: fa-jit %S/Inputs/score-mod.mlir --check --shape=1,4,2,1,300,64 | FileCheck %s --check-prefix=DECODE
// DECODE: Nq=1 Nk=300
// DECODE-NEXT: {{^}}O rel_err={{.*}} ok

// An op the evaluator does not know: the kernel runs, --check says why it
// cannot check.
// RUN: fa-jit %S/Inputs/sin-mod.mlir | FileCheck %s --check-prefix=SIN-RUN
// SIN-RUN: variant=score_mod
// RUN: not fa-jit %S/Inputs/sin-mod.mlir --check 2>&1 | FileCheck %s --check-prefix=SIN
// SIN: fa-jit: error: --check: score_mod: cannot evaluate 'math.sin' (the reference evaluates scalar arith and math ops only)
