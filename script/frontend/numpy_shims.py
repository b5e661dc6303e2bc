"""numpy functions written in the language itself: each is a plain function over numpy that the
compiler inlines where a program calls its numpy namesake, typed by the call, as it inlines a
program's own helpers. Each gives numpy's values and dtypes, and its gradients follow from the
ops it is made of.
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


def take_along_axis(arr, indices, axis):
    if axis is None:
        if indices.ndim != 1:
            raise ValueError("np.take_along_axis(): with axis=None the indices must be 1-D")
        return np.ravel(arr)[indices]
    if arr.ndim == 0 or indices.ndim != arr.ndim:
        raise ValueError("np.take_along_axis(): the indices and the array must have the same "
                         "number of dimensions (at least one)")
    if not -arr.ndim <= axis < arr.ndim:
        raise ValueError(f"np.take_along_axis(): axis {axis} is out of bounds for an array of "
                         f"dimension {arr.ndim}")
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
                     np.where(x1 < 0, base, np.where(x1 > 0, base + 1.0, x2 * 1.0)))
    return np.maximum(found, found)  # (numpy's scalar of 0-d inputs: a ufunc's)


def fmax(x1, x2):
    found = np.where(np.isnan(x2) | (x1 >= x2), x1, x2)
    return np.maximum(found, found)  # (numpy's scalar of 0-d inputs: a ufunc's)


def fmin(x1, x2):
    found = np.where(np.isnan(x2) | (x1 <= x2), x1, x2)
    return np.maximum(found, found)


def convolve(a, v, mode="full"):
    a, v = np.atleast_1d(np.asarray(a)), np.atleast_1d(np.asarray(v))  # (numbers, lists)
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
    "count_nonzero", "ptp", "append",
    "take_along_axis", "heaviside", "fmax", "fmin", "convolve", "vdot")}
"""numpy function name -> the function written here."""
