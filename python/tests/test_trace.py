"""Tracing score_mod / mask_mod into MLIR, and what cannot be traced."""

from __future__ import annotations

import math
import re
from typing import Any, Callable

import numpy as np
import pytest

import fa
from fa._trace import trace_mask_mod, trace_score_mod


def ops(body: str) -> list[str]:
    return [line.strip() for line in body.strip().splitlines()]


def test_score_mod_text() -> None:
    body = trace_score_mod(lambda score, b, h, q_idx, kv_idx: score - 0.5 * (q_idx - kv_idx))
    assert ops(body) == [
        "%t0 = arith.subi %q_idx, %kv_idx : index",
        "%t1 = arith.constant 5.000000000e-01 : f32",
        "%t2 = arith.index_cast %t0 : index to i64",
        "%t3 = arith.sitofp %t2 : i64 to f32",
        "%t4 = arith.mulf %t1, %t3 : f32",
        "%t5 = arith.subf %score, %t4 : f32",
        "fa.yield %t5 : f32",
    ]


def test_mask_mod_text() -> None:
    body = trace_mask_mod(lambda b, h, q_idx, kv_idx: (kv_idx <= q_idx) | (h == 0))
    assert ops(body) == [
        "%t0 = arith.cmpi sle, %kv_idx, %q_idx : index",
        "%t1 = arith.constant 0 : index",
        "%t2 = arith.cmpi eq, %h, %t1 : index",
        "%t3 = arith.ori %t0, %t2 : i1",
        "fa.yield %t3 : i1",
    ]


def test_identity_and_constant_results() -> None:
    assert ops(trace_score_mod(lambda s, b, h, q, k: s)) == ["fa.yield %score : f32"]
    assert ops(trace_score_mod(lambda s, b, h, q, k: 1)) == [
        "%t0 = arith.constant 1.000000000e+00 : f32",
        "fa.yield %t0 : f32",
    ]
    assert ops(trace_mask_mod(lambda b, h, q, k: True)) == [
        "%t0 = arith.constant true",
        "fa.yield %t0 : i1",
    ]


