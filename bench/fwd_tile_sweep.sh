#!/usr/bin/env bash
# Times the GPU forward kernel's tile configurations (fa-jit --block-q,
# --block-kv, and --kv-stages=S where a tile ends in sS) on one GPU, bf16,
# B * N = 16384, H = 2048 / D (the shapes of docs/performance.md), causal
# and not, and prints one line per run and a table of TFLOP/s per
# configuration last. Usage:
#
#   bench/fwd_tile_sweep.sh [path/to/fa-jit]
#
# Environment: FA_SWEEP_D (default "64 128 192 256"; H = 2048 / D rounded
# down), FA_SWEEP_N (default "1024 4096 16384"), FA_SWEEP_ITERS (fa-jit
# --bench-iters, default 30), FA_SWEEP_TILES (below).
# Exits 77 (skipped) without a GPU.
set -uo pipefail
fajit=${1:-$(dirname "$0")/../build/bin/fa-jit}
iters=${FA_SWEEP_ITERS:-30}

probe=$("$fajit" --target=auto --emit=ptx --shape=1,1,1,1,1,64 --dtype=bf16 2>&1)
if [[ "$probe" == *"needs a GPU target"* ]]; then
  echo "fwd_tile_sweep: skipped (no CUDA device)"
  exit 77
fi

# block-q x block-kv per D (sS: S K/V stages, else one) of sm_90a's forward
# with a producer warpgroup; the first is the default without a causal or
# window mask (docs/gpu-kernel.md; D = 64 and 256 keep 128 and 64 keys
# under one). Widths past 128 keys are the producer-warpgroup kernel's
# only: on sm_80 set FA_SWEEP_TILES (e.g. "128x64s2 64x128 64x64"), which
# replaces the list for every D. Each default assembles with no spills
# (test/fa-jit/ptx.mlir).
tiles() {
  if [ -n "${FA_SWEEP_TILES:-}" ]; then
    echo "$FA_SWEEP_TILES"
    return
  fi
  case $1 in
  32) echo "128x192s2 128x128s2 128x64s2" ;;
  64) echo "128x192s2 128x128s2 128x160s2 128x224s2 128x192s3 128x128s4" ;;
  96) echo "128x128s2 128x176s2 128x64s2" ;;
  128) echo "128x128s2 128x176s2 128x144s2 128x160s2 128x128s3 128x112s3 128x96s4" ;;
  192) echo "128x112s2 128x96s2 128x64s2" ;;
  256) echo "128x80s2 128x64s2" ;;
  esac
}

table=()
for d in ${FA_SWEEP_D:-64 128 192 256}; do
  h=$((2048 / d))
  for n in ${FA_SWEEP_N:-1024 4096 16384}; do
    bsz=$((16384 / n))
    [ "$bsz" -ge 1 ] || bsz=1
    for causal in no yes; do
      flags=()
      [ "$causal" = yes ] && flags=(--causal=bottom-right)
      row="D=$d N=$n causal=$causal"
      for t in $(tiles "$d"); do
        bq=${t%x*} bkv=${t#*x} stages=1
        if [[ "$bkv" == *s* ]]; then
          stages=${bkv#*s} bkv=${bkv%s*}
        fi
        out=$("$fajit" --target=auto --dtype=bf16 --shape=$bsz,$h,$h,$n,$n,$d \
          "${flags[@]}" --block-q="$bq" --block-kv="$bkv" --kv-stages="$stages" --bench \
          --bench-iters="$iters" 2>&1)
        tf=$(echo "$out" | grep -o 'tflops=[0-9.]*' | head -1 | cut -d= -f2)
        echo "D=$d N=$n causal=$causal tile=$t: ${tf:-FAILED}"
        [ -n "$tf" ] || echo "$out" | tail -3 | sed 's/^/    /'
        row+=" $t=${tf:-err}"
      done
      table+=("$row")
    done
  done
done
echo
echo "TFLOP/s by tile (block-q x block-kv, sS: S K/V stages; the unmasked default first):"
printf '%s\n' "${table[@]}"
