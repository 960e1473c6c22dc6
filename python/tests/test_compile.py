"""fa.attention under torch.compile with the default backend (inductor),
``fullgraph=True`` (a graph break raises) and ``dynamic=True``: one graph,
compiled once, runs every batch size and sequence length, forward and
backward through autograd.

Results are judged against reference.py (float64 and the low-precision
reference, docs/accuracy.md's criterion). A recompilation raises
(``error_on_recompile``) and Dynamo must count one graph. The shapes' first
call has no two sizes alike: Dynamo's duck sizing would tie equal sizes
together (B = Hkv, say) and guard on it. Skipped where torch is not
installed; the CUDA variants are marked ``gpu`` (conftest.py).
"""

from __future__ import annotations

import re
from typing import Any, Callable

import numpy as np
import pytest

torch = pytest.importorskip("torch")

import fa  # noqa: E402
from reference import check_attention, check_attention_grad, np_dtype  # noqa: E402

# (B, Nq, Nk): B and N change from call to call, heads and head dim do not.
SHAPES = [(3, 12, 15), (2, 20, 23), (5, 33, 31)]
HQ, HKV = 4, 2


def numpy(t: Any) -> np.ndarray:
    """A tensor's values on the host, in its dtype (bfloat16 as ml_dtypes')."""
    t = t.detach().cpu()
    if t.dtype == torch.bfloat16:
        return t.float().numpy().astype(np_dtype("bfloat16"))
    return t.numpy()


def compile_fresh(fn: Callable[..., Any]) -> Callable[..., Any]:
    """``torch.compile(fn)`` as the tests compile it, with Dynamo's caches and counters reset."""
    torch._dynamo.reset()
    torch._dynamo.utils.counters.clear()
    return torch.compile(fn, fullgraph=True, dynamic=True)


def inputs(
    b: int, nq: int, nk: int, d: int, dtype: Any, device: str, layout: str = "bhsd"
) -> tuple[Any, Any, Any]:
    gen = torch.Generator().manual_seed(1000 * b + nq)

    def make(h: int, n: int) -> Any:
        shape = (b, h, n, d) if layout == "bhsd" else (b, n, h, d)
        return torch.randn(shape, generator=gen).to(dtype).to(device).requires_grad_()

    return make(HQ, nq), make(HKV, nk), make(HKV, nk)


def check_compiled(
    fn: Callable[..., Any],
    reference: dict[str, Any],
    *,
    lse: bool = False,
    d: int = 16,
    dtype: Any = None,
    device: str = "cpu",
    layout: str = "bhsd",
) -> None:
    """Compiles ``fn(q, k, v)`` (fa.attention with some options) once and runs
    it, forward and backward, on every shape of SHAPES (Q, K, V and O in
    ``layout``): O (and the lse) and dQ, dK, dV against reference.py with its
    options ``reference``."""
    dtype = dtype or torch.float32
    compiled = compile_fresh(fn)
    with torch._dynamo.config.patch(error_on_recompile=True):
        for b, nq, nk in SHAPES:
            q, k, v = inputs(b, nq, nk, d, dtype, device, layout)
            result = compiled(q, k, v)
            o, lse_ = result if lse else (result, None)
            gen = torch.Generator().manual_seed(b)
            do = torch.randn(o.shape, generator=gen).to(device, dtype)
            o.backward(do)
            assert o.shape == ((b, HQ, nq, d) if layout == "bhsd" else (b, nq, HQ, d))
            assert o.is_contiguous() and all(x.grad.is_contiguous() for x in (q, k, v))
            # reference.py takes [B, H, N, D].
            perm = (0, 1, 2, 3) if layout == "bhsd" else (0, 2, 1, 3)
            args = [numpy(x).transpose(perm) for x in (q, k, v)]
            grads = tuple(numpy(x.grad).transpose(perm) for x in (q, k, v))
            forward = {key: val for key, val in reference.items() if key != "score_mod_grad"}
            lse_ = None if lse_ is None else numpy(lse_)
            check_attention(*args, numpy(o).transpose(perm), lse_, **forward)
            check_attention_grad(*args, numpy(do).transpose(perm), grads, **reference)
    counters = torch._dynamo.utils.counters
    assert counters["stats"]["unique_graphs"] == 1, dict(counters["stats"])
    assert not counters["graph_break"], dict(counters["graph_break"])


def test_compiled_once_across_batch_and_length() -> None:
    check_compiled(lambda q, k, v: fa.attention(q, k, v, causal=True), {"causal": "top_left"})


def test_compiled_once_with_options() -> None:
    def attention(q: Any, k: Any, v: Any) -> Any:
        return fa.attention(
            q,
            k,
            v,
            causal="bottom_right",
            scale=0.3,
            softcap=5.0,
            window=(6, 2),
            return_lse=True,
        )

    options = {"causal": "bottom_right", "scale": 0.3, "softcap": 5.0, "window": (6, 2)}
    check_compiled(attention, options, lse=True)


def rel_bias(score: Any, b: Any, h: Any, q_idx: Any, kv_idx: Any) -> Any:
    return score * (1 + 0.25 * h) - 0.05 * fa.abs(q_idx - kv_idx)


