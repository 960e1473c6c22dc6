"""The engine under ``fa.attention``, ``fa.attention_backward`` and ``fa.compile``.

One direction: ``fa._api`` (the public functions) and ``fa._torch`` (the
torch op) call into this module, which calls ``fa._C``. Q, K, V and the other
tensors are read and checked once per call, in C++ (``fa._C.check_inputs``,
the same for numpy arrays and torch tensors); the options are checked here
(memoized when there is no ``score_mod`` / ``mask_mod`` to trace); kernels are
cached per variant.
"""

from __future__ import annotations

import importlib
import math
import numbers
import random
import sys
import threading
from collections import OrderedDict
from dataclasses import dataclass
from typing import Any, Callable, Union

import numpy as np

from fa import _C
from fa._tensor import DTYPE_NAMES, dtype_code, dtype_name, numpy_dtype
from fa._trace import Captures, read_capture, trace_key, trace_mask_mod, trace_score_mod

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
class Variant:
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


def check_causal(api: str, causal: Any) -> str:
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


def check_positive(api: str, name: str, value: Any, what: str) -> float | None:
    if value is None:
        return None
    message = f"{api}: {name} must be {what}, got {value!r}"
    if not _is_number(value):
        raise TypeError(message)
    if not (math.isfinite(float(value)) and float(value) > 0):
        raise ValueError(message)
    return float(value)


def check_window(api: str, window: Any) -> tuple[int, int] | None:
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


def check_dropout(api: str, dropout_p: Any) -> float:
    message = f"{api}: dropout_p must be a number in [0, 1), got {dropout_p!r}"
    if not _is_number(dropout_p):
        raise TypeError(message)
    if not 0.0 <= float(dropout_p) < 1.0:
        raise ValueError(message)
    return float(dropout_p)


def check_seed(api: str, seed: Any) -> int | None:
    if seed is None:
        return None
    if (
        not isinstance(seed, numbers.Integral)
        or isinstance(seed, bool)
        or not -(2**63) <= int(seed) < 2**63
    ):
        raise ValueError(f"{api}: dropout_seed must be None or a 64-bit integer, got {seed!r}")
    return int(seed)


def check_dtype_like(api: str, name: str, dtype: Any) -> str:
    code = dtype_code(dtype)
    if code is None:
        raise TypeError(
            f"{api}: {name} must be float16, bfloat16 or float32, got {dtype_name(dtype)}"
        )
    return code


def check_head_count(api: str, name: str, value: Any) -> int:
    if value is None:
        return 0
    if not isinstance(value, numbers.Integral) or isinstance(value, bool) or int(value) <= 0:
        raise ValueError(f"{api}: {name} must be None or an integer > 0, got {value!r}")
    return int(value)


def check_layout(api: str, layout: Any) -> bool:
    """Whether Q, K, V, O (and dO, dQ, dK, dV) are [B, N, H, D] ("bshd")
    rather than [B, H, N, D] ("bhsd")."""
    if layout == "bhsd" or layout == "bshd":
        return layout == "bshd"
    message = (
        f"{api}: layout must be 'bhsd' ([B, H, N, D]) or 'bshd' ([B, N, H, D]), got {layout!r}"
    )
    raise (ValueError if isinstance(layout, str) else TypeError)(message)


def check_return_dbias(api: str, inputs: _C.Inputs, return_dbias: Any) -> None:
    if return_dbias and inputs.bias is None:
        raise ValueError(f"{api}: return_dbias=True needs a bias")


# The options of fa.attention, checked and normalized.


