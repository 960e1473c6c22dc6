"""fa.attention on CUDA torch tensors (the GPU kernel), against the references.

Results are judged as docs/accuracy.md says: against float64 (torch on the
CPU, or reference.py) and the low-precision reference of reference.py. Runs
where torch with a CUDA device is importable (the GPU machine); every test is
marked ``gpu``: skipped elsewhere, failed where FA_REQUIRE_GPU=1
(conftest.py).
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np
import pytest

import fa
from reference import check, np_dtype, reference_grad
from reference import reference as numpy_reference

try:
    import torch
except ImportError:  # the gpu mark skips (or fails) every test
    torch = None

pytestmark = pytest.mark.gpu

DTYPES = ["bfloat16", "float16"]


def reference(q, k, v, causal: str | None):
    """Attention in float64 on the CPU, bottom-right causal like fa
    (differentiable: reference_grads)."""
    q, k, v = (t.double().cpu() for t in (q, k, v))
    group = q.shape[1] // k.shape[1]
    k = k.repeat_interleave(group, dim=1)
    v = v.repeat_interleave(group, dim=1)
    s = q @ k.transpose(-1, -2) / math.sqrt(q.shape[-1])
    nq, nk = q.shape[2], k.shape[2]
    if causal:
        i = torch.arange(nq).view(-1, 1)
        j = torch.arange(nk).view(1, -1)
        keep = j <= i + (nk - nq if causal == "bottom_right" else 0)
        s = s.masked_fill(~keep, float("-inf"))
    return torch.softmax(s, dim=-1) @ v, torch.logsumexp(s, dim=-1)


def reference_grads(q, k, v, dout, causal: str | None) -> list[Any]:
    """(dQ, dK, dV) in float64 on the CPU: autograd through reference() with
    dO = dout."""
    leaves = [x.detach().double().cpu().requires_grad_() for x in (q, k, v)]
    (reference(*leaves, causal)[0] * dout.double().cpu()).sum().backward()
    return [x.grad for x in leaves]


def rel(a, b) -> float:
    return float((a.double().cpu() - b).norm() / b.norm())


def numpy(t) -> np.ndarray:
    """A tensor's values on the host, in its dtype (bfloat16 as ml_dtypes')."""
    t = t.detach().cpu()
    if t.dtype == torch.bfloat16:
        return t.float().numpy().astype(np_dtype("bfloat16"))
    return t.numpy()


def f64(t) -> np.ndarray:
    return t.detach().double().cpu().numpy()


def low_precision(q, k, v, **options: Any) -> tuple[np.ndarray, np.ndarray]:
    """(O, lse) of the low-precision reference of q's dtype (reference.py's options)."""
    return numpy_reference(numpy(q), numpy(k), numpy(v), precision=numpy(q).dtype, **options)


def low_precision_grad(q, k, v, dout, **options: Any) -> tuple[np.ndarray, ...]:
    """(dQ, dK, dV[, dBias]) of the low-precision reference of q's dtype."""
    args = (numpy(q), numpy(k), numpy(v), numpy(dout))
    return reference_grad(*args, precision=numpy(q).dtype, **options)


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("causal", [False, "top_left", "bottom_right"])
def test_matches_float64(dtype, causal) -> None:
    dtype = getattr(torch, dtype)
    gen = torch.Generator(device="cuda").manual_seed(0)
    # [B, N, H, D] storage seen as [B, H, N, D]: any batch/head/row strides.
    q = torch.randn(2, 100, 8, 128, device="cuda", dtype=dtype, generator=gen).transpose(1, 2)
    k = torch.randn(2, 150, 2, 128, device="cuda", dtype=dtype, generator=gen).transpose(1, 2)
    v = torch.randn(2, 150, 2, 128, device="cuda", dtype=dtype, generator=gen).transpose(1, 2)
    o, lse = fa.attention(q, k, v, causal=causal, return_lse=True)
    assert o.device.type == "cuda" and o.dtype == dtype and lse.dtype == torch.float32
    ref_o, ref_lse = reference(q, k, v, causal)
    lowp_o, lowp_lse = low_precision(q, k, v, causal=causal or "none")
    check("O", f64(o), f64(ref_o), lowp_o)
    check("lse", f64(lse), f64(ref_lse), lowp_lse)


