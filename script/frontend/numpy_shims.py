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


def _pad_widths(pad_width, n):
    if isinstance(pad_width, int):
        return [(pad_width, pad_width) for _ in range(n)]
    if isinstance(pad_width[0], int):
        if len(pad_width) == 1:
            return [(pad_width[0], pad_width[0]) for _ in range(n)]
        if len(pad_width) != 2:
            raise ValueError("np.pad(): pad_width of ints is one int or a (before, after) pair")
        return [(pad_width[0], pad_width[1]) for _ in range(n)]
    if len(pad_width) == 1:
        return [(pad_width[0][0], pad_width[0][1]) for _ in range(n)]
    if len(pad_width) != n:
        raise ValueError(f"np.pad(): pad_width has {len(pad_width)} pairs for an array of "
                         f"dimension {n}")
    return [(p[0], p[1]) for p in pad_width]


def pad(array, pad_width, mode="constant", constant_values=0):
    if mode != "constant" and mode != "edge":
        raise ValueError("np.pad(): only mode='constant' and mode='edge' are supported")
    out = np.asarray(array)
    if mode == "constant" and isinstance(constant_values, float) and \
            not (out.dtype == np.float32 or out.dtype == np.float64 or out.dtype == np.float16):
        if constant_values != constant_values:
            raise ValueError("np.pad(): cannot convert float NaN to integer")
        if constant_values == np.inf or constant_values == -np.inf:
            raise OverflowError("np.pad(): cannot convert float infinity to integer")
    widths = _pad_widths(pad_width, out.ndim)
    for k in range(out.ndim):
        out = _pad_axis(out, k, widths[k][0], widths[k][1], mode, constant_values)
    return out


def _pad_axis(out, k, before, after, mode, constant_values):
    if before < 0 or after < 0:
        raise ValueError("np.pad(): index can't contain negative values")
    if before == 0 and after == 0:
        return out
    front = np.moveaxis(out, k, 0)
    n = front.shape[0]
    if n == 0:
        raise ValueError("np.pad(): padding an axis of length 0 is not supported here")
    first, last = front[:1], front[n - 1:]
    if mode == "constant":
        first = np.full_like(first, constant_values)
        last = first
    front = np.concatenate((np.broadcast_to(first, (before,) + first.shape[1:]), front,
                            np.broadcast_to(last, (after,) + last.shape[1:])))
    return np.moveaxis(front, 0, k)


def cumprod(a, axis=None, dtype=None):
    a = np.asarray(a)
    if dtype is not None:
        a = a.astype(dtype)
    elif a.dtype == np.bool_ or a.dtype == np.int8 or a.dtype == np.int16 or \
            a.dtype == np.int32:
        a = a.astype(np.int64)  # (numpy's accumulating dtype of small ints)
    elif a.dtype == np.uint8 or a.dtype == np.uint16 or a.dtype == np.uint32:
        a = a.astype(np.uint64)
    if axis is None or a.ndim == 0:  # (numpy's cumprod of a 0-d array: one item along axis 0)
        a = np.ravel(a)
    if axis is None:
        axis = 0
    if not -a.ndim <= axis < a.ndim:
        raise ValueError(f"np.cumprod(): axis {axis} is out of bounds for an array of "
                         f"dimension {a.ndim}")
    moved = np.moveaxis(a, axis, 0)
    n = moved.shape[0]
    if n == 0:
        return a * 1
    total = moved[0]
    parts = [total]
    for i in range(1, n):
        total = total * moved[i]
        parts.append(total)
    return np.moveaxis(np.stack(parts), 0, axis)


def nan_to_num(x, copy=True, nan=0.0, posinf=None, neginf=None):
    x = np.asarray(x)
    if not (x.dtype == np.float32 or x.dtype == np.float64 or x.dtype == np.float16):
        return np.copy(x) if copy else x  # (ints and bools hold no nan)
    big = 3.4028234663852886e38 if x.dtype == np.float32 else 1.7976931348623157e308
    if x.dtype == np.float16:
        big = 65504.0
    high = big if posinf is None else posinf
    low = -big if neginf is None else neginf
    found = np.where(np.isnan(x), nan, np.where(x == np.inf, high,
                                                   np.where(x == -np.inf, low, x)))
    return found.astype(x.dtype)


def nansum(a, axis=None, keepdims=False):
    a = np.asarray(a)
    return np.sum(np.where(np.isnan(a), 0, a), axis=axis, keepdims=keepdims)


