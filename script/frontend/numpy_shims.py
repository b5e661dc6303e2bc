"""numpy functions written in the language itself: each is a plain function over numpy that the
compiler inlines where a program calls its numpy namesake, typed by the call, as it inlines a
program's own helpers. Each gives numpy's values and dtypes, and its gradients follow from the
ops it is made of.

``np.broadcast_to`` gives a new array where numpy gives a read-only view: the values are the
same, and a write into the result (numpy's ValueError) is not refused.
"""

from __future__ import annotations

import numpy as np


def count_nonzero(a, axis=None, keepdims=False):
    return np.sum(a != 0, axis=axis, keepdims=keepdims)


def ptp(a, axis=None, keepdims=False):
    return np.max(a, axis=axis, keepdims=keepdims) - np.min(a, axis=axis, keepdims=keepdims)


def append(arr, values, axis=None):
    if axis is None:
        return np.concatenate((np.ravel(arr), np.ravel(values)))
    return np.concatenate((arr, values), axis=axis)


def broadcast_to(array, shape):
    ones = np.ones(shape, dtype=np.asarray(array).dtype)
    out = array * ones
    if out.ndim != ones.ndim or np.any(np.asarray(out.shape) != np.asarray(ones.shape)):
        raise ValueError("np.broadcast_to(): the array cannot be broadcast to the shape")
    return out


def take_along_axis(arr, indices, axis):
    if axis is None:
        return np.ravel(arr)[indices]
    k = axis % arr.ndim
    n = arr.shape[k]
    # the indices broadcast over the array's other axes (not the array over theirs)
    at = indices + np.zeros_like(np.sum(arr, axis=k, keepdims=True), dtype=indices.dtype)
    if at.ndim != arr.ndim:
        raise ValueError("np.take_along_axis(): indices of another number of axes")
    wider = np.asarray(at.shape) - np.asarray(arr.shape)
    wider[k] = 0
    if np.any(wider):
        raise ValueError("np.take_along_axis(): indices larger than the array along another "
                         "axis are not supported here")
    if np.any((at < -n) | (at >= n)):
        raise IndexError("np.take_along_axis(): an index is out of bounds")
    at = np.where(at < 0, at + n, at)
    outer = int(np.prod(arr.shape[:k]))
    inner = int(np.prod(arr.shape[k + 1:]))
    flat = (np.arange(outer)[:, None, None] * n + at.reshape(outer, at.shape[k], inner)) \
        * inner + np.arange(inner)[None, None, :]
    return np.ravel(arr)[flat].reshape(at.shape)


def heaviside(x1, x2):
    base = np.zeros_like(x1 * 1.0 + x2 * 1.0)  # (numpy's float dtype of the two)
    found = np.where(np.isnan(x1), base + x1,
                     np.where(x1 < 0, base, np.where(x1 > 0, base + 1.0, base + x2)))
    return found * 1  # (numpy's scalar of 0-d inputs: an elementwise op's)


def fmax(x1, x2):
    return np.where(np.isnan(x2) | (x1 >= x2), x1, x2) * 1


def fmin(x1, x2):
    return np.where(np.isnan(x2) | (x1 <= x2), x1, x2) * 1


def convolve(a, v, mode="full"):
    if a.ndim != 1 or v.ndim != 1:
        raise ValueError("np.convolve() takes 1-D arrays")
    if a.shape[0] == 0 or v.shape[0] == 0:
        raise ValueError("np.convolve(): a and v cannot be empty")
    if v.shape[0] > a.shape[0]:  # numpy slides the shorter over the longer
        a, v = v, a
    n, m = a.shape[0], v.shape[0]
    out = np.zeros(n + m - 1, dtype=(a[:1] * v[:1]).dtype)
    for k in range(m):
        out[k:k + n] += v[k] * a
    if mode == "same":
        return out[(m - 1) // 2:(m - 1) // 2 + n]
    if mode == "valid":
        return out[m - 1:n]
    if mode != "full":
        raise ValueError("np.convolve(): mode must be 'full', 'same' or 'valid'")
    return out


def vdot(a, b):
    return np.dot(np.ravel(a), np.ravel(b))


SHIMS = {name: globals()[name] for name in (
    "count_nonzero", "ptp", "append", "broadcast_to",
    "take_along_axis", "heaviside", "fmax", "fmin", "convolve", "vdot")}
"""numpy function name -> the function written here."""