@pytest.mark.parametrize("dtype", DTYPES)
def test_dk_and_dv_differ(dtype) -> None:
    """DeepSeek's head dims (D = 192 for Q and K, Dv = 128 for V and O), causal
    GQA with ragged N: the forward, and the backward through autograd."""
    dtype = getattr(torch, dtype)
    gen = torch.Generator(device="cuda").manual_seed(2)

    def make(h: int, n: int, d: int):
        x = torch.randn(2, h, n, d, device="cuda", dtype=dtype, generator=gen)
        return x.requires_grad_()

    q, k, v = make(8, 333, 192), make(2, 400, 192), make(2, 400, 128)
    o, lse = fa.attention(q, k, v, causal="bottom_right", return_lse=True)
    assert o.shape == (2, 8, 333, 128) and o.dtype == dtype
    ref_o, ref_lse = reference(q, k, v, "bottom_right")
    lowp_o, lowp_lse = low_precision(q, k, v, causal="bottom_right")
    check("O", f64(o), f64(ref_o), lowp_o)
    check("lse", f64(lse), f64(ref_lse), lowp_lse)

    do = torch.randn(2, 8, 333, 128, device="cuda", dtype=dtype, generator=gen)
    (o.float() * do.float()).sum().backward()
    torch.cuda.synchronize()
    ref = reference_grads(q, k, v, do, "bottom_right")
    lowp = low_precision_grad(q, k, v, do, causal="bottom_right")
    for name, x, r, base in zip(("dQ", "dK", "dV"), (q, k, v), ref, lowp):
        assert x.grad.shape == x.shape
        check(name, f64(x.grad), f64(r), base)


def test_dv_above_d_has_no_gpu_backward() -> None:
    """The GPU backward works at D's width with V and dO zero past Dv: Dv > D
    is refused, by name, when the backward runs (the forward takes it)."""
    q = torch.randn(1, 2, 64, 64, device="cuda", dtype=torch.bfloat16, requires_grad=True)
    v = torch.randn(1, 2, 64, 128, device="cuda", dtype=torch.bfloat16)
    o = fa.attention(q, q, v)
    message = (
        r"head dims must each be one of 32, 64, 80, 96, 128, 192, 256, with Dv <= D, "
        r"on the GPU \(got D = 64, Dv = 128\)"
    )
    with pytest.raises(RuntimeError, match=message):
        o.float().sum().backward()


def test_runs_on_the_current_stream() -> None:
    q = torch.randn(1, 4, 256, 64, device="cuda", dtype=torch.bfloat16)
    stream = torch.cuda.Stream()
    with torch.cuda.stream(stream):
        o = fa.attention(q, q, q)
    stream.synchronize()
    check("O", f64(o), f64(reference(q, q, q, None)[0]), low_precision(q, q, q)[0])


def test_gpu_kernel_object() -> None:
    kernel = fa.compile(torch.float16, 64, causal="bottom_right", target="auto")
    assert kernel.target.startswith("sm_")
    q = torch.randn(1, 2, 70, 64, device="cuda", dtype=torch.float16)
    o = kernel(q, q, q)
    want = reference(q, q, q, "bottom_right")[0]
    check("O", f64(o), f64(want), low_precision(q, q, q, causal="bottom_right")[0])


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("d", [64, 80, 192, 256])
def test_autograd_on_the_gpu(dtype, d) -> None:
    """loss.backward() through fa.attention runs the GPU backward (D = 192 and
    256: dK and dV in two column passes)."""
    dtype = getattr(torch, dtype)
    gen = torch.Generator(device="cuda").manual_seed(1)

    def make(n: int, h: int):
        x = torch.randn(2, n, h, d, device="cuda", dtype=dtype, generator=gen)
        return x.transpose(1, 2).detach().requires_grad_()

    q, k, v = make(100, 8), make(150, 2), make(150, 2)
    do = torch.randn(2, 8, 100, d, device="cuda", dtype=torch.float32, generator=gen)
    o = fa.attention(q, k, v, causal="bottom_right")
    (o.float() * do).sum().backward()
    torch.cuda.synchronize()

    dout = do.to(dtype)  # the gradient of O that FA's backward gets, in O's dtype
    ref = reference_grads(q, k, v, dout, "bottom_right")
    lowp = low_precision_grad(q, k, v, dout, causal="bottom_right")
    for name, x, r, base in zip(("dQ", "dK", "dV"), (q, k, v), ref, lowp):
        assert x.grad.device.type == "cuda" and x.grad.dtype == dtype
        check(name, f64(x.grad), f64(r), base)


