"""The Python example of README.md runs and computes what it says."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from reference import check, check_attention, check_attention_grad, reference, reference_grad

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
    _, lowp_lse = reference(q, k, v, causal="top_left", precision=q.dtype)
    check("lse", lse, want_lse, lowp_lse)
    grads = tuple(namespace[name] for name in ("dq", "dk", "dv"))
    check_attention_grad(q, k, v, np.ones_like(q), grads, causal="top_left")
    check_attention(
        q,
        k,
        v,
        o,
        score_mod=lambda s, b, h, i, j: s - 0.1 * np.abs(i - j),
        mask_mod=lambda b, h, i, j: i >= j,
    )


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
    # The low-precision gradients of sum(O^2): dO = 2 O, O its own.
    inputs = [x.detach().numpy() for x in (q, k, v)]
    lowp_o, _ = reference(*inputs, causal="top_left", precision="float32")
    lowp = reference_grad(*inputs, 2 * lowp_o, causal="top_left", precision="float32")
    for name, x, r, base in zip(("dQ", "dK", "dV"), (q, k, v), ref, lowp):
        check(name, x.grad.double().numpy(), 2 * r.grad.numpy(), 2 * base)
