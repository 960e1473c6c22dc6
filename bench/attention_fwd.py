#!/usr/bin/env python3
"""Forward attention benchmark: FA (through fa-jit) against the anchors.

One run measures, for each (D, causal, N) config, FA's forward kernel and the
anchors of ANCHORS.md on inputs of the same shape and distribution:

  FA              `fa-jit --target=auto --shape=B,H,H,N,N,D --dtype=bf16
                  [--causal=bottom-right] --bench --bench-iters=50`, parsed
                  from its `bench: median_ms=... tflops=...` line (fa-jit makes
                  its own random normal inputs and times with CUDA events)
  SDPA cuDNN      torch SDPA pinned with sdpa_kernel(SDPBackend.CUDNN_ATTENTION)
  SDPA flash      ... SDPBackend.FLASH_ATTENTION (FlashAttention-2)
  SDPA efficient  ... SDPBackend.EFFICIENT_ATTENTION (memory-efficient)
  FlexAttention   torch.compile(flex_attention), causal through a block mask
                  from create_block_mask; only for N in --flex-n
  naive           QK^T, softmax in f32, PV with the N x N matrix; only while
                  B*H*N*N*4 bytes < --naive-max-gb

bf16, B*N = 16384 tokens, Hq = Hkv = 2048 / D. Forward TFLOP/s =
4*B*H*N^2*D / t, half when causal. Anchors are timed with
triton.testing.do_bench (median) when triton imports, else with CUDA events
(median of 50 after 10 warm-up runs, L2 flushed before each).

Writes a JSON file with every measurement, the environment and the config
(after each config, so a cut-off run keeps what it measured), a PNG of TFLOP/s
against N (matplotlib when it imports, else a small built-in rasterizer), and
prints a short table last. torch is imported only inside functions, so --help,
--dry-run and --from-json work without it. See bench/README.md and
docs/benchmarks.md.
"""

import argparse
import contextlib
import datetime
import json
import math
import os
import platform
import re
import shlex
import socket
import statistics
import struct
import subprocess
import sys
import time
import warnings
import zlib

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))

DEFAULT_D = (64, 128, 256)
DEFAULT_N = (512, 1024, 2048, 4096, 8192, 16384)
QUICK_D = (64, 128)
QUICK_N = (1024, 4096)
DEFAULT_FLEX_N = (2048, 4096, 8192)

# Anchor key -> label, in table and plot order.
ANCHORS = {
    "cudnn": "SDPA cuDNN",
    "flash": "SDPA flash",
    "efficient": "SDPA efficient",
    "flex": "FlexAttention",
    "naive": "naive",
}
SDPA_BACKENDS = {
    "cudnn": "CUDNN_ATTENTION",
    "flash": "FLASH_ATTENTION",
    "efficient": "EFFICIENT_ATTENTION",
}

SCHEMA = "fa-bench-attention-fwd/1"
FLOP_FORMULA = "4*B*H*N^2*D / t, half when causal"

# What is measured. bench/attention_bwd.py switches to the backward: dQ, dK,
# dV given dO, FA's backward kernels (fa-jit --backward) against the anchors'
# autograd backward of one forward, at 2.5x the forward's FLOPs.
PASS = {
    "name": "forward",
    "flop_factor": 1.0,
    "fa_flags": [],
    "json": "bench_fwd.json",
}


def use_backward():
    global SCHEMA, FLOP_FORMULA
    SCHEMA = "fa-bench-attention-bwd/1"
    FLOP_FORMULA = "2.5*4*B*H*N^2*D / t, half when causal"
    PASS.update(name="backward",
                flop_factor=2.5,
                fa_flags=["--backward"],
                json="bench_bwd.json")


# ----------------------------------------------------------------------------
# Configs and arithmetic.


def forward_flops(b, h, n, d, causal):
    flops = 4.0 * b * h * n * n * d
    return flops / 2 if causal else flops


def tflops_of(flops, ms):
    if ms is None or not ms > 0:
        return None
    return flops / (ms * 1e-3) / 1e12


def make_configs(ds, ns, causals, tokens, width, alibi=False):
    configs = []
    for d in ds:
        for causal in causals:
            for n in ns:
                b, h = tokens // n, width // d
                configs.append({
                    "D": d,
                    "causal": causal,
                    "N": n,
                    "B": b,
                    "H": h,
                    "flops": forward_flops(b, h, n, d, causal) *
                             PASS["flop_factor"],
                    "alibi": alibi,
                })
    return configs


def config_name(c):
    name = "D=%d causal=%s N=%d B=%d H=%d" % (c["D"], "yes" if c["causal"] else
                                              "no", c["N"], c["B"], c["H"])
    return name + (" alibi" if c.get("alibi") else "")


# ----------------------------------------------------------------------------
# FA through fa-jit.

_BENCH_LINE = re.compile(r"^bench:\s*(.*?)\s*$", re.M)
_KEY_VALUE = re.compile(r"([A-Za-z_][\w.]*)=(\S+)")
_SUMMARY_LINE = re.compile(
    r"^fa-jit: ran (fa\.attention(?:_grad)?) on ([^\s:]+):(.*)$", re.M)
_COMPILE = re.compile(r"\bcompile=([0-9.]+(?:[eE][-+]?[0-9]+)?)ms\b")


def _number(text):
    try:
        value = float(text)
    except ValueError:
        return text
    return value if math.isfinite(value) else None


def parse_fa_output(text):
    """The fields of fa-jit's `bench:` and summary lines (None when absent)."""
    out = {
        "bench": None,
        "median_ms": None,
        "tflops_reported": None,
        "compile_ms": None,
        "target": None,
        "summary": None,
    }
    benches = _BENCH_LINE.findall(text)
    if benches:
        fields = {k: _number(v) for k, v in _KEY_VALUE.findall(benches[-1])}
        out["bench"] = fields
        if isinstance(fields.get("median_ms"), float):
            out["median_ms"] = fields["median_ms"]
        if isinstance(fields.get("tflops"), float):
            out["tflops_reported"] = fields["tflops"]
    summaries = _SUMMARY_LINE.findall(text)
    if summaries:
        op, target, rest = summaries[-1]
        out["target"] = target
        out["summary"] = "fa-jit: ran %s on %s:%s" % (op, target, rest)
        m = _COMPILE.search(rest)
        if m:
            out["compile_ms"] = float(m.group(1))
    return out


def _tail(text, lines=20, chars=2000):
    text = "\n".join(text.strip().splitlines()[-lines:])
    return text[-chars:]


def fa_error_text(stdout, stderr):
    """fa-jit's own error lines, else the end of what it printed."""
    lines = [
        l for l in stderr.splitlines()
        if l.startswith("fa-jit: error:") or l.startswith("fa-jit: note:")
    ]
    if lines:
        return _tail("\n".join(lines))
    return _tail(stderr + "\n" + stdout) or "(no output)"


