"""fa._torch_fast: the eager forward on torch tensors in C++ once the checked
path has run a variant. Its results must equal the checked path's, match
float64, and every input it does not take must reach the checked path's
errors."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest

torch = pytest.importorskip("torch")

import fa  # noqa: E402
import fa._torch as fa_torch  # noqa: E402
from reference import check_attention, check_attention_grad, np_dtype  # noqa: E402

fast = fa_torch._torch_fast
pytestmark = pytest.mark.skipif(fast is None, reason="fa._torch_fast is not built")


def hits() -> int:
    return fast.stats()[0]


def numpy(t: Any) -> np.ndarray:
    t = t.detach().cpu()
    if t.dtype == torch.bfloat16:
        return t.float().numpy().astype(np_dtype("bfloat16"))
    return t.numpy()


def checked(monkeypatch: pytest.MonkeyPatch, *args: Any, **kwargs: Any) -> Any:
    """fa.attention through the checked path alone."""
    with monkeypatch.context() as m:
        m.setattr(fa_torch, "_torch_fast", None)
        return fa.attention(*args, **kwargs)


@pytest.fixture(autouse=True)
def fresh() -> None:
    fa.clear_cache()


@pytest.mark.parametrize("dtype", ["float32", "bfloat16"])
@pytest.mark.parametrize("causal", [False, "bottom_right"])
def test_second_call_is_fast_and_exact(monkeypatch: pytest.MonkeyPatch, dtype, causal) -> None:
    gen = torch.Generator().manual_seed(1)
    dt = getattr(torch, dtype)
    q = torch.randn(2, 4, 33, 64, generator=gen).to(dt)
    k = torch.randn(2, 2, 47, 64, generator=gen).to(dt)
    v = torch.randn(2, 2, 47, 64, generator=gen).to(dt)
    first = fa.attention(q, k, v, causal=causal, return_lse=True)
    before = hits()
    o, lse = fa.attention(q, k, v, causal=causal, return_lse=True)
    assert hits() == before + 1
    assert o.shape == (2, 4, 33, 64) and o.dtype == dt and lse.shape == (2, 4, 33)
    assert lse.dtype == torch.float32
    assert torch.equal(o, first[0]) and torch.equal(lse, first[1])
    want = checked(monkeypatch, q, k, v, causal=causal, return_lse=True)
    assert torch.equal(o, want[0]) and torch.equal(lse, want[1])
    check_attention(
        numpy(q), numpy(k), numpy(v), numpy(o), numpy(lse), causal=causal or "none"
    )


def test_bshd_and_other_shapes(monkeypatch: pytest.MonkeyPatch) -> None:
    """One remembered kernel takes any B, H and N, and strided views."""
    gen = torch.Generator().manual_seed(2)
    q = torch.randn(1, 20, 4, 32, generator=gen)
    fa.attention(q, q, q, layout="bshd")
    before = hits()
    q = torch.randn(3, 50, 2, 32, generator=gen)
    kv = torch.randn(3, 2, 70, 32, generator=gen).transpose(1, 2)  # [B, N, H, D] view
    o = fa.attention(q, kv, kv, layout="bshd")
    assert hits() == before + 1 and o.shape == (3, 50, 2, 32)
    assert torch.equal(o, checked(monkeypatch, q, kv, kv, layout="bshd"))
    bhsd = (x.transpose(1, 2).numpy() for x in (q, kv, kv))
    check_attention(*bhsd, o.transpose(1, 2).numpy())
    # The host kernels read any strides, rows too.
    v = torch.randn(3, 2, 32, 70, generator=gen).transpose(2, 3).transpose(1, 2)
    o = fa.attention(q, kv, v, layout="bshd")
    assert hits() == before + 2
    assert torch.equal(o, checked(monkeypatch, q, kv, v, layout="bshd"))


def test_inputs_it_does_not_take_get_the_checked_errors(monkeypatch: pytest.MonkeyPatch) -> None:
    q = torch.randn(1, 4, 16, 64)
    fa.attention(q, q, q)
    fa.attention(q, q, q)
    taken = hits()
    bad = {
        "k's dtype": (q, q.double(), q),
        "k's head dim": (q, torch.randn(1, 4, 16, 32), q),
        "heads that do not divide": (q, torch.randn(1, 3, 16, 64), torch.randn(1, 3, 16, 64)),
        "V's length": (q, q, torch.randn(1, 4, 17, 64)),
        "rank 3": (q, q[0], q),
    }
    for name, args in bad.items():
        with pytest.raises(Exception) as got:
            fa.attention(*args)
        with pytest.raises(Exception) as want:
            checked(monkeypatch, *args)
        assert type(got.value) is type(want.value) and str(got.value) == str(want.value), name
    assert hits() == taken


def test_empty_calls_take_the_checked_path() -> None:
    q = torch.randn(1, 2, 8, 64)
    fa.attention(q, q, q)
    taken = hits()
    empty = fa.attention(q[:, :, :0], q, q)
    assert empty.shape == (1, 2, 0, 64)
    nk0 = fa.attention(q, q[:, :, :0], q[:, :, :0])
    assert torch.equal(nk0, torch.zeros_like(q))
    assert hits() == taken


@pytest.mark.parametrize("layout", ["bhsd", "bshd"])
def test_autograd_forward(monkeypatch: pytest.MonkeyPatch, layout: str) -> None:
    """Under autograd the forward (O and the lse it saves) and the backward
    are taken too: the same O and gradients as the checked path's."""
    gen = torch.Generator().manual_seed(4)
    q = torch.randn(2, 4, 30, 32, generator=gen)
    k = torch.randn(2, 2, 45, 32, generator=gen)
    v = torch.randn(2, 2, 45, 32, generator=gen)
    dout = torch.randn(2, 4, 30, 32, generator=gen)
    if layout == "bshd":
        q, k, v, dout = (x.transpose(1, 2).contiguous() for x in (q, k, v, dout))

    def grads(*args: Any) -> tuple[Any, ...]:
        leaves = [x.clone().requires_grad_() for x in args]
        o = fa.attention(*leaves, causal="bottom_right", layout=layout)
        o.backward(dout)
        return (o.detach(), *(x.grad for x in leaves))

    first = grads(q, k, v)
    taken = hits()
    second = grads(q, k, v)
    assert hits() == taken + 2  # the forward and the backward
    with monkeypatch.context() as m:
        m.setattr(fa_torch, "_torch_fast", None)
        want = grads(q, k, v)
    for got, w, f in zip(second, want, first):
        assert torch.equal(got, w) and torch.equal(got, f)
    bhsd = [x.transpose(1, 2) if layout == "bshd" else x for x in (q, k, v, dout, *second)]
    check_attention(*(x.numpy() for x in bhsd[:3]), bhsd[4].numpy(), causal="bottom_right")
    check_attention_grad(
        *(x.numpy() for x in bhsd[:4]),
        tuple(x.numpy() for x in bhsd[5:]),
        causal="bottom_right",
    )


