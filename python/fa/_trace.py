"""Tracing ``score_mod`` / ``mask_mod`` Python functions into MLIR.

A modifier is called once, with proxy objects (:class:`TracedValue`) for its
arguments. Every operation on a proxy appends one MLIR op (``arith`` /
``math``) to the region body, so the function's result becomes the
``fa.yield`` of the region that ``fa.attention`` inlines into the kernel.

Three kinds of values are traced: scores (``f32``), indices (``index``;
Python ints) and conditions (``i1``; comparisons). Mixing kinds follows
Python: ``i1 -> index -> f32``; an index becomes f32 through
``arith.index_cast`` to i64 and ``arith.sitofp``. Python control flow on a
traced value cannot be recorded and raises ``TypeError``.

Arrays and tensors the modifier closes over (or reads as globals) and
indexes with traced values are *captures*: each distinct array (by
identity) becomes one operand of the op (:class:`Captures`), the regions
read it with ``tensor.extract`` (``%cap<i>``), and the element becomes an
index (integers), a condition (bool) or an f32 value (floats).
"""

from __future__ import annotations

import inspect
import math
import numbers
import struct
import types
from typing import Any, Callable, NoReturn, Union

import numpy as np

__all__ = [
    "Captures",
    "TracedValue",
    "abs",
    "exp",
    "log",
    "maximum",
    "minimum",
    "sqrt",
    "tanh",
    "trace_mask_mod",
    "trace_score_mod",
    "where",
]

F32 = "f32"
INDEX = "index"
I1 = "i1"
_RANK = {I1: 0, INDEX: 1, F32: 2}
_KIND_NAMES = {F32: "a float (f32)", INDEX: "an integer (index)", I1: "a boolean (i1)"}

_BOOL_MESSAGE = "Python `if`/`and`/`or`/`not`/`bool()` on a traced value (use fa.where, & and |)"
_CAPTURE_MESSAGE = (
    "captured tensors are read only by indexing them with traced values "
    "(table[h], doc[q_idx]: numpy arrays and torch tensors the function closes over or "
    "reads as globals)"
)

# Element types of captures: (MLIR element type, how an element is traced).
_CAPTURE_ELEMENTS = {
    "int8": ("i8", "signed"),
    "int16": ("i16", "signed"),
    "int32": ("i32", "signed"),
    "int64": ("i64", "signed"),
    "uint8": ("i8", "unsigned"),
    "uint16": ("i16", "unsigned"),
    "uint32": ("i32", "unsigned"),
    "bool": ("i8", "bool"),
    "float16": ("f16", "float"),
    "bfloat16": ("bf16", "float"),
    "float32": ("f32", "float"),
    "float64": ("f64", "float"),
}


def _element_name(x: Any) -> str:
    name = str(x.dtype)
    return name[len("torch.") :] if name.startswith("torch.") else np.dtype(x.dtype).name


class Captures:
    """The arrays traced modifiers index: the op's ``captures`` operand, in order.

    Shared by the ``score_mod`` and ``mask_mod`` of one call; an array is
    recorded once, by identity.
    """

    def __init__(self) -> None:
        self.arrays: list[Any] = []
        # Where each array was found: (modifier, "closure", cell index) or
        # (modifier, "global", name), modifier "score_mod" or "mask_mod"
        # (how fa.attention on torch tensors fetches them under torch.compile).
        self.sources: list[tuple[str, str, Any] | None] = []
        self._index: dict[int, int] = {}
        # Whether a trace read a captured array's values or attributes (then
        # it holds them as constants and is not reused: see trace_key).
        self.read_values = False

    def add(self, x: Any, source: tuple[str, str, Any] | None = None) -> int:
        key = id(x)
        if key not in self._index:
            self._index[key] = len(self.arrays)
            self.arrays.append(x)
            self.sources.append(source)
        return self._index[key]

    def element(self, i: int) -> tuple[str, str]:
        return _CAPTURE_ELEMENTS[_element_name(self.arrays[i])]

    def type(self, i: int) -> str:
        """The MLIR type of capture ``i``: ``tensor<?x...xT>`` (sizes are per call)."""
        x = self.arrays[i]
        return "tensor<" + "?x" * len(x.shape) + self.element(i)[0] + ">"

    def signature(self) -> tuple[tuple[str, int], ...]:
        """(element type, rank) of each capture: what a kernel is compiled for."""
        return tuple((self.element(i)[0], len(x.shape)) for i, x in enumerate(self.arrays))


Operand = Union["TracedValue", bool, int, float]


