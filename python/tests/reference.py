"""An independent float64 reference for fa.attention (docs/dialect.md).

It shares no code with fa: scores are materialized in float64 and the
variant is applied in the order the dialect defines (scale, softcap, ALiBi,
bias, score_mod, then the masks), followed by a max-subtracted row softmax.
score_mod / mask_mod here are numpy functions over broadcast index arrays.
"""

from __future__ import annotations

from typing import Any, Callable

import numpy as np

try:
    import ml_dtypes
except ImportError:  # bf16 tests are skipped then
    ml_dtypes = None

BOUNDS = {"float32": 1e-5, "float16": 5e-3, "bfloat16": 2e-2}
LSE_BOUND = 1e-5


def np_dtype(name: str) -> np.dtype:
    if name == "bfloat16":
        if ml_dtypes is None:
            import pytest

            pytest.skip("ml_dtypes is not installed")
        return np.dtype(ml_dtypes.bfloat16)
    return np.dtype(name)


def randn(
    rng: np.random.Generator, shape: tuple[int, ...], dtype: str, scale: float = 1.0
) -> np.ndarray:
    return (rng.standard_normal(shape) * scale).astype(np.float32).astype(np_dtype(dtype))


def rel_error(got: np.ndarray, want: np.ndarray) -> float:
    got = np.asarray(got, dtype=np.float64)
    want = np.asarray(want, dtype=np.float64)
    finite = np.isfinite(want)
    assert np.array_equal(finite, np.isfinite(got)), "infinities differ"
    assert np.array_equal(want[~finite], got[~finite]), "infinities differ"
    norm = np.linalg.norm(want[finite])
    return float(np.linalg.norm(got[finite] - want[finite]) / (norm if norm > 0 else 1.0))


def reference(
    q: Any,
    k: Any,
    v: Any,
    *,
    causal: str = "none",
    scale: float | None = None,
    window: tuple[int, int] | None = None,
    softcap: float | None = None,
    alibi_slopes: Any = None,
    bias: Any = None,
    score_mod: Callable[..., np.ndarray] | None = None,
    mask_mod: Callable[..., np.ndarray] | None = None,
) -> tuple[np.ndarray, np.ndarray]:
    """(O, lse) in float64."""
    q, k, v = (np.asarray(x).astype(np.float64) for x in (q, k, v))
    batch, heads_q, nq, d = q.shape
    heads_kv, nk = k.shape[1], k.shape[2]
    group = heads_q // heads_kv
    k = np.repeat(k, group, axis=1)  # query head h reads k/v head h // group
    v = np.repeat(v, group, axis=1)
    if scale is None:
        scale = 1.0 / np.sqrt(d)

    s = scale * np.einsum("bhid,bhjd->bhij", q, k)
    if softcap is not None:
        s = softcap * np.tanh(s / softcap)
    b = np.arange(batch)[:, None, None, None]
    h = np.arange(heads_q)[None, :, None, None]
    i = np.arange(nq)[None, None, :, None]
    j = np.arange(nk)[None, None, None, :]
    if alibi_slopes is not None:
        slopes = np.asarray(alibi_slopes, dtype=np.float64)
        slopes = slopes[None, :, None, None] if slopes.ndim == 1 else slopes[:, :, None, None]
        s = s - slopes * np.abs(i + nk - nq - j)
    if bias is not None:
        s = s + np.asarray(bias).astype(np.float64)
    if score_mod is not None:
        s = np.broadcast_to(score_mod(s, b, h, i, j), s.shape)

    keep = np.ones(s.shape, dtype=bool)
    if causal == "top_left":
        keep &= j <= i
    elif causal == "bottom_right":
        keep &= j <= i + nk - nq
    if window is not None:
        left, right = window
        keep &= (j >= i + nk - nq - left) & (j <= i + nk - nq + right)
    if mask_mod is not None:
        keep &= np.broadcast_to(mask_mod(b, h, i, j), s.shape)
    s = np.where(keep, s, -np.inf)

    m = s.max(axis=-1, keepdims=True) if nk else np.full(s.shape[:-1] + (1,), -np.inf)
    m_safe = np.where(np.isfinite(m), m, 0.0)
    p = np.exp(s - m_safe)  # exp(-inf) = 0
    row_sum = p.sum(axis=-1, keepdims=True)
    o = np.einsum("bhij,bhjd->bhid", p, v) / np.where(row_sum > 0, row_sum, 1.0)
    with np.errstate(divide="ignore"):
        lse = np.where(row_sum > 0, m_safe + np.log(row_sum), -np.inf)[..., 0]
    return o, lse


