// REQUIRES: numpy
// Every error is one `fa-jit: error: ...` line (plus notes) and exit code 1.

// RUN: rm -rf %t && mkdir -p %t

// RUN: not fa-jit %t/missing.mlir 2>&1 | FileCheck %s --check-prefix=MISSING
// MISSING: fa-jit: error: cannot open input file '{{.*}}missing.mlir': No such file or directory

// RUN: not fa-jit --target=gpu 2>&1 | FileCheck %s --check-prefix=TARGET
// TARGET: fa-jit: error: --target must be host, auto or a GPU chip (sm_80, sm_86, sm_87, sm_89, sm_90, sm_90a, sm_100, sm_120), got 'gpu'
// RUN: not fa-jit --emit=ptx 2>&1 | FileCheck %s --check-prefix=PTX-HOST
// PTX-HOST: fa-jit: error: --emit=ptx needs a GPU target (--target=sm_80, sm_90a, or auto on a machine with a GPU)
// RUN: not fa-jit --target=sm_90a --emit=llvm 2>&1 | FileCheck %s --check-prefix=GPU-EMIT
// GPU-EMIT: fa-jit: error: --emit=llvm shows the host pipeline; for a GPU target use --emit=ptx
// RUN: not fa-jit --bench --shape=1,1,1,4,4,8 2>&1 | FileCheck %s --check-prefix=BENCH-HOST
// BENCH-HOST: fa-jit: error: --bench times GPU kernels; give --target=auto or a chip
// RUN: not fa-jit --target=sm_90a --emit=ptx --dtype=f32 --shape=1,1,1,4,4,64 2>&1 | FileCheck %s --check-prefix=GPU-F32
// GPU-F32: error: 'fa.attention' op convert-fa-to-nvvm: element type must be f16 or bf16 on the GPU
// GPU-F32: fa-jit: error: fa-pipeline-cuda failed
// RUN: not fa-jit --target=sm_90a --emit=ptx --dtype=bf16 --shape=1,4,4,300,700,128 --window=200,8 --block-q=64 --block-kv=128 --kv-stages=4 --fwd-warp-specialize=false 2>&1 | FileCheck %s --check-prefix=GPU-STAGES
// RUN: not fa-jit --target=sm_90a --emit=ptx --dtype=bf16 --shape=1,4,4,300,700,128 --window=200,8 --block-q=64 --block-kv=128 --kv-stages=4 2>&1 | FileCheck %s --check-prefix=WS-STAGES
// GPU-STAGES: error: 'gpu.func' op fa-async-copy: 4 K/V stages of a 64 x 128 tile at D = 128 need 278528 bytes of shared memory; sm_90a gives a CTA 232448
// WS-STAGES: error: 'gpu.func' op fa-warp-specialize: 4 K/V stages of a 64 x 128 tile at D = 128 need 278672 bytes of shared memory; sm_90a gives a CTA 232448
// WS-STAGES: fa-jit: error: fa-pipeline-cuda failed
// GPU-STAGES: fa-jit: error: fa-pipeline-cuda failed
// RUN: not fa-jit --target=sm_80 --emit=ptx --shape=1,1,1,64,64,64 --block-q=96 2>&1 | FileCheck %s --check-prefix=GPU-TILE
// GPU-TILE: error: 'fa.attention' op fa-fuse: block-q must be 64 or 128 (got 96)

// RUN: not fa-jit --window=-1,2 2>&1 | FileCheck %s --check-prefix=WINDOW
// WINDOW: fa-jit: error: --window expects L,R with L, R >= 0, got '-1,2'
// RUN: not fa-jit --window=3 2>&1 | FileCheck %s --check-prefix=WINDOW1
// WINDOW1: fa-jit: error: --window expects L,R with L, R >= 0, got '3'

