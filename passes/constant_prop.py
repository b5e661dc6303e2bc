"""Constant propagation and folding.

A PURE op whose inputs are all constants is evaluated at compile time and replaced by a
``prim::Constant``: prim ops and scalar arithmetic through the ``FOLDERS`` table, tensor ops
through an evaluator the runtime registers with ``set_evaluator`` (without one, tensor ops stay).
Facts known from types fold too (``tensor::ndim`` / ``tensor::size`` of a tensor of known
shape). ``prim::If`` with a constant condition is replaced by the taken block; a ``prim::Loop``
that never runs (constant trip count <= 0 or constant false initial condition) is replaced by its
initial carried values.
"""

from __future__ import annotations

import math
import operator
import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any

import numpy as np

from ir.constants import constant_type
from ir.core import CONSTANT, Block, Graph, Node, Value
from ir.ops.elementwise import IN_PLACE_ATTR
from ir.registry import NOT_CONSTANT, VIEW, WRITES, const, constant_of, lookup
from ir.types import BOOL, FLOAT, INT, TensorType, Type, is_subtype

NAME = "constant-prop"
SETTLES = True
"""a second run on the graph this pass leaves changes nothing (``run_pipeline``)."""

FOLD_LIMIT = 4096
"""Largest tensor (in elements) a fold may produce. A folded tensor lives in the graph as a
constant: in memory for every specialization, in every printed graph and saved artifact. Past a
few thousand elements that costs more than computing it once per call."""

_limit = threading.local()


@contextmanager
def fold_limit(limit: int | None) -> Iterator[None]:
    """Within the ``with`` block (in this thread), folds may produce tensors of up to ``limit``
    elements; None lifts the limit. ``script.freeze`` folds weights whatever their size: a frozen
    model's constants are computed once, at freeze time."""
    saved = getattr(_limit, "value", FOLD_LIMIT)
    _limit.value = limit
    try:
        yield
    finally:
        _limit.value = saved

Evaluator = Callable[[str, list[Any]], Any]
_evaluator: Evaluator | None = None


def set_evaluator(fn: Evaluator | None) -> None:
    """Register ``fn(kind, args) -> result`` used to fold tensor ops (None unregisters)."""
    global _evaluator
    _evaluator = fn


def get_evaluator() -> Evaluator | None:
    return _evaluator


# -- the fold rules: fn(node, args) -> tuple of output values, or NOT_CONSTANT -------------------
Folder = Callable[[Node, list[Any]], Any]


def _is_scalar(x: Any) -> bool:
    return isinstance(x, (bool, int, float)) and not isinstance(x, np.generic)


def _extreme(fn: Callable[[Any, Any], Any]) -> Folder:
    """Python's ``min``/``max`` of two numbers, which returns one of them as it is: one of
    another Python type than the result's type (an int where it says float, a bool where it
    says int) is left to run time."""
    def fold(node: Node, args: list[Any]) -> Any:
        if not all(_is_scalar(a) for a in args) or type(args[0]) is not type(args[1]):
            return NOT_CONSTANT  # of two types, which one comes back is decided by the values
        result = fn(*args)
        declared = node.outputs[0].type
        if {INT: int, FLOAT: float, BOOL: bool}.get(declared) is not type(result):
            return NOT_CONSTANT  # min(1, 2.5) is the int 1 where the type says float
        return _as_declared(result, declared)
    return fold


def _scalar_fold(fn: Callable[..., Any]) -> Folder:
    """Python scalar arithmetic, as generated code runs it; tensors go to the evaluator."""

    def fold(node: Node, args: list[Any]) -> Any:
        if not all(_is_scalar(a) for a in args):
            return _evaluate(node, args)
        try:
            result = fn(*args)
        except (ArithmeticError, ValueError):
            return NOT_CONSTANT  # division by zero and friends fail at run time, as written
        return _as_declared(result, node.outputs[0].type)

    return fold


def _number_cast(fn: Callable[[Any], Any]) -> Folder:
    """``bool(x)``, ``int(x)``, ``float(x)`` of a Python number (``if self.flag:`` with an int
    attribute compiled in); anything else is left to run."""

    def fold(node: Node, args: list[Any]) -> Any:
        if len(args) != 1 or not _is_scalar(args[0]):
            return NOT_CONSTANT
        try:
            return (fn(args[0]),)
        except (ArithmeticError, ValueError):
            return NOT_CONSTANT  # int(inf), int(nan): raised at run time, as written

    return fold


