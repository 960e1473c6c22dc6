"""pytest configuration of FA's Python tests: the ``gpu`` mark.

A test marked ``gpu`` needs torch with a CUDA device. Without one it is
skipped, saying why; where a GPU must be used (FA_REQUIRE_GPU=1, as
scripts/gpu/run.sh sets it, or a GPU the kernel driver lists) it fails
instead, for a GPU test that skips there hides a broken setup.
"""

from __future__ import annotations

import functools
import os

import pytest


@functools.cache
def cuda_unavailable() -> str | None:
    """Why torch cannot run on a CUDA device here, or None when it can."""
    try:
        import torch
    except ImportError as error:
        return f"torch is not importable ({error})"
    if not torch.cuda.is_available():
        return "torch finds no CUDA device (torch.cuda.is_available() is False)"
    return None


@pytest.hookimpl(tryfirst=True)
def pytest_configure(config: pytest.Config) -> None:
    # -rs lists each skipped test by name with its reason, not one line per
    # location and reason (--no-fold-skipped; pytest 8.3 and later).
    if hasattr(config.option, "fold_skipped"):
        config.option.fold_skipped = False
    config.addinivalue_line(
        "markers",
        "gpu: needs torch with a CUDA device; skipped without one, failed where FA_REQUIRE_GPU=1",
    )


def require_gpu() -> bool:
    """fa::runtime::gpuRequired's rule: FA_REQUIRE_GPU=1, or, unless it is 0,
    an NVIDIA GPU that the kernel driver lists."""
    value = os.environ.get("FA_REQUIRE_GPU")
    if value in ("0", "1"):
        return value == "1"
    gpus = "/proc/driver/nvidia/gpus"
    return os.path.exists("/dev/nvidia0") or (os.path.isdir(gpus) and bool(os.listdir(gpus)))


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    # A skip mark, so that -rs reports each test at its own line.
    if require_gpu():
        return
    for item in items:
        if item.get_closest_marker("gpu") is not None:
            reason = cuda_unavailable()
            if reason is not None:
                item.add_marker(pytest.mark.skip(reason=reason))


@pytest.hookimpl(tryfirst=True)
def pytest_runtest_call(item: pytest.Item) -> None:
    # In the call phase, not setup: a missing GPU under FA_REQUIRE_GPU=1 is a
    # test failure (FAILED), not an error.
    if require_gpu() and item.get_closest_marker("gpu") is not None:
        reason = cuda_unavailable()
        if reason is not None:
            pytest.fail(f"FA_REQUIRE_GPU=1, but {reason}", pytrace=False)