// RUN: not fa-jit --shape=1,2,2,16 2>&1 | FileCheck %s --check-prefix=SHAPE
// SHAPE: fa-jit: error: --shape expects B,Hq,Hkv,Nq,Nk,D[,Dv] of positive sizes, got '1,2,2,16'
// RUN: not fa-jit --shape=1,3,2,16,16,32 2>&1 | FileCheck %s --check-prefix=HEADS
// HEADS: fa-jit: error: 'fa.attention' op query heads (3) must be a multiple of key/value heads (2)
// RUN: not fa-jit --dtype=f64 2>&1 | FileCheck %s --check-prefix=DTYPE
// DTYPE: fa-jit: error: --dtype must be f32, f16 or bf16, got 'f64'

// RUN: not fa-jit --emit=mlir --host-vector-bits=100 2>&1 | FileCheck %s --check-prefix=VBITS
// VBITS: fa-jit: error: --host-vector-bits must be 0, 128, 256 or 512, got 100
// RUN: not fa-jit --causal=diagonal 2>&1 | FileCheck %s --check-prefix=CAUSAL
// CAUSAL: fa-jit: error: --causal must be top-left or bottom-right, got 'diagonal'
// RUN: not fa-jit --emit=sass 2>&1 | FileCheck %s --check-prefix=EMIT
// EMIT: fa-jit: error: --emit must be kernel, mlir, llvm or ptx, got 'sass'
// RUN: not fa-jit --scale=-1 2>&1 | FileCheck %s --check-prefix=SCALE
// SCALE: fa-jit: error: 'fa.attention' op scale must be finite and positive, got -1

// .npy files: unreadable, wrong dtype, wrong shape, wrong count.
// RUN: %python %S/Inputs/npy_util.py array %t/q.npy --shape=1,2,8,32
// RUN: %python %S/Inputs/npy_util.py array %t/k.npy --shape=1,2,9,32
// RUN: %python %S/Inputs/npy_util.py array %t/v.npy --shape=1,2,9,32
// RUN: %python %S/Inputs/npy_util.py array %t/k16.npy --shape=1,2,9,32 --dtype=f16
// RUN: %python %S/Inputs/npy_util.py array %t/k-d16.npy --shape=1,2,9,16
// RUN: %python %S/Inputs/npy_util.py array %t/q-bf16.npy --shape=2,2,64,32 --dtype=bf16
// RUN: echo "not an array" > %t/garbage.npy

// RUN: not fa-jit --inputs=%t/garbage.npy,%t/k.npy,%t/v.npy 2>&1 | FileCheck %s --check-prefix=GARBAGE
// GARBAGE: fa-jit: error: {{.*}}garbage.npy: not a NumPy .npy file
// RUN: not fa-jit --inputs=%t/q.npy,%t/none.npy,%t/v.npy 2>&1 | FileCheck %s --check-prefix=NONE
// NONE: fa-jit: error: {{.*}}none.npy: {{.*}}
// RUN: not fa-jit --inputs=%t/q.npy,%t/k16.npy,%t/v.npy 2>&1 | FileCheck %s --check-prefix=NPY-DTYPE
// NPY-DTYPE: fa-jit: error: {{.*}}k16.npy: expected dtype f32, got f16
// RUN: not fa-jit --dtype=bf16 --inputs=%t/q.npy,%t/k.npy,%t/v.npy 2>&1 | FileCheck %s --check-prefix=NPY-DTYPE-FLAG
// NPY-DTYPE-FLAG: fa-jit: error: {{.*}}q.npy: expected dtype bf16, got f32
// RUN: not fa-jit --inputs=%t/q.npy,%t/k-d16.npy,%t/v.npy 2>&1 | FileCheck %s --check-prefix=NPY-SHAPE
// NPY-SHAPE: fa-jit: error: {{.*}}k-d16.npy: expected shape [1, 2, ?, 32], got [1, 2, 9, 16]
// RUN: not fa-jit --shape=1,2,2,8,10,32 --inputs=%t/q.npy,%t/k.npy,%t/v.npy 2>&1 | FileCheck %s --check-prefix=NPY-SHAPE-FLAG
// NPY-SHAPE-FLAG: fa-jit: error: {{.*}}k.npy: expected shape [1, 2, 10, 32], got [1, 2, 9, 32]
// RUN: not fa-jit --inputs=%t/q.npy,%t/k.npy 2>&1 | FileCheck %s --check-prefix=NPY-COUNT
// NPY-COUNT: fa-jit: error: --inputs expects q.npy,k.npy,v.npy[,bias.npy], got '{{.*}}'