class _Tracer:
    """Records the ops of one modifier's region body."""

    def __init__(self, api: str, what: str, captures: Captures | None = None) -> None:
        self.api = api
        self.what = what
        self.captures = captures
        self.lines: list[str] = []
        self._count = 0
        self._constants: dict[tuple[str, str], TracedValue] = {}
        self._casts: dict[tuple[str, str], TracedValue] = {}

    def read_values(self) -> None:
        if self.captures is not None:
            self.captures.read_values = True

    def fail(self, construct: str) -> NoReturn:
        raise TypeError(f"{self.api}: {self.what} cannot be traced: {construct}")

    def emit(self, op: str, type_: str) -> TracedValue:
        name = f"%t{self._count}"
        self._count += 1
        self.lines.append(f"{name} = {op}")
        return TracedValue(self, name, type_)

    def argument(self, name: str, type_: str) -> TracedValue:
        return TracedValue(self, name, type_)

    # Constants (one op per distinct literal).
    def constant(self, x: Any) -> TracedValue:
        if isinstance(x, (bool, np.bool_)):
            literal, type_ = ("true" if x else "false"), I1
            text = f"arith.constant {literal}"
        elif isinstance(x, numbers.Integral):
            n = int(x)
            if not -(2**63) <= n < 2**63:
                self.fail(f"integer constant {n} does not fit in 64 bits")
            literal, type_ = str(n), INDEX
            text = f"arith.constant {literal} : index"
        elif isinstance(x, numbers.Real):
            literal, type_ = _f32_literal(float(x)), F32
            text = f"arith.constant {literal} : f32"
        else:
            raise AssertionError(f"not a constant: {x!r}")
        key = (type_, literal)
        if key not in self._constants:
            self._constants[key] = self.emit(text, type_)
        return self._constants[key]

    def extract(
        self, array: Any, indices: tuple[Any, ...], source: tuple[str, str, Any] | None = None
    ) -> TracedValue:
        """``array[indices]`` (all of its dims) as a traced value (``source``: see Captures)."""
        if self.captures is None:
            self.fail("a captured array (captures are not available here)")
        name = _element_name(array)
        if name not in _CAPTURE_ELEMENTS:
            self.fail(
                f"a captured array of dtype {name} (int8/16/32/64, uint8/16/32, bool, "
                "float16, bfloat16, float32 or float64 are supported)"
            )
        if len(indices) != len(array.shape):
            self.fail(
                f"indexing a captured array of shape {tuple(array.shape)} with "
                f"{len(indices)} indices (give one per dim)"
            )
        names = []
        for i in indices:
            kind = i.type if isinstance(i, TracedValue) else self.constant_kind(i)
            if kind == F32:
                self.fail("a float used as an index into a captured array")
            names.append(self.convert(self.lift(i), INDEX).name)
        c = self.captures.add(array, source)
        elem, how = self.captures.element(c)
        type_ = self.captures.type(c)
        value = self.emit(f"tensor.extract %cap{c}[{', '.join(names)}] : {type_}", elem)
        if how == "signed":
            return self.emit(f"arith.index_cast {value.name} : {elem} to index", INDEX)
        if how == "unsigned":
            return self.emit(f"arith.index_castui {value.name} : {elem} to index", INDEX)
        if how == "bool":
            zero = self.emit(f"arith.constant 0 : {elem}", elem)
            return self.emit(f"arith.cmpi ne, {value.name}, {zero.name} : {elem}", I1)
        if elem == "f32":
            return value
        op = "arith.truncf" if elem == "f64" else "arith.extf"
        return self.emit(f"{op} {value.name} : {elem} to f32", F32)

    def lift(self, x: Any) -> TracedValue:
        """A traced value for ``x`` (a traced value or a Python number)."""
        if isinstance(x, TracedValue):
            if x._tracer is not self:
                self.fail("a value traced in another function (values cannot be kept across calls)")
            return x
        if isinstance(x, np.ndarray) and x.ndim == 0:
            x = x.item()
        if isinstance(x, (bool, np.bool_, numbers.Real)):
            return self.constant(x)
        if _is_captured_array(x):
            shape = tuple(getattr(x, "shape", ()))
            self.fail(f"{_CAPTURE_MESSAGE} (got a captured array of shape {shape})")
        self.fail(f"a value of type {type(x).__name__} (expected a traced value or a number)")

    def lift_all(self, *xs: Any, at_least: str = I1) -> list[TracedValue]:
        """``xs`` as traced values of their common kind (at least ``at_least``).

        Python numbers become constants of that kind directly (``2`` next to
        a score is ``2.0 : f32``, not a converted index).
        """
        kinds = [at_least]
        for x in xs:
            kinds.append(x.type if isinstance(x, TracedValue) else self.constant_kind(x))
        to = max(kinds, key=_RANK.__getitem__)
        values = []
        for x in xs:
            if not isinstance(x, TracedValue) and self.constant_kind(x) != to:
                x = self._cast_constant(x, to)
            values.append(self.convert(self.lift(x), to))
        return values

    def constant_kind(self, x: Any) -> str:
        if isinstance(x, np.ndarray) and x.ndim == 0:
            x = x.item()
        if isinstance(x, (bool, np.bool_)):
            return I1
        if isinstance(x, numbers.Integral):
            return INDEX
        if isinstance(x, numbers.Real):
            return F32
        self.lift(x)  # fails with the right message
        raise AssertionError

    @staticmethod
    def _cast_constant(x: Any, to: str) -> Any:
        if isinstance(x, np.ndarray):
            x = x.item()
        return float(x) if to == F32 else int(x)

    def convert(self, x: TracedValue, to: str) -> TracedValue:
        """``x`` converted up to ``to`` (i1 -> index -> f32)."""
        if x.type == to:
            return x
        key = (x.name, to)
        if key in self._casts:
            return self._casts[key]
        if x.type == I1 and to == INDEX:
            result = self.emit(f"arith.index_castui {x.name} : i1 to index", INDEX)
        elif x.type == I1 and to == F32:
            result = self.emit(f"arith.uitofp {x.name} : i1 to f32", F32)
        elif x.type == INDEX and to == F32:
            wide = self.emit(f"arith.index_cast {x.name} : index to i64", "i64")
            result = self.emit(f"arith.sitofp {wide.name} : i64 to f32", F32)
        else:
            raise AssertionError(f"cannot convert {x.type} to {to}")
        self._casts[key] = result
        return result

    # Ops.
    def binary(self, op: str, a: TracedValue, b: TracedValue) -> TracedValue:
        assert a.type == b.type
        return self.emit(f"{op} {a.name}, {b.name} : {a.type}", a.type)

    def unary(self, op: str, a: TracedValue) -> TracedValue:
        return self.emit(f"{op} {a.name} : {a.type}", a.type)

    def compare(self, predicate: str, a: TracedValue, b: TracedValue) -> TracedValue:
        op = "arith.cmpf" if a.type == F32 else "arith.cmpi"
        return self.emit(f"{op} {predicate}, {a.name}, {b.name} : {a.type}", I1)

    def select(self, cond: TracedValue, a: TracedValue, b: TracedValue) -> TracedValue:
        return self.emit(f"arith.select {cond.name}, {a.name}, {b.name} : {a.type}", a.type)


