"""Eager shape, indexing, splitting/joining and creation ops of ``script.ops``.

Results are views where numpy gives views: tensors are immutable in the language, so sharing
memory is safe.
"""

from __future__ import annotations

import builtins
from typing import Any

import numpy as np
from numpy.lib.array_utils import normalize_axis_index

from script.ops._impl_base import array_module

_slice = builtins.slice


def _axes(axis: Any) -> Any:
    """An ``ints`` argument as numpy takes it (lists become tuples)."""
    return tuple(axis) if isinstance(axis, list) else axis


def _along(axis: int, ndim: int, index: Any) -> tuple:
    """An indexing tuple applying ``index`` along ``axis``."""
    return (_slice(None),) * normalize_axis_index(axis, ndim) + (index,)


# -- transpose, reshape, expand_dims, squeeze ---------------------------------------------------


def transpose(a: Any, axes: Any = None) -> Any:
    """Permute the axes (reverse them when axes is None)."""
    if isinstance(axes, int):
        axes = (axes,)
    return a.transpose(_axes(axes))


def reshape(a: Any, shape: Any) -> Any:
    """The same elements in a new shape; one -1 is inferred."""
    return a.reshape(_axes(shape))


def expand_dims(a: Any, axis: Any) -> Any:
    """Insert size-1 axes at the given output positions."""
    return array_module(a).expand_dims(a, _axes(axis))


def squeeze(a: Any, axis: Any = None) -> Any:
    """Remove size-1 axes (all of them when axis is None)."""
    return array_module(a).squeeze(a, _axes(axis))


# -- indexing along one axis --------------------------------------------------------------------


def select(a: Any, axis: int, index: int) -> Any:
    """The slice at ``index`` along ``axis``, dropping the axis (IndexError when out of range)."""
    return a[_along(axis, a.ndim, index)]


def slice(a: Any, axis: int, start: int | None = None, stop: int | None = None,  # noqa: A001
          step: int | None = None) -> Any:
    """Basic slicing ``a[start:stop:step]`` along one axis."""
    return a[_along(axis, a.ndim, _slice(start, stop, step))]


def size(a: Any, axis: int) -> int:
    """The size of one axis."""
    return int(a.shape[axis])


def shape(a: Any) -> tuple[int, ...]:
    """The shape as a tuple of ints (numpy's)."""
    return tuple(int(d) for d in a.shape)


def ndim(a: Any) -> int:
    """The rank."""
    return int(a.ndim)


_DTYPE_NAMES: dict[Any, str] = {}
"""numpy dtype -> its name (``dtype.name`` builds the string on every read, ~1.6 us)."""


def dtype(a: Any) -> str:
    """The name of the dtype."""
    t = a.dtype
    name = _DTYPE_NAMES.get(t)
    if name is None:
        name = _DTYPE_NAMES[t] = str(t.name)
    return name


# -- splitting and joining ----------------------------------------------------------------------


def chunk(a: Any, chunks: int, axis: int = 0) -> tuple:
    """``chunks`` pieces of ceil(n / chunks) along ``axis``, the last one shorter (torch.chunk).

    ValueError when that does not make exactly ``chunks`` pieces (a size of 5 in 4 chunks).
    """
    if chunks <= 0:
        raise ValueError(f"chunk: the number of chunks must be positive, got {chunks}")
    n = a.shape[normalize_axis_index(axis, a.ndim)]
    piece = -(-n // chunks)
    if n and -(-n // piece) != chunks:
        raise ValueError(f"chunk: an axis of size {n} does not make {chunks} chunks")
    return tuple(a[_along(axis, a.ndim, _slice(i * piece, (i + 1) * piece))]
                 for i in range(chunks))


def split_list(a: Any, sections: int, axis: int = 0) -> list:
    """np.split with an int: the list of pieces."""
    return list(split(a, sections, axis))


def split(a: Any, sections: int, axis: int = 0) -> tuple:
    """``sections`` equal pieces along ``axis`` (np.split with an int): views, sliced here
    (``np.split`` takes several microseconds in Python); np.split's error otherwise."""
    if type(sections) is int and sections > 0 and a.ndim:
        ax = normalize_axis_index(axis, a.ndim)
        step, rest = divmod(a.shape[ax], sections)
        if not rest:
            lead = (_slice(None),) * ax
            return tuple([a[lead + (_slice(k * step, (k + 1) * step),)]
                          for k in range(sections)])
    return tuple(array_module(a).split(a, sections, axis))


def unbind(a: Any, axis: int = 0) -> list:
    """A new list of the slices along ``axis``."""
    ax = normalize_axis_index(axis, a.ndim)
    n = a.shape[ax]
    if ax == 0:
        return [a[i] for i in range(n)]
    lead = (_slice(None),) * ax
    return [a[lead + (i,)] for i in range(n)]


def cat(tensors: Any, axis: int = 0) -> Any:
    """Join tensors along an existing axis."""
    return array_module(*tensors).concatenate(tuple(tensors), axis)


def stack(tensors: Any, axis: int = 0) -> Any:
    """Join same-shape tensors along a new axis."""
    return array_module(*tensors).stack(tuple(tensors), axis)


# -- creation -----------------------------------------------------------------------------------
# Without a tensor argument there is nothing to say which array module to use: numpy.


def zeros(shape: Any, dtype: Any = "float64") -> Any:
    """A tensor of zeros."""
    return np.zeros(_axes(shape), dtype)


def ones(shape: Any, dtype: Any = "float64") -> Any:
    """A tensor of ones."""
    return np.ones(_axes(shape), dtype)


def full(shape: Any, value: Any, dtype: Any = None) -> Any:
    """A tensor filled with value."""
    return np.full(_axes(shape), value, dtype)


def zeros_like(a: Any, dtype: Any = None) -> Any:
    """Zeros with a's shape, device and (by default) dtype."""
    return array_module(a).zeros_like(a, dtype)


def ones_like(a: Any, dtype: Any = None) -> Any:
    """Ones with a's shape, device and (by default) dtype."""
    return array_module(a).ones_like(a, dtype)


def full_like(a: Any, value: Any, dtype: Any = None) -> Any:
    """``value`` with a's shape, device and (by default) dtype."""
    return array_module(a).full_like(a, value, dtype)


def arange(start: Any, stop: Any = None, step: Any = 1, dtype: Any = None) -> Any:
    """Evenly spaced values in [start, stop) (or [0, start) when stop is None)."""
    if stop is None:
        start, stop = 0, start
    if dtype is None:
        is_float = builtins.any(isinstance(v, float) for v in (start, stop, step))
        dtype = "float64" if is_float else "int64"
    return np.arange(start, stop, step, dtype=dtype)
