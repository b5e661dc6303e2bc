"""The shape/dtype sanitizer: run-time values checked against their static IR types.

With ``RNNSCRIPT_VERIFY=1`` in the environment when a graph is compiled (the test suite sets it),
the generated code checks every value a node produces, and the graph's inputs, against the type
the IR gave it: a tensor's dtype, rank, known sizes and device, a scalar's kind, the items of
tuples, lists and Optionals. A type rule that claims a shape the op does not produce (a wrong
transpose rule) then fails every program that runs the op, at the node that produced the value,
instead of surviving until a pass relies on the claim. Without the variable nothing is emitted.
"""

from __future__ import annotations

import os
from typing import Any

import numpy as np

from ir.core import PARAM, Graph, Node, Value
from ir.types import (
    BOOL,
    FLOAT,
    INT,
    NONE,
    STR,
    DictType,
    ListType,
    OptionalType,
    TensorType,
    TupleType,
    Type,
)


class TypeMismatch(AssertionError):
    """A run-time value whose dtype or shape is not the one its static type promises: a type
    rule (or a pass that kept a stale type) is wrong."""


def enabled() -> bool:
    """Whether code generated now carries the checks (``RNNSCRIPT_VERIFY`` set and not 0)."""
    return os.environ.get("RNNSCRIPT_VERIFY", "") not in ("", "0")


_PYTHON_DTYPES = {bool: "bool", int: "int64", float: "float64"}

_SCALARS: dict[Type, tuple[type, ...]] = {
    # numpy scalars stand for Python numbers (np.minimum of two floats is an np.float64)
    BOOL: (bool, np.bool_),
    INT: (int, np.integer),
    FLOAT: (float, np.floating),
    STR: (str,),
}


def mismatch(value: Any, t: Type) -> str | None:
    """Why ``value`` is not a value of ``t`` (None when it is, or when ``t`` says too little)."""
    if isinstance(t, TensorType):
        return _tensor_mismatch(value, t)
    if isinstance(t, OptionalType):
        return None if value is None else mismatch(value, t.element)
    if t == NONE:
        return None if value is None else f"{_describe(value)} where None was expected"
    if t in _SCALARS:
        if isinstance(value, _SCALARS[t]) and not (t == FLOAT and isinstance(value, bool)):
            return None
        return f"{_describe(value)} where {t} was expected"
    if isinstance(t, TupleType):
        # a list argument of known length is specialized as a tuple of its items' types
        if not isinstance(value, (tuple, list)) or len(value) != len(t.elements):
            return f"{_describe(value)} where a {len(t.elements)}-tuple was expected"
        return _first((f"item {k}: ", mismatch(v, e))
                      for k, (v, e) in enumerate(zip(value, t.elements)))
    if isinstance(t, ListType):
        # a list of ints may be a shape, which is a tuple at run time as in numpy
        if not isinstance(value, list) and not (isinstance(value, tuple) and _ints(t.element)):
            return f"{_describe(value)} where a list was expected"
        return _first((f"item {k}: ", mismatch(v, t.element)) for k, v in enumerate(value))
    if isinstance(t, DictType):
        if not isinstance(value, dict):
            return f"{_describe(value)} where a dict was expected"
        return _first((f"value of {k!r}: ", mismatch(v, t.value)) for k, v in value.items())
    return None  # classes, Any, devices: nothing shape-like to check


def _ints(t: Type) -> bool:
    return t == INT or isinstance(t, OptionalType) and t.element == INT


def _first(reasons: Any) -> str | None:
    """The first (prefix, reason) pair with a reason, as one text."""
    for prefix, reason in reasons:
        if reason is not None:
            return prefix + reason
    return None


def _tensor_mismatch(value: Any, t: TensorType) -> str | None:
    dtype, shape, device = _tensor_facts(value)
    if dtype is None:
        return f"{_describe(value)} where a tensor was expected"
    if t.dtype is not None and dtype != t.dtype:
        return f"dtype {dtype}, shape {shape} where {t} was expected"
    if t.shape is not None and (len(shape) != len(t.shape) or any(
            d is not None and d != n for d, n in zip(t.shape, shape))):
        return f"shape {shape} ({dtype}) where {t} was expected"
    if t.device is not None and device is not None and device != t.device:
        return f"a {device} array where {t} was expected"
    return None


def _tensor_facts(value: Any) -> tuple[str | None, tuple[int, ...], str | None]:
    """(dtype name, shape, device) of an array or numpy/Python scalar; dtype None otherwise.
    A Python number has no device: it stands for a 0-d tensor on any."""
    if isinstance(value, (np.ndarray, np.generic)):
        return value.dtype.name, value.shape, "cpu"
    if type(value) in _PYTHON_DTYPES:  # a 0-d result numpy handed back as a Python number
        return _PYTHON_DTYPES[type(value)], (), None
    dtype = getattr(value, "dtype", None)
    if dtype is not None and hasattr(value, "shape"):  # a CuPy array
        return np.dtype(dtype).name, tuple(value.shape), "cuda"
    return None, (), "cpu"


def _describe(value: Any) -> str:
    dtype, shape, _ = _tensor_facts(value)
    if dtype is not None and isinstance(value, (np.ndarray, np.generic)):
        return f"an array ({dtype}, shape {shape})"
    return f"a {type(value).__name__}"


