"""``fa.attention`` and ``fa.compile``: validation, kernel cache, calls into ``fa._C``."""

from __future__ import annotations

import math
import numbers
import random
import sys
import threading
from collections import OrderedDict
from dataclasses import dataclass, field, replace
from typing import Any, Callable, Union

import numpy as np

from fa import _C
from fa._tensor import (
    DTYPE_NAMES,
    Tensor,
    as_tensor,
    dtype_code,
    dtype_name,
    empty,
    is_real_torch_tensor,
    is_tensor,
)
from fa._trace import Captures, trace_mask_mod, trace_score_mod

__all__ = ["Kernel", "attention", "attention_backward", "compile"]

CausalLike = Union[bool, str, None]
ScoreMod = Union[Callable[[Any, Any, Any, Any, Any], Any], str]
MaskMod = Union[Callable[[Any, Any, Any, Any], Any], str]

_CAUSAL = {
    "none": _C.Causal.none,
    "top_left": _C.Causal.top_left,
    "bottom_right": _C.Causal.bottom_right,
}
_C_DTYPES = {"f16": _C.DType.f16, "bf16": _C.DType.bf16, "f32": _C.DType.f32}


@dataclass(frozen=True)
class _Variant:
    """Everything a kernel is compiled for; the key of the kernel cache."""

    dtype: str
    head_dim: int
    head_dim_v: int
    num_heads_q: int = 0  # 0: any
    num_heads_kv: int = 0
    causal: str = "none"
    scale: float | None = None
    window: tuple[int, int] | None = None
    softcap: float | None = None
    alibi: str | None = None  # None, "heads" ([Hq]) or "per_batch" ([B, Hq])
    bias: tuple[str, tuple[bool, bool, bool, bool]] | None = None  # dtype, broadcast dims
    dropout_p: float = 0.0
    score_mod: str = ""
    mask_mod: str = ""
    return_lse: bool = False
    captures: tuple[tuple[str, int], ...] = ()  # (element type, rank) of each capture
    atomic_dq: bool = False  # GPU backward: dQ by atomics from the dK/dV kernel
    deterministic: bool = False  # GPU backward: dQ by its own kernel, reproducible

    def spec(self) -> _C.AttentionSpec:
        spec = _C.AttentionSpec()
        spec.dtype = _C_DTYPES[self.dtype]
        spec.head_dim = self.head_dim
        spec.head_dim_v = self.head_dim_v if self.head_dim_v != self.head_dim else 0
        spec.num_heads_q = self.num_heads_q
        spec.num_heads_kv = self.num_heads_kv
        spec.scale = self.scale
        spec.causal = _CAUSAL[self.causal]
        spec.window = self.window
        spec.softcap = self.softcap
        spec.alibi = self.alibi is not None
        spec.alibi_per_batch = self.alibi == "per_batch"
        if self.bias is not None:
            spec.bias = True
            spec.bias_dtype = _C_DTYPES[self.bias[0]]
            spec.bias_broadcast = list(self.bias[1])
        spec.dropout_p = self.dropout_p
        spec.score_mod = self.score_mod
        spec.mask_mod = self.mask_mod
        spec.return_lse = self.return_lse
        spec.captures = list(self.captures)
        spec.atomic_dq = self.atomic_dq
        spec.deterministic = self.deterministic
        return spec


# Checks of the options. Each raises TypeError / ValueError naming the argument.


def _is_number(x: Any) -> bool:
    return isinstance(x, numbers.Real) and not isinstance(x, bool)


def _check_causal(api: str, causal: Any) -> str:
    message = (
        f"{api}: causal must be False, True (top-left), 'top_left' or 'bottom_right', got "
        f"{causal!r}"
    )
    if causal is None or causal is False:
        return "none"
    if causal is True:
        return "top_left"
    if isinstance(causal, _C.Causal):
        return causal.name
    if not isinstance(causal, str):
        raise TypeError(message)
    if causal not in ("top_left", "bottom_right"):
        raise ValueError(message)
    return causal


def _check_positive(api: str, name: str, value: Any, what: str) -> float | None:
    if value is None:
        return None
    message = f"{api}: {name} must be {what}, got {value!r}"
    if not _is_number(value):
        raise TypeError(message)
    if not (math.isfinite(float(value)) and float(value) > 0):
        raise ValueError(message)
    return float(value)


def _check_window(api: str, window: Any) -> tuple[int, int] | None:
    if window is None:
        return None
    message = f"{api}: window must be None or a pair (left, right) of integers >= 0, got {window!r}"
    if (
        not isinstance(window, (tuple, list))
        or len(window) != 2
        or not all(isinstance(w, numbers.Integral) and not isinstance(w, bool) for w in window)
    ):
        raise TypeError(message)
    left, right = int(window[0]), int(window[1])
    if left < 0 or right < 0:
        raise ValueError(message)
    return left, right


def _check_dropout(api: str, dropout_p: Any) -> float:
    message = f"{api}: dropout_p must be a number in [0, 1), got {dropout_p!r}"
    if not _is_number(dropout_p):
        raise TypeError(message)
    if not 0.0 <= float(dropout_p) < 1.0:
        raise ValueError(message)
    return float(dropout_p)