class Options:
    """fa.attention's variant options, checked and normalized (score_mod/mask_mod traced).

    ``key`` is their part of the kernel cache key; ``op_args`` the options
    as ``torch.ops.fa.attention`` takes them.
    """

    __slots__ = (
        "causal",
        "scale",
        "window",
        "softcap",
        "dropout_p",
        "score_mod",
        "mask_mod",
        "captures",
        "capture_types",
        "capture_sources",
        "key",
        "op_args",
    )

    def __init__(
        self,
        causal: str = "none",
        scale: float | None = None,
        window: tuple[int, int] | None = None,
        softcap: float | None = None,
        dropout_p: float = 0.0,
        score_mod: str = "",
        mask_mod: str = "",
        captures: tuple[Any, ...] = (),
        capture_types: tuple[tuple[str, int], ...] = (),
        capture_sources: tuple[Any, ...] = (),
    ) -> None:
        self.causal = causal
        self.scale = scale
        self.window = window
        self.softcap = softcap
        self.dropout_p = dropout_p
        self.score_mod = score_mod
        self.mask_mod = mask_mod
        # The arrays the modifiers index (the op's captures), their (element
        # type, rank) and where the modifiers found each (fa._trace.Captures).
        self.captures = captures
        self.capture_types = capture_types
        self.capture_sources = capture_sources
        self.key = (causal, scale, window, softcap, dropout_p, score_mod, mask_mod, capture_types)
        window_list = list(window) if window is not None else None
        self.op_args = (causal, scale, window_list, softcap, dropout_p, score_mod, mask_mod)

    def with_captures(self, captures: tuple[Any, ...]) -> Options:
        """These options with other arrays for the same captures."""
        return Options(
            self.causal,
            self.scale,
            self.window,
            self.softcap,
            self.dropout_p,
            self.score_mod,
            self.mask_mod,
            captures,
            self.capture_types,
            self.capture_sources,
        )


# Checked options by their raw values (with their types: True and 1 differ)
# when there is nothing to trace; see check_options.
_options_memo: dict[tuple[Any, ...], Options] = {}
_MEMO_SIZE = 256


def _memo_key(
    causal: Any, scale: Any, window: Any, softcap: Any, dropout_p: Any
) -> tuple[Any, ...] | None:
    if window is not None:
        if type(window) not in (tuple, list) or not all(type(w) is int for w in window):
            return None  # checked every time (and not hashable as it is)
        window = (type(window), *window)
    try:
        key = (
            type(causal),
            causal,
            type(scale),
            scale,
            window,
            type(softcap),
            softcap,
            type(dropout_p),
            dropout_p,
        )
        hash(key)
    except TypeError:
        return None
    return key


def check_options(
    api: str,
    causal: Any,
    scale: Any,
    window: Any,
    softcap: Any,
    dropout_p: Any,
    score_mod: Any,
    mask_mod: Any,
) -> Options:
    """The options checked (each raises TypeError / ValueError naming it), the
    modifiers traced; memoized by the raw values, and the modifiers by what
    their traces depend on (fa._trace.trace_key): a model's lambda, made anew
    each call, is traced once."""
    key = _memo_key(causal, scale, window, softcap, dropout_p)
    mods = (score_mod, mask_mod)
    if key is not None and (score_mod is not None or mask_mod is not None):
        traces = trace_key(mods)
        key = (key, traces) if traces is not None else None
    options = _options_memo.get(key) if key is not None else None
    if options is not None:
        if not options.capture_sources:
            return options
        # The same traces; the captures are this call's.
        return options.with_captures(
            tuple(read_capture(mods, source) for source in options.capture_sources)
        )
    captures = Captures()
    options = Options(
        causal=check_causal(api, causal),
        scale=check_positive(api, "scale", scale, "None or a finite number > 0"),
        window=check_window(api, window),
        softcap=check_positive(api, "softcap", softcap, "None or a finite number > 0"),
        dropout_p=check_dropout(api, dropout_p),
        score_mod=trace_score_mod(score_mod, api, captures) if score_mod is not None else "",
        mask_mod=trace_mask_mod(mask_mod, api, captures) if mask_mod is not None else "",
        captures=tuple(captures.arrays),
        capture_types=captures.signature(),
        capture_sources=tuple(captures.sources),
    )
    if key is not None and not captures.read_values and None not in captures.sources:
        if len(_options_memo) >= _MEMO_SIZE:
            _options_memo.clear()
        # Not the arrays themselves: a memo entry holds no tensor alive.
        _options_memo[key] = options.with_captures(())
    return options


# The kernel cache of fa.attention: one kernel per variant, any shapes.

_CACHE_SIZE = 64
_cache: OrderedDict[tuple[Any, ...], Kernel] = OrderedDict()
_cache_lock = threading.Lock()
# The last hit, read without the lock (one tuple, replaced whole): a model
# calls one variant many times in a row.
_last: tuple[tuple[Any, ...] | None, Kernel | None] = (None, None)


def compile_variant(api: str, variant: Variant, target: str = "host") -> Kernel:
    try:
        ckernel = _C.compile(variant.spec(), target)
    except _C.FAError as e:
        if variant.dropout_p > 0 and "dropout is not supported" in str(e):
            raise NotImplementedError(
                f"{api}: dropout is not supported on the host yet (dropout_p = {variant.dropout_p})"
            ) from e
        raise
    return Kernel(variant, ckernel)