def test_autograd_of_a_sum(monkeypatch: pytest.MonkeyPatch) -> None:
    """o.sum()'s gradient comes expanded (stride 0): read as a contiguous dO."""
    q = torch.randn(1, 2, 24, 64)

    def grad() -> Any:
        leaf = q.clone().requires_grad_()
        fa.attention(leaf, q, q, causal=True).sum().backward()
        return leaf.grad

    grad()
    taken = hits()
    got = grad()
    assert hits() == taken + 2
    with monkeypatch.context() as m:
        m.setattr(fa_torch, "_torch_fast", None)
        assert torch.equal(got, grad())


def test_autograd_node_is_cpp_and_owns_its_kernel(monkeypatch: pytest.MonkeyPatch) -> None:
    """Under autograd a taken call's node is the module's C++ Function: the
    backward runs without Python, even after fa.clear_cache() (the node
    keeps its kernel), twice with retain_graph, for K alone."""
    gen = torch.Generator().manual_seed(6)
    q, k, v, dout = (torch.randn(1, 2, 20, 32, generator=gen) for _ in range(4))
    leaf = k.clone().requires_grad_()
    fa.attention(q, leaf, v, causal=True)
    taken = hits()
    o, lse = fa.attention(q, leaf, v, causal=True, return_lse=True)
    assert hits() == taken + 1
    assert "CppNode" in o.grad_fn.name() and not lse.requires_grad
    fa.clear_cache()
    o.backward(dout, retain_graph=True)
    first = leaf.grad.clone()
    o.backward(dout)
    assert hits() == taken + 3 and fast.stats()[3] == 0
    assert torch.equal(leaf.grad, 2 * first)
    with monkeypatch.context() as m:
        m.setattr(fa_torch, "_torch_fast", None)
        want = k.clone().requires_grad_()
        fa.attention(q, want, v, causal=True).backward(dout)
    assert torch.equal(first, want.grad)
    # No grad mode: a plain forward, no node.
    with torch.no_grad():
        assert not fa.attention(q, leaf, v, causal=True).requires_grad


