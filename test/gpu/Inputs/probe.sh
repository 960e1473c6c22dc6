# Sourced by the GPU scripts: probe_gpu NAME FA_JIT returns where a GPU runs
# and ends the script otherwise. --target=auto picks the host only where no
# GPU must be used (no GPU listed and FA_REQUIRE_GPU unset): that is the one
# skip (exit 77). Where a GPU is, a driver failure fails the probe, and the
# script, with the driver's words (exit 1). On success gpu_ptx holds the
# probe kernel's PTX (its `.target` names the GPU's chip).
probe_gpu() {
  local name=$1 fajit=$2 probe
  if probe=$("$fajit" --target=auto --emit=ptx --shape=1,1,1,1,1,64 --dtype=bf16 2>&1); then
    gpu_ptx=$probe
    return 0
  fi
  if [[ "$probe" == *"needs a GPU target"* ]]; then
    echo "$name: skipped (no CUDA device: fa-jit --target=auto picks the host)"
    exit 77
  fi
  echo "$name: FAIL: the GPU probe failed:"
  echo "$probe" | sed 's/^/    /'
  exit 1
}
