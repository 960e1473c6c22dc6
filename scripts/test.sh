#!/usr/bin/env bash
# Builds FA and runs the whole test suite through ctest: lit (IR tests),
# GoogleTest unit tests, the export check of libfa.so and the format check.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/build.sh
ctest --test-dir "${FA_BUILD_DIR:-build}" --output-on-failure "$@"
