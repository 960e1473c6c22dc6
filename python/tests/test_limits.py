"""Empty sequences through the Python API, on numpy arrays and torch CPU tensors.

Nk = 0: every row sees no key, so O = 0, lse = -inf and dQ = 0 (dK, dV
empty). Nq = 0: O is empty and dK = dV = 0.
"""

from __future__ import annotations

import numpy as np
import pytest

import fa


def test_empty_keys_numpy() -> None:
    rng = np.random.default_rng(1)
    q = rng.standard_normal((2, 4, 9, 32)).astype(np.float32)
    k = np.zeros((2, 2, 0, 32), np.float32)
    o, lse = fa.attention(q, k, k, causal=True, return_lse=True)
    assert o.shape == q.shape and np.all(o == 0)
    assert lse.shape == (2, 4, 9) and np.all(lse == -np.inf)
    do = rng.standard_normal(o.shape).astype(np.float32)
    dq, dk, dv = fa.attention_backward(q, k, k, o, do, lse, causal=True)
    assert dq.shape == q.shape and np.all(dq == 0)
    assert dk.shape == k.shape and dv.shape == k.shape


def test_empty_queries_numpy() -> None:
    rng = np.random.default_rng(2)
    q = np.zeros((2, 4, 0, 32), np.float32)
    k = rng.standard_normal((2, 2, 7, 32)).astype(np.float32)
    v = rng.standard_normal((2, 2, 7, 32)).astype(np.float32)
    o, lse = fa.attention(q, k, v, return_lse=True)
    assert o.shape == q.shape and lse.shape == (2, 4, 0)
    dq, dk, dv = fa.attention_backward(q, k, v, o, np.zeros_like(o), lse)
    assert dq.shape == q.shape
    assert dk.shape == k.shape and np.all(dk == 0)
    assert dv.shape == v.shape and np.all(dv == 0)


def test_empty_sequences_torch_cpu() -> None:
    torch = pytest.importorskip("torch")
    gen = torch.Generator().manual_seed(3)
    # torch's empty tensors have no data pointer.
    q = torch.randn(2, 4, 9, 32, generator=gen, requires_grad=True)
    k = torch.zeros(2, 2, 0, 32, requires_grad=True)
    o = fa.attention(q, k, k)
    assert o.shape == q.shape and torch.all(o == 0)
    o.sum().backward()
    assert torch.all(q.grad == 0) and k.grad.shape == k.shape

    q = torch.zeros(2, 4, 0, 32, requires_grad=True)
    k = torch.randn(2, 2, 7, 32, generator=gen, requires_grad=True)
    v = torch.randn(2, 2, 7, 32, generator=gen, requires_grad=True)
    o = fa.attention(q, k, v, causal=True)
    assert o.shape == q.shape
    o.sum().backward()
    assert torch.all(k.grad == 0) and torch.all(v.grad == 0)