def _f32_literal(x: float) -> str:
    """``x`` rounded to f32, as an MLIR float literal."""
    if math.isnan(x):
        return "0x7FC00000"
    try:
        (f,) = struct.unpack("<f", struct.pack("<f", x))
    except OverflowError:
        f = math.inf if x > 0 else -math.inf
    if math.isinf(f):
        return "0x7F800000" if f > 0 else "0xFF800000"
    return f"{f:.9e}"


def _is_captured_array(x: Any) -> bool:
    """Whether ``x`` is an array or tensor (not a numpy scalar or 0-d array)."""
    if isinstance(x, np.ndarray):
        return x.ndim > 0
    if isinstance(x, np.generic):
        return False
    return callable(getattr(x, "data_ptr", None)) or hasattr(x, "__array_interface__")


class _CapturedArray:
    """Stands for an array a modifier closes over while it is traced.

    Indexing it with traced values (``table[h]``, ``doc[q_idx]``,
    ``tab[h, kv_idx - q_idx]``, ``tab[h][i]``) records a capture; indexing
    with Python ints only reads the array (a constant). Attributes (``shape``,
    ``dtype``, ...) and ``len`` are the array's.
    """

    __slots__ = ("_array", "_tracer", "_prefix", "_source")

    def __init__(
        self,
        array: Any,
        tracer: _Tracer,
        prefix: tuple[Any, ...] = (),
        source: tuple[str, str, Any] | None = None,
    ) -> None:
        self._array = array
        self._tracer = tracer
        self._prefix = prefix
        self._source = source

    def __getitem__(self, key: Any) -> Any:
        keys = self._prefix + (key if isinstance(key, tuple) else (key,))
        if any(isinstance(k, (slice, type(None), type(Ellipsis))) for k in keys):
            self._tracer.fail("slicing a captured array (index it with one value per dim)")
        if not any(isinstance(k, TracedValue) for k in keys):
            self._tracer.read_values()
            return self._array[keys]
        if len(keys) < len(self._array.shape):
            return _CapturedArray(self._array, self._tracer, keys, self._source)
        return self._tracer.extract(self._array, keys, self._source)

    def __len__(self) -> int:
        return len(self._array)

    def __getattr__(self, name: str) -> Any:
        if name not in ("shape", "dtype", "ndim"):
            self._tracer.read_values()
        return getattr(self._array, name)

    def _fail(self, *args: Any, **kwargs: Any) -> NoReturn:
        shape = tuple(self._array.shape)
        self._tracer.fail(f"{_CAPTURE_MESSAGE} (got a captured array of shape {shape})")

    __add__ = __radd__ = __sub__ = __rsub__ = __mul__ = __rmul__ = _fail
    __truediv__ = __rtruediv__ = __floordiv__ = __rfloordiv__ = __mod__ = __rmod__ = _fail
    __pow__ = __rpow__ = __neg__ = __abs__ = __lt__ = __le__ = __gt__ = __ge__ = _fail
    __eq__ = __ne__ = __and__ = __or__ = __xor__ = __invert__ = __bool__ = _fail  # type: ignore[assignment]
    __array__ = __iter__ = _fail
    __hash__ = None  # type: ignore[assignment]