// Against an op from a file: its element type and static shape rule.
// RUN: not fa-jit %S/Inputs/mask-mod.mlir --inputs=%t/q.npy,%t/k.npy,%t/v.npy 2>&1 | FileCheck %s --check-prefix=FILE-DTYPE
// FILE-DTYPE: fa-jit: error: {{.*}}q.npy: expected dtype bf16, got f32
// RUN: not fa-jit %S/Inputs/mask-mod.mlir --inputs=%t/q-bf16.npy,%t/k.npy,%t/v.npy 2>&1 | FileCheck %s --check-prefix=FILE-SHAPE
// FILE-SHAPE: fa-jit: error: {{.*}}k.npy: expected dtype bf16, got f32
// RUN: not fa-jit %S/Inputs/mask-mod.mlir --shape=2,2,2,64,60,32 2>&1 | FileCheck %s --check-prefix=FILE-SHAPE-FLAG
// FILE-SHAPE-FLAG: fa-jit: error: --shape gives Nk=60 but the op has Nk=64
// RUN: not fa-jit %S/Inputs/score-mod.mlir 2>&1 | FileCheck %s --check-prefix=DYNAMIC
// DYNAMIC: fa-jit: error: the op's B is dynamic; give the sizes with --shape or --inputs
// RUN: not fa-jit %S/Inputs/mask-mod.mlir --causal=top-left 2>&1 | FileCheck %s --check-prefix=FILE-FLAG
// FILE-FLAG: fa-jit: error: --causal cannot be combined with an input file; the file gives the variant
// RUN: not fa-jit %S/Inputs/sin-mod.mlir --lse-output=%t/lse.npy 2>&1 | FileCheck %s --check-prefix=NO-LSE
// NO-LSE: fa-jit: error: --lse-output: the op has no lse result

// Files that do not hold exactly one valid fa.attention or fa.attention_grad.
// RUN: not fa-jit %S/Inputs/two-ops.mlir 2>&1 | FileCheck %s --check-prefix=TWO
// TWO: fa-jit: error: {{.*}}two-ops.mlir: expected exactly one fa.attention or fa.attention_grad, found 2
// TWO-NEXT: fa-jit: note: {{.*}}two-ops.mlir:3:8: fa.attention here
// TWO-NEXT: fa-jit: note: {{.*}}two-ops.mlir:6:9: fa.attention here
// RUN: not fa-jit %S/Inputs/no-op.mlir 2>&1 | FileCheck %s --check-prefix=ZERO
// ZERO: fa-jit: error: {{.*}}no-op.mlir: expected exactly one fa.attention or fa.attention_grad, found 0
// RUN: not fa-jit %S/Inputs/invalid.mlir 2>&1 | FileCheck %s --check-prefix=INVALID
// INVALID: fa-jit: error: {{.*}}invalid.mlir:3:8: 'fa.attention' op window sizes must be non-negative, got [-1, 2]
// RUN: echo "func.func @f(" > %t/syntax.mlir
// RUN: not fa-jit %t/syntax.mlir 2>&1 | FileCheck %s --check-prefix=SYNTAX
// SYNTAX: fa-jit: error: {{.*}}syntax.mlir:{{[0-9]+}}:{{[0-9]+}}: {{.*}}

// Variants the host pipeline does not support: its diagnostic, then ours.
// (Dropout runs on the host now: backward-dropout.mlir.) A score_mod whose
// derivative fa-differentiate-score-mod does not know runs forward only.
// RUN: fa-jit %S/Inputs/atan-mod.mlir | FileCheck %s --check-prefix=ATAN-FWD
// ATAN-FWD: variant=score_mod
// RUN: not fa-jit %S/Inputs/atan-mod.mlir --backward 2>&1 | FileCheck %s --check-prefix=ATAN
// ATAN: fa-jit: error: {{.*}}atan-mod.mlir:9:10: 'math.atan' op has no derivative that fa-differentiate-score-mod knows; score_mod cannot be differentiated
// ATAN-NEXT: fa-jit: error: fa-pipeline-host failed
