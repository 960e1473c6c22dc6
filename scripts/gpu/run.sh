#!/usr/bin/env bash
# Runs FA's GPU checks ON the GPU machine, from the repo root, with OUT set (the
# device tool sets it): unpacks .pack/fa-gpu.tar.xz (made by
# scripts/gpu/pack.sh; carry ".pack") to /tmp/fa, prints the GPUs, runs the
# steps below, tees everything into $OUT/run.log and prints a summary table
# last. Needs no network, apt or pip. See docs/runtime.md.
#
#   scripts/gpu/run.sh                      every step
#   FA_STEPS="runtime lit" scripts/gpu/run.sh   only these steps
#
# Environment:
#   OUT                  output folder (required)
#   FA_PACK              archive (default .pack/fa-gpu.tar.xz)
#   FA_GPU_ROOT          where to unpack (default /tmp/fa)
#   FA_STEPS             steps to run, by name (default: all)
#   FA_STEP_TIMEOUT_S    time limit of a step (default 480)
#   FA_BENCH_ARGS        extra arguments of the forward benchmark
#                        (default: --budget-s 240)
#   FA_BENCH_BWD_ARGS    the same for the backward benchmark
#
# The device tool brings back at most 8 files from $OUT: run.log and the
# results the steps write (runtime.json, api.json, lit.json, python.xml,
# bench_fwd.json, bench_fwd.png, bench_bwd.json; bench_bwd.png may not come
# back). Keep new steps to one file each.
#
# Exit status: 0 when no step failed, 1 otherwise. Where a GPU is listed, a
# step that skips itself (exit 77) or is missing from the pack has failed.
set -euo pipefail
cd "$(dirname "$0")/../.."

: "${OUT:?run.sh: set OUT to the folder for logs and results (the device tool sets it)}"
mkdir -p "$OUT"
OUT=$(cd "$OUT" && pwd)
archive=${FA_PACK:-.pack/fa-gpu.tar.xz}
FA=${FA_GPU_ROOT:-/tmp/fa}
step_timeout=${FA_STEP_TIMEOUT_S:-480}
log=$OUT/run.log
: >"$log"

say() { echo "run.sh: $*" | tee -a "$log"; }
die() {
  echo "run.sh: error: $*" | tee -a "$log" >&2
  exit 1
}

#===-------------------------------------------------------------------------===#
# Unpack and look around.
#===-------------------------------------------------------------------------===#

[ -f "$archive" ] || die "$archive not found: run scripts/gpu/pack.sh on the development machine and carry \".pack\""
say "unpacking $archive ($(du -h "$archive" | cut -f1)) to $FA"
rm -rf "$FA"
mkdir -p "$FA"
tar -xJf "$archive" -C "$FA" --strip-components=1
[ -f "$FA/MANIFEST.txt" ] && sed -n '1,/^$/p' "$FA/MANIFEST.txt" | tee -a "$log"

say "GPUs (nvidia-smi -L):"
gpu=0
if command -v nvidia-smi >/dev/null &&
  nvidia-smi -L 2>&1 | tee -a "$log" | grep '^GPU ' >/dev/null; then
  gpu=1
  nvidia-smi --query-gpu=name,driver_version,memory.total,clocks.max.sm,power.limit \
    --format=csv 2>&1 | tee -a "$log" || true
else
  say "no GPU listed: the CUDA tests will skip"
fi

# Python with torch, numpy and pytest (the image's venv), the unpacked tools,
# libfa.so and the lit tools' libraries.
if [ -x /opt/torch/.venv/bin/python3 ]; then
  export PATH=/opt/torch/.venv/bin:$PATH
fi
export PATH=$FA/bin:$FA/tools/bin:$PATH
export LD_LIBRARY_PATH=$FA/lib:$FA/tools/lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}
# A fresh kernel cache for the run. Where a GPU is listed, FA_REQUIRE_GPU=1
# makes every GPU test (fa-jit --target=auto, GoogleTest, pytest, the shell
# scripts) fail with the driver's reason instead of skipping or falling back
# to the host (docs/accuracy.md, docs/runtime.md).
export FA_CACHE_DIR=$FA/cache
if [ "$gpu" = 1 ]; then export FA_REQUIRE_GPU=1; fi

