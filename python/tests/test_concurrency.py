"""Threads calling fa at once (numpy, host CPU): sixteen variants compiled and
run concurrently, and sixteen threads racing for one variant's first compile.
Every result is judged against the references (docs/accuracy.md). Then
processes writing one kernel cache entry at once: one whole file remains."""

from __future__ import annotations

import hashlib
import os
import subprocess
import sys
import threading
from pathlib import Path
from typing import Any, Callable

import numpy as np

import fa
from reference import check_attention, check_attention_grad, randn

THREADS = 16
DTYPES = ["float32", "bfloat16", "float16"]
CAUSAL = ["none", "top_left", "bottom_right"]


def run_at_once(work: Callable[[int], None]) -> None:
    """Runs work(t) on THREADS threads started together; re-raises the first
    failure, naming its thread."""
    barrier = threading.Barrier(THREADS)
    errors: list[tuple[int, BaseException]] = []

    def body(t: int) -> None:
        barrier.wait()
        try:
            work(t)
        except BaseException as error:  # noqa: BLE001 - reported below
            errors.append((t, error))

    threads = [threading.Thread(target=body, args=(t,)) for t in range(THREADS)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    if errors:
        t, error = min(errors, key=lambda e: e[0])
        raise AssertionError(f"thread {t} of {THREADS} failed ({len(errors)} in all)") from error


def variant(t: int) -> dict[str, Any]:
    """Variant t of 16, each different (its own scale)."""
    options: dict[str, Any] = {"causal": CAUSAL[t % 3], "scale": 0.1 + 0.01 * t}
    if t % 5 == 1:
        options["window"] = (9, 3)
    if t % 4 == 2:
        options["softcap"] = 15.0 + t
    if t % 7 == 4:
        options["alibi_slopes"] = (0.03 * np.arange(1, 5)).astype(np.float32)
    return options


def test_sixteen_threads_run_different_variants() -> None:
    def work(t: int) -> None:
        dtype = DTYPES[t % 3]
        hkv = (1, 2, 4)[t % 3]
        d = 64 if t % 4 == 3 else 32
        rng = np.random.default_rng(100 + t)
        b, nq, nk = 1 + t % 2, 31 + 3 * t, 40 + 5 * t
        q = randn(rng, (b, 4, nq, d), dtype)
        k = randn(rng, (b, hkv, nk, d), dtype)
        v = randn(rng, (b, hkv, nk, d), dtype)
        options = variant(t)
        call = dict(options, causal=False if options["causal"] == "none" else options["causal"])
        o, lse = fa.attention(q, k, v, return_lse=True, **call)
        check_attention(q, k, v, o, lse, **options)
        if t % 4 == 0:
            dout = randn(rng, o.shape, dtype)
            grads = fa.attention_backward(q, k, v, o, dout, lse, **call)
            check_attention_grad(q, k, v, dout, grads, **options)

    run_at_once(work)


def test_sixteen_threads_share_one_variant() -> None:
    # A variant no other test compiles: the threads race for its first
    # compilation in fa's kernel cache.
    kernel = fa.compile("float32", 16, causal="bottom_right", softcap=7.5)
    outputs: list[Any] = [None] * THREADS

    def work(t: int) -> None:
        rng = np.random.default_rng(200 + t)
        nq, nk = 9 + t, 12 + 2 * t
        q = randn(rng, (1, 2, nq, 16), "float32")
        k = randn(rng, (1, 1, nk, 16), "float32")
        v = randn(rng, (1, 1, nk, 16), "float32")
        o, lse = fa.attention(
            q, k, v, causal="bottom_right", softcap=7.5, scale=0.4, return_lse=True
        )
        check_attention(q, k, v, o, lse, causal="bottom_right", softcap=7.5, scale=0.4)
        # The same inputs through one fa.compile kernel shared by all threads.
        o2 = kernel(q, k, v)
        check_attention(q, k, v, o2, causal="bottom_right", softcap=7.5)
        outputs[t] = o

    run_at_once(work)
    assert all(o is not None for o in outputs)


# Compiles one GPU kernel (PTX; no GPU needed) through the process's kernel
# cache and prints its PTX.
_COMPILE_SM80 = """
import sys, fa
kernel = fa.compile("bfloat16", 64, causal="bottom_right", softcap=9.25, target="sm_80")
sys.stdout.write(kernel.ptx)
"""


def test_processes_writing_one_cache_entry_leave_one_whole_file(tmp_path: Path) -> None:
    cache = tmp_path / "cache"
    env = dict(os.environ, FA_CACHE_DIR=str(cache))
    processes = [
        subprocess.Popen(
            [sys.executable, "-c", _COMPILE_SM80],
            env=env,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        for _ in range(6)
    ]
    outputs = [p.communicate(timeout=240) for p in processes]
    for p, (_, err) in zip(processes, outputs):
        assert p.returncode == 0, err
    ptx = {out for out, _ in outputs}
    assert len(ptx) == 1 and ".target sm_80" in next(iter(ptx))

    # One file, no temporary ones (docs/runtime.md: written to a temporary
    # file, renamed), and whole: its checksum, recomputed here, holds.
    names = sorted(os.listdir(cache))
    assert len(names) == 1 and names[0].endswith(".fakernel"), names
    content = (cache / names[0]).read_bytes()
    header, _, image = content.partition(b"\nend\n")
    assert image.decode() == next(iter(ptx))
    lines = header.split(b"\n")
    assert lines[0] == b"FA-KERNEL 4"
    assert lines[1] == b"key " + names[0].removesuffix(".fakernel").encode()
    assert lines[-2] == b"size %d" % len(image)
    checksum = lines[-1]
    covered = header[: len(header) - len(checksum)]
    assert checksum == b"sha256 " + hashlib.sha256(covered + image).hexdigest().encode()

    # A later process loads it (a store would rename a new file over it) and
    # prints the same PTX.
    inode = (cache / names[0]).stat().st_ino
    again = subprocess.run(
        [sys.executable, "-c", _COMPILE_SM80], env=env, capture_output=True, text=True, check=True
    )
    assert again.stdout == next(iter(ptx))
    assert (cache / names[0]).stat().st_ino == inode
    assert (cache / names[0]).read_bytes() == content
