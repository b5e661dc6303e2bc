"""Eager integer-array indexing ops of ``script.ops`` (declared in ``ir/ops/indexing.py``)."""

from __future__ import annotations

import builtins
from typing import Any

import numpy as np
from numpy.lib.array_utils import normalize_axis_index

from script.ops._impl_base import array_module


def _along(axis: int, ndim: int, index: Any) -> tuple:
    return (builtins.slice(None),) * normalize_axis_index(axis, ndim) + (index,)


def own(out: Any, *indices: Any) -> Any:
    """``out``, read from an array at integer ``indices``, as a new array: numpy's ``a[i]`` for
    0-d indices (``np.argmax(v)``) is a view of ``a``, which the code after it, treating the
    result as its own (an update in place), could write into."""
    if all(getattr(i, "ndim", 0) == 0 for i in indices) and not isinstance(out, np.generic):
        return out.copy()  # a view; a numpy scalar is a value of its own
    return out


def take(a: Any, indices: Any, axis: int = 0) -> Any:
    """The items of ``a`` at integer ``indices`` along ``axis`` (``a[idx]``, ``a[:, idx]``),
    always a new array (``own``)."""
    return own(a[indices] if axis == 0 else a[_along(axis, a.ndim, indices)], indices)


def index_pairs(a: Any, rows: Any, cols: Any) -> Any:
    """``a[rows, cols]`` for integer arrays (or ints) broadcast together, always a new array
    (``own``)."""
    return own(a[rows, cols], rows, cols)


def _scatter_add(g: Any, shape: Any, index: tuple) -> Any:
    xp = array_module(g)
    out = xp.zeros(tuple(shape), g.dtype)
    xp.add.at(out, index, g)
    return out


def take_backward(g: Any, shape: Any, indices: Any, axis: int = 0) -> Any:
    """Zeros of ``shape`` with ``g`` added at ``indices`` along ``axis`` (repeats add up)."""
    return _scatter_add(g, shape, _along(axis, len(shape), indices))


def index_pairs_backward(g: Any, shape: Any, rows: Any, cols: Any) -> Any:
    """Zeros of ``shape`` with ``g`` added at ``[rows, cols]`` (repeated pairs add up)."""
    return _scatter_add(g, shape, (rows, cols))
