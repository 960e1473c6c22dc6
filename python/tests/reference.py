"""Independent references for fa.attention (docs/dialect.md, docs/accuracy.md).

They share no code with fa: scores are materialized and the variant is applied
in the order the dialect defines (scale, softcap, ALiBi, bias, score_mod, then
the masks), followed by a max-subtracted row softmax. score_mod / mask_mod here
are numpy functions over broadcast index arrays.

``precision=None`` gives the exact reference (float64 throughout, from the
inputs as rounded to their dtype); ``precision="float32"``, ``"float16"`` or
``"bfloat16"`` the low-precision one of docs/accuracy.md, computed as a plain
kernel would with inputs of that dtype. :func:`check` judges a result by the
two (FA's accuracy criterion).
"""

from __future__ import annotations

from typing import Any, Callable

import numpy as np

try:
    import ml_dtypes
except ImportError:  # bf16 tests are skipped then
    ml_dtypes = None

# The absolute slack of the bound (docs/accuracy.md).
EPSILON = 1e-5


def np_dtype(name: Any) -> np.dtype:
    if str(name) in ("bfloat16", "bf16"):
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
    """||got - want|| / ||want|| over the whole tensor (for checks that results differ)."""
    got = np.asarray(got, dtype=np.float64)
    want = np.asarray(want, dtype=np.float64)
    finite = np.isfinite(want)
    assert np.array_equal(finite, np.isfinite(got)), "infinities differ"
    assert np.array_equal(want[~finite], got[~finite]), "infinities differ"
    norm = np.linalg.norm(want[finite])
    return float(np.linalg.norm(got[finite] - want[finite]) / (norm if norm > 0 else 1.0))


def row_error(got: Any, exact: Any, *, absolute: bool = False) -> tuple[float, int]:
    """The error of docs/accuracy.md and the flat index of its worst row.

    Rows run along the last dimension (one value each with ``absolute``, as
    for lse); a row's error is ``||got_i - exact_i||_2 / norm``, ``norm`` the
    root mean square of the exact rows' norms (1 when 0, and 1 with
    ``absolute``). An infinity of ``exact`` matched by the same one in ``got``
    counts 0; any other non-finite value makes its row's error infinite.
    """
    got = np.asarray(got, dtype=np.float64)
    exact = np.asarray(exact, dtype=np.float64)
    assert got.shape == exact.shape, f"shape {got.shape}, reference {exact.shape}"
    if got.size == 0:
        return 0.0, 0
    width = 1 if absolute or got.ndim == 0 else got.shape[-1]
    got, exact = got.reshape(-1, width), exact.reshape(-1, width)
    finite = np.isfinite(exact) & np.isfinite(got)
    matched = np.isinf(exact) & (got == exact)
    bad = (~finite & ~matched).any(axis=1)
    diff = np.where(finite, got, 0.0) - np.where(finite, exact, 0.0)
    norm = 1.0
    if not absolute:
        ref_norms = np.linalg.norm(np.where(np.isfinite(exact), exact, 0.0), axis=1)
        rms = float(np.sqrt(np.mean(ref_norms**2)))
        norm = rms if rms > 0 else 1.0
    errors = np.where(bad, np.inf, np.linalg.norm(diff, axis=1) / norm)
    worst = int(np.argmax(errors))
    return float(errors[worst]), worst


def check(
    name: str, got: Any, exact: Any, lowp: Any, *, absolute: bool | None = None
) -> tuple[float, float]:
    """Asserts FA's accuracy criterion: err(got) <= 2 * err(lowp) + 1e-5.

    ``exact`` and ``lowp`` are the exact and low-precision references of
    ``got`` (docs/accuracy.md); the error is :func:`row_error`'s, absolute for
    lse (``absolute`` defaults to ``name == "lse"``). Returns (error, bound).
    """
    if absolute is None:
        absolute = name == "lse"
    shape = np.shape(got)
    assert np.shape(lowp) == np.shape(exact), (
        f"{name}: low-precision reference of shape {np.shape(lowp)}, exact {np.shape(exact)}"
    )
    baseline, _ = row_error(lowp, exact, absolute=absolute)
    assert np.isfinite(baseline), f"{name}: the low-precision reference is not finite"
    error, worst = row_error(got, exact, absolute=absolute)
    bound = 2 * baseline + EPSILON
    rows = shape if absolute else shape[:-1]
    row = tuple(int(x) for x in np.unravel_index(worst, rows)) if rows else ()
    assert error <= bound, (
        f"{name}: error {error:.3e} > bound {bound:.3e} (2 x the low-precision "
        f"reference's {baseline:.3e} + {EPSILON:g}); worst row {row} of {shape}"
    )
    return error, bound


