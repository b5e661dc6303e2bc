"""Eager ops that gradients are made of (declared in ``ir/ops/autodiff_ops.py``)."""

from __future__ import annotations

from typing import Any

import numpy as np

from script.ops._impl_base import array_module, generator, is_float_array


def _shape(shape: Any) -> tuple[int, ...]:
    if isinstance(shape, (list, tuple)):
        return tuple(int(d) for d in shape)
    return (int(shape),)


def det_backward(g: Any, a: Any) -> Any:
    """``g`` times the gradient of ``det(a)``: the transposed adjugate of ``a`` (of each matrix
    of a stack). From the SVD ``a = u diag(s) vh``, ``adj(a).T = det(u) det(vh) u diag(p) vh``
    with ``p[i]`` the product of the singular values but the i-th, so a singular matrix (whose
    inverse does not exist) has its gradient too."""
    xp = array_module(a)
    u, s, vh = xp.linalg.svd(a)
    n = s.shape[-1]
    others = xp.where(xp.eye(n, dtype=bool), xp.ones_like(s)[..., None, :], s[..., None, :])
    p = xp.prod(others, axis=-1)
    signs = xp.linalg.det(u) * xp.linalg.det(vh)
    adjugate_t = signs[..., None, None] * ((u * p[..., None, :]) @ vh)
    return xp.asarray(g)[..., None, None] * adjugate_t


def sum_to(a: Any, shape: Any) -> Any:
    """Sum ``a`` over leading axes and over axes where ``shape`` has 1, giving ``shape``; a
    ``shape`` with more axes than ``a`` has leading 1s (the value of ``h[t] = row`` with ``row``
    of shape (1, H): numpy drops them)."""
    shape = _shape(shape)
    xp = array_module(a)
    a = xp.asarray(a)
    if a.shape == shape:
        return a
    lead = a.ndim - len(shape)
    if lead < 0:
        return sum_to(a, shape[-lead:]).reshape(shape)
    axes = tuple(range(lead)) + tuple(lead + i for i, d in enumerate(shape)
                                      if d == 1 and a.shape[lead + i] != 1)
    out = a.sum(axis=axes, keepdims=True) if axes else a
    return out.reshape(shape)


def broadcast_to(a: Any, shape: Any) -> Any:
    """``a`` broadcast to ``shape`` (a read-only view; tensors are immutable); ``a`` itself when
    it has that shape (``x op= v`` checks its result's shape so)."""
    xp = array_module(a)
    shape = _shape(shape)
    if getattr(a, "shape", None) == shape:
        return a
    return xp.broadcast_to(xp.asarray(a), shape)


def select_backward(g: Any, shape: Any, axis: int, index: int) -> Any:
    """Zeros of ``shape`` holding ``g`` at ``index`` along ``axis``."""
    xp = array_module(g)
    g = xp.asarray(g)
    out = xp.zeros(_shape(shape), dtype=g.dtype)
    where = [slice(None)] * out.ndim
    where[axis] = index
    out[tuple(where)] = g
    return out


def slice_backward(g: Any, shape: Any, axis: int, start: Any = None, stop: Any = None,
                   step: Any = None) -> Any:
    """Zeros of ``shape`` holding ``g`` in the slice ``start:stop:step`` along ``axis``."""
    xp = array_module(g)
    g = xp.asarray(g)
    out = xp.zeros(_shape(shape), dtype=g.dtype)
    where = [slice(None)] * out.ndim
    where[axis] = slice(start, stop, step)
    out[tuple(where)] = g
    return out


def dropout_mask(a: Any, p: float = 0.5, training: bool = True) -> Any:
    """The multiplier ``dropout`` applies to ``a``: drawn from the same generator in the same way,
    so ``a * dropout_mask(a, p)`` equals ``dropout(a, p)`` after the same ``manual_seed``."""
    if not 0.0 <= p <= 1.0:
        raise ValueError(f"dropout: probability must be in [0, 1], got {p}")
    if not is_float_array(a):
        raise TypeError(f"dropout needs a floating-point array, got {type(a).__name__}")
    xp = array_module(a)
    if not training or p == 0:
        return xp.ones_like(a)
    if p == 1:
        return xp.zeros_like(a)
    keep = generator(xp).random(a.shape) >= p
    return keep.astype(a.dtype) * (1.0 / (1.0 - p))


def empty(shape: Any, dtype: Any = "float64") -> Any:
    """Uninitialized storage of ``shape``, filled slice by slice with ``write_slot``."""
    return np.empty(_shape(shape), dtype)


def write_slot(buf: Any, axis: int, index: int, value: Any) -> None:
    """Store ``value`` as the slice ``index`` of ``buf`` along ``axis`` (in place)."""
    if axis == 0:
        buf[index] = value
        return
    where = [slice(None)] * buf.ndim
    where[axis] = index
    buf[tuple(where)] = value
