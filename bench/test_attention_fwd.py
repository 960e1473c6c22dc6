#!/usr/bin/env python3
"""Tests of bench/attention_fwd.py (and attention_bwd.py) that need no GPU.

- The driver, table, JSON and plots: whole runs in this process with a fake
  runner standing in for the GPU (FA's and the anchors' records, FA's check
  passing, failing and not finite), and subprocess runs of the optional
  fa-jit column against a fake fa-jit (a Python script written to a
  temporary folder: it prints the summary and `bench:` lines, fails for
  D = 256 and prints no `bench:` line for one config).
- The check (docs/accuracy.md's criterion against a reference) and the
  wiring of FA and the anchors, forward and backward, on CPU tensors with a
  fake `fa` module and stand-ins for SDPA cuDNN and flash: only where torch
  imports (skipped otherwise).

Run: python3 bench/test_attention_fwd.py
"""

import contextlib
import io
import json
import math
import os
import stat
import subprocess
import sys
import tempfile
import types
import unittest

HERE = os.path.dirname(os.path.abspath(__file__))
SCRIPT = os.path.join(HERE, "attention_fwd.py")
BWD_SCRIPT = os.path.join(HERE, "attention_bwd.py")
sys.path.insert(0, HERE)
import attention_fwd as bench  # noqa: E402

try:
    import torch
except Exception:  # noqa: BLE001 - not installed, or broken
    torch = None

FAKE_FA_JIT = r'''#!/usr/bin/env python3
import sys
args = sys.argv[1:]
if "--version" in args:
    print("fa-jit fake 1.0")
    sys.exit(0)
opts = dict(a[2:].split("=", 1) if "=" in a else (a[2:], "") for a in args)
assert opts["target"] == "auto" and opts["dtype"] == "bf16", opts
assert "bench" in opts and opts["bench-iters"] == "50", opts
B, Hq, Hkv, Nq, Nk, D = map(int, opts["shape"].split(","))
causal = opts.get("causal") == "bottom-right"
if D == 256:
    print("fa-jit: error: head dim 256 is not supported", file=sys.stderr)
    sys.exit(1)
if Nq == 4096 and causal:
    print("fa-jit: ran fa.attention on sm_90a: bf16 compile=5.0ms run=1ms")
    sys.exit(0)
ms = 0.5 * Nq / 1024
flops = 4 * B * Hq * Nq * Nk * D / (2 if causal else 1)
print("fa-jit: ran fa.attention on sm_90a: bf16 B=%d Hq=%d Hkv=%d Nq=%d "
      "Nk=%d D=%d Dv=%d variant=plain compile=12.3ms run=%.3fms"
      % (B, Hq, Hkv, Nq, Nk, D, D, ms))
print("bench: median_ms=%.6f tflops=%.3f" % (ms, flops / ms / 1e9))
'''


