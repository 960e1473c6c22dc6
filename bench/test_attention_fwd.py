#!/usr/bin/env python3
"""Tests of bench/attention_fwd.py that need no GPU, torch or fa-jit.

A fake fa-jit (a Python script written to a temporary folder) stands in for
the real one: it prints the summary and `bench:` lines, fails for D = 256 and
prints no `bench:` line for one config. Run: python3 bench/test_attention_fwd.py
"""

import json
import os
import stat
import subprocess
import sys
import tempfile
import unittest

HERE = os.path.dirname(os.path.abspath(__file__))
SCRIPT = os.path.join(HERE, "attention_fwd.py")
BWD_SCRIPT = os.path.join(HERE, "attention_bwd.py")
sys.path.insert(0, HERE)
import attention_fwd as bench  # noqa: E402

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


class RunTest(unittest.TestCase):

    def setUp(self):
        self.tmp = tempfile.TemporaryDirectory()
        self.dir = self.tmp.name
        self.fa_jit = os.path.join(self.dir, "fa-jit")
        with open(self.fa_jit, "w") as f:
            f.write(FAKE_FA_JIT)
        os.chmod(self.fa_jit, os.stat(self.fa_jit).st_mode | stat.S_IXUSR)

    def tearDown(self):
        self.tmp.cleanup()

    def run_script(self, *args, script=SCRIPT):
        env = dict(os.environ, OUT=self.dir)
        return subprocess.run([sys.executable, script] + list(args),
                              stdout=subprocess.PIPE,
                              stderr=subprocess.PIPE,
                              universal_newlines=True,
                              env=env,
                              check=False)

    def test_fa_only_run(self):
        proc = self.run_script("--fa-jit", self.fa_jit, "--no-anchors",
                               "--d", "64,256", "--n", "1024,4096")
        self.assertEqual(proc.returncode, 0, proc.stderr)
        with open(os.path.join(self.dir, "bench_fwd.json")) as f:
            doc = json.load(f)
        self.assertEqual(doc["environment"]["fa_jit_version"]["output"],
                         "fa-jit fake 1.0")
        rows = {(r["D"], r["causal"], r["N"]): r for r in doc["results"]}
        self.assertEqual(len(rows), 8)
        ok = rows[(64, False, 1024)]["fa"]
        self.assertEqual(ok["status"], "ok")
        self.assertEqual(ok["compile_ms"], 12.3)
        self.assertAlmostEqual(ok["ms"], 0.5)
        self.assertAlmostEqual(ok["tflops"], ok["tflops_reported"], places=2)
        self.assertNotIn("notes", ok)
        bad = rows[(256, True, 4096)]["fa"]
        self.assertEqual(bad["status"], "error")
        self.assertIn("head dim 256 is not supported", bad["error"])
        nobench = rows[(64, True, 4096)]["fa"]
        self.assertEqual(nobench["status"], "error")
        self.assertIn("no 'bench:", nobench["error"])
        self.assertEqual(nobench["compile_ms"], 5.0)
        # The table comes last.
        lines = proc.stdout.rstrip().splitlines()
        self.assertEqual(lines[-1], "| 256 | yes | 4096 | err |")
        self.assertEqual(lines[-10], "| D | causal | N | FA |")
        with open(os.path.join(self.dir, "bench_fwd.png"), "rb") as f:
            self.assertEqual(f.read(8), b"\x89PNG\r\n\x1a\n")

    def test_from_json_and_builtin_plot(self):
        proc = self.run_script("--fa-jit", self.fa_jit, "--no-anchors",
                               "--quick", "--no-png")
        self.assertEqual(proc.returncode, 0, proc.stderr)
        path = os.path.join(self.dir, "bench_fwd.json")
        proc = self.run_script("--from-json", path, "--png",
                               os.path.join(self.dir, "again.png"))
        self.assertEqual(proc.returncode, 0, proc.stderr)
        self.assertIn("| 128 | yes | 4096 | err |", proc.stdout)
        with open(path) as f:
            doc = json.load(f)
        panels, keys, labels = bench.plot_series(doc)
        out = os.path.join(self.dir, "builtin.png")
        bench._plot_builtin(doc, panels, keys, labels, out)
        with open(out, "rb") as f:
            self.assertEqual(f.read(8), b"\x89PNG\r\n\x1a\n")

    def test_missing_fa_jit(self):
        proc = self.run_script("--fa-jit", os.path.join(self.dir, "nope"),
                               "--no-anchors", "--d", "64", "--n", "1024",
                               "--no-png")
        self.assertEqual(proc.returncode, 1)
        with open(os.path.join(self.dir, "bench_fwd.json")) as f:
            doc = json.load(f)
        self.assertIn("cannot run", doc["results"][0]["fa"]["error"])

    def test_dry_run(self):
        proc = self.run_script("--fa-jit", self.fa_jit, "--dry-run", "--d",
                               "128", "--n", "2048", "--causal", "yes")
        self.assertEqual(proc.returncode, 0, proc.stderr)
        self.assertIn(
            "--target=auto --shape=8,16,16,2048,2048,128 --dtype=bf16 "
            "--causal=bottom-right --bench --bench-iters=50", proc.stdout)

    def test_alibi_dry_run(self):
        proc = self.run_script("--fa-jit", self.fa_jit, "--dry-run", "--d",
                               "64", "--n", "4096", "--causal", "no",
                               "--alibi")
        self.assertEqual(proc.returncode, 0, proc.stderr)
        self.assertIn(
            "D=64 causal=no N=4096 B=4 H=32 alibi  GFLOP=549.8  " +
            self.fa_jit + " --target=auto --shape=4,32,32,4096,4096,64 "
            "--dtype=bf16 --alibi --bench --bench-iters=50", proc.stdout)

    def test_backward_dry_run(self):
        # attention_bwd.py: the same grid, fa-jit --backward, 2.5x the FLOPs.
        proc = self.run_script("--fa-jit", self.fa_jit, "--dry-run", "--d",
                               "128", "--n", "2048", "--causal", "yes",
                               script=BWD_SCRIPT)
        self.assertEqual(proc.returncode, 0, proc.stderr)
        # 2.5 * 4*8*16*2048^2*128 / 2 = 343.6 GFLOP.
        self.assertIn(
            "D=128 causal=yes N=2048 B=8 H=16  GFLOP=343.6  " + self.fa_jit +
            " --target=auto --shape=8,16,16,2048,2048,128 --dtype=bf16 "
            "--causal=bottom-right --backward --bench --bench-iters=50",
            proc.stdout)

    def test_fa_args(self):
        # --fa-args: extra fa-jit arguments, before --bench, in every command.
        proc = self.run_script("--fa-jit", self.fa_jit, "--dry-run", "--d",
                               "64", "--n", "1024", "--causal", "no",
                               "--fa-args=--bwd-atomic-dq --bwd-dkdv-warps=8",
                               script=BWD_SCRIPT)
        self.assertEqual(proc.returncode, 0, proc.stderr)
        self.assertIn(
            " --dtype=bf16 --backward --bwd-atomic-dq --bwd-dkdv-warps=8 "
            "--bench --bench-iters=50\n", proc.stdout)


if __name__ == "__main__":
    unittest.main()
