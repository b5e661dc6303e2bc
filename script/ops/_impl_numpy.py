"""Eager numpy-function ops of ``script.ops`` (declared in ``ir/ops/numpy_ops.py``): each calls
the array module's function of the same name."""

from __future__ import annotations

from typing import Any

import numpy as np

from script.ops._impl_base import array_module, python_result


def _axes(reps: Any) -> Any:
    return tuple(reps) if isinstance(reps, list) else reps


def argmax(a: Any, axis: Any = None) -> Any:
    """The index of the largest element (of the flattened array when axis is None)."""
    return array_module(a).argmax(a, axis)


def argmin(a: Any, axis: Any = None) -> Any:
    """The index of the smallest element (of the flattened array when axis is None)."""
    return array_module(a).argmin(a, axis)


def tile(a: Any, reps: Any) -> Any:
    """``a`` repeated ``reps`` times along each axis."""
    return array_module(a).tile(a, _axes(reps))


def repeat(a: Any, repeats: int, axis: Any = None) -> Any:
    """Each element ``repeats`` times in a row along ``axis`` (flattened when None)."""
    return array_module(a).repeat(a, repeats, axis)


def flatten(a: Any) -> Any:
    """A new 1-D array of ``a``'s elements in C order."""
    return a.flatten()


def ravel(a: Any) -> Any:
    """``a``'s elements in C order as a 1-D array (a view when possible)."""
    return array_module(a).ravel(a)


def empty_like(a: Any, dtype: Any = None) -> Any:
    """Uninitialized storage with ``a``'s shape, device and (by default) dtype."""
    return array_module(a).empty_like(a, dtype)


def array(data: Any, dtype: Any = None) -> Any:
    """A new array of a number or of (nested) lists and tuples of numbers."""
    return np.array(data, dtype)


def dot(a: Any, b: Any) -> Any:
    """numpy.dot (a matmul for operands of at most 2 axes, a product with a scalar)."""
    return python_result(array_module(a, b).dot(a, b), a, b)


def vstack(tensors: Any) -> Any:
    """Join along the first axis, 1-D arrays as rows (numpy.vstack)."""
    return array_module(*tensors).vstack(tuple(tensors))


def hstack(tensors: Any) -> Any:
    """Join 1-D arrays end to end, others along the second axis (numpy.hstack)."""
    return array_module(*tensors).hstack(tuple(tensors))


def moveaxis(a: Any, source: Any, destination: Any) -> Any:
    """``a`` with the axes ``source`` moved to ``destination``, a view (numpy.moveaxis)."""
    return array_module(a).moveaxis(a, source, destination)


def swapaxes(a: Any, axis1: int, axis2: int) -> Any:
    """``a`` with two axes swapped, a view (numpy.swapaxes)."""
    return array_module(a).swapaxes(a, axis1, axis2)


def flip(a: Any) -> Any:
    """``a`` with every axis reversed, a view (numpy.flip without an axis)."""
    return array_module(a).flip(a)


def dstack(tensors: Any) -> Any:
    """Join along the third axis, 2-D arrays as (m, n, 1) slices (numpy.dstack)."""
    return array_module(*tensors).dstack(tuple(tensors))


def column_stack(tensors: Any) -> Any:
    """Join along the second axis, 1-D arrays as columns (numpy.column_stack)."""
    return array_module(*tensors).column_stack(tuple(tensors))


def numel(a: Any) -> int:
    """The number of elements (numpy's ``a.size``)."""
    return int(a.size)


def sort(a: Any, axis: Any = -1) -> Any:
    """A sorted copy along ``axis`` (of the flattened array when None)."""
    return array_module(a).sort(a, axis)


def argsort(a: Any, axis: Any = -1) -> Any:
    """The indices that sort ``a`` along ``axis`` (of the flattened array when None)."""
    return array_module(a).argsort(a, axis)


def cumsum(a: Any, axis: Any = None) -> Any:
    """Running sums along ``axis`` (of the flattened array when None)."""
    return array_module(a).cumsum(a, axis)


def round(a: Any, decimals: int = 0) -> Any:  # noqa: A001
    """``a`` rounded to ``decimals`` places, halves to even."""
    return array_module(a).round(a, decimals)
