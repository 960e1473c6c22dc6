"""fa.attention on torch tensors: the custom ops ``fa::attention`` and
``fa::attention_backward``, with autograd and fake (meta) implementations.

Imported only when a ``torch.Tensor`` reaches :func:`fa.attention`, so torch
stays optional. Through ``torch.library`` the forward is one op to autograd
(``loss.backward()`` runs FA's backward kernel) and to ``torch.compile``
(traced without a graph break; the fake implementations give the shapes).

An eager call on plain tensors (no torch.compile, no dispatch or function
mode, functorch transform, tracer or profiler) runs the same kernels without
the dispatcher: straight into ``fa._core`` without grad, through
:class:`_Attention` (the op's autograd formula) with it. That keeps the
per-call cost low and torch._dynamo unimported in eager programs (the first
call of a ``torch.library.custom_op`` imports it).

``score_mod`` / ``mask_mod`` are traced to MLIR text before the op is called,
so the op's arguments are tensors, numbers and strings only. Tensors the
modifiers index (the op's captures: document ids, per-head tables) are the
op's trailing ``captures`` argument: fetched from the modifiers' closures or
globals outside the traced text, so that under ``torch.compile`` they are
graph inputs (new values need no recompile) and not constants. They get no
gradient.
"""

from __future__ import annotations

import random
from typing import Any, Optional

import numpy as np
import torch
from torch import Tensor

from fa import _C as _fa_C
from fa import _core, _trace

try:  # built against the torch it runs with; the checked path without it
    from fa import _torch_fast
except ImportError:
    _torch_fast = None  # type: ignore[assignment]

__all__ = ["attention"]


def _remember(
    options: _core.Options, q: Tensor, k: Tensor, v: Tensor, return_lse: bool, bshd: bool
) -> Any:
    """What has fa._torch_fast take the next such call: called with the
    kernel the checked path ran these inputs with (plain calls only)."""

    def remember(kernel: _core.Kernel) -> None:
        _torch_fast.remember(
            options, q, k, v, return_lse, bshd, kernel._kernel.address,
            kernel._variant.deterministic,
        )

    return remember


@torch.library.custom_op("fa::attention", mutates_args=())
def _attention_op(
    q: Tensor,
    k: Tensor,
    v: Tensor,
    bias: Optional[Tensor],
    alibi_slopes: Optional[Tensor],
    causal: str,
    scale: Optional[float],
    window: Optional[list[int]],
    softcap: Optional[float],
    dropout_p: float,
    score_mod: str,
    mask_mod: str,
    dropout_seed: int,
    captures: list[Tensor],
    layout: str = "bhsd",
) -> tuple[Tensor, Tensor]:
    """(O, lse) of one attention variant; the options are checked here (memoized).
    Q, K, V and O are [B, H, N, D], or [B, N, H, D] with layout="bshd"."""
    api = "fa.attention"
    bshd = _core.check_layout(api, layout)
    _check_capture_devices(api, q, captures)
    options = _options(causal, scale, window, softcap, dropout_p, score_mod, mask_mod, captures)
    out, lse = _core.forward(
        api, q, k, v, bias, alibi_slopes, options, captures, dropout_seed, True, bshd
    )
    return out, lse


@_attention_op.register_fake
def _attention_fake(
    q: Tensor,
    k: Tensor,
    v: Tensor,
    bias: Optional[Tensor],
    alibi_slopes: Optional[Tensor],
    causal: str,
    scale: Optional[float],
    window: Optional[list[int]],
    softcap: Optional[float],
    dropout_p: float,
    score_mod: str,
    mask_mod: str,
    dropout_seed: int,
    captures: list[Tensor],
    layout: str = "bhsd",
) -> tuple[Tensor, Tensor]:
    # The option checks of the real op, while torch.compile traces (their
    # errors then come before anything runs); shapes may be symbolic.
    _fake_check(causal, scale, window, softcap, dropout_p, score_mod, mask_mod, captures)
    return _out_shapes(q, v, _core.check_layout("fa.attention", layout))


