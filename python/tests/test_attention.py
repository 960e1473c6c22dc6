"""fa.attention and fa.compile against the float64 reference."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest

import fa
from reference import check_attention, dropout_keep, randn

DTYPES = ["float32", "float16", "bfloat16"]


def qkv(
    dtype: str,
    b: int,
    hq: int,
    hkv: int,
    nq: int,
    nk: int,
    d: int,
    dv: int | None = None,
    seed: int = 0,
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    rng = np.random.default_rng(seed)
    return (
        randn(rng, (b, hq, nq, d), dtype),
        randn(rng, (b, hkv, nk, d), dtype),
        randn(rng, (b, hkv, nk, dv or d), dtype),
    )


def check(
    q: Any, k: Any, v: Any, ref_options: dict[str, Any] | None = None, **options: Any
) -> None:
    """Runs fa.attention with `options` (with the lse) and checks it against the
    references (docs/accuracy.md)."""
    o, lse = fa.attention(q, k, v, return_lse=True, **options)
    assert o.dtype == q.dtype
    assert o.shape == (*q.shape[:3], v.shape[3])
    assert o.flags.c_contiguous
    assert lse.dtype == np.float32 and lse.shape == q.shape[:3]
    check_attention(q, k, v, o, lse, **(ref_options if ref_options is not None else options))


@pytest.mark.parametrize("dtype", DTYPES)
def test_plain(dtype: str) -> None:
    check(*qkv(dtype, 2, 3, 3, 17, 17, 16))


def test_returns_o_only_without_lse() -> None:
    q, k, v = qkv("float32", 1, 2, 2, 8, 8, 8)
    o = fa.attention(q, k, v)
    assert isinstance(o, np.ndarray)
    check_attention(q, k, v, o)


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("causal", ["top_left", "bottom_right"])
@pytest.mark.parametrize("nq,nk", [(20, 33), (33, 20)])
def test_causal(dtype: str, causal: str, nq: int, nk: int) -> None:
    # Bottom-right with Nq > Nk masks the first rows completely.
    check(*qkv(dtype, 1, 2, 2, nq, nk, 16), causal=causal)


def test_causal_true_is_top_left() -> None:
    q, k, v = qkv("float32", 1, 2, 2, 9, 14, 8)
    check(q, k, v, ref_options={"causal": "top_left"}, causal=True)
    np.testing.assert_array_equal(
        fa.attention(q, k, v, causal=True), fa.attention(q, k, v, causal="top_left")
    )


@pytest.mark.parametrize("window", [(4, 0), (3, 2), (0, 0)])
def test_window(window: tuple[int, int]) -> None:
    check(*qkv("float32", 1, 2, 2, 19, 27, 16), window=window)


def test_window_and_causal_in_f16() -> None:
    check(*qkv("float16", 2, 2, 1, 24, 24, 16), window=(5, 3), causal="bottom_right")


def test_softcap_and_scale() -> None:
    q, k, v = qkv("float32", 1, 2, 2, 16, 20, 16)
    check(q * 4, k * 4, v, softcap=5.0, scale=0.3)


@pytest.mark.parametrize("per_batch", [False, True])
def test_alibi(per_batch: bool) -> None:
    b, hq = 2, 4
    slopes = np.array([2.0 ** (-(i + 1)) for i in range(hq)], dtype=np.float32)
    if per_batch:
        slopes = np.stack([slopes, slopes * 0.5])
    check(*qkv("float32", b, hq, 2, 13, 21, 16), alibi_slopes=slopes, causal="bottom_right")


def test_alibi_slopes_as_a_list() -> None:
    q, k, v = qkv("float32", 1, 2, 2, 8, 8, 8)
    check(q, k, v, ref_options={"alibi_slopes": [0.5, 0.25]}, alibi_slopes=[0.5, 0.25])


@pytest.mark.parametrize(
    "bias_shape",
    [(2, 3, 12, 15), (1, 3, 1, 15), (12, 15), (15,), (2, 1, 12, 1)],
)
def test_bias_broadcast(bias_shape: tuple[int, ...]) -> None:
    q, k, v = qkv("float32", 2, 3, 3, 12, 15, 8)
    bias = randn(np.random.default_rng(5), bias_shape, "float32")
    check(q, k, v, bias=bias)


@pytest.mark.parametrize("bias_dtype", ["float16", "bfloat16"])
def test_bias_of_another_dtype(bias_dtype: str) -> None:
    q, k, v = qkv("float32", 1, 2, 2, 10, 10, 8)
    bias = randn(np.random.default_rng(6), (1, 2, 10, 10), bias_dtype)
    check(q, k, v, bias=bias)


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("hkv", [2, 1])  # GQA, MQA
def test_gqa_mqa(dtype: str, hkv: int) -> None:
    check(*qkv(dtype, 2, 4, hkv, 15, 18, 16), causal="bottom_right")


def test_head_dim_v_differs() -> None:
    check(*qkv("float32", 1, 2, 2, 9, 11, 16, dv=8))


@pytest.mark.parametrize("dtype", DTYPES)
def test_transposed_inputs(dtype: str) -> None:
    # Activations stored [B, N, H, D], viewed as [B, H, N, D].
    rng = np.random.default_rng(1)
    q = randn(rng, (2, 14, 4, 16), dtype).transpose(0, 2, 1, 3)
    k = randn(rng, (2, 19, 2, 16), dtype).transpose(0, 2, 1, 3)
    v = randn(rng, (2, 19, 2, 16), dtype).transpose(0, 2, 1, 3)
    assert not q.flags.c_contiguous
    check(q, k, v, causal="bottom_right")


def test_sliced_and_flipped_inputs() -> None:
    rng = np.random.default_rng(2)
    big = randn(rng, (1, 2, 20, 32), "float32")
    q = big[:, :, ::2, ::2]  # strides 2 in N and D
    k = big[:, :, ::-1, 1::2]  # a negative stride (fa.attention copies it)
    v = big[:, ::-1, :, :16]
    check(q, k, v)


def test_read_only_inputs() -> None:
    q, k, v = qkv("float32", 1, 2, 2, 8, 8, 8)
    for x in (q, k, v):
        x.flags.writeable = False
    check(q, k, v)


def test_score_mod_relative_position() -> None:
    q, k, v = qkv("float32", 1, 2, 2, 21, 21, 16)
    check(
        q,
        k,
        v,
        ref_options={"score_mod": lambda s, b, h, i, j: s - 0.1 * (i - j)},
        score_mod=lambda score, b, h, q_idx, kv_idx: score - 0.1 * (q_idx - kv_idx),
    )


def test_score_mod_per_head_scale_in_bf16() -> None:
    q, k, v = qkv("bfloat16", 2, 4, 2, 16, 16, 16)
    check(
        q,
        k,
        v,
        ref_options={"score_mod": lambda s, b, h, i, j: s * (1.0 + 0.5 * h), "causal": "top_left"},
        score_mod=lambda score, b, h, q_idx, kv_idx: score * (1.0 + 0.5 * h),
        causal=True,
    )


def test_score_mod_with_where_and_math() -> None:
    def mod(score: Any, b: Any, h: Any, q_idx: Any, kv_idx: Any) -> Any:
        distance = fa.abs(q_idx - kv_idx)
        damped = score - fa.log(1.0 + distance) + 0.25 * fa.tanh(score) + 0.1 * fa.sqrt(distance)
        return fa.where(
            (distance % 3 == 0) & (b == 1), fa.maximum(damped, -1.0), fa.minimum(damped, 2.0)
        )

    def ref(
        s: np.ndarray, b: np.ndarray, h: np.ndarray, i: np.ndarray, j: np.ndarray
    ) -> np.ndarray:
        distance = np.abs(i - j)
        damped = s - np.log(1.0 + distance) + 0.25 * np.tanh(s) + 0.1 * np.sqrt(distance)
        return np.where(
            (distance % 3 == 0) & (b == 1), np.maximum(damped, -1.0), np.minimum(damped, 2.0)
        )

    check(*qkv("float32", 2, 2, 2, 13, 17, 8), ref_options={"score_mod": ref}, score_mod=mod)


def test_score_mod_floor_division_of_negative_indices() -> None:
    # Python's floored // and % on q_idx - kv_idx, which is negative above the diagonal.
    def mod(score: Any, b: Any, h: Any, q_idx: Any, kv_idx: Any) -> Any:
        d = q_idx - kv_idx
        return score + 0.1 * (d // 4) - 0.05 * (d % 3)

    def ref(
        s: np.ndarray, b: np.ndarray, h: np.ndarray, i: np.ndarray, j: np.ndarray
    ) -> np.ndarray:
        d = i - j
        return s + 0.1 * (d // 4) - 0.05 * (d % 3)

    check(*qkv("float32", 1, 1, 1, 12, 12, 8), ref_options={"score_mod": ref}, score_mod=mod)


def test_score_mod_float_floor_mod_and_pow() -> None:
    def mod(score: Any, b: Any, h: Any, q_idx: Any, kv_idx: Any) -> Any:
        x = (q_idx - kv_idx) * 0.5  # exact in f32, so floor and fmod agree with float64
        return score + 0.1 * (x // 1.5) - 0.2 * (x % 1.5) + 0.05 * fa.abs(x) ** 1.5 - score**2 * 0.1

    def ref(
        s: np.ndarray, b: np.ndarray, h: np.ndarray, i: np.ndarray, j: np.ndarray
    ) -> np.ndarray:
        x = (i - j) * 0.5
        return s + 0.1 * (x // 1.5) - 0.2 * (x % 1.5) + 0.05 * np.abs(x) ** 1.5 - s**2 * 0.1

    check(*qkv("float32", 1, 1, 1, 12, 15, 8), ref_options={"score_mod": ref}, score_mod=mod)


def test_mask_mod_document_mask() -> None:
    q, k, v = qkv("float16", 1, 2, 2, 30, 30, 16)
    check(
        q,
        k,
        v,
        ref_options={"mask_mod": lambda b, h, i, j: (i // 8) == (j // 8)},
        mask_mod=lambda b, h, q_idx, kv_idx: (q_idx // 8) == (kv_idx // 8),
    )


def test_mask_mod_prefix_lm() -> None:
    prefix = 6
    q, k, v = qkv("float32", 1, 2, 2, 20, 20, 16)
    check(
        q,
        k,
        v,
        ref_options={"mask_mod": lambda b, h, i, j: np.where(j < prefix, True, j <= i)},
        mask_mod=lambda b, h, q_idx, kv_idx: fa.where(kv_idx < prefix, True, kv_idx <= q_idx),
    )


def test_score_mod_and_mask_mod_with_every_builtin() -> None:
    q, k, v = qkv("float32", 2, 4, 2, 18, 22, 16)
    slopes = np.array([0.5, 0.25, 0.125, 0.0625], dtype=np.float32)
    bias = randn(np.random.default_rng(3), (1, 4, 18, 22), "float32")
    options = {
        "causal": "bottom_right",
        "window": (9, 0),
        "softcap": 20.0,
        "scale": 0.2,
        "alibi_slopes": slopes,
        "bias": bias,
    }
    check(
        q,
        k,
        v,
        ref_options={
            **options,
            "score_mod": lambda s, b, h, i, j: s + 0.01 * h,
            "mask_mod": lambda b, h, i, j: (i + j) % 5 != 0,
        },
        score_mod=lambda score, b, h, q_idx, kv_idx: score + 0.01 * h,
        mask_mod=lambda b, h, q_idx, kv_idx: (q_idx + kv_idx) % 5 != 0,
        **options,
    )


def test_fully_masked_rows() -> None:
    q, k, v = qkv("float32", 1, 2, 2, 10, 10, 8)
    o, lse = fa.attention(q, k, v, mask_mod=lambda b, h, q_idx, kv_idx: q_idx < 4, return_lse=True)
    assert np.all(o[:, :, 4:] == 0)
    assert np.all(lse[:, :, 4:] == -np.inf)
    assert np.all(np.isfinite(lse[:, :, :4]))
    check(
        q,
        k,
        v,
        ref_options={"mask_mod": lambda b, h, i, j: i < 4},
        mask_mod=lambda b, h, q_idx, kv_idx: q_idx < 4,
    )


def test_empty_inputs() -> None:
    q, k, v = qkv("float32", 1, 2, 2, 5, 0, 8)
    o, lse = fa.attention(q, k, v, return_lse=True)  # no keys: every row is masked
    assert np.all(o == 0) and np.all(lse == -np.inf)
    o = fa.attention(q[:0], k[:0], v[:0])
    assert o.shape == (0, 2, 5, 8)


def test_dropout_on_the_host() -> None:
    # Dropout keeps P[i, j] / (1 - p) or drops it; with V = I, O is that matrix.
    q, k, _ = qkv("float32", 1, 2, 2, 16, 16, 8)
    eye = np.ascontiguousarray(np.broadcast_to(np.eye(16, dtype=np.float32), (1, 2, 16, 16)))
    p = fa.attention(q, k, eye)
    dropped = fa.attention(q, k, eye, dropout_p=0.25, dropout_seed=7)
    kept = dropped != 0
    assert np.allclose(dropped[kept], p[kept] / 0.75, rtol=1e-5)
    assert 0.1 < 1 - kept.mean() < 0.4
    assert np.array_equal(dropped, fa.attention(q, k, eye, dropout_p=0.25, dropout_seed=7))
    assert not np.array_equal(dropped, fa.attention(q, k, eye, dropout_p=0.25, dropout_seed=8))
    # The reference's dropout (Philox, docs/dialect.md) keeps the same entries.
    assert np.array_equal(kept, np.broadcast_to(dropout_keep(7, (1, 2, 16, 16), 0.25), kept.shape))
    for dtype in DTYPES:
        q, k, v = qkv(dtype, 2, 4, 2, 19, 23, 16)
        options = {"causal": "bottom_right", "dropout_p": 0.25, "dropout_seed": 7}
        check_attention(q, k, v, *fa.attention(q, k, v, return_lse=True, **options), **options)


def test_kernels_are_cached(monkeypatch: pytest.MonkeyPatch) -> None:
    compiled = []
    real_compile = fa._C.compile

    def counting_compile(spec: Any, target: str = "host") -> Any:
        compiled.append(spec)
        return real_compile(spec, target)

    monkeypatch.setattr(fa._C, "compile", counting_compile)
    fa.clear_cache()
    mod = lambda score, b, h, q_idx, kv_idx: score * 0.5  # noqa: E731
    for shape in [(1, 2, 2, 8, 8), (2, 4, 2, 5, 9), (1, 2, 1, 16, 3)]:
        q, k, v = qkv("float32", *shape, 8)
        fa.attention(q, k, v, score_mod=mod)
        fa.attention(q, k, v, score_mod=lambda s, b, h, q_idx, kv_idx: s * 0.5)  # same trace
    assert len(compiled) == 1
    q, k, v = qkv("float32", 1, 2, 2, 8, 8, 8)
    fa.attention(q, k, v, score_mod=lambda s, b, h, q_idx, kv_idx: s * 0.25)  # new variant
    fa.attention(q, k, v, causal=True)
    fa.attention(q.astype(np.float16), k.astype(np.float16), v.astype(np.float16))
    assert len(compiled) == 4
    # The last variant is served without the lock, until the cache is cleared.
    fa.attention(q.astype(np.float16), k.astype(np.float16), v.astype(np.float16))
    assert len(compiled) == 4
    fa.clear_cache()
    fa.attention(q.astype(np.float16), k.astype(np.float16), v.astype(np.float16))
    assert len(compiled) == 5


def test_compile_once_run_many_shapes() -> None:
    kernel = fa.compile(
        np.float16,
        16,
        causal="bottom_right",
        mask_mod=lambda b, h, q_idx, kv_idx: q_idx % 2 == 0,
        return_lse=True,
    )
    assert isinstance(kernel, fa.Kernel)
    assert kernel.target == "host"
    assert "fa.attention" in kernel.mlir and "mask_mod" in kernel.mlir and "fa.yield" in kernel.mlir
    assert "f16" in repr(kernel)
    for shape in [(1, 2, 2, 8, 12), (3, 4, 1, 17, 9)]:
        q, k, v = qkv("float16", *shape, 16)
        o, lse = kernel(q, k, v)
        check_attention(
            q, k, v, o, lse, causal="bottom_right", mask_mod=lambda b, h, i, j: i % 2 == 0
        )


def test_compile_with_bias_and_alibi_examples() -> None:
    slopes = np.array([0.5, 0.25], dtype=np.float32)
    kernel = fa.compile(
        "float32",
        8,
        bias=np.zeros((1, 1, 4, 4), np.float32),
        alibi_slopes=True,
        scale=0.5,
        window=(3, 1),
    )
    assert kernel.spec.bias and kernel.spec.bias_broadcast == [True, True, False, False]
    assert kernel.spec.alibi and not kernel.spec.alibi_per_batch
    q, k, v = qkv("float32", 2, 2, 2, 6, 7, 8)
    bias = randn(np.random.default_rng(4), (1, 1, 6, 7), "float32")
    o = kernel(q, k, v, bias=bias, alibi_slopes=slopes)
    check_attention(q, k, v, o, bias=bias, alibi_slopes=slopes, scale=0.5, window=(3, 1))


def test_compile_full_bias_accepts_a_broadcast_one() -> None:
    # A kernel compiled for a full bias takes a size-1 dim as a stride-0 view.
    kernel = fa.compile("float32", 8, bias="float32")
    q, k, v = qkv("float32", 2, 2, 2, 6, 7, 8)
    bias = randn(np.random.default_rng(4), (1, 2, 6, 7), "float32")
    check_attention(q, k, v, kernel(q, k, v, bias=bias), bias=bias)


def test_compile_fixed_heads_and_head_dim_v() -> None:
    kernel = fa.compile("bf16", 16, 8, num_heads_q=4, num_heads_kv=2)
    q, k, v = qkv("bfloat16", 1, 4, 2, 9, 9, 16, dv=8)
    check_attention(q, k, v, kernel(q, k, v))


def test_gpu_kernel_ptx() -> None:
    # Compiling for a GPU chip needs no GPU: the PTX comes from LLVM's backend.
    kernel = fa.compile("float16", 64, causal="bottom_right", softcap=30.0, target="sm_80")
    assert kernel.target == "sm_80"
    ptx = kernel.ptx
    assert ".target sm_80" in ptx and ".visible .entry" in ptx and "mma.sync" in ptx
    assert fa.compile("bfloat16", 128, target="sm_90a").ptx.count(".target sm_90a") == 1


def test_gpu_head_dims() -> None:
    """The GPU's head dims (compiled without a GPU): D = 80 on wgmma in tiles
    padded to 128 columns (S over 80 of them, P V of 80) and on sm_80's
    mma.sync, D = 192 and Dk = 192 with Dv = 128 on wgmma with a producer
    warpgroup (P V of Dv columns); other head dims are a compile error naming
    the supported ones."""
    ptx = fa.compile("bfloat16", 80, target="sm_90a").ptx
    assert ".maxntid 384, 1, 1" in ptx and "wgmma.mma_async.sync.aligned.m64n80k16" in ptx
    assert "mma.sync.aligned.m16n8k16" not in ptx
    assert "mma.sync.aligned.m16n8k16" in fa.compile("bfloat16", 80, target="sm_80").ptx
    ptx = fa.compile("bfloat16", 192, target="sm_90a").ptx
    assert ".maxntid 384, 1, 1" in ptx and "wgmma.mma_async.sync.aligned.m64n192k16" in ptx
    ptx = fa.compile("bfloat16", 192, 128, target="sm_90a").ptx
    assert ".maxntid 384, 1, 1" in ptx and "wgmma.mma_async.sync.aligned.m64n128k16" in ptx
    assert "m64n192k16" not in ptx
    message = (
        r"head dims must each be one of 32, 64, 80, 96, 128, 192, 256 on the GPU "
        r"\(got D = 48, Dv = 48\)"
    )
    with pytest.raises(fa.FAError, match=message):
        fa.compile("bfloat16", 48, target="sm_90a")


def test_host_kernel_has_no_ptx() -> None:
    kernel = fa.compile("float32", 16)
    with pytest.raises(
        fa.FAError,
        match=r"^fa::Kernel::ptx: the kernel was compiled for the host, which runs no PTX; "
        r"compile for a GPU target \(sm_80, sm_90a, or auto on a machine with a GPU\) to get "
        r"it$",
    ):
        kernel.ptx  # noqa: B018 - the property raises


def test_score_mod_as_mlir_text() -> None:
    body = """
    %c = arith.constant 2.0 : f32
    %r = arith.mulf %score, %c : f32
    fa.yield %r : f32
    """
    q, k, v = qkv("float32", 1, 2, 2, 8, 8, 8)
    check(q, k, v, ref_options={"score_mod": lambda s, b, h, i, j: 2 * s}, score_mod=body)


def test_version() -> None:
    assert fa.__version__ == fa.version() == fa._C.version()
    assert len(fa.__version__.split(".")) == 3