def clear_cache() -> None:
    """Forgets the kernels ``fa.attention`` compiled."""
    global _last
    with _cache_lock:
        _cache.clear()
        _last = (None, None)
    fast = sys.modules.get("fa._torch_fast")
    if fast is not None:
        fast.clear()


def kernel_for(api: str, inputs: _C.Inputs, options: Options, return_lse: bool) -> Kernel:
    """The cached kernel of the variant and device; CUDA tensors get their
    device's chip ("cuda:N"), and under torch.use_deterministic_algorithms(True)
    the deterministic dQ."""
    deterministic = False
    if not inputs.is_cpu:
        torch = sys.modules.get("torch")
        deterministic = torch is not None and torch.are_deterministic_algorithms_enabled()
    global _last
    key = (inputs.key, options.key, return_lse, deterministic)
    last_key, last_kernel = _last
    if last_kernel is not None and last_key == key:
        return last_kernel
    with _cache_lock:
        kernel = _cache.get(key)
        if kernel is not None:
            _cache.move_to_end(key)
            _last = (key, kernel)
            return kernel
    dtype, head_dim, head_dim_v, bias, alibi, device = inputs.key
    variant = Variant(
        dtype=dtype,
        head_dim=head_dim,
        head_dim_v=head_dim_v,
        causal=options.causal,
        scale=options.scale,
        window=options.window,
        softcap=options.softcap,
        alibi=alibi,
        bias=bias,
        dropout_p=options.dropout_p,
        score_mod=options.score_mod,
        mask_mod=options.mask_mod,
        return_lse=return_lse,
        captures=options.capture_types,
        deterministic=deterministic,
    )
    # Outside the lock: compiling takes a while.
    kernel = compile_variant(api, variant, "host" if device == "cpu" else device)
    with _cache_lock:
        kernel = _cache.setdefault(key, kernel)
        _cache.move_to_end(key)
        while len(_cache) > _CACHE_SIZE:
            _cache.popitem(last=False)
        _last = (key, kernel)
    return kernel


def forward(
    api: str,
    q: Any,
    k: Any,
    v: Any,
    bias: Any,
    alibi_slopes: Any,
    options: Options,
    captures: Any,
    dropout_seed: int | None,
    return_lse: bool,
    bshd: bool = False,
    out: Any = None,
    remember: Callable[[Kernel], None] | None = None,
) -> Any:
    """fa.attention once the options are checked: O, or (O, lse).

    ``captures`` are the arrays the modifiers index (``options.captures``,
    or the torch op's tensors); ``bshd``: the layout (check_layout); ``out``
    the caller's O (out=) or None; ``remember`` is called with the kernel
    once it ran (fa._torch_fast takes the next such call)."""
    inputs = _C.check_inputs(api, q, k, v, bias, alibi_slopes, bshd)
    if out is not None:
        inputs.check_out(api, out)
    kernel = kernel_for(api, inputs, options, return_lse)
    result = kernel._run(inputs, q, dropout_seed, captures, out)
    if remember is not None:
        remember(kernel)
    return result


def backward(
    api: str,
    q: Any,
    k: Any,
    v: Any,
    out: Any,
    dout: Any,
    lse: Any,
    bias: Any,
    alibi_slopes: Any,
    options: Options,
    captures: Any,
    dropout_seed: int | None,
    return_dbias: bool = False,
    bshd: bool = False,
) -> tuple[Any, ...]:
    """fa.attention_backward once the options are checked: (dq, dk, dv[, dbias]),
    dq, dk, dv in the layout of q, k, v."""
    inputs = _C.check_inputs(api, q, k, v, bias, alibi_slopes, bshd)
    inputs.check_grads(api, out, dout, lse)
    check_return_dbias(api, inputs, return_dbias)
    # The kernel that returns the lse: the one whose forward autograd runs.
    kernel = kernel_for(api, inputs, options, True)
    return kernel._run_backward(inputs, q, dropout_seed, return_dbias, captures)


# Outputs: new arrays / tensors like Q (numpy array or torch tensor, Q's device).


def _empty(inputs: _C.Inputs, like: Any, shape: tuple[int, ...], code: str) -> Any:
    if inputs.torch:
        torch = sys.modules.get("torch") or importlib.import_module("torch")
        return torch.empty(shape, dtype=getattr(torch, DTYPE_NAMES[code]), device=like.device)
    dtype = _NUMPY_DTYPES.get(code)
    if dtype is None:
        dtype = _NUMPY_DTYPES[code] = numpy_dtype(code)
    return np.empty(shape, dtype=dtype)