def _with_captures(fn: Any, tracer: _Tracer) -> Any:
    """``fn`` with the arrays it closes over or reads as globals as :class:`_CapturedArray`."""
    if not isinstance(fn, types.FunctionType):
        return fn
    code = fn.__code__
    closure = fn.__closure__
    new_closure = closure
    changed = False
    if closure:
        cells = []
        for index, cell in enumerate(closure):
            try:
                value = cell.cell_contents
            except ValueError:  # an empty cell
                cells.append(cell)
                continue
            if _is_captured_array(value):
                source = (tracer.what, "closure", index)
                cell = types.CellType(_CapturedArray(value, tracer, source=source))
                changed = True
            cells.append(cell)
        new_closure = tuple(cells)
    names = [n for n in code.co_names if _is_captured_array(fn.__globals__.get(n))]
    if not changed and not names:
        return fn
    globals_ = fn.__globals__
    if names:
        globals_ = dict(globals_)
        for n in names:
            globals_[n] = _CapturedArray(globals_[n], tracer, source=(tracer.what, "global", n))
    clone = types.FunctionType(code, globals_, fn.__name__, fn.__defaults__, new_closure)
    clone.__kwdefaults__ = fn.__kwdefaults__
    return clone


# Arithmetic, with Python's semantics on each kind.


def _arith(name: str, x: Operand, y: Operand, tracer: _Tracer) -> TracedValue:
    # int / int is a float in Python.
    a, b = tracer.lift_all(x, y, at_least=F32 if name == "truediv" else INDEX)
    if a.type == F32:
        if name in ("add", "sub", "mul"):
            return tracer.binary(f"arith.{name}f", a, b)
        if name == "truediv":
            return tracer.binary("arith.divf", a, b)
        if name == "floordiv":
            return tracer.unary("math.floor", tracer.binary("arith.divf", a, b))
        if name == "mod":  # fmod, moved to the sign of the divisor
            r = tracer.binary("arith.remf", a, b)
            zero = tracer.constant(0.0)
            r_neg = tracer.compare("olt", r, zero)
            b_neg = tracer.compare("olt", b, zero)
            fix = tracer.binary(
                "arith.andi",
                tracer.compare("une", r, zero),
                tracer.binary("arith.xori", r_neg, b_neg),
            )
            return tracer.select(fix, tracer.binary("arith.addf", r, b), r)
        if name == "pow":
            return tracer.binary("math.powf", a, b)
    else:
        if name in ("add", "sub", "mul"):
            return tracer.binary(f"arith.{name}i", a, b)
        if name in ("floordiv", "mod"):
            if isinstance(y, numbers.Integral) and int(y) == 0:
                raise ZeroDivisionError(f"{tracer.api}: {tracer.what}: integer division by zero")
            return _floordiv_mod(name, a, b, tracer)
        if name == "pow":
            if not isinstance(y, numbers.Integral) or isinstance(y, bool) or int(y) < 0:
                tracer.fail(
                    "`**` on an integer with a traced or negative exponent (convert to float first)"
                )
            result = tracer.constant(1)
            for _ in range(int(y)):
                result = tracer.binary("arith.muli", result, a)
            return result
    raise AssertionError(name)


def _floordiv_mod(name: str, a: TracedValue, b: TracedValue, tracer: _Tracer) -> TracedValue:
    """Python's floored ``//`` and ``%`` from truncating divsi / remsi."""
    zero = tracer.constant(0)
    r = tracer.binary("arith.remsi", a, b)
    r_neg = tracer.compare("slt", r, zero)
    b_neg = tracer.compare("slt", b, zero)
    fix = tracer.binary(
        "arith.andi", tracer.compare("ne", r, zero), tracer.binary("arith.xori", r_neg, b_neg)
    )
    if name == "mod":
        return tracer.select(fix, tracer.binary("arith.addi", r, b), r)
    q = tracer.binary("arith.divsi", a, b)
    return tracer.select(fix, tracer.binary("arith.subi", q, tracer.constant(1)), q)


_PREDICATES = {
    "lt": ("olt", "slt"),
    "le": ("ole", "sle"),
    "gt": ("ogt", "sgt"),
    "ge": ("oge", "sge"),
    "eq": ("oeq", "eq"),
    "ne": ("une", "ne"),
}


def _compare(name: str, x: Operand, y: Operand, tracer: _Tracer) -> TracedValue:
    a, b = tracer.lift_all(x, y)
    if a.type == I1 and name in ("eq", "ne"):
        return tracer.compare(name, a, b)
    a, b = tracer.lift_all(a, b, at_least=INDEX)
    float_predicate, int_predicate = _PREDICATES[name]
    return tracer.compare(float_predicate if a.type == F32 else int_predicate, a, b)


