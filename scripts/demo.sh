#!/usr/bin/env bash
# FA's main job: compile an attention variant and run it, on the GPU where
# there is one (--target=auto) and on the host CPU otherwise, checked against
# the float64 reference.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/build.sh fa-opt fa-jit
echo "== fa-opt: the variant through the reference lowering (first lines)"
build/bin/fa-opt examples/causal_gqa.mlir -fa-decompose | head -n 12
echo "== fa-jit: compile, run and check against the float64 reference"
build/bin/fa-jit examples/causal_gqa.mlir --shape=2,8,2,300,300,64 --target=auto --check