def _check_seed(api: str, seed: Any) -> int | None:
    if seed is None:
        return None
    if (
        not isinstance(seed, numbers.Integral)
        or isinstance(seed, bool)
        or not -(2**63) <= int(seed) < 2**63
    ):
        raise ValueError(f"{api}: dropout_seed must be None or a 64-bit integer, got {seed!r}")
    return int(seed)


def _check_dtype_like(api: str, name: str, dtype: Any) -> str:
    code = dtype_code(dtype)
    if code is None:
        raise TypeError(
            f"{api}: {name} must be float16, bfloat16 or float32, got {dtype_name(dtype)}"
        )
    return code


def _check_head_count(api: str, name: str, value: Any) -> int:
    if value is None:
        return 0
    if not isinstance(value, numbers.Integral) or isinstance(value, bool) or int(value) <= 0:
        raise ValueError(f"{api}: {name} must be None or an integer > 0, got {value!r}")
    return int(value)


# Checks of the tensors.


def _tensor(api: str, name: str, x: Any) -> Tensor:
    t = as_tensor(x)
    if t is None:
        raise TypeError(
            f"{api}: {name} must be a numpy array or a torch tensor, got {type(x).__name__}"
        )
    if not t.is_cpu and not t.device.startswith("cuda"):
        raise ValueError(f"{api}: {name} must be on the CPU or a CUDA device, got {t.device}")
    return t


def _check_float_dtype(api: str, name: str, t: Tensor) -> None:
    if t.code is None:
        raise TypeError(
            f"{api}: {name} must have dtype float16, bfloat16 or float32, got {t.dtype_name}"
        )


@dataclass
class _Inputs:
    q: Tensor
    k: Tensor
    v: Tensor
    bias: Tensor | None
    slopes: Tensor | None

    @property
    def dtype(self) -> str:
        assert self.q.code is not None
        return self.q.code

    @property
    def batch(self) -> int:
        return self.q.shape[0]

    @property
    def heads_q(self) -> int:
        return self.q.shape[1]

    @property
    def heads_kv(self) -> int:
        return self.k.shape[1]

    @property
    def head_dim(self) -> int:
        return self.q.shape[3]

    @property
    def head_dim_v(self) -> int:
        return self.v.shape[3]

    @property
    def bias_layout(self) -> tuple[str, tuple[bool, bool, bool, bool]] | None:
        if self.bias is None:
            return None
        assert self.bias.code is not None
        b0, b1, b2, b3 = (d == 1 for d in self.bias.shape)
        return self.bias.code, (b0, b1, b2, b3)

    @property
    def alibi_layout(self) -> str | None:
        if self.slopes is None:
            return None
        return "per_batch" if len(self.slopes.shape) == 2 else "heads"


def _expect_equal(
    api: str, what: str, want_name: str, want: int, name: str, dim: int, t: Tensor
) -> None:
    if t.shape[dim] != want:
        raise ValueError(
            f"{api}: {what} ({want_name} = {want}), got {name}.shape[{dim}] = {t.shape[dim]}"
        )


def _check_inputs(
    api: str, q: Any, k: Any, v: Any, bias: Any = None, alibi_slopes: Any = None
) -> _Inputs:
    """Checks Q, K, V (and bias, ALiBi slopes) against each other."""
    tq, tk, tv = _tensor(api, "q", q), _tensor(api, "k", k), _tensor(api, "v", v)
    _check_float_dtype(api, "q", tq)
    for name, t in (("k", tk), ("v", tv)):
        if t.device != tq.device:
            raise ValueError(
                f"{api}: {name} must be on the device of q ({tq.device}), got {t.device}"
            )
    for name, t in (("k", tk), ("v", tv)):
        if t.code != tq.code:
            raise TypeError(
                f"{api}: {name} must have the dtype of q ({tq.dtype_name}), got {t.dtype_name}"
            )
    for name, t, dims in (
        ("q", tq, "[B, Hq, Nq, D]"),
        ("k", tk, "[B, Hkv, Nk, D]"),
        ("v", tv, "[B, Hkv, Nk, Dv]"),
    ):
        if len(t.shape) != 4:
            raise ValueError(f"{api}: {name} must have rank 4 {dims}, got shape {t.shape}")
    b, hq, nq, d = tq.shape
    hkv, nk = tk.shape[1], tk.shape[2]
    _expect_equal(api, "k must have the batch size of q", "q.shape[0]", b, "k", 0, tk)
    _expect_equal(api, "v must have the batch size of q", "q.shape[0]", b, "v", 0, tv)
    _expect_equal(api, "k must have the head dim of q", "q.shape[3]", d, "k", 3, tk)
    _expect_equal(api, "v must have the heads of k", "k.shape[1]", hkv, "v", 1, tv)
    _expect_equal(api, "v must have the sequence length of k", "k.shape[2]", nk, "v", 2, tv)
    if d == 0 or tv.shape[3] == 0:
        raise ValueError(
            f"{api}: head dims must be > 0, got q.shape[3] = {d}, v.shape[3] = {tv.shape[3]}"
        )
    if hkv == 0 or hq % hkv != 0:
        raise ValueError(
            f"{api}: q heads (q.shape[1] = {hq}) must be a multiple of k/v heads (k.shape[1] = "
            f"{hkv})"
        )

    tbias = None
    if bias is not None:
        tbias = _tensor(api, "bias", bias)
        _check_float_dtype(api, "bias", tbias)
        full = (b, hq, nq, nk)
        if len(tbias.shape) > 4 or any(
            got not in (1, want) for got, want in zip(tbias.shape[::-1], full[::-1])
        ):
            raise ValueError(
                f"{api}: bias of shape {tbias.shape} does not broadcast to [B, Hq, Nq, Nk] = "
                f"{list(full)}"
            )
        tbias = tbias.broadcast_to_rank(4)

    tslopes = None
    if alibi_slopes is not None:
        if isinstance(alibi_slopes, (list, tuple)):
            alibi_slopes = np.asarray(alibi_slopes, dtype=np.float32)
        tslopes = _tensor(api, "alibi_slopes", alibi_slopes)
        if tslopes.code != "f32":
            raise TypeError(
                f"{api}: alibi_slopes must have dtype float32, got {tslopes.dtype_name}"
            )
        if tslopes.shape not in ((hq,), (b, hq)):
            raise ValueError(
                f"{api}: alibi_slopes must have shape [Hq] = [{hq}] or [B, Hq] = [{b}, {hq}], got "
                f"{tslopes.shape}"
            )
    return _Inputs(tq, tk, tv, tbias, tslopes)


