#!/usr/bin/env python3
"""Forward attention benchmark: FA (fa.attention) against the anchors.

One run measures, for each (D, causal, N) config, FA and the anchors of
ANCHORS.md on one set of torch CUDA tensors, in this process, timed the same
way:

  FA              fa.attention(q, k, v, causal=..., scale=...): the Python
                  API as users call it on torch tensors (the custom op
                  torch.ops.fa.attention; its autograd for the backward)
  FA plain        with a --variant, FA without the variant's terms on the
                  same tensors (not checked): what "within x% of the plain
                  kernel" compares against
  SDPA cuDNN      torch SDPA pinned with sdpa_kernel(SDPBackend.CUDNN_ATTENTION)
  SDPA flash      ... SDPBackend.FLASH_ATTENTION (FlashAttention-2)
  SDPA efficient  ... SDPBackend.EFFICIENT_ATTENTION (memory-efficient)
  FlexAttention   torch.compile(flex_attention), causal through a block mask
                  from create_block_mask; only for N in --flex-n
  naive           QK^T, softmax in f32, PV with the N x N matrix; only while
                  B*H*N*N*4 bytes < --naive-max-gb

Each is timed by triton.testing.do_bench (median; the L2 flushed before every
timed call) when triton imports, else by CUDA events around each of 50 calls
after 10 warm-up calls, with the same flush before each. FA's output is
checked against SDPA cuDNN's on the same inputs with the criterion of
docs/accuracy.md: the bound comes from a plain bf16 computation (forward) or
from SDPA flash's and efficient's gradients (backward); a mismatch is
reported, not fatal. `--fa-jit [PATH]` adds a kernel-only column: fa-jit
--bench in a subprocess, its own inputs, back-to-back launches with a warm
L2, so not comparable with the rest.

bf16, B*N = 16384 tokens, Hq = Hkv = 2048 / D. Forward TFLOP/s =
4*B*H*N^2*D / t, half when causal.

Writes a JSON file with every measurement, the check, the environment and the
config (after each config, so a cut-off run keeps what it measured), a PNG of
TFLOP/s against N (matplotlib when it imports, else a small built-in
rasterizer), and prints a short table last. torch and fa are imported only
inside functions, so --help, --dry-run and --from-json work without them. See
bench/README.md and docs/benchmarks.md.
"""

import argparse
import collections
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
import types
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
    "plain": "FA plain",
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
FA_JIT_LABEL = "FA kernel (fa-jit)"

# What is measured. bench/attention_bwd.py switches to the backward: dQ, dK,
# dV given dO, each implementation's autograd backward of one forward (FA's
# through torch.ops.fa.attention's autograd), at 2.5x the forward's FLOPs.
PASSES = {
    "forward": {
        "schema": "fa-bench-attention-fwd/2",
        "flop_formula": "4*B*H*N^2*D / t, half when causal",
        "flop_factor": 1.0,
        "fa_jit_flags": [],
        "json": "bench_fwd.json",
        "script": "attention_fwd.py",
    },
    "backward": {
        "schema": "fa-bench-attention-bwd/2",
        "flop_formula": "2.5*4*B*H*N^2*D / t, half when causal",
        "flop_factor": 2.5,
        "fa_jit_flags": ["--backward"],
        "json": "bench_bwd.json",
        "script": "attention_bwd.py",
    },
}
PASS = {}


def use_pass(name):
    """Switches this module to the forward or the backward benchmark."""
    PASS.clear()
    PASS.update(PASSES[name], name=name)


use_pass("forward")

# ----------------------------------------------------------------------------
# Configs and arithmetic.


def forward_flops(b, h, n, d, causal):
    flops = 4.0 * b * h * n * n * d
    return flops / 2 if causal else flops


def tflops_of(flops, ms):
    if ms is None or not ms > 0:
        return None
    return flops / (ms * 1e-3) / 1e12


# Variants beyond plain attention (--variant): what FA, SDPA, FlexAttention
# and the references compute on the scores.
#   alibi     FA alibi_slopes, slopes 2^(-8 (h + 1) / H): s - slope[h] |i - j|
#   relpos    a relative-position score_mod, s + rel[h] (j - i), rel[h] =
#             -2^(-8 (h + 1) / H) (a captured per-head table)
#   document  a document mask_mod, doc[i] == doc[j] (captured document ids:
#             four documents of N/8, 3N/8, N/4 and N/4 tokens)
#   bias      an additive bias, random normal bf16 [1, H, N, N] (broadcast
#             over the batch): FA's bias, SDPA's attn_mask, Flex's score_mod
#             reading it
#   softcap   s = 30 tanh(s / 30) on the scaled scores (Gemma 2's): FA's
#             softcap, Flex's score_mod; SDPA has none, so its anchors are
#             skipped and the check's reference is the same computation in
#             f32 (P unrounded) instead of SDPA cuDNN
VARIANTS = ("plain", "alibi", "relpos", "document", "bias", "softcap")
SOFTCAP = 30.0


def softcap_(s, cap):
    """cap * tanh(s / cap) in place on the f32 scores s."""
    return s.div_(cap).tanh_().mul_(cap)


def make_configs(ds, ns, causals, tokens, width, variant="plain"):
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
                    "variant": variant,
                    "alibi": variant == "alibi",
                })
    return configs


def config_name(c):
    name = "D=%d causal=%s N=%d B=%d H=%d" % (c["D"], "yes" if c["causal"] else
                                              "no", c["N"], c["B"], c["H"])
    variant = c.get("variant", "alibi" if c.get("alibi") else "plain")
    return name + ("" if variant == "plain" else " " + variant)


def fa_call_text(c):
    """What the benchmark runs of FA for config c, as Python."""
    args = ["q", "k", "v"]
    if c["causal"]:
        args.append("causal=True")
    args.append("scale=1/sqrt(%d)" % c["D"])
    if c.get("alibi"):
        args.append("alibi_slopes=slopes")
    if c.get("variant") == "relpos":
        args.append("score_mod=lambda s, b, h, i, j: s + rel[h] * (j - i)")
    if c.get("variant") == "document":
        args.append("mask_mod=lambda b, h, i, j: doc[i] == doc[j]")
    if c.get("variant") == "bias":
        args.append("bias=bias")
    if c.get("variant") == "softcap":
        args.append("softcap=%g" % SOFTCAP)
    call = "fa.attention(%s)" % ", ".join(args)
    if PASS["name"] == "backward":
        return "out = %s; timed: torch.autograd.grad(out, (q, k, v), dO)" % call
    return call


# ----------------------------------------------------------------------------
# The kernel-only column (--fa-jit): fa-jit --bench in a subprocess.

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


def fa_jit_command(fa_jit, c, iters, extra=()):
    """fa-jit's command for config c; `extra` (--fa-jit-args, e.g. the
    backward's --bwd-atomic-dq) goes before --bench."""
    cmd = [
        fa_jit, "--target=auto",
        "--shape=%d,%d,%d,%d,%d,%d" % (c["B"], c["H"], c["H"], c["N"], c["N"],
                                       c["D"]), "--dtype=bf16"
    ]
    if c["causal"]:
        cmd.append("--causal=bottom-right")
    cmd += PASS["fa_jit_flags"]
    if c.get("alibi"):
        cmd.append("--alibi")
    if c.get("variant") == "softcap":
        cmd.append("--softcap=%g" % SOFTCAP)
    cmd += list(extra)
    cmd += ["--bench", "--bench-iters=%d" % iters]
    return cmd


