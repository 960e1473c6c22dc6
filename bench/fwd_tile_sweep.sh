#!/usr/bin/env bash
# Times the GPU forward kernel's tile configurations (fa-jit --block-q,
# --block-kv, and --kv-stages=S where a tile ends in sS) on one GPU, bf16,
# B * N = 16384, H = 2048 / D (the shapes of docs/performance.md), causal
# and not, and prints one line per run and a table of TFLOP/s per
# configuration last. Usage:
#
#   bench/fwd_tile_sweep.sh [path/to/fa-jit]
#
# Environment: FA_SWEEP_D (default "64 128 256"), FA_SWEEP_N (default
# "1024 4096 16384"), FA_SWEEP_ITERS (fa-jit --bench-iters, default 30).
# Exits 77 (skipped) without a GPU.
set -uo pipefail
fajit=${1:-$(dirname "$0")/../build/bin/fa-jit}
iters=${FA_SWEEP_ITERS:-30}

probe=$("$fajit" --target=auto --emit=ptx --shape=1,1,1,1,1,64 --dtype=bf16 2>&1)
if [[ "$probe" == *"needs a GPU target"* ]]; then
  echo "fwd_tile_sweep: skipped (no CUDA device)"
  exit 77
fi

# block-q x block-kv per D (sS: S K/V stages, else one); the first is the
# default (at D = 128 without causal masks; with them the second). Each
# assembles with no spills on sm_80 and sm_90a (test/fa-jit/ptx-tiles.mlir,
# ptx.mlir) but D = 128's 128x64 with causal masks (1-3 stages) and 128x32
# on sm_90a.
tiles() {
  case $1 in
  32) echo "128x64s2 128x64 128x64s3" ;;
  64) echo "128x64s2 128x64 128x32 64x64 64x128 128x64s3 128x64s4" ;;
  96) echo "64x64 64x32 128x32" ;;
  128) echo "128x64s2 64x128 128x64 64x64 64x32 128x32 64x64s2 128x32s2 128x64s3 64x64s3" ;;
  256) echo "64x64 64x32 64x32s2 64x32s3" ;;
  esac
}

table=()
for d in ${FA_SWEEP_D:-64 128 256}; do
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
echo "TFLOP/s by tile (block-q x block-kv, sS: S K/V stages; the default first, at D = 128 causal the second):"
printf '%s\n' "${table[@]}"
