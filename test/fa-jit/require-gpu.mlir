// Where a GPU must be used (FA_REQUIRE_GPU=1, or a GPU the kernel driver
// lists), --target=auto never falls back to the host: a driver that does not
// load fails with its reason. FA_REQUIRE_GPU=0 allows the fallback.
// REQUIRES: no-gpu
// RUN: env FA_REQUIRE_GPU=1 not fa-jit --target=auto --shape=1,1,1,8,8,64 2>&1 | FileCheck %s --check-prefix=REQUIRED
// REQUIRED: fa-jit: error: --target=auto: a GPU is present (or FA_REQUIRE_GPU=1) but CUDA is unavailable: {{.+}}
// RUN: env FA_REQUIRE_GPU=0 fa-jit --target=auto --shape=1,1,1,8,8,64 --check | FileCheck %s --check-prefix=HOST
// HOST: fa-jit: ran fa.attention on host:
// The GPU script fails (exit 1) instead of skipping (exit 77).
// RUN: env FA_REQUIRE_GPU=1 %S/../gpu/gpu-tests.sh fa-jit > %t.out 2>&1; echo "exit $?" >> %t.out
// RUN: FileCheck %s --check-prefix=SCRIPT < %t.out
// SCRIPT: gpu-tests: FAIL: the GPU probe failed:
// SCRIPT: CUDA is unavailable
// SCRIPT: exit 1
