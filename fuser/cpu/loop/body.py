"""What the nodes of a loop body are, for native code: the op tables (number arithmetic, slot
writes, reductions, views, constructors, layer norms, split pieces) and the predicates on values
(a known array, an int, a list) that ``program.LoopProgram`` analyses the body with."""

from __future__ import annotations

import contextlib
import operator
import os
from collections.abc import Iterator
from typing import Any

from ir.core import Node, Value
from ir.types import DictType, ListType, ScalarType, TensorType

NUMBER_OPS = {"tensor::add": ("add", "fadd"), "tensor::sub": ("sub", "fsub"),
              "tensor::mul": ("mul", "fmul"), "tensor::div": (None, "fdiv")}
"""Python number arithmetic in the body (a step index, a decay factor): LLVM's integer and IEEE
double operations give Python's results; an int result that leaves 64 bits, and ``/`` by zero,
return to Python, which computes the big int or raises."""
PY_NUMBER_OPS = {"tensor::add": operator.add, "tensor::sub": operator.sub,
                 "tensor::mul": operator.mul, "tensor::div": operator.truediv}
"""the same operations as Python computes them (a kept number, an index, after the loop)."""
PIECES = ("tensor::split", "tensor::chunk")
"""views of an array in pieces along a constant axis (``np.split`` into equal pieces, torch's
``chunk``): each piece is the array at an offset, with its strides."""
WRITES = ("tensor::write_slot", "tensor::select_put_")
PURE_WRITE = "tensor::select_put"
"""a write into a copy (``y = x.copy(); y[i] = v``, one row of a fresh one-hot array): ``x``
(one C-ordered block) is copied into the step's buffer, then the slot is written; the value may
be a number (filling the slot)."""
SLOT_WRITES = (*WRITES, PURE_WRITE)
REDUCTIONS = {"tensor::sum": "sum", "tensor::mean": "mean", "tensor::amax": "max",
              "tensor::amin": "min", "tensor::sum_to": "sum", "tensor::var": "var",
              "tensor::std": "std"}
"""reductions of a float array over constant axes (all, one or several; ``keepdims`` or not;
``sum_to`` a shape, the gradient of a broadcast), as native steps: the op each computes (``mean``
is a sum divided by the count; ``var`` and ``std`` the mean of the squared deviations from the
mean, by a constant ``ddof``, as numpy's two passes)."""
DEVIATIONS_MAX_BYTES = 64 << 10
"""the largest result of a ``var`` or ``std`` in a loop (its sums of squares are on the stack)."""
VIEWS = ("tensor::broadcast_to", "tensor::expand_dims", "tensor::transpose")
"""views of known shapes the native code makes by strides (0 along a broadcast axis)."""
CONSTRUCTORS = {"tensor::zeros": ("zeros", None), "tensor::ones": ("ones", None),
                "tensor::full": ("full", 1), "tensor::empty": ("empty", None),
                "tensor::zeros_like": ("zeros", None), "tensor::ones_like": ("ones", None),
                "tensor::full_like": ("full", 1), "tensor::empty_like": ("empty", None)}
"""array constructors of a shape known when compiling: the fill and the position of its value
(``full``); the shape, dtype and ``*_like`` template inputs are not read by the native code."""
LAYER_NORMS = ("tensor::layer_norm", "tensor::layer_norm_backward")
"""a layer norm over the last axis and its gradient, as row kernels."""
_STORED = ("float32", "float64", "bool")


class LoopRefused(ValueError):
    """The loop cannot run natively; the message says which node or value and why."""


_python_loops = [False]


def enabled() -> bool:
    """Whether loops are compiled natively (``RNNSCRIPT_NATIVE_LOOPS=0`` turns it off, and so
    does ``python_loops()`` for what compiles within it)."""
    return not _python_loops[0] and os.environ.get(
        "RNNSCRIPT_NATIVE_LOOPS", "1").strip().lower() not in ("0", "false", "off")


@contextlib.contextmanager
def python_loops() -> Iterator[None]:
    """Within the ``with`` block, loops compile as generated Python (a reference to check
    native loops against, whatever their thread policy)."""
    saved = _python_loops[0]
    _python_loops[0] = True
    try:
        yield
    finally:
        _python_loops[0] = saved


def where(node: Node) -> str:
    src = getattr(node, "source_range", None)
    return f"{node.kind}" + (f" ({src})" if src else "")


def known_array(v: Value) -> TensorType | None:
    t = v.type
    if (isinstance(t, TensorType) and t.dtype in _STORED and t.shape is not None
            and None not in t.shape):
        return t
    return None


def int_array(v: Value) -> bool:
    """Whether ``v`` is a 1-D int64 array of known length (``np.arange(T)``, whose items a
    ``for t in np.arange(T)`` loop reads as ints)."""
    t = v.type
    return (isinstance(t, TensorType) and t.dtype == "int64" and t.shape is not None
            and len(t.shape) == 1 and t.shape[0] is not None)


def int_list(v: Value) -> bool:
    """Whether ``v`` is a list of ints (a sentence of word indices)."""
    return isinstance(v.type, ListType) and v.type.element == ScalarType("int")


def write_parts(n: Node) -> tuple[Value, Value, Value, Value]:
    """(array, axis, index, value) of a slot write: ``write_slot(buf, axis, index, value)`` or
    ``select_put_(buf, value, axis, index)`` (``select_put`` likewise)."""
    if n.kind in ("tensor::select_put_", PURE_WRITE):
        buf, value, axis, idx = n.inputs
        return buf, axis, idx, value
    buf, axis, idx, value = n.inputs
    return buf, axis, idx, value


