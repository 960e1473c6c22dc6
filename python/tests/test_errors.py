"""Every argument check, with its exact message, raised before anything runs."""

from __future__ import annotations

import re
from typing import Any

import numpy as np
import pytest

import fa

f32, f16 = np.float32, np.float16


def zeros(*shape: int, dtype: Any = f32) -> np.ndarray:
    return np.zeros(shape, dtype)


Q, K, V = zeros(2, 4, 8, 16), zeros(2, 2, 10, 16), zeros(2, 2, 10, 16)


class Gpu:
    """A tensor-like object on a CUDA device (torch duck typing)."""

    shape = (2, 4, 8, 16)
    dtype = "torch.float32"
    device = "cuda:0"

    def data_ptr(self) -> int:
        return 0

    def stride(self) -> tuple[int, ...]:
        return (512, 128, 16, 1)


def raises(error: type[Exception], message: str, *args: Any, **kwargs: Any) -> None:
    with pytest.raises(error, match="^" + re.escape(message) + "$"):
        fa.attention(*args, **kwargs)


def test_tensor_types() -> None:
    raises(
        TypeError,
        "fa.attention: q must be a numpy array or a torch tensor, got list",
        [[1.0]],
        K,
        V,
    )
    raises(
        TypeError,
        "fa.attention: v must be a numpy array or a torch tensor, got NoneType",
        Q,
        K,
        None,
    )


def test_dtypes() -> None:
    raises(
        TypeError,
        "fa.attention: q must have dtype float16, bfloat16 or float32, got float64",
        Q.astype(np.float64),
        K,
        V,
    )
    raises(
        TypeError,
        "fa.attention: k must have the dtype of q (float32), got float16",
        Q,
        K.astype(f16),
        V,
    )
    raises(
        TypeError,
        "fa.attention: v must have the dtype of q (float16), got float32",
        Q.astype(f16),
        K.astype(f16),
        V,
    )
    raises(
        TypeError,
        "fa.attention: q must have dtype float16, bfloat16 or float32, got int32",
        Q.astype(np.int32),
        K,
        V,
    )


def test_byte_order() -> None:
    # float32 of the other byte order is not FA's float32 (its name is the same).
    raises(
        TypeError,
        "fa.attention: q must have dtype float16, bfloat16 or float32, got float32",
        Q.astype(">f4"),
        K.astype(">f4"),
        V.astype(">f4"),
    )


def test_device() -> None:
    # Q on a GPU, K and V on the host: refused before anything is compiled.
    raises(
        ValueError,
        "fa.attention: k is on cpu but q is on cuda:0",
        Gpu(),
        K,
        V,
    )


def test_ranks() -> None:
    raises(
        ValueError,
        "fa.attention: q must have rank 4 [B, Hq, Nq, D], got shape (4, 8, 16)",
        Q[0],
        K,
        V,
    )
    raises(
        ValueError,
        "fa.attention: k must have rank 4 [B, Hkv, Nk, D], got shape (2, 2, 10, 16, 1)",
        Q,
        K[..., None],
        V,
    )
    raises(
        ValueError,
        "fa.attention: v must have rank 4 [B, Hkv, Nk, Dv], got shape (2, 10, 16)",
        Q,
        K,
        V[0],
    )


def test_shape_mismatches() -> None:
    raises(
        ValueError,
        "fa.attention: k must have the batch size of q (q.shape[0] = 2), got k.shape[0] = 1",
        Q,
        K[:1],
        V,
    )
    raises(
        ValueError,
        "fa.attention: v must have the batch size of q (q.shape[0] = 2), got v.shape[0] = 1",
        Q,
        K,
        V[:1],
    )
    raises(
        ValueError,
        "fa.attention: k must have the head dim of q (q.shape[3] = 16), got k.shape[3] = 8",
        Q,
        K[..., :8],
        V,
    )
    raises(
        ValueError,
        "fa.attention: v must have the heads of k (k.shape[1] = 2), got v.shape[1] = 1",
        Q,
        K,
        V[:, :1],
    )
    raises(
        ValueError,
        "fa.attention: v must have the sequence length of k (k.shape[2] = 10), got v.shape[2] = 9",
        Q,
        K,
        V[:, :, :9],
    )
    raises(
        ValueError,
        "fa.attention: q heads (q.shape[1] = 4) must be a multiple of k/v heads (k.shape[1] = 3)",
        Q,
        zeros(2, 3, 10, 16),
        zeros(2, 3, 10, 16),
    )
    raises(
        ValueError,
        "fa.attention: head dims must be > 0, got q.shape[3] = 0, v.shape[3] = 16",
        Q[..., :0],
        K[..., :0],
        V,
    )