def test_constants_take_the_kind_of_the_other_operand() -> None:
    body = trace_score_mod(lambda s, b, h, q, k: s * 2 + (q // 8) * 3)
    assert "arith.constant 2.000000000e+00 : f32" in body  # an int next to a score
    assert "arith.constant 8 : index" in body
    assert "arith.constant 3 : index" in body  # an int next to an index


def test_special_float_constants() -> None:
    body = trace_score_mod(lambda s, b, h, q, k: fa.where(q < k, -math.inf, s) + 1e-45)
    assert "arith.constant 0xFF800000 : f32" in body
    assert re.search(r"arith\.constant 1\.40129846[0-9]e-45 : f32", body)  # f32's smallest denormal


def test_mixed_kinds() -> None:
    body = trace_score_mod(lambda s, b, h, q, k: s + (q > k) + h / 2)
    assert "arith.uitofp" in body  # i1 -> f32
    assert "arith.divf" in body  # int / int is a float division
    body = trace_mask_mod(lambda b, h, q, k: ((q > k) + 1) == 2)
    assert "arith.index_castui" in body  # i1 -> index


def test_numpy_ufuncs_trace() -> None:
    body = trace_score_mod(lambda s, b, h, q, k: np.exp(s) + np.float32(2) * np.minimum(s, 1.0))
    assert "math.exp %score : f32" in body and "arith.minimumf" in body


def test_functions_compute_on_plain_numbers() -> None:
    assert fa.where(True, 1, 2) == 1
    assert fa.exp(0.0) == 1.0 and fa.abs(-3) == 3 and fa.maximum(2, 5) == 5
    np.testing.assert_array_equal(fa.where(np.array([True, False]), 1.0, 2.0), [1.0, 2.0])


TRACE_ERROR = r"^fa\.attention: score_mod cannot be traced: "
table = np.arange(4, dtype=np.float32)
python_list = [1.0, 2.0, 3.0, 4.0]

UNTRACEABLE: list[tuple[str, Callable[..., Any], str]] = [
    (
        "if",
        lambda s, b, h, q, k: s if q > k else -s,
        r"Python `if`/`and`/`or`/`not`/`bool\(\)` on a traced value",
    ),
    ("and", lambda s, b, h, q, k: s * ((q > k) and (k > 0)), r"Python `if`/`and`/`or`"),
    (
        "chained comparison",
        lambda s, b, h, q, k: fa.where(0 < q < k, s, 0.0),
        r"Python `if`/`and`/`or`",
    ),
    (
        "math.exp",
        lambda s, b, h, q, k: math.exp(s),
        r"float\(\)/int\(\) or a `math` function on a traced value",
    ),
    ("float()", lambda s, b, h, q, k: float(s), r"float\(\)/int\(\) or a `math` function"),
    (
        "list table",
        lambda s, b, h, q, k: s + python_list[h],
        r"captured tensors are read only by indexing them with traced values .*; a traced "
        r"value was used as a Python int or to index something else \(a list",
    ),
    (
        "captured array",
        lambda s, b, h, q, k: s * table,
        r"captured tensors are read only by indexing .* \(got a captured array of shape \(4,\)\)",
    ),
    (
        "captured array left",
        lambda s, b, h, q, k: table * s,
        r"captured tensors are read only by indexing .* \(got a captured array of shape \(4,\)\)",
    ),
    (
        "slice of a captured array",
        lambda s, b, h, q, k: s + table[:2][h],
        r"slicing a captured array \(index it with one value per dim\)",
    ),
    (
        "float index",
        lambda s, b, h, q, k: s + table[s],
        r"a float used as an index into a captured array",
    ),
    (
        "np.where",
        lambda s, b, h, q, k: np.where(q > k, s, 0.0),
        r"numpy function `np\.where` \(use fa\.where",
    ),
    ("np.sin", lambda s, b, h, q, k: np.sin(s), r"numpy function `np\.sin`"),
    ("& on a score", lambda s, b, h, q, k: s & 1, r"`&` on a float value"),
    ("~ on a score", lambda s, b, h, q, k: ~s, r"`~` on a float value"),
    ("<<", lambda s, b, h, q, k: s + (q << 1), r"the operator `<<`"),
    ("round", lambda s, b, h, q, k: round(s), r"round\(\) on a traced value"),
    ("string", lambda s, b, h, q, k: s + "x", r"a value of type str"),
    ("returns None", lambda s, b, h, q, k: None, r"the function returned None"),
    (
        "returns a condition",
        lambda s, b, h, q, k: q > k,
        r"the function returned a condition \(i1\)",
    ),
    ("where on a score", lambda s, b, h, q, k: fa.where(s, s, 0.0), r"fa\.where needs a condition"),
    ("int ** traced", lambda s, b, h, q, k: s + 2**q, r"`\*\*` on an integer with a traced"),
]


@pytest.mark.parametrize("name,fn,message", UNTRACEABLE, ids=[u[0] for u in UNTRACEABLE])
def test_untraceable_score_mod(name: str, fn: Callable[..., Any], message: str) -> None:
    q = np.zeros((1, 4, 4, 8), np.float32)
    with pytest.raises(TypeError, match=TRACE_ERROR + message):
        fa.attention(q, q, q, score_mod=fn)


def test_untraceable_mask_mod_results() -> None:
    q = np.zeros((1, 1, 4, 8), np.float32)
    with pytest.raises(
        TypeError,
        match=(
            r"^fa\.attention: mask_mod cannot be traced: the function returned an integer "
            r"\(index\) value; mask_mod returns a condition"
        ),
    ):
        fa.attention(q, q, q, mask_mod=lambda b, h, q_idx, kv_idx: q_idx - kv_idx)
    with pytest.raises(
        TypeError, match=r"^fa\.compile: mask_mod cannot be traced: the function returned a float"
    ):
        fa.compile("float32", 8, mask_mod=lambda b, h, q_idx, kv_idx: 1.0)


def test_values_cannot_escape_a_trace() -> None:
    kept: list[Any] = []

    def keep(b: Any, h: Any, q: Any, k: Any) -> bool:
        kept.append(q)
        return True

    trace_mask_mod(keep)
    with pytest.raises(TypeError, match="a value traced in another function"):
        trace_mask_mod(lambda b, h, q, k: q < kept[0])


def test_signatures() -> None:
    q = np.zeros((1, 1, 4, 8), np.float32)
    with pytest.raises(
        TypeError,
        match=re.escape(
            "fa.attention: score_mod must take 5 positional arguments (score, b, h, q_idx, "
            "kv_idx) -> score, "
            "got a function of (score, b)"
        ),
    ):
        fa.attention(q, q, q, score_mod=lambda score, b: score)
    with pytest.raises(
        TypeError,
        match=re.escape(
            "fa.attention: mask_mod must take 4 positional arguments (b, h, q_idx, kv_idx) -> keep"
        ),
    ):
        fa.attention(q, q, q, mask_mod=lambda score, b, h, q_idx, kv_idx: True)
    with pytest.raises(
        TypeError,
        match=re.escape(
            "fa.attention: score_mod must be a function (score, b, h, q_idx, kv_idx) -> score, "
            "got int"
        ),
    ):
        fa.attention(q, q, q, score_mod=3)
    # *args and defaults are fine.
    fa.attention(
        q,
        q,
        q,
        score_mod=lambda *args: args[0],
        mask_mod=lambda b, h, q_idx, kv_idx, extra=1: q_idx >= 0,
    )


def test_invalid_mlir_text_is_an_fa_error() -> None:
    q = np.zeros((1, 1, 4, 8), np.float32)
    with pytest.raises(fa.FAError, match=r"^fa::compile: invalid attention spec\n"):
        fa.attention(
            q, q, q, score_mod="%r = arith.cmpf olt, %score, %score : f32\nfa.yield %r : i1"
        )