def write_target(n: Node) -> Value:
    """The array a slot write stores into: its input, or for a write into a copy its output."""
    return n.output if n.kind == PURE_WRITE else write_parts(n)[0]


def is_list(v: Value) -> bool:
    return isinstance(v.type, ListType)


def is_dict(v: Value) -> bool:
    """Whether ``v`` is a dict with int keys (a loop's steps keyed by the step)."""
    return isinstance(v.type, DictType) and v.type.key == ScalarType("int")


def role(lst: Value, body: Any) -> str:
    """What the loop body does with list ``lst`` from outside: ``read`` items by index, ``pop``
    one item from the end per step, or ``append``; with a dict, ``keys`` (items read by key)
    or ``store`` (items stored); a mix (which would need the list's state between steps) is
    refused."""
    kinds = [u.node.kind for u in lst.uses if u.node.owner is body]
    if kinds and all(k == "prim::DictGetItem" for k in kinds):
        return "keys"
    if kinds and all(k == "prim::DictSetItem" for k in kinds):
        return "store"
    if kinds and all(k == "prim::ListAppend" for k in kinds):
        return "append"
    if kinds == ["prim::ListPop"]:
        return "pop"
    if kinds and all(k == "prim::ListIndex" for k in kinds):
        return "read"
    raise LoopRefused(f"list %{lst.name} is used as {', '.join(sorted(set(kinds)))} in one loop")


def is_int(v: Value) -> bool:
    return isinstance(v.type, ScalarType) and v.type.name == "int"


def is_number(v: Value) -> bool:
    return isinstance(v.type, ScalarType) and v.type.name in ("int", "float")


def is_true(v: Value) -> bool:
    return v.is_constant and v.constant is True


def unread(n: Node) -> set[int]:
    """Positions of ``n``'s inputs the native code does not read (a reduction's axes and
    keepdims, a constructor's shape, dtype and template): only their types matter."""
    if n.kind in REDUCTIONS or n.kind in VIEWS or n.kind in PIECES:
        return set(range(1, len(n.inputs)))
    if n.kind in CONSTRUCTORS:
        value = CONSTRUCTORS[n.kind][1]
        return set(range(len(n.inputs))) - ({value} if value is not None else set())
    return set()


def what_it_is(v: Value) -> str:
    """Words for a value the native loop cannot keep beyond the step."""
    if is_list(v) or is_dict(v):
        return "a list" if is_list(v) else "a dict"
    if v.node.kind in ("prim::ListIndex", "prim::ListPop"):
        return "a list item"
    if v.node.kind in (*VIEWS, *PIECES, "tensor::slice", "tensor::reshape"):
        return "a view"
    return f"a {v.node.kind} of type {v.type}"


def split_pieces(n: Node) -> tuple[int, int, int] | None:
    """(axis, the length of each piece but maybe the last, the axis's length) of a ``split``
    or ``chunk`` whose outputs have the shapes numpy's (torch's) pieces have; else None."""
    x, count, axis = n.inputs
    t = known_array(x)
    if t is None or not count.is_constant or not axis.is_constant:
        return None
    k, a = count.constant, axis.constant
    rank = len(t.shape)  # type: ignore[arg-type]
    if (not isinstance(k, int) or not isinstance(a, int) or isinstance(k, bool) or k <= 0
            or not -rank <= a < rank or len(n.outputs) != k):
        return None
    a %= rank
    size = t.shape[a]  # type: ignore[index]
    if n.kind == "tensor::split":
        if size % k:
            return None
        piece = size // k
    else:
        piece = -(-size // k)
        if size and -(-size // piece) != k:
            return None
    for j, out in enumerate(n.outputs):
        to = known_array(out)
        want = list(t.shape)  # type: ignore[arg-type]
        want[a] = max(0, min(piece, size - j * piece))
        if to is None or to.dtype != t.dtype or tuple(to.shape) != tuple(want):
            return None
    return a, piece, size


def reduction(n: Node) -> tuple[tuple[int, ...], list[int | None]] | None:
    """The axes reduction ``n`` reduces (sorted, non-negative) and, per input axis, the output
    axis it is (None when dropped); None when the axes are not constants."""
    x = n.inputs[0]
    t, to = known_array(x), known_array(n.output)
    if t is None or to is None:
        return None
    shape, rank = tuple(t.shape), len(t.shape)  # type: ignore[arg-type]
    if n.kind == "tensor::sum_to":
        lead = rank - len(to.shape)  # type: ignore[arg-type]
        if lead < 0:
            return None
        axes = tuple(range(lead)) + tuple(
            a for a in range(lead, rank) if to.shape[a - lead] == 1 and shape[a] != 1)
        return axes, [None if a < lead else a - lead for a in range(rank)]
    axis, keep = n.inputs[1], n.inputs[-1]  # (var and std: ddof between them)
    if not axis.is_constant or not keep.is_constant:
        return None
    a = axis.constant
    items = range(rank) if a is None else a if isinstance(a, (tuple, list)) else (a,)
    out = []
    for k in items:
        if isinstance(k, bool) or not isinstance(k, int) or not -rank <= k < max(rank, 1):
            return None
        out.append(k % rank if rank else 0)
    if len(set(out)) != len(out):
        return None
    kept = [a for a in range(rank) if a not in out]
    return tuple(sorted(out)), [a if keep.constant else (kept.index(a) if a in kept else None)
                                for a in range(rank)]


def numbers(produced: list[Value]) -> set[Value]:
    """The 0-d arrays of ``produced`` (what a loop's steps make) where numpy's arithmetic,
    reductions and item reads give a number (a numpy scalar): all but array constructors'."""
    return {v for v in produced if v.node.kind not in CONSTRUCTORS
            and isinstance(v.type, TensorType) and v.type.shape == ()}
