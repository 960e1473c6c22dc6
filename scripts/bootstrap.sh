#!/usr/bin/env bash
# Installs everything FA's build and tests need on Debian 12 (bookworm).
# Idempotent: packages already present are left as they are. Run as root.
set -euo pipefail

say() { printf '\033[1mbootstrap:\033[0m %s\n' "$*"; }

DEBIAN_PACKAGES=(
  # Compiler, build system and linker (gold links the static MLIR fast).
  g++ cmake ninja-build ccache binutils git xz-utils
  # LLVM/MLIR 22: libraries, headers, CMake config, mlir-tblgen, lit, FileCheck.
  llvm-22-dev llvm-22-tools libmlir-22-dev mlir-22-tools clang-format-22
  # Libraries LLVM links against, unit tests, Python bindings.
  zlib1g-dev libzstd-dev libgtest-dev pybind11-dev
  python3 python3-dev python3-pip python3-venv
)
PYTHON_PACKAGES=(numpy ml_dtypes pytest)

if [ "$(id -u)" -ne 0 ]; then
  echo "bootstrap: run as root (it installs Debian packages)" >&2
  exit 1
fi

missing=()
for p in "${DEBIAN_PACKAGES[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "ok installed" ||
    missing+=("$p")
done
if [ ${#missing[@]} -gt 0 ]; then
  say "installing Debian packages: ${missing[*]}"
  apt-get update -qq
  DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends \
    "${missing[@]}" >/dev/null
else
  say "Debian packages already installed"
fi

# Python packages for the test scripts (numpy .npy files, bf16 via ml_dtypes)
# and the Python package's tests (pytest), installed into the python3 found
# first on PATH.
py=$(command -v python3)
if ! "$py" -c 'import numpy, ml_dtypes, pytest' 2>/dev/null; then
  say "installing Python packages into $py: ${PYTHON_PACKAGES[*]}"
  "$py" -m pip install -q --disable-pip-version-check \
    ${PIP_BREAK_SYSTEM_PACKAGES:+--break-system-packages} "${PYTHON_PACKAGES[@]}" ||
    "$py" -m pip install -q --disable-pip-version-check --break-system-packages \
      "${PYTHON_PACKAGES[@]}"
else
  say "Python packages already installed"
fi

# torch, for the torch half of the Python tests (CPU; they skip without it),
# when FA_WITH_TORCH=1 (CI sets it). PyPI's wheel brings CUDA libraries too
# (about 5 GB), so it needs room and time: with less than 12 GB free, or
# when the install fails or takes over 15 minutes, the torch tests skip.
if [ "${FA_WITH_TORCH:-0}" = 1 ] && ! "$py" -c 'import torch' 2>/dev/null; then
  site=$("$py" -c 'import sysconfig; print(sysconfig.get_paths()["purelib"])')
  free_gb=$(df -Pk "$(dirname "$site")" | awk 'NR == 2 { print int($4 / 1048576) }')
  if [ "$free_gb" -lt 12 ]; then
    say "not installing torch: ${free_gb} GB free (the torch tests will skip)"
  else
    say "installing torch into $py (FA_WITH_TORCH=1)"
    timeout 900 "$py" -m pip install -q --disable-pip-version-check \
      ${PIP_BREAK_SYSTEM_PACKAGES:+--break-system-packages} torch ||
      timeout 900 "$py" -m pip install -q --disable-pip-version-check \
        --break-system-packages torch ||
      say "warning: torch did not install (the torch tests will skip)"
    # A half-done install (a timeout) must not leave a torch that fails to
    # import: the tests skip on ImportError only.
    if ! "$py" -c 'import torch' >/dev/null 2>&1; then
      "$py" -m pip uninstall -y -q torch >/dev/null 2>&1 || true
    fi
  fi
fi

say "done: LLVM $(/usr/lib/llvm-22/bin/llvm-config --version), $(cmake --version | head -1)"
