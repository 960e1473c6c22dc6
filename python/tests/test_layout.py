"""``layout="bshd"`` and ``out=``: Q, K, V and O as ``[B, N, H, D]`` (what
models hold), read and written without a copy.

Results are judged against reference.py (float64 and the low-precision
reference) on the same values viewed as ``[B, H, N, D]``. That no copy of
Q, K, V is made is checked through a hook on ``fa._C.check_inputs`` (what
the kernels read is what it returns): the arrays / tensors it gets and
reads are the caller's (same objects, same data pointers). torch tests are
skipped where torch is not installed; the CUDA ones are marked ``gpu``.
"""

from __future__ import annotations

import re
import sys
from typing import Any

import numpy as np
import pytest

import fa
from reference import check_attention, check_attention_grad, np_dtype, randn

try:
    import torch
except ImportError:
    torch = None

needs_torch = pytest.mark.skipif(torch is None, reason="torch is not installed")


def bhsd(x: Any) -> Any:
    """[B, N, H, D] as [B, H, N, D] (a view; numpy arrays)."""
    return np.asarray(x).transpose(0, 2, 1, 3)


def bshd_inputs(
    b: int, hq: int, hkv: int, nq: int, nk: int, d: int, dtype: str, seed: int = 0
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    rng = np.random.default_rng(seed)
    return (
        randn(rng, (b, nq, hq, d), dtype),
        randn(rng, (b, nk, hkv, d), dtype),
        randn(rng, (b, nk, hkv, d), dtype),
    )


# (B, Hq, Hkv, Nq, Nk, D): GQA, MQA, ragged N (one D: one kernel per dtype).
SHAPES = [(2, 4, 2, 9, 13, 16), (1, 6, 1, 17, 5, 16), (3, 2, 2, 1, 20, 16)]
OPTIONS = {"causal": "bottom_right", "softcap": 20.0, "window": (7, 1)}


class ReadInputs:
    """Records what fa._C.check_inputs reads (monkeypatched in by `read_inputs`)."""

    def __init__(self, check_inputs: Any) -> None:
        self.check_inputs = check_inputs
        self.calls: list[tuple[tuple[Any, ...], Any]] = []

    def __call__(self, api: str, q: Any, k: Any, v: Any, *args: Any) -> Any:
        inputs = self.check_inputs(api, q, k, v, *args)
        self.calls.append(((q, k, v), inputs))
        return inputs

    def assert_no_copy(self, *tensors: Any) -> None:
        """Every call read these q, k, v themselves: the same objects, at
        their own addresses, with their own strides."""
        assert self.calls
        for given, inputs in self.calls:
            for x, g, t in zip(tensors, given, (inputs.q, inputs.k, inputs.v)):
                assert g is x and t.obj is x
                if isinstance(x, np.ndarray):
                    assert t.data_ptr == x.ctypes.data
                    assert t.strides == tuple(s // x.itemsize for s in x.strides)
                else:
                    assert t.data_ptr == x.data_ptr() and t.strides == x.stride()


@pytest.fixture
def read_inputs(monkeypatch: pytest.MonkeyPatch) -> ReadInputs:
    hook = ReadInputs(fa._C.check_inputs)
    monkeypatch.setattr(fa._C, "check_inputs", hook)
    # The checked path (fa._torch_fast, once it knows the variant, reads the
    # tensors' own pointers and strides without it).
    if "fa._torch" in sys.modules:
        monkeypatch.setattr(sys.modules["fa._torch"], "_torch_fast", None)
    return hook


@pytest.mark.parametrize("shape", SHAPES)
@pytest.mark.parametrize("dtype", ["float32", "float16"])
def test_numpy_bshd(shape: tuple[int, ...], dtype: str, read_inputs: ReadInputs) -> None:
    q, k, v = bshd_inputs(*shape, dtype)
    options = OPTIONS
    o, lse = fa.attention(q, k, v, layout="bshd", return_lse=True, **options)
    b, hq, _, nq, _, d = shape
    assert o.shape == (b, nq, hq, d) and o.flags.c_contiguous and lse.shape == (b, hq, nq)
    check_attention(bhsd(q), bhsd(k), bhsd(v), bhsd(o), lse, **options)
    dout = randn(np.random.default_rng(1), o.shape, dtype)
    grads = fa.attention_backward(q, k, v, o, dout, lse, layout="bshd", **options)
    for g, x in zip(grads, (q, k, v)):
        assert g.shape == x.shape and g.dtype == x.dtype and g.flags.c_contiguous
    check_attention_grad(
        bhsd(q), bhsd(k), bhsd(v), bhsd(dout), tuple(bhsd(g) for g in grads), **options
    )
    read_inputs.assert_no_copy(q, k, v)


def test_numpy_bshd_matches_bhsd_views() -> None:
    """The same memory read as bshd, or as [B, H, N, D] views: the same bits."""
    q, k, v = bshd_inputs(2, 4, 2, 9, 13, 16, "float32")
    o = fa.attention(q, k, v, layout="bshd", window=(3, 2))
    o_views = fa.attention(bhsd(q), bhsd(k), bhsd(v), window=(3, 2))
    assert np.array_equal(bhsd(o), o_views)


@pytest.mark.parametrize("layout", ["bhsd", "bshd"])
def test_numpy_out(layout: str, read_inputs: ReadInputs) -> None:
    q, k, v = bshd_inputs(2, 4, 2, 9, 13, 16, "float32")
    if layout == "bhsd":
        q, k, v = bhsd(q), bhsd(k), bhsd(v)  # strided views: read in place too
    want, want_lse = fa.attention(q, k, v, causal=True, layout=layout, return_lse=True)
    out = np.full(want.shape, np.nan, np.float32)
    for _ in range(2):  # reused
        got, lse = fa.attention(q, k, v, causal=True, layout=layout, out=out, return_lse=True)
        assert got is out and np.array_equal(out, want) and np.array_equal(lse, want_lse)
    # A view of a larger buffer: rows of unit stride are enough.
    buffer = np.zeros((*want.shape[:3], 2 * want.shape[3]), np.float32)
    got = fa.attention(q, k, v, causal=True, layout=layout, out=buffer[..., 16:])
    assert np.array_equal(buffer[..., 16:], want) and not buffer[..., :16].any()
    read_inputs.assert_no_copy(q, k, v)


# torch: eager, autograd, no copies.


def torch_inputs(
    shape: tuple[int, ...], dtype: Any, device: str = "cpu", seed: int = 0
) -> tuple[Any, Any, Any]:
    arrays = bshd_inputs(*shape, "float32", seed=seed)
    return tuple(torch.from_numpy(x).to(device, dtype).requires_grad_() for x in arrays)  # type: ignore[return-value]


def numpy(t: Any) -> np.ndarray:
    t = t.detach().cpu()
    if t.dtype == torch.bfloat16:
        return t.float().numpy().astype(np_dtype("bfloat16"))
    return t.numpy()


def check_torch_bshd(q: Any, k: Any, v: Any, o: Any, lse: Any, dout: Any, **options: Any) -> None:
    """O, lse and the gradients q.grad, k.grad, v.grad (of sum(O * dout)) of
    bshd tensors against reference.py."""
    args = [bhsd(numpy(x)) for x in (q, k, v)]
    check_attention(*args, bhsd(numpy(o)), numpy(lse), **options)
    grads = tuple(bhsd(numpy(x.grad)) for x in (q, k, v))
    check_attention_grad(*args, bhsd(numpy(dout)), grads, **options)


@needs_torch
@pytest.mark.parametrize("shape", SHAPES)
@pytest.mark.parametrize("dtype", ["float32", "bfloat16"])
def test_torch_bshd_autograd(shape: tuple[int, ...], dtype: str, read_inputs: ReadInputs) -> None:
    q, k, v = torch_inputs(shape, getattr(torch, dtype))
    options = OPTIONS
    o, lse = fa.attention(q, k, v, layout="bshd", return_lse=True, **options)
    b, hq, _, nq, _, d = shape
    assert o.shape == (b, nq, hq, d) and o.is_contiguous() and lse.shape == (b, hq, nq)
    dout = torch.randn(o.shape, generator=torch.Generator().manual_seed(1)).to(o.dtype)
    o.backward(dout)
    for x in (q, k, v):
        assert x.grad.shape == x.shape and x.grad.is_contiguous()
    check_torch_bshd(q, k, v, o, lse, dout, **options)
    read_inputs.assert_no_copy(q, k, v)


@needs_torch
def test_torch_strided_views_are_read_in_place(read_inputs: ReadInputs) -> None:
    """[B, N, H, D] tensors viewed as [B, H, N, D] (the default layout): no copy either."""
    q, k, v = (x.detach().transpose(1, 2) for x in torch_inputs(SHAPES[0], torch.float32))
    with torch.no_grad():
        fa.attention(q, k, v, causal=True)
    read_inputs.assert_no_copy(q, k, v)


@needs_torch
@pytest.mark.parametrize("layout", ["bhsd", "bshd"])
def test_torch_out(layout: str, read_inputs: ReadInputs) -> None:
    q, k, v = (x.detach() for x in torch_inputs(SHAPES[0], torch.float32))
    if layout == "bhsd":
        q, k, v = (x.transpose(1, 2) for x in (q, k, v))
    want, want_lse = fa.attention(q, k, v, causal=True, layout=layout, return_lse=True)
    out = torch.full(want.shape, float("nan"))
    address = out.data_ptr()
    for _ in range(2):
        got, lse = fa.attention(q, k, v, causal=True, layout=layout, out=out, return_lse=True)
        assert got is out and out.data_ptr() == address
        assert torch.equal(out, want) and torch.equal(lse, want_lse)
    read_inputs.assert_no_copy(q, k, v)
    # out= takes no gradient (as torch's out= functions).
    with pytest.raises(
        ValueError,
        match=r"^fa\.attention: out= takes no gradient, but q, k, v, bias or out requires grad "
        r"\(call it under torch\.no_grad\(\), or without out=\)$",
    ):
        fa.attention(q.detach().requires_grad_(), k, v, layout=layout, out=out)
    with torch.no_grad():
        fa.attention(q.detach().requires_grad_(), k, v, causal=True, layout=layout, out=out)
    assert torch.equal(out, want)


@needs_torch
def test_custom_ops_take_the_layout() -> None:
    q, k, v = (x.detach() for x in torch_inputs(SHAPES[0], torch.float32))
    options = ("bottom_right", None, None, None, 0.0, "", "", 0, [])
    torch.library.opcheck(torch.ops.fa.attention.default, (q, k, v, None, None, *options, "bshd"))
    out = torch.empty(2, 9, 4, 16)
    torch.library.opcheck(
        torch.ops.fa.attention_out.default, (q, k, v, None, None, *options, "bshd", out)
    )


# Errors: the layout names the dims.


def raises(error: type[Exception], message: str, *args: Any, **kwargs: Any) -> None:
    with pytest.raises(error, match="^" + re.escape(message) + "$"):
        fa.attention(*args, **kwargs)


Q, K = np.zeros((2, 8, 4, 16), np.float32), np.zeros((2, 10, 2, 16), np.float32)


def test_layout_errors() -> None:
    what = "layout must be 'bhsd' ([B, H, N, D]) or 'bshd' ([B, N, H, D])"
    raises(ValueError, f"fa.attention: {what}, got 'BSHD'", Q, K, K, layout="BSHD")
    raises(TypeError, f"fa.attention: {what}, got 1", Q, K, K, layout=1)
    raises(
        ValueError,
        "fa.attention: q must have rank 4 [B, Nq, Hq, D], got shape (8, 4, 16)",
        Q[0],
        K,
        K,
        layout="bshd",
    )
    raises(
        ValueError,
        "fa.attention: v must have rank 4 [B, Nk, Hkv, Dv], got shape (10, 2, 16)",
        Q,
        K,
        K[0],
        layout="bshd",
    )
    k3 = np.zeros((2, 10, 3, 16), np.float32)
    raises(
        ValueError,
        "fa.attention: q heads (q.shape[2] = 4) must be a multiple of k/v heads (k.shape[2] = 3)",
        Q,
        k3,
        k3,
        layout="bshd",
    )
    raises(
        ValueError,
        "fa.attention: v must have the sequence length of k (k.shape[1] = 10), got v.shape[1] = 11",
        Q,
        K,
        np.zeros((2, 11, 2, 16), np.float32),
        layout="bshd",
    )
    raises(
        ValueError,
        "fa.attention: v must have the heads of k (k.shape[2] = 2), got v.shape[2] = 1",
        Q,
        K,
        np.zeros((2, 10, 1, 16), np.float32),
        layout="bshd",
    )
    o, lse = fa.attention(Q, K, K, layout="bshd", return_lse=True)
    with pytest.raises(
        ValueError,
        match=re.escape(
            "fa.attention_backward: dout must have shape [B, Nq, Hq, Dv] = [2, 8, 4, 16], got "
            "(2, 4, 8, 16)"
        ),
    ):
        fa.attention_backward(Q, K, K, o, np.zeros((2, 4, 8, 16), np.float32), lse, layout="bshd")


def test_out_errors() -> None:
    def out_raises(error: type[Exception], message: str, out: Any) -> None:
        raises(error, "fa.attention: " + message, Q, K, K, layout="bshd", out=out)

    out_raises(
        ValueError,
        "out must have shape [B, Nq, Hq, Dv] = [2, 8, 4, 16], got (2, 4, 8, 16)",
        np.zeros((2, 4, 8, 16), np.float32),
    )
    raises(
        ValueError,
        "fa.attention: out must have shape [B, Hq, Nq, Dv] = [2, 4, 8, 16], got (2, 8, 4, 16)",
        bhsd(Q),
        bhsd(K),
        bhsd(K),
        out=np.zeros((2, 8, 4, 16), np.float32),
    )
    out_raises(
        TypeError,
        "out must have the dtype of q (float32), got float16",
        np.zeros((2, 8, 4, 16), np.float16),
    )
    out_raises(
        ValueError,
        "out must have stride 1 in its last dim, got strides (1024, 128, 32, 2)",
        np.zeros((2, 8, 4, 32), np.float32)[..., ::2],
    )
    out_raises(
        ValueError,
        "out must have strides > 0 in its dims of size > 1 (no broadcast or reversed view), "
        "got strides (512, -64, 16, 1)",
        np.zeros((2, 8, 4, 16), np.float32)[:, ::-1],
    )
    read_only = np.zeros((2, 8, 4, 16), np.float32)
    read_only.flags.writeable = False
    out_raises(ValueError, "out must be writable, got a read-only array", read_only)
    out_raises(TypeError, "out must be a numpy array or a torch tensor, got list", [0.0])


@needs_torch
def test_out_errors_torch() -> None:
    q, k = torch.from_numpy(Q), torch.from_numpy(K)

    def out_raises(error: type[Exception], message: str, out: Any) -> None:
        raises(error, "fa.attention: " + message, q, k, k, layout="bshd", out=out)

    out_raises(TypeError, "out must be a torch tensor like q, got ndarray", np.zeros(Q.shape))
    out_raises(
        ValueError,
        "out must have strides > 0 in its dims of size > 1 (no broadcast or reversed view), "
        "got strides (0, 64, 16, 1)",
        torch.zeros(1, 8, 4, 16).expand(2, 8, 4, 16),
    )
    out_raises(
        ValueError,
        "out must have stride 1 in its last dim, got strides (512, 64, 1, 4)",
        torch.zeros(2, 8, 16, 4).transpose(2, 3),
    )
    out_raises(
        TypeError,
        "out must have the dtype of q (float32), got float64",
        torch.zeros(2, 8, 4, 16, dtype=torch.float64),
    )
    out_raises(
        ValueError,
        "out must be on the CPU or a CUDA device, got meta",
        torch.zeros(2, 8, 4, 16, device="meta"),
    )


# CUDA: the GPU kernels read and write [B, N, H, D] in place as well.


@pytest.mark.gpu
@pytest.mark.parametrize("dtype", ["bfloat16", "float16"])
def test_bshd_on_the_gpu(dtype: str, read_inputs: ReadInputs) -> None:
    shape = (2, 8, 2, 100, 150, 64)
    q, k, v = torch_inputs(shape, getattr(torch, dtype), device="cuda")
    options = {"causal": "bottom_right"}
    o, lse = fa.attention(q, k, v, layout="bshd", return_lse=True, **options)
    assert o.shape == (2, 100, 8, 64) and o.is_contiguous() and o.device.type == "cuda"
    dout = torch.randn(o.shape, device="cuda").to(o.dtype)
    o.backward(dout)
    torch.cuda.synchronize()
    check_torch_bshd(q, k, v, o, lse, dout, **options)
    read_inputs.assert_no_copy(q, k, v)
    out = torch.empty_like(o)
    with torch.no_grad():
        got = fa.attention(q, k, v, layout="bshd", out=out, **options)
    assert got is out and torch.equal(out, o)
