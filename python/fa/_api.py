"""The public functions: ``fa.attention``, ``fa.attention_backward``, ``fa.compile``.

One direction, no cycle: torch tensors go to ``fa._torch`` (the custom op,
imported on the first one), everything else straight to the engine
``fa._core``; both end in ``fa._C``, which reads and checks the tensors.
"""

from __future__ import annotations

import numbers
from dataclasses import replace
from typing import Any

from fa import _C, _core
from fa._core import CausalLike, Kernel, MaskMod, ScoreMod, clear_cache
from fa._tensor import dtype_code, is_real_torch_tensor, is_tensor

__all__ = ["Kernel", "attention", "attention_backward", "clear_cache", "compile"]


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
    layout: str = "bhsd",
    out: Any = None,
) -> Any:
    """Exact attention ``softmax(mask(mod(scale * Q K^T))) V``; see docs/python.md.

    Q is ``[B, Hq, Nq, D]``, K ``[B, Hkv, Nk, D]``, V ``[B, Hkv, Nk, Dv]``
    (numpy arrays or torch tensors of float16, bfloat16 or float32, any
    strides; CUDA tensors run the GPU kernel on torch's current stream);
    with ``layout="bshd"`` they are ``[B, N, H, D]`` and so is O.
    Returns O ``[B, Hq, Nq, Dv]`` (contiguous, dtype of Q), or
    ``(O, lse)`` with ``return_lse=True`` (lse ``[B, Hq, Nq]``, float32).
    ``out`` is an O to write instead (of O's shape, dtype and device, rows
    of unit stride; no autograd), returned.
    Kernels are compiled once per variant and cached. On torch tensors it is
    the custom op ``torch.ops.fa.attention``: differentiable with respect to
    Q, K and V, and traceable by ``torch.compile``.
    """
    if is_real_torch_tensor(q):
        # fa._torch (the custom op) is imported on the first torch tensor. An
        # import statement, not a global set then: torch.compile would guard on
        # that global and compile the first compiled function twice.
        from fa import _torch

        return _torch.attention(
            q,
            k,
            v,
            causal,
            scale,
            window,
            softcap,
            alibi_slopes,
            bias,
            dropout_p,
            score_mod,
            mask_mod,
            return_lse,
            dropout_seed,
            layout,
            out,
        )
    api = "fa.attention"
    bshd = _core.check_layout(api, layout)
    inputs = _C.check_inputs(api, q, k, v, bias, alibi_slopes, bshd)
    if out is not None:
        inputs.check_out(api, out)
    options = _core.check_options(
        api, causal, scale, window, softcap, dropout_p, score_mod, mask_mod
    )
    seed = _core.check_seed(api, dropout_seed)
    kernel = _core.kernel_for(api, inputs, options, bool(return_lse))
    return kernel._run(inputs, q, seed, options.captures, out)


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
    layout: str = "bhsd",
) -> tuple[Any, ...]:
    """Gradients ``(dq, dk, dv)`` of :func:`fa.attention` given ``dout`` = dLoss/dO.

    ``q, k, v`` and the keywords are those of the forward call, ``out`` and
    ``lse`` what it returned with ``return_lse=True``. Returns new contiguous
    dq, dk, dv with the shapes and dtype of q, k, v (a K/V head shared by
    several query heads gets the sum over them); with ``return_dbias=True``
    also dbias, of the shape and dtype of ``bias`` (summed over
    its broadcast dims). No gradient of ``alibi_slopes``. With
    ``layout="bshd"``, q, k, v, out, dout and dq, dk, dv are ``[B, N, H, D]``.
    The backward kernel is compiled once per variant.
    """
    api = "fa.attention_backward"
    bshd = _core.check_layout(api, layout)
    inputs = _C.check_inputs(api, q, k, v, bias, alibi_slopes, bshd)
    options = _core.check_options(
        api, causal, scale, window, softcap, dropout_p, score_mod, mask_mod
    )
    seed = _core.check_seed(api, dropout_seed)
    inputs.check_grads(api, out, dout, lse)
    _core.check_return_dbias(api, inputs, return_dbias)
    kernel = _core.kernel_for(api, inputs, options, True)
    return kernel._run_backward(inputs, q, seed, bool(return_dbias), options.captures)


def _bias_layout(api: str, bias: Any) -> tuple[str, tuple[bool, bool, bool, bool]] | None:
    """fa.compile's bias: None, a dtype (full [B, Hq, Nq, Nk]) or an example tensor."""
    if bias is None or bias is False:
        return None
    if is_tensor(bias):
        t = _C.tensor(api, "bias", bias)
        if t.code is None:
            raise TypeError(
                f"{api}: bias must have dtype float16, bfloat16 or float32, got {t.dtype_name}"
            )
        if len(t.shape) > 4:
            raise ValueError(
                f"{api}: bias must have rank <= 4 (broadcastable to [B, Hq, Nq, Nk]), got shape "
                f"{t.shape}"
            )
        shape = (1,) * (4 - len(t.shape)) + t.shape
        b0, b1, b2, b3 = (d == 1 for d in shape)
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
        t = _C.tensor(api, "alibi_slopes", alibi_slopes)
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
    code = _core.check_dtype_like(api, "dtype", dtype)
    for name, value in (("head_dim", head_dim), ("head_dim_v", head_dim_v)):
        if value is None and name == "head_dim_v":
            continue
        if not isinstance(value, numbers.Integral) or isinstance(value, bool) or int(value) <= 0:
            raise ValueError(f"{api}: {name} must be an integer > 0, got {value!r}")
    variant = _core.Variant(
        dtype=code,
        head_dim=int(head_dim),
        head_dim_v=int(head_dim_v) if head_dim_v is not None else int(head_dim),
        num_heads_q=_core.check_head_count(api, "num_heads_q", num_heads_q),
        num_heads_kv=_core.check_head_count(api, "num_heads_kv", num_heads_kv),
        causal=_core.check_causal(api, causal),
        scale=_core.check_positive(api, "scale", scale, "None or a finite number > 0"),
        window=_core.check_window(api, window),
        softcap=_core.check_positive(api, "softcap", softcap, "None or a finite number > 0"),
        alibi=_alibi_layout(api, alibi_slopes),
        bias=_bias_layout(api, bias),
        dropout_p=_core.check_dropout(api, dropout_p),
        return_lse=bool(return_lse),
        atomic_dq=bool(atomic_dq),
        deterministic=bool(deterministic),
    )
    if variant.atomic_dq and variant.deterministic:
        raise ValueError(f"{api}: atomic_dq and deterministic exclude each other")
    traced = _core.check_options(api, False, None, None, None, 0.0, score_mod, mask_mod)
    variant = replace(
        variant,
        score_mod=traced.score_mod,
        mask_mod=traced.mask_mod,
        captures=traced.capture_types,
    )
    if variant.num_heads_q and variant.num_heads_kv and variant.num_heads_q % variant.num_heads_kv:
        raise ValueError(
            f"{api}: num_heads_q ({variant.num_heads_q}) must be a multiple of num_heads_kv "
            f"({variant.num_heads_kv})"
        )
    if not isinstance(target, str):
        raise TypeError(f"{api}: target must be a string, got {type(target).__name__}")
    kernel = _core.compile_variant(api, variant, target)
    return Kernel(variant, kernel._kernel, traced.captures)