def run_fa_jit(fa_jit, c, iters, timeout, extra=()):
    if c.get("variant") in ("relpos", "document", "bias"):
        return {"status": "skipped",
                "reason": "fa-jit takes this variant's captures and bias "
                          "from files"}
    cmd = fa_jit_command(fa_jit, c, iters, extra)
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


def fa_jit_version(fa_jit):
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
# Timing: one timer for FA and every anchor.


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


# ----------------------------------------------------------------------------
# Checking FA against SDPA cuDNN, with docs/accuracy.md's criterion.
#
# A tensor is seen as rows along its last dimension (O and dQ: one row per
# query, dK and dV: one per key); with r the reference,
#
#   err(x) = max over rows i of ||x_i - r_i||_2 / norm,
#
# norm the RMS over rows of ||r_i||_2, and FA passes where
#
#   err(FA) <= 2 * err(baseline) + 1e-5
#
# for each of its outputs. Here r is SDPA cuDNN's output on the same inputs.
# The forward's baseline is the plain low-precision computation of
# docs/accuracy.md (scores and softmax in f32, P rounded to bf16 before P V,
# O rounded to bf16), on every query row, a chunk of rows at a time (the
# scores are materialized: well under a second per config on an H100), or,
# with --check-rows R, on R sampled rows of each (b, h), FA's error then taken
# on the same rows. Both errors must be over the same rows: under a causal
# mask the early rows (few keys, large outputs) have the largest errors, and
# FA's worst over every row exceeded twice the plain reference's worst over a
# 256-row sample at D = 64, N = 16384.
#
# A low-precision backward reference needs every row for dK and dV; the
# backward's baseline is two other kernels instead, the larger of SDPA
# flash's and SDPA efficient's errors (those that run). Not flash's alone:
# flash and cuDNN round the same quantities at the same points, so flash's
# gradients are about twice as close to cuDNN's as either is to float64's,
# and a correct kernel that rounds elsewhere (SDPA efficient; FA at D = 64)
# would fail.

CHECK_FACTOR = 2.0
CHECK_SLACK = 1e-5