def dropout_keep(seed: int, shape: tuple[int, ...], p: float) -> np.ndarray:
    """Which probabilities (b, h, i, j) of a [B, Hq, Nq, Nk] P dropout keeps.

    fa's definition (docs/dialect.md): Philox4x32-10 keyed by the seed's low
    and high 32 bits, on the counter (j, i, h, b); kept when the first word
    x has (x >> 8) * 2^-24 >= p rounded to float32.
    """
    mask32 = np.uint64(0xFFFFFFFF)
    grids = np.meshgrid(*(np.arange(n, dtype=np.uint64) for n in shape), indexing="ij")
    b, h, i, j = (g & mask32 for g in grids)
    c0, c1, c2, c3 = j, i, h, b
    key0, key1 = np.uint64(seed & 0xFFFFFFFF), np.uint64((seed >> 32) & 0xFFFFFFFF)
    for round_ in range(10):
        if round_ > 0:
            key0 = (key0 + np.uint64(0x9E3779B9)) & mask32
            key1 = (key1 + np.uint64(0xBB67AE85)) & mask32
        m0 = np.uint64(0xD2511F53) * c0
        m1 = np.uint64(0xCD9E8D57) * c2
        c0, c1, c2, c3 = (
            (m1 >> np.uint64(32)) ^ c1 ^ key0,
            m1 & mask32,
            (m0 >> np.uint64(32)) ^ c3 ^ key1,
            m0 & mask32,
        )
    uniform = (c0 >> np.uint64(8)).astype(np.float64) * 2.0**-24
    return uniform >= float(np.float32(p))


class _Arith:
    """The arithmetic of a reference: float64 exact, or f32 rounding to a dtype."""

    def __init__(self, precision: Any) -> None:
        self.exact = precision is None
        self.float = np.dtype(np.float64 if self.exact else np.float32)
        self.dtype = None if self.exact else np_dtype(precision)

    def __call__(self, x: Any) -> np.ndarray:
        """x in the arithmetic's float type."""
        return np.asarray(x).astype(self.float)

    def round(self, x: np.ndarray, dtype: Any = None) -> np.ndarray:
        """x rounded to the dtype (to `dtype` if given); unchanged when exact."""
        if self.exact:
            return x
        return x.astype(dtype if dtype is not None else self.dtype).astype(self.float)

    def result(self, x: np.ndarray, dtype: Any = None) -> np.ndarray:
        return x if self.exact else x.astype(dtype if dtype is not None else self.dtype)


def _scores(
    arith: _Arith,
    q: np.ndarray,
    k: np.ndarray,
    *,
    causal: str,
    scale: float | None,
    window: tuple[int, int] | None,
    softcap: float | None,
    alibi_slopes: Any,
    bias: Any,
    score_mod: Callable[..., np.ndarray] | None,
    score_mod_grad: Callable[..., np.ndarray] | None = None,
    mask_mod: Callable[..., np.ndarray] | None,
) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """The masked scores (-inf where masked) of q [B, Hq, Nq, D] and k (repeated
    to Hq heads), and the derivatives of a score with respect to q.k and to
    its value after the bias (score_mod's), and the mask, in `arith`."""
    batch, heads_q, nq, d = q.shape
    nk = k.shape[2]
    if scale is None:
        scale = 1.0 / np.sqrt(d)

    s = arith(scale) * (q @ k.swapaxes(-1, -2))
    dscore = np.full(s.shape, arith(scale))  # d s / d (q.k)
    if softcap is not None:
        cap = arith(softcap)
        t = np.tanh(s / cap)
        s, dscore = cap * t, dscore * (1 - t * t)
    b = np.arange(batch)[:, None, None, None]
    h = np.arange(heads_q)[None, :, None, None]
    i = np.arange(nq)[None, None, :, None]
    j = np.arange(nk)[None, None, None, :]
    if alibi_slopes is not None:
        slopes = arith(alibi_slopes)
        slopes = slopes[None, :, None, None] if slopes.ndim == 1 else slopes[:, :, None, None]
        s = s - slopes * arith(np.abs(i + nk - nq - j))
    if bias is not None:
        s = s + arith(bias)
    dmod = np.ones_like(s)  # d s / d (s after the bias)
    if score_mod is not None:
        if score_mod_grad is not None:
            dmod = arith(np.broadcast_to(score_mod_grad(s, b, h, i, j), s.shape))
        s = arith(np.broadcast_to(score_mod(s, b, h, i, j), s.shape))

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
    return np.where(keep, s, -np.inf), dscore, dmod, keep


