"""Captured torch tensors: score_mod / mask_mod indexing tensors they close over.

Through ``torch.ops.fa.attention`` (the op's ``captures`` argument) on CPU,
under autograd (no gradient of the captures) and torch.compile (the captures
are graph inputs, not constants), checked against float64 attention whose
modifiers index the same tensors and the low-precision reference of
reference.py (docs/accuracy.md), whose modifiers index their numpy views.
Skipped where torch is not installed.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np
import pytest

torch = pytest.importorskip("torch")

import fa  # noqa: E402
from fa import _core  # noqa: E402
from reference import check, np_dtype, reference_grad  # noqa: E402
from reference import reference as numpy_reference  # noqa: E402

B, H, N, D = 2, 4, 45, 16
gen = torch.Generator().manual_seed(11)
# Documents of 1 to 9 tokens and a per-head table.
doc = torch.repeat_interleave(torch.arange(N), torch.randint(1, 10, (N,), generator=gen))[:N]
doc = doc.to(torch.int32)
tab = torch.rand(H, generator=gen) - 0.5


def doc_mask(b: Any, h: Any, q_idx: Any, kv_idx: Any) -> Any:
    return (doc[q_idx] == doc[kv_idx]) & (kv_idx <= q_idx)


def head_bias(score: Any, b: Any, h: Any, q_idx: Any, kv_idx: Any) -> Any:
    return score + tab[h] * (kv_idx - q_idx)


def reference(q: Any, k: Any, v: Any, score_mod: Any = None, mask_mod: Any = None) -> Any:
    """Attention in float64 with torch ops (the modifiers index with index tensors)."""
    group = q.shape[1] // k.shape[1]
    k, v = k.repeat_interleave(group, dim=1), v.repeat_interleave(group, dim=1)
    s = q @ k.transpose(-1, -2) / math.sqrt(q.shape[-1])
    b = torch.arange(q.shape[0]).view(-1, 1, 1, 1)
    h = torch.arange(q.shape[1]).view(1, -1, 1, 1)
    i = torch.arange(q.shape[2]).view(1, 1, -1, 1)
    j = torch.arange(k.shape[2]).view(1, 1, 1, -1)
    if score_mod is not None:
        s = score_mod(s, b, h, i, j).double()
    if mask_mod is not None:
        s = s.masked_fill(~mask_mod(b, h, i, j), -math.inf)
    return torch.softmax(s, dim=-1).nan_to_num(0.0) @ v


def inputs(dtype: Any = torch.float32, hkv: int = H) -> tuple[Any, Any, Any]:
    g = torch.Generator().manual_seed(0)
    return tuple(  # type: ignore[return-value]
        torch.randn(B, h, N, D, generator=g).to(dtype).requires_grad_() for h in (H, hkv, hkv)
    )


def rel(a: Any, b: Any) -> float:
    return float((a.detach().double() - b.detach()).norm() / b.detach().norm())


def numpy(t: Any) -> np.ndarray:
    """A tensor's values in its dtype (bfloat16 as ml_dtypes')."""
    t = t.detach()
    if t.dtype == torch.bfloat16:
        return t.float().numpy().astype(np_dtype("bfloat16"))
    return t.numpy()


def f64(t: Any) -> np.ndarray:
    return t.detach().double().numpy()


def check_o(o: Any, want: Any, q: Any, k: Any, v: Any, **options: Any) -> None:
    """O against float64 `want` and the low-precision reference with numpy `options`."""
    args = [numpy(x) for x in (q, k, v)]
    lowp, _ = numpy_reference(*args, precision=args[0].dtype, **options)
    check("O", f64(o), f64(want), lowp)


# head_bias and doc_mask over numpy index arrays, reading the same tables.
NUMPY_MODS = {
    "score_mod": lambda s, b, h, i, j: s + tab.numpy()[h] * (j - i),
    "mask_mod": lambda b, h, i, j: (doc.numpy()[i] == doc.numpy()[j]) & (j <= i),
}


@pytest.mark.parametrize("dtype", [torch.float32, torch.bfloat16])
def test_document_mask_and_head_table_with_grads(dtype: Any) -> None:
    q, k, v = inputs(dtype, hkv=2)
    o = fa.attention(q, k, v, score_mod=head_bias, mask_mod=doc_mask)
    assert o.dtype == dtype
    do = torch.randn(o.shape, generator=torch.Generator().manual_seed(1))
    (o.float() * do).sum().backward()
    dout = do.to(dtype)  # the gradient of O that FA's backward gets, in O's dtype
    ref = [x.detach().double().requires_grad_() for x in (q, k, v)]
    want = reference(*ref, score_mod=head_bias, mask_mod=doc_mask)
    (want * dout.double()).sum().backward()
    check_o(o, want, q, k, v, **NUMPY_MODS)
    args = [numpy(x) for x in (q, k, v, dout)]
    lowp = reference_grad(
        *args,
        score_mod_grad=lambda s, b, h, i, j: np.ones_like(s),
        precision=args[0].dtype,
        **NUMPY_MODS,
    )
    for name, x, r, base in zip(("dQ", "dK", "dV"), (q, k, v), ref, lowp):
        assert x.grad is not None
        check(name, f64(x.grad), f64(r.grad), base)
    # The captures matter: without the mask the result differs.
    assert rel(fa.attention(q, k, v, score_mod=head_bias), want) > 1e-2


def test_captures_get_no_gradient() -> None:
    table = (torch.rand(H, generator=torch.Generator().manual_seed(2)) - 0.5).requires_grad_()
    q, k, v = inputs()
    o = fa.attention(q, k, v, score_mod=lambda s, b, h, i, j: s + table[h])
    o.sum().backward()
    assert table.grad is None and q.grad is not None


def test_new_values_are_read_on_every_call() -> None:
    # Same dtype and rank: the same cached kernel reads the tensor's current values.
    q, k, v = (x.detach() for x in inputs())
    ids = torch.zeros(N, dtype=torch.int64)

    def mask_mod(b: Any, h: Any, i: Any, j: Any) -> Any:
        return ids[i] == ids[j]

    def numpy_mask_mod(b: Any, h: Any, i: Any, j: Any) -> Any:
        return ids.numpy()[i] == ids.numpy()[j]

    check_o(fa.attention(q, k, v, mask_mod=mask_mod), reference(q, k, v), q, k, v)
    ids.copy_(torch.arange(N) // 5)
    want = reference(q, k, v, mask_mod=mask_mod)
    check_o(fa.attention(q, k, v, mask_mod=mask_mod), want, q, k, v, mask_mod=numpy_mask_mod)


def test_element_types_ranks_strides_and_globals() -> None:
    g = torch.Generator().manual_seed(4)
    table2 = (torch.rand(N, H, generator=g) - 0.5).to(torch.float16).t()  # [h, kv_idx], strided
    keep = torch.rand(N, generator=g) < 0.8
    shift = torch.arange(H, dtype=torch.uint8)
    scale64 = torch.rand(H, generator=g, dtype=torch.float64)

    def score_mod(s: Any, b: Any, h: Any, i: Any, j: Any) -> Any:
        return s + table2[h, j] + scale64[h] * shift[h] + tab[h]

    def mask_mod(b: Any, h: Any, i: Any, j: Any) -> Any:
        return keep[j] | (i == j)

    q, k, v = (x.detach() for x in inputs())
    o = fa.attention(q, k, v, score_mod=score_mod, mask_mod=mask_mod)
    want = reference(
        q.double(),
        k.double(),
        v.double(),
        score_mod=lambda s, b, h, i, j: (
            s + table2.double()[h, j] + scale64.float().double()[h] * shift[h] + tab[h]
        ),
        mask_mod=mask_mod,
    )
    t2, sc, sh, tb, kp = (x.numpy() for x in (table2, scale64, shift, tab, keep))
    check_o(
        o,
        want,
        q,
        k,
        v,
        score_mod=lambda s, b, h, i, j: (
            s + t2.astype(np.float64)[h, j] + sc.astype(np.float32)[h] * sh[h] + tb[h]
        ),
        mask_mod=lambda b, h, i, j: kp[j] | (i == j),
    )


def test_numpy_captures_with_torch_inputs() -> None:
    ids = (np.arange(N) // 7).astype(np.int32)
    q, k, v = (x.detach() for x in inputs())
    o = fa.attention(q, k, v, mask_mod=lambda b, h, i, j: ids[i] == ids[j])
    tids = torch.from_numpy(ids)
    want = reference(
        q.double(), k.double(), v.double(), mask_mod=lambda b, h, i, j: tids[i] == tids[j]
    )
    check_o(o, want, q, k, v, mask_mod=lambda b, h, i, j: ids[i] == ids[j])


def test_capture_on_another_device_is_refused() -> None:
    table = torch.zeros(H, device="meta")
    q, k, v = (x.detach() for x in inputs())
    message = (
        r"^fa\.attention: captured tensor 0 \(indexed by score_mod / mask_mod\) is on meta, "
        r"q on cpu: captures must be on q's device"
    )
    with pytest.raises(ValueError, match=message):
        fa.attention(q, k, v, score_mod=lambda s, b, h, i, j: s + table[h])


def test_custom_op_registration_with_captures() -> None:
    q, k, v = inputs(hkv=2)
    o = _core.check_options("fa.attention", False, None, None, None, 0.0, head_bias, doc_mask)
    assert o.captures == (tab, doc)
    args = (q, k, v, None, None, "none", None, None, None, 0.0, o.score_mod, o.mask_mod, 0)
    torch.library.opcheck(torch.ops.fa.attention.default, (*args, [tab, doc]))


def _loss(q: Any, k: Any, v: Any) -> Any:
    o = fa.attention(q, k, v, score_mod=head_bias, mask_mod=doc_mask)
    return (o * o).sum()


def test_torch_compile_has_no_graph_break() -> None:
    torch._dynamo.reset()
    q, k, v = inputs()
    explanation = torch._dynamo.explain(_loss)(q, k, v)
    assert explanation.graph_break_count == 0 and explanation.graph_count == 1


@pytest.mark.parametrize("backend", ["eager", "aot_eager"])
def test_torch_compile_fullgraph_matches_eager(backend: str) -> None:
    torch._dynamo.reset()
    q, k, v = inputs()
    _loss(q, k, v).backward()
    want = [x.grad.clone() for x in (q, k, v)]
    for x in (q, k, v):
        x.grad = None
    compiled = torch.compile(_loss, backend=backend, fullgraph=True)
    compiled(q, k, v).backward()
    for x, w in zip((q, k, v), want):
        assert torch.equal(x.grad, w)


def test_torch_compile_reads_the_captures_as_inputs() -> None:
    # The captured tensor is a graph input: changing its values in place
    # changes the compiled function's result (a constant would not).
    # (A modifier that closes over tensors is defined outside the compiled
    # function: Dynamo cannot hand a closure it created itself to the tracer.)
    torch._dynamo.reset()
    ids = torch.zeros(N, dtype=torch.int32)

    def mask_mod(b: Any, h: Any, i: Any, j: Any) -> Any:
        return ids[i] == ids[j]

    def f(q: Any, k: Any, v: Any) -> Any:
        return fa.attention(q, k, v, mask_mod=mask_mod)

    def numpy_mask_mod(b: Any, h: Any, i: Any, j: Any) -> Any:
        return ids.numpy()[i] == ids.numpy()[j]

    compiled = torch.compile(f, backend="aot_eager", fullgraph=True)
    q, k, v = (x.detach() for x in inputs())
    check_o(compiled(q, k, v), reference(q, k, v), q, k, v)
    ids.copy_(torch.arange(N, dtype=torch.int32) // 6)
    want = reference(q, k, v, mask_mod=mask_mod)
    check_o(compiled(q, k, v), want, q, k, v, mask_mod=numpy_mask_mod)
