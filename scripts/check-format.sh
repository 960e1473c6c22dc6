#!/usr/bin/env bash
# Fails when a tracked C++ file is not clang-format clean (LLVM style).
set -euo pipefail
cd "$(dirname "$0")/.."
cf=$(command -v clang-format-22 || command -v clang-format)
mapfile -t files < <(git ls-files '*.cpp' '*.h' 2>/dev/null ||
  find include lib tools unittests runtime examples -name '*.cpp' -o -name '*.h')
bad=()
for f in "${files[@]}"; do
  [ -f "$f" ] || continue
  "$cf" --dry-run --Werror "$f" >/dev/null 2>&1 || bad+=("$f")
done
if [ ${#bad[@]} -gt 0 ]; then
  echo "not clang-formatted (run: $cf -i FILE):" >&2
  printf '  %s\n' "${bad[@]}" >&2
  exit 1
fi
echo "${#files[@]} files clang-format clean"
