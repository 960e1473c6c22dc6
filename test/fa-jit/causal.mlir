// REQUIRES: numpy
// Causal masks, aligned top-left and bottom-right, with Nq < Nk, Nq = Nk
// and Nq > Nk. Bottom-right with Nq > Nk leaves the first Nq - Nk query rows
// with no key at all: their O must be 0 and their lse -inf, with no NaN.

// RUN: rm -rf %t && mkdir -p %t
// RUN: fa-jit --check --lse --causal=top-left --shape=1,2,2,64,64,64 | FileCheck %s --check-prefix=TL
// TL: variant=causal=top_left,lse
// TL-NEXT: {{^}}O rel_err={{.*}} ok
// TL-NEXT: {{^}}lse rel_err={{.*}} ok

// RUN: fa-jit --check --lse --causal=top-left --dtype=bf16 --shape=1,2,2,50,30,64 | FileCheck %s --check-prefix=TL-TALL
// TL-TALL: Nq=50 Nk=30
// TL-TALL-NEXT: {{^}}O rel_err={{.*}} ok
// TL-TALL-NEXT: {{^}}lse rel_err={{.*}} ok

// RUN: fa-jit --check --lse --causal=bottom-right --dtype=f16 --shape=2,2,2,30,77,32 | FileCheck %s --check-prefix=BR-WIDE
// BR-WIDE: variant=causal=bottom_right,lse
// BR-WIDE-NEXT: {{^}}O rel_err={{.*}} ok
// BR-WIDE-NEXT: {{^}}lse rel_err={{.*}} ok

// RUN: fa-jit --check --lse --causal=bottom-right --shape=1,2,2,50,30,64 \
// RUN:   --output=%t/o.npy --lse-output=%t/lse.npy | FileCheck %s --check-prefix=BR-TALL
// BR-TALL: Nq=50 Nk=30
// BR-TALL-NEXT: {{^}}O rel_err={{.*}} ok
// BR-TALL-NEXT: {{^}}lse rel_err={{.*}} ok
// RUN: %python %S/Inputs/npy_util.py masked %t/o.npy %t/lse.npy | FileCheck %s --check-prefix=MASKED
// MASKED: masked_rows=40 of 100
// MASKED-NEXT: nan=0
// MASKED-NEXT: masked_o_zero=True

// The same in bf16, through the numpy reference too.
// RUN: %python %S/Inputs/npy_util.py gen %t/in --shape=1,2,2,50,30,64 --dtype=bf16
// RUN: fa-jit --check --lse --causal=bottom-right --inputs=%t/in/q.npy,%t/in/k.npy,%t/in/v.npy \
// RUN:   --output=%t/o16.npy --lse-output=%t/lse16.npy | FileCheck %s --check-prefix=BR-BF16
// BR-BF16: bf16 B=1 Hq=2 Hkv=2 Nq=50 Nk=30
// BR-BF16-NEXT: {{^}}O rel_err={{.*}} ok
// BR-BF16-NEXT: {{^}}lse rel_err={{.*}} ok
// RUN: %python %S/Inputs/npy_util.py masked %t/o16.npy %t/lse16.npy | FileCheck %s --check-prefix=MASKED
// RUN: %python %S/Inputs/npy_util.py compare %t/o16.npy %t/in --lse=%t/lse16.npy \
// RUN:   --causal=bottom-right --bound=2e-2 | FileCheck %s --check-prefix=NUMPY
// NUMPY: numpy O rel_err={{.*}} ok
// NUMPY-NEXT: numpy lse rel_err={{.*}} ok