def test_autograd_node_sees_in_place_changes() -> None:
    """A saved input changed in place is torch's error, as for any node."""
    q = torch.randn(1, 2, 16, 32)
    leaf = q.clone().requires_grad_()
    fa.attention(leaf, q, q)
    taken = hits()
    k = q.clone()
    o = fa.attention(leaf, k, q)
    assert hits() == taken + 1
    k.add_(1)
    with pytest.raises(RuntimeError, match="modified by an inplace operation"):
        o.sum().backward()


def test_autograd_node_under_compiled_autograd(monkeypatch: pytest.MonkeyPatch) -> None:
    """A backward that torch's compiled autograd runs: the node's saved
    state is what it can key on (no capsule, no non-differentiable output),
    and its gradients are the checked path's."""
    ca = pytest.importorskip("torch._dynamo.compiled_autograd")
    enable = getattr(ca, "_enable", None) or ca.enable
    gen = torch.Generator().manual_seed(8)
    q, k, v, dout = (torch.randn(1, 2, 24, 32, generator=gen) for _ in range(4))

    def grad(compiled: bool) -> Any:
        leaf = q.clone().requires_grad_()
        o = fa.attention(leaf, k, v, causal=True)
        if compiled:
            with enable(torch.compile(backend="eager")):
                o.backward(dout)
        else:
            o.backward(dout)
        return leaf.grad

    grad(False)
    taken = hits()
    got = grad(True)
    assert hits() == taken + 2
    with monkeypatch.context() as m:
        m.setattr(fa_torch, "_torch_fast", None)
        assert torch.equal(got, grad(False))


