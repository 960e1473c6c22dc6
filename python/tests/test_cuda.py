"""fa.attention on CUDA torch tensors (the GPU kernel), against float64.

Runs where torch with a CUDA device is importable (the GPU machine); skipped
elsewhere.
"""

from __future__ import annotations

import math

import pytest

torch = pytest.importorskip("torch")
if not torch.cuda.is_available():
    pytest.skip("no CUDA device", allow_module_level=True)

import fa  # noqa: E402


def reference(q, k, v, causal: str | None):
    """Attention in float64 on the CPU, bottom-right causal like fa."""
    q, k, v = (t.detach().double().cpu() for t in (q, k, v))
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


def rel(a, b) -> float:
    return float((a.double().cpu() - b).norm() / b.norm())


@pytest.mark.parametrize("dtype,bound", [(torch.bfloat16, 2e-2), (torch.float16, 5e-3)])
@pytest.mark.parametrize("causal", [False, "top_left", "bottom_right"])
def test_matches_float64(dtype, bound, causal) -> None:
    gen = torch.Generator(device="cuda").manual_seed(0)
    # [B, N, H, D] storage seen as [B, H, N, D]: any batch/head/row strides.
    q = torch.randn(2, 100, 8, 128, device="cuda", dtype=dtype, generator=gen).transpose(1, 2)
    k = torch.randn(2, 150, 2, 128, device="cuda", dtype=dtype, generator=gen).transpose(1, 2)
    v = torch.randn(2, 150, 2, 128, device="cuda", dtype=dtype, generator=gen).transpose(1, 2)
    o, lse = fa.attention(q, k, v, causal=causal, return_lse=True)
    assert o.device.type == "cuda" and o.dtype == dtype and lse.dtype == torch.float32
    ref_o, ref_lse = reference(q, k, v, causal)
    assert rel(o, ref_o) < bound
    assert rel(lse, ref_lse) < 1e-5


def test_runs_on_the_current_stream() -> None:
    q = torch.randn(1, 4, 256, 64, device="cuda", dtype=torch.bfloat16)
    stream = torch.cuda.Stream()
    with torch.cuda.stream(stream):
        o = fa.attention(q, q, q)
    stream.synchronize()
    assert rel(o, reference(q, q, q, None)[0]) < 2e-2


def test_gpu_kernel_object() -> None:
    kernel = fa.compile(torch.float16, 64, causal="bottom_right", target="auto")
    assert kernel.target.startswith("sm_")
    q = torch.randn(1, 2, 70, 64, device="cuda", dtype=torch.float16)
    o = kernel(q, q, q)
    assert rel(o, reference(q, q, q, "bottom_right")[0]) < 5e-3


@pytest.mark.parametrize("dtype,bound", [(torch.bfloat16, 2e-2), (torch.float16, 5e-3)])
@pytest.mark.parametrize("d", [64, 256])
def test_autograd_on_the_gpu(dtype, bound, d) -> None:
    """loss.backward() through fa.attention runs the GPU backward (D = 256:
    dK and dV in two column passes)."""
    gen = torch.Generator(device="cuda").manual_seed(1)

    def make(n: int, h: int):
        x = torch.randn(2, n, h, d, device="cuda", dtype=dtype, generator=gen)
        return x.transpose(1, 2).detach().requires_grad_()

    q, k, v = make(100, 8), make(150, 2), make(150, 2)
    do = torch.randn(2, 8, 100, d, device="cuda", dtype=torch.float32, generator=gen)
    o = fa.attention(q, k, v, causal="bottom_right")
    (o.float() * do).sum().backward()
    torch.cuda.synchronize()

    ref = [x.detach().double().cpu().requires_grad_() for x in (q, k, v)]
    group = 4
    kr, vr = ref[1].repeat_interleave(group, 1), ref[2].repeat_interleave(group, 1)
    s = ref[0] @ kr.transpose(-1, -2) / math.sqrt(d)
    i, j = torch.arange(100).view(-1, 1), torch.arange(150).view(1, -1)
    s = s.masked_fill(~(j <= i + 50), float("-inf"))
    (torch.softmax(s, dim=-1) @ vr * do.double().cpu()).sum().backward()
    for x, r in zip((q, k, v), ref):
        assert x.grad.device.type == "cuda" and x.grad.dtype == dtype
        assert rel(x.grad, r.grad) < bound


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


@pytest.mark.parametrize("dtype,bound", [(torch.bfloat16, 2e-2), (torch.float16, 5e-3)])
def test_scored_kernel(dtype, bound) -> None:
    """Bias [1, Hq, 1, Nk], per-batch ALiBi and a score_mod on the GPU (the scored kernel)."""
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
    assert rel(o, torch.softmax(s, dim=-1) @ vd) < bound