def _check_return_dbias(api: str, inputs: _Inputs, return_dbias: Any) -> None:
    if return_dbias and inputs.bias is None:
        raise ValueError(f"{api}: return_dbias=True needs a bias")


def _check_grad_inputs(
    api: str, inputs: _Inputs, out: Any, dout: Any, lse: Any
) -> tuple[Tensor, Tensor, Tensor]:
    """Checks the forward's O and lse and dO = dLoss/dO against Q, K, V."""
    b, hq, nq = inputs.q.shape[:3]
    want_o = (b, hq, nq, inputs.head_dim_v)
    checked = []
    for name, x, shape, dims in (
        ("out", out, want_o, "[B, Hq, Nq, Dv]"),
        ("dout", dout, want_o, "[B, Hq, Nq, Dv]"),
        ("lse", lse, (b, hq, nq), "[B, Hq, Nq]"),
    ):
        t = _tensor(api, name, x)
        if t.device != inputs.q.device:
            raise ValueError(
                f"{api}: {name} must be on the device of q ({inputs.q.device}), got {t.device}"
            )
        want_code = "f32" if name == "lse" else inputs.dtype
        if t.code != want_code:
            want = "float32" if name == "lse" else f"the dtype of q ({inputs.q.dtype_name})"
            raise TypeError(f"{api}: {name} must have {want}, got {t.dtype_name}")
        if t.shape != shape:
            raise ValueError(f"{api}: {name} must have shape {dims} = {list(shape)}, got {t.shape}")
        checked.append(t)
    return checked[0], checked[1], checked[2]


# The kernel cache of fa.attention: one kernel per variant, any shapes.

_CACHE_SIZE = 64
_cache: OrderedDict[tuple[_Variant, str], Kernel] = OrderedDict()
_cache_lock = threading.Lock()


def _compile(api: str, variant: _Variant, target: str = "host") -> Kernel:
    try:
        ckernel = _C.compile(variant.spec(), target)
    except _C.FAError as e:
        if variant.dropout_p > 0 and "dropout is not supported" in str(e):
            raise NotImplementedError(
                f"{api}: dropout is not supported on the host yet (dropout_p = {variant.dropout_p})"
            ) from e
        raise
    return Kernel(variant, ckernel)


def _cached_kernel(api: str, variant: _Variant, target: str = "host") -> Kernel:
    key = (variant, target)
    with _cache_lock:
        kernel = _cache.get(key)
        if kernel is not None:
            _cache.move_to_end(key)
            return kernel
    kernel = _compile(api, variant, target)  # outside the lock: compiling takes a while
    with _cache_lock:
        kernel = _cache.setdefault(key, kernel)
        _cache.move_to_end(key)
        while len(_cache) > _CACHE_SIZE:
            _cache.popitem(last=False)
    return kernel


def clear_cache() -> None:
    """Forgets the kernels ``fa.attention`` compiled."""
    with _cache_lock:
        _cache.clear()