_NUMPY_DTYPES: dict[str, np.dtype[Any]] = {}


def _current_stream(inputs: _C.Inputs, like: Any) -> int:
    """torch's current CUDA stream for a CUDA tensor (the kernel runs on it), else 0."""
    if inputs.is_cpu:
        return 0
    torch = sys.modules["torch"]  # only CUDA torch tensors get here
    raw = getattr(torch._C, "_cuda_getCurrentRawStream", None)  # what inductor's code calls
    if raw is not None and isinstance(like, torch.Tensor):
        return int(raw(like.get_device()))
    return int(torch.cuda.current_stream(like.device).cuda_stream)


def _capture_raws(api: str, arrays: tuple[Any, ...]) -> tuple[list[Any], list[Any]]:
    """The raw views of captured arrays for ``fa._C`` (and the objects to keep alive)."""
    raws, keep = [], []
    for i, array in enumerate(arrays):
        t = _C.as_tensor(array)
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


def _bias_dims(broadcast: tuple[bool, ...]) -> str:
    """ "[1, Hq, Nq, Nk]" for a bias broadcast over B."""
    names = ("B", "Hq", "Nq", "Nk")
    return "[" + ", ".join("1" if bc else name for bc, name in zip(broadcast, names)) + "]"


class Kernel:
    """A compiled attention variant; call it with Q, K, V of any B, H, N.

    Made by :func:`fa.compile`. ``kernel(q, k, v, bias=..., alibi_slopes=...)``
    returns O, or (O, lse) when compiled with ``return_lse=True``.
    """

    def __init__(self, variant: Variant, kernel: _C.Kernel, captures: tuple[Any, ...] = ()) -> None:
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
        inputs = _C.check_inputs(api, q, k, v, bias, alibi_slopes)
        self._check(api, inputs)
        return self._run(inputs, q, check_seed(api, dropout_seed))

    def _check(self, api: str, inputs: _C.Inputs) -> None:
        """Checks inputs (already consistent with each other) against the kernel."""
        var = self._variant
        dtype, _, _, bias_layout, alibi_layout, _ = inputs.key
        if dtype != var.dtype:
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
        if var.bias is None and bias_layout is not None:
            raise ValueError(
                f"{api}: the kernel was compiled without a bias; compile one with bias=..."
            )
        if var.bias is not None:
            want_dtype, want_broadcast = var.bias
            dims = _bias_dims(want_broadcast)
            if bias_layout is None:
                raise ValueError(f"{api}: the kernel was compiled with a bias {dims}; pass bias=")
            got_dtype, got_broadcast = bias_layout
            if got_dtype != want_dtype:
                raise TypeError(
                    f"{api}: bias must have dtype {DTYPE_NAMES[want_dtype]} (the kernel's), got "
                    f"{inputs.bias.dtype_name}"
                )
            if any(bc and not got for bc, got in zip(want_broadcast, got_broadcast)):
                raise ValueError(
                    f"{api}: bias must have shape {dims} (the kernel's), got {inputs.bias.shape}"
                )
        if var.alibi is None and alibi_layout is not None:
            raise ValueError(
                f"{api}: the kernel was compiled without ALiBi; compile one with alibi_slopes=..."
            )
        if var.alibi is not None:
            want_shape = "[B, Hq]" if var.alibi == "per_batch" else "[Hq]"
            if alibi_layout is None:
                raise ValueError(
                    f"{api}: the kernel was compiled with ALiBi; pass alibi_slopes= {want_shape}"
                )
            if alibi_layout != var.alibi:
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
        inputs = _C.check_inputs(api, q, k, v, bias, alibi_slopes)
        self._check(api, inputs)
        inputs.check_grads(api, out, dout, lse)
        check_return_dbias(api, inputs, return_dbias)
        seed = check_seed(api, dropout_seed)
        return self._run_backward(inputs, q, seed, bool(return_dbias))

    def _run_backward(
        self,
        inputs: _C.Inputs,
        like: Any,
        dropout_seed: int | None,
        return_dbias: bool = False,
        captures: tuple[Any, ...] | None = None,
    ) -> tuple[Any, ...]:
        var = self._variant
        dq = _empty(inputs, like, inputs.q.shape, var.dtype)
        dk = _empty(inputs, like, inputs.k.shape, var.dtype)
        dv = _empty(inputs, like, inputs.v.shape, var.dtype)
        dbias = None
        if return_dbias and var.bias is not None and inputs.bias is not None:
            # The kernel's bias shape; reduced to the caller's afterwards.
            full = (*inputs.lse_shape, inputs.nk)
            shape = tuple(1 if bc else n for bc, n in zip(var.bias[1], full))
            dbias = _empty(inputs, like, shape, var.bias[0])
        outputs = [t for t in (dq, dk, dv, dbias) if t is not None]
        if any(0 in t.shape for t in (dq, dk, dv)):
            # Nothing to compute; an empty Q (or K) still has zero gradients.
            for t in outputs:
                t[...] = 0
            return self._grads(inputs, outputs)
        capture_raws: list[Any] = []
        keep: list[Any] = []
        if captures or self._captures:
            capture_raws, keep = _capture_raws(
                "fa.attention_backward", self._captures if captures is None else captures
            )
        workspace = None
        if inputs.torch and not inputs.is_cpu:
            # From torch's caching allocator, on the stream the kernels run on:
            # no cuMemAlloc and no wait, so a CUDA graph may capture the call.
            nbytes = self._kernel.backward_workspace_bytes(*inputs.lse_shape, dbias is not None)
            torch = sys.modules["torch"]
            workspace = torch.empty(nbytes, dtype=torch.uint8, device=like.device)
        self._kernel.run_backward(
            inputs,
            dq,
            dk,
            dv,
            dbias,
            int(dropout_seed or 0),
            _current_stream(inputs, like),
            capture_raws,
            workspace,
        )
        del keep
        return self._grads(inputs, outputs)

    def _forward_workspace(self, inputs: _C.Inputs, like: Any) -> Any:
        """A mask_mod's key ranges on a CUDA device: in memory of torch's
        caching allocator on the kernel's stream (None: no key ranges, or
        not torch)."""
        if not self._variant.mask_mod or not inputs.torch or inputs.is_cpu:
            return None
        nbytes = self._kernel.forward_workspace_bytes(*inputs.lse_shape)
        if not nbytes:
            return None
        torch = sys.modules["torch"]
        return torch.empty(nbytes, dtype=torch.uint8, device=like.device)

    @staticmethod
    def _grads(inputs: _C.Inputs, grads: list[Any]) -> tuple[Any, ...]:
        """The gradients; dbias summed to the caller's bias shape."""
        if len(grads) == 4 and inputs.bias is not None:
            user = inputs.bias.shape  # rank 4, size 1 where the caller's bias broadcasts
            dims = tuple(i for i, (n, m) in enumerate(zip(user, grads[3].shape)) if n == 1 != m)
            dbias = grads[3]
            if dims:
                if inputs.torch:
                    dbias = dbias.sum(dim=dims, keepdim=True)
                else:
                    dbias = dbias.sum(axis=dims, keepdims=True, dtype=np.float32).astype(
                        dbias.dtype
                    )
            grads[3] = dbias.reshape(tuple(inputs.user_bias.shape))
        return tuple(grads)

    def _run(
        self,
        inputs: _C.Inputs,
        like: Any,
        dropout_seed: int | None,
        captures: tuple[Any, ...] | None = None,
        out: Any = None,
    ) -> Any:
        """O (and lse) of checked inputs; ``like`` is Q as the caller gave it,
        ``out`` the caller's O (checked) or None (a new one, in the layout of Q)."""
        var = self._variant
        if out is None:
            out = _empty(inputs, like, inputs.out_shape, var.dtype)
        lse = _empty(inputs, like, inputs.lse_shape, "f32") if var.return_lse else None
        if inputs.empty:  # nothing to compute (numpy gives such arrays stride 0)
            return (out, lse) if lse is not None else out
        if dropout_seed is None:
            dropout_seed = random.getrandbits(63) if var.dropout_p > 0 else 0
        stream = _current_stream(inputs, like)
        if captures or self._captures or var.mask_mod:
            capture_raws: list[Any] = []
            keep: list[Any] = []
            if captures or self._captures:
                capture_raws, keep = _capture_raws(
                    "fa.attention", self._captures if captures is None else captures
                )
            workspace = self._forward_workspace(inputs, like)
            self._kernel.run(inputs, out, lse, dropout_seed, stream, capture_raws, workspace)
            del keep
        else:
            self._kernel.run(inputs, out, lse, dropout_seed, stream)
        return (out, lse) if lse is not None else out