class ParseTest(unittest.TestCase):

    def test_bench_and_summary(self):
        text = ("fa-jit: ran fa.attention on sm_90a: bf16 B=1 Hq=8 Hkv=8 "
                "Nq=128 Nk=128 D=64 Dv=64 variant=plain compile=12.3ms "
                "run=0.1ms\nbench: median_ms=0.25 tflops=400.5 min_ms=0.24\n")
        p = bench.parse_fa_output(text)
        self.assertEqual(p["median_ms"], 0.25)
        self.assertEqual(p["tflops_reported"], 400.5)
        self.assertEqual(p["compile_ms"], 12.3)
        self.assertEqual(p["target"], "sm_90a")
        self.assertEqual(p["bench"]["min_ms"], 0.24)

    def test_backward_summary(self):
        text = ("fa-jit: ran fa.attention_grad on sm_90a: bf16 B=1 Hq=8 "
                "Hkv=8 Nq=128 Nk=128 D=64 Dv=64 variant=plain compile=80.5ms "
                "forward=0.1ms run=0.3ms\nbench: median_ms=0.5 tflops=200\n")
        p = bench.parse_fa_output(text)
        self.assertEqual(p["target"], "sm_90a")
        self.assertEqual(p["compile_ms"], 80.5)
        self.assertTrue(p["summary"].startswith(
            "fa-jit: ran fa.attention_grad on sm_90a: bf16"))

    def test_missing_lines(self):
        p = bench.parse_fa_output("nothing here\n")
        self.assertIsNone(p["median_ms"])
        self.assertIsNone(p["compile_ms"])
        self.assertIsNone(p["target"])

    def test_flops(self):
        self.assertEqual(bench.forward_flops(2, 16, 1024, 128, False),
                         4 * 2 * 16 * 1024 * 1024 * 128)
        self.assertEqual(bench.forward_flops(2, 16, 1024, 128, True),
                         2 * 2 * 16 * 1024 * 1024 * 128)
        self.assertAlmostEqual(bench.tflops_of(1e12, 1.0), 1000.0)

    def test_ratios(self):
        # FA over each anchor that ran; None where one did not.
        row = {
            "fa": {"tflops": 300.0},
            "anchors": {
                "flex": {"tflops": 150.0},
                "cudnn": {"status": "skipped"},
                "plain": {"tflops": 400.0}
            }
        }
        self.assertEqual(bench.ratios(row), {
            "fa/plain": 0.75,
            "fa/flash": None,
            "fa/cudnn": None,
            "fa/flex": 2.0
        })

    def test_plain_anchor_arguments(self):
        # FA plain (FA without the variant's terms) is a default anchor with
        # a --variant only, and needs FA.
        self.assertNotIn("plain", bench.parse_args([]).anchors)
        self.assertEqual(
            bench.parse_args(["--variant", "softcap"]).anchors,
            ["plain", "cudnn", "flash", "efficient", "flex", "naive"])
        self.assertEqual(
            bench.parse_args(["--alibi", "--anchors", "flex,plain"]).anchors,
            ["plain", "flex"])
        self.assertNotIn(
            "plain",
            bench.parse_args(["--variant", "bias", "--no-fa"]).anchors)
        for argv, message in (
            (["--anchors", "plain"],
             "--anchors plain: FA plain is FA itself without a --variant"),
            (["--variant", "bias", "--no-fa", "--anchors", "plain"],
             "--anchors plain needs FA (drop --no-fa)")):
            err = io.StringIO()
            with contextlib.redirect_stderr(err), \
                    self.assertRaises(SystemExit) as raised:
                bench.parse_args(argv)
            self.assertEqual(raised.exception.code, 2)
            self.assertIn("error: " + message, err.getvalue())

    def test_default_grid(self):
        args = bench.parse_args([])
        configs = bench.make_configs(args.d, args.n, args.causals,
                                     args.tokens, args.width)
        self.assertEqual(len(configs), 36)
        for c in configs:
            self.assertEqual(c["B"] * c["N"], 16384)
            self.assertEqual(c["H"] * c["D"], 2048)
        quick = bench.parse_args(["--quick"])
        self.assertEqual((quick.d, quick.n), ([64, 128], [1024, 4096]))

    def test_sample_rows(self):
        rows = bench.sample_rows(4096, 256)
        self.assertEqual(len(rows), 256)
        self.assertEqual(rows, sorted(set(rows)))
        self.assertEqual(rows[:64], list(range(64)))  # the first quarter
        self.assertEqual(rows[-128:], list(range(3968, 4096)))  # the last half
        self.assertTrue(all(64 <= r < 3968 for r in rows[64:128]))
        self.assertEqual(bench.sample_rows(200, 256), list(range(200)))
        self.assertEqual(len(bench.sample_rows(257, 256)), 256)
        self.assertIn("256 of 4096 query rows",
                      bench._describe_rows(256, 4096))

    def test_unravel(self):
        self.assertEqual(bench._unravel(0, [2, 3, 5]), [0, 0, 0])
        self.assertEqual(bench._unravel(1 * 15 + 2 * 5 + 4, [2, 3, 5]),
                         [1, 2, 4])

    def test_check_cells(self):
        ok = {"check": {"status": "ok"}}
        self.assertEqual(bench._check_cell(ok), "ok")
        one = {"check": {"status": "mismatch", "tensors": {
            "O": {"err": 0.03, "bound": 0.0098, "ok": False}}}}
        self.assertEqual(bench._check_cell(one), "MISMATCH 3.0e-02>9.8e-03")
        three = {"check": {"status": "mismatch", "tensors": {
            "dQ": {"err": 0.001, "bound": 0.002, "ok": True},
            "dK": {"err": None, "bound": 0.002, "ok": False},
            "dV": {"err": 0.5, "bound": 0.002, "ok": False}}}}
        self.assertEqual(bench._check_cell(three),
                         "MISMATCH dK non-finite>2.0e-03, dV 5.0e-01>2.0e-03")
        self.assertEqual(bench._check_cell({"check": {"status": "error"}}),
                         "err")
        self.assertEqual(bench._check_cell({"status": "ok"}), "")


class FakeRunner:
    """Stands in for bench.Runner: canned records for FA and the anchors.

    FA takes 0.5 ms * N / 1024 and SDPA cuDNN twice that; FA fails at
    D = 256, its check fails at (D=64, causal, N=4096) and is not finite at
    (D=128, causal, N=4096).
    """

    def __init__(self, anchors):
        self.anchors = anchors
        self.calls = 0

    def problems(self):
        return []

    def environment(self):
        return {"gpu": "Fake GPU", "timer": "fake"}

    def run(self, c):
        self.calls += 1
        ms = 0.5 * c["N"] / 1024
        if c["D"] == 256:
            fa = {"status": "error",
                  "error": "FAError: head dim 256 is not supported"}
        else:
            check = {"status": "ok", "reference": "SDPA cuDNN",
                     "tensors": {"O": {"err": 0.004, "bound": 0.0098,
                                       "baseline_err": 0.0049,
                                       "worst_row": [0, 0, 1], "ok": True}}}
            if c["causal"] and c["N"] == 4096:
                err = 0.03 if c["D"] == 64 else math.inf
                check["status"] = "mismatch"
                check["tensors"]["O"].update(err=err, ok=False,
                                             worst_row=[0, 3, 4095])
            fa = {"status": "ok", "ms": ms, "call": bench.fa_call_text(c),
                  "tflops": bench.tflops_of(c["flops"], ms), "check": check}
        anchors = {}
        for a in self.anchors:
            if a == "cudnn":
                anchors[a] = {"status": "ok", "ms": 2 * ms,
                              "tflops": bench.tflops_of(c["flops"], 2 * ms),
                              "err_vs_cudnn": {"O": 0.0}}
            elif a == "flash" and c["D"] == 256:
                anchors[a] = {"status": "error",
                              "error": "RuntimeError: No available kernel"}
            else:
                anchors[a] = {"status": "skipped", "reason": "not here"}
        return {"fa": fa, "anchors": anchors}