@pytest.mark.parametrize("compiled", [False, True])
def test_autograd_of_a_sum_on_the_gpu(compiled) -> None:
    """out.sum().backward(): autograd's dO is expanded (stride 0 everywhere),
    which the GPU backward gets as a copy with rows of unit stride."""
    gen = torch.Generator(device="cuda").manual_seed(5)
    q, k, v = (
        torch.randn(1, 4, 70, 64, device="cuda", dtype=torch.bfloat16, generator=gen)
        .requires_grad_()
        for _ in range(3)
    )
    f = torch.compile(fa.attention, fullgraph=True, backend="aot_eager") if compiled else fa.attention
    f(q, k, v, causal="top_left").sum().backward()
    dout = torch.ones(1, 4, 70, 64, device="cuda", dtype=torch.bfloat16)
    ref = reference_grads(q, k, v, dout, "top_left")
    lowp = low_precision_grad(q, k, v, dout, causal="top_left")
    for name, x, r, base in zip(("dQ", "dK", "dV"), (q, k, v), ref, lowp):
        check(name, f64(x.grad), f64(r), base)


def test_atomic_dq_and_deterministic_algorithms() -> None:
    """Under torch.use_deterministic_algorithms(True) the GPU backward gives
    bitwise the same dQ run to run (its dQ kernel); the default (atomic dQ on
    sm_90a for this variant) and a kernel compiled with atomic_dq=True agree
    with it to rounding, and deterministic=True to the bit."""
    gen = torch.Generator(device="cuda").manual_seed(9)
    q, k, v, do = (
        torch.randn(2, 4, 300, 64, device="cuda", dtype=torch.bfloat16, generator=gen)
        for _ in range(4)
    )

    def dq() -> torch.Tensor:
        x = q.detach().requires_grad_()
        fa.attention(x, k, v, causal=True).backward(do)
        return x.grad

    torch.use_deterministic_algorithms(True)
    try:
        first, second = dq(), dq()
    finally:
        torch.use_deterministic_algorithms(False)
    assert torch.equal(first.view(torch.int16), second.view(torch.int16))
    assert rel(dq(), first.double().cpu()) < 1e-2
    kernel = fa.compile(torch.bfloat16, 64, causal=True, return_lse=True, atomic_dq=True,
                        target="auto")
    assert "atomic_dq=True" in repr(kernel.spec)
    o, lse = kernel(q, k, v)
    atomic = kernel.backward(q, k, v, o, do, lse)[0]
    assert rel(atomic, first.double().cpu()) < 1e-2
    kernel = fa.compile(torch.bfloat16, 64, causal=True, return_lse=True, deterministic=True,
                        target="auto")
    o, lse = kernel(q, k, v)
    assert torch.equal(kernel.backward(q, k, v, o, do, lse)[0].view(torch.int16),
                       first.view(torch.int16))


