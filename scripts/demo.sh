#!/usr/bin/env bash
# FA's main job: compile an attention variant and run it, on the GPU where
# there is one (--target=auto) and on the host CPU otherwise, checked against
# the float64 reference.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/build.sh fa-opt fa-jit
echo "== fa-opt: the variant after fa-tile and fa-online-softmax (the loop nest)"
# sed reads all of its input, so fa-opt never sees a closed pipe.
build/bin/fa-opt examples/causal_gqa.mlir -fa-tile -fa-online-softmax |
  sed -n '/scf.forall/,/scf.for /p' | sed -n '1,8p'
echo "== fa-jit: compile, run and check against the float64 reference"
build/bin/fa-jit examples/causal_gqa.mlir --shape=2,8,2,300,300,64 --target=auto --check
echo "== fa-jit: its backward (dQ, dK, dV), checked the same way"
build/bin/fa-jit examples/causal_gqa.mlir --backward --shape=2,8,2,300,300,64 --target=auto --check
