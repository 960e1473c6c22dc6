// REQUIRES: numpy
// Captured tensors through fa-jit: Inputs/captures.mlir masks by per-token
// document ids and adds a per-head table term (tensor.extract on its two
// captures). --captures gives them as .npy files; --check compares with the
// float64 reference (which evaluates the regions, extracts included) and
// captures_util.py with an independent numpy reference of the same variant.

// RUN: rm -rf %t && mkdir -p %t
// RUN: %python %S/Inputs/captures_util.py gen %t --shape=2,4,77,32 --seed=1
// RUN: fa-jit %S/Inputs/captures.mlir --inputs=%t/q.npy,%t/k.npy,%t/v.npy \
// RUN:   --captures=%t/doc.npy,%t/tab.npy --check --output=%t/o.npy | FileCheck %s --check-prefix=FWD
// FWD: f32 B=2 Hq=4 Hkv=4 Nq=77 Nk=77 D=32 Dv=32 variant=causal=top_left,score_mod,mask_mod,lse
// FWD-NEXT: {{^}}O rel_err={{.*}} ok
// FWD-NEXT: {{^}}lse rel_err={{.*}} ok
// RUN: %python %S/Inputs/captures_util.py compare %t/o.npy %t | FileCheck %s --check-prefix=NUMPY
// NUMPY: numpy O rel_err={{.*}} ok

// The reference route (fa-decompose) reads them too.
// RUN: fa-jit %S/Inputs/captures.mlir --inputs=%t/q.npy,%t/k.npy,%t/v.npy \
// RUN:   --captures=%t/doc.npy,%t/tab.npy --reference --check --output=%t/o-ref.npy | FileCheck %s --check-prefix=FWD
// RUN: %python %S/Inputs/captures_util.py compare %t/o-ref.npy %t | FileCheck %s --check-prefix=NUMPY

// The backward: captures are forwarded to fa.attention_grad (no gradient).
// RUN: fa-jit %S/Inputs/captures.mlir --backward --inputs=%t/q.npy,%t/k.npy,%t/v.npy,%t/do.npy \
// RUN:   --captures=%t/doc.npy,%t/tab.npy --check | FileCheck %s --check-prefix=BWD
// BWD: fa.attention_grad on host: f32 B=2 Hq=4 Hkv=4 Nq=77 Nk=77 D=32 Dv=32
// BWD-NEXT: {{^}}dQ rel_err={{.*}} ok
// BWD-NEXT: {{^}}dK rel_err={{.*}} ok
// BWD-NEXT: {{^}}dV rel_err={{.*}} ok

// Captures may be larger than the sequences use (doc has 77 ids, N = 50),
// and random inputs work with them.
// RUN: fa-jit %S/Inputs/captures.mlir --shape=2,4,4,50,50,32 --captures=%t/doc.npy,%t/tab.npy \
// RUN:   --check | FileCheck %s --check-prefix=SHORT
// SHORT: Nq=50 Nk=50
// SHORT-NEXT: {{^}}O rel_err={{.*}} ok

// Errors.
// RUN: %python -c "import numpy as np; np.save('%t/doc64.npy', np.zeros(77, np.int64)); np.save('%t/tab8.npy', np.zeros(8, np.float32))"
// RUN: not fa-jit %S/Inputs/captures.mlir --shape=2,4,4,50,50,32 2>&1 | FileCheck %s --check-prefix=MISSING
// MISSING: fa-jit: error: --captures: the op has 2 captures, got 0 files
// RUN: not fa-jit %S/Inputs/captures.mlir --shape=2,4,4,50,50,32 --captures=%t/doc64.npy,%t/tab.npy 2>&1 \
// RUN:   | FileCheck %s --check-prefix=DTYPE
// DTYPE: fa-jit: error: {{.*}}doc64.npy: expected dtype i32, got i64
// RUN: not fa-jit %S/Inputs/captures.mlir --shape=2,4,4,50,50,32 --captures=%t/doc.npy,%t/tab8.npy 2>&1 \
// RUN:   | FileCheck %s --check-prefix=SHAPE
// SHAPE: fa-jit: error: {{.*}}tab8.npy: expected a capture of type tensor<4xf32>, got shape [8]
// RUN: not fa-jit --shape=2,4,4,50,50,32 --captures=%t/doc.npy 2>&1 | FileCheck %s --check-prefix=EXTRA
// EXTRA: fa-jit: error: --captures: the op has 0 captures, got 1 files