def _softmax(arith: _Arith, s: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """exp(s - max), its row sum and the lse (-inf for a row with nothing kept)."""
    if s.shape[-1]:
        m = s.max(axis=-1, keepdims=True)
    else:
        m = np.full(s.shape[:-1] + (1,), -np.inf, arith.float)
    m = np.where(np.isfinite(m), m, arith(0))
    p = np.exp(s - m)  # exp(-inf) = 0
    row_sum = p.sum(axis=-1, keepdims=True)
    with np.errstate(divide="ignore"):
        lse = np.where(row_sum > 0, m + np.log(np.where(row_sum > 0, row_sum, 1)), -np.inf)
    return p, row_sum, lse.astype(arith.float)


def _dropout_scale(
    arith: _Arith, shape: tuple[int, ...], dropout_p: float, dropout_seed: int
) -> np.ndarray | None:
    """Each probability's factor under dropout: 1 / (1 - p) or 0 (None without)."""
    if not dropout_p:
        return None
    keep = dropout_keep(dropout_seed, shape, dropout_p)
    return np.where(keep, arith(1.0 / (1.0 - dropout_p)), arith(0))


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
    dropout_p: float = 0.0,
    dropout_seed: int = 0,
    precision: Any = None,
) -> tuple[np.ndarray, np.ndarray]:
    """(O, lse): exact in float64, or the low-precision reference of `precision`.

    Low precision (docs/accuracy.md): scores accumulated in f32 and the variant
    applied in f32; the softmax in f32 (row max, p = exp(s - max), the row
    sum of the f32 p); P rounded to the dtype (then times the dropout
    factor, in f32) before P V, accumulated in f32; O = acc / sum rounded to the dtype; lse =
    max + log(sum) in f32.
    """
    arith = _Arith(precision)
    q, k, v = (arith(x) for x in (q, k, v))
    group = q.shape[1] // k.shape[1]
    k = np.repeat(k, group, axis=1)  # query head h reads k/v head h // group
    v = np.repeat(v, group, axis=1)
    s, _, _, _ = _scores(
        arith,
        q,
        k,
        causal=causal,
        scale=scale,
        window=window,
        softcap=softcap,
        alibi_slopes=alibi_slopes,
        bias=bias,
        score_mod=score_mod,
        mask_mod=mask_mod,
    )
    p, row_sum, lse = _softmax(arith, s)
    # Dropout's factor applies to the rounded P (1 / (1 - p) would push the
    # largest P past 1, where a kernel's rounding is twice as coarse).
    dropout = _dropout_scale(arith, s.shape, dropout_p, dropout_seed)
    p_kept = arith.round(p) if dropout is None else arith.round(p) * dropout
    o = (p_kept @ v) / np.where(row_sum > 0, row_sum, arith(1))
    return arith.result(o), arith.result(lse[..., 0], np.float32)


