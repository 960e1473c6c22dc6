// The backward (--backward: fa.attention_grad of the variant, after the
// forward of the same variant gives O and lse) against the float64
// reference, for each dtype and head dim. Bounds: dQ, dK, dV within 2e-5
// (f32), 1e-2 (f16), 4e-2 (bf16).

// RUN: fa-jit --backward --check | FileCheck %s --check-prefix=F32
// F32: fa-jit: ran fa.attention_grad on host: f32 B=1 Hq=4 Hkv=4 Nq=128 Nk=128 D=64 Dv=64 variant=plain compile={{[0-9.]+}}ms forward={{[0-9.]+}}ms run={{[0-9.]+}}ms
// F32-NEXT: {{^}}dQ rel_err={{.*}} ok
// F32-NEXT: {{^}}dK rel_err={{.*}} ok
// F32-NEXT: {{^}}dV rel_err={{.*}} ok

// RUN: fa-jit --backward --check --dtype=f16 --shape=2,2,2,64,80,64 | FileCheck %s --check-prefix=F16
// F16: f16 B=2 Hq=2 Hkv=2 Nq=64 Nk=80 D=64 Dv=64 variant=plain
// F16-NEXT: {{^}}dQ rel_err={{.*}} ok
// F16-NEXT: {{^}}dK rel_err={{.*}} ok
// F16-NEXT: {{^}}dV rel_err={{.*}} ok

// RUN: fa-jit --backward --check --dtype=bf16 --shape=1,2,2,64,64,64 | FileCheck %s --check-prefix=BF16
// BF16: bf16 B=1 Hq=2 Hkv=2 Nq=64 Nk=64 D=64 Dv=64 variant=plain
// BF16-NEXT: {{^}}dQ rel_err={{.*}} ok
// BF16-NEXT: {{^}}dK rel_err={{.*}} ok
// BF16-NEXT: {{^}}dV rel_err={{.*}} ok

// RUN: fa-jit --backward --check --dtype=f32 --shape=1,2,2,48,64,128 | FileCheck %s --check-prefix=D128
// RUN: fa-jit --backward --check --dtype=bf16 --shape=1,2,2,70,50,128 | FileCheck %s --check-prefix=D128
// D128: D=128 Dv=128
// D128-NEXT: {{^}}dQ rel_err={{.*}} ok
// D128-NEXT: {{^}}dK rel_err={{.*}} ok
// D128-NEXT: {{^}}dV rel_err={{.*}} ok

// RUN: fa-jit --backward --check --dtype=f16 --shape=1,2,2,32,40,256 | FileCheck %s --check-prefix=D256
// RUN: fa-jit --backward --check --dtype=f32 --shape=1,1,1,33,20,256 | FileCheck %s --check-prefix=D256
// D256: D=256 Dv=256
// D256-NEXT: {{^}}dQ rel_err={{.*}} ok
// D256-NEXT: {{^}}dK rel_err={{.*}} ok
// D256-NEXT: {{^}}dV rel_err={{.*}} ok

// Dv != D.
// RUN: fa-jit --backward --check --dtype=bf16 --shape=1,2,2,32,40,64,32 | FileCheck %s --check-prefix=DV
// DV: D=64 Dv=32
// DV-NEXT: {{^}}dQ rel_err={{.*}} ok
// DV-NEXT: {{^}}dK rel_err={{.*}} ok
// DV-NEXT: {{^}}dV rel_err={{.*}} ok

// Any strides: every tensor of both passes as [B, N, H, D] in memory.
// RUN: fa-jit --backward --check --layout=bshd --causal=bottom-right --dtype=bf16 --shape=2,8,2,33,47,64 | FileCheck %s --check-prefix=LAYOUT
// RUN: fa-jit --backward --check --layout=bshd --alibi --bias --dtype=f32 --shape=1,4,4,20,20,32,16 | FileCheck %s --check-prefix=LAYOUT
// LAYOUT: variant=
// LAYOUT-NEXT: {{^}}dQ rel_err={{.*}} ok
// LAYOUT-NEXT: {{^}}dK rel_err={{.*}} ok
// LAYOUT-NEXT: {{^}}dV rel_err={{.*}} ok

// The tiles of fa-pipeline-host's options, and fa-decompose's form.
// RUN: fa-jit --backward --check --block-q=16 --block-kv=32 --causal=top-left --dtype=f16 --shape=1,2,2,100,47,64 | FileCheck %s --check-prefix=TILES
// RUN: fa-jit --backward --check --reference --causal=top-left --shape=1,2,2,50,47,64 | FileCheck %s --check-prefix=TILES
// TILES: variant=causal=top_left
// TILES-NEXT: {{^}}dQ rel_err={{.*}} ok
// TILES-NEXT: {{^}}dK rel_err={{.*}} ok
// TILES-NEXT: {{^}}dV rel_err={{.*}} ok
