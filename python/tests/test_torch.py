"""The torch path of fa.attention, through a fake torch backed by numpy.

torch is not a dependency: fa recognizes tensors by duck typing
(data_ptr(), stride(), dtype, device, shape) and allocates outputs with
torch.empty. A real torch, when installed, is tested too.
"""

from __future__ import annotations

import sys
import types
from typing import Any

import numpy as np
import pytest

import fa
from reference import check_attention, np_dtype


class FakeDType:
    def __init__(self, name: str) -> None:
        self.name = name

    def __str__(self) -> str:
        return f"torch.{self.name}"


class FakeDevice:
    def __init__(self, spec: str) -> None:
        self.type = spec.split(":")[0]
        self.spec = spec

    def __str__(self) -> str:
        return self.spec


class FakeTensor:
    """A torch.Tensor look-alike viewing a numpy array (strides in elements)."""

    def __init__(self, array: np.ndarray, device: str = "cpu") -> None:
        self.array = array
        self.dtype = FAKE_DTYPES[array.dtype.name]
        self.device = FakeDevice(device)
        self.shape = array.shape

    def data_ptr(self) -> int:
        return int(self.array.ctypes.data)

    def stride(self) -> tuple[int, ...]:
        return tuple(s // self.array.itemsize for s in self.array.strides)

    def transpose(self, a: int, b: int) -> FakeTensor:
        return FakeTensor(self.array.swapaxes(a, b))


FAKE_DTYPES = {name: FakeDType(name) for name in ("float16", "bfloat16", "float32", "float64")}


@pytest.fixture
def fake_torch(monkeypatch: pytest.MonkeyPatch) -> list[tuple[Any, ...]]:
    """Installs a module `torch` with empty() and the dtypes; returns the empty() calls."""
    calls: list[tuple[Any, ...]] = []
    module = types.ModuleType("torch")

    def empty(shape: tuple[int, ...], dtype: FakeDType, device: FakeDevice) -> FakeTensor:
        calls.append((tuple(shape), str(dtype), str(device)))
        return FakeTensor(np.empty(shape, np.dtype(dtype.name)))

    module.empty = empty  # type: ignore[attr-defined]
    for name, dtype in FAKE_DTYPES.items():
        setattr(module, name, dtype)
    monkeypatch.setitem(sys.modules, "torch", module)
    return calls


def test_fake_torch_tensors(fake_torch: list[tuple[Any, ...]]) -> None:
    rng = np.random.default_rng(0)
    # [B, N, H, D] storage viewed as [B, H, N, D], as torch code usually has it.
    q = FakeTensor(rng.standard_normal((2, 9, 4, 16)).astype(np.float32)).transpose(1, 2)
    k = FakeTensor(rng.standard_normal((2, 12, 2, 16)).astype(np.float32)).transpose(1, 2)
    v = FakeTensor(rng.standard_normal((2, 12, 2, 16)).astype(np.float32)).transpose(1, 2)
    o, lse = fa.attention(q, k, v, causal="bottom_right", return_lse=True)
    assert isinstance(o, FakeTensor) and isinstance(lse, FakeTensor)
    assert fake_torch == [
        ((2, 4, 9, 16), "torch.float32", "cpu"),
        ((2, 4, 9), "torch.float32", "cpu"),
    ]
    check_attention(q.array, k.array, v.array, o.array, lse.array, causal="bottom_right")


def test_fake_torch_checks(fake_torch: list[tuple[Any, ...]]) -> None:
    q = FakeTensor(np.zeros((1, 2, 4, 8), np.float32))
    k16 = FakeTensor(np.zeros((1, 2, 4, 8), np.float16))
    with pytest.raises(
        TypeError, match=r"^fa\.attention: k must have the dtype of q \(float32\), got float16$"
    ):
        fa.attention(q, k16, k16)
    q64 = FakeTensor(np.zeros((1, 2, 4, 8), np.float64))
    with pytest.raises(
        TypeError,
        match=r"^fa\.attention: q must have dtype float16, bfloat16 or float32, got float64$",
    ):
        fa.attention(q64, q64, q64)
    gpu = FakeTensor(np.zeros((1, 2, 4, 8), np.float32), device="cuda:1")
    with pytest.raises(ValueError, match=r"^fa\.attention: k is on cuda:1 but q is on cpu$"):
        fa.attention(q, gpu, q)
    # Two CUDA devices: named, before anything runs.
    gpu0 = FakeTensor(np.zeros((1, 2, 4, 8), np.float32), device="cuda")
    with pytest.raises(ValueError, match=r"^fa\.attention: v is on cuda:1 but q is on cuda:0$"):
        fa.attention(gpu0, gpu0, gpu)
    assert fake_torch == []  # nothing allocated for calls that fail


def test_fake_torch_bias_with_numpy_inputs(fake_torch: list[tuple[Any, ...]]) -> None:
    rng = np.random.default_rng(1)
    q, k, v = (rng.standard_normal((1, 2, 6, 8)).astype(np.float32) for _ in range(3))
    bias = rng.standard_normal((6, 6)).astype(np.float32)
    o = fa.attention(q, k, v, bias=FakeTensor(bias))  # outputs follow q: numpy
    assert isinstance(o, np.ndarray) and fake_torch == []
    check_attention(q, k, v, o, bias=bias)


def test_real_torch() -> None:
    torch = pytest.importorskip("torch")
    torch.manual_seed(0)
    q = torch.randn(2, 4, 10, 16, dtype=torch.bfloat16)
    k = torch.randn(2, 12, 2, 16, dtype=torch.bfloat16).transpose(1, 2)
    v = torch.randn(2, 12, 2, 16, dtype=torch.bfloat16).transpose(1, 2)
    o = fa.attention(q, k, v, causal=True)
    assert isinstance(o, torch.Tensor) and o.dtype == torch.bfloat16
    qn, kn, vn = (x.float().numpy().astype(np_dtype("bfloat16")) for x in (q, k, v))
    check_attention(qn, kn, vn, o.float().numpy(), causal="top_left")