# Extra fa-jit arguments for every FA run (--fa-args), e.g. the backward's
# --bwd-atomic-dq.
FA_ARGS = []


def fa_command(fa_jit, c, iters):
    cmd = [
        fa_jit, "--target=auto",
        "--shape=%d,%d,%d,%d,%d,%d" % (c["B"], c["H"], c["H"], c["N"], c["N"],
                                       c["D"]), "--dtype=bf16"
    ]
    if c["causal"]:
        cmd.append("--causal=bottom-right")
    cmd += PASS["fa_flags"]
    if c.get("alibi"):
        cmd.append("--alibi")
    cmd += FA_ARGS
    cmd += ["--bench", "--bench-iters=%d" % iters]
    return cmd


def run_fa(fa_jit, c, iters, timeout):
    cmd = fa_command(fa_jit, c, iters)
    rec = {"status": "error", "cmd": shlex.join(cmd)}
    t0 = time.perf_counter()
    try:
        proc = subprocess.run(cmd,
                              stdout=subprocess.PIPE,
                              stderr=subprocess.PIPE,
                              universal_newlines=True,
                              timeout=timeout,
                              check=False)
    except subprocess.TimeoutExpired as e:
        rec["wall_s"] = round(time.perf_counter() - t0, 3)
        out = e.stdout if isinstance(e.stdout, str) else (e.stdout or b"").decode(
            "utf-8", "replace")
        rec["error"] = "timed out after %ss" % timeout
        if out:
            rec["stdout_tail"] = _tail(out)
        return rec
    except OSError as e:
        rec["error"] = "cannot run %s: %s" % (fa_jit, e)
        return rec
    rec["wall_s"] = round(time.perf_counter() - t0, 3)
    rec["rc"] = proc.returncode
    parsed = parse_fa_output(proc.stdout + "\n" + proc.stderr)
    for key in ("median_ms", "tflops_reported", "compile_ms", "target",
                "summary", "bench"):
        if parsed[key] is not None:
            rec[key] = parsed[key]
    if proc.returncode != 0:
        rec["error"] = "exit %d: %s" % (proc.returncode,
                                        fa_error_text(proc.stdout, proc.stderr))
        return rec
    if parsed["median_ms"] is None:
        rec["error"] = ("no 'bench: median_ms=...' line in fa-jit's output: " +
                        _tail(proc.stdout + "\n" + proc.stderr, lines=8))
        return rec
    rec["status"] = "ok"
    rec["ms"] = parsed["median_ms"]
    rec["tflops"] = tflops_of(c["flops"], parsed["median_ms"])
    notes = []
    reported = parsed["tflops_reported"]
    if reported and rec["tflops"] and abs(reported / rec["tflops"] - 1) > 0.02:
        notes.append("fa-jit reported tflops=%.4g, the formula gives %.4g" %
                     (reported, rec["tflops"]))
    if parsed["target"] is not None and not parsed["target"].startswith("sm_"):
        notes.append("ran on '%s', not a GPU" % parsed["target"])
    if proc.stderr.strip():
        rec["stderr_tail"] = _tail(proc.stderr, lines=8)
    if notes:
        rec["notes"] = notes
    return rec


def default_fa_jit():
    candidates = [
        os.path.join(REPO, "build", "bin", "fa-jit"), "/tmp/fa/bin/fa-jit"
    ]
    for path in candidates:
        if os.path.isfile(path) and os.access(path, os.X_OK):
            return path
    return candidates[0]


def fa_version(fa_jit):
    try:
        proc = subprocess.run([fa_jit, "--version"],
                              stdout=subprocess.PIPE,
                              stderr=subprocess.STDOUT,
                              universal_newlines=True,
                              timeout=30,
                              check=False)
    except (OSError, subprocess.TimeoutExpired) as e:
        return {"error": str(e)}
    return {"rc": proc.returncode, "output": _tail(proc.stdout, lines=10)}


# ----------------------------------------------------------------------------
# Anchors (torch; imported lazily).


class Timer:
    """triton.testing.do_bench's median, else CUDA events."""

    def __init__(self, torch, kind, warmup_ms, rep_ms, warmup, iters):
        self.torch = torch
        self.warmup_ms, self.rep_ms = warmup_ms, rep_ms
        self.warmup, self.iters = warmup, iters
        self.do_bench = None
        self.triton_error = None
        if kind in ("auto", "triton"):
            try:
                from triton.testing import do_bench
                self.do_bench = do_bench
            except Exception as e:  # noqa: BLE001 - any import failure
                self.triton_error = "%s: %s" % (type(e).__name__, e)
                if kind == "triton":
                    raise
        self._flush = None

    def describe(self):
        if self.do_bench is not None:
            return ("triton.testing.do_bench(warmup=%gms, rep=%gms, "
                    "return_mode='median')" % (self.warmup_ms, self.rep_ms))
        return ("CUDA events: median of %d runs after %d warm-up, 256 MB L2 "
                "flush before each" % (self.iters, self.warmup))

    def __call__(self, fn):
        if self.do_bench is not None:
            try:
                ms = self.do_bench(fn,
                                   warmup=self.warmup_ms,
                                   rep=self.rep_ms,
                                   return_mode="median")
            except TypeError:  # a triton without return_mode
                ms = self.do_bench(fn,
                                   warmup=self.warmup_ms,
                                   rep=self.rep_ms,
                                   quantiles=[0.5])
            if isinstance(ms, (list, tuple)):
                ms = ms[0]
            return float(ms)
        torch = self.torch
        if self._flush is None:
            self._flush = torch.empty(64 * 1024 * 1024,
                                      dtype=torch.int32,
                                      device="cuda")
        for _ in range(self.warmup):
            fn()
        torch.cuda.synchronize()
        starts = [
            torch.cuda.Event(enable_timing=True) for _ in range(self.iters)
        ]
        ends = [torch.cuda.Event(enable_timing=True) for _ in range(self.iters)]
        for start, end in zip(starts, ends):
            self._flush.zero_()
            start.record()
            fn()
            end.record()
        torch.cuda.synchronize()
        return statistics.median(s.elapsed_time(e) for s, e in zip(starts, ends))


def _short_error(e, caught=()):
    text = "%s: %s" % (type(e).__name__, str(e).strip())
    reasons = []
    for w in caught:
        msg = " ".join(str(w.message).split())
        if msg and msg not in reasons:
            reasons.append(msg)
    if reasons:
        text += " | warnings: " + " | ".join(reasons)
    return text[:2000]