def _sum_to(x: np.ndarray, shape: tuple[int, ...]) -> np.ndarray:
    """x summed over the dims a tensor of `shape` broadcasts along to x's shape."""
    x = x.sum(axis=tuple(range(x.ndim - len(shape))))
    dims = tuple(d for d, n in enumerate(shape) if n == 1 and x.shape[d] != 1)
    return x.sum(axis=dims, keepdims=True) if dims else x


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
    dropout_p: float = 0.0,
    dropout_seed: int = 0,
    return_dbias: bool = False,
    precision: Any = None,
) -> tuple[np.ndarray, ...]:
    """(dQ, dK, dV[, dBias]) of ``sum(O * dout)``, O as :func:`reference` defines it.

    ``score_mod_grad(s, b, h, i, j)`` is d score_mod / d s (required with a
    score_mod). Gradients of K/V heads shared by several query heads are
    summed over them; dBias (``return_dbias``) over the dims the bias
    broadcasts along. Exact in float64, or the low-precision reference of
    `precision` (docs/accuracy.md): P = exp(s - lse) in f32 with the row's
    own f32 lse, O recomputed and rounded to the dtype, D = rowsum(dO * O),
    dP = dO V and dS = P (dP - D) (times score_mod') in f32; the score
    gradient (dS times the scale and softcap's derivative) rounded to the
    dtype before dQ = dS K and dK = dS^T Q, P (then times the dropout
    factor) before dV = P^T dO; every sum in f32; the results rounded to the dtype (dBias to the
    bias's).
    """
    assert score_mod is None or score_mod_grad is not None, "a score_mod needs its score_mod_grad"
    assert bias is not None or not return_dbias, "return_dbias needs a bias"
    arith = _Arith(precision)
    bias_dtype = np.asarray(bias).dtype if bias is not None else None
    if bias_dtype is not None and bias_dtype.name not in ("float32", "float16", "bfloat16"):
        bias_dtype = None  # rounded to the inputs' dtype then
    q, k, v, dout = (arith(x) for x in (q, k, v, dout))
    batch, heads_q, nq, d = q.shape
    heads_kv = k.shape[1]
    group = heads_q // heads_kv
    kr, vr = np.repeat(k, group, axis=1), np.repeat(v, group, axis=1)

    # The forward again, keeping each step's derivative.
    s, dscore, dmod, keep = _scores(
        arith,
        q,
        kr,
        causal=causal,
        scale=scale,
        window=window,
        softcap=softcap,
        alibi_slopes=alibi_slopes,
        bias=bias,
        score_mod=score_mod,
        score_mod_grad=score_mod_grad,
        mask_mod=mask_mod,
    )
    p, row_sum, lse = _softmax(arith, s)
    masked_row = row_sum == 0
    if arith.exact:
        p = p / np.where(masked_row, 1.0, row_sum)
    else:
        p = np.where(masked_row, arith(0), np.exp(s - np.where(masked_row, arith(0), lse)))
    dropout = _dropout_scale(arith, s.shape, dropout_p, dropout_seed)
    p_kept = arith.round(p) if dropout is None else arith.round(p) * dropout

    # Softmax backward, then the chain rule through the score's steps.
    dp = dout @ vr.swapaxes(-1, -2)
    if dropout is not None:
        dp = dp * dropout
    if arith.exact:
        dsum = (p * dp).sum(axis=-1, keepdims=True)  # = rowsum(dO * O)
    else:
        o, _ = reference(
            q.astype(arith.dtype),
            k.astype(arith.dtype),
            v.astype(arith.dtype),
            causal=causal,
            scale=scale,
            window=window,
            softcap=softcap,
            alibi_slopes=alibi_slopes,
            bias=bias,
            score_mod=score_mod,
            mask_mod=mask_mod,
            dropout_p=dropout_p,
            dropout_seed=dropout_seed,
            precision=precision,
        )
        dsum = (dout * arith(o)).sum(axis=-1, keepdims=True)
    ds = np.where(keep, p * (dp - dsum) * dmod, arith(0))  # d / d (s after the bias)
    dqk = arith.round(ds * dscore)  # d / d (q.k)
    dq = dqk @ kr
    dk = dqk.swapaxes(-1, -2) @ q
    dv = p_kept.swapaxes(-1, -2) @ dout

    def per_kv_head(x: np.ndarray) -> np.ndarray:
        return x.reshape(batch, heads_kv, group, *x.shape[2:]).sum(axis=2)

    grads = tuple(arith.result(x) for x in (dq, per_kv_head(dk), per_kv_head(dv)))
    if not return_dbias:
        return grads
    return (*grads, arith.result(_sum_to(ds, np.shape(bias)), bias_dtype))


def check_attention(q: Any, k: Any, v: Any, o: Any, lse: Any = None, **options: Any) -> None:
    """Checks O (and lse, when given) of attention on numpy q, k, v with
    `options` (:func:`reference`'s) by :func:`check`, in q's precision."""
    exact = reference(q, k, v, **options)
    lowp = reference(q, k, v, precision=np.asarray(q).dtype, **options)
    check("O", o, exact[0], lowp[0])
    if lse is not None:
        check("lse", lse, exact[1], lowp[1])


def check_attention_grad(
    q: Any, k: Any, v: Any, dout: Any, grads: tuple[Any, ...], **options: Any
) -> None:
    """Checks (dQ, dK, dV[, dBias]) of attention on numpy q, k, v and the
    output gradient dout with `options` (:func:`reference_grad`'s) by
    :func:`check`, in q's precision."""
    dbias = len(grads) == 4
    exact = reference_grad(q, k, v, dout, return_dbias=dbias, **options)
    lowp = reference_grad(
        q, k, v, dout, return_dbias=dbias, precision=np.asarray(q).dtype, **options
    )
    for name, got, want, base in zip(("dQ", "dK", "dV", "dBias"), grads, exact, lowp):
        check(name, got, want, base)