def static_type(value: Value, lists_hold_placeholders: bool = False) -> Type:
    """What ``value`` must be at run time: its type, or None as well where the IR allows a None
    its type does not show. An ``unchecked_unwrap_optional`` may run on a path where the
    Optional is None (it costs nothing; its result is read only where the frontend proved it is
    not None). A ``prim::Uninitialized`` placeholder (None) flows out of the branch or loop that
    never reads it (a value saved for the backward by one branch of an ``if``), into the lists
    that save a loop's values step by step when ``lists_hold_placeholders``, and so into a
    backward graph's inputs anywhere."""
    node = value.node
    t = value.type
    if node.kind == PARAM and node.owner is not None and node.owner.owner is None:
        return _with_placeholders(t, everywhere=True)  # a graph's input
    if lists_hold_placeholders:
        t = _with_placeholders(t, everywhere=False)
    if node.kind == "prim::unchecked_unwrap_optional" or maybe_uninitialized(value, set()) or \
            (lists_hold_placeholders and node.kind in LIST_READS):
        return OptionalType(t)
    if node.kind in ("prim::TupleConstruct", "prim::If") and isinstance(t, TupleType):
        # of placeholders: a path that returned earlier (an ``if`` in a loop passes it on)
        t = TupleType(tuple(OptionalType(e) if _item_maybe_uninitialized(value, k, set()) else e
                            for k, e in enumerate(t.elements)))
    return t


LIST_READS = ("prim::ListIndex", "prim::ListPop", "prim::ListUnpack")


def _with_placeholders(t: Type, everywhere: bool) -> Type:
    """``t`` with None allowed for list items (and, ``everywhere``, for every part)."""
    optional = OptionalType if everywhere else (lambda x: x)
    if isinstance(t, OptionalType):
        return OptionalType(_with_placeholders(t.element, everywhere))
    if isinstance(t, TupleType):
        return optional(TupleType(tuple(_with_placeholders(e, everywhere) for e in t.elements)))
    if isinstance(t, ListType):
        return optional(ListType(OptionalType(_with_placeholders(t.element, everywhere))))
    if isinstance(t, DictType):
        return optional(DictType(t.key, _with_placeholders(t.value, everywhere)))
    return optional(t)


CONTAINER_WRITES = ("prim::ListConstruct", "prim::ListAppend", "prim::ListSetItem",
                    "prim::ListInsert")


def lists_hold_placeholders(graph: Graph) -> bool:
    """Whether ``graph``'s lists may hold ``prim::Uninitialized`` placeholders: it puts a value
    that may be one into a list (autodiff saves a loop's values in lists, placeholders for the
    steps that made none), or it takes lists as inputs (a backward takes those lists)."""
    if any(isinstance(_strip(v.type), ListType) for v in graph.inputs):
        return True
    return any(node.kind in CONTAINER_WRITES and any(maybe_uninitialized(v, set())
                                                     for v in node.inputs)
               for node in graph.walk())


def _strip(t: Type) -> Type:
    return t.element if isinstance(t, OptionalType) else t


def maybe_uninitialized(value: Value, seen: set[Value]) -> bool:
    """Whether ``value`` may be a ``prim::Uninitialized`` placeholder at run time."""
    if value in seen:
        return False
    seen.add(value)
    node = value.node
    if node.kind == "prim::Uninitialized":
        return True
    if node.kind in ("prim::TupleIndex", "prim::TupleUnpack"):  # an item of a tuple built of
        k = value.index if node.kind == "prim::TupleUnpack" else node.inputs[1].constant
        return type(k) is int and _item_maybe_uninitialized(node.inputs[0], k, seen)
    if node.kind == "prim::If":
        return any(maybe_uninitialized(b.returns[value.index], seen) for b in node.blocks)
    if node.kind == "prim::Loop":  # the initial value or one a step carried
        return maybe_uninitialized(node.inputs[2 + value.index], seen) or \
            maybe_uninitialized(node.blocks[0].returns[1 + value.index], seen)
    block = node.owner
    if node is getattr(block, "param_node", None) and block.owner is not None and \
            block.owner.kind == "prim::Loop" and value.index >= 1:
        loop = block.owner
        return maybe_uninitialized(loop.inputs[1 + value.index], seen) or \
            maybe_uninitialized(block.returns[value.index], seen)
    return False


def _item_maybe_uninitialized(tuple_value: Value, k: int, seen: set[Value]) -> bool:
    """Whether item ``k`` of the tuple ``tuple_value`` may be a placeholder (the tuple itself
    may be: an If's branch that returned earlier gives one made of placeholders)."""
    if maybe_uninitialized(tuple_value, set(seen)):
        return True
    node = tuple_value.node
    if node.kind == "prim::TupleConstruct":
        return k < len(node.inputs) and maybe_uninitialized(node.inputs[k], seen)
    if node.kind == "prim::If":
        return any(_item_maybe_uninitialized(b.returns[tuple_value.index], k, seen)
                   for b in node.blocks)
    return False


def where(node: Node | None, what: str) -> str:
    """``what`` of ``node`` (its kind and source line) for the error message."""
    if node is None:
        return what
    source = f" at {node.source}" if getattr(node, "source", None) is not None else ""
    return f"{what} of {node.kind}{source}"


def check(value: Any, t: Type, place: str) -> None:
    """Raise TypeMismatch when ``value`` is not a value of ``t``; ``place`` names the producer."""
    reason = mismatch(value, t)
    if reason is not None:
        raise TypeMismatch(f"{place}: the static type is {t}, but it computed {reason}")
