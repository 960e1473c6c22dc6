"""fa.attention_backward and fa.Kernel.backward (numpy) against the references.

The references (reference.reference_grad, exact and low-precision) recompute
the softmax from Q, K, V and dO; the kernel uses the O and lse of fa's own
forward. Results are judged as docs/accuracy.md says.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest

import fa
from reference import check_attention, check_attention_grad, dropout_keep, randn, reference


def qkv_do(
    dtype: str, b: int, hq: int, hkv: int, nq: int, nk: int, d: int, dv: int | None = None
) -> tuple[np.ndarray, ...]:
    rng = np.random.default_rng(5)
    dv = dv or d
    return (
        randn(rng, (b, hq, nq, d), dtype),
        randn(rng, (b, hkv, nk, d), dtype),
        randn(rng, (b, hkv, nk, dv), dtype),
        randn(rng, (b, hq, nq, dv), dtype),
    )


def check(
    dtype: str,
    shape: tuple[int, ...],
    ref_options: dict[str, Any] | None = None,
    **options: Any,
) -> None:
    q, k, v, dout = qkv_do(dtype, *shape)
    o, lse = fa.attention(q, k, v, return_lse=True, **options)
    dq, dk, dv = fa.attention_backward(q, k, v, o, dout, lse, **options)
    for got, x in ((dq, q), (dk, k), (dv, v)):
        assert got.shape == x.shape and got.dtype == x.dtype and got.flags.c_contiguous
    ref = {key: val for key, val in options.items() if key in REF_KEYS}
    ref["causal"] = ref.get("causal") or "none"
    ref.update(ref_options or {})
    check_attention_grad(q, k, v, dout, (dq, dk, dv), **ref)


REF_KEYS = ("causal", "scale", "window", "softcap", "alibi_slopes", "bias")


@pytest.mark.parametrize("dtype", ["float32", "float16", "bfloat16"])
@pytest.mark.parametrize("causal", [False, "top_left", "bottom_right"])
def test_causal_gqa(dtype: str, causal: Any) -> None:
    check(dtype, (2, 4, 2, 20, 33, 16), causal=causal)


def test_mqa_with_more_queries_than_keys() -> None:
    # Nq > Nk bottom-right: the first rows are fully masked (O = 0, no gradient).
    check("float32", (1, 3, 1, 30, 12, 8), causal="bottom_right")


def test_softcap_window_scale_and_head_dim_v() -> None:
    check("float32", (2, 2, 2, 25, 25, 16, 8), softcap=4.0, window=(5, 2), scale=0.3)


def test_bias_and_alibi() -> None:
    rng = np.random.default_rng(9)
    bias = randn(rng, (1, 4, 18, 21), "float32", 0.5)
    slopes = np.array([0.5, 0.25, 0.125, 0.0625], np.float32)
    check("float32", (2, 4, 2, 18, 21, 8), bias=bias, alibi_slopes=slopes)


def test_score_mod_and_mask_mod() -> None:
    def score_mod(s: Any, b: Any, h: Any, q_idx: Any, kv_idx: Any) -> Any:
        return s * (1 + 0.25 * h) + fa.tanh(s) - 0.05 * fa.abs(q_idx - kv_idx)

    def mask_mod(b: Any, h: Any, q_idx: Any, kv_idx: Any) -> Any:
        return q_idx // 8 == kv_idx // 8

    check(
        "float32",
        (1, 3, 3, 24, 24, 16),
        ref_options={
            "score_mod": lambda s, b, h, i, j: s * (1 + 0.25 * h) + np.tanh(s) - 0.05 * abs(i - j),
            "score_mod_grad": lambda s, b, h, i, j: 1 + 0.25 * h + 1 - np.tanh(s) ** 2,
            "mask_mod": lambda b, h, i, j: i // 8 == j // 8,
        },
        score_mod=score_mod,
        mask_mod=mask_mod,
    )


def test_kernel_backward_with_strided_inputs() -> None:
    kernel = fa.compile("float32", 16, causal="bottom_right", return_lse=True)
    rng = np.random.default_rng(2)
    # [B, N, H, D] storage seen as [B, H, N, D].
    q, k, v, dout = (
        randn(rng, (2, n, h, 16), "float32").transpose(0, 2, 1, 3)
        for n, h in ((9, 4), (14, 2), (14, 2), (9, 4))
    )
    o, lse = kernel(q, k, v)
    dq, dk, dv = kernel.backward(q, k, v, o, dout, lse)
    check_attention_grad(q, k, v, dout, (dq, dk, dv), causal="bottom_right")


def test_empty_inputs_have_zero_gradients() -> None:
    q, k, v, dout = qkv_do("float32", 1, 2, 2, 0, 5, 8)
    o, lse = fa.attention(q, k, v, return_lse=True)
    dq, dk, dv = fa.attention_backward(q, k, v, o, dout, lse)
    assert dq.shape == (1, 2, 0, 8) and not dk.any() and not dv.any()


def test_errors() -> None:
    q, k, v, dout = qkv_do("float32", 1, 2, 2, 6, 6, 8)
    o, lse = fa.attention(q, k, v, return_lse=True)
    with pytest.raises(
        ValueError,
        match=r"^fa\.attention_backward: dout must have shape \[B, Hq, Nq, Dv\] = \[1, 2, 6, 8\], "
        r"got \(1, 2, 5, 8\)$",
    ):
        fa.attention_backward(q, k, v, o, dout[:, :, :5], lse)
    with pytest.raises(
        TypeError,
        match=r"^fa\.attention_backward: out must have the dtype of q \(float32\), got float16$",
    ):
        fa.attention_backward(q, k, v, o.astype(np.float16), dout, lse)
    with pytest.raises(
        TypeError, match=r"^fa\.attention_backward: lse must have float32, got float64$"
    ):
        fa.attention_backward(q, k, v, o, dout, lse.astype(np.float64))
    with pytest.raises(
        ValueError,
        match=r"^fa\.attention_backward: lse must have shape \[B, Hq, Nq\] = \[1, 2, 6\], got "
        r"\(1, 2, 6, 1\)$",
    ):
        fa.attention_backward(q, k, v, o, dout, lse[..., None])
    with pytest.raises(
        TypeError,
        match=r"^fa\.attention_backward: causal must be False, True \(top-left\), 'top_left' or "
        r"'bottom_right', got 1\.5$",
    ):
        fa.attention_backward(q, k, v, o, dout, lse, causal=1.5)
    kernel = fa.compile("float32", 8, bias="float32")
    with pytest.raises(
        ValueError,
        match=r"^fa\.Kernel\.backward: the kernel was compiled with a bias \[B, Hq, Nq, Nk\]; "
        r"pass bias=$",
    ):
        kernel.backward(q, k, v, o, dout, lse)


@pytest.mark.parametrize("dtype", ["float32", "float16", "bfloat16"])
def test_dropout(dtype: str) -> None:
    # The kernel's dropout mask, read through V = I (O = kept P / (1 - p)),
    # is the reference's (Philox); the backward must drop what the forward did.
    drop, seed = 0.3, 1234
    q, k, v, dout = qkv_do(dtype, 1, 2, 2, 16, 16, 8)
    eye = np.ascontiguousarray(np.broadcast_to(np.eye(16, dtype=np.float32), (1, 2, 16, 16)))
    q32, k32 = q.astype(np.float32), k.astype(np.float32)
    m = fa.attention(q32, k32, eye, dropout_p=drop, dropout_seed=seed)
    assert np.array_equal(m != 0, dropout_keep(seed, m.shape, drop))
    options = {"dropout_p": drop, "dropout_seed": seed}
    o, lse = fa.attention(q, k, v, return_lse=True, **options)
    dq, dk, dv = fa.attention_backward(q, k, v, o, dout, lse, **options)
    check_attention(q, k, v, o, lse, **options)
    check_attention_grad(q, k, v, dout, (dq, dk, dv), **options)


@pytest.mark.parametrize("bias_shape", [(1, 4, 18, 21), (18, 21), (4, 1, 21)])
def test_bias_gradient(bias_shape: tuple[int, ...]) -> None:
    q, k, v, dout = qkv_do("float32", 2, 4, 2, 18, 21, 8)
    bias = randn(np.random.default_rng(3), bias_shape, "float32", 0.5)
    o, lse = fa.attention(q, k, v, bias=bias, return_lse=True)
    dq, dk, dv, dbias = fa.attention_backward(q, k, v, o, dout, lse, bias=bias, return_dbias=True)
    assert dbias.shape == bias.shape and dbias.dtype == bias.dtype
    check_attention_grad(q, k, v, dout, (dq, dk, dv, dbias), bias=bias)
    # dBias along a random direction: a central difference of sum(O * dout),
    # O from the float64 reference.
    eps = 1e-3
    rng = np.random.default_rng(8)
    direction = rng.standard_normal(bias.shape)
    plus, _ = reference(q, k, v, bias=bias + eps * direction)
    minus, _ = reference(q, k, v, bias=bias - eps * direction)
    numeric = ((plus - minus) * dout).sum() / (2 * eps)
    assert abs((dbias * direction).sum() - numeric) < 1e-3 * abs(numeric) + 1e-4
