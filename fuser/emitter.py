"""What every backend's code generator shares: values, the element walk and the dtype rules.

A kernel computes each store's value at one point of the iteration space. ``Emitter`` is that
walk, written once: from a value back through the chunk/split views to the leaves, each
(value, views) computed once and each leaf loaded once, every computing node through the
backend's rule table. A backend's builder subclasses it with what differs (how a leaf is loaded,
how a value is cast to a dtype, how a computed value is kept, and ``math(dtype)``: its
``ElementMath``, the few element operations the shared rules below are written in).

The dtype rules (``out_dtype``, ``common_dtype``: NumPy 2 promotion with weak Python scalars) and
the rules whose logic does not depend on the target (``pow`` by a constant exponent, ``clip``,
the comparisons) live here too, so the CPU's LLVM IR and the CUDA C follow one definition.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any, Protocol

from fuser.analysis import VIEW_OPS, KernelSpec, View, leaf_for, seen_by, view_of
from ir.core import CONSTANT, Node, Value
from ir.types import TensorType


# -- values during code generation ----------------------------------------------------------------
@dataclass(slots=True)
class Val:
    """A value during code generation: backend code or a Python constant, and its dtype."""

    dtype: str
    """a stored dtype (``float32``, ``float64``, ``float16``, ``bool``) or ``weak`` (a Python
    number: adopts the other side's dtype, as in NumPy 2)."""
    expr: Any = None
    """the backend's code for it (an LLVM value, a C expression); None for a constant."""
    const: Any = None
    """the Python value of a constant (a number, a dtype name, None)."""

    @property
    def is_none(self) -> bool:
        """Is this the constant None (``clip``'s open side)?"""
        return self.expr is None and self.const is None


Rule = Callable[[Any, Node, list[Val]], Val]
"""``rule(builder, node, args)``: one element of ``node``'s output from its operands' values."""


class ElementMath(Protocol):
    """The element operations the shared rules are written in, at one dtype's compute type."""

    def c(self, v: float) -> Any:
        """The constant ``v``."""

    def mul(self, a: Any, b: Any) -> Any: ...

    def div(self, a: Any, b: Any) -> Any: ...

    def sqrt(self, x: Any) -> Any: ...

    def maximum(self, a: Any, b: Any) -> Any:
        """NumPy's ``maximum``: a nan on either side is the result; ``b`` where ``a == b``."""

    def minimum(self, a: Any, b: Any) -> Any:
        """NumPy's ``minimum``: a nan on either side is the result; ``b`` where ``a == b``."""

    def clip_low(self, x: Any, lo: Any) -> Any:
        """NumPy's ``clip`` at a lower bound: ``x`` where ``x == lo``, a nan on either side."""

    def clip_high(self, x: Any, hi: Any) -> Any:
        """NumPy's ``clip`` at an upper bound: ``x`` where ``x == hi``, a nan on either side."""

    def compare(self, op: str, a: Any, b: Any) -> Any:
        """``a op b`` as a bool (``op`` from ``COMPARISONS``; ``nan != x`` is true)."""


# -- the walk -------------------------------------------------------------------------------------
class Emitter:
    """The element walk of one kernel: ``value(v)`` is the code for ``v`` at the current point."""

    def __init__(self, spec: KernelSpec, rules: Mapping[str, Rule]):
        self.spec = spec
        self.rules = rules
        self.memo: dict[tuple[Value, tuple[View, ...]], Val] = {}
        self.loaded: dict[int, Val] = {}
        self.scalars: dict[int, Val] = {}
        """subgraph input index -> the value of a Python-number input."""

    def value(self, v: Value, views: tuple[View, ...] = ()) -> Val:
        """The code for ``v`` seen through ``views`` (outermost view last), made once."""
        key = (v, views)
        got = self.memo.get(key)
        if got is None:
            got = self._compute(v, views)
            self.memo[key] = got
        return got

    def _compute(self, v: Value, views: tuple[View, ...]) -> Val:
        if v.is_param:
            scalar = self.scalars.get(v.index)
            if scalar is not None:
                return scalar
            return self.load(self.spec.leaf_index[leaf_for(v, views)])
        node = v.node
        if node.kind == CONSTANT:
            return Val("weak", const=v.constant)
        if node.kind in VIEW_OPS:
            return self.value(node.inputs[0], (view_of(node, v.index),) + views)
        args = [self.value(u, seen_by(u, views)) for u in node.inputs]
        return self.keep(self.rules[node.kind](self, node, args))

    def load(self, leaf: int) -> Val:
        """Leaf ``leaf``'s element at the current point, loaded once."""
        got = self.loaded.get(leaf)
        if got is None:
            got = self.loaded[leaf] = self.load_leaf(leaf)
        return got

    # -- what a backend provides ----------------------------------------------------------------
    def load_leaf(self, leaf: int) -> Val:
        """The code loading leaf ``leaf``'s element (called once per leaf)."""
        raise NotImplementedError

    def keep(self, val: Val) -> Val:
        """A rule's result as the walk keeps it (the CUDA builder stores it in a local)."""
        return val

    def cast(self, val: Val, dtype: str) -> Any:
        """``val`` as code of ``dtype``'s compute type."""
        raise NotImplementedError

    def math(self, dtype: str) -> ElementMath:
        """The element operations at ``dtype``'s compute type (a float dtype)."""
        raise NotImplementedError


# -- dtype rules ----------------------------------------------------------------------------------
FLOATS = ("float64", "float32", "float16")
"""The float dtypes, widest first (the order promotion picks in)."""


def out_dtype(node: Node) -> str:
    """The dtype of ``node``'s (single) tensor result."""
    t = node.outputs[0].type
    assert isinstance(t, TensorType) and t.dtype is not None
    return t.dtype


def common_dtype(args: list[Val]) -> str:
    """NumPy 2 promotion of the operands (weak scalars adopt the tensors' dtype)."""
    dtypes = {a.dtype for a in args} - {"weak"}
    for d in FLOATS:
        if d in dtypes:
            return d
    return "bool" if dtypes else "float64"


def compare_dtype(args: list[Val]) -> str:
    """The dtype two operands are compared in: their common dtype, bools as float32 0.0/1.0."""
    d = common_dtype(args)
    return "float32" if d == "bool" else d


# -- rules written once ---------------------------------------------------------------------------
def unary(emit: Callable[[Any, Any, str], Any]) -> Rule:
    """A rule from ``emit(builder, x, dtype)``, ``x`` the operand cast to the output's dtype."""
    def apply(k: Any, node: Node, args: list[Val]) -> Val:
        d = out_dtype(node)
        return Val(d, emit(k, k.cast(args[0], d), d))
    return apply


def binary(emit: Callable[[Any, Any, Any, str], Any]) -> Rule:
    """A rule from ``emit(builder, a, b, dtype)``, operands cast to the output's dtype."""
    def apply(k: Any, node: Node, args: list[Val]) -> Val:
        d = out_dtype(node)
        a, b = (k.cast(x, d) for x in args[:2])
        return Val(d, emit(k, a, b, d))
    return apply


COMPARISONS: dict[str, str] = {"tensor::eq": "==", "tensor::ne": "!=", "tensor::lt": "<",
                               "tensor::le": "<=", "tensor::gt": ">", "tensor::ge": ">="}
"""Comparison kinds and their operators."""


def compare(k: Emitter, node: Node, args: list[Val]) -> Val:
    """A comparison: both operands in their common dtype, a bool result."""
    d = compare_dtype(args[:2])
    a, b = (k.cast(x, d) for x in args[:2])
    return Val("bool", k.math(d).compare(COMPARISONS[node.kind], a, b))


def clip(k: Emitter, node: Node, args: list[Val]) -> Val:
    """``clip(x, lo, hi)``: bounded below by ``lo`` then above by ``hi``; a None side is open.

    Where ``x`` equals a bound (-0.0 and 0.0), numpy keeps ``x`` when both bounds are numbers
    or 0-d, and takes the bound (``minimum``/``maximum``) when one side is None or an array."""
    d = out_dtype(node)
    m = k.math(d)
    x = k.cast(args[0], d)
    lo, hi = args[1], args[2]
    keep = not lo.is_none and not hi.is_none and not any(
        isinstance(u.type, TensorType) and u.type.rank != 0 for u in node.inputs[1:3])
    if not lo.is_none:
        lo = k.cast(lo, d)
        x = m.clip_low(x, lo) if keep else m.maximum(x, lo)
    if not hi.is_none:
        hi = k.cast(hi, d)
        x = m.clip_high(x, hi) if keep else m.minimum(x, hi)
    return Val(d, x)


POW_RULES: dict[float, Callable[[ElementMath, Any], Any]] = {
    0: lambda m, x: m.c(1.0),
    1: lambda m, x: x,
    2: lambda m, x: m.mul(x, x),
    3: lambda m, x: m.mul(m.mul(x, x), x),
    -1: lambda m, x: m.div(m.c(1.0), x),
    -2: lambda m, x: m.div(m.c(1.0), m.mul(x, x)),
    # numpy's power takes its sqrt fast path for an exponent of 0.5: (-inf) ** 0.5 is nan there
    0.5: lambda m, x: m.sqrt(x),
}
"""``x ** c`` for the constant exponents computed without exp/log."""


def constant_exponent(node: Node) -> bool:
    """Is ``pow``'s exponent a constant number (not a bool)?"""
    b = node.inputs[1]
    return (b.is_constant and isinstance(b.constant, (int, float))
            and not isinstance(b.constant, bool))


def table_exponent(node: Node) -> bool:
    """Is ``pow``'s exponent a constant of ``POW_RULES``?"""
    b = node.inputs[1]
    return b.is_constant and not isinstance(b.constant, bool) and b.constant in POW_RULES


def pow_rule(other: Callable[[Emitter, Any, float, str], Any] | None = None) -> Rule:
    """``x ** c`` for a constant ``c``: ``POW_RULES``, else ``other(builder, x, c, dtype)``
    (a backend with no ``other`` accepts only the table's exponents)."""
    def apply(k: Emitter, node: Node, args: list[Val]) -> Val:
        d = out_dtype(node)
        c = node.inputs[1].constant
        x = k.cast(args[0], d)
        recipe = POW_RULES.get(c)
        if recipe is not None:
            return Val(d, recipe(k.math(d), x))
        assert other is not None, f"no rule for the exponent {c!r}"
        return Val(d, other(k, x, c, d))
    return apply