class Kernel:
    """A compiled attention variant; call it with Q, K, V of any B, H, N.

    Made by :func:`fa.compile`. ``kernel(q, k, v, bias=..., alibi_slopes=...)``
    returns O, or (O, lse) when compiled with ``return_lse=True``.
    """

    def __init__(
        self, variant: _Variant, kernel: _C.Kernel, captures: tuple[Any, ...] = ()
    ) -> None:
        self._variant = variant
        self._kernel = kernel
        # The arrays fa.compile's modifiers index: read on every call (the
        # cached kernels of fa.attention get them per call instead).
        self._captures = captures

    @property
    def mlir(self) -> str:
        """The ``fa.attention`` (MLIR text) the kernel was compiled from."""
        return self._kernel.mlir

    @property
    def target(self) -> str:
        """Where the kernel runs: "host" or a GPU chip ("sm_80", "sm_90a", ...)."""
        return self._kernel.target

    @property
    def ptx(self) -> str:
        """The PTX text of a GPU kernel; :class:`fa.FAError` for a host kernel."""
        return self._kernel.ptx

    @property
    def spec(self) -> _C.AttentionSpec:
        return self._kernel.spec

    def __repr__(self) -> str:
        return f"<fa.Kernel {self.target} {self.spec!r}>"

    def __call__(
        self,
        q: Any,
        k: Any,
        v: Any,
        *,
        bias: Any = None,
        alibi_slopes: Any = None,
        dropout_seed: int | None = None,
    ) -> Any:
        api = "fa.Kernel"
        inputs = _check_inputs(api, q, k, v, bias, alibi_slopes)
        self._check(api, inputs)
        return self._run(inputs, _check_seed(api, dropout_seed))

    def _check(self, api: str, inputs: _Inputs) -> None:
        """Checks inputs (already consistent with each other) against the kernel."""
        var = self._variant
        if inputs.dtype != var.dtype:
            raise TypeError(
                f"{api}: q must have dtype {DTYPE_NAMES[var.dtype]} (the kernel's), got "
                f"{inputs.q.dtype_name}"
            )
        for name, dim, want, what in (
            ("q", 3, var.head_dim, "head dim {}"),
            ("v", 3, var.head_dim_v, "head dim {}"),
            ("q", 1, var.num_heads_q, "{} heads"),  # 0: any
            ("k", 1, var.num_heads_kv, "{} heads"),
        ):
            got = getattr(inputs, name).shape[dim]
            if want and got != want:
                raise ValueError(
                    f"{api}: {name} must have {what.format(want)} (the kernel's), "
                    f"got {name}.shape[{dim}] = {got}"
                )
        if var.bias is None and inputs.bias is not None:
            raise ValueError(
                f"{api}: the kernel was compiled without a bias; compile one with bias=..."
            )
        if var.bias is not None:
            want_dtype, want_broadcast = var.bias
            dims = _bias_dims(want_broadcast)
            if inputs.bias is None:
                raise ValueError(f"{api}: the kernel was compiled with a bias {dims}; pass bias=")
            layout = inputs.bias_layout
            assert layout is not None
            got_dtype, got_broadcast = layout
            if got_dtype != want_dtype:
                raise TypeError(
                    f"{api}: bias must have dtype {DTYPE_NAMES[want_dtype]} (the kernel's), got "
                    f"{inputs.bias.dtype_name}"
                )
            if any(bc and not got for bc, got in zip(want_broadcast, got_broadcast)):
                raise ValueError(
                    f"{api}: bias must have shape {dims} (the kernel's), got {inputs.bias.shape}"
                )
        if var.alibi is None and inputs.slopes is not None:
            raise ValueError(
                f"{api}: the kernel was compiled without ALiBi; compile one with alibi_slopes=..."
            )
        if var.alibi is not None:
            want_shape = "[B, Hq]" if var.alibi == "per_batch" else "[Hq]"
            if inputs.slopes is None:
                raise ValueError(
                    f"{api}: the kernel was compiled with ALiBi; pass alibi_slopes= {want_shape}"
                )
            if inputs.alibi_layout != var.alibi:
                raise ValueError(
                    f"{api}: alibi_slopes must have shape {want_shape} (the kernel's), got "
                    f"{inputs.slopes.shape}"
                )

    def backward(
        self,
        q: Any,
        k: Any,
        v: Any,
        out: Any,
        dout: Any,
        lse: Any,
        *,
        bias: Any = None,
        alibi_slopes: Any = None,
        dropout_seed: int | None = None,
        return_dbias: bool = False,
    ) -> tuple[Any, ...]:
        """Gradients ``(dq, dk, dv)`` of the kernel's O given ``dout`` = dLoss/dO.

        ``q, k, v`` (and ``bias``, ``alibi_slopes``, ``dropout_seed``) are
        the forward call's, ``out`` and ``lse`` its results (the lse of a
        kernel compiled with ``return_lse=True``). dq, dk, dv are new
        contiguous arrays/tensors of the shapes and dtype of q, k, v; a K/V
        head shared by several query heads gets the sum over them. With
        ``return_dbias=True`` (host and GPU) the result is ``(dq, dk, dv,
        dbias)``, dbias of the bias's shape and dtype (summed over its
        broadcast dims). The backward kernel is compiled on the first call.
        """
        api = "fa.Kernel.backward"
        inputs = _check_inputs(api, q, k, v, bias, alibi_slopes)
        self._check(api, inputs)
        grads = _check_grad_inputs(api, inputs, out, dout, lse)
        _check_return_dbias(api, inputs, return_dbias)
        seed = _check_seed(api, dropout_seed)
        return self._run_backward(inputs, grads, seed, bool(return_dbias))

    def _run_backward(
        self,
        inputs: _Inputs,
        grads: tuple[Tensor, Tensor, Tensor],
        dropout_seed: int | None,
        return_dbias: bool = False,
        captures: tuple[Any, ...] | None = None,
    ) -> tuple[Any, ...]:
        out, dout, lse = grads
        var = self._variant
        dq = empty(inputs.q, inputs.q.shape, var.dtype)
        dk = empty(inputs.q, inputs.k.shape, var.dtype)
        dv = empty(inputs.q, inputs.v.shape, var.dtype)
        b, hq, nq = inputs.q.shape[:3]
        full = (b, hq, nq, inputs.k.shape[2])
        dbias = None
        if return_dbias and var.bias is not None and inputs.bias is not None:
            # The kernel's bias shape; reduced to the caller's afterwards.
            shape = tuple(1 if bc else n for bc, n in zip(var.bias[1], full))
            dbias = empty(inputs.q, shape, var.bias[0])
        outputs = [t for t in (dq, dk, dv, dbias) if t is not None]
        if any(0 in t.shape for t in (dq, dk, dv)):
            # Nothing to compute; an empty Q (or K) still has zero gradients.
            for t in outputs:
                t.obj[...] = 0
            return self._grads(inputs, outputs)
        bias = inputs.bias
        if bias is not None and var.bias is not None:
            bias = _expand(bias, var.bias[1], full)
        capture_raws, keep = _capture_raws(
            "fa.attention_backward", self._captures if captures is None else captures
        )
        self._kernel.backward(
            inputs.q.raw(),
            inputs.k.raw(),
            inputs.v.raw(),
            out.raw(),
            dout.raw(),
            lse.raw(),
            dq.raw(),
            dk.raw(),
            dv.raw(),
            bias.raw() if bias is not None else None,
            inputs.slopes.raw() if inputs.slopes is not None else None,
            int(dropout_seed or 0),
            _current_stream(inputs.q),
            dbias.raw() if dbias is not None else None,
            capture_raws,
        )
        del keep
        return self._grads(inputs, outputs)

    @staticmethod
    def _grads(inputs: _Inputs, outputs: list[Tensor]) -> tuple[Any, ...]:
        """The gradients as arrays/tensors; dbias summed to the caller's bias shape."""
        grads = [t.obj for t in outputs]
        if len(outputs) == 4 and inputs.bias is not None:
            user = inputs.bias  # rank 4, size 1 where the caller's bias broadcasts
            dims = tuple(
                i for i, (n, m) in enumerate(zip(user.shape, outputs[3].shape)) if n == 1 != m
            )
            dbias = grads[3]
            if dims:
                if outputs[3].framework == "torch":
                    dbias = dbias.sum(dim=dims, keepdim=True)
                else:
                    dbias = dbias.sum(axis=dims, keepdims=True, dtype=np.float32).astype(
                        dbias.dtype
                    )
            grads[3] = dbias.reshape(tuple(inputs.bias.obj.shape))
        return tuple(grads)

    def _run(
        self, inputs: _Inputs, dropout_seed: int | None, captures: tuple[Any, ...] | None = None
    ) -> Any:
        var = self._variant
        b, hq, nq = inputs.q.shape[:3]
        out = empty(inputs.q, (b, hq, nq, var.head_dim_v), var.dtype)
        lse = empty(inputs.q, (b, hq, nq), "f32") if var.return_lse else None
        if b * hq * nq == 0:  # nothing to compute (numpy gives such arrays stride 0)
            return (out.obj, lse.obj) if lse is not None else out.obj
        if dropout_seed is None:
            dropout_seed = random.getrandbits(63) if var.dropout_p > 0 else 0
        bias = inputs.bias
        if bias is not None and var.bias is not None:
            full = (b, hq, nq, inputs.k.shape[2])
            bias = _expand(bias, var.bias[1], full)
        capture_raws, keep = _capture_raws(
            "fa.attention", self._captures if captures is None else captures
        )
        self._kernel.forward(
            inputs.q.raw(),
            inputs.k.raw(),
            inputs.v.raw(),
            out.raw(),
            lse.raw() if lse is not None else None,
            bias.raw() if bias is not None else None,
            inputs.slopes.raw() if inputs.slopes is not None else None,
            int(dropout_seed),
            _current_stream(inputs.q),
            capture_raws,
        )
        del keep
        return (out.obj, lse.obj) if lse is not None else out.obj


