#!/usr/bin/env python3
"""Backward attention benchmark: FA (through fa-jit --backward) against the
anchors.

The same configs, anchors, timing, JSON and plot as attention_fwd.py (read
its docstring), measuring the backward instead: FA's backward kernels
(`fa-jit --backward --bench`: Dsum, dK/dV, dQ from q, k, v, O, dO, lse), and
for each anchor the autograd backward (dQ, dK, dV for a random dO) of one
forward of that anchor. Backward TFLOP/s = 2.5 * 4*B*H*N^2*D / t, half when
causal. Writes bench_bwd.json and bench_bwd.png by default.
"""

import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

import attention_fwd as bench  # noqa: E402

if __name__ == "__main__":
    bench.use_backward()
    sys.exit(bench.main())