def test_options() -> None:
    message = (
        "fa.attention: causal must be False, True (top-left), 'top_left' or 'bottom_right', got {}"
    )
    raises(ValueError, message.format("'top-left'"), Q, K, V, causal="top-left")
    raises(TypeError, message.format("1"), Q, K, V, causal=1)
    raises(
        ValueError,
        "fa.attention: scale must be None or a finite number > 0, got -1.0",
        Q,
        K,
        V,
        scale=-1.0,
    )
    raises(
        TypeError,
        "fa.attention: scale must be None or a finite number > 0, got '0.1'",
        Q,
        K,
        V,
        scale="0.1",
    )
    raises(
        ValueError,
        "fa.attention: softcap must be None or a finite number > 0, got 0.0",
        Q,
        K,
        V,
        softcap=0.0,
    )
    raises(
        ValueError,
        "fa.attention: softcap must be None or a finite number > 0, got inf",
        Q,
        K,
        V,
        softcap=float("inf"),
    )
    message = "fa.attention: window must be None or a pair (left, right) of integers >= 0, got {}"
    raises(ValueError, message.format("(4, -1)"), Q, K, V, window=(4, -1))
    raises(TypeError, message.format("(4,)"), Q, K, V, window=(4,))
    raises(TypeError, message.format("(1.5, 2)"), Q, K, V, window=(1.5, 2))
    raises(TypeError, message.format("8"), Q, K, V, window=8)
    raises(
        ValueError,
        "fa.attention: dropout_p must be a number in [0, 1), got 1.0",
        Q,
        K,
        V,
        dropout_p=1.0,
    )
    raises(
        ValueError,
        "fa.attention: dropout_p must be a number in [0, 1), got -0.1",
        Q,
        K,
        V,
        dropout_p=-0.1,
    )
    raises(
        ValueError,
        f"fa.attention: dropout_seed must be None or a 64-bit integer, got {2**64}",
        Q,
        K,
        V,
        dropout_seed=2**64,
    )
    raises(
        TypeError,
        "fa.attention: dropout_p must be a number in [0, 1), got None",
        Q,
        K,
        V,
        dropout_p=None,
    )


def test_bias() -> None:
    raises(
        ValueError,
        "fa.attention: bias of shape (2, 4, 8, 9) does not broadcast to [B, Hq, Nq, Nk] = [2, 4, "
        "8, 10]",
        Q,
        K,
        V,
        bias=zeros(2, 4, 8, 9),
    )
    raises(
        ValueError,
        "fa.attention: bias of shape (1, 2, 4, 8, 10) does not broadcast to [B, Hq, Nq, Nk] = [2, "
        "4, 8, 10]",
        Q,
        K,
        V,
        bias=zeros(1, 2, 4, 8, 10),
    )
    raises(
        TypeError,
        "fa.attention: bias must have dtype float16, bfloat16 or float32, got float64",
        Q,
        K,
        V,
        bias=np.zeros((8, 10)),
    )
    raises(
        TypeError,
        "fa.attention: bias must be a numpy array or a torch tensor, got float",
        Q,
        K,
        V,
        bias=1.0,
    )


def test_alibi_slopes() -> None:
    raises(
        TypeError,
        "fa.attention: alibi_slopes must have dtype float32, got float64",
        Q,
        K,
        V,
        alibi_slopes=np.ones(4),
    )
    raises(
        ValueError,
        "fa.attention: alibi_slopes must have shape [Hq] = [4] or [B, Hq] = [2, 4], got (2,)",
        Q,
        K,
        V,
        alibi_slopes=np.ones(2, f32),
    )


def test_dtype_is_checked_before_the_options() -> None:
    raises(
        TypeError,
        "fa.attention: k must have the dtype of q (float32), got float16",
        Q,
        K.astype(f16),
        V,
        scale=-1,
    )


def kernel_raises(
    kernel: fa.Kernel, error: type[Exception], message: str, *args: Any, **kwargs: Any
) -> None:
    with pytest.raises(error, match="^" + re.escape(message) + "$"):
        kernel(*args, **kwargs)


def test_kernel_call_checks() -> None:
    kernel = fa.compile("float16", 16, 8, num_heads_q=4, num_heads_kv=2)
    q, k, v = Q.astype(f16), K.astype(f16), V[..., :8].astype(f16)
    kernel_raises(
        kernel,
        TypeError,
        "fa.Kernel: q must have dtype float16 (the kernel's), got float32",
        Q,
        K,
        V[..., :8],
    )
    kernel_raises(
        kernel,
        ValueError,
        "fa.Kernel: q must have head dim 16 (the kernel's), got q.shape[3] = 8",
        q[..., :8],
        k[..., :8],
        v,
    )
    kernel_raises(
        kernel,
        ValueError,
        "fa.Kernel: v must have head dim 8 (the kernel's), got v.shape[3] = 16",
        q,
        k,
        k,
    )
    kernel_raises(
        kernel,
        ValueError,
        "fa.Kernel: q must have 4 heads (the kernel's), got q.shape[1] = 2",
        q[:, :2],
        k,
        v,
    )
    kernel_raises(
        kernel,
        ValueError,
        "fa.Kernel: k must have 2 heads (the kernel's), got k.shape[1] = 1",
        q,
        k[:, :1],
        v[:, :1],
    )
    kernel_raises(
        kernel,
        ValueError,
        "fa.Kernel: the kernel was compiled without a bias; compile one with bias=...",
        q,
        k,
        v,
        bias=zeros(8, 10),
    )
    kernel_raises(
        kernel,
        ValueError,
        "fa.Kernel: the kernel was compiled without ALiBi; compile one with alibi_slopes=...",
        q,
        k,
        v,
        alibi_slopes=np.ones(4, f32),
    )