class FakeRunTest(unittest.TestCase):
    """Whole runs in this process with FakeRunner: driver, table, JSON, plot."""

    def setUp(self):
        self.tmp = tempfile.TemporaryDirectory()
        self.dir = self.tmp.name
        self.json = os.path.join(self.dir, "bench_fwd.json")

    def tearDown(self):
        self.tmp.cleanup()

    def doc(self):
        with open(self.json) as f:
            return json.load(f)

    def main(self, *argv, anchors=("cudnn", "flash")):
        out, err = io.StringIO(), io.StringIO()
        runner = FakeRunner(list(anchors))
        with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
            rc = bench.main(["--json", self.json, "--anchors",
                             ",".join(anchors)] + list(argv), runner=runner)
        return rc, out.getvalue(), runner

    def test_run(self):
        rc, out, _ = self.main("--d", "64,128,256", "--n", "1024,4096")
        self.assertEqual(rc, 3)  # measured, with a mismatch
        doc = self.doc()
        self.assertEqual(doc["schema"], "fa-bench-attention-fwd/2")
        self.assertEqual(doc["pass"], "forward")
        self.assertEqual(doc["environment"]["gpu"], "Fake GPU")
        self.assertEqual(doc["config"]["check"]["rows"], "all")
        rows = {(r["D"], r["causal"], r["N"]): r for r in doc["results"]}
        self.assertEqual(len(rows), 12)
        ok = rows[(64, False, 1024)]
        self.assertEqual(ok["fa"]["call"], "fa.attention(q, k, v, "
                         "scale=1/sqrt(64))")
        self.assertEqual(ok["ratios"], {
            "fa/plain": None,
            "fa/flash": None,
            "fa/cudnn": 2.0,
            "fa/flex": None
        })
        bad = rows[(128, True, 4096)]["fa"]["check"]
        self.assertIsNone(bad["tensors"]["O"]["err"])  # inf -> null
        self.assertFalse(bad["tensors"]["O"]["ok"])

        lines = out.rstrip().splitlines()
        self.assertEqual(
            lines[-14], "| D | causal | N | FA | check | SDPA cuDNN | "
            "SDPA flash | FA / flash | FA / cuDNN |")
        self.assertEqual(lines[-12], "| 64 | no | 1024 | 275 | ok | 137 |  "
                         "|  | 2.00 |")
        self.assertEqual(
            lines[-9], "| 64 | yes | 4096 | 137 | MISMATCH 3.0e-02>9.8e-03 "
            "| 69 |  |  | 2.00 |")
        self.assertEqual(
            lines[-5], "| 128 | yes | 4096 | 137 | MISMATCH "
            "non-finite>9.8e-03 | 69 |  |  | 2.00 |")
        self.assertEqual(lines[-1], "| 256 | yes | 4096 | err |  | 69 | err "
                         "|  |  |")
        self.assertIn(
            "FA check at D=64 causal N=4096: MISMATCH against SDPA cuDNN: O "
            "err 0.03 > bound 0.0098 (worst row [b, h, i] = [0, 3, 4095])",
            out)
        self.assertIn("FA at D=256 non-causal N=1024 (+3 more): FAError: "
                      "head dim 256 is not supported", out)
        self.assertIn("[ 4/12] D=64 causal=yes N=4096 B=4 H=32 | FA 137.4 "
                      "(2.000 ms), check MISMATCH 3.0e-02>9.8e-03 | "
                      "SDPA cuDNN 68.7 | SDPA flash skipped", out)
        with open(os.path.join(self.dir, "bench_fwd.png"), "rb") as f:
            self.assertEqual(f.read(8), b"\x89PNG\r\n\x1a\n")

        # --from-json prints the same table, and the built-in plotter draws
        # the document.
        again = io.StringIO()
        with contextlib.redirect_stdout(again):
            rc = bench.main(["--from-json", self.json, "--png",
                             os.path.join(self.dir, "again.png")])
        self.assertEqual(rc, 0)
        self.assertEqual(again.getvalue().rstrip().splitlines()[-14:],
                         lines[-14:])
        panels, keys, labels = bench.plot_series(doc)
        self.assertEqual(keys, ["fa", "cudnn", "flash"])
        out_png = os.path.join(self.dir, "builtin.png")
        bench._plot_builtin(doc, panels, keys, labels, out_png)
        with open(out_png, "rb") as f:
            self.assertEqual(f.read(8), b"\x89PNG\r\n\x1a\n")

    def test_no_check_no_mismatch(self):
        rc, out, _ = self.main("--d", "64", "--n", "1024", "--causal", "no",
                               "--no-check", "--no-png")
        self.assertEqual(rc, 0)
        self.assertIsNone(self.doc()["config"]["check"])
        self.assertEqual(out.rstrip().splitlines()[-1],
                         "| 64 | no | 1024 | 275 | 137 |  |  | 2.00 |")

    def test_anchors_only(self):
        rc, out, _ = self.main("--d", "64", "--n", "1024", "--causal", "no",
                               "--no-fa", "--no-png", anchors=("cudnn",))
        self.assertEqual(rc, 0)
        lines = out.rstrip().splitlines()
        self.assertEqual(lines[-3], "| D | causal | N | SDPA cuDNN |")
        self.assertEqual(lines[-1], "| 64 | no | 1024 | 137 |")

    def test_budget(self):
        rc, out, runner = self.main("--d", "64", "--n", "1024,4096",
                                    "--budget-s", "1e-9", "--no-png")
        self.assertEqual(rc, 1)  # nothing measured
        self.assertEqual(runner.calls, 0)
        doc = self.doc()
        self.assertEqual({r["fa"]["reason"] for r in doc["results"]},
                         {"--budget-s reached"})

    def test_backward_document(self):
        bench.use_pass("backward")
        try:
            rc, out, _ = self.main("--d", "64", "--n", "1024", "--causal",
                                   "no", "--no-png")
        finally:
            bench.use_pass("forward")
        self.assertEqual(rc, 0)
        doc = self.doc()
        self.assertEqual(doc["schema"], "fa-bench-attention-bwd/2")
        self.assertNotIn("rows", doc["config"]["check"])
        self.assertIn("SDPA flash's and SDPA efficient's gradients",
                      doc["config"]["check"]["baseline"])
        self.assertIn("Attention backward TFLOP/s (2.5*4*B*H*N^2*D / t", out)