def _measure(torch, timer, c, make_fn, reference, extra=None, context=None):
    """Runs make_fn() -> fn once (errors surface here), then times fn, all
    inside context() when given (e.g. sdpa_kernel pinning a backend)."""
    rec = {"status": "error"}
    if extra:
        rec.update(extra)
    with warnings.catch_warnings(record=True) as caught, (
            context() if context else contextlib.nullcontext()):
        warnings.simplefilter("always")
        try:
            t0 = time.perf_counter()
            fn = make_fn()
            out = fn()
            torch.cuda.synchronize()
            rec["first_call_s"] = round(time.perf_counter() - t0, 3)
            if reference.get("out") is None:
                reference["out"] = out
                reference["name"] = rec.get("name")
            else:
                diff = (out.float() - reference["out"].float()).abs().max()
                rec["max_abs_diff"] = float(diff)
                rec["diff_against"] = reference["name"]
            del out
            ms = timer(fn)
        except Exception as e:  # noqa: BLE001 - a refusal, OOM, compile error
            rec["error"] = _short_error(e, caught)
            _free(torch)
            return rec
    rec["status"] = "ok"
    rec["ms"] = ms
    rec["tflops"] = tflops_of(c["flops"], ms)
    return rec


def _free(torch):
    try:
        torch.cuda.synchronize()
        torch.cuda.empty_cache()
    except Exception:  # noqa: BLE001 - a sticky CUDA error; reported elsewhere
        pass


def _timed(torch, fn, inputs):
    """fn itself for the forward; for the backward, a function running the
    autograd backward of one call of fn (dQ, dK, dV given a random dO)."""
    if PASS["name"] == "forward":
        return fn
    out = fn()
    grad_out = torch.randn_like(out)

    def backward():
        return torch.autograd.grad(out, inputs, grad_out,
                                   retain_graph=True)[0]

    return backward


def run_anchors(torch, timer, c, anchors, args):
    """Measures every selected anchor on one set of inputs for config c."""
    B, H, N, D, causal = c["B"], c["H"], c["N"], c["D"], c["causal"]
    results = {}
    try:
        gen = torch.Generator(device="cuda")
        gen.manual_seed(args.seed)
        q, k, v = (torch.randn(B,
                               H,
                               N,
                               D,
                               device="cuda",
                               dtype=torch.bfloat16,
                               generator=gen) for _ in range(3))
        if PASS["name"] == "backward":
            for t in (q, k, v):
                t.requires_grad_(True)
    except Exception as e:  # noqa: BLE001
        err = _short_error(e)
        _free(torch)
        return {a: {"status": "error", "error": "inputs: " + err} for a in anchors}

    scale = 1.0 / math.sqrt(D)
    reference = {}
    F = torch.nn.functional
    # With --alibi: slopes 2^(-8 (h + 1) / H); SDPA and naive get them as an
    # additive [1, H, N, N] bias (causal folded in), FlexAttention as a
    # score_mod.
    slopes = None
    if c.get("alibi"):
        slopes = torch.tensor([2.0**(-8.0 * (h + 1) / H) for h in range(H)],
                              device="cuda")

    def alibi_bias():
        pos = torch.arange(N, device="cuda")
        dist = (pos[:, None] - pos[None, :]).abs().float()
        bias = -(slopes[:, None, None] * dist)[None]
        if causal:
            bias.masked_fill_(pos[None, :] > pos[:, None], float("-inf"))
        return bias.to(torch.bfloat16)

    for a in anchors:
        if a in SDPA_BACKENDS:
            from torch.nn.attention import SDPBackend, sdpa_kernel
            backend = getattr(SDPBackend, SDPA_BACKENDS[a])

            def make():
                bias = alibi_bias() if slopes is not None else None

                def fn():
                    return F.scaled_dot_product_attention(
                        q,
                        k,
                        v,
                        attn_mask=bias,
                        is_causal=causal and bias is None,
                        scale=scale)

                return _timed(torch, fn, (q, k, v))

            results[a] = _measure(torch,
                                  timer,
                                  c,
                                  make,
                                  reference, {
                                      "name": a,
                                      "backend": SDPA_BACKENDS[a]
                                  },
                                  context=lambda b=backend: sdpa_kernel(b))
        elif a == "flex":
            if N not in args.flex_n:
                results[a] = {
                    "status": "skipped",
                    "reason": "N not in --flex-n (bounds compile time)"
                }
                continue

            def make_flex():
                import torch._dynamo
                from torch.nn.attention.flex_attention import (create_block_mask,
                                                               flex_attention)
                torch._dynamo.reset()  # no recompile limit across configs
                compiled = torch.compile(flex_attention, dynamic=False)
                block_mask = None
                if causal:

                    def causal_mask(b, h, q_idx, kv_idx):
                        return q_idx >= kv_idx

                    block_mask = create_block_mask(causal_mask,
                                                   None,
                                                   None,
                                                   N,
                                                   N,
                                                   device="cuda")

                score_mod = None
                if slopes is not None:

                    def score_mod(score, b, h, q_idx, kv_idx):
                        return score - slopes[h] * (q_idx - kv_idx).abs()

                def fn():
                    return compiled(q,
                                    k,
                                    v,
                                    score_mod=score_mod,
                                    block_mask=block_mask,
                                    scale=scale)

                return _timed(torch, fn, (q, k, v))

            rec = _measure(torch, timer, c, make_flex, reference, {"name": a})
            if "first_call_s" in rec:
                rec["compile_s"] = rec["first_call_s"]
            results[a] = rec
        elif a == "naive":
            matrix_bytes = B * H * N * N * 4
            if matrix_bytes >= args.naive_max_gb * 1e9:
                results[a] = {
                    "status": "skipped",
                    "reason": "N x N f32 matrix is %.1f GB >= --naive-max-gb %g"
                              % (matrix_bytes / 1e9, args.naive_max_gb)
                }
                continue

            def make_naive():
                mask = None
                if causal:
                    mask = torch.ones(N, N, dtype=torch.bool,
                                      device="cuda").triu_(1)
                bias = alibi_bias() if slopes is not None else None

                def fn():
                    s = torch.matmul(q, k.transpose(-2, -1)).float()
                    s.mul_(scale)
                    if bias is not None:
                        s.add_(bias)
                    if mask is not None:
                        s.masked_fill_(mask, float("-inf"))
                    p = torch.softmax(s, dim=-1).to(q.dtype)
                    del s
                    return torch.matmul(p, v)

                return _timed(torch, fn, (q, k, v))

            results[a] = _measure(torch, timer, c, make_naive, reference, {
                "name": a,
                "matrix_gb": round(matrix_bytes / 1e9, 3)
            })
        _free(torch)
    for rec in results.values():
        rec.pop("name", None)
    del q, k, v, reference
    _free(torch)
    return results


def import_torch():
    """(torch, None) with a usable GPU, else (None, why)."""
    try:
        import torch
    except Exception as e:  # noqa: BLE001
        return None, "cannot import torch: %s: %s" % (type(e).__name__, e)
    if not torch.cuda.is_available():
        return None, "torch %s sees no CUDA device" % torch.__version__
    return torch, None


# ----------------------------------------------------------------------------
# Environment.