def _out_shapes(q: Tensor, v: Tensor, bshd: bool) -> tuple[Tensor, Tensor]:
    """New O (contiguous, in the layout of q) and lse, as the op makes them."""
    if bshd:
        b, nq, hq = q.shape[:3]
        out = q.new_empty((b, nq, hq, v.shape[3]))
    else:
        b, hq, nq = q.shape[:3]
        out = q.new_empty((b, hq, nq, v.shape[3]))
    return out, q.new_empty((b, hq, nq), dtype=torch.float32)


@torch.library.custom_op("fa::attention_out", mutates_args=("out",))
def _attention_out_op(
    q: Tensor,
    k: Tensor,
    v: Tensor,
    bias: Optional[Tensor],
    alibi_slopes: Optional[Tensor],
    causal: str,
    scale: Optional[float],
    window: Optional[list[int]],
    softcap: Optional[float],
    dropout_p: float,
    score_mod: str,
    mask_mod: str,
    dropout_seed: int,
    captures: list[Tensor],
    layout: str,
    out: Tensor,
) -> Tensor:
    """``fa::attention`` writing O into ``out`` (fa.attention's out=); returns the lse.
    No autograd (as torch's out= functions)."""
    api = "fa.attention"
    bshd = _core.check_layout(api, layout)
    _check_capture_devices(api, q, captures)
    options = _options(causal, scale, window, softcap, dropout_p, score_mod, mask_mod, captures)
    _, lse = _core.forward(
        api, q, k, v, bias, alibi_slopes, options, captures, dropout_seed, True, bshd, out
    )
    return lse


@_attention_out_op.register_fake
def _attention_out_fake(
    q: Tensor,
    k: Tensor,
    v: Tensor,
    bias: Optional[Tensor],
    alibi_slopes: Optional[Tensor],
    causal: str,
    scale: Optional[float],
    window: Optional[list[int]],
    softcap: Optional[float],
    dropout_p: float,
    score_mod: str,
    mask_mod: str,
    dropout_seed: int,
    captures: list[Tensor],
    layout: str,
    out: Tensor,
) -> Tensor:
    # out is checked (fa._C) when the op runs.
    _fake_check(causal, scale, window, softcap, dropout_p, score_mod, mask_mod, captures)
    return _out_shapes(q, v, _core.check_layout("fa.attention", layout))[1]


@torch.library.custom_op("fa::attention_backward", mutates_args=())
def _attention_backward_op(
    dout: Tensor,
    q: Tensor,
    k: Tensor,
    v: Tensor,
    out: Tensor,
    lse: Tensor,
    bias: Optional[Tensor],
    alibi_slopes: Optional[Tensor],
    causal: str,
    scale: Optional[float],
    window: Optional[list[int]],
    softcap: Optional[float],
    dropout_p: float,
    score_mod: str,
    mask_mod: str,
    dropout_seed: int,
    bias_grad: bool,
    captures: list[Tensor],
    layout: str = "bhsd",
) -> tuple[Tensor, Tensor, Tensor, Tensor]:
    """(dQ, dK, dV, dBias) of ``fa::attention`` given dO; dBias is empty without bias_grad.
    dQ, dK, dV are contiguous in the layout of q, k, v."""
    bshd = _core.check_layout("fa.attention (backward)", layout)
    _check_capture_devices("fa.attention (backward)", q, captures)
    options = _options(causal, scale, window, softcap, dropout_p, score_mod, mask_mod, captures)
    grads = _core.backward(
        "fa.attention (backward)",
        q,
        k,
        v,
        out,
        dout,
        lse,
        bias,
        alibi_slopes,
        options,
        captures,
        dropout_seed,
        bias_grad,
        bshd,
    )
    dbias = grads[3] if bias_grad else q.new_empty(0)
    return grads[0], grads[1], grads[2], dbias


