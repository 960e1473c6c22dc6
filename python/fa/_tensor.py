"""Dtypes and tensor kinds, without importing torch.

A tensor is recognized by duck typing (``data_ptr()``, ``stride()``,
``dtype``, ``device``, ``shape``); ``fa._C`` reads the tensors themselves
(``fa._C.check_inputs``).
"""

from __future__ import annotations

import sys
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


def numpy_dtype(code: str) -> np.dtype[Any]:
    """The numpy dtype of FA's code (bfloat16 needs ml_dtypes)."""
    if code == "bf16":
        import ml_dtypes

        return np.dtype(ml_dtypes.bfloat16)  # type: ignore[no-any-return]
    return np.dtype(DTYPE_NAMES[code])
