"""Eager memory-layout ops (declared in ``ir/ops/layout.py``)."""

from __future__ import annotations

from typing import Any

import numpy as np

from script.ops._impl_base import array_module


def contiguous(a: Any) -> Any:
    """``a`` with C-contiguous storage; ``a`` itself when it already has it (numpy's
    ``ascontiguousarray``: a 0-d array becomes a view of shape (1,))."""
    if a.ndim == 0:
        return a.reshape(1)
    if a.flags.c_contiguous:
        return a
    if type(a) is np.ndarray and a.ndim == 2 and a.flags.f_contiguous and \
            a.size >= TRANSPOSE_BLOCKED_MIN:
        return _transposed_copy(a)
    return array_module(a).ascontiguousarray(a)


TRANSPOSE_BLOCKED_MIN = 1 << 14
"""A transposed matrix (``w.T`` of a C-ordered ``w``) of this many items or more is copied
``TRANSPOSE_BLOCK`` columns at a time (``_transposed_copy``)."""
TRANSPOSE_BLOCK = 32


def _transposed_copy(a: np.ndarray) -> np.ndarray:
    """A C-ordered copy of the F-ordered matrix ``a``, ``TRANSPOSE_BLOCK`` of its columns (rows
    of its storage, one block of memory) at a time: numpy's own copy walks the destination's rows,
    each read from items a whole storage row apart, and for a (512, 2048) float32 ``w_hh.T`` (an
    LSTM's recurrent weight, copied once a call) took 7.4 ms against 0.8 ms in blocks (4.7
    against 0.9 for (2048, 512), 29 against 4.0 for (4096, 1024); float64 alike; equal below
    about 16K items)."""
    out = np.empty(a.shape, a.dtype)
    step = TRANSPOSE_BLOCK
    for j in range(0, a.shape[1], step):
        out[:, j:j + step] = a[:, j:j + step]
    return out


def detach(a: Any) -> Any:
    """``a`` itself; differentiation stops here (its gradient is zero)."""
    return a


def copy(a: Any) -> Any:
    """A new array holding ``a``'s values."""
    return a.copy()