class SubprocessTest(unittest.TestCase):
    """The scripts as run: dry runs, the fa-jit column, no GPU."""

    def setUp(self):
        self.tmp = tempfile.TemporaryDirectory()
        self.dir = self.tmp.name
        self.fa_jit = os.path.join(self.dir, "fa-jit")
        with open(self.fa_jit, "w") as f:
            f.write(FAKE_FA_JIT)
        os.chmod(self.fa_jit, os.stat(self.fa_jit).st_mode | stat.S_IXUSR)

    def tearDown(self):
        self.tmp.cleanup()

    def run_script(self, *args, script=SCRIPT, **env):
        env = dict(os.environ, OUT=self.dir, **env)
        return subprocess.run([sys.executable, script] + list(args),
                              stdout=subprocess.PIPE,
                              stderr=subprocess.PIPE,
                              universal_newlines=True,
                              env=env,
                              check=False)

    def test_fa_jit_column(self):
        # FA and the anchors off: no torch needed, only the fa-jit column.
        proc = self.run_script("--fa-jit", self.fa_jit, "--no-fa",
                               "--no-anchors", "--d", "64,256", "--n",
                               "1024,4096")
        self.assertEqual(proc.returncode, 0, proc.stderr)
        with open(os.path.join(self.dir, "bench_fwd.json")) as f:
            doc = json.load(f)
        self.assertEqual(doc["environment"]["fa_jit_version"]["output"],
                         "fa-jit fake 1.0")
        rows = {(r["D"], r["causal"], r["N"]): r for r in doc["results"]}
        self.assertEqual(len(rows), 8)
        ok = rows[(64, False, 1024)]["fa_jit"]
        self.assertEqual(ok["status"], "ok")
        self.assertEqual(ok["compile_ms"], 12.3)
        self.assertAlmostEqual(ok["ms"], 0.5)
        self.assertAlmostEqual(ok["tflops"], ok["tflops_reported"], places=2)
        self.assertNotIn("notes", ok)
        bad = rows[(256, True, 4096)]["fa_jit"]
        self.assertEqual(bad["status"], "error")
        self.assertIn("head dim 256 is not supported", bad["error"])
        nobench = rows[(64, True, 4096)]["fa_jit"]
        self.assertEqual(nobench["status"], "error")
        self.assertIn("no 'bench:", nobench["error"])
        self.assertEqual(nobench["compile_ms"], 5.0)
        # The table comes last.
        lines = proc.stdout.rstrip().splitlines()
        self.assertEqual(lines[-1], "| 256 | yes | 4096 | err |")
        self.assertEqual(lines[-10], "| D | causal | N | FA kernel (fa-jit) |")
        with open(os.path.join(self.dir, "bench_fwd.png"), "rb") as f:
            self.assertEqual(f.read(8), b"\x89PNG\r\n\x1a\n")

    def test_missing_fa_jit(self):
        proc = self.run_script("--fa-jit", os.path.join(self.dir, "nope"),
                               "--no-fa", "--no-anchors", "--d", "64", "--n",
                               "1024", "--no-png")
        self.assertEqual(proc.returncode, 1)
        with open(os.path.join(self.dir, "bench_fwd.json")) as f:
            doc = json.load(f)
        self.assertIn("cannot run", doc["results"][0]["fa_jit"]["error"])

    def test_no_gpu(self):
        # Without torch, or with torch and no GPU (none visible, also on a
        # machine that has one), FA and the anchors fail with the reason and
        # nothing is measured.
        proc = self.run_script("--d", "64", "--n", "1024", "--causal", "no",
                               "--anchors", "cudnn", "--no-png",
                               CUDA_VISIBLE_DEVICES="")
        self.assertEqual(proc.returncode, 1, proc.stderr)
        with open(os.path.join(self.dir, "bench_fwd.json")) as f:
            row = json.load(f)["results"][0]
        self.assertRegex(row["fa"]["error"],
                         "cannot import torch|sees no CUDA device")
        self.assertEqual(row["anchors"]["cudnn"]["error"], row["fa"]["error"])
        self.assertTrue(proc.stdout.rstrip().endswith(
            "| 64 | no | 1024 | err |  | err |  |"))

    def test_dry_run(self):
        proc = self.run_script("--fa-jit", self.fa_jit, "--dry-run", "--d",
                               "128", "--n", "2048", "--causal", "yes")
        self.assertEqual(proc.returncode, 0, proc.stderr)
        self.assertEqual(
            proc.stdout.splitlines(), [
                "D=128 causal=yes N=2048 B=8 H=16  GFLOP=137.4",
                "  FA: fa.attention(q, k, v, causal=True, scale=1/sqrt(128))",
                "  fa-jit: " + self.fa_jit + " --target=auto "
                "--shape=8,16,16,2048,2048,128 --dtype=bf16 "
                "--causal=bottom-right --bench --bench-iters=50",
                "1 configs; anchors: cudnn,flash,efficient,flex,naive; FA "
                "checked against SDPA cuDNN: yes"
            ])

    def test_alibi_dry_run(self):
        proc = self.run_script("--dry-run", "--d", "64", "--n", "4096",
                               "--causal", "no", "--alibi", "--no-check")
        self.assertEqual(proc.returncode, 0, proc.stderr)
        self.assertIn(
            "D=64 causal=no N=4096 B=4 H=32 alibi  GFLOP=549.8\n"
            "  FA: fa.attention(q, k, v, scale=1/sqrt(64), "
            "alibi_slopes=slopes)\n", proc.stdout)
        self.assertIn("FA checked against SDPA cuDNN: no", proc.stdout)

    def test_variant_dry_run(self):
        proc = self.run_script("--dry-run", "--d", "128", "--n", "4096",
                               "--causal", "no", "--variant", "document")
        self.assertEqual(proc.returncode, 0, proc.stderr)
        self.assertIn(
            "D=128 causal=no N=4096 B=4 H=16 document  GFLOP=549.8\n"
            "  FA: fa.attention(q, k, v, scale=1/sqrt(128), "
            "mask_mod=lambda b, h, i, j: doc[i] == doc[j])\n", proc.stdout)
        proc = self.run_script("--dry-run", "--variant", "relpos", "--alibi")
        self.assertEqual(proc.returncode, 2)
        self.assertIn("--alibi and --variant relpos: pick one", proc.stderr)

    def test_backward_dry_run(self):
        # attention_bwd.py: the same grid, FA's autograd (fa-jit --backward
        # in the fa-jit column), 2.5x the FLOPs.
        proc = self.run_script("--fa-jit", self.fa_jit, "--dry-run", "--d",
                               "128", "--n", "2048", "--causal", "yes",
                               script=BWD_SCRIPT)
        self.assertEqual(proc.returncode, 0, proc.stderr)
        # 2.5 * 4*8*16*2048^2*128 / 2 = 343.6 GFLOP.
        self.assertIn(
            "D=128 causal=yes N=2048 B=8 H=16  GFLOP=343.6\n"
            "  FA: out = fa.attention(q, k, v, causal=True, "
            "scale=1/sqrt(128)); timed: torch.autograd.grad(out, (q, k, v), "
            "dO)\n  fa-jit: " + self.fa_jit + " --target=auto "
            "--shape=8,16,16,2048,2048,128 --dtype=bf16 "
            "--causal=bottom-right --backward --bench --bench-iters=50\n",
            proc.stdout)

    def test_fa_jit_args(self):
        # --fa-jit-args: extra fa-jit arguments, before --bench.
        proc = self.run_script("--fa-jit", self.fa_jit, "--dry-run", "--d",
                               "64", "--n", "1024", "--causal", "no",
                               "--fa-jit-args=--bwd-atomic-dq "
                               "--bwd-dkdv-warps=8",
                               script=BWD_SCRIPT)
        self.assertEqual(proc.returncode, 0, proc.stderr)
        self.assertIn(
            " --dtype=bf16 --backward --bwd-atomic-dq --bwd-dkdv-warps=8 "
            "--bench --bench-iters=50\n", proc.stdout)

    def test_bad_arguments(self):
        proc = self.run_script("--no-fa", "--no-anchors")
        self.assertEqual(proc.returncode, 2)
        self.assertIn("nothing to measure", proc.stderr)


