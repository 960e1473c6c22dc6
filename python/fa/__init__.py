"""FA: FlashAttention-style exact attention, compiled with MLIR.

    import numpy as np, fa
    q = np.random.randn(1, 4, 128, 64).astype(np.float32)   # [B, H, N, D]
    o = fa.attention(q, q, q, causal=True)

``fa.attention`` runs one attention variant (causal, sliding window, softcap,
ALiBi, bias, GQA/MQA, traced ``score_mod`` / ``mask_mod`` functions) on numpy
arrays or torch tensors (differentiable: ``torch.ops.fa.attention``);
``fa.attention_backward`` gives the gradients for numpy; ``fa.compile``
returns a reusable kernel. See docs/python.md.
"""

from fa import _C
from fa._api import Kernel, attention, attention_backward, clear_cache, compile
from fa._C import FAError
from fa._trace import TracedValue, abs, exp, log, maximum, minimum, sqrt, tanh, where

__version__: str = _C.version()

__all__ = [
    "FAError",
    "Kernel",
    "TracedValue",
    "abs",
    "attention",
    "attention_backward",
    "clear_cache",
    "compile",
    "exp",
    "log",
    "maximum",
    "minimum",
    "sqrt",
    "tanh",
    "version",
    "where",
]


def version() -> str:
    """FA's version, "MAJOR.MINOR.PATCH"."""
    return _C.version()