def test_threads_train_through_the_module_at_once(monkeypatch: pytest.MonkeyPatch) -> None:
    """Sixteen threads run a forward and a backward of one variant through
    the module together (its map read under the GIL, its nodes' backwards
    on their threads): each gets the checked path's gradients."""
    import threading

    gen = torch.Generator().manual_seed(9)
    q, k, v, dout = (torch.randn(1, 2, 40, 32, generator=gen) for _ in range(4))

    def grads() -> list[Any]:
        leaves = [x.clone().requires_grad_() for x in (q, k, v)]
        fa.attention(*leaves, causal="bottom_right").backward(dout)
        return [x.grad for x in leaves]

    with monkeypatch.context() as m:
        m.setattr(fa_torch, "_torch_fast", None)
        want = grads()
    grads()  # the checked path remembers the kernel
    taken = hits()
    results: list[Any] = [None] * 16
    barrier = threading.Barrier(16)

    def work(t: int) -> None:
        barrier.wait()
        results[t] = grads()

    threads = [threading.Thread(target=work, args=(t,)) for t in range(16)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert hits() == taken + 32
    for got in results:
        assert got is not None
        for g, w in zip(got, want):
            assert torch.equal(g, w)


def test_clear_cache_forgets() -> None:
    q = torch.randn(1, 2, 8, 64)
    fa.attention(q, q, q)
    assert fast.stats()[2] >= 1
    fa.clear_cache()
    assert fast.stats()[2] == 0
    taken = hits()
    fa.attention(q, q, q)
    assert hits() == taken


@pytest.mark.gpu
@pytest.mark.parametrize("dtype", ["float16", "bfloat16"])
def test_cuda_second_call_is_fast(monkeypatch: pytest.MonkeyPatch, dtype) -> None:
    dt = getattr(torch, dtype)
    gen = torch.Generator(device="cuda").manual_seed(3)
    q = torch.randn(2, 100, 8, 128, device="cuda", dtype=dt, generator=gen).transpose(1, 2)
    kv = torch.randn(2, 150, 2, 128, device="cuda", dtype=dt, generator=gen).transpose(1, 2)
    fa.attention(q, kv, kv, causal="bottom_right", return_lse=True)
    before = hits()
    stream = torch.cuda.Stream()
    with torch.cuda.stream(stream):
        o, lse = fa.attention(q, kv, kv, causal="bottom_right", return_lse=True)
    stream.synchronize()
    assert hits() == before + 1 and o.device == q.device
    want = checked(monkeypatch, q, kv, kv, causal="bottom_right", return_lse=True)
    torch.cuda.synchronize()
    assert torch.equal(o, want[0]) and torch.equal(lse, want[1])
    check_attention(
        numpy(q), numpy(kv), numpy(kv), numpy(o), numpy(lse), causal="bottom_right"
    )


@pytest.mark.gpu
def test_cuda_autograd_forward(monkeypatch: pytest.MonkeyPatch) -> None:
    gen = torch.Generator(device="cuda").manual_seed(5)
    args = [
        torch.randn(2, 4, 200, 128, device="cuda", dtype=torch.bfloat16, generator=gen)
        for _ in range(3)
    ]
    dout = torch.randn_like(args[0])

    def grads() -> tuple[Any, ...]:
        leaves = [x.clone().requires_grad_() for x in args]
        o = fa.attention(*leaves, causal=True)
        o.backward(dout)
        return (o.detach(), *(x.grad for x in leaves))

    grads()
    taken = hits()
    got = grads()
    assert hits() == taken + 2  # the forward and the backward
    with monkeypatch.context() as m:
        m.setattr(fa_torch, "_torch_fast", None)
        want = grads()
    torch.cuda.synchronize()
    # O, dK, dV bit for bit; dQ may be accumulated with atomics (its order
    # varies from run to run) unless deterministic algorithms are on.
    for name, g, w in zip(("O", "dQ", "dK", "dV"), got, want):
        if name == "dQ":
            err = ((g.float() - w.float()).norm() / w.float().norm()).item()
            assert err < 5e-3, (name, err)
        else:
            assert torch.equal(g, w), name


@pytest.mark.gpu
def test_cuda_autograd_node_takes_the_checked_backward_when_determinism_changes() -> None:
    """Deterministic algorithms switched on between the forward and the
    backward: the node's kernel has the atomic dQ, so the checked backward
    runs the deterministic one (called from autograd's thread)."""
    gen = torch.Generator(device="cuda").manual_seed(7)
    q, k, v, dout = (
        torch.randn(1, 4, 130, 64, device="cuda", dtype=torch.float16, generator=gen)
        for _ in range(4)
    )
    def leaves() -> list[Any]:
        return [x.clone().requires_grad_() for x in (q, k, v)]

    fa.attention(*leaves())
    before = fast.stats()[3]
    got = leaves()
    o = fa.attention(*got)
    assert "CppNode" in o.grad_fn.name()
    was = torch.are_deterministic_algorithms_enabled()
    torch.use_deterministic_algorithms(True)
    try:
        o.backward(dout)
        want = leaves()
        fa.attention(*want).backward(dout)
    finally:
        torch.use_deterministic_algorithms(was)
    torch.cuda.synchronize()
    assert fast.stats()[3] == before + 1
    for g, w in zip(got, want):  # deterministic: bit for bit
        assert torch.equal(g.grad, w.grad)
    check_attention_grad(
        numpy(q), numpy(k), numpy(v), numpy(dout), tuple(numpy(x.grad) for x in got),
        causal="none",
    )
