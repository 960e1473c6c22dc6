"""Captured arrays: modifiers indexing numpy arrays they close over.

Each array becomes one operand of the op (by identity), read in the regions
with tensor.extract; checked against the numpy references (docs/accuracy.md),
which run the same modifiers on index arrays.
"""

from __future__ import annotations

import numpy as np
import pytest

import fa
from reference import check_attention, check_attention_grad, randn, reference, rel_error

B, H, N, D = 2, 4, 77, 32
rng = np.random.default_rng(11)
# Documents of 1 to 11 tokens, and per-head tables of several dtypes.
doc = np.repeat(np.arange(N), rng.integers(1, 12, size=N))[:N].astype(np.int32)
tab = rng.uniform(-0.5, 0.5, size=H).astype(np.float32)
tab64 = tab.astype(np.float64)


def doc_mask(b, h, q_idx, kv_idx):  # type: ignore[no-untyped-def]
    return (doc[q_idx] == doc[kv_idx]) & (kv_idx <= q_idx)


def head_bias(score, b, h, q_idx, kv_idx):  # type: ignore[no-untyped-def]
    return score + tab[h] * (kv_idx - q_idx)


def qkv(dtype: str = "float32") -> tuple[np.ndarray, ...]:
    r = np.random.default_rng(3)
    return tuple(randn(r, (B, H, N, D), dtype) for _ in range(4))


@pytest.mark.parametrize("dtype", ["float32", "bfloat16"])
def test_document_mask_and_head_table(dtype: str) -> None:
    q, k, v, _ = qkv(dtype)
    o, lse = fa.attention(q, k, v, score_mod=head_bias, mask_mod=doc_mask, return_lse=True)
    check_attention(q, k, v, o, lse, score_mod=head_bias, mask_mod=doc_mask)
    # The captures matter: without the mask the result differs.
    want, _ = reference(q, k, v, score_mod=head_bias, mask_mod=doc_mask)
    assert rel_error(fa.attention(q, k, v, score_mod=head_bias), want) > 1e-2


def test_captures_are_operands_deduplicated_by_identity() -> None:
    kernel = fa.compile("float32", D, score_mod=head_bias, mask_mod=doc_mask)
    assert "captures(%capture0, %capture1 : tensor<?xf32>, tensor<?xi32>)" in kernel.mlir
    assert kernel.mlir.count("tensor.extract %cap1[") == 2  # doc[q_idx], doc[kv_idx]
    q, k, v, _ = qkv()
    check_attention(q, k, v, kernel(q, k, v), score_mod=head_bias, mask_mod=doc_mask)


def test_new_values_of_a_capture_need_no_recompile() -> None:
    # Same dtype and rank: the same cached kernel, reading the new array.
    q, k, v, _ = qkv()
    other = np.zeros(N, np.int32)  # one document
    o = fa.attention(q, k, v, mask_mod=lambda b, h, i, j: other[i] == other[j])
    check_attention(q, k, v, o)


def test_element_types_and_ranks() -> None:
    q, k, v, _ = qkv()
    table2 = rng.uniform(-1, 1, size=(H, N)).astype(np.float16)  # [h, kv_idx]
    keep = rng.uniform(size=N) < 0.8
    keep[0] = True
    shift = np.arange(H, dtype=np.uint8)

    def score_mod(s, b, h, i, j):  # type: ignore[no-untyped-def]
        return s + table2[h, j] + tab64[h] * shift[h]

    def mask_mod(b, h, i, j):  # type: ignore[no-untyped-def]
        return keep[j] | (i == j)

    o = fa.attention(q, k, v, score_mod=score_mod, mask_mod=mask_mod)
    check_attention(
        q,
        k,
        v,
        o,
        score_mod=lambda s, b, h, i, j: (
            s
            + table2.astype(np.float64)[h, j]
            + tab64.astype(np.float32).astype(np.float64)[h] * shift[h]
        ),
        mask_mod=mask_mod,
    )


def test_backward_reads_the_captures() -> None:
    q, k, v, dout = qkv()
    o, lse = fa.attention(q, k, v, score_mod=head_bias, mask_mod=doc_mask, return_lse=True)
    dq, dk, dv = fa.attention_backward(
        q, k, v, o, dout, lse, score_mod=head_bias, mask_mod=doc_mask
    )
    check_attention_grad(
        q,
        k,
        v,
        dout,
        (dq, dk, dv),
        score_mod=head_bias,
        score_mod_grad=lambda s, b, h, i, j: np.ones_like(s),
        mask_mod=doc_mask,
    )