@_attention_backward_op.register_fake
def _attention_backward_fake(
    dout: Tensor,
    q: Tensor,
    k: Tensor,
    v: Tensor,
    out: Tensor,
    lse: Tensor,
    bias: Optional[Tensor],
    alibi_slopes: Optional[Tensor],
    causal: str,
    scale: Optional[float],
    window: Optional[list[int]],
    softcap: Optional[float],
    dropout_p: float,
    score_mod: str,
    mask_mod: str,
    dropout_seed: int,
    bias_grad: bool,
    captures: list[Tensor],
    layout: str = "bhsd",
) -> tuple[Tensor, Tensor, Tensor, Tensor]:
    _fake_check(causal, scale, window, softcap, dropout_p, score_mod, mask_mod, captures)
    _core.check_layout("fa.attention (backward)", layout)
    # The real op returns contiguous tensors (q's layout) whatever the strides of q, k, v.
    dbias = bias.new_empty(bias.shape) if bias_grad and bias is not None else q.new_empty(0)
    return q.new_empty(q.shape), k.new_empty(k.shape), v.new_empty(v.shape), dbias


def _setup_context(ctx: Any, inputs: tuple[Any, ...], output: tuple[Tensor, Tensor]) -> None:
    # (q, k, v, bias, alibi_slopes, causal, ..., dropout_seed, captures[, layout])
    q, k, v, bias, alibi_slopes = inputs[:5]
    captures = inputs[13]
    out, lse = output
    ctx.save_for_backward(q, k, v, out, lse, bias, alibi_slopes, *captures)
    ctx.options = inputs[5:13]
    ctx.layout = inputs[14] if len(inputs) > 14 else "bhsd"
    ctx.num_captures = len(captures)
    # The dispatcher drops a trailing argument equal to its default (the
    # layout "bhsd") before autograd sees the call, and torch 2.11 wants
    # exactly one gradient per argument kept (2.15 takes either count).
    ctx.num_inputs = 14 if len(inputs) < 15 or inputs[14] == "bhsd" else 15
    # The lse is saved for the backward but has no gradient of its own.
    ctx.mark_non_differentiable(lse)


def _unit_last_stride(dout: Tensor) -> Tensor:
    """dO as the GPU kernels read it: rows of unit stride. Autograd hands
    ``out.sum()``'s gradient over as an expanded tensor (stride 0)."""
    return dout if dout.stride(-1) == 1 else dout.contiguous()


def _backward(ctx: Any, dout: Tensor, dlse: Tensor | None) -> tuple[Any, ...]:
    q, k, v, out, lse, bias, alibi_slopes, *captures = ctx.saved_tensors
    bias_grad = bias is not None and ctx.needs_input_grad[3]
    dq, dk, dv, dbias = _attention_backward_op(
        _unit_last_stride(dout),
        q,
        k,
        v,
        out,
        lse,
        bias,
        alibi_slopes,
        *ctx.options,
        bias_grad,
        captures,
        ctx.layout,
    )
    # No gradients of the ALiBi slopes, the options, the captures and the layout.
    none = (None,) * (1 + len(ctx.options))
    grads = (dq, dk, dv, dbias if bias_grad else None, *none, [None] * ctx.num_captures, None)
    return grads[: ctx.num_inputs]


_attention_op.register_autograd(_backward, setup_context=_setup_context)


# The op's options, checked, by the op's arguments (the checks run here, in
# the op and its fake, not in what torch.compile traces).
_op_options: dict[tuple[Any, ...], _core.Options] = {}


def _options(
    causal: str,
    scale: float | None,
    window: list[int] | tuple[int, int] | None,
    softcap: float | None,
    dropout_p: float,
    score_mod: str,
    mask_mod: str,
    captures: list[Tensor] | tuple[Tensor, ...] = (),
) -> _core.Options:
    """The op's options as ``fa._core.Options``: checked (fa.attention's
    TypeError / ValueError) on the first call of a combination, then looked up."""
    capture_types = tuple(_capture_type(c) for c in captures) if captures else ()
    window = (window[0], window[1]) if window is not None and len(window) == 2 else window
    key = (
        causal,
        type(scale),
        scale,
        window,
        type(softcap),
        softcap,
        type(dropout_p),
        dropout_p,
        score_mod,
        mask_mod,
        capture_types,
    )
    try:
        options = _op_options.get(key)
    except TypeError:  # not hashable: checked below (and refused)
        options, key = None, None
    if options is None:
        api = "fa.attention"
        if not isinstance(causal, str):
            raise TypeError(
                f"{api}: causal must be a string in torch.ops.fa.attention, got {causal!r}"
            )
        checked = _core.check_options(
            api,
            False if causal == "none" else causal,
            scale,
            window,
            softcap,
            dropout_p,
            None,
            None,
        )
        for name, text in (("score_mod", score_mod), ("mask_mod", mask_mod)):
            if not isinstance(text, str):
                raise TypeError(
                    f"{api}: {name} must be MLIR text in torch.ops.fa.attention, got {text!r}"
                )
        options = _core.Options(
            causal=checked.causal,
            scale=checked.scale,
            window=checked.window,
            softcap=checked.softcap,
            dropout_p=checked.dropout_p,
            score_mod=score_mod,
            mask_mod=mask_mod,
            capture_types=capture_types,
        )
        if key is not None:
            if len(_op_options) >= 256:
                _op_options.clear()
            _op_options[key] = options
    return options