@pytest.mark.parametrize("dtype,bound", [(torch.bfloat16, 2e-2), (torch.float16, 5e-3)])
@pytest.mark.parametrize("bias_shape", [(2, 4, 77, 131), (1, 4, 1, 131), (2, 1, 77, 1)])
def test_autograd_with_bias_on_the_gpu(dtype, bound, bias_shape) -> None:
    """The bias's gradient (summed over its broadcast dims) from the GPU backward."""
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

    ref = [t.detach().double().cpu().requires_grad_() for t in (q, k, v, bias)]
    kr = ref[1].repeat_interleave(hq // hkv, dim=1)
    vr = ref[2].repeat_interleave(hq // hkv, dim=1)
    i = torch.arange(nq).view(-1, 1).double()
    j = torch.arange(nk).view(1, -1).double()
    s = ref[0] @ kr.transpose(-1, -2) / math.sqrt(d)
    s = s - slopes.double().cpu().view(1, hq, 1, 1) * (i + nk - nq - j).abs() + ref[3]
    s.retain_grad()
    masked = s.masked_fill(j > i + nk - nq, float("-inf"))
    (torch.softmax(masked, dim=-1) @ vr * do.double().cpu()).sum().backward()
    for x, r in zip((q, k, v), ref):
        assert x.grad.device.type == "cuda" and x.grad.dtype == dtype
        assert x.grad.shape == r.grad.shape
        assert rel(x.grad, r.grad) < bound
    # dBias against the scale of what was summed into it: a bias that
    # broadcasts over the keys has a gradient of exactly 0 (softmax does not
    # see a per-row constant), which a relative error cannot measure.
    assert bias.grad.device.type == "cuda" and bias.grad.dtype == dtype
    assert bias.grad.shape == ref[3].grad.shape
    dims = [i for i, n in enumerate(bias_shape) if n == 1]
    scale = s.grad.abs().sum(dim=dims, keepdim=True) if dims else s.grad.abs()
    err = (bias.grad.double().cpu() - ref[3].grad).norm() / scale.norm()
    assert err < bound


# Captured tensors on the GPU: document ids (exactly N entries: ragged tiles
# read them clamped in range) and a per-head table, on q's device.
_N_CAP = 77
_doc_gpu = torch.repeat_interleave(
    torch.arange(_N_CAP),
    torch.randint(1, 12, (_N_CAP,), generator=torch.Generator().manual_seed(9)),
)[:_N_CAP].to(torch.int32)
_tab_gpu = torch.linspace(-0.4, 0.4, 8)
_doc_cuda, _tab_cuda = _doc_gpu.cuda(), _tab_gpu.cuda()


def _doc_mask_cuda(b, h, q_idx, kv_idx):
    return (_doc_cuda[q_idx] == _doc_cuda[kv_idx]) & (kv_idx <= q_idx)


def _head_bias_cuda(score, b, h, q_idx, kv_idx):
    return score + _tab_cuda[h] * (kv_idx - q_idx)


@pytest.mark.parametrize("dtype,bound", [(torch.bfloat16, 2e-2), (torch.float16, 5e-3)])
def test_captures_forward_and_autograd_on_the_gpu(dtype, bound) -> None:
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
    # float64 on the CPU, the same modifiers over index tensors and CPU tables.
    ref = [x.detach().double().cpu().requires_grad_() for x in (q, k, v)]
    kr, vr = (x.repeat_interleave(4, dim=1) for x in ref[1:])
    s = ref[0] @ kr.transpose(-1, -2) / 8.0
    h = torch.arange(8).view(1, -1, 1, 1)
    i, j = torch.arange(_N_CAP).view(-1, 1), torch.arange(_N_CAP).view(1, -1)
    s = s + _tab_gpu.double()[h] * (j - i)
    keep = (_doc_gpu[i] == _doc_gpu[j]) & (j <= i)
    want = torch.softmax(s.masked_fill(~keep, float("-inf")), dim=-1) @ vr
    (want * do.double().cpu()).sum().backward()
    assert rel(o.detach(), want.detach()) < bound
    for x, r in zip((q, k, v), ref):
        assert rel(x.grad, r.grad) < 2 * bound


def test_captures_must_be_on_qs_device() -> None:
    q = torch.zeros(1, 8, 16, 64, device="cuda", dtype=torch.bfloat16)
    with pytest.raises(ValueError, match=r"captured tensor 0 .* is on cpu, q on cuda:0"):
        fa.attention(q, q, q, score_mod=lambda s, b, h, i, j: s + _tab_gpu[h])


@pytest.mark.parametrize("dtype,bound", [(torch.bfloat16, 2e-2), (torch.float16, 5e-3)])
@pytest.mark.parametrize("d", [64, 128])
def test_dropout_forward_matches_the_host(dtype, bound, d) -> None:
    """The GPU kernel draws the host's Philox stream: the same O as the CPU
    kernel (f32) for the same seed; lse is the undropped softmax's."""
    gen = torch.Generator(device="cuda").manual_seed(5)
    q = torch.randn(2, 4, 129, d, device="cuda", dtype=dtype, generator=gen)
    k = torch.randn(2, 2, 200, d, device="cuda", dtype=dtype, generator=gen)
    v = torch.randn(2, 2, 200, d, device="cuda", dtype=dtype, generator=gen)
    options = {"causal": "bottom_right", "dropout_p": 0.2, "dropout_seed": 1234}
    o, lse = fa.attention(q, k, v, return_lse=True, **options)
    host = [x.float().cpu() for x in (q, k, v)]
    want, want_lse = fa.attention(*host, return_lse=True, **options)
    assert rel(o, want.double()) < bound
    assert rel(lse, want_lse.double()) < 1e-5
    plain, plain_lse = fa.attention(q, k, v, causal="bottom_right", return_lse=True)
    assert rel(lse, plain_lse.double().cpu()) < 1e-6
    assert rel(o, plain.double().cpu()) > 0.1


@pytest.mark.parametrize("dtype,bound", [(torch.bfloat16, 2e-2), (torch.float16, 5e-3)])
def test_dropout_autograd_matches_the_host(dtype, bound) -> None:
    """The GPU backward draws the forward's Philox stream: dQ, dK, dV (and a
    bias's gradient) agree with the CPU kernels' (f32) for the same seed."""
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
    want = grads(*(x.float().cpu() for x in (q, k, v, bias)))
    for g, w in zip(got[:3], want[:3]):
        assert g.device.type == "cuda" and g.dtype == dtype
        assert rel(g, w.double()) < bound
    # The bias's gradient ([1, Hq, Nq, Nk]: summed over the batch only, so
    # not ~0 as for a bias broadcast over keys).
    assert rel(got[3], want[3].double()) < bound