@pytest.mark.parametrize("dtype", DTYPES)
def test_scored_kernel(dtype) -> None:
    """Bias [1, Hq, 1, Nk], per-batch ALiBi and a score_mod on the GPU (the scored kernel)."""
    dtype = getattr(torch, dtype)
    gen = torch.Generator(device="cuda").manual_seed(2)
    b, hq, hkv, nq, nk, d = 2, 4, 2, 77, 131, 64
    q = torch.randn(b, hq, nq, d, device="cuda", dtype=dtype, generator=gen)
    k = torch.randn(b, hkv, nk, d, device="cuda", dtype=dtype, generator=gen)
    v = torch.randn(b, hkv, nk, d, device="cuda", dtype=dtype, generator=gen)
    bias = torch.randn(1, hq, 1, nk, device="cuda", dtype=dtype, generator=gen)
    slopes = torch.rand(b, hq, device="cuda", dtype=torch.float32, generator=gen)
    o = fa.attention(
        q,
        k,
        v,
        causal="bottom_right",
        alibi_slopes=slopes,
        bias=bias,
        score_mod=lambda s, bi, h, i, j: s + 0.25 * fa.tanh(s) - 0.01 * (i - j),
    )
    qd, kd, vd = (t.double().cpu() for t in (q, k, v))
    kd = kd.repeat_interleave(hq // hkv, dim=1)
    vd = vd.repeat_interleave(hq // hkv, dim=1)
    i = torch.arange(nq).view(-1, 1).double()
    j = torch.arange(nk).view(1, -1).double()
    s = qd @ kd.transpose(-1, -2) / math.sqrt(d)
    s = s - slopes.double().cpu().view(b, hq, 1, 1) * (i + nk - nq - j).abs()
    s = s + bias.double().cpu()
    s = s + 0.25 * torch.tanh(s) - 0.01 * (i - j)
    s = s.masked_fill(j > i + nk - nq, float("-inf"))
    lowp, _ = low_precision(
        q,
        k,
        v,
        causal="bottom_right",
        alibi_slopes=numpy(slopes),
        bias=numpy(bias),
        score_mod=lambda s, bi, h, i, j: s + 0.25 * np.tanh(s) - 0.01 * (i - j),
    )
    check("O", f64(o), f64(torch.softmax(s, dim=-1) @ vd), lowp)


@pytest.mark.parametrize("layout", ["keys_strided", "rows_padded"])
@pytest.mark.parametrize("causal", [False, "bottom_right"])
def test_bias_of_any_key_stride(layout, causal) -> None:
    """A bias whose keys are not adjacent (a transposed view) and one whose
    keys are but whose rows are padded (a row stride that is no multiple of
    Nk): the kernel reads it through its stride parameters, over tiles inside
    [0, Nk) and ragged ones."""
    dtype = torch.bfloat16
    gen = torch.Generator(device="cuda").manual_seed(5)
    b, hq, nq, nk, d = 2, 4, 200, 333, 64
    q = torch.randn(b, hq, nq, d, device="cuda", dtype=dtype, generator=gen)
    k = torch.randn(b, hq, nk, d, device="cuda", dtype=dtype, generator=gen)
    v = torch.randn(b, hq, nk, d, device="cuda", dtype=dtype, generator=gen)
    if layout == "keys_strided":
        storage = torch.randn(1, hq, nk, nq, device="cuda", generator=gen)
        bias = storage.transpose(-1, -2)
        assert bias.stride(-1) == nq
    else:
        storage = torch.randn(1, hq, nq, nk + 7, device="cuda", generator=gen)
        bias = storage[..., :nk]
        assert bias.stride(-1) == 1 and bias.stride(-2) == nk + 7
    o = fa.attention(q, k, v, causal=causal, bias=bias)
    qd, kd, vd = (t.double().cpu() for t in (q, k, v))
    s = qd @ kd.transpose(-1, -2) / math.sqrt(d) + bias.double().cpu()
    if causal:
        i = torch.arange(nq).view(-1, 1)
        j = torch.arange(nk).view(1, -1)
        s = s.masked_fill(j > i + nk - nq, float("-inf"))
    lowp, _ = low_precision(q, k, v, causal=causal or "none", bias=numpy(bias.contiguous()))
    check("O", f64(o), f64(torch.softmax(s, dim=-1) @ vd), lowp)


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("bias_shape", [(2, 4, 77, 131), (1, 4, 1, 131), (2, 1, 77, 1)])
def test_autograd_with_bias_on_the_gpu(dtype, bias_shape) -> None:
    """The bias's gradient (summed over its broadcast dims) from the GPU backward."""
    dtype = getattr(torch, dtype)
    gen = torch.Generator(device="cuda").manual_seed(3)
    b, hq, hkv, nq, nk, d = 2, 4, 2, 77, 131, 64
    q = torch.randn(b, hq, nq, d, device="cuda", dtype=dtype, generator=gen)
    k = torch.randn(b, hkv, nk, d, device="cuda", dtype=dtype, generator=gen)
    v = torch.randn(b, hkv, nk, d, device="cuda", dtype=dtype, generator=gen)
    bias = torch.randn(*bias_shape, device="cuda", dtype=dtype, generator=gen)
    slopes = torch.rand(hq, device="cuda", dtype=torch.float32, generator=gen)
    do = torch.randn(b, hq, nq, d, device="cuda", dtype=torch.float32, generator=gen)
    for t in (q, k, v, bias):
        t.requires_grad_()
    o = fa.attention(q, k, v, causal="bottom_right", alibi_slopes=slopes, bias=bias)
    (o.float() * do).sum().backward()
    torch.cuda.synchronize()

    dout = do.to(dtype)  # the gradient of O that FA's backward gets, in O's dtype
    ref = [t.detach().double().cpu().requires_grad_() for t in (q, k, v, bias)]
    kr = ref[1].repeat_interleave(hq // hkv, dim=1)
    vr = ref[2].repeat_interleave(hq // hkv, dim=1)
    i = torch.arange(nq).view(-1, 1).double()
    j = torch.arange(nk).view(1, -1).double()
    s = ref[0] @ kr.transpose(-1, -2) / math.sqrt(d)
    s = s - slopes.double().cpu().view(1, hq, 1, 1) * (i + nk - nq - j).abs() + ref[3]
    masked = s.masked_fill(j > i + nk - nq, float("-inf"))
    (torch.softmax(masked, dim=-1) @ vr * dout.double().cpu()).sum().backward()
    lowp = low_precision_grad(
        q,
        k,
        v,
        dout,
        causal="bottom_right",
        alibi_slopes=numpy(slopes),
        bias=numpy(bias),
        return_dbias=True,
    )
    for name, x, r, base in zip(("dQ", "dK", "dV"), (q, k, v), ref, lowp):
        assert x.grad.device.type == "cuda" and x.grad.dtype == dtype
        assert x.grad.shape == r.grad.shape
        check(name, f64(x.grad), f64(r.grad), base)
    # A bias that broadcasts over the keys has a gradient of exactly 0
    # (softmax does not see a per-row constant); the kernel's and the
    # low-precision reference's are then rowsum(dO * (O - rounded O)), O's
    # rounding error, which the criterion compares.
    assert bias.grad.device.type == "cuda" and bias.grad.dtype == dtype
    assert bias.grad.shape == ref[3].grad.shape
    check("dBias", f64(bias.grad), f64(ref[3].grad), lowp[3])


# Captured tensors on the GPU: document ids (exactly N entries: ragged tiles
# read them clamped in range) and a per-head table, on q's device.
_N_CAP = 77
if torch is not None:
    _doc_gpu = torch.repeat_interleave(
        torch.arange(_N_CAP),
        torch.randint(1, 12, (_N_CAP,), generator=torch.Generator().manual_seed(9)),
    )[:_N_CAP].to(torch.int32)
    _tab_gpu = torch.linspace(-0.4, 0.4, 8)
    if torch.cuda.is_available():
        _doc_cuda, _tab_cuda = _doc_gpu.cuda(), _tab_gpu.cuda()


def _doc_mask_cuda(b, h, q_idx, kv_idx):
    return (_doc_cuda[q_idx] == _doc_cuda[kv_idx]) & (kv_idx <= q_idx)


def _head_bias_cuda(score, b, h, q_idx, kv_idx):
    return score + _tab_cuda[h] * (kv_idx - q_idx)


@pytest.mark.parametrize("dtype", DTYPES)
def test_captures_forward_and_autograd_on_the_gpu(dtype) -> None:
    dtype = getattr(torch, dtype)
    gen = torch.Generator(device="cuda").manual_seed(4)
    q = torch.randn(2, 8, _N_CAP, 64, device="cuda", dtype=dtype, generator=gen)
    k = torch.randn(2, 2, _N_CAP, 64, device="cuda", dtype=dtype, generator=gen)
    v = torch.randn(2, 2, _N_CAP, 64, device="cuda", dtype=dtype, generator=gen)
    for x in (q, k, v):
        x.requires_grad_()
    o = fa.attention(q, k, v, score_mod=_head_bias_cuda, mask_mod=_doc_mask_cuda)
    assert o.device.type == "cuda" and o.dtype == dtype
    do = torch.randn(o.shape, device="cuda", dtype=torch.float32, generator=gen)
    (o.float() * do).sum().backward()
    torch.cuda.synchronize()
    dout = do.to(dtype)  # the gradient of O that FA's backward gets, in O's dtype
    # float64 on the CPU, the same modifiers over index tensors and CPU tables.
    ref = [x.detach().double().cpu().requires_grad_() for x in (q, k, v)]
    kr, vr = (x.repeat_interleave(4, dim=1) for x in ref[1:])
    s = ref[0] @ kr.transpose(-1, -2) / 8.0
    h = torch.arange(8).view(1, -1, 1, 1)
    i, j = torch.arange(_N_CAP).view(-1, 1), torch.arange(_N_CAP).view(1, -1)
    s = s + _tab_gpu.double()[h] * (j - i)
    keep = (_doc_gpu[i] == _doc_gpu[j]) & (j <= i)
    want = torch.softmax(s.masked_fill(~keep, float("-inf")), dim=-1) @ vr
    (want * dout.double().cpu()).sum().backward()
    # The low-precision reference: the modifiers in numpy over the same tables.
    doc, tab = _doc_gpu.numpy(), _tab_gpu.numpy()
    options = {
        "score_mod": lambda s, b, h, i, j: s + tab[h] * (j - i),
        "mask_mod": lambda b, h, i, j: (doc[i] == doc[j]) & (j <= i),
    }
    check("O", f64(o), f64(want), low_precision(q, k, v, **options)[0])
    lowp = low_precision_grad(
        q, k, v, dout, score_mod_grad=lambda s, b, h, i, j: np.ones_like(s), **options
    )
    for name, x, r, base in zip(("dQ", "dK", "dV"), (q, k, v), ref, lowp):
        check(name, f64(x.grad), f64(r.grad), base)


def test_captures_must_be_on_qs_device() -> None:
    q = torch.zeros(1, 8, 16, 64, device="cuda", dtype=torch.bfloat16)
    with pytest.raises(ValueError, match=r"captured tensor 0 .* is on cpu, q on cuda:0"):
        fa.attention(q, q, q, score_mod=lambda s, b, h, i, j: s + _tab_gpu[h])


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("d", [64, 128])
def test_dropout_forward_matches_the_host(dtype, d) -> None:
    """The GPU kernel draws the host's Philox stream (the reference's,
    docs/dialect.md): O as the references with that dropout have it; lse is
    the undropped softmax's."""
    dtype = getattr(torch, dtype)
    gen = torch.Generator(device="cuda").manual_seed(5)
    q = torch.randn(2, 4, 129, d, device="cuda", dtype=dtype, generator=gen)
    k = torch.randn(2, 2, 200, d, device="cuda", dtype=dtype, generator=gen)
    v = torch.randn(2, 2, 200, d, device="cuda", dtype=dtype, generator=gen)
    options = {"causal": "bottom_right", "dropout_p": 0.2, "dropout_seed": 1234}
    o, lse = fa.attention(q, k, v, return_lse=True, **options)
    want, want_lse = numpy_reference(numpy(q), numpy(k), numpy(v), **options)
    lowp, lowp_lse = low_precision(q, k, v, **options)
    check("O", f64(o), want, lowp)
    check("lse", f64(lse), want_lse, lowp_lse)
    plain, plain_lse = fa.attention(q, k, v, causal="bottom_right", return_lse=True)
    assert rel(lse, plain_lse.double().cpu()) < 1e-6
    assert rel(o, plain.double().cpu()) > 0.1


@pytest.mark.parametrize("dtype", DTYPES)
def test_dropout_autograd_matches_the_host(dtype) -> None:
    """The GPU backward draws the forward's Philox stream (the host's and the
    reference's): dQ, dK, dV and a bias's gradient as the references with
    that dropout have them."""
    dtype = getattr(torch, dtype)
    gen = torch.Generator(device="cuda").manual_seed(6)
    b, hq, hkv, nq, nk, d = 2, 4, 2, 129, 200, 64
    q = torch.randn(b, hq, nq, d, device="cuda", dtype=dtype, generator=gen)
    k = torch.randn(b, hkv, nk, d, device="cuda", dtype=dtype, generator=gen)
    v = torch.randn(b, hkv, nk, d, device="cuda", dtype=dtype, generator=gen)
    bias = torch.randn(1, hq, nq, nk, device="cuda", dtype=dtype, generator=gen)
    do = torch.randn(b, hq, nq, d, device="cuda", dtype=dtype, generator=gen)
    options = {"causal": "bottom_right", "dropout_p": 0.2, "dropout_seed": 99}

    def grads(*xs):
        xs = [x.detach().requires_grad_() for x in xs]
        fa.attention(*xs[:3], bias=xs[3], **options).backward(do.to(xs[0]))
        return [x.grad for x in xs]

    got = grads(q, k, v, bias)
    args = (numpy(q), numpy(k), numpy(v), numpy(do))
    want = reference_grad(*args, bias=numpy(bias), return_dbias=True, **options)
    lowp = low_precision_grad(q, k, v, do, bias=numpy(bias), return_dbias=True, **options)
    for name, g, w, base in zip(("dQ", "dK", "dV", "dBias"), got, want, lowp):
        assert g.device.type == "cuda" and g.dtype == dtype
        check(name, f64(g), w, base)
