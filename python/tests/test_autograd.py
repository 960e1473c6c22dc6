"""fa.attention under torch autograd and torch.compile (CPU).

Gradients of FA's backward kernel are checked against torch's own autograd
through attention computed in float64 (SDPA, or an explicit softmax for the
variants SDPA lacks) and the low-precision reference of reference.py, as
docs/accuracy.md says. Skipped where torch is not installed (CI installs only
numpy, ml_dtypes and pytest).
"""

from __future__ import annotations

import math
from typing import Any, Callable

import numpy as np
import pytest

torch = pytest.importorskip("torch")

import fa  # noqa: E402
from reference import check, np_dtype, reference_grad  # noqa: E402
from reference import reference as numpy_reference  # noqa: E402


def reference(
    q: Any,
    k: Any,
    v: Any,
    *,
    causal: Any = False,
    scale: float | None = None,
    window: tuple[int, int] | None = None,
    softcap: float | None = None,
    bias: Any = None,
    alibi_slopes: Any = None,
    score_mod: Callable[..., Any] | None = None,
    mask_mod: Callable[..., Any] | None = None,
) -> Any:
    """Attention in float64 with torch ops (autograd gives its gradients)."""
    group = q.shape[1] // k.shape[1]
    k, v = k.repeat_interleave(group, dim=1), v.repeat_interleave(group, dim=1)
    nq, nk = q.shape[2], k.shape[2]
    s = (scale or 1 / math.sqrt(q.shape[-1])) * q @ k.transpose(-1, -2)
    if softcap is not None:
        s = softcap * torch.tanh(s / softcap)
    b = torch.arange(q.shape[0]).view(-1, 1, 1, 1)
    h = torch.arange(q.shape[1]).view(1, -1, 1, 1)
    i = torch.arange(nq).view(1, 1, -1, 1)
    j = torch.arange(nk).view(1, 1, 1, -1)
    if alibi_slopes is not None:
        s = s - alibi_slopes.double().view(1, -1, 1, 1) * (i + nk - nq - j).abs()
    if bias is not None:
        s = s + bias.double()
    if score_mod is not None:
        s = score_mod(s, b, h, i, j)
    keep = torch.ones(s.shape, dtype=torch.bool)
    if causal in (True, "top_left"):
        keep &= j <= i
    elif causal == "bottom_right":
        keep &= j <= i + nk - nq
    if window is not None:
        keep &= (j >= i + nk - nq - window[0]) & (j <= i + nk - nq + window[1])
    if mask_mod is not None:
        keep &= mask_mod(b, h, i, j)
    p = torch.softmax(s.masked_fill(~keep, -math.inf), dim=-1).nan_to_num(0.0)
    return p @ v


def inputs(
    b: int, hq: int, hkv: int, nq: int, nk: int, d: int, dtype: Any = torch.float32
) -> tuple[Any, Any, Any]:
    gen = torch.Generator().manual_seed(0)
    # [B, N, H, D] storage seen as [B, H, N, D]: autograd through strided views.
    return tuple(
        torch.randn(b, n, h, d, generator=gen).to(dtype).transpose(1, 2).requires_grad_()
        for n, h in ((nq, hq), (nk, hkv), (nk, hkv))
    )  # type: ignore[return-value]


def numpy(t: Any) -> np.ndarray:
    """A tensor's values in its dtype (bfloat16 as ml_dtypes'); numpy arrays as they are."""
    if not isinstance(t, torch.Tensor):
        return np.asarray(t)
    t = t.detach()
    if t.dtype == torch.bfloat16:
        return t.float().numpy().astype(np_dtype("bfloat16"))
    return t.numpy()


def f64(t: Any) -> np.ndarray:
    return t.detach().double().numpy()


def numpy_options(options: dict[str, Any]) -> dict[str, Any]:
    """fa.attention's options as reference.py takes them (tensors as numpy)."""
    out = {
        key: numpy(val) if isinstance(val, torch.Tensor) else val for key, val in options.items()
    }
    if "causal" in out:
        out["causal"] = {False: "none", True: "top_left"}.get(out["causal"], out["causal"])
    return out


def check_grads(
    q: Any,
    k: Any,
    v: Any,
    fa_options: dict[str, Any],
    ref_options: dict[str, Any] | None = None,
    lowp_options: dict[str, Any] | None = None,
) -> None:
    """O and the gradients of sum(O * dO) against :func:`reference` (float64,
    `ref_options`) and the low-precision reference (`lowp_options`, reference.py's;
    by default the others with tensors as numpy arrays)."""
    gen = torch.Generator().manual_seed(1)
    o = fa.attention(q, k, v, **fa_options)
    do = torch.randn(o.shape, generator=gen)
    (o.float() * do).sum().backward()
    dout = do.to(q.dtype)  # the gradient of O that FA's backward gets, in O's dtype
    ref_options = ref_options if ref_options is not None else fa_options
    ref_inputs = [x.detach().double().requires_grad_() for x in (q, k, v)]
    want = reference(*ref_inputs, **ref_options)
    (want * dout.double()).sum().backward()
    if lowp_options is None:
        lowp_options = numpy_options(ref_options)
    args = [numpy(x) for x in (q, k, v)]
    precision = args[0].dtype
    forward = {key: val for key, val in lowp_options.items() if key != "score_mod_grad"}
    lowp_o, _ = numpy_reference(*args, precision=precision, **forward)
    lowp = reference_grad(*args, numpy(dout), precision=precision, **lowp_options)
    check("O", f64(o), f64(want), lowp_o)
    for name, x, ref, base in zip(("dQ", "dK", "dV"), (q, k, v), ref_inputs, lowp):
        assert x.grad is not None and x.grad.dtype == x.dtype and x.grad.shape == x.shape
        check(name, f64(x.grad), f64(ref.grad), base)


