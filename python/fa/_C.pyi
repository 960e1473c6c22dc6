"""Type stubs of fa._C (python/src/bindings.cpp)."""

from collections.abc import Sequence
from typing import Any, ClassVar

RawTensor = tuple[int, str | DType, tuple[int, ...], tuple[int, ...] | None, str | Device]

class FAError(RuntimeError): ...

class DType:
    f16: ClassVar[DType]
    bf16: ClassVar[DType]
    f32: ClassVar[DType]
    f64: ClassVar[DType]
    i8: ClassVar[DType]
    i16: ClassVar[DType]
    i32: ClassVar[DType]
    i64: ClassVar[DType]
    name: str
    value: int

class Device:
    cpu: ClassVar[Device]
    cuda: ClassVar[Device]
    name: str
    value: int

class Causal:
    none: ClassVar[Causal]
    top_left: ClassVar[Causal]
    bottom_right: ClassVar[Causal]
    name: str
    value: int

class AttentionSpec:
    dtype: DType
    head_dim: int
    head_dim_v: int
    num_heads_q: int
    num_heads_kv: int
    scale: float | None
    causal: Causal
    window: tuple[int, int] | None
    softcap: float | None
    alibi: bool
    alibi_per_batch: bool
    bias: bool
    bias_dtype: DType
    bias_broadcast: list[bool]
    dropout_p: float
    score_mod: str
    mask_mod: str
    return_lse: bool
    atomic_dq: bool
    deterministic: bool
    captures: list[tuple[DType, int]]
    def __init__(self) -> None: ...

class Kernel:
    @property
    def address(self) -> int: ...
    @property
    def mlir(self) -> str: ...
    @property
    def target(self) -> str: ...
    @property
    def ptx(self) -> str: ...
    @property
    def spec(self) -> AttentionSpec: ...
    def forward(
        self,
        q: Any,
        k: Any,
        v: Any,
        out: Any,
        lse: Any = None,
        bias: Any = None,
        alibi_slopes: Any = None,
        dropout_seed: int = 0,
        stream: int = 0,
        captures: Sequence[Any] = (),
        workspace: Any = None,
    ) -> None: ...
    def backward(
        self,
        q: Any,
        k: Any,
        v: Any,
        out: Any,
        dout: Any,
        lse: Any,
        dq: Any,
        dk: Any,
        dv: Any,
        bias: Any = None,
        alibi_slopes: Any = None,
        dropout_seed: int = 0,
        stream: int = 0,
        dbias: Any = None,
        captures: Sequence[Any] = (),
        workspace: Any = None,
    ) -> None: ...
    def run(
        self,
        inputs: Inputs,
        out: Any,
        lse: Any = None,
        dropout_seed: int = 0,
        stream: int = 0,
        captures: Sequence[Any] = (),
        workspace: Any = None,
    ) -> None: ...
    def run_backward(
        self,
        inputs: Inputs,
        dq: Any,
        dk: Any,
        dv: Any,
        dbias: Any = None,
        dropout_seed: int = 0,
        stream: int = 0,
        captures: Sequence[Any] = (),
        workspace: Any = None,
    ) -> None: ...
    def forward_workspace_bytes(self, batch: int, heads_q: int, seq_q: int) -> int: ...
    def backward_workspace_bytes(
        self, batch: int, heads_q: int, seq_q: int, dbias: bool = False
    ) -> int: ...

class Tensor:
    """A numpy array or torch tensor as fa.attention read it."""

    @property
    def obj(self) -> Any: ...
    @property
    def framework(self) -> str: ...
    @property
    def code(self) -> str | None: ...
    @property
    def dtype_name(self) -> str: ...
    @property
    def shape(self) -> tuple[int, ...]: ...
    @property
    def strides(self) -> tuple[int, ...]: ...
    @property
    def device(self) -> str: ...
    @property
    def data_ptr(self) -> int: ...
    @property
    def is_cpu(self) -> bool: ...

class Inputs:
    """Q, K, V, bias and ALiBi slopes of one call, checked (check_inputs)."""

    @property
    def q(self) -> Tensor: ...
    @property
    def k(self) -> Tensor: ...
    @property
    def v(self) -> Tensor: ...
    @property
    def bias(self) -> Tensor | None: ...
    @property
    def slopes(self) -> Tensor | None: ...
    @property
    def user_bias(self) -> Any: ...
    @property
    def key(
        self,
    ) -> tuple[
        str, int, int, tuple[str, tuple[bool, bool, bool, bool]] | None, str | None, str
    ]: ...
    @property
    def torch(self) -> bool: ...
    @property
    def is_cpu(self) -> bool: ...
    @property
    def out_shape(self) -> tuple[int, int, int, int]: ...
    @property
    def bshd(self) -> bool: ...
    @property
    def nk(self) -> int: ...
    @property
    def lse_shape(self) -> tuple[int, int, int]: ...
    @property
    def empty(self) -> bool: ...
    def check_grads(self, api: str, out: Any, dout: Any, lse: Any) -> None: ...
    def check_out(self, api: str, out: Any) -> None: ...

def check_inputs(
    api: str,
    q: Any,
    k: Any,
    v: Any,
    bias: Any = None,
    alibi_slopes: Any = None,
    bshd: bool = False,
) -> Inputs: ...
def tensor(api: str, name: str, x: Any) -> Tensor: ...
def as_tensor(x: Any) -> Tensor | None: ...
def compile(spec: AttentionSpec, target: str = "host") -> Kernel: ...
def version() -> str: ...
def run_pipeline(mlir: str, pipeline: str) -> str: ...
