#!/usr/bin/env bash
# Builds FA and runs the whole test suite through ctest: lit (IR tests),
# GoogleTest unit tests, pytest, the GPU scripts (skipped without a GPU), the
# export check of libfa.so and the format check. Every skipped or unsupported
# test is then listed by name, so that lost coverage shows in the log.
set -euo pipefail
cd "$(dirname "$0")/.."
build=${FA_BUILD_DIR:-build}
scripts/build.sh
set +e
ctest --test-dir "$build" --output-on-failure "$@" | tee "$build/ctest.out"
rc=${PIPESTATUS[0]}
set -e

# What did not run, by name: ctest's own skips (GoogleTest cases, the GPU
# script), lit's unsupported tests and pytest's skips, from ctest's log.
log=$build/Testing/Temporary/LastTest.log
if [ -f "$log" ]; then
  skipped=$(
    {
      grep -oE '^\[  SKIPPED \] [A-Za-z][A-Za-z0-9_./-]*' "$log" | sed 's/^\[  SKIPPED \] /gtest: /'
      awk '/^Unsupported Tests \(/ { on = 1; next } on && /^  / { print "lit: " $0; next } { on = 0 }' "$log" | sed 's/lit:  *\(.*\)/lit: \1/'
      grep -E '^SKIPPED ' "$log" | sed 's/^/pytest: /'
      grep -E '^[a-z-]+: skipped' "$log" | sed 's/^/script: /'
    } | sort -u
  ) || true # a grep that finds nothing is no failure
  echo
  if [ -n "$skipped" ]; then
    echo "Skipped or unsupported tests ($(echo "$skipped" | wc -l)):"
    echo "$skipped" | sed 's/^/  /'
  else
    echo "Skipped or unsupported tests: none"
  fi
fi
# ctest's summary line last, for whoever reads the closing lines.
grep -E 'tests passed|tests failed' "$build/ctest.out" | tail -1 || true
exit "$rc"