def sample_rows(n, count):
    """Sorted indices of `count` of n query rows (--check-rows): the first
    count/4, count/4 spread evenly between, and the last count/2 (the
    longest rows under a causal mask); every row when n <= count."""
    if n <= count:
        return list(range(n))
    head, tail = count // 4, count // 2
    spread = count - head - tail
    gap = n - head - tail  # > spread, so the rows between are distinct
    middle = [head + gap * j // spread for j in range(spread)]
    return list(range(head)) + middle + list(range(n - tail, n))


def _describe_rows(count, n):
    """What sample_rows(n, ...) took, given that it took `count` rows."""
    if count == n:
        return "every query row"
    head, tail = count // 4, count // 2
    return ("%d of %d query rows of each (b, h): the first %d, %d spread "
            "between, the last %d" % (count, n, head, count - head - tail,
                                      tail))


def row_norm_rms(torch, ref):
    """docs/accuracy.md's norm: the RMS over rows of ||ref_i||_2 (1 when 0)."""
    rows = ref.numel() // ref.shape[-1] if ref.numel() else 0
    if not rows:
        return 1.0
    total = float(ref.float().square().sum(dtype=torch.float64))
    norm = math.sqrt(total / rows)
    return norm if norm > 0 else 1.0


def _unravel(index, shape):
    out = []
    for size in reversed(shape):
        out.append(index % size)
        index //= size
    return out[::-1]


def max_row_error(torch, x, ref, norm):
    """(err, row): the largest ||x_i - ref_i||_2 / norm over the rows of x and
    the index of that row ([b, h, i]); err is inf, at the first such row,
    where the difference holds a NaN or an infinity (neither FA's outputs nor
    cuDNN's hold an infinity)."""
    err = torch.linalg.vector_norm(x.float() - ref.float(), dim=-1)
    flat = err.flatten()
    bad = ~torch.isfinite(flat)
    if bool(bad.any()):
        worst = int(bad.nonzero()[0, 0])
        return math.inf, _unravel(worst, list(err.shape))
    worst = int(flat.argmax())
    return float(flat[worst]) / norm, _unravel(worst, list(err.shape))


def plain_attention(torch,
                    q,
                    k,
                    v,
                    scale,
                    causal,
                    slopes=None,
                    rows=None,
                    chunk_bytes=1 << 30,
                    term=None):
    """docs/accuracy.md's low-precision reference, [B, H, rows, Dv] in q's
    dtype, at query rows `rows` (an index tensor; None: every row) of every
    (b, h): scores q.k accumulated in f32 and scaled in f32 (minus
    slope[h] * |i - j| with ALiBi, keys j > i masked when causal: top-left,
    as fa.attention's causal=True and SDPA's is_causal), softmax in f32
    (p = exp(s - max), the sum of the f32 p), P rounded to q's dtype before
    P V, P V accumulated in f32, O = acc / sum rounded to q's dtype. The f32
    scores of one batch are materialized chunk_bytes at a time. Call it with
    TF32 off (_f32_matmul). `term(s, i, j)`, where given, adds a variant's
    score terms to the f32 scaled scores s [H, rows, nk] of query rows i
    [rows, 1] and keys j [1, nk] in place (after ALiBi, before the causal
    mask)."""
    B, H, N = q.shape[:3]
    nk = k.shape[2]
    if rows is None:
        rows = torch.arange(N, device=q.device)
    out = q.new_empty((B, H, len(rows), v.shape[3]))
    step = max(1, chunk_bytes // (4 * H * nk))
    j = torch.arange(nk, device=q.device)[None, :]
    for b in range(B):
        kt, vb = k[b].float().transpose(-2, -1), v[b].float()
        for start in range(0, len(rows), step):
            chunk = rows[start:start + step]
            i = chunk[:, None]
            s = torch.matmul(q[b][:, chunk].float(), kt)  # [H, chunk, nk]
            s.mul_(scale)
            if slopes is not None:
                s.sub_(slopes.float()[:, None, None] * (i - j).abs().float())
            if term is not None:
                term(s, i, j)
            if causal:
                s.masked_fill_(j > i, -math.inf)
            p = s.sub_(s.amax(dim=-1, keepdim=True)).exp_()
            total = p.sum(dim=-1, keepdim=True)
            acc = torch.matmul(p.to(q.dtype).float(), vb)
            out[b, :, start:start + step] = acc.div_(total).to(q.dtype)
            del s, p, acc
    return out


@contextlib.contextmanager
def _f32_matmul(torch):
    """f32 matmuls in f32, not TF32 (torch's default, made sure of)."""
    saved = torch.backends.cuda.matmul.allow_tf32
    torch.backends.cuda.matmul.allow_tf32 = False
    try:
        yield
    finally:
        torch.backends.cuda.matmul.allow_tf32 = saved


class Check:
    """SDPA cuDNN's outputs on one config's inputs, and the bound of each.

    judge(FA's outputs) -> {"check": record}; compare(an anchor's outputs)
    -> {"err_vs_cudnn": {name: err}}, information only. Errors here (cuDNN
    refusing the shape, out of memory) become the check's error, never the
    run's.
    """

    def __init__(self, torch, impls, x, c, check_rows):
        self.torch = torch
        self.error = None
        self.baseline = None
        self.baseline_errs = {}  # backward: kernel -> its error per tensor
        self.rows = None  # forward: the rows checked (None: every row)
        self.reference = "SDPA cuDNN"
        backward = PASS["name"] == "backward"
        self.names = ("dQ", "dK", "dV") if backward else ("O",)
        t0 = time.perf_counter()
        try:
            self._prepare(impls, x, c, check_rows, backward)
        except Exception as e:  # noqa: BLE001 - e.g. out of memory
            self.error = "check: " + _short_error(e)
        self.seconds = round(time.perf_counter() - t0, 3)
        if self.error:
            self.ref = None
            _free(torch)

    def _prepare(self, impls, x, c, check_rows, backward):
        torch = self.torch
        n = c["N"]
        if not backward and check_rows and check_rows < n:
            self.rows = torch.tensor(sample_rows(n, check_rows),
                                     device=x.q.device)
        if x.softcap is not None and backward:
            self.error = "no backward reference: SDPA has no softcap"
            return
        if x.softcap is not None:
            ref, error = self._f32_reference(x, c), None
        else:
            ref, error = first_output(torch, impls["cudnn"])
        if ref is None:
            self.error = "reference SDPA cuDNN failed: " + error
            return
        self.ref = tuple(ref) if backward else (ref,)
        # An f32 reference holds the checked rows alone: their norms.
        partial = x.softcap is not None
        self.norms = [
            row_norm_rms(torch, self._at_rows(r) if partial else r)
            for r in self.ref
        ]
        if backward:
            errors, failed = {}, {}
            for name in ("flash", "efficient"):
                grads, error = first_output(torch, impls[name])
                if grads is None:
                    failed[name] = error
                    continue
                with torch.no_grad():
                    errors[name] = [
                        max_row_error(torch, g, r, n)[0]
                        for g, r, n in zip(grads, self.ref, self.norms)
                    ]
                del grads
            if not errors:
                self.error = "no baseline: " + "; ".join(
                    "SDPA %s: %s" % kv for kv in failed.items())
                return
            if failed:  # why: in the anchor's own record, if it is timed
                self.baseline_text = "SDPA %s's gradients (SDPA %s failed)" % (
                    next(iter(errors)), next(iter(failed)))
            else:
                self.baseline_text = ("the larger error of SDPA flash's and "
                                      "SDPA efficient's gradients")
            self.baseline = [max(e) for e in zip(*errors.values())]
            self.baseline_errs = errors
        else:
            count = n if self.rows is None else len(self.rows)
            self.baseline_text = ("plain bf16 attention (docs/accuracy.md) "
                                  "on " + _describe_rows(count, n))
            with torch.no_grad(), _f32_matmul(torch):
                plain = plain_attention(torch,
                                        x.q,
                                        x.k,
                                        x.v,
                                        x.scale,
                                        c["causal"],
                                        x.slopes,
                                        self.rows,
                                        term=x.term)
                self.baseline = [
                    max_row_error(torch, plain, self._at_rows(self.ref[0]),
                                  self.norms[0])[0]
                ]
        bad = [n for n, e in zip(self.names, self.baseline) if math.isinf(e)]
        if bad:
            self.error = "the baseline's %s is not finite" % ", ".join(bad)

    def _f32_reference(self, x, c):
        """The variant's attention in f32 with P unrounded (plain_attention
        on f32 inputs), on the rows the check takes (self.rows), zero
        elsewhere: the reference where SDPA cannot compute the variant
        (softcap)."""
        torch = self.torch
        self.reference = "the variant in f32 (SDPA has no softcap)"
        with torch.no_grad(), _f32_matmul(torch):
            at = plain_attention(torch, x.q.float(), x.k.float(), x.v.float(),
                                 x.scale, c["causal"], x.slopes, self.rows,
                                 term=x.term)
        if self.rows is None:
            return at
        ref = at.new_zeros(x.q.shape[:3] + (x.v.shape[3],))
        ref[:, :, self.rows] = at
        return ref

    def _outputs(self, out):
        return tuple(out) if PASS["name"] == "backward" else (out,)

    def _at_rows(self, t):
        return t if self.rows is None else t[:, :, self.rows]

    def judge(self, out):
        rec = {"status": "error", "reference": self.reference}
        rec["reference_s"] = self.seconds  # cuDNN and the baseline, untimed
        if self.error:
            rec["error"] = self.error
            return {"check": rec}
        rec["baseline"] = self.baseline_text
        tensors = {}
        try:
            with self.torch.no_grad():
                for i, (name, t, r, norm, base) in enumerate(
                        zip(self.names, self._outputs(out), self.ref,
                            self.norms, self.baseline)):
                    err, row = max_row_error(self.torch, self._at_rows(t),
                                             self._at_rows(r), norm)
                    if self.rows is not None:
                        row[2] = int(self.rows[row[2]])
                    bound = CHECK_FACTOR * base + CHECK_SLACK
                    tensors[name] = {
                        "err": err,
                        "bound": bound,
                        "baseline_err": base,
                        "worst_row": row,
                        "ok": err <= bound,
                    }
                    if self.baseline_errs:
                        tensors[name]["baseline_errs"] = {
                            k: v[i] for k, v in self.baseline_errs.items()
                        }
        except Exception as e:  # noqa: BLE001
            rec["error"] = "check: " + _short_error(e)
            return {"check": rec}
        rec["tensors"] = tensors
        ok = all(t["ok"] for t in tensors.values())
        rec["status"] = "ok" if ok else "mismatch"
        return {"check": rec}

    def compare(self, out):
        if self.error:
            return {}
        try:
            with self.torch.no_grad():
                # On the checked rows: where SDPA cannot compute the variant
                # the reference holds those alone.
                return {
                    "err_vs_cudnn": {
                        name: max_row_error(self.torch, self._at_rows(t),
                                            self._at_rows(r), norm)[0]
                        for name, t, r, norm in zip(
                            self.names, self._outputs(out), self.ref,
                            self.norms)
                    }
                }
        except Exception as e:  # noqa: BLE001
            return {"err_vs_cudnn_error": _short_error(e)}


# ----------------------------------------------------------------------------
# FA and the anchors on one set of inputs (torch and fa imported lazily).

# One implementation on one config's inputs: make() -> the timed callable,
# everything (make, the first call, the timing) inside context() when given,
# e.g. sdpa_kernel pinning a backend; `extra` joins its record.
Impl = collections.namedtuple("Impl", "make context extra")


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


def _synchronize(torch):
    if torch.cuda.is_available():
        torch.cuda.synchronize()


def _free(torch):
    try:
        if torch.cuda.is_available():
            torch.cuda.synchronize()
            torch.cuda.empty_cache()
    except Exception:  # noqa: BLE001 - a sticky CUDA error; reported elsewhere
        pass


def _context(impl):
    return impl.context() if impl.context else contextlib.nullcontext()


def first_output(torch, impl):
    """(what one untimed call of impl returns, None), or (None, why)."""
    with warnings.catch_warnings(record=True) as caught, _context(impl):
        warnings.simplefilter("always")
        try:
            out = impl.make()()
            _synchronize(torch)
            return out, None
        except Exception as e:  # noqa: BLE001 - a refusal, OOM, compile error
            return None, _short_error(e, caught)


def measure(torch, timer, c, impl, on_output=None):
    """Runs impl.make() -> fn and fn() once (errors surface here; that call,
    with any compile, is first_call_s), hands its output to on_output (whose
    dict joins the record), then times fn."""
    rec = {"status": "error"}
    rec.update(impl.extra or {})
    with warnings.catch_warnings(record=True) as caught, _context(impl):
        warnings.simplefilter("always")
        try:
            t0 = time.perf_counter()
            fn = impl.make()
            out = fn()
            _synchronize(torch)
            rec["first_call_s"] = round(time.perf_counter() - t0, 3)
            if on_output is not None:
                rec.update(on_output(out))
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


def make_inputs(torch, c, seed, device="cuda"):
    """One config's inputs, shared by FA and every anchor: bf16 q, k, v
    [B, H, N, D], random normal from `seed` (requiring grad, and a dO, for
    the backward); with ALiBi, slopes 2^(-8 (h + 1) / H)."""
    B, H, N, D = c["B"], c["H"], c["N"], c["D"]
    gen = torch.Generator(device=device)
    gen.manual_seed(seed)

    def randn():
        return torch.randn(B,
                           H,
                           N,
                           D,
                           device=device,
                           dtype=torch.bfloat16,
                           generator=gen)

    q, k, v = randn(), randn(), randn()
    dout = None
    if PASS["name"] == "backward":
        dout = randn()
        for t in (q, k, v):
            t.requires_grad_(True)
    slopes = rel = doc = bias = term = softcap = None
    pow2 = [2.0**(-8.0 * (h + 1) / H) for h in range(H)]
    variant = c.get("variant", "alibi" if c.get("alibi") else "plain")
    if variant == "alibi":
        slopes = torch.tensor(pow2, device=device)
    elif variant == "relpos":
        rel = -torch.tensor(pow2, device=device)

        def term(s, i, j):
            s.add_(rel[:, None, None] * (j - i).float())
    elif variant == "document":
        doc = torch.zeros(N, dtype=torch.int32, device=device)
        for start in (N // 8, N // 2, 3 * N // 4):
            doc[start:] += 1

        def term(s, i, j):
            s.masked_fill_((doc[i] != doc[j])[None], -math.inf)
    elif variant == "bias":
        bias = torch.randn(1, H, N, N, device=device, dtype=torch.bfloat16,
                           generator=gen)

        def term(s, i, j):
            s.add_(bias[0][:, i[:, 0]][:, :, j[0]].float())
    elif variant == "softcap":
        softcap = SOFTCAP

        def term(s, i, j):
            softcap_(s, softcap)

    return types.SimpleNamespace(q=q,
                                 k=k,
                                 v=v,
                                 dout=dout,
                                 slopes=slopes,
                                 rel=rel,
                                 doc=doc,
                                 bias=bias,
                                 term=term,
                                 softcap=softcap,
                                 scale=1.0 / math.sqrt(D))


def _timed(torch, fn, x):
    """fn itself for the forward; for the backward, a function running the
    autograd backward of one call of fn: (dQ, dK, dV) given x.dout."""
    if PASS["name"] == "forward":
        return fn
    out = fn()
    inputs = (x.q, x.k, x.v)

    def backward():
        return torch.autograd.grad(out, inputs, x.dout, retain_graph=True)

    return backward


@contextlib.contextmanager
def _deterministic(torch):
    """torch.use_deterministic_algorithms(True) for the block: fa.attention
    then takes the deterministic dQ kernel (docs/python.md)."""
    saved = (torch.are_deterministic_algorithms_enabled(),
             torch.is_deterministic_algorithms_warn_only_enabled())
    torch.use_deterministic_algorithms(True, warn_only=True)
    try:
        yield
    finally:
        torch.use_deterministic_algorithms(saved[0], warn_only=saved[1])


def implementations(torch, fa, c, x, args):
    """key -> Impl of FA ("fa", when the fa module is given) and of every
    anchor on inputs x, or a skip record where an anchor does not run at
    this config."""
    from torch.nn.attention import SDPBackend, sdpa_kernel
    F = torch.nn.functional
    N, causal = c["N"], c["causal"]
    device = x.q.device
    impls = {}

    # With a variant: SDPA and naive get its terms as an additive
    # [1, H, N, N] bias (causal folded in), FlexAttention as a score_mod or
    # a block mask, FA as alibi_slopes, score_mod or mask_mod.
    has_terms = x.slopes is not None or (x.term is not None and
                                         x.softcap is None)

    def alibi_bias():
        pos = torch.arange(N, device=device)
        if x.term is not None:
            bias = torch.zeros(x.q.shape[1], N, N, device=device)
            x.term(bias, pos[:, None], pos[None, :])
            bias = bias[None]
        else:
            dist = (pos[:, None] - pos[None, :]).abs().float()
            bias = -(x.slopes[:, None, None] * dist)[None]
        if causal:
            bias.masked_fill_(pos[None, :] > pos[:, None], float("-inf"))
        return bias.to(torch.bfloat16)

    if fa is not None:

        mods = {}
        if x.rel is not None:
            rel = x.rel
            mods["score_mod"] = lambda s, b, h, i, j: s + rel[h] * (j - i)
        if x.doc is not None:
            doc = x.doc
            mods["mask_mod"] = lambda b, h, i, j: doc[i] == doc[j]
        if x.bias is not None:
            mods["bias"] = x.bias
        if x.softcap is not None:
            mods["softcap"] = x.softcap

        def fa_fn():
            return fa.attention(x.q,
                                x.k,
                                x.v,
                                causal=causal,
                                scale=x.scale,
                                alibi_slopes=x.slopes,
                                **mods)

        context = None
        if args.fa_deterministic:
            context = lambda: _deterministic(torch)  # noqa: E731
        impls["fa"] = Impl(lambda: _timed(torch, fa_fn, x), context,
                           {"call": fa_call_text(c)})

        # The same call without the variant's terms, on the same tensors.
        if "plain" in args.anchors:

            def plain_fn():
                return fa.attention(x.q, x.k, x.v, causal=causal,
                                    scale=x.scale)

            impls["plain"] = Impl(
                lambda: _timed(torch, plain_fn, x), context,
                {"call": fa_call_text(dict(c, variant="plain", alibi=False))})

    def make_sdpa():
        bias = alibi_bias() if has_terms else None
        is_causal = causal and bias is None  # else folded into the bias

        def fn():
            return F.scaled_dot_product_attention(x.q,
                                                  x.k,
                                                  x.v,
                                                  attn_mask=bias,
                                                  is_causal=is_causal,
                                                  scale=x.scale)

        return _timed(torch, fn, x)

    for a, backend_name in SDPA_BACKENDS.items():
        if x.softcap is not None:
            impls[a] = {"status": "skipped", "reason": "SDPA has no softcap"}
            continue
        backend = getattr(SDPBackend, backend_name)
        impls[a] = Impl(make_sdpa, lambda b=backend: sdpa_kernel(b),
                        {"backend": backend_name})

    if N not in args.flex_n:
        impls["flex"] = {
            "status": "skipped",
            "reason": "N not in --flex-n (bounds compile time)"
        }
    else:

        def make_flex():
            import torch._dynamo
            from torch.nn.attention.flex_attention import (create_block_mask,
                                                           flex_attention)
            torch._dynamo.reset()  # no recompile limit across configs
            compiled = torch.compile(flex_attention, dynamic=False)
            block_mask = None
            doc = x.doc
            if causal or doc is not None:

                def causal_mask(b, h, q_idx, kv_idx):
                    keep = q_idx >= kv_idx if causal else True
                    if doc is not None:
                        keep = keep & (doc[q_idx] == doc[kv_idx])
                    return keep

                block_mask = create_block_mask(causal_mask,
                                               None,
                                               None,
                                               N,
                                               N,
                                               device=device)

            score_mod = None
            if x.slopes is not None:
                slopes = x.slopes

                def score_mod(score, b, h, q_idx, kv_idx):
                    return score - slopes[h] * (q_idx - kv_idx).abs()

            if x.rel is not None:
                rel = x.rel

                def score_mod(score, b, h, q_idx, kv_idx):
                    return score + rel[h] * (kv_idx - q_idx)

            if x.bias is not None:
                bias = x.bias

                def score_mod(score, b, h, q_idx, kv_idx):
                    return score + bias[0, h, q_idx, kv_idx]

            if x.softcap is not None:
                cap = x.softcap

                def score_mod(score, b, h, q_idx, kv_idx):
                    return cap * torch.tanh(score / cap)

            def fn():
                return compiled(x.q,
                                x.k,
                                x.v,
                                score_mod=score_mod,
                                block_mask=block_mask,
                                scale=x.scale)

            return _timed(torch, fn, x)

        impls["flex"] = Impl(make_flex, None, None)

    matrix_bytes = c["B"] * c["H"] * N * N * 4
    if matrix_bytes >= args.naive_max_gb * 1e9:
        impls["naive"] = {
            "status": "skipped",
            "reason": "N x N f32 matrix is %.1f GB >= --naive-max-gb %g" %
                      (matrix_bytes / 1e9, args.naive_max_gb)
        }
    else:

        def make_naive():
            mask = None
            if causal:
                mask = torch.ones(N, N, dtype=torch.bool,
                                  device=device).triu_(1)
            bias = alibi_bias() if has_terms else None

            def fn():
                s = torch.matmul(x.q, x.k.transpose(-2, -1)).float()
                s.mul_(x.scale)
                if x.softcap is not None:
                    softcap_(s, x.softcap)
                if bias is not None:
                    s.add_(bias)
                if mask is not None:
                    s.masked_fill_(mask, float("-inf"))
                p = torch.softmax(s, dim=-1).to(x.q.dtype)
                del s
                return torch.matmul(p, x.v)

            return _timed(torch, fn, x)

        impls["naive"] = Impl(make_naive, None,
                              {"matrix_gb": round(matrix_bytes / 1e9, 3)})
    return impls


def run_config(torch, timer, c, x, impls, args):
    """FA (checked against SDPA cuDNN unless --no-check) and every selected
    anchor on inputs x: {"fa": record, "anchors": {key: record}}."""
    check = None
    if "fa" in impls and not args.no_check:
        check = Check(torch, impls, x, c, args.check_rows)
    row = {}
    if "fa" in impls:
        row["fa"] = measure(torch, timer, c, impls["fa"],
                            check.judge if check else None)
        _free(torch)
    row["anchors"] = {}
    for a in args.anchors:
        impl = impls[a]
        if isinstance(impl, dict):  # not run at this config
            row["anchors"][a] = dict(impl)
            continue
        # FA plain computes other scores: it is timed, not compared.
        compare = check.compare if check and a != "plain" else None
        row["anchors"][a] = measure(torch, timer, c, impl, compare)
        _free(torch)
    return row


def import_torch():
    """(torch, None) with a usable GPU, else (None, why)."""
    try:
        import torch
    except Exception as e:  # noqa: BLE001
        return None, "cannot import torch: %s: %s" % (type(e).__name__, e)
    if not torch.cuda.is_available():
        return None, "torch %s sees no CUDA device" % torch.__version__
    return torch, None


def import_fa():
    """(the fa package, None), else (None, why). Where `import fa` finds none
    (no PYTHONPATH, no install), this checkout's build tree (build/python)
    is tried."""
    try:
        import fa
        return fa, None
    except Exception as e:  # noqa: BLE001 - ImportError, a broken _C
        first = "%s: %s" % (type(e).__name__, e)
    build = os.path.join(REPO, "build", "python")
    if os.path.isdir(os.path.join(build, "fa")):
        for name in [m for m in sys.modules if m == "fa" or
                     m.startswith("fa.")]:
            del sys.modules[name]
        sys.path.insert(0, build)
        try:
            import fa
            return fa, None
        except Exception as e:  # noqa: BLE001
            first += "; from %s: %s: %s" % (build, type(e).__name__, e)
    return None, ("cannot import fa (%s); build it (scripts/gpu/run.sh's "
                  "build_python, pip install ., or a build tree's "
                  "PYTHONPATH=build/python)" % first)


class Runner:
    """Measures FA and the anchors on the GPU in this process."""

    def __init__(self, args):
        self.args = args
        self.torch, self.torch_error = import_torch()
        self.fa, self.fa_error, self.timer = None, None, None
        if self.torch is None:
            return
        self.timer = Timer(self.torch, args.timer, args.warmup_ms, args.rep_ms,
                           10, 50)
        if not args.no_fa:
            self.fa, self.fa_error = import_fa()

    def problems(self):
        """What will make FA or the anchors fail, for a warning up front."""
        if self.torch is None:
            return [self.torch_error + "; FA and the anchors will be recorded "
                    "as failed"]
        if self.fa_error:
            return [self.fa_error + "; FA will be recorded as failed"]
        return []

    def environment(self):
        torch = self.torch
        if torch is None:
            return {"torch_error": self.torch_error}
        props = torch.cuda.get_device_properties(0)
        env = {
            "gpu": torch.cuda.get_device_name(0),
            "gpu_capability": "%d.%d" % torch.cuda.get_device_capability(0),
            "gpu_sms": props.multi_processor_count,
            "gpu_memory_gb": round(props.total_memory / 1e9, 1),
            "torch": torch.__version__,
            "torch_cuda": torch.version.cuda,
            "cudnn": torch.backends.cudnn.version(),
            "timer": self.timer.describe(),
        }
        try:
            import triton
            env["triton"] = triton.__version__
        except Exception:  # noqa: BLE001
            env["triton"] = None
        if self.timer.triton_error:
            env["triton_error"] = self.timer.triton_error
        if self.fa is not None:
            env["fa"] = self.fa.__version__
            env["fa_module"] = os.path.dirname(self.fa.__file__)
        elif self.fa_error:
            env["fa_error"] = self.fa_error
        return env

    def run(self, c):
        """{"fa": record, "anchors": {key: record}} for config c."""
        args, torch = self.args, self.torch
        failed = None
        if torch is None:
            failed = self.torch_error
        else:
            try:
                x = make_inputs(torch, c, args.seed)
            except Exception as e:  # noqa: BLE001
                failed = "inputs: " + _short_error(e)
                _free(torch)
        if failed:
            row = {"anchors": {a: _error(failed) for a in args.anchors}}
            if not args.no_fa:
                row["fa"] = _error(failed)
            return row
        impls = implementations(torch, self.fa, c, x, args)
        row = run_config(torch, self.timer, c, x, impls, args)
        if not args.no_fa and self.fa is None:
            row["fa"] = _error(self.fa_error)
        del x, impls
        _free(torch)
        return row


def _error(text):
    return {"status": "error", "error": text}


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


def environment(args, runner):
    env = {
        "date_utc": datetime.datetime.now(datetime.timezone.utc).isoformat(
            timespec="seconds"),
        "hostname": socket.gethostname(),
        "python": sys.version.split()[0],
        "platform": platform.platform(),
        "argv": sys.argv,
    }
    if args.fa_jit:
        env["fa_jit"] = os.path.abspath(args.fa_jit)
        env["fa_jit_version"] = fa_jit_version(args.fa_jit)
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
    if runner is not None:
        env.update(runner.environment())
    return env


# ----------------------------------------------------------------------------
# Ratios, table, JSON.


# FA's TFLOP/s over each anchor's: the targets' ratios (issue 18 asks
# SDPA cuDNN for plain attention, FlexAttention for score terms and masks).
RATIOS = (("fa/plain", "plain"), ("fa/flash", "flash"), ("fa/cudnn", "cudnn"),
          ("fa/flex", "flex"))


def ratios(row):
    fa = (row.get("fa") or {}).get("tflops")
    out = {}
    for key, name in RATIOS:
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


def _err_text(err, form):
    """A check's err as text: None (in the JSON) or inf where FA's output
    held a NaN or an infinity."""
    if err is None or not math.isfinite(err):
        return "non-finite"
    return form % err


def _failures(check):
    """'err>bound' of each tensor that failed the check, named where the
    check has several."""
    tensors = check.get("tensors") or {}
    out = []
    for name, t in tensors.items():
        if t.get("ok"):
            continue
        text = "%s>%.1e" % (_err_text(t.get("err"), "%.1e"), t["bound"])
        out.append(text if len(tensors) == 1 else name + " " + text)
    return out


def _check_cell(rec):
    check = (rec or {}).get("check")
    if not check:
        return ""
    if check.get("status") == "ok":
        return "ok"
    if check.get("status") == "mismatch":
        return "MISMATCH " + ", ".join(_failures(check))
    return "err"


def _has_fa_jit(doc):
    return any("fa_jit" in row for row in doc["results"])


def format_table(doc):
    config = doc["config"]
    anchors = config["anchors"]
    with_fa = not config.get("no_fa")
    with_check = with_fa and bool(config.get("check"))
    with_fa_jit = _has_fa_jit(doc)
    head = ["D", "causal", "N"]
    if with_fa:
        head.append("FA")
    if with_check:
        head.append("check")
    if with_fa_jit:
        head.append(FA_JIT_LABEL)
    head += [ANCHORS[a] for a in anchors]
    ratio_keys = [(k, a) for k, a in RATIOS if with_fa and a in anchors]
    head += ["FA / " + ANCHORS[a].split()[-1] for _, a in ratio_keys]
    lines = [
        "| " + " | ".join(head) + " |", "|" + "---|" * len(head)
    ]
    for row in doc["results"]:
        cells = [str(row["D"]), "yes" if row["causal"] else "no", str(row["N"])]
        if with_fa:
            cells.append(_cell(row.get("fa")))
        if with_check:
            cells.append(_check_cell(row.get("fa")))
        if with_fa_jit:
            cells.append(_cell(row.get("fa_jit")))
        cells += [_cell(row.get("anchors", {}).get(a)) for a in anchors]
        r = row.get("ratios") or ratios(row)
        cells += ["" if r.get(k) is None else "%.2f" % r[k] for k, _ in ratio_keys]
        lines.append("| " + " | ".join(cells) + " |")
    return "\n".join(lines)


def _check_messages(check):
    if check.get("status") == "mismatch":
        parts = []
        for name, t in check["tensors"].items():
            if not t.get("ok"):
                parts.append("%s err %s > bound %.3g (worst row [b, h, i] = %s)"
                             % (name, _err_text(t.get("err"), "%.3g"),
                                t["bound"], t.get("worst_row")))
        return ["MISMATCH against %s: %s" % (check.get(
            "reference", "SDPA cuDNN"), "; ".join(parts))]
    if check.get("status") == "error":
        return [check.get("error", "error")]
    return []


def error_lines(doc):
    """One line per distinct (what, error), naming the configs it hit."""
    seen = {}
    for row in doc["results"]:
        where = "D=%d %s N=%d" % (row["D"], "causal" if row["causal"] else
                                  "non-causal", row["N"])
        fa = row.get("fa")
        recs = [("FA", fa), (FA_JIT_LABEL, row.get("fa_jit"))]
        recs += [(ANCHORS.get(a, a), r)
                 for a, r in (row.get("anchors") or {}).items()]
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
        if fa and fa.get("check"):
            for msg in _check_messages(fa["check"]):
                first = " ".join(str(msg).split())[:300]
                seen.setdefault(("FA check", first), []).append(where)
    lines = []
    for (what, msg), wheres in seen.items():
        at = wheres[0] if len(wheres) == 1 else "%s (+%d more)" % (wheres[0],
                                                                   len(wheres) - 1)
        lines.append("%s at %s: %s" % (what, at, msg))
    return lines


def mismatches(doc):
    """The rows whose FA output failed the check."""
    return [
        row for row in doc["results"] if ((row.get("fa") or {}).get("check") or
                                          {}).get("status") == "mismatch"
    ]


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
    "fa_jit": (247, 153, 150),
    "cudnn": (31, 119, 180),
    "flash": (255, 127, 14),
    "efficient": (44, 160, 44),
    "flex": (148, 103, 189),
    "naive": (127, 127, 127),
}


def plot_series(doc):
    """[((D, causal), {series key: [(N, tflops)]})] in panel order, labels."""
    keys = (([] if doc["config"].get("no_fa") else ["fa"]) +
            (["fa_jit"] if _has_fa_jit(doc) else []) +
            list(doc["config"]["anchors"]))
    labels = {"fa": "FA", "fa_jit": FA_JIT_LABEL, **ANCHORS}
    panels = {}
    for row in doc["results"]:
        panel = panels.setdefault((row["D"], row["causal"]),
                                  {k: [] for k in keys})
        for k in keys:
            rec = row.get(k) if k in ("fa", "fa_jit") else row.get(
                "anchors", {}).get(k)
            if rec and rec.get("status") == "ok" and rec.get("tflops"):
                panel[k].append((row["N"], rec["tflops"]))
    ordered = sorted(panels.items(), key=lambda kv: (kv[0][0], kv[0][1]))
    return ordered, keys, labels


def _pass_name(doc):
    return doc.get("pass", PASS["name"])


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
    fig.suptitle("Attention %s, bf16 %s" % (_pass_name(doc), gpu), y=0.995)
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


def _legend_width(items):
    return sum(40 + Canvas.text_width(name) + 24 for name, _ in items)


def _plot_builtin(doc, panels, keys, labels, path):
    ds, causals = _grid_shape(panels)
    all_n = sorted({row["N"] for row in doc["results"]})
    ymax = max(t for _, series in panels for pts in series.values()
               for _, t in pts)
    step = _nice_step(ymax * 1.05)
    ytop = step * math.ceil(ymax * 1.05 / step)

    pw, ph = 560, 380  # one panel, with its margins
    left, right, top, bottom = 80, 20, 40, 56  # plot area inside a panel
    width = pw * len(causals)

    # The legend, in as many lines as it takes.
    items = [(labels[k], _COLORS[k]) for k in keys
             if any(series[k] for _, series in panels)]
    lines = [[]]
    for name, color in items:
        line = lines[-1] + [(name, color)]
        if lines[-1] and _legend_width(line) > width - 16:
            lines.append([(name, color)])
        else:
            lines[-1] = line
    header = 66 + 24 * len(lines)
    canvas = Canvas(width, header + ph * len(ds))
    black, grid, axis = (0, 0, 0), (225, 225, 225), (90, 90, 90)

    gpu = doc["environment"].get("gpu") or ""
    title = "ATTENTION %s, BF16 %s" % (_pass_name(doc), gpu)
    canvas.text((canvas.w - canvas.text_width(title)) // 2, 12, title, black)
    for row, line in enumerate(lines):
        x, y = max(8, (canvas.w - _legend_width(line)) // 2), 47 + 24 * row
        for name, color in line:
            canvas.rect(x, y + 5, x + 29, y + 8, color)
            canvas.rect(x + 11, y + 2, x + 18, y + 11, color)
            canvas.text(x + 38, y, name, black)
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
        description="FA's attention " + PASS["name"] + " (fa.attention on "
        "torch tensors) against SDPA (cuDNN, flash, efficient), FlexAttention "
        "and naive attention, all timed the same way in one process, FA's "
        "output checked against SDPA cuDNN's: bf16, B*N = 16384 tokens, "
        "H = 2048 / D. Prints a table last; writes JSON and a PNG.",
        epilog="Example (GPU machine, fa importable): python3 bench/%s "
        "--json $OUT/%s --png $OUT/%s" %
        (PASS["script"], PASS["json"], PASS["json"].replace(".json", ".png")))
    g = p.add_argument_group("configs")
    g.add_argument("--d", type=_int_list, action="append", metavar="D[,D...]",
                   help="head dims (default 64,128,256; --quick: 64,128)")
    g.add_argument("--n", type=_int_list, action="append", metavar="N[,N...]",
                   help="sequence lengths (default 512,...,16384; --quick: "
                   "1024,4096)")
    g.add_argument("--causal", choices=("no", "yes", "both"), default="both",
                   help="non-causal, causal (top-left = bottom-right for Nq "
                   "= Nk) or both (default)")
    g.add_argument("--quick", action="store_true",
                   help="D in {64,128}, N in {1024,4096} (explicit --d/--n win)")
    g.add_argument("--tokens", type=int, default=16384,
                   help="B*N (default 16384)")
    g.add_argument("--width", type=int, default=2048,
                   help="H*D (default 2048)")
    g.add_argument("--variant", choices=VARIANTS, default="plain",
                   help="score terms of every implementation (VARIANTS): "
                   "alibi, a relative-position score_mod (relpos), a "
                   "document mask_mod (document), a [1, H, N, N] bf16 bias "
                   "(bias) or softcap 30 (softcap: SDPA skipped, FA checked "
                   "against the variant in f32); default plain")
    g.add_argument("--alibi", action="store_true",
                   help="the ALiBi variant: FA with alibi_slopes, "
                   "FlexAttention with an ALiBi score_mod, SDPA and naive "
                   "with an additive [1, H, N, N] bias (SDPA flash takes "
                   "none: it errors)")
    g = p.add_argument_group("FA")
    g.add_argument("--no-fa", action="store_true", help="anchors only")
    g.add_argument("--fa-deterministic", action="store_true",
                   help="run FA under torch.use_deterministic_algorithms(True) "
                   "(the backward's deterministic dQ kernel)")
    g.add_argument("--no-check", action="store_true",
                   help="do not check FA's output against SDPA cuDNN's")
    g.add_argument("--check-rows", type=int, default=0, metavar="R",
                   help="check the forward on R sampled query rows of each "
                   "(b, h) (the first R/4, R/4 spread, the last R/2) instead "
                   "of every row: a cheaper plain bf16 reference, and a "
                   "wrong row elsewhere goes unseen (default 0: every row)")
    g = p.add_argument_group(
        "FA kernel (fa-jit): an optional kernel-only column, not comparable "
        "with the rest (its own inputs, back-to-back launches, warm L2)")
    g.add_argument("--fa-jit", nargs="?", const="", default=None,
                   metavar="PATH",
                   help="add the column: fa-jit --bench per config (PATH "
                   "default: build/bin/fa-jit if present, else "
                   "/tmp/fa/bin/fa-jit)")
    g.add_argument("--fa-jit-args", default="",
                   help="extra fa-jit arguments for every run, one "
                   "shell-quoted string, written with = (e.g. "
                   "--fa-jit-args=--bwd-atomic-dq)")
    g.add_argument("--fa-jit-iters", type=int, default=50,
                   help="fa-jit --bench-iters (default 50)")
    g.add_argument("--fa-jit-timeout", type=float, default=120,
                   help="seconds per fa-jit run (default 120); after two "
                   "timeouts the column is skipped for the remaining configs")
    g = p.add_argument_group("anchors and timing")
    g.add_argument("--anchors", default=None,
                   help="comma list of %s, or none (default all; plain, FA "
                   "without the variant's terms, only with a --variant)" %
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
                   help="timing of FA and the anchors: "
                   "triton.testing.do_bench median (auto: when triton "
                   "imports) or CUDA events")
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
                   help="print the configs and what runs; run nothing")
    g.add_argument("--from-json", metavar="PATH",
                   help="re-print the table and re-draw the plot from an "
                   "earlier JSON; run nothing")
    args = p.parse_args(argv)

    args.d = _flatten(args.d) or list(QUICK_D if args.quick else DEFAULT_D)
    args.n = _flatten(args.n) or list(QUICK_N if args.quick else DEFAULT_N)
    args.causals = {"no": [False], "yes": [True], "both": [False, True]}[
        args.causal]
    if args.alibi:
        if args.variant not in ("plain", "alibi"):
            p.error("--alibi and --variant %s: pick one" % args.variant)
        args.variant = "alibi"
    if args.anchors is None:
        args.anchors = ",".join(
            a for a in ANCHORS
            if a != "plain" or (args.variant != "plain" and not args.no_fa))
    if args.no_anchors or args.anchors.strip().lower() == "none":
        args.anchors = []
    else:
        names = [a.strip() for a in args.anchors.split(",") if a.strip()]
        bad = [a for a in names if a not in ANCHORS]
        if bad:
            p.error("unknown anchor(s) %s; choose from %s" %
                    (",".join(bad), ",".join(ANCHORS)))
        args.anchors = [a for a in ANCHORS if a in names]
        if "plain" in args.anchors and args.variant == "plain":
            p.error("--anchors plain: FA plain is FA itself without a "
                    "--variant")
        if "plain" in args.anchors and args.no_fa:
            p.error("--anchors plain needs FA (drop --no-fa)")
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
    if args.fa_jit_iters <= 0:
        p.error("--fa-jit-iters must be positive")
    if args.check_rows < 0:
        p.error("--check-rows must be >= 0")
    if args.fa_jit == "":
        args.fa_jit = default_fa_jit()
    try:
        args.fa_jit_args = shlex.split(args.fa_jit_args)
    except ValueError as e:
        p.error("--fa-jit-args: %s" % e)
    if args.json is None:
        args.json = default_output(PASS["json"])
    if args.png is None:
        root, _ = os.path.splitext(args.from_json or args.json)
        args.png = root + ".png"
    if args.no_fa and not args.anchors and not args.fa_jit:
        p.error("nothing to measure: --no-fa with no anchors and no --fa-jit")
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
        print("Errors, mismatches and notes (%d):" % len(errors))
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
    check = doc["config"].get("check")
    print("Attention %s TFLOP/s (%s), bf16, B*N = %d, H = %d / D, on %s; "
          "err: failed, blank: not run%s" %
          (_pass_name(doc), doc.get("flop_formula", PASS["flop_formula"]),
           doc["config"]["tokens"], doc["config"]["width"],
           env.get("gpu") or env.get("hostname", "?"),
           "; check: FA against SDPA cuDNN, err > bound fails" if check and
           not doc["config"].get("no_fa") else ""))
    print(format_table(doc))
    sys.stdout.flush()


def _progress_line(i, total, c, row):
    parts = ["[%*d/%d] %s" % (len(str(total)), i, total, config_name(c))]
    for what, rec in (("FA", row.get("fa")), ("fa-jit", row.get("fa_jit"))):
        if not rec:
            continue
        if rec.get("status") == "ok":
            part = "%s %.1f (%.3f ms)" % (what, rec["tflops"], rec["ms"])
        else:
            part = "%s %s" % (what, rec.get("status"))
        check = _check_cell(rec)
        if check:
            part += ", check " + check
        parts.append(part)
    for a, rec in row.get("anchors", {}).items():
        if rec.get("status") == "ok":
            parts.append("%s %.1f" % (ANCHORS[a], rec["tflops"]))
        else:
            parts.append("%s %s" % (ANCHORS[a], rec.get("status")))
    return " | ".join(parts)


def _dry_run(configs, args):
    for c in configs:
        print(config_name(c) + "  GFLOP=%.1f" % (c["flops"] / 1e9))
        if not args.no_fa:
            print("  FA: " + fa_call_text(c))
        if args.fa_jit:
            print("  fa-jit: " + shlex.join(
                fa_jit_command(args.fa_jit, c, args.fa_jit_iters,
                               args.fa_jit_args)))
    print("%d configs; anchors: %s; FA checked against SDPA cuDNN: %s" %
          (len(configs), ",".join(args.anchors) or "none",
           "no" if args.no_fa or args.no_check else "yes"))


def _check_config(args):
    if args.no_check or args.no_fa:
        return None
    check = {
        "reference": "SDPA cuDNN, same inputs",
        "criterion": "max over rows of ||FA_i - ref_i||_2 / RMS_i ||ref_i||_2 "
                     "<= %g * the same of the baseline + %g (docs/accuracy.md)"
                     % (CHECK_FACTOR, CHECK_SLACK),
    }
    if PASS["name"] == "forward":
        check["baseline"] = ("plain bf16 attention (f32 scores and softmax, P "
                             "rounded to bf16 before P V, O rounded to bf16)")
        check["rows"] = args.check_rows or "all"
    else:
        check["baseline"] = ("the larger error of SDPA flash's and SDPA "
                             "efficient's gradients (those that run)")
    return check


def main(argv=None, runner=None):
    """The benchmark; `runner` (tests) stands in for the GPU: an object with
    problems(), environment() and run(config) like Runner's."""
    args = parse_args(sys.argv[1:] if argv is None else argv)

    if args.from_json:
        with open(args.from_json) as f:
            doc = json.load(f)
        finish(doc, args)
        return 0

    configs = make_configs(args.d, args.n, args.causals, args.tokens,
                           args.width, args.variant)
    if args.dry_run:
        _dry_run(configs, args)
        return 0

    if runner is None and (not args.no_fa or args.anchors):
        runner = Runner(args)
    for problem in runner.problems() if runner else []:
        print("warning: " + problem, file=sys.stderr)
    if args.fa_jit and not os.path.isfile(args.fa_jit):
        print("warning: fa-jit not found at %s; its column will be recorded "
              "as failed" % args.fa_jit, file=sys.stderr)

    doc = {
        "schema": PASS["schema"],
        "pass": PASS["name"],
        "flop_formula": PASS["flop_formula"],
        "config": {
            "dtype": "bf16",
            "tokens": args.tokens,
            "width": args.width,
            "D": args.d,
            "N": args.n,
            "causal": args.causals,
            "causal_kind": "top-left (= bottom-right: Nq = Nk)",
            "variant": args.variant,
            "no_fa": args.no_fa,
            "fa_deterministic": args.fa_deterministic,
            "anchors": args.anchors,
            "flex_n": args.flex_n,
            "naive_max_gb": args.naive_max_gb,
            "seed": args.seed,
            "inputs": "random normal, [B, H, N, D] contiguous, one set per "
                      "config shared by FA and every anchor",
            "check": _check_config(args),
            "fa_jit": args.fa_jit,
            "fa_jit_args": args.fa_jit_args,
            "fa_jit_iters": args.fa_jit_iters,
        },
        "environment": environment(args, runner),
        "results": [],
        "notes": [],
    }
    print("FA attention %s benchmark: %d configs, FA: %s, anchors: %s%s" %
          (PASS["name"], len(configs), "no" if args.no_fa else "fa.attention",
           ",".join(args.anchors) or "none",
           ", fa-jit: " + args.fa_jit if args.fa_jit else ""))
    print("environment: " + json.dumps({
        k: doc["environment"].get(k)
        for k in ("gpu", "torch", "triton", "fa", "timer", "repo_commit")
    }))
    sys.stdout.flush()

    start = time.monotonic()
    fa_jit_skip, fa_jit_timeouts = None, 0
    try:
        for i, c in enumerate(configs, 1):
            row = dict(c)
            if args.budget_s and time.monotonic() - start > args.budget_s:
                skip = {"status": "skipped", "reason": "--budget-s reached"}
                if not args.no_fa:
                    row["fa"] = dict(skip)
                if args.fa_jit:
                    row["fa_jit"] = dict(skip)
                row["anchors"] = {a: dict(skip) for a in args.anchors}
                doc["results"].append(row)
                continue
            # fa-jit first: its process needs the GPU memory this one frees
            # between configs.
            if args.fa_jit and fa_jit_skip:
                row["fa_jit"] = {"status": "skipped", "reason": fa_jit_skip}
            elif args.fa_jit:
                rec = row["fa_jit"] = run_fa_jit(args.fa_jit, c,
                                                 args.fa_jit_iters,
                                                 args.fa_jit_timeout,
                                                 args.fa_jit_args)
                target = rec.get("target")
                if target is not None and not target.startswith("sm_"):
                    # --target=auto found no GPU: host timings mean nothing
                    # here and the large configs would take hours.
                    fa_jit_skip = ("an earlier fa-jit run ran on '%s', not a "
                                   "GPU" % target)
                if rec.get("error", "").startswith("timed out"):
                    fa_jit_timeouts += 1
                    if fa_jit_timeouts >= 2:
                        fa_jit_skip = ("fa-jit timed out twice "
                                       "(--fa-jit-timeout %gs)" %
                                       args.fa_jit_timeout)
            if runner is not None:
                row.update(runner.run(c))
            row.setdefault("anchors", {})
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
        rec.get("status") == "ok" for row in doc["results"]
        for rec in [row.get("fa") or {}, row.get("fa_jit") or {}] +
        list(row.get("anchors", {}).values()))
    if not measured:
        return 1
    return 3 if mismatches(doc) else 0


if __name__ == "__main__":
    sys.exit(main())