def _bitwise(name: str, x: Operand, y: Operand, tracer: _Tracer) -> TracedValue:
    a, b = tracer.lift_all(x, y)
    if a.type == F32:
        symbol = {"andi": "&", "ori": "|", "xori": "^"}[name]
        tracer.fail(f"`{symbol}` on a float value (it is for conditions and integers)")
    return tracer.binary(f"arith.{name}", a, b)


class TracedValue:
    """A value of a ``score_mod`` / ``mask_mod`` being traced.

    It supports arithmetic (``+ - * / // % **``, unary ``-``, ``abs``),
    comparisons (giving conditions), ``& | ^ ~`` on conditions and integers,
    and the functions of the ``fa`` module (``fa.where``, ``fa.exp``, ...).
    """

    __slots__ = ("_tracer", "name", "type")
    __hash__ = None  # type: ignore[assignment]  # == is traced

    def __init__(self, tracer: _Tracer, name: str, type_: str) -> None:
        self._tracer = tracer
        self.name = name
        self.type = type_

    def __repr__(self) -> str:
        return f"<fa traced {self.type} {self.name}>"

    # Arithmetic.
    def __add__(self, other: Operand) -> TracedValue:
        return _arith("add", self, other, self._tracer)

    def __radd__(self, other: Operand) -> TracedValue:
        return _arith("add", other, self, self._tracer)

    def __sub__(self, other: Operand) -> TracedValue:
        return _arith("sub", self, other, self._tracer)

    def __rsub__(self, other: Operand) -> TracedValue:
        return _arith("sub", other, self, self._tracer)

    def __mul__(self, other: Operand) -> TracedValue:
        return _arith("mul", self, other, self._tracer)

    def __rmul__(self, other: Operand) -> TracedValue:
        return _arith("mul", other, self, self._tracer)

    def __truediv__(self, other: Operand) -> TracedValue:
        return _arith("truediv", self, other, self._tracer)

    def __rtruediv__(self, other: Operand) -> TracedValue:
        return _arith("truediv", other, self, self._tracer)

    def __floordiv__(self, other: Operand) -> TracedValue:
        return _arith("floordiv", self, other, self._tracer)

    def __rfloordiv__(self, other: Operand) -> TracedValue:
        return _arith("floordiv", other, self, self._tracer)

    def __mod__(self, other: Operand) -> TracedValue:
        return _arith("mod", self, other, self._tracer)

    def __rmod__(self, other: Operand) -> TracedValue:
        return _arith("mod", other, self, self._tracer)

    def __divmod__(self, other: Operand) -> tuple[TracedValue, TracedValue]:
        return self // other, self % other

    def __rdivmod__(self, other: Operand) -> tuple[TracedValue, TracedValue]:
        return other // self, other % self

    def __pow__(self, other: Operand) -> TracedValue:
        return _arith("pow", self, other, self._tracer)

    def __rpow__(self, other: Operand) -> TracedValue:
        return _arith("pow", other, self, self._tracer)

    def __neg__(self) -> TracedValue:
        tracer = self._tracer
        if self.type == F32:
            return tracer.unary("arith.negf", self)
        return tracer.binary("arith.subi", tracer.constant(0), tracer.convert(self, INDEX))

    def __pos__(self) -> TracedValue:
        return self if self.type != I1 else self._tracer.convert(self, INDEX)

    def __abs__(self) -> TracedValue:
        result: TracedValue = abs(self)
        return result

    # Comparisons.
    def __lt__(self, other: Operand) -> TracedValue:
        return _compare("lt", self, other, self._tracer)

    def __le__(self, other: Operand) -> TracedValue:
        return _compare("le", self, other, self._tracer)

    def __gt__(self, other: Operand) -> TracedValue:
        return _compare("gt", self, other, self._tracer)

    def __ge__(self, other: Operand) -> TracedValue:
        return _compare("ge", self, other, self._tracer)

    def __eq__(self, other: object) -> TracedValue:  # type: ignore[override]
        return _compare("eq", self, other, self._tracer)  # type: ignore[arg-type]

    def __ne__(self, other: object) -> TracedValue:  # type: ignore[override]
        return _compare("ne", self, other, self._tracer)  # type: ignore[arg-type]

    # Logic on conditions (and bitwise ops on integers).
    def __and__(self, other: Operand) -> TracedValue:
        return _bitwise("andi", self, other, self._tracer)

    def __rand__(self, other: Operand) -> TracedValue:
        return _bitwise("andi", other, self, self._tracer)

    def __or__(self, other: Operand) -> TracedValue:
        return _bitwise("ori", self, other, self._tracer)

    def __ror__(self, other: Operand) -> TracedValue:
        return _bitwise("ori", other, self, self._tracer)

    def __xor__(self, other: Operand) -> TracedValue:
        return _bitwise("xori", self, other, self._tracer)

    def __rxor__(self, other: Operand) -> TracedValue:
        return _bitwise("xori", other, self, self._tracer)

    def __invert__(self) -> TracedValue:
        tracer = self._tracer
        if self.type == F32:
            tracer.fail("`~` on a float value (it is for conditions and integers)")
        ones = tracer.constant(True if self.type == I1 else -1)
        return tracer.binary("arith.xori", self, ones)

    # What cannot be traced.
    def __bool__(self) -> bool:
        self._tracer.fail(_BOOL_MESSAGE)

    def __float__(self) -> float:
        self._tracer.fail(
            "float()/int() or a `math` function on a traced value "
            "(use fa.exp, fa.log, fa.tanh, fa.sqrt, fa.abs, fa.minimum, fa.maximum)"
        )

    __int__ = __float__
    __complex__ = __float__

    def __index__(self) -> int:
        self._tracer.fail(
            f"{_CAPTURE_MESSAGE}; a traced value was used as a Python int or to index "
            "something else (a list, a tuple, or an array reached through an attribute)"
        )

    def __iter__(self) -> NoReturn:
        self._tracer.fail("iterating over a traced value")

    def __round__(self, ndigits: int | None = None) -> NoReturn:
        self._tracer.fail("round() on a traced value")

    def __lshift__(self, other: Any) -> NoReturn:
        self._tracer.fail("the operator `<<`")

    __rlshift__ = __rshift__ = __rrshift__ = __lshift__

    def __matmul__(self, other: Any) -> NoReturn:
        self._tracer.fail("the operator `@`")

    __rmatmul__ = __matmul__

    def __array__(self, *args: Any, **kwargs: Any) -> NoReturn:
        # Also what numpy calls when a traced value indexes an array.
        self._tracer.fail(
            f"{_CAPTURE_MESSAGE}; a traced value was converted to an array or indexed an "
            "array reached through an attribute or a container"
        )

    def __array_ufunc__(self, ufunc: Any, method: str, *inputs: Any, **kwargs: Any) -> Any:
        tracer = self._tracer
        for x in inputs:
            if _is_captured_array(x):
                tracer.fail(f"{_CAPTURE_MESSAGE} (got a captured array of shape {tuple(x.shape)})")
        function = _UFUNCS.get(ufunc.__name__)
        if method != "__call__" or kwargs or function is None:
            tracer.fail(f"numpy function `np.{ufunc.__name__}` (use fa.where, fa.exp, fa.log, ...)")
        return function(*inputs)

    @classmethod
    def __torch_function__(
        cls, func: Any, types: Any, args: Any = (), kwargs: Any = None
    ) -> NoReturn:
        # torch calls this when a traced value meets a tensor: indexing a
        # captured tensor (table[h]) or computing with one (table * score).
        values = [*args, *(kwargs or {}).values()]
        flat = [y for x in values for y in (x if isinstance(x, (tuple, list)) else (x,))]
        tracer = next(x._tracer for x in flat if isinstance(x, TracedValue))
        if getattr(func, "__name__", "") == "__getitem__" and len(args) == 2:
            # A tensor reached by another path than a name (self.table[h]).
            return _CapturedArray(args[0], tracer)[args[1]]
        shapes = [tuple(x.shape) for x in flat if _is_captured_array(x)]
        shape = f" of shape {shapes[0]}" if shapes else ""
        tracer.fail(f"{_CAPTURE_MESSAGE} (a traced value met a captured torch tensor{shape})")

    def __array_function__(self, func: Any, types: Any, args: Any, kwargs: Any) -> NoReturn:
        self._tracer.fail(
            f"numpy function `np.{func.__name__}` (use fa.where, fa.exp, fa.log, ...)"
        )


