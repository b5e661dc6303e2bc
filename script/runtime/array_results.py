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
from ir.types import TensorType, TupleType


def with_array_results(fn: Callable[..., Any], graph: Graph,
                       paths: tuple[tuple[int, ...], ...]) -> Callable[..., Any]:
    """``fn``, or where ``graph`` returns one of ``paths`` 0-d, a function giving it back as
    numpy's array."""
    if not paths or len(graph.outputs) != 1:
        return fn
    t = graph.outputs[0].type
    whole = () in paths and _zero_d(t)
    items = tuple(k for (k, *_) in (p for p in paths if p)
                  if isinstance(t, TupleType) and k < len(t.elements) and _zero_d(t.elements[k]))
    if whole:
        def as_array(*args: Any) -> Any:
            return _array(fn(*args))
        as_array.__wrapped__ = fn  # type: ignore[attr-defined]  # (the generated code, for tools)
        return as_array
    if not items:
        return fn

    def items_as_arrays(*args: Any) -> Any:
        out = list(fn(*args))
        for k in items:
            out[k] = _array(out[k])
        return tuple(out)
    items_as_arrays.__wrapped__ = fn  # type: ignore[attr-defined]
    return items_as_arrays


def _array(value: Any) -> Any:
    """numpy's scalar as a 0-d array; anything else (an array, CuPy's included) as it is."""
    return np.asarray(value) if isinstance(value, np.generic) else value


def _zero_d(t: Any) -> bool:
    """A tensor type that is 0-d, or whose rank is not known (a check per call then)."""
    return isinstance(t, TensorType) and t.rank in (0, None)
