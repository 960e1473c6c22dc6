#!/usr/bin/env python3
"""Tests of bench/cold_compile.py that need no GPU: its arguments, its table,
and whole runs against a fake `fa` package whose first call in a process
takes 0.2 s unless its kernel is in FA_CACHE_DIR (where it writes it), so
that a cold process, a warm-disk process and a second call tell apart.
The runs need torch (the child makes torch tensors); skipped without it.

Run: python3 bench/test_cold_compile.py
"""

import contextlib
import io
import json
import os
import sys
import tempfile
import unittest

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import cold_compile  # noqa: E402

try:
    import torch  # noqa: F401
except Exception:  # noqa: BLE001 - not installed, or broken
    torch = None

FAKE_FA = r'''
import os, time

def attention(q, k, v, **kwargs):
    assert os.environ["CUDA_CACHE_DISABLE"] == "1"
    kernel = os.path.join(os.environ["FA_CACHE_DIR"], "kernel-%d-%s" % (
        q.shape[-1], ",".join(sorted(kwargs))))
    global compiled
    if not globals().get("compiled"):
        if not os.path.exists(kernel):
            time.sleep(0.2)
            open(kernel, "w").close()
        compiled = True
    return q
'''


class ArgsTest(unittest.TestCase):

    def test_defaults(self):
        args = cold_compile.parse_args([])
        self.assertEqual(args.d, [64, 128])
        self.assertEqual(args.variants, ["plain", "causal", "softcap"])
        self.assertEqual(args.samples, 3)
        self.assertEqual(args.target_s, 0.5)

    def test_bad_arguments(self):
        for argv, message in (
            (["--d", "64,x"], "--d: a comma-separated list of head dims (got '64,x')"),
            (["--variants", "plain,relpos"],
             "--variants: unknown relpos (of plain, causal, softcap, alibi, window)"),
            (["--samples", "0"], "--samples must be at least 1"),
        ):
            err = io.StringIO()
            with contextlib.redirect_stderr(err), self.assertRaises(SystemExit) as e:
                cold_compile.parse_args(argv)
            self.assertEqual(e.exception.code, 2)
            self.assertIn(message, err.getvalue())

    def test_table(self):
        rows = [{"D": 64, "variant": "softcap", "cold_s": [0.61, 0.45, 0.52],
                 "cold_median_s": 0.52, "warm_disk_s": 0.025, "second_call_s": 0.0003},
                {"D": 128, "variant": "plain", "cold_s": [0.4], "cold_median_s": 0.4,
                 "warm_disk_s": 0.02, "second_call_s": 0.0002}]
        text = cold_compile.table(rows, "cuda", 0.5)
        self.assertIn("| 64 | softcap | 0.520 s | 0.450-0.610 s | 25.0 ms | 0.30 ms | over |",
                      text)
        self.assertIn("| 128 | plain | 0.400 s | 0.400-0.400 s | 20.0 ms | 0.20 ms | ok |", text)


@unittest.skipIf(torch is None, "needs torch (CPU is enough)")
class RunTest(unittest.TestCase):

    def test_run(self):
        with tempfile.TemporaryDirectory() as tmp:
            os.mkdir(os.path.join(tmp, "fa"))
            with open(os.path.join(tmp, "fa", "__init__.py"), "w") as f:
                f.write(FAKE_FA)
            saved = os.environ.get("PYTHONPATH")
            os.environ["PYTHONPATH"] = tmp
            out = io.StringIO()
            try:
                with contextlib.redirect_stdout(out):
                    rc = cold_compile.main(["--device", "cpu", "--d", "32", "--variants",
                                            "plain,alibi", "--samples", "2", "--json",
                                            os.path.join(tmp, "cold.json")])
            finally:
                if saved is None:
                    del os.environ["PYTHONPATH"]
                else:
                    os.environ["PYTHONPATH"] = saved
            self.assertEqual(rc, 0)
            with open(os.path.join(tmp, "cold.json")) as f:
                doc = json.load(f)
        self.assertEqual(doc["device"], "cpu")
        self.assertEqual([(r["D"], r["variant"]) for r in doc["rows"]],
                         [(32, "plain"), (32, "alibi")])
        for r in doc["rows"]:
            # Every sample compiled (an empty cache each), the warm-disk
            # process found the kernel, the second call was in memory.
            self.assertEqual(len(r["cold_s"]), 2)
            self.assertGreaterEqual(min(r["cold_s"]), 0.2)
            self.assertLess(r["warm_disk_s"], 0.15)
            self.assertLess(r["second_call_s"], 0.05)
        self.assertIn("| 32 | alibi |", out.getvalue())


if __name__ == "__main__":
    unittest.main()