def test_capture_errors() -> None:
    q = np.zeros((1, 2, 8, 8), np.float32)
    table2 = np.zeros((2, 8), np.float32)
    strings = np.array(["a", "b"])
    with pytest.raises(
        TypeError,
        match=r"indexing a captured array of shape \(2, 8\) with 3 indices \(give one per dim\)",
    ):
        fa.attention(q, q, q, score_mod=lambda s, b, h, i, j: s + table2[h, i, j])
    with pytest.raises(TypeError, match=r"a captured array of dtype str32 \(int8/16/32/64"):
        fa.attention(q, q, q, mask_mod=lambda b, h, i, j: strings[h] == 0)


# Traces reused (fa._core.check_options, fa._trace.trace_key): a lambda made
# anew each call is traced once, yet every call computes with what it reads
# now.


def _documents(sizes: list[int]) -> np.ndarray:
    return np.repeat(np.arange(len(sizes)), sizes)[:N].astype(np.int32)


def _call_with(ids: np.ndarray, q: np.ndarray, k: np.ndarray, v: np.ndarray) -> np.ndarray:
    # The same code each call, a new function object and a new array.
    return fa.attention(q, k, v, mask_mod=lambda b, h, i, j: ids[i] == ids[j])


def test_reused_trace_reads_each_calls_arrays() -> None:
    q, k, v, _ = qkv()
    for sizes in ([40, 37], [10, 20, 47], [77]):
        ids = _documents(sizes)
        o = _call_with(ids, q, k, v)
        check_attention(q, k, v, o, mask_mod=lambda b, h, i, j: ids[i] == ids[j])


def test_reused_trace_keys_scalars_by_value_and_arrays_by_aliasing() -> None:
    from fa import _core, _trace

    q, k, v, _ = qkv()
    for shift in (0, 5, 20):
        o = fa.attention(q, k, v, mask_mod=lambda b, h, i, j: j + shift <= i + 30)
        check_attention(q, k, v, o, mask_mod=lambda b, h, i, j: j + shift <= i + 30)
    ids = _documents([30, 47])
    same = lambda a, c: (lambda b, h, i, j: a[i] == c[j])  # noqa: E731
    # One array twice (one capture), then two arrays (two captures).
    assert _trace.trace_key((None, same(ids, ids))) != _trace.trace_key(
        (None, same(ids, ids.copy()))
    )
    for a, c in ((ids, ids), (ids, _documents([10, 67])), (ids, ids)):
        o = fa.attention(q, k, v, mask_mod=same(a, c))
        check_attention(q, k, v, o, mask_mod=same(a, c))
    # Scalars by value; arrays by dtype and shape, not identity or values.
    f = lambda s: (lambda b, h, i, j: j <= i + s)  # noqa: E731
    assert _trace.trace_key((None, f(1))) == _trace.trace_key((None, f(1)))
    assert _trace.trace_key((None, f(1))) != _trace.trace_key((None, f(2)))
    other = _documents([1, 76])
    assert _trace.trace_key((None, same(ids, ids))) == _trace.trace_key(
        (None, same(other, other))
    )
    assert _trace.trace_key((None, same(ids, ids))) != _trace.trace_key(
        (None, same(ids.astype(np.int64), ids.astype(np.int64)))
    )
    assert _core.check_options("t", False, None, None, None, 0.0, None, same(ids, ids)).captures == (
        ids,
    )


class _Config:
    shift = 0


def test_traces_of_unknown_reads_are_not_reused() -> None:
    from fa import _trace

    q, k, v, _ = qkv()
    config = _Config()
    # An object's attribute may change between calls: traced every call.
    assert _trace.trace_key((None, lambda b, h, i, j: j <= i + config.shift)) is None
    for shift in (0, 9):
        config.shift = shift
        o = fa.attention(q, k, v, mask_mod=lambda b, h, i, j: j <= i + config.shift)
        check_attention(q, k, v, o, mask_mod=lambda b, h, i, j: j <= i + shift)
    # A captured array's value read at trace time (a constant index) is a
    # constant of that trace: traced again when it changes.
    table = np.array([0.5, 0.25], np.float32)
    for value in (0.5, -2.0):
        table[0] = value
        o = fa.attention(q, k, v, score_mod=lambda s, b, h, i, j: s * table[0])
        check_attention(q, k, v, o, score_mod=lambda s, b, h, i, j: s * value)