def _current_stream(t: Tensor) -> int:
    """torch's current CUDA stream for a CUDA tensor (the kernel runs on it), else 0."""
    if t.is_cpu:
        return 0
    import torch  # only CUDA torch tensors get here

    return int(torch.cuda.current_stream(t.obj.device).cuda_stream)


def _bias_dims(broadcast: tuple[bool, ...]) -> str:
    """ "[1, Hq, Nq, Nk]" for a bias broadcast over B."""
    names = ("B", "Hq", "Nq", "Nk")
    return "[" + ", ".join("1" if bc else name for bc, name in zip(broadcast, names)) + "]"


def _expand(bias: Tensor, broadcast: tuple[bool, ...], full: tuple[int, ...]) -> Tensor:
    """``bias`` with its size-1 dims that the kernel does not broadcast expanded (stride 0)."""
    shape, strides = list(bias.shape), list(bias.strides)
    for i, (bc, size) in enumerate(zip(broadcast, full)):
        if not bc and shape[i] == 1:
            shape[i], strides[i] = size, 0
    return replace(bias, shape=tuple(shape), strides=tuple(strides))


@dataclass(frozen=True)
class _Options:
    """fa.attention's variant options, checked and normalized (score_mod/mask_mod traced)."""

    causal: str = "none"
    scale: float | None = None
    window: tuple[int, int] | None = None
    softcap: float | None = None
    dropout_p: float = 0.0
    score_mod: str = ""
    mask_mod: str = ""
    # The arrays the modifiers index (the op's captures) and their
    # (element type, rank).
    captures: tuple[Any, ...] = field(default=(), compare=False)
    capture_types: tuple[tuple[str, int], ...] = ()
    # Where the modifiers found each capture (see fa._trace.Captures.sources).
    capture_sources: tuple[Any, ...] = field(default=(), compare=False)