missing=$(ldd "$FA"/bin/* "$FA"/lib/*.so "$FA"/tests/* 2>/dev/null | grep 'not found' | sort -u || true)
[ -z "$missing" ] || say "warning: unresolved shared libraries:"$'\n'"$missing"

#===-------------------------------------------------------------------------===#
# The steps: name | files under $FA it needs (skipped with a note when one is
# missing) | command, run in $FA by bash. A new check is one more line here.
#===-------------------------------------------------------------------------===#

steps=(
  "runtime|tests/FARuntimeTests|tests/FARuntimeTests --gtest_output=json:$OUT/runtime.json"
  "gpu|test/gpu/gpu-tests.sh bin/fa-jit|test/gpu/gpu-tests.sh $FA/bin/fa-jit"
  "api|tests/FAAPITests|tests/FAAPITests --gtest_output=json:$OUT/api.json"
  "backward|tests/FACudaBackwardTests|tests/FACudaBackwardTests"
  "concurrency|tests/FAConcurrencyTests|tests/FAConcurrencyTests"
  "sanitize|test/gpu/sanitize.sh bin/fa-jit|test/gpu/sanitize.sh $FA/bin/fa-jit"
  "lit|tools/lit/lit.py test/lit.site.cfg.py.pack tools/bin/FileCheck|python3 tools/lit/lit.py -sv --output $OUT/lit.json test"
  "python|python/src/bindings.cpp python/tests include/fa/fa.h|build_python && python3 -m pytest -q -p no:cacheprovider --junitxml=$OUT/python.xml python/tests"
  "bench|bench/attention_fwd.py python/src/bindings.cpp include/fa/fa.h|build_python && python3 bench/attention_fwd.py --json $OUT/bench_fwd.json --png $OUT/bench_fwd.png ${FA_BENCH_ARGS:---budget-s 240}"
  "bench_bwd|bench/attention_bwd.py python/src/bindings.cpp include/fa/fa.h|build_python && python3 bench/attention_bwd.py --json $OUT/bench_bwd.json --png $OUT/bench_bwd.png ${FA_BENCH_BWD_ARGS:---budget-s 240}"
)

# lit: the site configuration with this machine's paths.
if [ -f "$FA/test/lit.site.cfg.py.pack" ]; then
  sed "s|@FA_ROOT@|$FA|g" "$FA/test/lit.site.cfg.py.pack" >"$FA/test/lit.site.cfg.py"
fi

# python: compile fa._C here against libfa.so (the image has pybind11).
# shellcheck disable=SC2317 # (called through the steps' bash -c)
build_python() {
  local suffix includes
  suffix=$(python3 -c 'import sysconfig; print(sysconfig.get_config_var("EXT_SUFFIX"))')
  read -ra includes <<<"$(python3 -m pybind11 --includes)"
  echo "compiling python/fa/_C$suffix"
  g++ -O2 -std=c++17 -shared -fPIC "${includes[@]}" \
    -I"$FA/include" python/src/bindings.cpp -L"$FA/lib" -lfa \
    -Wl,-rpath,"$FA/lib" -o "python/fa/_C$suffix"
  export PYTHONPATH=$FA/python${PYTHONPATH:+:$PYTHONPATH}
}
export -f build_python
export FA OUT

results=()
failed=0
for entry in "${steps[@]}"; do
  IFS='|' read -r name needs command <<<"$entry"
  if [ -n "${FA_STEPS:-}" ] && [[ " $FA_STEPS " != *" $name "* ]]; then
    results+=("$name|skipped|-|not in FA_STEPS")
    continue
  fi
  absent=""
  for path in $needs; do
    [ -e "$FA/$path" ] || absent="$absent $path"
  done
  if [ -n "$absent" ]; then
    # On the GPU machine every step must run: a missing file is a failure.
    if [ "$gpu" = 1 ]; then
      say "step $name: FAIL (not in the pack:$absent)"
      results+=("$name|FAIL|-|not in the pack:$absent")
      failed=1
    else
      say "step $name: skipped (not in the pack:$absent)"
      results+=("$name|skipped|-|not in the pack:$absent")
    fi
    continue
  fi

  say "step $name: $command"
  step_log=$(mktemp "${TMPDIR:-/tmp}/fa-step-$name.XXXXXX")
  start=$(date +%s)
  set +e
  (cd "$FA" && timeout --kill-after=10 "$step_timeout" bash -c "$command") 2>&1 |
    tee "$step_log" | tee -a "$log"
  rc=${PIPESTATUS[0]}
  set -e
  seconds=$(($(date +%s) - start))

  # A one-line note from the step's own summary.
  note=""
  case $name in
  runtime | api | backward | concurrency)
    note=$(grep -hoE '^\[ +(PASSED|SKIPPED|FAILED) +\] [0-9]+ tests?' "$step_log" |
      sed -E 's/^\[ +([A-Z]+) +\] ([0-9]+).*/\2 \L\1/' | paste -sd, - | sed 's/,/, /g')
    ;;
  lit)
    note=$(grep -hE '^ *(Passed|Failed|Unsupported|Expectedly Failed|Unresolved|Timed Out) *:' "$step_log" |
      sed -E 's/^ *([A-Za-z ]+[a-z]) *: *([0-9]+).*/\2 \L\1/' | paste -sd, - | sed 's/,/, /g')
    ;;
  gpu | sanitize)
    note=$(grep -hoE '[0-9]+ passed, [0-9]+ failed|skipped \(.*\)' "$step_log" | tail -1)
    ;;
  python)
    note=$(grep -hE '[0-9]+ (passed|failed|skipped|error)' "$step_log" | tail -1 | tr -d '=' | sed 's/^ *//')
    ;;
  esac
  if [ "$rc" = 124 ] || [ "$rc" = 137 ]; then
    note="timed out after ${step_timeout}s; $note"
  fi
  if [ "$rc" = 0 ]; then
    results+=("$name|pass|$seconds|$note")
  elif [ "$rc" = 77 ] && [ "$gpu" != 1 ]; then # The step's own "skipped".
    results+=("$name|skipped|$seconds|${note:-the step skipped itself (exit 77)}")
  else
    results+=("$name|FAIL (rc $rc)|$seconds|$note")
    failed=1
  fi
  rm -f "$step_log"
done

#===-------------------------------------------------------------------------===#
# The summary, last.
#===-------------------------------------------------------------------------===#

{
  echo
  echo "== FA GPU run: $(nvidia-smi --query-gpu=name --format=csv,noheader 2>/dev/null | head -1 || echo 'no GPU') =="
  printf '%-8s %-12s %7s  %s\n' step result seconds note
  for r in "${results[@]}"; do
    IFS='|' read -r name result seconds note <<<"$r"
    printf '%-8s %-12s %7s  %s\n' "$name" "$result" "$seconds" "$note"
  done
  produced=()
  for f in "$OUT"/*; do
    [ "$f" = "$log" ] || produced+=("$(basename "$f")")
  done
  echo "logs: $log; results in $OUT: ${produced[*]:-none}"
} | tee -a "$log"
exit "$failed"