def reference_grad(
    q: Any,
    k: Any,
    v: Any,
    dout: Any,
    *,
    causal: str = "none",
    scale: float | None = None,
    window: tuple[int, int] | None = None,
    softcap: float | None = None,
    alibi_slopes: Any = None,
    bias: Any = None,
    score_mod: Callable[..., np.ndarray] | None = None,
    score_mod_grad: Callable[..., np.ndarray] | None = None,
    mask_mod: Callable[..., np.ndarray] | None = None,
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(dQ, dK, dV) in float64 of ``sum(O * dout)``, O as :func:`reference` defines it.

    ``score_mod_grad(s, b, h, i, j)`` is d score_mod / d s (required with a
    score_mod). Gradients of K/V heads shared by several query heads are
    summed over them.
    """
    q, k, v, dout = (np.asarray(x).astype(np.float64) for x in (q, k, v, dout))
    batch, heads_q, nq, d = q.shape
    heads_kv, nk = k.shape[1], k.shape[2]
    group = heads_q // heads_kv
    kr, vr = np.repeat(k, group, axis=1), np.repeat(v, group, axis=1)
    if scale is None:
        scale = 1.0 / np.sqrt(d)

    # The forward again, keeping each step's derivative.
    s = scale * np.einsum("bhid,bhjd->bhij", q, kr)
    ds = np.ones_like(s)  # d score / d (scale * q.k), accumulated
    if softcap is not None:
        t = np.tanh(s / softcap)
        s, ds = softcap * t, ds * (1.0 - t * t)
    b = np.arange(batch)[:, None, None, None]
    h = np.arange(heads_q)[None, :, None, None]
    i = np.arange(nq)[None, None, :, None]
    j = np.arange(nk)[None, None, None, :]
    if alibi_slopes is not None:
        slopes = np.asarray(alibi_slopes, dtype=np.float64)
        slopes = slopes[None, :, None, None] if slopes.ndim == 1 else slopes[:, :, None, None]
        s = s - slopes * np.abs(i + nk - nq - j)
    if bias is not None:
        s = s + np.asarray(bias).astype(np.float64)
    if score_mod is not None:
        assert score_mod_grad is not None, "a score_mod needs its score_mod_grad"
        ds = ds * np.broadcast_to(score_mod_grad(s, b, h, i, j), s.shape)
        s = np.broadcast_to(score_mod(s, b, h, i, j), s.shape)
    keep = np.ones(s.shape, dtype=bool)
    if causal == "top_left":
        keep &= j <= i
    elif causal == "bottom_right":
        keep &= j <= i + nk - nq
    if window is not None:
        left, right = window
        keep &= (j >= i + nk - nq - left) & (j <= i + nk - nq + right)
    if mask_mod is not None:
        keep &= np.broadcast_to(mask_mod(b, h, i, j), s.shape)
    s = np.where(keep, s, -np.inf)
    m = s.max(axis=-1, keepdims=True) if nk else np.full(s.shape[:-1] + (1,), -np.inf)
    p = np.exp(s - np.where(np.isfinite(m), m, 0.0))
    row_sum = p.sum(axis=-1, keepdims=True)
    p = p / np.where(row_sum > 0, row_sum, 1.0)

    # Softmax backward, then the chain rule through the score's steps.
    dp = np.einsum("bhid,bhjd->bhij", dout, vr)
    dscore = p * (dp - (p * dp).sum(axis=-1, keepdims=True)) * ds * scale
    dq = np.einsum("bhij,bhjd->bhid", dscore, kr)
    dk = np.einsum("bhij,bhid->bhjd", dscore, q)
    dv = np.einsum("bhij,bhid->bhjd", p, dout)

    def per_kv_head(x: np.ndarray) -> np.ndarray:
        return x.reshape(batch, heads_kv, group, *x.shape[2:]).sum(axis=2)

    return dq, per_kv_head(dk), per_kv_head(dv)