def _attention(q, k, v, causal, scale, dtype):
    """SDPA in `dtype` (float64: the exact answer), rounded to q's dtype."""
    o = torch.nn.functional.scaled_dot_product_attention(q.to(dtype),
                                                         k.to(dtype),
                                                         v.to(dtype),
                                                         is_causal=causal,
                                                         scale=scale)
    return o.to(q.dtype)


def _stand_in(x, causal, dtype):
    """An Impl of SDPA in `dtype` on inputs x (for SDPA cuDNN or flash)."""
    return bench.Impl(
        lambda: bench._timed(
            torch, lambda: _attention(x.q, x.k, x.v, causal, x.scale, dtype),
            x), None, None)


def _fake_fa(mutate=None):
    """A stand-in fa module: fa.attention in float32, `mutate`d."""

    def attention(q, k, v, *, causal, scale, alibi_slopes=None, softcap=None):
        assert alibi_slopes is None
        if softcap is not None:
            # softcap 3 for "softcap": what the check must catch.
            cap = 3.0 if mutate == "softcap" else softcap
            s = (q.float() @ k.float().transpose(-2, -1)) * scale
            s = cap * torch.tanh(s / cap)
            if causal:
                n = s.shape[-1]
                s = s.masked_fill(
                    torch.ones(n, n, dtype=torch.bool).triu(1), -math.inf)
            return (torch.softmax(s, dim=-1) @ v.float()).to(q.dtype)
        if mutate == "scale":
            scale *= 1.1
        if mutate == "no mask":
            causal = False
        if mutate == "dV row":
            # The forward is right; the gradient of V loses key row 5.
            v = v.float()
            v.register_hook(lambda g: g.index_fill(2, torch.tensor([5]), 0))
        o = _attention(q, k, v, causal, scale, torch.float32).to(q.dtype)
        if mutate == "O row":
            o = o.clone()
            o[0, 1, 7] = 0
        if mutate == "NaN":
            o = o.clone()
            o[1, 0, 100, 3] = float("nan")
        return o

    return types.SimpleNamespace(attention=attention)


