"""Eager reductions, linear algebra and neural-network ops of ``script.ops``."""

from __future__ import annotations

from typing import Any

import numpy as np

from script.ops._impl_base import array_module, as_float, generator, is_float_array


def _axes(axis: Any) -> Any:
    return tuple(axis) if isinstance(axis, list) else axis


def _sum_dtype(a: Any) -> Any:
    """numpy's: int64 for bools and signed integers, uint64 for unsigned ones."""
    return np.int64 if a.dtype.kind in "bi" else np.uint64 if a.dtype.kind == "u" else None


# -- reductions ---------------------------------------------------------------------------------
# The array's methods: the same reductions as numpy's functions, without their dispatch (about
# 3 us of a 7 us reduction of a small array).


def sum(a: Any, axis: Any = None, keepdims: bool = False) -> Any:  # noqa: A001
    """Sum over axes (all when None); bools and signed integers sum to int64, unsigned ones
    to uint64."""
    return a.sum(axis=_axes(axis), dtype=_sum_dtype(a), keepdims=keepdims)


def prod(a: Any, axis: Any = None, keepdims: bool = False) -> Any:
    """Product over axes (all when None), of the types a sum has."""
    return a.prod(axis=_axes(axis), dtype=_sum_dtype(a), keepdims=keepdims)


def mean(a: Any, axis: Any = None, keepdims: bool = False) -> Any:
    """Arithmetic mean over axes; bools and integers give float64."""
    return as_float(a).mean(axis=_axes(axis), keepdims=keepdims)


def var(a: Any, axis: Any = None, ddof: int = 0, keepdims: bool = False) -> Any:
    """Variance over axes, dividing by n - ddof."""
    return as_float(a).var(axis=_axes(axis), ddof=ddof, keepdims=keepdims)


def std(a: Any, axis: Any = None, ddof: int = 0, keepdims: bool = False) -> Any:
    """Standard deviation over axes, dividing by n - ddof."""
    return as_float(a).std(axis=_axes(axis), ddof=ddof, keepdims=keepdims)


def all(a: Any, axis: Any = None, keepdims: bool = False) -> Any:  # noqa: A001
    """Whether every element over axes (all when None) is true."""
    return a.all(axis=_axes(axis), keepdims=keepdims)


def any(a: Any, axis: Any = None, keepdims: bool = False) -> Any:  # noqa: A001
    """Whether some element over axes (all when None) is true."""
    return a.any(axis=_axes(axis), keepdims=keepdims)


def amax(a: Any, axis: Any = None, keepdims: bool = False) -> Any:
    """Maximum over axes."""
    return a.max(axis=_axes(axis), keepdims=keepdims)


def amin(a: Any, axis: Any = None, keepdims: bool = False) -> Any:
    """Minimum over axes."""
    return a.min(axis=_axes(axis), keepdims=keepdims)


def softmax(a: Any, axis: int = -1) -> Any:
    """exp(a) / sum(exp(a)) along an axis; the max is subtracted first so exp never overflows."""
    xp = array_module(a)
    x = as_float(a)
    e = xp.exp(x - x.max(axis=axis, keepdims=True))
    return e / e.sum(axis=axis, keepdims=True)


def log_softmax(a: Any, axis: int = -1) -> Any:
    """a - logsumexp(a) along an axis, computed stably."""
    xp = array_module(a)
    x = as_float(a)
    shifted = x - x.max(axis=axis, keepdims=True)
    return shifted - xp.log(xp.exp(shifted).sum(axis=axis, keepdims=True))


# -- linear algebra -----------------------------------------------------------------------------


def matmul(a: Any, b: Any) -> Any:
    """Matrix product with numpy's 1-D and batch-broadcasting rules."""
    return array_module(a, b).matmul(a, b)


mm = matmul
"""``ops.mm`` is ``ops.matmul`` (torch's spelling)."""


def matmul_sum(*operands: Any) -> Any:
    """``a1 @ b1 + a2 @ b2 + ...`` over the pairs of ``operands``."""
    total = matmul(operands[0], operands[1])
    for a, b in zip(operands[2::2], operands[3::2]):
        total = total + matmul(a, b)
    return total