def _fake_check(
    causal: str,
    scale: Any,
    window: Any,
    softcap: Any,
    dropout_p: Any,
    score_mod: str,
    mask_mod: str,
    captures: list[Tensor],
) -> None:
    """The op's option checks in its fake implementation, where the options
    are known numbers (a symbolic one is checked when the op runs)."""
    sym = (torch.SymInt, torch.SymFloat)
    if any(isinstance(x, sym) for x in (scale, softcap, dropout_p, *(window or ()))):
        return
    _options(causal, scale, window, softcap, dropout_p, score_mod, mask_mod, captures)


def _capture_type(x: Tensor) -> tuple[str, int]:
    """(element type, rank) of a captured tensor, as the kernel is compiled for it."""
    name = str(x.dtype)[len("torch.") :]
    elements = _trace._CAPTURE_ELEMENTS
    if name not in elements:
        raise TypeError(
            f"fa.attention: a captured tensor of dtype {name} (int8/16/32/64, uint8/16/32, "
            "bool, float16, bfloat16, float32 or float64 are supported)"
        )
    return elements[name][0], x.dim()


def _check_capture_devices(api: str, q: Tensor, captures: list[Tensor]) -> None:
    for i, c in enumerate(captures):
        if c.device != q.device:
            raise ValueError(
                f"{api}: captured tensor {i} (indexed by score_mod / mask_mod) is on "
                f"{c.device}, q on {q.device}: captures must be on q's device (move it with "
                f".to({str(q.device)!r}))"
            )


# What torch.compile traces of a call: the options turned into the op's
# argument types (numbers, strings) without checking their values, which the op
# and its fake implementation do (_options). Only type tests and conversions of
# constants, so that Dynamo traces them with dynamic shapes and symbolic numbers
# (a float a compiled function receives is specialized when the op gets it).
# A value of a wrong type goes to fa._core's check, which raises its TypeError.


def _op_causal(causal: Any) -> str:
    if causal is None or causal is False:
        return "none"
    if causal is True:
        return "top_left"
    if isinstance(causal, str):
        return causal  # "top_left", "bottom_right" (else the op says what is wrong)
    if torch.compiler.is_compiling() and isinstance(causal, int):
        # Under dynamic=True an int option is symbolic, and Dynamo (torch
        # 2.11) cannot format it into the message.
        raise TypeError(
            "fa.attention: causal must be False, True (top-left), 'top_left' or "
            "'bottom_right', got an int"
        )
    return _core.check_causal("fa.attention", causal)


def _op_float(name: str, x: Any) -> Any:
    if x is None or type(x) is float or type(x) is int:
        return x
    if name == "dropout_p":
        return _core.check_dropout("fa.attention", x)
    return _core.check_positive("fa.attention", name, x, "None or a finite number > 0")


def _op_window(window: Any) -> list[int] | None:
    if window is None:
        return None
    if (
        type(window) in (tuple, list)
        and len(window) == 2
        and type(window[0]) is int
        and type(window[1]) is int
    ):
        return [window[0], window[1]]
    checked = _core.check_window("fa.attention", window)
    return [checked[0], checked[1]] if checked is not None else None