@unittest.skipIf(torch is None, "needs torch (CPU is enough)")
class CheckTest(unittest.TestCase):
    """FA checked against a reference on CPU tensors: the criterion, the
    plain bf16 baseline on sampled rows, the anchors' errors, forward and
    backward. A float64 SDPA stands in for SDPA cuDNN, a float32 one for
    SDPA flash (the backward's baseline)."""

    def setUp(self):
        # B=2, H=2, N=128, D=64.
        self.args = bench.parse_args(["--anchors", "naive"])
        self.timed = []

    def tearDown(self):
        bench.use_pass("forward")

    def timer(self, fn):
        self.timed.append(fn())  # run the timed function once
        return 1.0

    def run_config(self, mutate=None, causal=True, stand_in_cudnn=True,
                   stand_in_efficient=False):
        c = bench.make_configs([64], [128], [causal], 256, 128)[0]
        x = bench.make_inputs(torch, c, seed=0, device="cpu")
        impls = bench.implementations(torch, _fake_fa(mutate), c, x,
                                      self.args)
        if stand_in_cudnn:
            impls["cudnn"] = _stand_in(x, causal, torch.float64)
        impls["flash"] = _stand_in(x, causal, torch.float32)
        if stand_in_efficient:  # else SDPA efficient itself: no CPU kernel
            impls["efficient"] = _stand_in(x, causal, torch.bfloat16)
        return bench.run_config(torch, self.timer, c, x, impls, self.args)

    def check_of(self, row):
        self.assertEqual(row["fa"]["status"], "ok", row["fa"].get("error"))
        return row["fa"]["check"]

    def test_forward_ok(self):
        for causal in (False, True):
            row = self.run_config(causal=causal)
            check = self.check_of(row)
            self.assertEqual(check["status"], "ok", check)
            o = check["tensors"]["O"]
            self.assertLess(o["err"], o["bound"])
            self.assertGreater(o["baseline_err"], 0)  # bf16's P, O rounding
            self.assertTrue(check["baseline"].endswith("on every query row"))
            self.assertEqual(row["fa"]["call"], bench.fa_call_text(
                {"D": 64, "causal": causal}))
            naive = row["anchors"]["naive"]
            self.assertEqual(naive["status"], "ok", naive)
            self.assertLess(naive["err_vs_cudnn"]["O"], 0.05)
            self.assertEqual(len(self.timed), 2 * (1 + causal))

    def test_forward_mismatches(self):
        for mutate, worst in (("scale", None), ("no mask", None),
                              ("O row", [0, 1, 7]), ("NaN", [1, 0, 100])):
            check = self.check_of(self.run_config(mutate))
            self.assertEqual(check["status"], "mismatch", mutate)
            o = check["tensors"]["O"]
            self.assertFalse(o["ok"])
            if worst:
                self.assertEqual(o["worst_row"], worst)
        self.assertTrue(math.isinf(o["err"]))  # NaN

    def test_forward_sampled_rows(self):
        # --check-rows 32: both errors on rows 0-7, 8 spread, 112-127.
        self.args.check_rows = 32
        check = self.check_of(self.run_config())
        self.assertEqual(check["status"], "ok", check)
        self.assertIn("32 of 128 query rows", check["baseline"])
        check = self.check_of(self.run_config("O row"))  # row 7: sampled
        self.assertEqual(check["tensors"]["O"]["worst_row"], [0, 1, 7])
        check = self.check_of(self.run_config("NaN"))  # row 100: not
        self.assertEqual(check["status"], "ok", check)

    def test_plain_rows_are_rows_of_the_plain_reference(self):
        c = {"B": 2, "H": 3, "N": 40, "D": 16, "causal": True, "alibi": True}
        x = bench.make_inputs(torch, c, seed=1, device="cpu")
        rows = torch.tensor(bench.sample_rows(40, 16))
        full = bench.plain_attention(torch, x.q, x.k, x.v, x.scale, True,
                                     x.slopes)
        some = bench.plain_attention(torch, x.q, x.k, x.v, x.scale, True,
                                     x.slopes, rows)
        self.assertTrue(torch.equal(full[:, :, rows], some))
        # In chunks of 3 rows (3 heads x 3 rows x 40 keys of f32): the same.
        chunked = bench.plain_attention(torch, x.q, x.k, x.v, x.scale, True,
                                        x.slopes, chunk_bytes=4 * 3 * 3 * 40)
        self.assertTrue(torch.equal(full, chunked))
        self.assertEqual(full.dtype, torch.bfloat16)
        # Row 0 attends to key 0 alone: O = V_0 exactly.
        self.assertTrue(torch.equal(full[:, :, 0], x.v[:, :, 0]))

    def test_variant_terms_in_the_plain_reference(self):
        # relpos under a causal mask is ALiBi with the slopes negated
        # (j - i = -|i - j| there); a document row attends to its own
        # document alone (rows 0-4 of N = 40: the first, of N/8 tokens).
        c = {"B": 1, "H": 2, "N": 40, "D": 16, "causal": True}
        x = bench.make_inputs(torch, dict(c, variant="relpos"), 1, "cpu")
        relpos = bench.plain_attention(torch, x.q, x.k, x.v, x.scale, True,
                                       term=x.term)
        alibi = bench.plain_attention(torch, x.q, x.k, x.v, x.scale, True,
                                      x.rel)
        self.assertTrue(torch.equal(relpos, alibi))
        self.assertFalse(torch.equal(relpos, bench.plain_attention(
            torch, x.q, x.k, x.v, x.scale, True)))
        c["causal"] = False
        x = bench.make_inputs(torch, dict(c, variant="document"), 1, "cpu")
        self.assertEqual(x.doc.tolist(), [0] * 5 + [1] * 15 + [2] * 10 +
                         [3] * 10)
        doc = bench.plain_attention(torch, x.q, x.k, x.v, x.scale, False,
                                    term=x.term)
        first = bench.plain_attention(torch, x.q[:, :, :5], x.k[:, :, :5],
                                      x.v[:, :, :5], x.scale, False)
        self.assertTrue(torch.allclose(doc[:, :, :5].float(), first.float(),
                                       rtol=0, atol=1e-2))
        self.assertFalse(torch.allclose(doc[:, :, 5:20].float(),
                                        bench.plain_attention(
                                            torch, x.q, x.k, x.v, x.scale,
                                            False)[:, :, 5:20].float(),
                                        rtol=0, atol=1e-2))

    def test_bias_variant_in_the_plain_reference(self):
        # The bias variant's term adds its [1, H, N, N] bias: the plain
        # reference matches float64 softmax(q k^T scale + bias) V (causal).
        c = {"B": 2, "H": 2, "N": 24, "D": 16, "causal": True}
        x = bench.make_inputs(torch, dict(c, variant="bias"), 1, "cpu")
        self.assertEqual(tuple(x.bias.shape), (1, 2, 24, 24))
        got = bench.plain_attention(torch, x.q, x.k, x.v, x.scale, True,
                                    term=x.term)
        q, k, v, bias = (t.double() for t in (x.q, x.k, x.v, x.bias))
        s = q @ k.transpose(-2, -1) * x.scale + bias
        s = s.masked_fill(torch.ones(24, 24, dtype=torch.bool).triu(1),
                          -math.inf)
        want = torch.softmax(s, dim=-1) @ v
        err = (got.double() - want).norm() / want.norm()
        self.assertLess(err.item(), 1e-2)
        self.assertFalse(torch.allclose(got, bench.plain_attention(
            torch, x.q, x.k, x.v, x.scale, True)))

    def test_softcap_variant(self):
        # SDPA has no softcap: its anchors are skipped, and FA is checked
        # against the variant in f32 (every row, then sampled rows); a
        # softcap of 3 instead of 30 fails.
        for check_rows in (0, 16):
            args = bench.parse_args(
                ["--anchors", "naive", "--check-rows", str(check_rows)])
            for mutate, status in ((None, "ok"), ("softcap", "mismatch")):
                c = bench.make_configs([64], [128], [True], 256, 128,
                                       variant="softcap")[0]
                x = bench.make_inputs(torch, c, seed=0, device="cpu")
                x.q = x.q * 8  # scores past the cap's knee
                impls = bench.implementations(torch, _fake_fa(mutate), c, x,
                                              args)
                self.assertEqual(impls["cudnn"], {
                    "status": "skipped",
                    "reason": "SDPA has no softcap"
                })
                row = bench.run_config(torch, self.timer, c, x, impls, args)
                check = self.check_of(row)
                self.assertEqual(check["status"], status, check)
                self.assertEqual(check["reference"],
                                 "the variant in f32 (SDPA has no softcap)")
                # Naive attention applies the softcap too (without it: 0.32).
                self.assertLess(
                    row["anchors"]["naive"]["err_vs_cudnn"]["O"], 0.1)

    def test_plain_anchor(self):
        # With a variant, FA plain is fa.attention without the variant's
        # terms on the same tensors: timed, not compared against the
        # variant's reference, and FA / plain its ratio.
        args = bench.parse_args(
            ["--variant", "softcap", "--anchors", "naive,plain"])
        c = bench.make_configs([64], [128], [True], 256, 128,
                               variant="softcap")[0]
        x = bench.make_inputs(torch, c, seed=0, device="cpu")
        fa, calls = _fake_fa(), []
        attention = fa.attention

        def recorded(*a, **kw):
            calls.append(sorted(kw))
            return attention(*a, **kw)

        fa.attention = recorded
        impls = bench.implementations(torch, fa, c, x, args)
        row = bench.run_config(torch, self.timer, c, x, impls, args)
        self.assertEqual(self.check_of(row)["status"], "ok")
        plain = row["anchors"]["plain"]
        self.assertEqual(plain["status"], "ok", plain)
        self.assertEqual(plain["call"],
                         "fa.attention(q, k, v, causal=True, scale=1/sqrt(64))")
        self.assertNotIn("err_vs_cudnn", plain)
        self.assertIn(["causal", "scale"], calls)
        self.assertIn(["alibi_slopes", "causal", "scale", "softcap"], calls)
        self.assertEqual(bench.ratios(row)["fa/plain"], 1.0)

    def test_softcap_norms_of_sampled_rows(self):
        # The f32 reference of 16 sampled rows is zero elsewhere: the norm
        # that scales the errors is the sampled rows' (about all rows'), not
        # one shrunk by the zero rows (sqrt(16 / 128) of it).
        c = bench.make_configs([64], [128], [False], 256, 128,
                               variant="softcap")[0]
        x = bench.make_inputs(torch, c, seed=0, device="cpu")
        impls = bench.implementations(torch, _fake_fa(), c, x, self.args)
        every = bench.Check(torch, impls, x, c, 0).norms[0]
        sampled = bench.Check(torch, impls, x, c, 16).norms[0]
        self.assertAlmostEqual(sampled / every, 1.0, delta=0.2)

    def test_softcap_backward_has_no_reference(self):
        # The backward's references are SDPA's: FA is measured, the check
        # says why it did not run.
        bench.use_pass("backward")
        c = bench.make_configs([64], [128], [False], 256, 128,
                               variant="softcap")[0]
        x = bench.make_inputs(torch, c, seed=0, device="cpu")
        impls = bench.implementations(torch, _fake_fa(), c, x, self.args)
        check = self.check_of(
            bench.run_config(torch, self.timer, c, x, impls, self.args))
        self.assertEqual(check["status"], "error")
        self.assertEqual(check["error"],
                         "no backward reference: SDPA has no softcap")

    def test_softcap_in_the_plain_reference(self):
        # The softcap variant's term: float64 softmax(30 tanh(q k^T scale /
        # 30)) V.
        c = {"B": 1, "H": 2, "N": 24, "D": 16, "causal": False}
        x = bench.make_inputs(torch, dict(c, variant="softcap"), 1, "cpu")
        self.assertEqual(x.softcap, 30.0)
        x.q = x.q * 8  # scores past the cap's knee
        got = bench.plain_attention(torch, x.q, x.k, x.v, x.scale, False,
                                    term=x.term)
        q, k, v = (t.double() for t in (x.q, x.k, x.v))
        s = 30 * torch.tanh(q @ k.transpose(-2, -1) * x.scale / 30)
        want = torch.softmax(s, dim=-1) @ v
        err = (got.double() - want).norm() / want.norm()
        self.assertLess(err.item(), 1e-2)
        plain = bench.plain_attention(torch, x.q, x.k, x.v, x.scale, False)
        self.assertGreater(
            ((plain.double() - want).norm() / want.norm()).item(), 2e-2)

    def test_no_reference(self):
        # SDPA cuDNN itself (which needs CUDA) fails: the check says so, FA
        # is still measured.
        check = self.check_of(self.run_config(stand_in_cudnn=False))
        self.assertEqual(check["status"], "error")
        self.assertIn("reference SDPA cuDNN failed", check["error"])

    def test_backward(self):
        bench.use_pass("backward")
        row = self.run_config()
        check = self.check_of(row)
        self.assertEqual(check["status"], "ok", check)
        self.assertEqual(set(check["tensors"]), {"dQ", "dK", "dV"})
        self.assertEqual(check["baseline"],
                         "SDPA flash's gradients (SDPA efficient failed)")
        # The timed function is the backward alone: dQ, dK, dV.
        self.assertEqual(len(self.timed[0]), 3)
        self.assertEqual(set(row["anchors"]["naive"]["err_vs_cudnn"]),
                         {"dQ", "dK", "dV"})

        check = self.check_of(self.run_config("dV row"))
        self.assertEqual(check["status"], "mismatch")
        self.assertTrue(check["tensors"]["dQ"]["ok"])
        self.assertFalse(check["tensors"]["dV"]["ok"])
        self.assertEqual(check["tensors"]["dV"]["worst_row"][2], 5)

        check = self.check_of(self.run_config("scale"))
        self.assertEqual(check["status"], "mismatch")
        self.assertFalse(check["tensors"]["dQ"]["ok"])

    def test_backward_baseline_of_two_kernels(self):
        # The bound comes from the larger error of SDPA flash and efficient
        # (a bf16 SDPA stands in for efficient: the larger here).
        bench.use_pass("backward")
        check = self.check_of(self.run_config(stand_in_efficient=True))
        self.assertEqual(check["status"], "ok", check)
        self.assertEqual(check["baseline"], "the larger error of SDPA "
                         "flash's and SDPA efficient's gradients")
        for t in check["tensors"].values():
            errs = t["baseline_errs"]
            self.assertEqual(set(errs), {"flash", "efficient"})
            self.assertEqual(t["baseline_err"], max(errs.values()))
            self.assertGreater(errs["efficient"], errs["flash"])


if __name__ == "__main__":
    unittest.main()