def _math(node: Node, args: list[Any]) -> Any:
    """A math-module function of constant numbers; left to run time where it raises (its
    ValueError, OverflowError or ZeroDivisionError is the program's, when the code runs)."""
    name, *xs = args
    if not isinstance(name, str) or not all(_is_scalar(a) for a in xs):
        return NOT_CONSTANT
    try:
        result = getattr(math, name)(*xs)
    except (ValueError, ArithmeticError, TypeError):
        return NOT_CONSTANT
    return _as_declared(result, node.outputs[0].type)


def _as_declared(result: Any, declared: Type) -> Any:
    # min(1, 2.0) is the int 1 in Python but the float 1.0 in numpy and in the op's type rule
    if declared == FLOAT and isinstance(result, (int, float)):
        return (float(result),)
    if declared == INT and isinstance(result, int):
        return (int(result),) if INT64_MIN <= result <= INT64_MAX else NOT_CONSTANT
    if declared == BOOL and isinstance(result, bool):
        return (result,)
    return NOT_CONSTANT


INT64_MIN, INT64_MAX = -(2**63), 2**63 - 1
"""Folded ints stay in int64 range: past it numpy and Python disagree, so leave it to run time."""


def _numpy_scalar(ufunc: Callable[..., Any]) -> Callable[..., Any]:
    """An op the generated code runs as a numpy ufunc on Python scalars (``np.minimum(a, b)``),
    folded by that ufunc: nan propagates and a tie between 0.0 and -0.0 gives numpy's zero
    (Python's min/max differ on both). Ints past int64 raise OverflowError (left to run time)."""
    return lambda *args: ufunc(*args).item()


def _pow(a: Any, b: Any) -> Any:
    if isinstance(a, int) and isinstance(b, int) and b < 0:
        raise ValueError("integers to negative integer powers are not allowed")  # as numpy
    return a ** b


def _floordiv(a: Any, b: Any) -> Any:
    return a // b


def _tuple_construct(node: Node, args: list[Any]) -> Any:
    return (tuple(args),)


def _tuple_index(node: Node, args: list[Any]) -> Any:
    return (args[0][args[1]],)


def _tuple_unpack(node: Node, args: list[Any]) -> Any:
    return tuple(args[0])


def _tuple_slice(node: Node, args: list[Any]) -> Any:
    start, stop, step = (list(args[1:]) + [None] * 3)[:3]
    return (args[0][start:stop:step],)


def _len(node: Node, args: list[Any]) -> Any:
    # lists are mutable and arrays may be resized by nothing here but keep it simple: tuples/strs
    if isinstance(args[0], (tuple, str)):
        return (len(args[0]),)
    return NOT_CONSTANT


def _str_op(node: Node, args: list[Any]) -> Any:
    name, text, *rest = args
    if type(text) is not str:
        return NOT_CONSTANT
    try:
        result = getattr(text, name)(*rest)
    except (IndexError, ValueError, TypeError, AttributeError):  # raised when the code runs
        return NOT_CONSTANT
    return NOT_CONSTANT if isinstance(result, list) else (result,)  # a list is not a constant


def _str_slice(node: Node, args: list[Any]) -> Any:
    return (args[0][args[1]:args[2]:args[3]],) if type(args[0]) is str else NOT_CONSTANT


FOLDERS: dict[str, Folder] = {
    "prim::TupleConstruct": _tuple_construct,
    "prim::TupleIndex": _tuple_index,
    "prim::TupleUnpack": _tuple_unpack,
    "prim::TupleSlice": _tuple_slice,
    "prim::len": _len,
    "prim::str_eq": lambda node, args: (args[0] == args[1],) if all(
        type(a) is str for a in args) else NOT_CONSTANT,
    "prim::str_op": _str_op,
    "prim::str_slice": _str_slice,
    "prim::Bool": _number_cast(bool),
    "prim::Int": _number_cast(int),
    "prim::Float": _number_cast(float),
    "tensor::add": _scalar_fold(operator.add),
    "tensor::sub": _scalar_fold(operator.sub),
    "tensor::mul": _scalar_fold(operator.mul),
    "tensor::div": _scalar_fold(operator.truediv),
    "tensor::floordiv": _scalar_fold(_floordiv),
    "tensor::mod": _scalar_fold(operator.mod),
    "tensor::pow": _scalar_fold(_pow),
    "prim::min": _extreme(min),  # Python's min and max (a zip's trip count)
    "prim::max": _extreme(max),
    "prim::math": _math,
    "tensor::minimum": _scalar_fold(_numpy_scalar(np.minimum)),
    "tensor::maximum": _scalar_fold(_numpy_scalar(np.maximum)),
    "tensor::eq": _scalar_fold(operator.eq),
    "tensor::ne": _scalar_fold(operator.ne),
    "tensor::lt": _scalar_fold(operator.lt),
    "tensor::le": _scalar_fold(operator.le),
    "tensor::gt": _scalar_fold(operator.gt),
    "tensor::ge": _scalar_fold(operator.ge),
    "tensor::logical_and": _scalar_fold(lambda a, b: bool(a) and bool(b)),
    "tensor::logical_or": _scalar_fold(lambda a, b: bool(a) or bool(b)),
    "tensor::logical_not": _scalar_fold(lambda a: not a),
    "tensor::neg": _scalar_fold(operator.neg),
    "tensor::abs": _scalar_fold(_numpy_scalar(np.abs)),
}
"""kind -> fold rule taking the constant input values; NOT_CONSTANT when it cannot fold."""