def _capture_raws(api: str, arrays: tuple[Any, ...]) -> tuple[list[Any], list[Any]]:
    """The raw views of captured arrays for ``fa._C`` (and the objects to keep alive)."""
    raws, keep = [], []
    for i, array in enumerate(arrays):
        t = as_tensor(array)
        if t is None:
            raise TypeError(f"{api}: captured array {i} is not a numpy array or torch tensor")
        code = _CAPTURE_CODES[t.dtype_name]
        raws.append((t.data_ptr, code, t.shape, t.strides, t.device))
        keep.append(t)
    return raws, keep


# fa._C dtype names of captures: unsigned and bool elements are passed as the
# signed integers of their width (the traced region zero-extends them).
_CAPTURE_CODES = {
    "int8": "i8",
    "int16": "i16",
    "int32": "i32",
    "int64": "i64",
    "uint8": "i8",
    "uint16": "i16",
    "uint32": "i32",
    "bool": "i8",
    "float16": "f16",
    "bfloat16": "bf16",
    "float32": "f32",
    "float64": "f64",
}


def _check_options(
    api: str,
    causal: Any,
    scale: Any,
    window: Any,
    softcap: Any,
    dropout_p: Any,
    score_mod: Any,
    mask_mod: Any,
) -> _Options:
    return _Options(
        causal=_check_causal(api, causal),
        scale=_check_positive(api, "scale", scale, "None or a finite number > 0"),
        window=_check_window(api, window),
        softcap=_check_positive(api, "softcap", softcap, "None or a finite number > 0"),
        dropout_p=_check_dropout(api, dropout_p),
        **_traced(api, score_mod, mask_mod),
    )


def _traced(api: str, score_mod: Any, mask_mod: Any) -> dict[str, Any]:
    """The traced regions and the captures they share, as _Options fields."""
    captures = Captures()
    return {
        "score_mod": (trace_score_mod(score_mod, api, captures) if score_mod is not None else ""),
        "mask_mod": trace_mask_mod(mask_mod, api, captures) if mask_mod is not None else "",
        "captures": tuple(captures.arrays),
        "capture_types": captures.signature(),
        "capture_sources": tuple(captures.sources),
    }


def _variant_of(inputs: _Inputs, options: _Options, return_lse: bool) -> _Variant:
    return _Variant(
        dtype=inputs.dtype,
        head_dim=inputs.head_dim,
        head_dim_v=inputs.head_dim_v,
        causal=options.causal,
        scale=options.scale,
        window=options.window,
        softcap=options.softcap,
        alibi=inputs.alibi_layout,
        bias=inputs.bias_layout,
        dropout_p=options.dropout_p,
        score_mod=options.score_mod,
        mask_mod=options.mask_mod,
        return_lse=return_lse,
        captures=options.capture_types,
    )


def _kernel_for(api: str, inputs: _Inputs, options: _Options, return_lse: bool) -> Kernel:
    """The cached kernel of the variant; CUDA tensors get the device's chip ("auto"),
    and under torch.use_deterministic_algorithms(True) the deterministic dQ."""
    target = "host" if inputs.q.is_cpu else "auto"
    variant = _variant_of(inputs, options, return_lse)
    torch = sys.modules.get("torch")
    if target != "host" and torch is not None and torch.are_deterministic_algorithms_enabled():
        variant = replace(variant, deterministic=True)
    return _cached_kernel(api, variant, target)


def _forward(
    api: str,
    q: Any,
    k: Any,
    v: Any,
    bias: Any,
    alibi_slopes: Any,
    options: _Options,
    dropout_seed: int | None,
    return_lse: bool,
) -> Any:
    """fa.attention once the options are checked: O, or (O, lse)."""
    inputs = _check_inputs(api, q, k, v, bias, alibi_slopes)
    kernel = _kernel_for(api, inputs, options, return_lse)
    return kernel._run(inputs, dropout_seed, options.captures)


