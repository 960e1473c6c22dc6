"""numpy arrays and torch tensors as raw tensor views for ``fa._C``.

torch is optional and never imported unless a torch tensor is passed: a
tensor is recognized by duck typing (``data_ptr()``, ``stride()``,
``dtype``, ``device``, ``shape``), and outputs for torch inputs are made with
``torch.empty`` on the inputs' device.
"""

from __future__ import annotations

import importlib
import sys
from dataclasses import dataclass
from typing import Any

import numpy as np

# FA's dtype codes and the names users see (numpy's and torch's names agree).
DTYPE_NAMES = {"f16": "float16", "bf16": "bfloat16", "f32": "float32"}
_CODES = {name: code for code, name in DTYPE_NAMES.items()}


def is_torch_tensor(x: Any) -> bool:
    """Whether ``x`` looks like a torch tensor (duck typing; torch is not imported)."""
    return (
        not isinstance(x, np.ndarray)
        and callable(getattr(x, "data_ptr", None))
        and callable(getattr(x, "stride", None))
        and hasattr(x, "dtype")
        and hasattr(x, "device")
        and hasattr(x, "shape")
    )


def is_real_torch_tensor(x: Any) -> bool:
    """Whether ``x`` is a ``torch.Tensor`` (of an imported torch; never imports it)."""
    torch = sys.modules.get("torch")
    tensor_type = getattr(torch, "Tensor", None) if torch is not None else None
    return isinstance(tensor_type, type) and isinstance(x, tensor_type)


def is_tensor(x: Any) -> bool:
    return isinstance(x, np.ndarray) or is_torch_tensor(x)


def _numpy_dtype_code(dtype: np.dtype) -> str | None:
    if dtype == np.float32:
        return "f32"
    if dtype == np.float16:
        return "f16"
    if dtype.name == "bfloat16":  # ml_dtypes.bfloat16
        return "bf16"
    return None


def _torch_dtype_name(dtype: Any) -> str:
    name = str(dtype)
    return name[len("torch.") :] if name.startswith("torch.") else name


def dtype_code(dtype: Any) -> str | None:
    """FA's code ("f16", "bf16", "f32") for a dtype-like, or None.

    Accepts FA's codes and names ("bf16", "bfloat16"), numpy dtypes and types
    (including ``ml_dtypes.bfloat16``) and torch dtypes.
    """
    if isinstance(dtype, str):
        if dtype in DTYPE_NAMES:
            return dtype
        return _CODES.get(_torch_dtype_name(dtype))
    if type(dtype).__module__.startswith("torch"):
        return _CODES.get(_torch_dtype_name(dtype))
    try:
        return _numpy_dtype_code(np.dtype(dtype))
    except TypeError:
        return None


def dtype_name(dtype: Any) -> str:
    """How to name a dtype-like in a message ("float16", "int64", ...)."""
    if isinstance(dtype, np.dtype):
        return str(dtype.name)
    if type(dtype).__module__.startswith("torch"):
        return _torch_dtype_name(dtype)
    try:
        return str(np.dtype(dtype).name)
    except TypeError:
        return str(dtype)


@dataclass
class Tensor:
    """A checked view of one numpy array or torch tensor."""

    obj: Any  # keeps the memory alive while the kernel runs
    framework: str  # "numpy" or "torch"
    code: str | None  # FA's dtype code, None if unsupported
    dtype_name: str
    shape: tuple[int, ...]
    strides: tuple[int, ...]  # in elements
    device: str  # "cpu", "cuda:0", ...
    data_ptr: int

    @property
    def is_cpu(self) -> bool:
        return self.device == "cpu"

    def raw(self) -> tuple[int, str, tuple[int, ...], tuple[int, ...], str]:
        """The (data_ptr, dtype, shape, strides, device) tuple of ``fa._C``."""
        return (self.data_ptr, self.code or "f32", self.shape, self.strides, self.device)

    def broadcast_to_rank(self, rank: int) -> Tensor:
        """The same memory with leading size-1 dims up to ``rank``."""
        extra = rank - len(self.shape)
        return Tensor(
            self.obj,
            self.framework,
            self.code,
            self.dtype_name,
            (1,) * extra + self.shape,
            (0,) * extra + self.strides,
            self.device,
            self.data_ptr,
        )


def as_tensor(x: Any) -> Tensor | None:
    """``x`` as a :class:`Tensor`, or None when it is not an array/tensor."""
    if isinstance(x, np.ndarray):
        if any(s < 0 for s in x.strides):
            x = np.ascontiguousarray(x)  # FA reads any layout but negative strides
        itemsize = x.dtype.itemsize
        if any(s % itemsize for s in x.strides):
            x = np.ascontiguousarray(x)
        return Tensor(
            x,
            "numpy",
            _numpy_dtype_code(x.dtype),
            x.dtype.name,
            tuple(int(d) for d in x.shape),
            tuple(int(s) // itemsize for s in x.strides),
            "cpu",
            int(x.ctypes.data),
        )
    if is_torch_tensor(x):
        device = x.device
        device_type = getattr(device, "type", str(device))
        return Tensor(
            x,
            "torch",
            _CODES.get(_torch_dtype_name(x.dtype)),
            _torch_dtype_name(x.dtype),
            tuple(int(d) for d in x.shape),
            tuple(int(s) for s in x.stride()),
            "cpu" if device_type == "cpu" else str(device),
            int(x.data_ptr()),
        )
    return None


def empty(like: Tensor, shape: tuple[int, ...], code: str) -> Tensor:
    """A new contiguous tensor of ``shape`` and dtype ``code`` like ``like`` (framework, device)."""
    if like.framework == "torch":
        torch = importlib.import_module("torch")  # a torch tensor came in: torch is there
        result = torch.empty(shape, dtype=getattr(torch, DTYPE_NAMES[code]), device=like.obj.device)
    else:
        result = np.empty(shape, dtype=numpy_dtype(code))
    tensor = as_tensor(result)
    assert tensor is not None
    return tensor


def numpy_dtype(code: str) -> np.dtype[Any]:
    """The numpy dtype of FA's code (bfloat16 needs ml_dtypes)."""
    if code == "bf16":
        import ml_dtypes

        return np.dtype(ml_dtypes.bfloat16)  # type: ignore[no-any-return]
    return np.dtype(DTYPE_NAMES[code])
