"""Host overhead per call: fa.attention against torch SDPA on tiny shapes.

Both run in one process on the same torch tensors, on the CPU and (where
torch sees one) on a CUDA device: the forward, the forward with grad on (it
records autograd's graph), and forward + backward through autograd
(``o.sum().backward()``). Shapes are tiny so that the time is the
host's (Python, bindings, dispatch, allocation, launch), not the kernel's:
FA's variant is compiled and cached before timing. Prints microseconds per
call (the median of --repeats runs of --calls calls each; FA's and SDPA's
runs alternate) and FA / SDPA (the median of the paired runs' ratios).

    PYTHONPATH=build/python python3 bench/host_overhead.py
    python3 bench/host_overhead.py --device cuda --shape 1,8,128,64 --dtype bfloat16

On CUDA the timing is of the host only, as a training loop sees it: calls are
queued without synchronizing, with one synchronize per run (a kernel that
takes longer than the host's share of a call shows as its time instead).
"""

from __future__ import annotations

import argparse
import statistics
import time
from typing import Any, Callable

import torch
from torch.nn.functional import scaled_dot_product_attention as sdpa

import fa


def run_us(fn: Callable[[], Any], calls: int, sync: Callable[[], None]) -> float:
    """The mean time of one call over a run of `calls` calls, in µs."""
    start = time.perf_counter()
    for _ in range(calls):
        fn()
    sync()
    return (time.perf_counter() - start) / calls * 1e6


def paired_us(
    fa_fn: Callable[[], Any],
    sdpa_fn: Callable[[], Any],
    calls: int,
    repeats: int,
    sync: Callable[[], None],
) -> tuple[float, float, float]:
    """FA's and SDPA's median µs per call over `repeats` runs of each, run
    alternately so that a busy host slows both alike, and the median of the
    runs' FA / SDPA ratios."""
    for fn in (fa_fn, sdpa_fn):
        for _ in range(max(10, calls // 10)):
            fn()
    sync()
    fa_times, sdpa_times = [], []
    for _ in range(repeats):
        fa_times.append(run_us(fa_fn, calls, sync))
        sdpa_times.append(run_us(sdpa_fn, calls, sync))
    ratios = [f / t for f, t in zip(fa_times, sdpa_times)]
    return statistics.median(fa_times), statistics.median(sdpa_times), statistics.median(ratios)


def bench(
    device: str, shape: tuple[int, ...], dtype: torch.dtype, calls: int, repeats: int
) -> None:
    gen = torch.Generator().manual_seed(0)
    q, k, v = (torch.randn(shape, generator=gen).to(device=device, dtype=dtype) for _ in range(3))
    sync = torch.cuda.synchronize if device.startswith("cuda") else (lambda: None)
    grads = [x.detach().clone().requires_grad_() for x in (q, k, v)]

    def fa_fwd() -> Any:
        return fa.attention(q, k, v, causal=True)

    def sdpa_fwd() -> Any:
        return sdpa(q, k, v, is_causal=True)

    def fa_fwd_grad() -> Any:
        return fa.attention(*grads, causal=True)

    def sdpa_fwd_grad() -> Any:
        return sdpa(*grads, is_causal=True)

    def fa_train() -> None:
        fa.attention(*grads, causal=True).sum().backward()

    def sdpa_train() -> None:
        sdpa(*grads, is_causal=True).sum().backward()

    # Same results first (FA's kernel compiled and cached here).
    want = sdpa_fwd().float()
    err = (fa_fwd().float() - want).abs().max().item()
    print(f"{device} {list(shape)} {str(dtype)[6:]}, causal: max |FA - SDPA| = {err:.2e}")
    print(f"  {'':18} {'FA µs':>9} {'SDPA µs':>9} {'FA/SDPA':>8}")
    # The forward alone, the forward that records autograd's graph, and a
    # training step (that forward and the backward through autograd).
    for name, fa_fn, sdpa_fn in (
        ("forward", fa_fwd, sdpa_fwd),
        ("forward (grad)", fa_fwd_grad, sdpa_fwd_grad),
        ("forward+backward", fa_train, sdpa_train),
    ):
        with torch.no_grad() if name == "forward" else torch.enable_grad():
            t_fa, t_sdpa, ratio = paired_us(fa_fn, sdpa_fn, calls, repeats, sync)
        print(f"  {name:18} {t_fa:9.1f} {t_sdpa:9.1f} {ratio:8.2f}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--device", action="append", help="cpu, cuda (default: both where present)")
    parser.add_argument(
        "--shape", default=None, help="B,H,N,D (default: CPU 1,8,16,16; CUDA 1,8,128,64)"
    )
    parser.add_argument("--dtype", default=None, help="default: CPU float32, CUDA bfloat16")
    parser.add_argument("--calls", type=int, default=2000)
    parser.add_argument("--repeats", type=int, default=7)
    parser.add_argument("--threads", type=int, default=None, help="torch.set_num_threads")
    parser.add_argument(
        "--checked",
        action="store_true",
        help="FA through the checked path only (fa._torch_fast off), for an A/B",
    )
    args = parser.parse_args()
    if args.threads:
        torch.set_num_threads(args.threads)
    import fa._torch as fa_torch  # the torch half of fa (imported on a first tensor)

    if args.checked:
        fa_torch._torch_fast = None
    fast = "off" if args.checked else ("on" if fa_torch._torch_fast else "not built")
    devices = args.device or (["cpu", "cuda"] if torch.cuda.is_available() else ["cpu"])
    print(
        f"fa {fa.__version__}, torch {torch.__version__}, {torch.get_num_threads()} torch "
        f"threads, fa._torch_fast {fast}"
    )
    for device in devices:
        cuda = device.startswith("cuda")
        shape = tuple(
            int(x) for x in (args.shape or ("1,8,128,64" if cuda else "1,8,16,16")).split(",")
        )
        dtype = getattr(torch, args.dtype or ("bfloat16" if cuda else "float32"))
        bench(device, shape, dtype, args.calls, args.repeats)


if __name__ == "__main__":
    main()