# Functions usable in modifiers. On plain numbers they compute the value.


def _tracer_of(*xs: Any) -> _Tracer | None:
    for x in xs:
        if isinstance(x, TracedValue):
            return x._tracer
    return None


def where(cond: Any, a: Any, b: Any) -> Any:
    """``a`` where ``cond`` holds, else ``b`` (``arith.select``)."""
    tracer = _tracer_of(cond, a, b)
    if tracer is None:
        if isinstance(cond, np.ndarray) or isinstance(a, np.ndarray) or isinstance(b, np.ndarray):
            return np.where(cond, a, b)
        return a if cond else b
    c = tracer.lift(cond)
    if c.type != I1:
        tracer.fail(
            f"fa.where needs a condition (a comparison) first, got {_KIND_NAMES[c.type]} value"
        )
    x, y = tracer.lift_all(a, b)
    return tracer.select(c, x, y)


def _math(name: str, eager: Callable[[Any], Any]) -> Callable[[Any], Any]:
    def function(x: Any) -> Any:
        tracer = _tracer_of(x)
        if tracer is None:
            return eager(x)
        (value,) = tracer.lift_all(x, at_least=F32)
        return tracer.unary(f"math.{name}", value)

    function.__name__ = name
    function.__qualname__ = name
    function.__doc__ = f"``{name}(x)`` in f32 (``math.{name}``); traceable in score_mod."
    return function


exp = _math("exp", np.exp)
log = _math("log", np.log)
tanh = _math("tanh", np.tanh)
sqrt = _math("sqrt", np.sqrt)