def _traced_mods(
    score_mod: Any, mask_mod: Any
) -> tuple[str, str, tuple[tuple[str, str, Any], ...]]:
    """score_mod / mask_mod traced to MLIR text, and where the modifiers found
    their captures (see ``_captures``).

    torch.compile runs this once, while tracing, and keeps the result as a
    constant: the graph then holds only the op, not the Python tracer. Its
    arguments are the modifiers alone (functions are constants to Dynamo; a
    number may be symbolic under ``dynamic=True``). The captured tensors
    themselves are not part of the result (they would be baked in as constants).
    """
    o = _core.check_options("fa.attention", False, None, None, None, 0.0, score_mod, mask_mod)
    return o.score_mod, o.mask_mod, o.capture_sources


# What torch.compiler.assume_constant_result(_traced_mods) does (the mark
# torch/_dynamo/decorators.py sets), without importing torch._dynamo, sympy
# and torch.distributed's modules into every process that calls fa.attention
# eagerly; torch.compile imports them itself when it runs.
_traced_mods._dynamo_marked_constant = True  # type: ignore[attr-defined]


def _captures(
    api: str, q: Tensor, score_mod: Any, mask_mod: Any, sources: tuple[tuple[str, str, Any], ...]
) -> list[Tensor]:
    """The tensors the traced modifiers index, read from their closures / globals.

    Plain attribute and item accesses, which torch.compile traces: the
    tensors become inputs of the graph (guarded like any input). numpy
    arrays become tensors on q's device.
    """
    captures: list[Tensor] = []
    if not sources:
        return captures
    for i, source in enumerate(sources):
        x = _trace.read_capture((score_mod, mask_mod), source)
        if isinstance(x, np.ndarray):
            x = torch.from_numpy(np.ascontiguousarray(x)).to(q.device)
        if not isinstance(x, torch.Tensor):
            raise TypeError(
                f"{api}: captured array {i} of score_mod / mask_mod is a {type(x).__name__}, "
                "not a torch tensor or numpy array"
            )
        captures.append(x.detach())
    _check_capture_devices(api, q, captures)
    return captures


class _Attention(torch.autograd.Function):
    """The autograd formula of ``fa::attention`` (``_setup_context`` and
    ``_backward``) for eager calls that skip the dispatcher."""

    @staticmethod
    def forward(  # type: ignore[override]
        ctx: Any,
        q: Tensor,
        k: Tensor,
        v: Tensor,
        bias: Tensor | None,
        alibi_slopes: Tensor | None,
        options: _core.Options,
        seed: int,
        captures: list[Tensor],
        bshd: bool,
    ) -> tuple[Tensor, Tensor]:
        api = "fa.attention"
        inputs = _fa_C.check_inputs(api, q, k, v, bias, alibi_slopes, bshd)
        kernel = _core.kernel_for(api, inputs, options, True)
        out, lse = kernel._run(inputs, q, seed, captures)
        plain = (
            _torch_fast is not None
            and bias is None
            and alibi_slopes is None
            and not captures
            and options.dropout_p == 0.0
            and not options.score_mod
            and not options.mask_mod
        )
        if plain:  # fa._torch_fast's autograd node takes the next such call
            _remember(options, q, k, v, True, bshd)(kernel)
        # The checked inputs and the kernel, for the backward: what it would
        # otherwise check and look up again.
        ctx.fa = (inputs, kernel)
        ctx.save_for_backward(q, k, v, out, lse, bias, alibi_slopes, *captures)
        ctx.options = options
        ctx.seed = seed
        ctx.bshd = bshd
        ctx.mark_non_differentiable(lse)
        # The lse has no gradient: no zeros made for it before each backward
        # (an allocation and a fill kernel); dout is None when O has none.
        ctx.set_materialize_grads(False)
        return out, lse

    @staticmethod
    def backward(ctx: Any, dout: Tensor | None, dlse: Tensor | None) -> tuple[Any, ...]:  # type: ignore[override]
        if dout is None:
            return (None,) * 9
        q, k, v, out, lse, bias, alibi_slopes, *captures = ctx.saved_tensors
        bias_grad = bias is not None and ctx.needs_input_grad[3]
        api = "fa.attention (backward)"
        inputs, kernel = ctx.fa
        if kernel._variant.deterministic != torch.are_deterministic_algorithms_enabled():
            # Switched since the forward: the backward of the other dQ.
            kernel = _core.kernel_for(api, inputs, ctx.options, True)
        inputs.check_grads(api, out, _unit_last_stride(dout), lse)
        grads = kernel._run_backward(inputs, q, ctx.seed, bias_grad, captures)
        dbias = grads[3] if bias_grad else None
        return grads[0], grads[1], grads[2], dbias, None, None, None, None, None