@pytest.mark.parametrize("causal", [False, True, "bottom_right"])
def test_grads_causal_gqa(causal: Any) -> None:
    check_grads(*inputs(2, 4, 2, 20, 31, 16), {"causal": causal})


def test_grads_match_sdpa() -> None:
    q, k, v = inputs(2, 4, 4, 24, 24, 32)
    o = fa.attention(q, k, v, causal=True)
    o.square().sum().backward()
    ref = [x.detach().double().requires_grad_() for x in (q, k, v)]
    want = torch.nn.functional.scaled_dot_product_attention(*ref, is_causal=True)
    want.square().sum().backward()
    # The low-precision gradients of sum(O^2): dO = 2 O, O its own.
    args = [numpy(x) for x in (q, k, v)]
    lowp_o, _ = numpy_reference(*args, causal="top_left", precision="float32")
    lowp = reference_grad(*args, 2 * lowp_o, causal="top_left", precision="float32")
    for name, x, r, base in zip(("dQ", "dK", "dV"), (q, k, v), ref, lowp):
        check(name, f64(x.grad), f64(r.grad), base)


def test_grads_bf16() -> None:
    check_grads(*inputs(1, 2, 1, 17, 17, 16, torch.bfloat16), {"causal": "bottom_right"})


def test_grads_softcap_window_bias_alibi() -> None:
    gen = torch.Generator().manual_seed(3)
    bias = torch.randn(1, 4, 18, 21, generator=gen) * 0.5
    slopes = torch.tensor([0.5, 0.25, 0.125, 0.0625])
    options = {
        "softcap": 5.0,
        "window": (6, 2),
        "scale": 0.3,
        "bias": bias,
        "alibi_slopes": slopes,
    }
    check_grads(*inputs(2, 4, 2, 18, 21, 8), options)


