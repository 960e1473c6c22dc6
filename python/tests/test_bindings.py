"""fa._C, the pybind11 module, used directly."""

from __future__ import annotations

import re

import numpy as np
import pytest

from fa import _C
from reference import check_attention, np_dtype


def spec(dtype: _C.DType = _C.DType.f32, head_dim: int = 8, **fields: object) -> _C.AttentionSpec:
    s = _C.AttentionSpec()
    s.dtype = dtype
    s.head_dim = head_dim
    for name, value in fields.items():
        setattr(s, name, value)
    return s


def test_spec_fields_round_trip() -> None:
    s = spec(
        _C.DType.bf16,
        64,
        head_dim_v=32,
        num_heads_q=8,
        num_heads_kv=2,
        scale=0.125,
        causal=_C.Causal.bottom_right,
        window=(16, 4),
        softcap=30.0,
        alibi=True,
        alibi_per_batch=True,
        bias=True,
        bias_dtype=_C.DType.f16,
        bias_broadcast=[True, False, True, False],
        dropout_p=0.1,
        score_mod="fa.yield %score : f32",
        mask_mod="%t = arith.constant true\nfa.yield %t : i1",
        return_lse=True,
    )
    assert (s.dtype, s.head_dim, s.head_dim_v, s.num_heads_q, s.num_heads_kv) == (
        _C.DType.bf16,
        64,
        32,
        8,
        2,
    )
    assert (s.scale, s.causal, s.window, s.softcap) == (
        0.125,
        _C.Causal.bottom_right,
        (16, 4),
        30.0,
    )
    assert (s.alibi, s.alibi_per_batch, s.bias, s.bias_dtype) == (True, True, True, _C.DType.f16)
    assert s.bias_broadcast == [True, False, True, False]
    assert (s.dropout_p, s.return_lse) == (0.1, True)
    assert s.score_mod.startswith("fa.yield") and "true" in s.mask_mod
    assert repr(s).startswith("AttentionSpec(dtype=bf16, head_dim=64, head_dim_v=32")
    defaults = _C.AttentionSpec()
    assert defaults.scale is None and defaults.window is None and defaults.causal == _C.Causal.none
    assert defaults.atomic_dq is False and defaults.deterministic is False
    assert "atomic" not in repr(defaults) and "deterministic" not in repr(defaults)
    defaults.atomic_dq = True
    assert repr(defaults).endswith(", atomic_dq=True)")
    defaults.atomic_dq, defaults.deterministic = False, True
    assert repr(defaults).endswith(", deterministic=True)")


@pytest.mark.parametrize("dtype", ["float32", "float16", "bfloat16"])
def test_forward_on_numpy_arrays(dtype: str) -> None:
    kernel = _C.compile(
        spec(getattr(_C.DType, {"float32": "f32", "float16": "f16", "bfloat16": "bf16"}[dtype]))
    )
    assert kernel.target == "host" and "fa.attention" in kernel.mlir
    rng = np.random.default_rng(0)
    # Transposed views: byte strides become element strides.
    q, k, v = (
        rng.standard_normal((1, 6, 2, 8)).astype(np.float32).astype(np_dtype(dtype)).swapaxes(1, 2)
        for _ in range(3)
    )
    out = np.empty((1, 2, 6, 8), np_dtype(dtype))
    kernel.forward(q, k, v, out)
    check_attention(q, k, v, out)