def _checked_backward(
    options: _core.Options,
    q: Tensor,
    k: Tensor,
    v: Tensor,
    out: Tensor,
    dout: Tensor,
    lse: Tensor,
    bshd: bool,
) -> tuple[Tensor, Tensor, Tensor]:
    """(dQ, dK, dV) of a plain call whose forward fa._torch_fast's autograd
    node ran, through the checked path: where the node's kernel does not run
    the backward (another dQ kernel under deterministic algorithms, a view it
    refuses), with its errors."""
    api = "fa.attention (backward)"
    inputs = _fa_C.check_inputs(api, q, k, v, None, None, bshd)
    kernel = _core.kernel_for(api, inputs, options, True)
    inputs.check_grads(api, out, _unit_last_stride(dout), lse)
    dq, dk, dv = kernel._run_backward(inputs, q, 0, False, [])[:3]
    return dq, dk, dv


_PLAIN = (torch.Tensor, torch.nn.Parameter)
_C = torch._C


def _modes_active() -> bool:
    """Whether anything but plain eager execution watches torch ops."""
    return bool(
        _C._len_torch_dispatch_stack()
        or _C._is_torch_function_mode_enabled()
        or _C._are_functorch_transforms_active()
        or _C._get_tracing_state() is not None
        or _C._autograd._profiler_enabled()
    )


try:
    _modes_active()
except AttributeError:  # another torch: always through the dispatcher

    def _modes_active() -> bool:
        return True


def _direct(q: Any, k: Any, v: Any) -> bool:
    """Whether an eager call may run the kernels without the dispatcher.
    (torch.compile: is_compiling() is a constant True while it traces.)"""
    return not (
        torch.compiler.is_compiling()
        or type(q) not in _PLAIN
        or type(k) not in _PLAIN
        or type(v) not in _PLAIN
        or _modes_active()
    )


def _no_grad_for_out(api: str, tensors: tuple[Any, ...]) -> None:
    """out= takes no gradient, as torch's out= functions."""
    if torch.is_grad_enabled() and any(
        isinstance(x, torch.Tensor) and x.requires_grad for x in tensors
    ):
        raise ValueError(
            f"{api}: out= takes no gradient, but q, k, v, bias or out requires grad (call it "
            "under torch.no_grad(), or without out=)"
        )


def _op_layout(layout: Any) -> str:
    """The layout as the op takes it (traced; the op checks its value)."""
    if isinstance(layout, str):
        return layout
    _core.check_layout("fa.attention", layout)  # raises its TypeError
    return layout


