#!/usr/bin/env python3
"""Backward attention benchmark: FA (fa.attention's autograd) against the
anchors.

The same configs, anchors, timing, JSON and plot as attention_fwd.py (read
its docstring), measuring the backward instead: for FA and each anchor, the
autograd backward (torch.autograd.grad of dQ, dK, dV for one random dO) of
one forward of that implementation on the same inputs; for FA that is
torch.ops.fa.attention's autograd, FA's backward kernels (Dsum, dK/dV, dQ).
FA's dQ, dK and dV are checked against SDPA cuDNN's, the bound coming from
SDPA flash's gradients. Backward TFLOP/s = 2.5 * 4*B*H*N^2*D / t, half when
causal. Writes bench_bwd.json and bench_bwd.png by default.
"""

import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

import attention_fwd as bench  # noqa: E402

if __name__ == "__main__":
    bench.use_pass("backward")
    sys.exit(bench.main())
