"""Cold compile: the first fa.attention call of a new variant.

Each sample is a fresh Python process with an empty FA_CACHE_DIR and, on
CUDA, the driver's own PTX cache off (CUDA_CACHE_DISABLE=1), so that it pays
what a user's first call of a variant pays: FA's compile (the IR to PTX, or
to host code on the CPU), the driver's PTX JIT, the load and the run. The
import of torch and fa and the inputs' allocation are not counted. It also
reports a process whose disk cache is warm (FA's cache, the compiled kernel
found on disk) and the second call in one process (the kernel in memory).
Issue 18's target: a cold compile of a variant within 0.5 s.

    PYTHONPATH=build/python python3 bench/cold_compile.py
    python3 bench/cold_compile.py --device cuda --d 64,128,256 \\
        --variants plain,causal,softcap,alibi,window --samples 5 --json cold.json

Prints one table row per (D, variant): the median and range of the cold
first calls, the warm-disk first call and the in-process second call.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
from typing import Any

# What each variant passes to fa.attention (alibi: slopes of [H]).
VARIANTS = {
    "plain": {},
    "causal": {"causal": True},
    "softcap": {"softcap": 30.0},
    "alibi": {"alibi": True},
    "window": {"window": (256, 0)},
}


def child(device: str, d: int, variant: str, dtype_name: str) -> dict[str, Any]:
    """One process's first and second call of the variant (seconds)."""
    import time

    import torch

    import fa

    dtype = getattr(torch, dtype_name)
    b, h, n = 1, 8, 128
    q, k, v = (torch.randn(b, h, n, d, device=device, dtype=dtype) for _ in range(3))
    kwargs = dict(VARIANTS[variant])
    if kwargs.pop("alibi", False):
        kwargs["alibi_slopes"] = torch.tensor(
            [2.0 ** (-8.0 * (i + 1) / h) for i in range(h)], device=device
        )

    def sync() -> None:
        if device == "cuda":
            torch.cuda.synchronize()

    sync()
    times = []
    for _ in range(2):
        start = time.perf_counter()
        fa.attention(q, k, v, **kwargs)
        sync()
        times.append(time.perf_counter() - start)
    return {"first_s": times[0], "second_s": times[1]}


def run_child(args: argparse.Namespace, d: int, variant: str, cache: str) -> dict[str, Any]:
    env = dict(os.environ, FA_CACHE_DIR=cache, CUDA_CACHE_DISABLE="1")
    cmd = [sys.executable, os.path.abspath(__file__), "--child", "--device", args.device]
    cmd += ["--d", str(d), "--variants", variant, "--dtype", args.dtype]
    proc = subprocess.run(cmd, env=env, capture_output=True, text=True, timeout=args.timeout)
    if proc.returncode != 0:
        lines = (proc.stderr or proc.stdout).strip().splitlines()
        raise RuntimeError("%s D=%d: %s" % (variant, d, lines[-1] if lines else proc.returncode))
    return json.loads(proc.stdout.strip().splitlines()[-1])


def measure(args: argparse.Namespace, d: int, variant: str) -> dict[str, Any]:
    """`args.samples` cold processes, then one with the last one's cache."""
    cold, second = [], []
    with tempfile.TemporaryDirectory() as root:
        for i in range(args.samples):
            cache = os.path.join(root, str(i))
            os.mkdir(cache)
            rec = run_child(args, d, variant, cache)
            cold.append(rec["first_s"])
            second.append(rec["second_s"])
        warm = run_child(args, d, variant, cache)["first_s"]
    return {
        "D": d,
        "variant": variant,
        "cold_s": cold,
        "cold_median_s": statistics.median(cold),
        "warm_disk_s": warm,
        "second_call_s": statistics.median(second),
    }


def table(rows: list[dict[str, Any]], device: str, target_s: float) -> str:
    lines = [
        "Cold compile on %s: the first fa.attention call in a fresh process "
        "(empty FA_CACHE_DIR, CUDA_CACHE_DISABLE=1), 1x8x128xD; target %.2f s"
        % (device, target_s),
        "| D | variant | cold (median) | cold (min-max) | warm disk | second call | target |",
        "|---|---|---|---|---|---|---|",
    ]
    for r in rows:
        lines.append(
            "| %d | %s | %.3f s | %.3f-%.3f s | %.1f ms | %.2f ms | %s |"
            % (
                r["D"],
                r["variant"],
                r["cold_median_s"],
                min(r["cold_s"]),
                max(r["cold_s"]),
                r["warm_disk_s"] * 1e3,
                r["second_call_s"] * 1e3,
                "ok" if r["cold_median_s"] <= target_s else "over",
            )
        )
    return "\n".join(lines)


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--device", choices=("cpu", "cuda"), default=None,
                   help="default: cuda where torch sees one, else cpu")
    p.add_argument("--d", default="64,128", help="head dims (default 64,128)")
    p.add_argument("--variants", default="plain,causal,softcap",
                   help="of %s (default plain,causal,softcap)" % ",".join(VARIANTS))
    p.add_argument("--dtype", default="bfloat16", choices=("bfloat16", "float16", "float32"))
    p.add_argument("--samples", type=int, default=3, help="cold processes per row (default 3)")
    p.add_argument("--target-s", type=float, default=0.5, help="issue 18's bound (default 0.5)")
    p.add_argument("--timeout", type=float, default=300, help="seconds per process")
    p.add_argument("--json", help="write the rows here")
    p.add_argument("--child", action="store_true", help=argparse.SUPPRESS)
    args = p.parse_args(argv)
    try:
        args.d = [int(x) for x in args.d.split(",")]
    except ValueError:
        p.error("--d: a comma-separated list of head dims (got %r)" % args.d)
    args.variants = args.variants.split(",")
    unknown = [v for v in args.variants if v not in VARIANTS]
    if unknown:
        p.error("--variants: unknown %s (of %s)" % (", ".join(unknown), ", ".join(VARIANTS)))
    if args.samples < 1:
        p.error("--samples must be at least 1")
    return args


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    if args.child:
        print(json.dumps(child(args.device, args.d[0], args.variants[0], args.dtype)))
        return 0
    if args.device is None:
        import torch

        args.device = "cuda" if torch.cuda.is_available() else "cpu"
    rows = []
    for d in args.d:
        for variant in args.variants:
            rows.append(measure(args, d, variant))
            samples = " ".join("%.3f" % t for t in rows[-1]["cold_s"])
            print("D=%d %s: cold %s s" % (d, variant, samples), flush=True)
    print(table(rows, args.device, args.target_s))
    if args.json:
        with open(args.json, "w") as f:
            json.dump({"device": args.device, "dtype": args.dtype, "target_s": args.target_s,
                       "rows": rows}, f, indent=1)
    return 0


if __name__ == "__main__":
    sys.exit(main())
