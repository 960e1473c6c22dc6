#!/usr/bin/env bash
# compute-sanitizer over a representative set of GPU kernels: memcheck
# (out-of-bounds and misaligned accesses), racecheck (shared-memory hazards)
# and synccheck (barriers) on the forward and the backward, with odd N,
# Nq != Nk, causal, window, GQA/MQA, the scored path and every head dim the
# GPU takes. Each run also checks the numbers (--check). Exits 77 (skipped)
# without a GPU or without compute-sanitizer.
# Usage: sanitize.sh [path/to/fa-jit]
set -uo pipefail
fajit=${1:-$(dirname "$0")/../../build/bin/fa-jit}
inputs=$(dirname "$0")/Inputs

sanitizer=$(command -v compute-sanitizer || echo /usr/local/cuda/bin/compute-sanitizer)
if [ ! -x "$sanitizer" ]; then
  echo "sanitize: skipped (no compute-sanitizer)"
  exit 77
fi
source "$(dirname "$0")/Inputs/probe.sh"
probe_gpu sanitize "$fajit"

# Which head dims the forward and the backward take on this build (the
# kernel refuses the others with a diagnostic before anything runs).
takes() { "$fajit" --target=auto --emit=ptx --dtype=bf16 "$@" >/dev/null 2>&1; }

passed=0 failed=0
run() {
  local tool=$1 out
  shift
  if out=$("$sanitizer" --tool "$tool" --error-exitcode 3 \
    "$fajit" --target=auto --check "$@" 2>&1) &&
    [[ "$out" == *"ERROR SUMMARY: 0 errors"* || "$out" == *"RACECHECK SUMMARY: 0 hazards"* ]]; then
    passed=$((passed + 1))
    echo "PASS: $tool $*"
  else
    failed=$((failed + 1))
    echo "FAIL: $tool $*"
    echo "$out" | tail -30 | sed 's/^/    /'
  fi
}

variants=(
  "--dtype=bf16 --shape=1,4,2,257,131,64 --causal=bottom-right --lse"
  "--dtype=f16 --shape=2,4,1,100,333,128 --window=40,8 --lse"
  "--dtype=bf16 --shape=1,2,2,77,77,96 --softcap=20"
  "--dtype=bf16 --shape=1,4,2,257,131,128 --causal=top-left --block-q=128 --block-kv=32 --lse"
  "--dtype=bf16 --shape=1,4,2,257,331,128 --causal=bottom-right --kv-stages=2 --lse"
  "--dtype=f16 --shape=2,2,1,200,129,64 --window=40,8 --kv-stages=2"
  "--dtype=bf16 --shape=1,4,2,257,531,64 --causal=bottom-right --kv-stages=3 --lse"
  "--dtype=f16 --shape=1,2,1,100,531,128 --window=300,8 --kv-stages=3"
  "$inputs/score-mod-all.mlir --shape=1,4,2,77,131,128"
  "$inputs/mask-mod-docs.mlir --shape=1,4,2,100,133,64"
  "--dtype=bf16 --shape=1,4,2,257,131,192,128 --causal=bottom-right --lse"
  "--dtype=f16 --shape=1,2,2,77,200,80 --softcap=20 --lse"
  # A persistent grid with several work items a CTA.
  "--dtype=bf16 --shape=8,16,4,300,257,128 --lse"
  # Head dims padded to 128 columns (TMA boxes per panel, zeros past D),
  # persistent, Dk != Dv.
  "--dtype=bf16 --shape=4,16,4,300,257,96,80 --lse"
)
# Captures of exactly N entries (ragged tiles must read them in bounds).
caps=$(mktemp -d)
trap 'rm -rf "$caps"' EXIT
python3 "$(dirname "$0")/../fa-jit/Inputs/captures_util.py" gen "$caps" \
  --shape=1,4,77,8 --seed=3
variants+=("$inputs/captures-docs.mlir --shape=1,4,2,77,77,64 --captures=$caps/doc.npy,$caps/tab.npy")
if takes --shape=1,1,1,1,1,256; then
  variants+=("--dtype=bf16 --shape=1,4,2,129,200,256 --causal=bottom-right --lse")
else
  echo "sanitize: the forward does not take D = 256 here; left out"
fi
backward=(
  "--backward $inputs/captures-docs.mlir --shape=1,4,2,77,77,64 --captures=$caps/doc.npy,$caps/tab.npy"
  "--backward --dtype=bf16 --shape=1,4,2,257,131,64 --causal=bottom-right"
  "--backward --dtype=bf16 --shape=1,4,2,257,131,64 --causal=bottom-right --bwd-atomic-dq"
  "--backward --dtype=f16 --shape=1,4,1,100,333,128 --window=40,8 --bwd-atomic-dq"
  "--backward --dtype=f16 --shape=1,4,1,100,333,128 --window=40,8 --bwd-deterministic"
  "--backward --dtype=bf16 --shape=1,4,2,131,77,64 --dropout=0.2 --causal=top-left --bwd-atomic-dq"
  "--backward --dtype=f16 --shape=1,2,1,77,200,128 --dropout=0.1 --bias --dbias"
  # Atomic dQ's 8-warp dK/dV kernel (sm_90a; wgmma, the default there, and
  # mma.sync): dQ pipelined across Q tiles and query heads, a ragged last
  # K/V tile; the dq kernel's dK/dV kernel in 8 warps.
  "--backward --dtype=bf16 --shape=1,4,2,200,260,128 --causal=bottom-right --bwd-atomic-dq"
  "--backward --dtype=bf16 --shape=1,4,2,200,260,128 --causal=bottom-right --bwd-atomic-dq --bwd-wgmma=false"
  "--backward --dtype=f16 --shape=1,2,2,300,140,64 --window=50,20"
  "--backward --dtype=bf16 --shape=1,2,1,150,140,64 --bwd-dkdv-warps=8 --bwd-deterministic"
)
if takes --backward --shape=1,1,1,1,1,256; then
  backward+=("--backward --dtype=bf16 --shape=1,2,2,129,200,256 --causal=top-left")
fi

for tool in memcheck racecheck synccheck; do
  for v in "${variants[@]}" "${backward[@]}"; do
    # shellcheck disable=SC2086 # (word splitting of the variant is meant)
    run "$tool" $v
  done
done
echo "sanitize: $passed passed, $failed failed"
[ "$failed" = 0 ]