def attention(
    q: Tensor,
    k: Any,
    v: Any,
    causal: Any,
    scale: Any,
    window: Any,
    softcap: Any,
    alibi_slopes: Any,
    bias: Any,
    dropout_p: Any,
    score_mod: Any,
    mask_mod: Any,
    return_lse: Any,
    dropout_seed: Any,
    layout: Any = "bhsd",
    out: Any = None,
) -> Any:
    """fa.attention on torch tensors: the kernels, or ``torch.ops.fa.attention``
    (``torch.ops.fa.attention_out`` with out=)."""
    api = "fa.attention"
    direct = _direct(q, k, v)
    bshd = False
    if direct:
        bshd = _core.check_layout(api, layout)
    if direct and bias is None and alibi_slopes is None and score_mod is mask_mod is None:
        # The common call, in short: nothing to convert, capture or draw.
        options = _core.check_options(api, causal, scale, window, softcap, dropout_p, None, None)
        if options.dropout_p == 0.0 and dropout_seed is None:
            if out is not None:
                _no_grad_for_out(api, (q, k, v, out))
            elif _torch_fast is not None:
                # With grad on, its own autograd node (the forward and the
                # backward in C++).
                result = _torch_fast.forward(options, q, k, v, return_lse, bshd)
                if result is not None:
                    return result
            if out is None and torch.is_grad_enabled() and (
                q.requires_grad or k.requires_grad or v.requires_grad
            ):
                o, lse = _Attention.apply(q, k, v, None, None, options, 0, [], bshd)
                return (o, lse) if return_lse else o
            return _core.forward(
                api, q, k, v, None, None, options, (), 0, bool(return_lse), bshd, out,
                _remember(options, q, k, v, bool(return_lse), bshd)
                if out is None and _torch_fast is not None
                else None,
            )
    if direct:
        options = _core.check_options(
            api, causal, scale, window, softcap, dropout_p, score_mod, mask_mod
        )
        op_args, sources = options.op_args, options.capture_sources
    else:
        # Traced by torch.compile: no checks of values here (the op does them).
        score_text, mask_text, sources = "", "", ()
        if score_mod is not None or mask_mod is not None:
            score_text, mask_text, sources = _traced_mods(score_mod, mask_mod)
        op_args = (
            _op_causal(causal),
            _op_float("scale", scale),
            _op_window(window),
            _op_float("softcap", softcap),
            _op_float("dropout_p", dropout_p),
            score_text,
            mask_text,
        )
        layout = _op_layout(layout)
    captures = _captures(api, q, score_mod, mask_mod, sources)
    seed = _core.check_seed(api, dropout_seed)
    if seed is None:
        # Drawn here, not in the op, so that the backward sees the same seed.
        seed = random.getrandbits(63) if op_args[4] > 0 else 0
    if alibi_slopes is not None:
        if isinstance(alibi_slopes, (list, tuple)):
            alibi_slopes = torch.tensor(alibi_slopes, dtype=torch.float32, device=q.device)
        elif isinstance(alibi_slopes, np.ndarray) and alibi_slopes.dtype in (
            np.float16,
            np.float32,
        ):
            alibi_slopes = torch.from_numpy(alibi_slopes).to(q.device)
    # numpy operands next to torch Q, K, V become tensors (on Q's device).
    if isinstance(bias, np.ndarray) and bias.dtype in (np.float16, np.float32):
        bias = torch.from_numpy(bias).to(q.device)
    for name, x in (
        ("k", k),
        ("v", v),
        ("bias", bias),
        ("alibi_slopes", alibi_slopes),
        ("out", out),
    ):
        if x is not None and not isinstance(x, torch.Tensor):
            raise TypeError(f"{api}: {name} must be a torch tensor like q, got {type(x).__name__}")
    grad = torch.is_grad_enabled()
    if grad and alibi_slopes is not None and alibi_slopes.requires_grad:
        raise NotImplementedError(
            f"{api}: alibi_slopes requires grad, but ALiBi slopes are constants in FA, "
            "as in FlashAttention-2 (pass alibi_slopes.detach(), or a bias for a learned "
            "positional term)"
        )
    if out is not None:
        _no_grad_for_out(api, (q, k, v, bias, out))
    if direct and (bias is None or type(bias) in _PLAIN):
        if out is None and (
            grad
            and (
                q.requires_grad
                or k.requires_grad
                or v.requires_grad
                or (bias is not None and bias.requires_grad)
            )
        ):
            o, lse = _Attention.apply(q, k, v, bias, alibi_slopes, options, seed, captures, bshd)
            return (o, lse) if return_lse else o
        return _core.forward(
            api, q, k, v, bias, alibi_slopes, options, captures, seed, bool(return_lse), bshd, out
        )
    if out is not None:
        lse = _attention_out_op(q, k, v, bias, alibi_slopes, *op_args, seed, captures, layout, out)
        return (out, lse) if return_lse else out
    o, lse = _attention_op(q, k, v, bias, alibi_slopes, *op_args, seed, captures, layout)
    return (o, lse) if return_lse else o
