# -*- Python -*-
# lit configuration for FA: IR tests (fa-opt + FileCheck) mirroring lib/.

import os
import shutil
import subprocess

import lit.formats
from lit.llvm import llvm_config
from lit.llvm.subst import ToolSubst

config.name = "FA"
config.test_format = lit.formats.ShTest(not llvm_config.use_lit_shell)
config.suffixes = [".mlir"]
config.test_source_root = os.path.dirname(__file__)
config.test_exec_root = os.path.join(config.fa_obj_root, "test")
config.excludes = ["CMakeLists.txt", "lit.cfg.py", "lit.site.cfg.py", "Inputs"]

config.substitutions.append(("%PATH%", config.environment["PATH"]))
llvm_config.with_system_environment(["HOME", "INCLUDE", "LIB", "TMP", "TEMP"])
llvm_config.use_default_substitutions()

config.fa_tools_dir = getattr(config, "fa_tools_dir", "")
tool_dirs = [config.fa_tools_dir, config.llvm_tools_dir]
llvm_config.add_tool_substitutions(
    [ToolSubst("fa-opt", unresolved="fatal"), ToolSubst("fa-jit", unresolved="fatal")],
    tool_dirs,
)

# %python: the python3 on PATH, resolved to the interpreter itself (not a
# pyenv shim), rather than the one running lit (use_default_substitutions
# binds %python to that). Tests that write or read .npy files need numpy and
# ml_dtypes (bf16) and say `REQUIRES: numpy`.
python = shutil.which("python3")
if python:
    try:
        python = subprocess.check_output(
            [python, "-c", "import sys; print(sys.executable)"], text=True
        ).strip()
        subprocess.check_call(
            [python, "-c", "import numpy, ml_dtypes"],
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
        )
        config.available_features.add("numpy")
    except (OSError, subprocess.CalledProcessError):
        pass
    config.substitutions = [s for s in config.substitutions if s[0] != "%python"]
    config.substitutions.append(("%python", python))
llvm_config.with_environment("PATH", config.llvm_tools_dir, append_path=True)

# ptxas (CUDA toolkit) assembles the PTX of the GPU path where it is installed.
ptxas = shutil.which("ptxas") or (
    "/usr/local/cuda/bin/ptxas" if os.path.exists("/usr/local/cuda/bin/ptxas") else None
)
if ptxas:
    config.available_features.add("ptxas")
    config.substitutions.append(("%ptxas", ptxas))

# no-gpu: no GPU is listed here (fa::runtime::gpuRequired's rule, without
# FA_REQUIRE_GPU), so the tests of what happens without one can run.
gpus = "/proc/driver/nvidia/gpus"
if not os.path.exists("/dev/nvidia0") and not (os.path.isdir(gpus) and os.listdir(gpus)):
    config.available_features.add("no-gpu")