def _known_shape(value: Value) -> tuple[int, ...] | None:
    t = value.type
    if not isinstance(t, TensorType) or t.shape is None or None in t.shape:
        return None
    return t.shape  # type: ignore[return-value]


def _fold_ndim(node: Node) -> Any:
    t = node.inputs[0].type
    if not isinstance(t, TensorType) or t.shape is None:
        return NOT_CONSTANT
    return (len(t.shape),)


def _fold_size(node: Node) -> Any:
    t = node.inputs[0].type
    if not isinstance(t, TensorType) or t.shape is None:
        return NOT_CONSTANT
    dim = const(node, 1, None)
    if dim is None:
        shape = _known_shape(node.inputs[0])
        return NOT_CONSTANT if shape is None else (tuple(shape),)
    if dim is NOT_CONSTANT or not -len(t.shape) <= dim < len(t.shape) or t.shape[dim] is None:
        return NOT_CONSTANT
    return (t.shape[dim],)


def _fold_numel(node: Node) -> Any:
    shape = _known_shape(node.inputs[0])
    return NOT_CONSTANT if shape is None else (math.prod(shape),)


def _fold_is_none(node: Node) -> Any:
    from passes.shape_prop import is_none_by_type
    known = is_none_by_type(node.inputs[0].type)
    return NOT_CONSTANT if known is None else (known,)


def _fold_key_present(node: Node) -> Any:
    """``k in d`` of a dict argument whose keys the call fixed (``item_types.KEY_PRESENT``)."""
    known = node.attrs.get("present")
    return NOT_CONSTANT if known is None else (bool(known),)


TYPE_FOLDERS: dict[str, Callable[[Node], Any]] = {
    "prim::DictContains": _fold_key_present,
    "tensor::ndim": _fold_ndim,
    "tensor::size": _fold_size,
    "tensor::numel": _fold_numel,
    "prim::IsNone": _fold_is_none,
}
"""kind -> fold rule reading input types rather than input values."""


def _evaluate(node: Node, args: list[Any]) -> Any:
    if _evaluator is None or not node.kind.startswith("tensor::"):
        return NOT_CONSTANT
    try:
        result = _evaluator(node.kind, args)
    except Exception:  # noqa: BLE001 - a failing op fails at run time, where the user sees it
        return NOT_CONSTANT
    # a folded array is computed once and read many times: store it contiguous (a folded
    # transpose would otherwise stay a strided view that every matmul reading it pays for)
    result = _contiguous(result) if len(node.outputs) == 1 else tuple(map(_contiguous, result))
    return (result,) if len(node.outputs) == 1 else result


def _contiguous(value: Any) -> Any:
    if not isinstance(value, np.ndarray) or value.ndim == 0 or value.flags.c_contiguous:
        return value  # (ascontiguousarray would make a 0-d array 1-d)
    return np.ascontiguousarray(value)


def fold_values(node: Node) -> Any:
    """The constant output values of ``node`` as a tuple, or NOT_CONSTANT."""
    rule = TYPE_FOLDERS.get(node.kind)
    if rule is not None:
        return rule(node)
    op = lookup(node.kind)
    folder = FOLDERS.get(node.kind)
    # an impure op folds only through its own rule (prim::len: of a tuple or string, not a list)
    if op is None or not (op.is_pure or folder is not None) or node.kind == CONSTANT or \
            node.blocks or node.attrs:
        return NOT_CONSTANT
    args = [constant_of(v) for v in node.inputs]
    if any(a is NOT_CONSTANT for a in args):
        return NOT_CONSTANT
    return folder(node, args) if folder is not None else _evaluate(node, args)


