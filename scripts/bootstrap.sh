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

# ptxas, so that the lit tests that assemble the GPU route's PTX run here
# too: the CUDA toolkit's where it is installed, else the one PyPI's
# nvidia-cuda-nvcc wheel carries (it needs no GPU), linked into
# /usr/local/bin.
if ! command -v ptxas >/dev/null && [ ! -x /usr/local/cuda/bin/ptxas ]; then
  say "installing ptxas (nvidia-cuda-nvcc from PyPI)"
  "$py" -m pip install -q --disable-pip-version-check \
    ${PIP_BREAK_SYSTEM_PACKAGES:+--break-system-packages} 'nvidia-cuda-nvcc==13.0.*' ||
    "$py" -m pip install -q --disable-pip-version-check --break-system-packages \
      'nvidia-cuda-nvcc==13.0.*'
  site=$("$py" -c 'import sysconfig; print(sysconfig.get_paths()["purelib"])')
  ptxas=$(find "$site/nvidia" -name ptxas -type f 2>/dev/null | head -1)
  [ -n "$ptxas" ] || { echo "bootstrap: nvidia-cuda-nvcc has no ptxas" >&2; exit 1; }
  chmod +x "$ptxas"
  ln -sf "$ptxas" /usr/local/bin/ptxas
fi
say "ptxas: $(command -v ptxas || echo /usr/local/cuda/bin/ptxas)"

# torch, for the torch half of the Python tests (CPU), when FA_WITH_TORCH=1
# (CI sets it). PyPI's wheel brings CUDA libraries too (about 5 GB). Asked
# for, it must install: otherwise those tests would skip and the suite would
# pass with less coverage than it claims.
if [ "${FA_WITH_TORCH:-0}" = 1 ] && ! "$py" -c 'import torch' 2>/dev/null; then
  say "installing torch into $py (FA_WITH_TORCH=1)"
  if ! timeout 1500 "$py" -m pip install -q --disable-pip-version-check \
    ${PIP_BREAK_SYSTEM_PACKAGES:+--break-system-packages} torch &&
    ! timeout 1500 "$py" -m pip install -q --disable-pip-version-check \
      --break-system-packages torch; then
    echo "bootstrap: FA_WITH_TORCH=1 but torch did not install" >&2
    exit 1
  fi
  if ! "$py" -c 'import torch' >/dev/null 2>&1; then
    echo "bootstrap: FA_WITH_TORCH=1 but torch does not import:" >&2
    "$py" -c 'import torch' >&2 || true
    exit 1
  fi
fi

say "done: LLVM $(/usr/lib/llvm-22/bin/llvm-config --version), $(cmake --version | head -1)"