def linear(x: Any, weight: Any, bias: Any = None) -> Any:
    """x @ weight.T + bias (torch.nn.functional.linear)."""
    y = array_module(x, weight, bias).matmul(x, weight.T)
    return y if bias is None else y + bias


# -- neural-network ops -------------------------------------------------------------------------


def layer_norm(a: Any, weight: Any = None, bias: Any = None, eps: float = 1e-05) -> Any:
    """(a - mean) / sqrt(var + eps) * weight + bias over the last axis (biased variance)."""
    xp = array_module(a, weight, bias)
    x = as_float(a)
    centred = x - x.mean(axis=-1, keepdims=True)
    variance = (centred * centred).mean(axis=-1, keepdims=True)
    y = centred / xp.sqrt(variance + eps)
    if weight is not None:
        y = y * weight
    return y if bias is None else y + bias


def layer_norm_backward(g: Any, a: Any, weight: Any = None, eps: float = 1e-05) -> Any:
    """The gradient of ``layer_norm(a, weight, bias, eps)`` for the output cotangent ``g`` (of
    ``a``'s shape): ``(da, dweight, dbias)``, where with ``xhat = (a - mean) / sqrt(var + eps)``
    ``dweight`` and ``dbias`` are ``g * xhat`` and ``g`` summed over every axis but the last
    (the gradients of a weight and a bias of the last axis' length)."""
    xp = array_module(g, a, weight)
    x = as_float(a)
    centred = x - x.mean(axis=-1, keepdims=True)
    rstd = 1.0 / xp.sqrt((centred * centred).mean(axis=-1, keepdims=True) + eps)
    xhat = centred * rstd
    d = g if weight is None else g * weight
    da = (d - d.mean(axis=-1, keepdims=True)
          - xhat * (d * xhat).mean(axis=-1, keepdims=True)) * rstd
    rows = tuple(range(da.ndim - 1))
    return da, (g * xhat).sum(axis=rows), xp.asarray(g, dtype=da.dtype).sum(axis=rows)


def dropout(a: Any, p: float = 0.5, training: bool = True) -> Any:
    """Zero each element with probability p and scale the rest by 1 / (1 - p) when training
    (inverted dropout, so the expectation is unchanged); the identity otherwise.

    Draws from a module-level generator per array module; ``ops.manual_seed`` makes it repeatable.
    """
    if not 0.0 <= p <= 1.0:
        raise ValueError(f"dropout: probability must be in [0, 1], got {p}")
    if not is_float_array(a):
        raise TypeError(f"dropout needs a floating-point array, got {type(a).__name__}")
    if not training or p == 0:
        return a
    xp = array_module(a)
    if p == 1:
        return xp.zeros_like(a)
    keep = generator(xp).random(a.shape) >= p
    return a * (keep.astype(a.dtype) * (1.0 / (1.0 - p)))


def einsum(subscripts: str, optimize: Any, *operands: Any) -> Any:
    """numpy's Einstein summation of ``operands`` by ``subscripts``, in the order its
    ``optimize`` picks (False: operand by operand, as numpy's default)."""
    xp = array_module(operands[0])
    if optimize is False:
        return xp.einsum(subscripts, *operands)
    return xp.einsum(subscripts, *operands, optimize=optimize)


def tensordot(a: Any, b: Any, axes: Any = 2, scalar: bool = False) -> Any:
    """numpy's tensordot: the sum of products over the paired axes, the free axes of ``a``
    then of ``b``; with ``scalar``, a result without axes is a numpy scalar (np.inner's)."""
    result = array_module(a).tensordot(a, b, axes=axes)
    return result[()] if scalar and result.ndim == 0 else result


def inv(a: Any) -> Any:
    """numpy.linalg.inv: the inverse of a square matrix (of each of a stack)."""
    return array_module(a).linalg.inv(a)


def det(a: Any) -> Any:
    """numpy.linalg.det: the determinant of a square matrix (of each of a stack)."""
    return array_module(a).linalg.det(a)


def slogdet(a: Any) -> tuple:
    """numpy.linalg.slogdet: (sign, log|det|) of a square matrix (of each of a stack)."""
    sign, logabsdet = array_module(a).linalg.slogdet(a)
    return sign, logabsdet


def solve(a: Any, b: Any) -> Any:
    """numpy.linalg.solve: x with ``a @ x == b``."""
    return array_module(a).linalg.solve(a, b)