def test_forward_on_raw_tuples_and_buffers() -> None:
    kernel = _C.compile(spec(return_lse=True))
    rng = np.random.default_rng(1)
    q, k, v = (rng.standard_normal((1, 2, 5, 8)).astype(np.float32) for _ in range(3))
    out = np.empty((1, 2, 5, 8), np.float32)
    lse = np.empty((1, 2, 5), np.float32)

    def raw(a: np.ndarray) -> tuple[int, str, tuple[int, ...], tuple[int, ...], str]:
        return (a.ctypes.data, "f32", a.shape, tuple(s // 4 for s in a.strides), "cpu")

    kernel.forward(raw(q), raw(k), raw(v), raw(out), lse=memoryview(lse))
    check_attention(q, k, v, out, lse)


def test_argument_errors() -> None:
    kernel = _C.compile(spec())
    x = np.zeros((1, 2, 4, 8), np.float32)
    with pytest.raises(
        TypeError, match=r"^q must have dtype float16, bfloat16 or float32, got float64$"
    ):
        kernel.forward(x.astype(np.float64), x, x, x.copy())
    with pytest.raises(ValueError, match=r"^out is an output but is read-only$"):
        readonly = x.copy()
        readonly.flags.writeable = False
        kernel.forward(x, x, x, readonly)
    with pytest.raises(
        ValueError,
        match=r"^k: a raw tensor is a tuple \(data_ptr, dtype, shape, strides, device"
        r"\[, device_index\]\), got 2 items$",
    ):
        kernel.forward(x, (0, "f32"), x, x.copy())
    with pytest.raises(ValueError, match=r"^v: unsupported dtype 'c64'"):
        kernel.forward(x, x, (x.ctypes.data, "c64", x.shape, None, "cpu"), x.copy())
    # f64 is a dtype of captures, not of Q, K, V.
    with pytest.raises(_C.FAError, match=r"^fa::Kernel::forward: v must have dtype f32, got f64$"):
        kernel.forward(x, x, (x.ctypes.data, "f64", x.shape, None, "cpu"), x.copy())
    with pytest.raises(
        TypeError, match=r"^q must be a numpy array, an object with the buffer protocol"
    ):
        kernel.forward([1.0], x, x, x.copy())


def test_fa_errors_carry_the_checks_of_the_cpp_api() -> None:
    kernel = _C.compile(spec())
    x = np.zeros((1, 2, 4, 8), np.float32)
    with pytest.raises(
        _C.FAError,
        match=re.escape("fa::Kernel::forward: out head dim (out.shape[3]): expected 8, got 4"),
    ):
        kernel.forward(x, x, x, np.zeros((1, 2, 4, 4), np.float32))
    with pytest.raises(
        _C.FAError,
        match=r"^fa::Kernel::forward: argument 3 of @fa_forward \(an output\) overlaps argument 0",
    ):
        kernel.forward(x, x, x, x)
    with pytest.raises(_C.FAError, match=r"op softcap must be finite and positive"):
        _C.compile(spec(softcap=-1.0))
    assert issubclass(_C.FAError, RuntimeError) and _C.FAError.__module__ == "fa"


def test_run_pipeline_and_version() -> None:
    kernel = _C.compile(spec())
    lowered = _C.run_pipeline(kernel.mlir, "builtin.module(fa-decompose)")
    assert "fa.attention" not in lowered and "linalg" in lowered
    assert re.fullmatch(r"\d+\.\d+\.\d+", _C.version())


def test_raw_tensors_carry_their_cuda_device() -> None:
    """Raw tuples' "cuda:N", "cuda" (cuda:0) and (..., Device.cuda, N) reach the C++ API
    as device N: a GPU kernel (compiled without a GPU) refuses a call on two
    devices before touching one."""
    kernel = _C.compile(spec(_C.DType.bf16, 64), "sm_90a")
    shape = (1, 2, 16, 64)

    def raw(address: int, *device: object) -> tuple[object, ...]:
        return (address, "bf16", shape, None, *device)

    q, o = raw(0x10000, "cuda"), raw(0x40000, "cuda:0")
    with pytest.raises(
        _C.FAError, match=r"^fa::Kernel::forward: k is on cuda:1 but q is on cuda:0$"
    ):
        kernel.forward(q, raw(0x20000, "cuda:1"), raw(0x30000, "cuda:0"), o)
    with pytest.raises(
        _C.FAError, match=r"^fa::Kernel::forward: v is on cuda:3 but q is on cuda:0$"
    ):
        kernel.forward(q, raw(0x20000, "cuda:0"), raw(0x30000, _C.Device.cuda, 3), o)
    with pytest.raises(
        _C.FAError, match=r"^fa::Kernel::forward: out is on cuda:2 but q is on cuda:0$"
    ):
        kernel.forward(q, q, q, raw(0x40000, "cuda:0", 2))
    with pytest.raises(ValueError, match=r"^k: unsupported device 'cuda:x'$"):
        kernel.forward(q, raw(0x20000, "cuda:x"), q, o)
    workspace = (0x50000, "i8", (1 << 20,), None, "cuda:1")
    with pytest.raises(
        _C.FAError, match=r"^fa::Kernel::backward: workspace is on cuda:1 but q is on cuda:0$"
    ):
        lse = (0x60000, "f32", shape[:3], None, "cuda:0")
        kernel.backward(q, q, q, q, q, lse, o, o, o, workspace=workspace)
