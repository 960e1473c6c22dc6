#!/usr/bin/env bash
# Checks that a shared library exports FA's own API only (symbols in the fa
# namespace), not the MLIR/LLVM linked into it.
set -euo pipefail
lib=${1:?usage: check-exports.sh LIBRARY}
bad=$(nm -D --defined-only "$lib" | awk '$2 ~ /^[A-TV-Z]$/ {print $3}' |
  grep -v -E '^_ZNK?2fa|^_ZT[ISV]N2fa' || true)
if [ -n "$bad" ]; then
  echo "error: $lib exports symbols outside namespace fa:" >&2
  echo "$bad" | head -20 >&2
  exit 1
fi
count=$(nm -D --defined-only "$lib" | grep -c -E ' [A-TV-Z] _ZNK?2fa' || true)
if [ "$count" -eq 0 ]; then
  echo "error: $lib exports no fa:: symbol" >&2
  exit 1
fi
echo "$lib exports $count fa:: symbols and nothing else"
