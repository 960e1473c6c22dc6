#!/usr/bin/env python3
"""Host (CPU) attention benchmark: FA against torch's CPU SDPA, one process.

For each config, FA (fa.attention on torch CPU tensors, as users call it;
compiled once before timing) and torch.nn.functional.scaled_dot_product_attention
run on the same f32 tensors, alternately, so that load from other processes
hits both alike. Each is timed as the median of --iters calls after two
warm-up calls. FA's output is checked against SDPA's (max abs difference
printed). Forward GFLOP/s = 4*B*H*Nq*Nk*D / t, half when causal; forward +
backward (--backward: autograd through both) counts 3.5 times that.

FA runs on fa.num_threads() threads when the binding has it, else
$FA_NUM_THREADS, else all hardware threads; torch on torch.get_num_threads().
`--threads N` sets both. See docs/performance.md for recorded numbers.

  python3 bench/attention_cpu.py                  # 1x8x2048x64 causal, f32
  python3 bench/attention_cpu.py --shape 2,16,1024,128 --causal no
  python3 bench/attention_cpu.py --backward --json out.json
"""

import argparse
import json
import os
import platform
import statistics
import subprocess
import sys
import time

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def import_fa():
    try:
        import fa  # noqa: F401
    except ImportError:
        sys.path.insert(0, os.path.join(REPO, "build", "python"))
    import fa
    return fa


def commit():
    try:
        return subprocess.run(["git", "-C", REPO, "rev-parse", "--short", "HEAD"],
                              capture_output=True, text=True, check=True).stdout.strip()
    except (OSError, subprocess.CalledProcessError):
        return "unknown"


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--shape", default="1,8,2048,64",
                        help="B,H,N,D (Nq = Nk = N; default 1,8,2048,64)")
    parser.add_argument("--causal", choices=["yes", "no", "both"], default="yes")
    parser.add_argument("--backward", action="store_true",
                        help="also time forward + backward through autograd")
    parser.add_argument("--iters", type=int, default=10)
    parser.add_argument("--threads", type=int, default=0,
                        help="threads for both (0: each library's default)")
    parser.add_argument("--json", help="write the measurements here")
    args = parser.parse_args()

    if args.threads:
        os.environ["FA_NUM_THREADS"] = str(args.threads)
    import torch
    import torch.nn.functional as F
    fa = import_fa()
    if args.threads:
        torch.set_num_threads(args.threads)

    b, h, n, d = (int(x) for x in args.shape.split(","))
    causals = {"yes": [True], "no": [False], "both": [False, True]}[args.causal]
    gen = torch.Generator().manual_seed(0)
    q, k, v = (torch.randn(b, h, n, d, generator=gen) for _ in range(3))

    def timed(fn):
        fn()
        fn()
        return fn

    results = []
    for causal in causals:
        flops = 4 * b * h * n * n * d * (0.5 if causal else 1.0)
        runs = {
            "fa": lambda: fa.attention(q, k, v, causal=causal),
            "sdpa": lambda: F.scaled_dot_product_attention(q, k, v, is_causal=causal),
        }
        if args.backward:
            qg, kg, vg = (x.clone().requires_grad_() for x in (q, k, v))
            do = torch.randn(b, h, n, d, generator=gen)

            def fwd_bwd(f):
                def run():
                    for x in (qg, kg, vg):
                        x.grad = None
                    f(qg, kg, vg).backward(do)
                return run
            runs["fa_bwd"] = fwd_bwd(lambda a, c, e: fa.attention(a, c, e, causal=causal))
            runs["sdpa_bwd"] = fwd_bwd(
                lambda a, c, e: F.scaled_dot_product_attention(a, c, e, is_causal=causal))
        o_fa = runs["fa"]()
        o_ref = runs["sdpa"]()
        diff = float((o_fa - o_ref).abs().max())
        for fn in runs.values():
            timed(fn)
        times = {name: [] for name in runs}
        for _ in range(args.iters):
            for name, fn in runs.items():
                start = time.perf_counter()
                fn()
                times[name].append(time.perf_counter() - start)
        row = {"B": b, "H": h, "N": n, "D": d, "causal": causal, "dtype": "f32",
               "max_abs_diff": diff}
        for name, ts in times.items():
            t = statistics.median(ts)
            work = flops * (3.5 if name.endswith("_bwd") else 1.0)
            row[name + "_ms"] = t * 1e3
            row[name + "_gflops"] = work / t / 1e9
        row["ratio"] = row["fa_gflops"] / row["sdpa_gflops"]
        if args.backward:
            row["ratio_bwd"] = row["fa_bwd_gflops"] / row["sdpa_bwd_gflops"]
        results.append(row)

    threads_fa = fa.num_threads() if hasattr(fa, "num_threads") else \
        os.environ.get("FA_NUM_THREADS", os.cpu_count())
    print(f"commit {commit()}  cpu {platform.processor() or platform.machine()}"
          f"  threads fa={threads_fa} torch={torch.get_num_threads()}  torch {torch.__version__}")
    for r in results:
        line = (f"{r['B']}x{r['H']}x{r['N']}x{r['D']} f32 causal={'yes' if r['causal'] else 'no'}:"
                f"  FA {r['fa_gflops']:.1f} GFLOP/s ({r['fa_ms']:.1f} ms)"
                f"  SDPA {r['sdpa_gflops']:.1f} GFLOP/s ({r['sdpa_ms']:.1f} ms)"
                f"  ratio {r['ratio']:.2f}x  max|diff| {r['max_abs_diff']:.1e}")
        if args.backward:
            line += (f"\n  fwd+bwd: FA {r['fa_bwd_gflops']:.1f} GFLOP/s"
                     f"  SDPA {r['sdpa_bwd_gflops']:.1f} GFLOP/s  ratio {r['ratio_bwd']:.2f}x")
        print(line)
    if args.json:
        with open(args.json, "w") as f:
            json.dump({"commit": commit(), "results": results}, f, indent=1)
    return 0


if __name__ == "__main__":
    sys.exit(main())