def _run_text(cmd, cwd=None):
    try:
        proc = subprocess.run(cmd,
                              stdout=subprocess.PIPE,
                              stderr=subprocess.DEVNULL,
                              universal_newlines=True,
                              timeout=30,
                              cwd=cwd,
                              check=False)
    except (OSError, subprocess.TimeoutExpired):
        return None
    return proc.stdout.strip() if proc.returncode == 0 else None


def environment(args, torch, torch_error, timer):
    env = {
        "date_utc": datetime.datetime.now(datetime.timezone.utc).isoformat(
            timespec="seconds"),
        "hostname": socket.gethostname(),
        "python": sys.version.split()[0],
        "platform": platform.platform(),
        "argv": sys.argv,
        "fa_jit": None if args.no_fa else os.path.abspath(args.fa_jit),
        "fa_jit_version": None if args.no_fa else fa_version(args.fa_jit),
    }
    commit = _run_text(["git", "rev-parse", "HEAD"], cwd=REPO)
    if commit:
        dirty = _run_text(["git", "status", "--porcelain", "--untracked-files=no"],
                          cwd=REPO)
        env["repo_commit"] = commit + ("-dirty" if dirty else "")
    smi = _run_text([
        "nvidia-smi",
        "--query-gpu=name,driver_version,clocks.max.sm,power.limit",
        "--format=csv,noheader"
    ])
    if smi:
        env["nvidia_smi"] = smi
    if torch is None:
        env["torch_error"] = torch_error
    else:
        props = torch.cuda.get_device_properties(0)
        env.update({
            "gpu": torch.cuda.get_device_name(0),
            "gpu_capability": "%d.%d" % torch.cuda.get_device_capability(0),
            "gpu_sms": props.multi_processor_count,
            "gpu_memory_gb": round(props.total_memory / 1e9, 1),
            "torch": torch.__version__,
            "torch_cuda": torch.version.cuda,
            "cudnn": torch.backends.cudnn.version(),
        })
        try:
            import triton
            env["triton"] = triton.__version__
        except Exception:  # noqa: BLE001
            env["triton"] = None
    if timer is not None:
        env["timer"] = timer.describe()
        if timer.triton_error:
            env["triton_error"] = timer.triton_error
    return env


# ----------------------------------------------------------------------------
# Ratios, table, JSON.


def ratios(row):
    fa = (row.get("fa") or {}).get("tflops")
    out = {}
    for key, name in (("fa/flash", "flash"), ("fa/cudnn", "cudnn")):
        other = (row.get("anchors", {}).get(name) or {}).get("tflops")
        out[key] = round(fa / other, 4) if fa and other else None
    return out


def _cell(rec):
    if not rec:
        return ""
    if rec.get("status") == "ok" and rec.get("tflops") is not None:
        text = "%.0f" % rec["tflops"]
        target = rec.get("target")
        if target is not None and not str(target).startswith("sm_"):
            text += " (%s)" % target
        return text
    if rec.get("status") == "error":
        return "err"
    return ""


def format_table(doc):
    anchors = doc["config"]["anchors"]
    with_fa = not doc["config"].get("no_fa")
    head = ["D", "causal", "N"]
    if with_fa:
        head.append("FA")
    head += [ANCHORS[a] for a in anchors]
    ratio_keys = [(k, a) for k, a in (("fa/flash", "flash"), ("fa/cudnn", "cudnn"))
                  if with_fa and a in anchors]
    head += ["FA / " + ANCHORS[a].split()[-1] for _, a in ratio_keys]
    lines = [
        "| " + " | ".join(head) + " |", "|" + "---|" * len(head)
    ]
    for row in doc["results"]:
        cells = [str(row["D"]), "yes" if row["causal"] else "no", str(row["N"])]
        if with_fa:
            cells.append(_cell(row.get("fa")))
        cells += [_cell(row.get("anchors", {}).get(a)) for a in anchors]
        r = row.get("ratios") or ratios(row)
        cells += ["" if r.get(k) is None else "%.2f" % r[k] for k, _ in ratio_keys]
        lines.append("| " + " | ".join(cells) + " |")
    return "\n".join(lines)


def error_lines(doc):
    """One line per distinct (what, error), naming the configs it hit."""
    seen = {}
    for row in doc["results"]:
        where = "D=%d %s N=%d" % (row["D"], "causal" if row["causal"] else
                                  "non-causal", row["N"])
        recs = [("FA", row.get("fa"))] + [(ANCHORS.get(a, a), r) for a, r in (
            row.get("anchors") or {}).items()]
        for what, rec in recs:
            if not rec:
                continue
            msgs = []
            if rec.get("status") == "error":
                msgs.append(rec.get("error", "error"))
            msgs += ["note: " + n for n in rec.get("notes", [])]
            for msg in msgs:
                first = " ".join(str(msg).split())[:300]
                seen.setdefault((what, first), []).append(where)
    lines = []
    for (what, msg), wheres in seen.items():
        at = wheres[0] if len(wheres) == 1 else "%s (+%d more)" % (wheres[0],
                                                                   len(wheres) - 1)
        lines.append("%s at %s: %s" % (what, at, msg))
    return lines


def write_json(path, doc):
    directory = os.path.dirname(os.path.abspath(path))
    os.makedirs(directory, exist_ok=True)
    tmp = path + ".tmp"
    with open(tmp, "w") as f:
        json.dump(doc, f, indent=1, allow_nan=False, default=str)
        f.write("\n")
    os.replace(tmp, path)


