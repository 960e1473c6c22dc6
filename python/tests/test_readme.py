"""The Python example of README.md runs and computes what it says."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from reference import reference, reference_grad, rel_error

README = Path(__file__).resolve().parents[2] / "README.md"


def example(name: str = "python-example") -> str:
    text = README.read_text()
    match = re.search(rf"<!-- {name} -->\s*```python\n(.*?)```\s*<!-- /{name} -->", text, re.DOTALL)
    assert match, f"README.md has no <!-- {name} --> block"
    return match.group(1)


def test_readme_example() -> None:
    code = example()
    assert "fa.attention" in code
    namespace: dict[str, Any] = {}
    exec(compile(code, str(README), "exec"), namespace)
    q, k, v, o, lse = (namespace[name] for name in ("q", "k", "v", "o", "lse"))
    assert o.shape == q.shape and o.dtype == np.float32
    _, want_lse = reference(q, k, v, causal="top_left")
    assert rel_error(lse, want_lse) < 1e-5
    want_grads = reference_grad(q, k, v, np.ones_like(q), causal="top_left")
    for name, want in zip(("dq", "dk", "dv"), want_grads):
        assert rel_error(namespace[name], want) < 1e-5
    want_o, _ = reference(
        q,
        k,
        v,
        score_mod=lambda s, b, h, i, j: s - 0.1 * np.abs(i - j),
        mask_mod=lambda b, h, i, j: i >= j,
    )
    assert rel_error(o, want_o) < 1e-5


def test_readme_torch_example() -> None:
    torch = pytest.importorskip("torch")
    code = example("torch-example")
    namespace: dict[str, Any] = {}
    exec(compile(code, str(README), "exec"), namespace)
    q, k, v = (namespace[name] for name in ("q", "k", "v"))
    # Gradients of sum(O^2), accumulated twice (eager, then compiled).
    ref = [x.detach().double().requires_grad_() for x in (q, k, v)]
    o = torch.nn.functional.scaled_dot_product_attention(*ref, is_causal=True)
    o.square().sum().backward()
    for x, r in zip((q, k, v), ref):
        assert float((x.grad.double() - 2 * r.grad).norm() / (2 * r.grad).norm()) < 1e-5
