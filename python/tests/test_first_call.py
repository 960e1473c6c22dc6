"""The first call's cost: ``import fa`` and an eager ``fa.attention`` on torch
tensors load none of torch.compile's machinery (torch._dynamo, sympy, more of
torch.distributed than ``import torch`` does), and torch.compile still works.

Each check runs in a fresh interpreter, so that nothing another test
imported hides a regression. Skipped where torch is not installed.
"""

from __future__ import annotations

import os
import subprocess
import sys

import pytest

pytest.importorskip("torch")

# Modules torch.compile needs and an eager call must not load.
HEAVY = ("torch._dynamo", "sympy", "torch.distributed")

EAGER = """
import sys
import torch
before = set(sys.modules)
import fa
q, k, v = (torch.randn(1, 2, 16, 8, requires_grad=True) for _ in range(3))
o = fa.attention(q, k, v, causal=True)
o.sum().backward()
with torch.no_grad():
    fa.attention(q, k, v, causal=True, return_lse=True)
new = sorted(set(sys.modules) - before)
heavy = [m for m in new if any(m == h or m.startswith(h + ".") for h in {heavy!r})]
print("heavy:", heavy)
assert q.grad is not None and q.grad.shape == q.shape
"""

COMPILED = """
import sys
import torch
import fa

def loss(q, k, v):
    return fa.attention(q, k, v, causal=True).sum()

q, k, v = (torch.randn(1, 2, 16, 8, requires_grad=True) for _ in range(3))
loss(q, k, v).backward()
want = [x.grad.clone() for x in (q, k, v)]
for x in (q, k, v):
    x.grad = None
assert "torch._dynamo" not in sys.modules
torch.compile(loss, backend="aot_eager", fullgraph=True)(q, k, v).backward()
assert all(torch.equal(x.grad, w) for x, w in zip((q, k, v), want))
print("compiled: ok")
"""


# torch.compile before any eager call: fa's torch module is imported while
# Dynamo traces, and that must not leave a guard that fails on the next call.
FIRST_CALL_COMPILED = """
import torch
import fa

torch._dynamo.config.error_on_recompile = True
f = torch.compile(lambda q: fa.attention(q, q, q, causal=True), fullgraph=True, dynamic=True)
for b, n in ((3, 12), (2, 20)):
    q = torch.randn(b, 4, n, 16)
    assert torch.equal(f(q), fa.attention(q, q, q, causal=True))
print("graphs:", torch._dynamo.utils.counters["stats"]["unique_graphs"])
"""


def run(code: str) -> str:
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join(p for p in sys.path if p)
    result = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, env=env, timeout=240
    )
    assert result.returncode == 0, result.stderr
    return result.stdout


def test_eager_call_imports_no_compiler() -> None:
    assert run(EAGER.format(heavy=HEAVY)).splitlines()[-1] == "heavy: []"


def test_torch_compile_after_eager_calls() -> None:
    assert run(COMPILED).splitlines()[-1] == "compiled: ok"


def test_torch_compile_as_the_first_call_compiles_once() -> None:
    assert run(FIRST_CALL_COMPILED).splitlines()[-1] == "graphs: 1"
