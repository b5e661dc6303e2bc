"""Eager writes into a region of an array (declared in ``ir/ops/index_put.py``): ``NAME`` returns a
new array, ``NAME_`` stores into ``a`` and returns it. The value is broadcast to the region and
cast to ``a``'s dtype, as numpy's ``a[index] = value`` does; where an integer index repeats, the
last write wins. ``take_last`` / ``index_pairs_last`` read the region back for the gradient of
the value: each position that a later one overwrites reads zero."""

from __future__ import annotations

import builtins
import operator
from typing import Any

from script.ops._impl_base import array_module
from script.ops._impl_indexing import _along, own


def _select_region(a: Any, axis: int, index: int) -> tuple:
    return _along(axis, a.ndim, index)


def _slice_region(a: Any, axis: int, start: Any = None, stop: Any = None, step: Any = None
                  ) -> tuple:
    return _along(axis, a.ndim, builtins.slice(start, stop, step))


def _take_region(a: Any, indices: Any, axis: int = 0) -> tuple:
    return _along(axis, a.ndim, indices)


def _pairs_region(a: Any, rows: Any, cols: Any) -> tuple:
    return (rows, cols)


def _store(a: Any, region: tuple, value: Any) -> Any:
    a[region] = value
    return a


def select_put(a: Any, value: Any, axis: int, index: int) -> Any:
    """``a`` with its slice ``index`` along ``axis`` set to ``value`` (a new array)."""
    return _store(a.copy(), _select_region(a, axis, index), value)


def select_put_(a: Any, value: Any, axis: int, index: int) -> Any:
    """``a[..., index, ...] = value`` in place; returns ``a``."""
    return _store(a, _select_region(a, axis, index), value)


def slice_put(a: Any, value: Any, axis: int, start: Any = None, stop: Any = None,
              step: Any = None) -> Any:
    """``a`` with the slice ``start:stop:step`` along ``axis`` set to ``value`` (a new array)."""
    return _store(a.copy(), _slice_region(a, axis, start, stop, step), value)


def slice_put_(a: Any, value: Any, axis: int, start: Any = None, stop: Any = None,
               step: Any = None) -> Any:
    """``a[..., start:stop:step, ...] = value`` in place; returns ``a``."""
    return _store(a, _slice_region(a, axis, start, stop, step), value)


def take_put(a: Any, value: Any, indices: Any, axis: int = 0) -> Any:
    """``a`` with its items at ``indices`` along ``axis`` set to ``value`` (a new array)."""
    return _store(a.copy(), _take_region(a, indices, axis), value)


def take_put_(a: Any, value: Any, indices: Any, axis: int = 0) -> Any:
    """``a[..., indices, ...] = value`` in place; returns ``a``."""
    return _store(a, _take_region(a, indices, axis), value)


def _ufunc_at(a: Any, index: Any, value: Any, sign: int) -> Any:
    out = a.copy()
    xp = array_module(a)
    (xp.add if sign > 0 else xp.subtract).at(out, index, value)
    return out


def take_add(a: Any, value: Any, indices: Any, axis: int = 0, sign: int = 1) -> Any:
    """``a`` with ``value`` added (``sign`` -1: subtracted) at ``indices`` along ``axis``, item
    by item (numpy's ``np.add.at``: repeated indices add up; a new array)."""
    return _ufunc_at(a, _take_region(a, indices, axis), value, sign)


def index_pairs_add(a: Any, value: Any, rows: Any, cols: Any, sign: int = 1) -> Any:
    """``a`` with ``value`` added (``sign`` -1: subtracted) at ``[rows, cols]``, item by item
    (``np.add.at(a, (rows, cols), value)``; a new array)."""
    return _ufunc_at(a, _pairs_region(a, rows, cols), value, sign)


def index_pairs_put(a: Any, value: Any, rows: Any, cols: Any) -> Any:
    """``a`` with ``a[rows, cols]`` set to ``value`` (a new array)."""
    return _store(a.copy(), _pairs_region(a, rows, cols), value)


def index_pairs_put_(a: Any, value: Any, rows: Any, cols: Any) -> Any:
    """``a[rows, cols] = value`` in place; returns ``a``."""
    return _store(a, _pairs_region(a, rows, cols), value)


def _later_repeats(xp: Any, flat: Any) -> Any:
    """True at each position of ``flat`` whose value occurs again later (a write overwritten)."""
    flat = flat.ravel()
    _, last_from_end = xp.unique(flat[::-1], return_index=True)
    last = flat.size - 1 - last_from_end
    overwritten = xp.ones(flat.size, dtype=bool)
    overwritten[last] = False
    return overwritten


def take_last(g: Any, indices: Any, axis: int = 0) -> Any:
    """``g`` read at ``indices`` along ``axis``, zero where a later index repeats the same one."""
    xp = array_module(g)
    out = g[_along(axis, g.ndim, indices)]
    idx = xp.asarray(indices)
    if idx.ndim == 0:
        return own(out, idx)  # (not a view of the cotangent: the backward may update it)
    idx = idx % g.shape[axis]
    mask = _later_repeats(xp, idx).reshape(idx.shape)
    k = builtins.int(axis) % g.ndim
    shape = (1,) * k + idx.shape + (1,) * (g.ndim - k - 1)
    return xp.where(mask.reshape(shape), xp.zeros((), g.dtype), out)


def index_pairs_last(g: Any, rows: Any, cols: Any) -> Any:
    """``g[rows, cols]``, zero where a later pair repeats the same one."""
    xp = array_module(g)
    out = g[rows, cols]
    r, c = xp.broadcast_arrays(xp.asarray(rows) % g.shape[0], xp.asarray(cols) % g.shape[1])
    if r.ndim == 0:
        return own(out, r)
    mask = _later_repeats(xp, r * g.shape[1] + c).reshape(r.shape)
    mask = mask.reshape(mask.shape + (1,) * (g.ndim - 2))
    return xp.where(mask, xp.zeros((), g.dtype), out)


_UPDATES = {"+": operator.iadd, "-": operator.isub, "*": operator.imul, "/": operator.itruediv,
            "**": operator.ipow, "//": operator.ifloordiv, "%": operator.imod}


def write_into(dst: Any, value: Any, op: str = "", index: str = "...") -> Any:
    """``dst[...] = value`` (``op`` "") or ``dst[...] op= value``, into ``dst`` itself
    (``index`` ":": ``dst[:]``, an IndexError for a 0-d array, as numpy's); returns ``dst``."""
    where = Ellipsis if index == "..." else slice(None)
    if not hasattr(dst, "__setitem__"):  # numpy's scalar (or a number): += makes a new one
        raise TypeError(f"an in-place update ({op}=) of what the caller holds found numpy's "
                        f"scalar {dst!r}, not an array: numpy would bind a new scalar to the "
                        "name or attribute, which the compiled code does not follow; assign "
                        f"the new value instead (x = x {op or '+'} v)")
    if op:
        _UPDATES[op](dst[where], value)  # into the view itself: numpy's casting rule for op=
    else:
        dst[where] = value
    return dst