def _clean(value):
    """Replaces non-finite floats (not valid JSON) by None."""
    if isinstance(value, float) and not math.isfinite(value):
        return None
    if isinstance(value, dict):
        return {k: _clean(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_clean(v) for v in value]
    return value


# ----------------------------------------------------------------------------
# Plot: matplotlib when it imports, else a small rasterizer.

_COLORS = {
    "fa": (214, 39, 40),
    "cudnn": (31, 119, 180),
    "flash": (255, 127, 14),
    "efficient": (44, 160, 44),
    "flex": (148, 103, 189),
    "naive": (127, 127, 127),
}


def plot_series(doc):
    """[((D, causal), {series key: [(N, tflops)]})] in panel order, labels."""
    keys = ([] if doc["config"].get("no_fa") else ["fa"]) + list(
        doc["config"]["anchors"])
    labels = {"fa": "FA", **ANCHORS}
    panels = {}
    for row in doc["results"]:
        panel = panels.setdefault((row["D"], row["causal"]),
                                  {k: [] for k in keys})
        for k in keys:
            rec = row.get("fa") if k == "fa" else row.get("anchors", {}).get(k)
            if rec and rec.get("status") == "ok" and rec.get("tflops"):
                panel[k].append((row["N"], rec["tflops"]))
    ordered = sorted(panels.items(), key=lambda kv: (kv[0][0], kv[0][1]))
    return ordered, keys, labels


def _panel_title(d, causal):
    return "D=%d, %s" % (d, "causal" if causal else "non-causal")


def _grid_shape(panels):
    ds = sorted({d for (d, _), _ in panels})
    causals = sorted({c for (_, c), _ in panels})
    return ds, causals


def _n_label(n):
    return "%dK" % (n // 1024) if n >= 1024 and n % 1024 == 0 else str(n)


def plot_png(doc, path):
    """Writes the plot; returns a note saying how (or why not)."""
    panels, keys, labels = plot_series(doc)
    if not any(pts for _, series in panels for pts in series.values()):
        return "no plot: no successful measurement"
    try:
        import matplotlib
        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except Exception as e:  # noqa: BLE001
        try:
            _plot_builtin(doc, panels, keys, labels, path)
        except Exception as e2:  # noqa: BLE001
            return "no plot: matplotlib unavailable (%s) and the built-in " \
                   "plotter failed: %s: %s" % (e, type(e2).__name__, e2)
        return "plot written by the built-in plotter (no matplotlib: %s)" % (
            type(e).__name__)
    ds, causals = _grid_shape(panels)
    fig, axes = plt.subplots(len(ds),
                             len(causals),
                             figsize=(6 * len(causals), 4 * len(ds)),
                             squeeze=False,
                             sharey=True)
    all_n = sorted({row["N"] for row in doc["results"]})
    for (d, causal), series in panels:
        ax = axes[ds.index(d)][causals.index(causal)]
        for k in keys:
            pts = sorted(series[k])
            if not pts:
                continue
            color = tuple(x / 255 for x in _COLORS[k])
            ax.plot([p[0] for p in pts], [p[1] for p in pts],
                    marker="o",
                    color=color,
                    linewidth=2.5 if k == "fa" else 1.5,
                    label=labels[k])
        ax.set_xscale("log", base=2)
        ax.set_xticks(all_n)
        ax.set_xticklabels([_n_label(n) for n in all_n])
        ax.set_title(_panel_title(d, causal))
        ax.set_xlabel("N (B*N = %d)" % doc["config"]["tokens"])
        ax.set_ylabel("TFLOP/s")
        ax.grid(True, alpha=0.3)
    ymax = max(t for _, series in panels for pts in series.values()
               for _, t in pts)
    axes[0][0].set_ylim(0, ymax * 1.08)  # shared by every panel
    handles, names = [], []
    for row in axes:
        for ax in row:
            for h, n in zip(*ax.get_legend_handles_labels()):
                if n not in names:
                    handles.append(h)
                    names.append(n)
    gpu = doc["environment"].get("gpu") or ""
    fig.suptitle("Attention %s, bf16 %s" % (PASS["name"], gpu), y=0.995)
    fig.legend(handles,
               names,
               loc="upper center",
               bbox_to_anchor=(0.5, 0.975),
               ncol=len(names),
               frameon=False)
    fig.tight_layout(rect=(0, 0, 1, 0.95))
    os.makedirs(os.path.dirname(os.path.abspath(path)), exist_ok=True)
    fig.savefig(path, dpi=100)
    plt.close(fig)
    return "plot written with matplotlib %s" % matplotlib.__version__


# A 5x7 bitmap font for the built-in plotter (rows top to bottom; lower case
# is drawn as upper case).
_FONT = {
    "0": "01110 10001 10011 10101 11001 10001 01110",
    "1": "00100 01100 00100 00100 00100 00100 01110",
    "2": "01110 10001 00001 00010 00100 01000 11111",
    "3": "11111 00010 00100 00010 00001 10001 01110",
    "4": "00010 00110 01010 10010 11111 00010 00010",
    "5": "11111 10000 11110 00001 00001 10001 01110",
    "6": "00110 01000 10000 11110 10001 10001 01110",
    "7": "11111 00001 00010 00100 01000 01000 01000",
    "8": "01110 10001 10001 01110 10001 10001 01110",
    "9": "01110 10001 10001 01111 00001 00010 01100",
    "A": "01110 10001 10001 11111 10001 10001 10001",
    "B": "11110 10001 10001 11110 10001 10001 11110",
    "C": "01110 10001 10000 10000 10000 10001 01110",
    "D": "11100 10010 10001 10001 10001 10010 11100",
    "E": "11111 10000 10000 11110 10000 10000 11111",
    "F": "11111 10000 10000 11110 10000 10000 10000",
    "G": "01110 10001 10000 10111 10001 10001 01111",
    "H": "10001 10001 10001 11111 10001 10001 10001",
    "I": "01110 00100 00100 00100 00100 00100 01110",
    "J": "00111 00010 00010 00010 00010 10010 01100",
    "K": "10001 10010 10100 11000 10100 10010 10001",
    "L": "10000 10000 10000 10000 10000 10000 11111",
    "M": "10001 11011 10101 10101 10001 10001 10001",
    "N": "10001 10001 11001 10101 10011 10001 10001",
    "O": "01110 10001 10001 10001 10001 10001 01110",
    "P": "11110 10001 10001 11110 10000 10000 10000",
    "Q": "01110 10001 10001 10001 10101 10010 01101",
    "R": "11110 10001 10001 11110 10100 10010 10001",
    "S": "01111 10000 10000 01110 00001 00001 11110",
    "T": "11111 00100 00100 00100 00100 00100 00100",
    "U": "10001 10001 10001 10001 10001 10001 01110",
    "V": "10001 10001 10001 10001 10001 01010 00100",
    "W": "10001 10001 10001 10101 10101 10101 01010",
    "X": "10001 10001 01010 00100 01010 10001 10001",
    "Y": "10001 10001 10001 01010 00100 00100 00100",
    "Z": "11111 00001 00010 00100 01000 10000 11111",
    " ": "00000 00000 00000 00000 00000 00000 00000",
    "=": "00000 00000 11111 00000 11111 00000 00000",
    "/": "00000 00001 00010 00100 01000 10000 00000",
    ".": "00000 00000 00000 00000 00000 01100 01100",
    "-": "00000 00000 00000 11111 00000 00000 00000",
    "+": "00000 00100 00100 11111 00100 00100 00000",
    "(": "00010 00100 01000 01000 01000 00100 00010",
    ")": "01000 00100 00010 00010 00010 00100 01000",
    ":": "00000 01100 01100 00000 01100 01100 00000",
    ",": "00000 00000 00000 00000 01100 00100 01000",
    "_": "00000 00000 00000 00000 00000 00000 11111",
    "*": "00000 00100 10101 01110 10101 00100 00000",
    "%": "11000 11001 00010 00100 01000 10011 00011",
    "?": "01110 10001 00001 00010 00100 00000 00100",
}


class Canvas:
    """An RGB raster with lines, rectangles and 5x7 text; saves as PNG."""

    def __init__(self, width, height, background=(255, 255, 255)):
        self.w, self.h = width, height
        self.px = bytearray(bytes(background) * (width * height))

    def dot(self, x, y, color):
        if 0 <= x < self.w and 0 <= y < self.h:
            i = 3 * (y * self.w + x)
            self.px[i:i + 3] = bytes(color)

    def rect(self, x0, y0, x1, y1, color):
        x0, x1 = max(0, min(x0, x1)), min(self.w - 1, max(x0, x1))
        y0, y1 = max(0, min(y0, y1)), min(self.h - 1, max(y0, y1))
        row = bytes(color) * (x1 - x0 + 1)
        for y in range(y0, y1 + 1):
            i = 3 * (y * self.w + x0)
            self.px[i:i + len(row)] = row

    def line(self, x0, y0, x1, y1, color, width=1):
        x0, y0, x1, y1 = int(round(x0)), int(round(y0)), int(round(x1)), int(
            round(y1))
        dx, dy = abs(x1 - x0), -abs(y1 - y0)
        sx, sy = (1 if x0 < x1 else -1), (1 if y0 < y1 else -1)
        err, lo = dx + dy, -(width // 2)
        while True:
            if width == 1:
                self.dot(x0, y0, color)
            else:
                self.rect(x0 + lo, y0 + lo, x0 + lo + width - 1,
                          y0 + lo + width - 1, color)
            if x0 == x1 and y0 == y1:
                return
            e2 = 2 * err
            if e2 >= dy:
                err += dy
                x0 += sx
            if e2 <= dx:
                err += dx
                y0 += sy

    @staticmethod
    def text_width(text, scale=2):
        return len(text) * 6 * scale - scale if text else 0

    def text(self, x, y, text, color=(0, 0, 0), scale=2):
        for ch in text:
            glyph = _FONT.get(ch.upper(), _FONT["?"]).split()
            for gy, bits in enumerate(glyph):
                for gx, bit in enumerate(bits):
                    if bit == "1":
                        self.rect(x + gx * scale, y + gy * scale,
                                  x + gx * scale + scale - 1,
                                  y + gy * scale + scale - 1, color)
            x += 6 * scale

    def save_png(self, path):
        stride = 3 * self.w
        raw = b"".join(b"\x00" + bytes(self.px[y * stride:(y + 1) * stride])
                       for y in range(self.h))

        def chunk(tag, data):
            return (struct.pack(">I", len(data)) + tag + data +
                    struct.pack(">I", zlib.crc32(tag + data) & 0xFFFFFFFF))

        png = (b"\x89PNG\r\n\x1a\n" +
               chunk(b"IHDR", struct.pack(">IIBBBBB", self.w, self.h, 8, 2, 0,
                                          0, 0)) +
               chunk(b"IDAT", zlib.compress(raw, 9)) + chunk(b"IEND", b""))
        os.makedirs(os.path.dirname(os.path.abspath(path)), exist_ok=True)
        with open(path, "wb") as f:
            f.write(png)


def _nice_step(span, ticks=5):
    raw = span / ticks
    mag = 10**math.floor(math.log10(raw))
    for m in (1, 2, 2.5, 5, 10):
        if m * mag >= raw:
            return m * mag
    return 10 * mag


def _plot_builtin(doc, panels, keys, labels, path):
    ds, causals = _grid_shape(panels)
    all_n = sorted({row["N"] for row in doc["results"]})
    ymax = max(t for _, series in panels for pts in series.values()
               for _, t in pts)
    step = _nice_step(ymax * 1.05)
    ytop = step * math.ceil(ymax * 1.05 / step)

    pw, ph = 560, 380  # one panel, with its margins
    left, right, top, bottom = 80, 20, 40, 56  # plot area inside a panel
    header = 90
    canvas = Canvas(pw * len(causals), header + ph * len(ds))
    black, grid, axis = (0, 0, 0), (225, 225, 225), (90, 90, 90)

    title = "ATTENTION FORWARD, BF16 " + (doc["environment"].get("gpu") or "")
    canvas.text((canvas.w - canvas.text_width(title)) // 2, 12, title, black)
    # Legend.
    items = [(labels[k], _COLORS[k]) for k in keys
             if any(series[k] for _, series in panels)]
    total = sum(40 + canvas.text_width(name) + 24 for name, _ in items)
    x = max(8, (canvas.w - total) // 2)
    for name, color in items:
        canvas.rect(x, 52, x + 29, 55, color)
        canvas.rect(x + 11, 49, x + 18, 58, color)
        canvas.text(x + 38, 47, name, black)
        x += 40 + canvas.text_width(name) + 24

    lo_n, hi_n = math.log2(all_n[0]), math.log2(all_n[-1])
    for (d, causal), series in panels:
        ox = pw * causals.index(causal)
        oy = header + ph * ds.index(d)
        x0, x1 = ox + left, ox + pw - right
        y0, y1 = oy + top, oy + ph - bottom  # y0 top, y1 bottom

        def px(n):
            if hi_n == lo_n:
                return (x0 + x1) / 2
            return x0 + 30 + (x1 - x0 - 60) * (math.log2(n) - lo_n) / (hi_n -
                                                                        lo_n)

        def py(t):
            return y1 - (y1 - y0) * t / ytop

        t = 0.0
        while t <= ytop + 1e-9:
            y = int(round(py(t)))
            canvas.line(x0, y, x1, y, grid)
            label = "%g" % t
            canvas.text(x0 - 8 - canvas.text_width(label), y - 7, label, black)
            t += step
        for n in all_n:
            x = int(round(px(n)))
            canvas.line(x, y0, x, y1, grid)
            label = _n_label(n)
            canvas.text(x - canvas.text_width(label) // 2, y1 + 8, label, black)
        canvas.line(x0, y0, x0, y1, axis)
        canvas.line(x0, y1, x1, y1, axis)
        canvas.line(x1, y0, x1, y1, axis)
        canvas.line(x0, y0, x1, y0, axis)
        name = _panel_title(d, causal)
        canvas.text(x0 + (x1 - x0 - canvas.text_width(name)) // 2, oy + 12,
                    name, black)
        canvas.text(ox + 6, oy + 12, "TFLOP/S", axis, scale=1)
        canvas.text(x1 - canvas.text_width("N", 1), y1 + 30, "N", axis, scale=1)
        for k in keys:
            pts = sorted(series[k])
            color = _COLORS[k]
            width = 3 if k == "fa" else 2
            for (na, ta), (nb, tb) in zip(pts, pts[1:]):
                if all_n.index(nb) == all_n.index(na) + 1:  # no line over gaps
                    canvas.line(px(na), py(ta), px(nb), py(tb), color, width)
            for n, tf in pts:
                cx, cy = int(round(px(n))), int(round(py(tf)))
                canvas.rect(cx - 3, cy - 3, cx + 3, cy + 3, color)
    canvas.save_png(path)


# ----------------------------------------------------------------------------
# Driver.


def _int_list(text):
    try:
        values = [int(v) for v in text.replace(" ", "").split(",") if v]
    except ValueError:
        raise argparse.ArgumentTypeError("expected integers like 64,128, got %r"
                                         % text)
    if not values or any(v <= 0 for v in values):
        raise argparse.ArgumentTypeError("expected positive integers, got %r" %
                                         text)
    return values


def _flatten(lists):
    out = []
    for values in lists or []:
        for v in values:
            if v not in out:
                out.append(v)
    return out


def default_output(name):
    return os.path.join(os.environ.get("OUT") or os.getcwd(), name)


def parse_args(argv):
    p = argparse.ArgumentParser(
        description="FA's attention " + PASS["name"] + " against SDPA (cuDNN, flash, "
        "efficient), FlexAttention and naive attention: bf16, B*N = 16384 "
        "tokens, H = 2048 / D. Prints a table last; writes JSON and a PNG.",
        epilog="Example (GPU machine): python3 bench/attention_fwd.py "
        "--fa-jit /tmp/fa/bin/fa-jit --json $OUT/%s "
        "--png $OUT/%s" % (PASS["json"], PASS["json"].replace(".json", ".png")))
    g = p.add_argument_group("configs")
    g.add_argument("--d", type=_int_list, action="append", metavar="D[,D...]",
                   help="head dims (default 64,128,256; --quick: 64,128)")
    g.add_argument("--n", type=_int_list, action="append", metavar="N[,N...]",
                   help="sequence lengths (default 512,...,16384; --quick: "
                   "1024,4096)")
    g.add_argument("--causal", choices=("no", "yes", "both"), default="both",
                   help="non-causal, causal (bottom-right; = top-left for Nq "
                   "= Nk) or both (default)")
    g.add_argument("--quick", action="store_true",
                   help="D in {64,128}, N in {1024,4096} (explicit --d/--n win)")
    g.add_argument("--tokens", type=int, default=16384,
                   help="B*N (default 16384)")
    g.add_argument("--width", type=int, default=2048,
                   help="H*D (default 2048)")
    g.add_argument("--alibi", action="store_true",
                   help="the ALiBi variant: FA with --alibi, FlexAttention "
                   "with an ALiBi score_mod, SDPA and naive with an additive "
                   "[1, H, N, N] bias (SDPA flash takes none: it errors)")
    g = p.add_argument_group("FA")
    g.add_argument("--fa-jit", default=None,
                   help="fa-jit binary (default build/bin/fa-jit if present, "
                   "else /tmp/fa/bin/fa-jit)")
    g.add_argument("--no-fa", action="store_true", help="anchors only")
    g.add_argument("--fa-args", default="",
                   help="extra fa-jit arguments for every FA run, one "
                   "shell-quoted string, written with = (e.g. "
                   "--fa-args=--bwd-atomic-dq)")
    g.add_argument("--bench-iters", type=int, default=50,
                   help="fa-jit --bench-iters (default 50)")
    g.add_argument("--fa-timeout", type=float, default=120,
                   help="seconds per fa-jit run (default 120); after two "
                   "timeouts FA is skipped for the remaining configs")
    g = p.add_argument_group("anchors")
    g.add_argument("--anchors", default=",".join(ANCHORS),
                   help="comma list of %s, or none (default all)" %
                   ",".join(ANCHORS))
    g.add_argument("--no-anchors", action="store_true",
                   help="FA only (same as --anchors none)")
    g.add_argument("--flex-n", type=_int_list,
                   default=list(DEFAULT_FLEX_N), metavar="N[,N...]",
                   help="N for FlexAttention, bounding compile time (default "
                   "2048,4096,8192)")
    g.add_argument("--naive-max-gb", type=float, default=8.0,
                   help="run naive only while B*H*N*N*4 bytes < this many GB "
                   "(default 8)")
    g.add_argument("--timer", choices=("auto", "triton", "events"),
                   default="auto",
                   help="anchor timing: triton.testing.do_bench median "
                   "(auto: when triton imports) or CUDA events")
    g.add_argument("--warmup-ms", type=float, default=25,
                   help="do_bench warmup (default 25 ms, triton's default)")
    g.add_argument("--rep-ms", type=float, default=100,
                   help="do_bench rep (default 100 ms, triton's default)")
    g.add_argument("--seed", type=int, default=0, help="input seed")
    g = p.add_argument_group("output")
    g.add_argument("--json", default=None,
                   help="JSON path (default $OUT/%s, or ./%s without $OUT)" %
                   (PASS["json"], PASS["json"]))
    g.add_argument("--png", default=None,
                   help="PNG path (default: the JSON path with .png)")
    g.add_argument("--no-png", action="store_true", help="skip the plot")
    g.add_argument("--budget-s", type=float, default=0,
                   help="start no new config after this many seconds (0: no "
                   "limit); the rest are recorded as skipped")
    g.add_argument("--dry-run", action="store_true",
                   help="print the configs and fa-jit commands; run nothing")
    g.add_argument("--from-json", metavar="PATH",
                   help="re-print the table and re-draw the plot from an "
                   "earlier JSON; run nothing")
    args = p.parse_args(argv)

    args.d = _flatten(args.d) or list(QUICK_D if args.quick else DEFAULT_D)
    args.n = _flatten(args.n) or list(QUICK_N if args.quick else DEFAULT_N)
    args.causals = {"no": [False], "yes": [True], "both": [False, True]}[
        args.causal]
    if args.no_anchors or args.anchors.strip().lower() == "none":
        args.anchors = []
    else:
        names = [a.strip() for a in args.anchors.split(",") if a.strip()]
        bad = [a for a in names if a not in ANCHORS]
        if bad:
            p.error("unknown anchor(s) %s; choose from %s" %
                    (",".join(bad), ",".join(ANCHORS)))
        args.anchors = [a for a in ANCHORS if a in names]
    if args.tokens <= 0 or args.width <= 0:
        p.error("--tokens and --width must be positive")
    bad_n = [n for n in args.n if args.tokens % n]
    if bad_n:
        p.error("N must divide --tokens=%d (B = tokens / N): %s" %
                (args.tokens, bad_n))
    bad_d = [d for d in args.d if args.width % d]
    if bad_d:
        p.error("D must divide --width=%d (H = width / D): %s" %
                (args.width, bad_d))
    if args.bench_iters <= 0:
        p.error("--bench-iters must be positive")
    if args.fa_jit is None:
        args.fa_jit = default_fa_jit()
    if args.json is None:
        args.json = default_output(PASS["json"])
    if args.png is None:
        root, _ = os.path.splitext(args.from_json or args.json)
        args.png = root + ".png"
    if args.no_fa and not args.anchors:
        p.error("nothing to measure: --no-fa with no anchors")
    return args


def finish(doc, args):
    """Writes the plot, prints notes, errors and the table (last)."""
    if not args.no_png:
        note = plot_png(doc, args.png)
        doc["notes"] = [
            n for n in doc.get("notes", [])
            if not (n.startswith("plot written") or n.startswith("no plot"))
        ] + [note]
        doc["png"] = os.path.abspath(args.png) if note.startswith("plot") else None
    if args.json and not args.from_json:
        write_json(args.json, _clean(doc))
    errors = error_lines(doc)
    print()
    if errors:
        print("Errors and notes (%d):" % len(errors))
        for line in errors:
            print("  " + line)
        print()
    for note in doc.get("notes", []):
        print("note: " + note)
    if args.json and not args.from_json:
        print("json: " + os.path.abspath(args.json))
    if doc.get("png"):
        print("png: " + doc["png"])
    env = doc.get("environment", {})
    print()
    print("Attention %s TFLOP/s (%s), bf16, B*N = %d, H = %d / D, on %s; "
          "err: failed, blank: not run" %
          (PASS["name"], FLOP_FORMULA, doc["config"]["tokens"], doc["config"]["width"],
           env.get("gpu") or env.get("hostname", "?")))
    print(format_table(doc))
    sys.stdout.flush()


def _progress_line(i, total, c, row):
    parts = ["[%*d/%d] %s" % (len(str(total)), i, total, config_name(c))]
    fa = row.get("fa")
    if fa:
        if fa.get("status") == "ok":
            extra = ""
            if fa.get("compile_ms") is not None:
                extra = ", compile %.0f ms" % fa["compile_ms"]
            parts.append("FA %.1f (%.3f ms%s)" % (fa["tflops"], fa["ms"], extra))
        else:
            parts.append("FA %s" % fa.get("status"))
    for a, rec in row.get("anchors", {}).items():
        if rec.get("status") == "ok":
            parts.append("%s %.1f" % (ANCHORS[a], rec["tflops"]))
        else:
            parts.append("%s %s" % (ANCHORS[a], rec.get("status")))
    return " | ".join(parts)


def main(argv=None):
    args = parse_args(sys.argv[1:] if argv is None else argv)
    FA_ARGS[:] = shlex.split(args.fa_args)

    if args.from_json:
        with open(args.from_json) as f:
            doc = json.load(f)
        args.no_png = args.no_png or False
        finish(doc, args)
        return 0

    configs = make_configs(args.d, args.n, args.causals, args.tokens,
                           args.width, args.alibi)
    if args.dry_run:
        for c in configs:
            line = config_name(c) + "  GFLOP=%.1f" % (c["flops"] / 1e9)
            if not args.no_fa:
                line += "  " + shlex.join(fa_command(args.fa_jit, c,
                                                     args.bench_iters))
            print(line)
        print("%d configs; anchors: %s" % (len(configs),
                                           ",".join(args.anchors) or "none"))
        return 0

    torch, torch_error, timer = None, None, None
    if args.anchors:
        torch, torch_error = import_torch()
        if torch is not None:
            timer = Timer(torch, args.timer, args.warmup_ms, args.rep_ms, 10,
                          50)
    if not args.no_fa and not os.path.isfile(args.fa_jit):
        print("warning: fa-jit not found at %s; FA will be recorded as failed"
              % args.fa_jit, file=sys.stderr)
    if args.anchors and torch is None:
        print("warning: %s; anchors will be recorded as failed" % torch_error,
              file=sys.stderr)

    doc = {
        "schema": SCHEMA,
        "flop_formula": FLOP_FORMULA,
        "config": {
            "dtype": "bf16",
            "tokens": args.tokens,
            "width": args.width,
            "D": args.d,
            "N": args.n,
            "causal": args.causals,
            "causal_kind": "bottom-right (= top-left: Nq = Nk)",
            "variant": "alibi" if args.alibi else "plain",
            "no_fa": args.no_fa,
            "fa_jit": None if args.no_fa else args.fa_jit,
            "fa_args": FA_ARGS,
            "bench_iters": args.bench_iters,
            "anchors": args.anchors,
            "flex_n": args.flex_n,
            "naive_max_gb": args.naive_max_gb,
            "seed": args.seed,
            "inputs": "random normal, [B, H, N, D] contiguous; FA's come from "
                      "fa-jit (same shapes and distribution, its own values)",
            "fa_correctness": "not checked here: fa-jit --check covers numerics",
        },
        "environment": environment(args, torch, torch_error, timer),
        "results": [],
        "notes": [],
    }
    print("FA attention %s benchmark: %d configs, FA: %s, anchors: %s" %
          (PASS["name"], len(configs), "no" if args.no_fa else args.fa_jit,
           ",".join(args.anchors) or "none"))
    print("environment: " + json.dumps(
        {k: doc["environment"].get(k) for k in ("gpu", "torch", "triton",
                                                "timer", "repo_commit")}))
    sys.stdout.flush()

    start = time.monotonic()
    fa_skip, fa_timeouts = None, 0
    try:
        for i, c in enumerate(configs, 1):
            row = dict(c)
            if args.budget_s and time.monotonic() - start > args.budget_s:
                skip = {"status": "skipped", "reason": "--budget-s reached"}
                if not args.no_fa:
                    row["fa"] = dict(skip)
                row["anchors"] = {a: dict(skip) for a in args.anchors}
                doc["results"].append(row)
                continue
            if not args.no_fa and fa_skip:
                row["fa"] = {"status": "skipped", "reason": fa_skip}
            elif not args.no_fa:
                fa = row["fa"] = run_fa(args.fa_jit, c, args.bench_iters,
                                        args.fa_timeout)
                target = fa.get("target")
                if target is not None and not target.startswith("sm_"):
                    # --target=auto found no GPU: host timings mean nothing
                    # here and the large configs would take hours.
                    fa_skip = "an earlier fa-jit run ran on '%s', not a GPU" % (
                        target)
                if fa.get("error", "").startswith("timed out"):
                    fa_timeouts += 1
                    if fa_timeouts >= 2:
                        fa_skip = "fa-jit timed out twice (--fa-timeout %gs)" % (
                            args.fa_timeout)
            if args.anchors:
                if torch is None:
                    row["anchors"] = {
                        a: {"status": "error", "error": torch_error}
                        for a in args.anchors
                    }
                else:
                    row["anchors"] = run_anchors(torch, timer, c, args.anchors,
                                                 args)
            else:
                row["anchors"] = {}
            row["ratios"] = ratios(row)
            doc["results"].append(row)
            print(_progress_line(i, len(configs), c, row))
            sys.stdout.flush()
            write_json(args.json, _clean(doc))
    except KeyboardInterrupt:
        doc["notes"].append("interrupted after %d of %d configs" %
                            (len(doc["results"]), len(configs)))
    doc["wall_s"] = round(time.monotonic() - start, 1)
    finish(doc, args)
    measured = any(
        (row.get("fa") or {}).get("status") == "ok" or any(
            r.get("status") == "ok" for r in row.get("anchors", {}).values())
        for row in doc["results"])
    return 0 if measured else 1


if __name__ == "__main__":
    sys.exit(main())
