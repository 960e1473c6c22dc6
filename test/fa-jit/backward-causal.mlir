// REQUIRES: numpy
// The backward with causal masks, top-left and bottom-right, Nq < Nk and
// Nq > Nk. Bottom-right with Nq > Nk leaves the first Nq - Nk query rows
// with no key: their dQ must be exactly 0, with no NaN anywhere.

// RUN: rm -rf %t && mkdir -p %t
// RUN: fa-jit --backward --check --causal=top-left --shape=1,2,2,64,64,64 | FileCheck %s --check-prefix=TL
// TL: variant=causal=top_left
// TL-NEXT: {{^}}dQ rel_err={{.*}} ok
// TL-NEXT: {{^}}dK rel_err={{.*}} ok
// TL-NEXT: {{^}}dV rel_err={{.*}} ok

// RUN: fa-jit --backward --check --causal=top-left --dtype=bf16 --shape=1,2,2,100,60,64 | FileCheck %s --check-prefix=TL-TALL
// RUN: fa-jit --backward --check --causal=top-left --dtype=f16 --shape=1,2,2,60,100,128 | FileCheck %s --check-prefix=TL-WIDE
// TL-TALL: Nq=100 Nk=60
// TL-TALL-NEXT: {{^}}dQ rel_err={{.*}} ok
// TL-TALL-NEXT: {{^}}dK rel_err={{.*}} ok
// TL-TALL-NEXT: {{^}}dV rel_err={{.*}} ok
// TL-WIDE: Nq=60 Nk=100
// TL-WIDE-NEXT: {{^}}dQ rel_err={{.*}} ok
// TL-WIDE-NEXT: {{^}}dK rel_err={{.*}} ok
// TL-WIDE-NEXT: {{^}}dV rel_err={{.*}} ok

// RUN: fa-jit --backward --check --causal=bottom-right --dtype=f16 --shape=2,2,2,30,77,32 | FileCheck %s --check-prefix=BR-WIDE
// BR-WIDE: variant=causal=bottom_right
// BR-WIDE-NEXT: {{^}}dQ rel_err={{.*}} ok
// BR-WIDE-NEXT: {{^}}dK rel_err={{.*}} ok
// BR-WIDE-NEXT: {{^}}dV rel_err={{.*}} ok

// RUN: fa-jit --backward --check --causal=bottom-right --shape=1,2,2,50,30,64 \
// RUN:   --lse-output=%t/lse.npy --grad-outputs=%t/dq.npy,%t/dk.npy,%t/dv.npy | FileCheck %s --check-prefix=BR-TALL
// BR-TALL: Nq=50 Nk=30
// BR-TALL-NEXT: {{^}}dQ rel_err={{.*}} ok
// BR-TALL-NEXT: {{^}}dK rel_err={{.*}} ok
// BR-TALL-NEXT: {{^}}dV rel_err={{.*}} ok
// RUN: %python %S/Inputs/npy_util.py masked-grad %t/dq.npy %t/lse.npy | FileCheck %s --check-prefix=MASKED
// MASKED: masked_rows=40 of 100
// MASKED-NEXT: nan=0
// MASKED-NEXT: masked_dq_zero=True
// RUN: %python %S/Inputs/npy_util.py finite %t/dk.npy %t/dv.npy | FileCheck %s --check-prefix=FINITE
// FINITE: finite

// The same in bf16 from .npy inputs, through the numpy reference too.
// RUN: %python %S/Inputs/npy_util.py gen %t/in --shape=1,2,2,50,30,64 --dtype=bf16 --grad
// RUN: fa-jit --backward --check --causal=bottom-right \
// RUN:   --inputs=%t/in/q.npy,%t/in/k.npy,%t/in/v.npy,%t/in/do.npy \
// RUN:   --lse-output=%t/lse16.npy --grad-outputs=%t/dq16.npy,%t/dk16.npy,%t/dv16.npy \
// RUN:   | FileCheck %s --check-prefix=BR-BF16
// BR-BF16: bf16 B=1 Hq=2 Hkv=2 Nq=50 Nk=30
// BR-BF16-NEXT: {{^}}dQ rel_err={{.*}} ok
// BR-BF16-NEXT: {{^}}dK rel_err={{.*}} ok
// BR-BF16-NEXT: {{^}}dV rel_err={{.*}} ok
// RUN: %python %S/Inputs/npy_util.py masked-grad %t/dq16.npy %t/lse16.npy | FileCheck %s --check-prefix=MASKED
// RUN: %python %S/Inputs/npy_util.py grad-compare %t/dq16.npy %t/dk16.npy %t/dv16.npy %t/in \
// RUN:   --causal=bottom-right --bound=4e-2 | FileCheck %s --check-prefix=NUMPY
// NUMPY: numpy dQ rel_err={{.*}} ok
// NUMPY-NEXT: numpy dK rel_err={{.*}} ok
// NUMPY-NEXT: numpy dV rel_err={{.*}} ok