def _too_big(value: Any) -> bool:
    if isinstance(value, np.ndarray):
        limit = getattr(_limit, "value", FOLD_LIMIT)
        return limit is not None and value.size > limit
    if isinstance(value, (tuple, list)):
        return any(_too_big(v) for v in value)
    return False


def _constant_type(value: Any, declared: Type) -> Type | None:
    """The folded constant's type, when it can stand where ``declared`` was (else no fold:
    e.g. a CPU array where a CUDA tensor was declared)."""
    try:
        t = constant_type(value)
    except TypeError:
        return None
    return t if is_subtype(t, declared) else None


def written_in_place(value: Value, depth: int = 8) -> bool:
    """Whether an op writes into ``value``'s array in place (``write_slot``, ``select_put_``,
    an in-place add), directly or through a view of it: a constant in its place would be
    written instead (every run sharing the one array, the writes lost to what reads it)."""
    if not isinstance(value.type, TensorType):
        return False
    for use in value.uses:
        op = lookup(use.node.kind)
        if op is None:  # a block's return, a node without an op
            continue
        if WRITES in op.effects_on(use.index) or (
                use.node.attrs.get(IN_PLACE_ATTR) and use.index == 0):
            return True
        if VIEW in op.traits and (depth == 0 or any(written_in_place(out, depth - 1)
                                                    for out in use.node.outputs)):
            return True
    return False


def fold_node(node: Node) -> bool:
    """Replace ``node`` by constants when its outputs are known; True when it did (not for an
    array written in place)."""
    if any(written_in_place(out) for out in node.outputs):
        return False
    values = fold_values(node)
    if values is NOT_CONSTANT or len(values) != len(node.outputs) or _too_big(values):
        return False
    types = [_constant_type(v, out.type) for v, out in zip(values, node.outputs)]
    if any(t is None for t in types):
        return False
    graph = node.graph
    for value, t, out in zip(values, types, node.outputs):
        c = graph.create(CONSTANT, (), (t,), {"value": value}, names=[out.name]).insert_before(node)
        out.replace_all_uses_with(c.output)
    node.erase()
    return True


def inline_block_before(block: Block, node: Node) -> list[Value]:
    """Move ``block``'s nodes (no params) right before ``node``; returns the block's results."""
    for inner in block.nodes:
        inner.move_before(node)
    return list(block.returns)


def fold_if(node: Node) -> bool:
    """Replace an ``if`` on a constant condition by the block it takes; an output both blocks
    give as the same constant number (``c or h is None`` with ``h`` None) by that constant."""
    cond = const(node, 0)
    if cond is NOT_CONSTANT or not isinstance(cond, (bool, int, np.bool_)):
        return fold_same_outputs(node)
    results = inline_block_before(node.blocks[0 if cond else 1], node)
    for out, v in zip(node.outputs, results):
        out.replace_all_uses_with(v)
    node.erase()
    return True


def fold_same_outputs(node: Node) -> bool:
    """Give the uses of an output that is one constant bool, int or float on both paths that
    constant instead; the ``if`` itself stays (dead-code elimination removes it when unused)."""
    changed = False
    for k, out in enumerate(node.outputs):
        a, b = (constant_of(block.returns[k]) for block in node.blocks)
        if not out.uses or type(a) is not type(b) or type(a) not in (bool, int, float) or a != b:
            continue
        c = node.graph.create(CONSTANT, (), (out.type,), {"value": a}).insert_before(node)
        out.replace_all_uses_with(c.output)
        changed = True
    return changed


def fold_loop(node: Node) -> bool:
    """Replace a loop that runs zero times by its initial carried values."""
    trips, cond = const(node, 0), const(node, 1)
    never = (isinstance(trips, (int, np.integer)) and trips <= 0) or (
        cond is not NOT_CONSTANT and isinstance(cond, (bool, np.bool_)) and not cond)
    if not never:
        return False
    for out, v in zip(node.outputs, node.inputs[2:]):
        out.replace_all_uses_with(v)
    node.erase()
    return True


CONTROL_FOLDERS: dict[str, Callable[[Node], bool]] = {
    "prim::If": fold_if,
    "prim::Loop": fold_loop,
}


def propagate_block(block: Block) -> bool:
    """One forward sweep over ``block`` and its nested blocks; True when something folded."""
    changed = False
    for node in block:
        for inner in node.blocks:
            changed |= propagate_block(inner)
        control = CONTROL_FOLDERS.get(node.kind)
        if control is not None:
            changed |= control(node)
            continue
        changed |= fold_node(node)
    return changed


def run(graph: Graph) -> bool:
    """Fold constants until nothing more folds."""
    changed = False
    while propagate_block(graph.block):
        changed = True
    return changed