def _backward(
    api: str,
    q: Any,
    k: Any,
    v: Any,
    out: Any,
    dout: Any,
    lse: Any,
    bias: Any,
    alibi_slopes: Any,
    options: _Options,
    dropout_seed: int | None,
    return_dbias: bool = False,
) -> tuple[Any, ...]:
    """fa.attention_backward once the options are checked: (dq, dk, dv[, dbias])."""
    inputs = _check_inputs(api, q, k, v, bias, alibi_slopes)
    grads = _check_grad_inputs(api, inputs, out, dout, lse)
    _check_return_dbias(api, inputs, return_dbias)
    # The kernel that returns the lse: the one whose forward autograd runs.
    kernel = _kernel_for(api, inputs, options, True)
    return kernel._run_backward(inputs, grads, dropout_seed, return_dbias, options.captures)


def attention(
    q: Any,
    k: Any,
    v: Any,
    *,
    causal: CausalLike = False,
    scale: float | None = None,
    window: tuple[int, int] | None = None,
    softcap: float | None = None,
    alibi_slopes: Any = None,
    bias: Any = None,
    dropout_p: float = 0.0,
    score_mod: ScoreMod | None = None,
    mask_mod: MaskMod | None = None,
    return_lse: bool = False,
    dropout_seed: int | None = None,
) -> Any:
    """Exact attention ``softmax(mask(mod(scale * Q K^T))) V``; see docs/python.md.

    Q is ``[B, Hq, Nq, D]``, K ``[B, Hkv, Nk, D]``, V ``[B, Hkv, Nk, Dv]``
    (numpy arrays or torch tensors of float16, bfloat16 or float32, any
    strides; CUDA tensors run the GPU kernel on torch's current stream).
    Returns O ``[B, Hq, Nq, Dv]`` (contiguous, dtype of Q), or
    ``(O, lse)`` with ``return_lse=True`` (lse ``[B, Hq, Nq]``, float32).
    Kernels are compiled once per variant and cached. On torch tensors it is
    the custom op ``torch.ops.fa.attention``: differentiable with respect to
    Q, K and V, and traceable by ``torch.compile``.
    """
    api = "fa.attention"
    if is_real_torch_tensor(q):
        from fa import _torch

        return _torch.attention(
            q,
            k,
            v,
            causal=causal,
            scale=scale,
            window=window,
            softcap=softcap,
            alibi_slopes=alibi_slopes,
            bias=bias,
            dropout_p=dropout_p,
            score_mod=score_mod,
            mask_mod=mask_mod,
            return_lse=return_lse,
            dropout_seed=dropout_seed,
        )
    inputs = _check_inputs(api, q, k, v, bias, alibi_slopes)
    options = _check_options(api, causal, scale, window, softcap, dropout_p, score_mod, mask_mod)
    seed = _check_seed(api, dropout_seed)
    return _kernel_for(api, inputs, options, bool(return_lse))._run(inputs, seed, options.captures)


def attention_backward(
    q: Any,
    k: Any,
    v: Any,
    out: Any,
    dout: Any,
    lse: Any,
    *,
    causal: CausalLike = False,
    scale: float | None = None,
    window: tuple[int, int] | None = None,
    softcap: float | None = None,
    alibi_slopes: Any = None,
    bias: Any = None,
    dropout_p: float = 0.0,
    score_mod: ScoreMod | None = None,
    mask_mod: MaskMod | None = None,
    dropout_seed: int | None = None,
    return_dbias: bool = False,
) -> tuple[Any, ...]:
    """Gradients ``(dq, dk, dv)`` of :func:`fa.attention` given ``dout`` = dLoss/dO.

    ``q, k, v`` and the keywords are those of the forward call, ``out`` and
    ``lse`` what it returned with ``return_lse=True``. Returns new contiguous
    dq, dk, dv with the shapes and dtype of q, k, v (a K/V head shared by
    several query heads gets the sum over them); with ``return_dbias=True``
    also dbias, of the shape and dtype of ``bias`` (summed over
    its broadcast dims). No gradient of ``alibi_slopes``. The backward kernel
    is compiled once per variant.
    """
    api = "fa.attention_backward"
    inputs = _check_inputs(api, q, k, v, bias, alibi_slopes)
    options = _check_options(api, causal, scale, window, softcap, dropout_p, score_mod, mask_mod)
    seed = _check_seed(api, dropout_seed)
    grads = _check_grad_inputs(api, inputs, out, dout, lse)
    _check_return_dbias(api, inputs, return_dbias)
    kernel = _kernel_for(api, inputs, options, True)
    return kernel._run_backward(inputs, grads, seed, bool(return_dbias), options.captures)


def _bias_layout(api: str, bias: Any) -> tuple[str, tuple[bool, bool, bool, bool]] | None:
    """fa.compile's bias: None, a dtype (full [B, Hq, Nq, Nk]) or an example tensor."""
    if bias is None or bias is False:
        return None
    if is_tensor(bias):
        t = _tensor(api, "bias", bias)
        _check_float_dtype(api, "bias", t)
        if len(t.shape) > 4:
            raise ValueError(
                f"{api}: bias must have rank <= 4 (broadcastable to [B, Hq, Nq, Nk]), got shape "
                f"{t.shape}"
            )
        t = t.broadcast_to_rank(4)
        assert t.code is not None
        b0, b1, b2, b3 = (d == 1 for d in t.shape)
        return t.code, (b0, b1, b2, b3)
    code = dtype_code(bias)
    if code is None:
        raise TypeError(
            f"{api}: bias must be None, a dtype (float16, bfloat16, float32) or an example array, "
            f"got {bias!r}"
        )
    return code, (False, False, False, False)