_builtin_abs = abs


def abs(x: Any) -> Any:  # noqa: A001 - fa.abs mirrors numpy/torch naming
    """``|x|``: ``math.absf`` on floats, a select on integers."""
    tracer = _tracer_of(x)
    if tracer is None:
        return np.abs(x) if isinstance(x, np.ndarray) else _builtin_abs(x)
    value = tracer.lift(x)
    if value.type == F32:
        return tracer.unary("math.absf", value)
    value = tracer.convert(value, INDEX)
    negative = tracer.compare("slt", value, tracer.constant(0))
    return tracer.select(negative, -value, value)


def _min_max(
    name: str, float_op: str, int_op: str, eager: Callable[[Any, Any], Any]
) -> Callable[[Any, Any], Any]:
    def function(a: Any, b: Any) -> Any:
        tracer = _tracer_of(a, b)
        if tracer is None:
            return eager(a, b)
        x, y = tracer.lift_all(a, b, at_least=INDEX)
        return tracer.binary(float_op if x.type == F32 else int_op, x, y)

    function.__name__ = name
    function.__qualname__ = name
    function.__doc__ = f"Elementwise {name} (NaN-propagating on floats); traceable in score_mod."
    return function


minimum = _min_max("minimum", "arith.minimumf", "arith.minsi", np.minimum)
maximum = _min_max("maximum", "arith.maximumf", "arith.maxsi", np.maximum)

_UFUNCS: dict[str, Callable[..., Any]] = {
    "add": lambda a, b: _arith("add", a, b, _tracer_of(a, b)),  # type: ignore[arg-type]
    "subtract": lambda a, b: _arith("sub", a, b, _tracer_of(a, b)),  # type: ignore[arg-type]
    "multiply": lambda a, b: _arith("mul", a, b, _tracer_of(a, b)),  # type: ignore[arg-type]
    "true_divide": lambda a, b: _arith("truediv", a, b, _tracer_of(a, b)),  # type: ignore[arg-type]
    "floor_divide": lambda a, b: _arith("floordiv", a, b, _tracer_of(a, b)),  # type: ignore[arg-type]
    "remainder": lambda a, b: _arith("mod", a, b, _tracer_of(a, b)),  # type: ignore[arg-type]
    "power": lambda a, b: _arith("pow", a, b, _tracer_of(a, b)),  # type: ignore[arg-type]
    "negative": lambda a: -a,
    "absolute": abs,
    "exp": exp,
    "log": log,
    "tanh": tanh,
    "sqrt": sqrt,
    "minimum": minimum,
    "maximum": maximum,
    "less": lambda a, b: _compare("lt", a, b, _tracer_of(a, b)),  # type: ignore[arg-type]
    "less_equal": lambda a, b: _compare("le", a, b, _tracer_of(a, b)),  # type: ignore[arg-type]
    "greater": lambda a, b: _compare("gt", a, b, _tracer_of(a, b)),  # type: ignore[arg-type]
    "greater_equal": lambda a, b: _compare("ge", a, b, _tracer_of(a, b)),  # type: ignore[arg-type]
    "equal": lambda a, b: _compare("eq", a, b, _tracer_of(a, b)),  # type: ignore[arg-type]
    "not_equal": lambda a, b: _compare("ne", a, b, _tracer_of(a, b)),  # type: ignore[arg-type]
}


# Tracing a whole modifier.

_SCORE_ARGS = ("score", "b", "h", "q_idx", "kv_idx")
_MASK_ARGS = ("b", "h", "q_idx", "kv_idx")


def _check_signature(fn: Any, api: str, what: str, params: tuple[str, ...], returns: str) -> None:
    expected = f"({', '.join(params)}) -> {returns}"
    if not callable(fn):
        raise TypeError(f"{api}: {what} must be a function {expected}, got {type(fn).__name__}")
    try:
        signature = inspect.signature(fn)
    except (TypeError, ValueError):  # builtins without a signature: just call
        return
    try:
        signature.bind(*params)
    except TypeError:
        raise TypeError(
            f"{api}: {what} must take {len(params)} positional arguments {expected}, got a "
            f"function of {signature}"
        ) from None


# Modules whose attributes a reusable trace may read (their functions and
# constants do not change between calls).
_STABLE_MODULES = ("builtins", "fa", "math", "numpy", "torch")


def _stable_module(name: str | None) -> bool:
    return name is not None and name.split(".")[0] in _STABLE_MODULES