def blocks(b: Any, h: Any, q_idx: Any, kv_idx: Any) -> Any:
    return (q_idx // 8 == kv_idx // 8) | (kv_idx < 2)


SCORE_MOD_REFERENCE = {
    "score_mod": lambda s, b, h, i, j: s * (1 + 0.25 * h) - 0.05 * np.abs(i - j),
    "score_mod_grad": lambda s, b, h, i, j: 1 + 0.25 * h,
    "mask_mod": lambda b, h, i, j: (i // 8 == j // 8) | (j < 2),
}


def test_compiled_once_with_score_mod_and_mask_mod() -> None:
    check_compiled(
        lambda q, k, v: fa.attention(q, k, v, score_mod=rel_bias, mask_mod=blocks),
        SCORE_MOD_REFERENCE,
    )


def test_compiled_once_in_bshd() -> None:
    def attention(q: Any, k: Any, v: Any) -> Any:
        return fa.attention(q, k, v, causal="bottom_right", layout="bshd", return_lse=True)

    check_compiled(attention, {"causal": "bottom_right"}, lse=True, layout="bshd")


def test_compiled_out_writes_in_place(monkeypatch: pytest.MonkeyPatch) -> None:
    """out= under torch.compile (the op fa::attention_out, which mutates it):
    the kernel reads Q, K, V and writes O where the caller has them."""
    seen: list[tuple[int, ...]] = []
    forward = fa._core.forward

    def recorded(api: str, q: Any, k: Any, v: Any, *args: Any) -> Any:
        out = args[7]  # (bias, alibi_slopes, options, captures, seed, return_lse, bshd, out)
        if out is not None:
            seen.append((q.data_ptr(), k.data_ptr(), v.data_ptr(), out.data_ptr()))
        return forward(api, q, k, v, *args)

    monkeypatch.setattr(fa._core, "forward", recorded)
    compiled = compile_fresh(
        lambda q, k, v, out: fa.attention(q, k, v, causal=True, layout="bshd", out=out)
    )
    with torch._dynamo.config.patch(error_on_recompile=True), torch.no_grad():
        for b, nq, nk in SHAPES:
            q, k, v = (x.detach() for x in inputs(b, nq, nk, 16, torch.float32, "cpu", "bshd"))
            out = torch.full((b, nq, HQ, 16), float("nan"))
            assert compiled(q, k, v, out) is out
            assert seen[-1] == (q.data_ptr(), k.data_ptr(), v.data_ptr(), out.data_ptr())
            want = fa.attention(bshd_as_bhsd(q), bshd_as_bhsd(k), bshd_as_bhsd(v), causal=True)
            assert torch.equal(bshd_as_bhsd(out), want)
    assert torch._dynamo.utils.counters["stats"]["unique_graphs"] == 1


def bshd_as_bhsd(x: Any) -> Any:
    return x.transpose(1, 2)


@pytest.mark.parametrize(
    "options, message",
    [
        ({"window": (4, -1)}, "fa.attention: window must be None or a pair (left, right)"),
        ({"causal": "diagonal"}, "fa.attention: causal must be False, True (top-left), 'top_left'"),
        ({"scale": -1.0}, "fa.attention: scale must be None or a finite number > 0, got -1.0"),
        ({"causal": 3}, "fa.attention: causal must be False, True (top-left), 'top_left'"),
        ({"softcap": "big"}, "fa.attention: softcap must be None or a finite number > 0"),
    ],
)
def test_a_bad_option_fails_the_compile_naming_it(options: dict[str, Any], message: str) -> None:
    """Under torch.compile the op (its fake implementation, while tracing) or
    the conversion of a value of a wrong type raises fa.attention's error;
    Dynamo reports it in its own exception."""
    compiled = compile_fresh(lambda q: fa.attention(q, q, q, **options))
    with pytest.raises(Exception, match=re.escape(message)):
        compiled(torch.randn(3, 4, 12, 16))


# CUDA: the GPU kernels (bfloat16, D = 64), compiled once as well.


@pytest.mark.gpu
def test_compiled_once_with_options_on_the_gpu() -> None:
    def attention(q: Any, k: Any, v: Any) -> Any:
        return fa.attention(
            q, k, v, causal="bottom_right", softcap=20.0, window=(9, 3), return_lse=True
        )

    options = {"causal": "bottom_right", "softcap": 20.0, "window": (9, 3)}
    check_compiled(attention, options, lse=True, d=64, dtype=torch.bfloat16, device="cuda")


@pytest.mark.gpu
def test_compiled_once_in_bshd_on_the_gpu() -> None:
    def attention(q: Any, k: Any, v: Any) -> Any:
        return fa.attention(q, k, v, causal="bottom_right", layout="bshd", return_lse=True)

    check_compiled(
        attention,
        {"causal": "bottom_right"},
        lse=True,
        d=64,
        dtype=torch.bfloat16,
        device="cuda",
        layout="bshd",
    )


@pytest.mark.gpu
def test_compiled_once_with_score_mod_on_the_gpu() -> None:
    check_compiled(
        lambda q, k, v: fa.attention(q, k, v, score_mod=rel_bias, mask_mod=blocks),
        SCORE_MOD_REFERENCE,
        d=64,
        dtype=torch.bfloat16,
        device="cuda",
    )