def test_kernel_call_checks_bias_and_alibi() -> None:
    kernel = fa.compile("float32", 16, bias=zeros(1, 1, 1, 1, dtype=f16), alibi_slopes="per_batch")
    slopes = np.ones((2, 4), f32)
    kernel_raises(
        kernel,
        ValueError,
        "fa.Kernel: the kernel was compiled with a bias [1, 1, 1, 1]; pass bias=",
        Q,
        K,
        V,
        alibi_slopes=slopes,
    )
    kernel_raises(
        kernel,
        TypeError,
        "fa.Kernel: bias must have dtype float16 (the kernel's), got float32",
        Q,
        K,
        V,
        bias=zeros(1),
        alibi_slopes=slopes,
    )
    kernel_raises(
        kernel,
        ValueError,
        "fa.Kernel: bias must have shape [1, 1, 1, 1] (the kernel's), got (1, 1, 8, 10)",
        Q,
        K,
        V,
        bias=zeros(8, 10, dtype=f16),
        alibi_slopes=slopes,
    )
    kernel_raises(
        kernel,
        ValueError,
        "fa.Kernel: the kernel was compiled with ALiBi; pass alibi_slopes= [B, Hq]",
        Q,
        K,
        V,
        bias=zeros(1, dtype=f16),
    )
    kernel_raises(
        kernel,
        ValueError,
        "fa.Kernel: alibi_slopes must have shape [B, Hq] (the kernel's), got (4,)",
        Q,
        K,
        V,
        bias=zeros(1, dtype=f16),
        alibi_slopes=np.ones(4, f32),
    )


def compile_raises(error: type[Exception], message: str, *args: Any, **kwargs: Any) -> None:
    with pytest.raises(error, match="^" + re.escape(message) + "$"):
        fa.compile(*args, **kwargs)


def test_compile_checks() -> None:
    compile_raises(
        TypeError,
        "fa.compile: dtype must be float16, bfloat16 or float32, got float64",
        np.float64,
        16,
    )
    compile_raises(
        TypeError, "fa.compile: dtype must be float16, bfloat16 or float32, got int8", "int8", 16
    )
    compile_raises(ValueError, "fa.compile: head_dim must be an integer > 0, got 0", "f32", 0)
    compile_raises(
        ValueError,
        "fa.compile: atomic_dq and deterministic exclude each other",
        "bf16",
        64,
        atomic_dq=True,
        deterministic=True,
    )
    compile_raises(
        ValueError, "fa.compile: head_dim_v must be an integer > 0, got -8", "f32", 16, -8
    )
    compile_raises(
        ValueError,
        "fa.compile: num_heads_q must be None or an integer > 0, got 0",
        "f32",
        16,
        num_heads_q=0,
    )
    compile_raises(
        ValueError,
        "fa.compile: num_heads_q (6) must be a multiple of num_heads_kv (4)",
        "f32",
        16,
        num_heads_q=6,
        num_heads_kv=4,
    )
    compile_raises(
        ValueError,
        "fa.compile: alibi_slopes must be None, True ([Hq]), 'per_batch' ([B, Hq]) or an example "
        "array, got 'heads'",
        "f32",
        16,
        alibi_slopes="heads",
    )
    compile_raises(
        TypeError,
        "fa.compile: bias must be None, a dtype (float16, bfloat16, float32) or an example array, "
        "got 'int8'",
        "f32",
        16,
        bias="int8",
    )
    compile_raises(
        ValueError,
        "fa.compile: softcap must be None or a finite number > 0, got -2",
        "f32",
        16,
        softcap=-2,
    )


def test_unsupported_target_is_an_fa_error() -> None:
    with pytest.raises(
        fa.FAError,
        match=r"^fa::compile: target 'tpu' is not supported \(host, auto, cuda:N, or a "
        r"GPU chip: sm_80, sm_86, sm_87, sm_89, sm_90, sm_90a, sm_100, sm_120\)$",
    ):
        fa.compile("f32", 16, target="tpu")
    # The GPU kernel takes f16 and bf16 only: a compile error, no GPU needed.
    with pytest.raises(
        fa.FAError,
        match=r"'fa.attention' op convert-fa-to-nvvm: element type must be f16 or "
        r"bf16 on the GPU",
    ):
        fa.compile("f32", 16, target="sm_90a")
    assert issubclass(fa.FAError, RuntimeError)