def trace_key(fns: tuple[Any, ...]) -> tuple[Any, ...] | None:
    """A key under which the traces of ``fns`` (score_mod, mask_mod; None or
    a string each) are the same, or None where that cannot be told.

    A trace depends on a function's code and on what it reads: its
    defaults, closure cells and globals. Numbers, strings and None count by
    value; functions and modules of ``_STABLE_MODULES`` by identity; captured
    arrays by type, dtype, shape and device, and by which of them are the
    same array (one capture or two), not by identity or value: a new tensor
    of document ids each call reuses the trace (fa.attention reads the
    captures from their sources each call). Anything else (objects whose
    attributes might change, nested functions) gives None, and so does a
    trace that read an array's values (Captures.read_values, checked by the
    caller).
    """
    arrays: dict[int, int] = {}

    def value_key(v: Any) -> Any:
        t = type(v)
        if t in (bool, int, float, str, type(None)):
            return (t, v)
        if isinstance(v, types.ModuleType):
            return ("module", v.__name__) if _stable_module(v.__name__) else None
        if isinstance(v, (types.FunctionType, types.BuiltinFunctionType)) or t is np.ufunc:
            return ("function", id(v)) if _stable_module(getattr(v, "__module__", None)) else None
        if _is_captured_array(v):
            slot = arrays.setdefault(id(v), len(arrays))
            return ("array", t, _element_name(v), tuple(v.shape), str(getattr(v, "device", "")), slot)
        return None

    parts: list[Any] = []
    for fn in fns:
        if fn is None or isinstance(fn, str):
            parts.append(fn)
            continue
        if not isinstance(fn, types.FunctionType) or fn.__kwdefaults__:
            return None
        code = fn.__code__
        if any(isinstance(c, types.CodeType) for c in code.co_consts):
            return None
        values: list[Any] = list(fn.__defaults__ or ())
        for cell in fn.__closure__ or ():
            try:
                values.append(cell.cell_contents)
            except ValueError:  # an empty cell
                values.append(None)
        names = [n for n in code.co_names if n in fn.__globals__]
        values.extend(fn.__globals__[n] for n in names)
        keys = []
        for v in values:
            k = value_key(v)
            if k is None:
                return None
            keys.append(k)
        parts.append((code, tuple(names), tuple(keys)))
    return tuple(parts)


def read_capture(fns: tuple[Any, Any], source: tuple[str, str, Any]) -> Any:
    """The array at ``source`` (Captures.sources) of ``fns`` (score_mod,
    mask_mod) now."""
    what, kind, key = source
    fn = fns[0] if what == "score_mod" else fns[1]
    return fn.__closure__[key].cell_contents if kind == "closure" else fn.__globals__[key]


def _trace(
    fn: Any,
    api: str,
    what: str,
    params: tuple[str, ...],
    types_: tuple[str, ...],
    returns: str,
    captures: Captures | None,
) -> tuple[_Tracer, Any]:
    _check_signature(fn, api, what, params, returns)
    tracer = _Tracer(api, what, captures)
    args = [tracer.argument(f"%{p}", t) for p, t in zip(params, types_)]
    if captures is not None:
        fn = _with_captures(fn, tracer)
    return tracer, fn(*args)


def _body(tracer: _Tracer, result: TracedValue) -> str:
    tracer.lines.append(f"fa.yield {result.name} : {result.type}")
    return "\n".join("    " + line for line in tracer.lines)


def trace_score_mod(
    fn: Callable[..., Any] | str, api: str = "fa.attention", captures: Captures | None = None
) -> str:
    """The ``score_mod`` region body (MLIR text) of ``fn(score, b, h, q_idx, kv_idx)``.

    A string is taken as the region body itself (MLIR, ending with
    ``fa.yield %x : f32``). Arrays ``fn`` indexes are recorded in
    ``captures`` (none without it).
    """
    if isinstance(fn, str):
        return fn
    tracer, result = _trace(
        fn, api, "score_mod", _SCORE_ARGS, (F32, INDEX, INDEX, INDEX, INDEX), "score", captures
    )
    if result is None:
        tracer.fail("the function returned None (it must return the new score)")
    kind = result.type if isinstance(result, TracedValue) else tracer.constant_kind(result)
    if kind == I1:
        tracer.fail(
            "the function returned a condition (i1); score_mod returns a score (use fa.where)"
        )
    (value,) = tracer.lift_all(result, at_least=F32)
    return _body(tracer, value)


def trace_mask_mod(
    fn: Callable[..., Any] | str, api: str = "fa.attention", captures: Captures | None = None
) -> str:
    """The ``mask_mod`` region body (MLIR text) of ``fn(b, h, q_idx, kv_idx)``.

    A string is taken as the region body itself (MLIR, ending with
    ``fa.yield %keep : i1``). Arrays ``fn`` indexes are recorded in
    ``captures`` (none without it).
    """
    if isinstance(fn, str):
        return fn
    tracer, result = _trace(
        fn, api, "mask_mod", _MASK_ARGS, (INDEX, INDEX, INDEX, INDEX), "keep", captures
    )
    if result is None:
        tracer.fail("the function returned None (it must return whether to keep the score)")
    value = tracer.lift(result)
    if value.type != I1:
        tracer.fail(
            f"the function returned {_KIND_NAMES[value.type]} value; "
            "mask_mod returns a condition (a comparison, & |, or True/False)"
        )
    return _body(tracer, value)
