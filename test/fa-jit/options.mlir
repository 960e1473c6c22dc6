// Pipeline options, the peak-memory report and ops given in a file.

// The materialized reference lowering runs and checks too.
// RUN: fa-jit --reference --check --lse --causal=bottom-right --dtype=bf16 --shape=1,4,2,40,50,64 | FileCheck %s --check-prefix=REF
// REF: {{^}}O rel_err={{.*}} ok
// REF-NEXT: {{^}}lse rel_err={{.*}} ok

// Tile sizes that do not divide the sequence lengths.
// RUN: fa-jit --block-q=16 --block-kv=32 --check --lse --causal=top-left --shape=1,2,2,70,90,64 | FileCheck %s --check-prefix=TILES
// TILES: {{^}}O rel_err={{.*}} ok
// TILES-NEXT: {{^}}lse rel_err={{.*}} ok

// RUN: fa-jit --print-peak-memory --shape=1,2,2,64,64,64 | FileCheck %s --check-prefix=PEAK
// PEAK: fa-jit: ran fa.attention on host
// PEAK-NEXT: {{^}}peak_rss_mb={{[1-9][0-9]*$}}

// This file holds the op: static shapes, GQA, top-left causal, softcap,
// explicit scale and lse.
// RUN: fa-jit %s --check | FileCheck %s --check-prefix=FILE
// FILE: f16 B=2 Hq=4 Hkv=2 Nq=24 Nk=40 D=32 Dv=16 variant=gqa,causal=top_left,softcap=20,scale=0.3,lse
// FILE-NEXT: {{^}}O rel_err={{.*}} ok
// FILE-NEXT: {{^}}lse rel_err={{.*}} ok
func.func @variant(%q: tensor<2x4x24x32xf16>, %k: tensor<2x2x40x32xf16>,
                   %v: tensor<2x2x40x16xf16>)
    -> (tensor<2x4x24x16xf16>, tensor<2x4x24xf32>) {
  %o, %lse = fa.attention %q, %k, %v
      {causal = #fa.causal<top_left>, scale = 3.000000e-01 : f32,
       softcap = 2.000000e+01 : f32}
      : tensor<2x4x24x32xf16>, tensor<2x2x40x32xf16>, tensor<2x2x40x16xf16>
      -> tensor<2x4x24x16xf16>, tensor<2x4x24xf32>
  return %o, %lse : tensor<2x4x24x16xf16>, tensor<2x4x24xf32>
}