def test_grads_score_mod_and_mask_mod() -> None:
    def score_mod(s: Any, b: Any, h: Any, q_idx: Any, kv_idx: Any) -> Any:
        return s * (1 + 0.25 * h) - 0.05 * fa.abs(q_idx - kv_idx)

    def mask_mod(b: Any, h: Any, q_idx: Any, kv_idx: Any) -> Any:
        return (q_idx // 8 == kv_idx // 8) | (kv_idx < 2)

    check_grads(
        *inputs(1, 3, 3, 24, 24, 16),
        {"score_mod": score_mod, "mask_mod": mask_mod},
        {
            "score_mod": lambda s, b, h, i, j: s * (1 + 0.25 * h) - 0.05 * (i - j).abs(),
            "mask_mod": lambda b, h, i, j: (i // 8 == j // 8) | (j < 2),
        },
        {
            "score_mod": lambda s, b, h, i, j: s * (1 + 0.25 * h) - 0.05 * np.abs(i - j),
            "score_mod_grad": lambda s, b, h, i, j: 1 + 0.25 * h,
            "mask_mod": lambda b, h, i, j: (i // 8 == j // 8) | (j < 2),
        },
    )


def test_only_inputs_that_require_grad_get_one() -> None:
    q, k, v = inputs(1, 2, 2, 8, 8, 8)
    k = k.detach()
    fa.attention(q, k, v).sum().backward()
    assert q.grad is not None and v.grad is not None and k.grad is None


def test_lse_has_no_gradient() -> None:
    q, k, v = inputs(1, 2, 2, 8, 8, 8)
    o, lse = fa.attention(q, k, v, return_lse=True)
    assert o.requires_grad and not lse.requires_grad


def test_no_grad_mode_and_inference() -> None:
    q, k, v = inputs(1, 2, 2, 8, 8, 8)
    with torch.no_grad():
        o = fa.attention(q, k, v)
    assert not o.requires_grad
    ref = reference(*(x.detach().double() for x in (q, k, v)))
    lowp, _ = numpy_reference(*(numpy(x) for x in (q, k, v)), precision="float32")
    check("O", f64(o), f64(ref), lowp)


@pytest.mark.parametrize(
    "shape", [(1, 4, 18, 21), (4, 1, 21), (18, 21)], ids=["per head", "per head key", "2d"]
)
def test_bias_gradient(shape: tuple[int, ...]) -> None:
    gen = torch.Generator().manual_seed(5)
    q, k, v = inputs(2, 4, 2, 18, 21, 8)
    bias = (torch.randn(shape, generator=gen) * 0.5).requires_grad_()
    do = torch.randn(2, 4, 18, 8, generator=gen)
    (fa.attention(q, k, v, bias=bias, causal="bottom_right") * do).sum().backward()
    ref = [x.detach().double().requires_grad_() for x in (q, k, v, bias)]
    want = reference(*ref[:3], bias=ref[3], causal="bottom_right")
    (want * do.double()).sum().backward()
    assert bias.grad is not None and bias.grad.shape == bias.shape
    lowp = reference_grad(
        *(numpy(x) for x in (q, k, v, do)),
        bias=numpy(bias),
        causal="bottom_right",
        return_dbias=True,
        precision="float32",
    )
    for name, x, r, base in zip(("dQ", "dK", "dV", "dBias"), (q, k, v, bias), ref, lowp):
        check(name, f64(x.grad), f64(r.grad), base)


def test_alibi_slopes_that_require_grad_are_refused() -> None:
    q, k, v = inputs(1, 2, 2, 8, 8, 8)
    slopes = torch.tensor([0.5, 0.25], requires_grad=True)
    with pytest.raises(
        NotImplementedError,
        match=r"^fa\.attention: alibi_slopes requires grad, but ALiBi slopes are constants in "
        r"FA, as in FlashAttention-2 \(pass alibi_slopes\.detach\(\), or a bias for a "
        r"learned positional term\)$",
    ):
        fa.attention(q, k, v, alibi_slopes=slopes)
    fa.attention(q, k, v, alibi_slopes=slopes.detach()).sum().backward()  # fine detached


def test_errors_keep_their_messages() -> None:
    q, k, v = inputs(1, 2, 2, 8, 8, 8)
    with pytest.raises(
        TypeError, match=r"^fa\.attention: k must have the dtype of q \(float32\), got float64$"
    ):
        fa.attention(q, k.double(), v)
    with pytest.raises(
        ValueError, match=r"^fa\.attention: window must be None or a pair \(left, right\)"
    ):
        fa.attention(q, k, v, window=(1, -1))


def test_custom_op_registration() -> None:
    q, k, v = inputs(1, 4, 2, 10, 12, 8)
    args = (q, k, v, None, None, "bottom_right", None, None, 20.0, 0.0, "", "", 0, [])
    torch.library.opcheck(torch.ops.fa.attention.default, args)
    bias = torch.randn(1, 4, 10, 12, requires_grad=True)
    args = (q, k, v, bias, None, "none", None, None, None, 0.0, "", "", 0, [])
    torch.library.opcheck(torch.ops.fa.attention.default, args)


def _loss(q: Any, k: Any, v: Any) -> Any:
    o = fa.attention(
        q,
        k,
        v,
        causal="bottom_right",
        softcap=20.0,
        score_mod=lambda s, b, h, q_idx, kv_idx: s - 0.1 * fa.abs(q_idx - kv_idx),
    )
    return (o * o).sum()


def test_torch_compile_has_no_graph_break() -> None:
    q, k, v = inputs(2, 4, 2, 10, 12, 16)
    explanation = torch._dynamo.explain(_loss)(q, k, v)
    assert explanation.graph_break_count == 0 and explanation.graph_count == 1


@pytest.mark.parametrize("backend", ["eager", "aot_eager"])
def test_torch_compile_fullgraph_matches_eager(backend: str) -> None:
    torch._dynamo.reset()
    q, k, v = inputs(2, 4, 2, 10, 12, 16)
    _loss(q, k, v).backward()
    want = [x.grad.clone() for x in (q, k, v)]
    for x in (q, k, v):
        x.grad = None
    compiled = torch.compile(_loss, backend=backend, fullgraph=True)
    compiled(q, k, v).backward()
    for x, w in zip((q, k, v), want):
        assert torch.equal(x.grad, w)


def test_dropout_backward_drops_what_the_forward_dropped() -> None:
    import numpy as np

    q, k, v = inputs(1, 2, 2, 12, 12, 8)
    options = {"dropout_p": 0.3, "dropout_seed": 5}
    o = fa.attention(q, k, v, **options)
    do = torch.randn(o.shape, generator=torch.Generator().manual_seed(2))
    (o * do).sum().backward()
    # The numpy path with the same seed: the same O and gradients, bit for bit.
    qn, kn, vn = (x.detach().numpy() for x in (q, k, v))
    on, lse = fa.attention(qn, kn, vn, return_lse=True, **options)
    assert np.array_equal(o.detach().numpy(), on)
    want = fa.attention_backward(qn, kn, vn, on, do.numpy(), lse, **options)
    for x, w in zip((q, k, v), want):
        assert np.array_equal(x.grad.numpy(), w)


def test_numpy_bias_with_torch_inputs() -> None:
    import numpy as np

    q, k, v = inputs(1, 2, 2, 6, 6, 8)
    bias = np.random.default_rng(0).standard_normal((6, 6)).astype(np.float32)
    check_grads(q, k, v, {"bias": bias}, {"bias": torch.from_numpy(bias)})
