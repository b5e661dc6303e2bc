"""numpy's 0-d arrays given back as arrays.

numpy keeps ``np.zeros(())``, ``np.array(2.0)``, an argument's copy and what ``+=`` updates in
them as 0-d arrays, while an operation on a 0-d array gives numpy's scalar. The generated code
computes with the operations (``z = np.zeros(()); z += s`` becomes ``0.0 + s``), so where a
specialization returns such an array 0-d (``FunctionDef.array_results``) its result is turned
back into one. Other specializations run as generated.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np

from ir.core import Graph
from ir.types import AnyType, DictType, ListType, TensorType, TupleType


def with_array_results(fn: Callable[..., Any], graph: Graph,
                       paths: tuple[tuple[Any, ...], ...]) -> Callable[..., Any]:
    """``fn``, or where ``graph`` may return one of ``paths`` 0-d (the result, or an item of
    the tuples, lists and dicts it returns: a path of indices and keys), a function giving it
    back as numpy's array."""
    if not paths or len(graph.outputs) != 1:
        return fn
    t = graph.outputs[0].type
    kept = tuple(p for p in paths if _zero_d(_type_at(t, p)))
    if not kept:
        return fn
    if kept == ((),):
        def as_array(*args: Any) -> Any:
            return _array(fn(*args))
        as_array.__wrapped__ = fn  # type: ignore[attr-defined]  # (the generated code, for tools)
        return as_array

    def items_as_arrays(*args: Any) -> Any:
        return _arrays_at(fn(*args), kept)
    items_as_arrays.__wrapped__ = fn  # type: ignore[attr-defined]
    return items_as_arrays


def arrays_at(value: Any, paths: tuple[tuple[Any, ...], ...]) -> Any:
    """``value`` (a call's result, or ``vjp``'s primal outputs) with numpy's scalars at
    ``paths`` given back as 0-d arrays (see ``with_array_results``)."""
    return _arrays_at(value, paths) if paths else value


def _type_at(t: Any, path: tuple[Any, ...]) -> Any:
    """The type of the item at ``path`` of a value of type ``t`` (None: not one there)."""
    for step in path:
        if isinstance(t, TupleType) and isinstance(step, int) and step < len(t.elements):
            t = t.elements[step]
        elif isinstance(t, ListType):
            t = t.element
        elif isinstance(t, DictType):
            t = t.value
        elif not isinstance(t, AnyType):
            return None
    return t


def _arrays_at(value: Any, paths: tuple[tuple[Any, ...], ...]) -> Any:
    """``value`` with its items at ``paths`` as arrays: a tuple made anew, a list or dict (one
    the call made) changed in place."""
    if () in paths:
        return _array(value)
    steps: dict[Any, list[tuple[Any, ...]]] = {}
    for step, *rest in paths:
        steps.setdefault(step, []).append(tuple(rest))
    out = list(value) if isinstance(value, tuple) else value
    for step, rest in steps.items():
        out[step] = _arrays_at(out[step], tuple(rest))
    return tuple(out) if isinstance(value, tuple) else out


def _array(value: Any) -> Any:
    """numpy's scalar as a 0-d array; anything else (an array, CuPy's included) as it is."""
    return np.asarray(value) if isinstance(value, np.generic) else value


def _zero_d(t: Any) -> bool:
    """A tensor type that is 0-d, or whose rank is not known, or a type not inferred (an early
    return's value): a check per call then."""
    return isinstance(t, TensorType) and t.rank in (0, None) or isinstance(t, AnyType)