def nanmean(a, axis=None, keepdims=False):
    a = np.asarray(a)
    if not (a.dtype == np.float32 or a.dtype == np.float64 or a.dtype == np.float16):
        return np.mean(a, axis=axis, keepdims=keepdims)  # (no nan in ints and bools)
    kept = ~np.isnan(a)
    total = np.sum(np.where(kept, a, 0), axis=axis, keepdims=keepdims)
    return (total / np.sum(kept, axis=axis, keepdims=keepdims)).astype(a.dtype)  # (numpy's
    # division by the count: in float64, then the array's dtype)


def average(a, axis=None, weights=None, returned=False, keepdims=False):
    a = np.asarray(a)
    if returned:
        raise ValueError("np.average(): returned=True is not supported here: compute the sum "
                         "of the weights beside it")
    if weights is None:
        return np.mean(a, axis=axis, keepdims=keepdims)
    w = np.asarray(weights)
    same = w.ndim == a.ndim
    if same:
        for k in range(a.ndim):
            if w.shape[k] != a.shape[k]:
                same = False
    if not same:
        if axis is None:
            raise TypeError("np.average(): axis must be specified when shapes of a and "
                            "weights differ")
        if w.ndim != 1:
            raise TypeError("np.average(): 1D weights expected when shapes of a and weights "
                            "differ")
        if w.shape[0] != a.shape[axis]:
            raise ValueError("np.average(): length of weights not compatible with specified "
                             "axis")
        w = np.moveaxis(np.broadcast_to(w, a.shape[:axis % a.ndim] + a.shape[axis % a.ndim + 1:]
                                     + (w.shape[0],)), -1, axis)
    scale = np.sum(w, axis=axis, keepdims=keepdims)
    if np.any(scale == 0.0):
        raise ZeroDivisionError("np.average(): weights sum to zero, can't be normalized")
    return np.sum(a * w, axis=axis, keepdims=keepdims) / scale


def array_split(ary, indices_or_sections, axis=0):
    ary = np.asarray(ary)
    n = ary.shape[axis]
    points = [0]
    if isinstance(indices_or_sections, int):
        sections = indices_or_sections
        if sections <= 0:
            raise ValueError("np.array_split(): number sections must be larger than 0.")
        each, extras = n // sections, n % sections
        for k in range(sections):
            points.append(points[k] + (each + 1 if k < extras else each))
    else:
        for i in indices_or_sections:
            points.append(i)
        points.append(n)
    moved = np.moveaxis(ary, axis, 0)
    return [np.moveaxis(moved[points[k]:points[k + 1]], 0, axis) for k in range(len(points) - 1)]


def kron(a, b):
    a, b = np.asarray(a), np.asarray(b)
    if a.ndim > 2 or b.ndim > 2:
        raise ValueError("np.kron(): arrays of more than 2 dimensions are not supported here")
    if a.ndim == 0 and b.ndim == 0:
        return a * b
    if a.ndim <= 1 and b.ndim <= 1:
        return np.ravel(np.ravel(a)[:, None] * np.ravel(b)[None, :])
    a2, b2 = np.atleast_2d(a), np.atleast_2d(b)
    p, q = a2.shape
    r, s = b2.shape
    return (a2[:, None, :, None] * b2[None, :, None, :]).reshape(p * r, q * s)


def cov(m, y=None, rowvar=True, bias=False, ddof=None):
    m = np.asarray(m)
    x = np.atleast_2d(m)
    if x.dtype != np.float64:
        x = x.astype(np.float64)
    if not rowvar and m.ndim != 1:  # (numpy's: a 2-D array of one row is transposed too)
        x = x.T
    if y is not None:
        y = np.asarray(y)
        other = np.atleast_2d(y).astype(np.float64)
        if not rowvar and y.ndim != 1:
            other = other.T
        x = np.concatenate((x, other), axis=0)
    if ddof is None:
        ddof = 0 if bias else 1
    fact = float(x.shape[1] - ddof)
    if fact <= 0.0:  # (numpy warns and divides by zero)
        fact = 0.0
    centered = x - np.mean(x, axis=1, keepdims=True)
    c = (centered @ centered.T) / fact
    if c.shape[0] == 1:
        return np.squeeze(c)  # (numpy's 0-d array)
    return c


def corrcoef(x, y=None, rowvar=True):
    c = cov(x, y, rowvar)
    if c.ndim == 0:
        return c / c
    d = np.sqrt(np.diag(c))
    return np.clip(c / d[:, None] / d[None, :], -1, 1)


SHIMS = {name: globals()[name] for name in (
    "count_nonzero", "ptp", "append",
    "take_along_axis", "heaviside", "fmax", "fmin", "convolve", "vdot", "pad",
    "cumprod", "nan_to_num", "nansum", "nanmean", "average", "array_split", "kron", "cov",
    "corrcoef")}
"""numpy function name -> the function written here."""