def _alibi_layout(api: str, alibi_slopes: Any) -> str | None:
    """fa.compile's alibi_slopes: None/False, True ([Hq]), "per_batch" ([B, Hq]) or an example."""
    if alibi_slopes is None or alibi_slopes is False:
        return None
    if alibi_slopes is True:
        return "heads"
    if isinstance(alibi_slopes, str) and alibi_slopes == "per_batch":
        return "per_batch"
    if is_tensor(alibi_slopes):
        t = _tensor(api, "alibi_slopes", alibi_slopes)
        if t.code != "f32":
            raise TypeError(f"{api}: alibi_slopes must have dtype float32, got {t.dtype_name}")
        if len(t.shape) in (1, 2):
            return "heads" if len(t.shape) == 1 else "per_batch"
        raise ValueError(f"{api}: alibi_slopes must have shape [Hq] or [B, Hq], got {t.shape}")
    raise ValueError(
        f"{api}: alibi_slopes must be None, True ([Hq]), 'per_batch' ([B, Hq]) or an example "
        f"array, got {alibi_slopes!r}"
    )


def compile(  # noqa: A001 - fa.compile, like torch.compile
    dtype: Any,
    head_dim: int,
    head_dim_v: int | None = None,
    *,
    num_heads_q: int | None = None,
    num_heads_kv: int | None = None,
    causal: CausalLike = False,
    scale: float | None = None,
    window: tuple[int, int] | None = None,
    softcap: float | None = None,
    alibi_slopes: Any = None,
    bias: Any = None,
    dropout_p: float = 0.0,
    score_mod: ScoreMod | None = None,
    mask_mod: MaskMod | None = None,
    return_lse: bool = False,
    atomic_dq: bool = False,
    deterministic: bool = False,
    target: str = "host",
) -> Kernel:
    """Compiles one attention variant into a reusable :class:`Kernel`.

    ``dtype`` is the dtype of Q, K, V (float16, bfloat16, float32: a name,
    numpy/ml_dtypes or torch dtype). ``bias`` is None, a dtype (bias of full
    shape ``[B, Hq, Nq, Nk]``) or an example array whose size-1 dims mark the
    broadcast ones; ``alibi_slopes`` is None, True (``[Hq]``), ``"per_batch"``
    (``[B, Hq]``) or an example array. The other keywords are those of
    :func:`fa.attention`. The GPU backward computes dQ one of two ways:
    ``atomic_dq=True`` has its dK/dV kernel add dQ into an f32 accumulator
    (FlashAttention's way; bulk reductions on sm_90a), whose last bits vary
    run to run; ``deterministic=True`` gives dQ its own kernel, bitwise
    reproducible. By default it is atomic where that is FA's fastest backward
    (sm_90a; D = 64 or 128 without bias, ALiBi, score_mod, mask_mod, dropout
    or softcap) and deterministic elsewhere.
    """
    api = "fa.compile"
    code = _check_dtype_like(api, "dtype", dtype)
    for name, value in (("head_dim", head_dim), ("head_dim_v", head_dim_v)):
        if value is None and name == "head_dim_v":
            continue
        if not isinstance(value, numbers.Integral) or isinstance(value, bool) or int(value) <= 0:
            raise ValueError(f"{api}: {name} must be an integer > 0, got {value!r}")
    variant = _Variant(
        dtype=code,
        head_dim=int(head_dim),
        head_dim_v=int(head_dim_v) if head_dim_v is not None else int(head_dim),
        num_heads_q=_check_head_count(api, "num_heads_q", num_heads_q),
        num_heads_kv=_check_head_count(api, "num_heads_kv", num_heads_kv),
        causal=_check_causal(api, causal),
        scale=_check_positive(api, "scale", scale, "None or a finite number > 0"),
        window=_check_window(api, window),
        softcap=_check_positive(api, "softcap", softcap, "None or a finite number > 0"),
        alibi=_alibi_layout(api, alibi_slopes),
        bias=_bias_layout(api, bias),
        dropout_p=_check_dropout(api, dropout_p),
        return_lse=bool(return_lse),
        atomic_dq=bool(atomic_dq),
        deterministic=bool(deterministic),
    )
    if variant.atomic_dq and variant.deterministic:
        raise ValueError(f"{api}: atomic_dq and deterministic exclude each other")
    traced = _traced(api, score_mod, mask_mod)
    variant = replace(
        variant,
        score_mod=traced["score_mod"],
        mask_mod=traced["mask_mod"],
        captures=traced["capture_types"],
    )
    if variant.num_heads_q and variant.num_heads_kv and variant.num_heads_q % variant.num_heads_kv:
        raise ValueError(
            f"{api}: num_heads_q ({variant.num_heads_q}) must be a multiple of num_heads_kv "
            f"({variant.num_heads_kv})"
        )
    if not isinstance(target, str):
        raise TypeError(f"{api}: target must be a string, got {type(target).__name__}")
    kernel = _compile(api, variant, target)
    return Kernel(variant, kernel._kernel, traced["captures"])
