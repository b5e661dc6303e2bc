"""Eager memory-layout ops (declared in ``ir/ops/layout.py``)."""

from __future__ import annotations

from typing import Any

from script.ops._impl_base import array_module


def contiguous(a: Any) -> Any:
    """``a`` with C-contiguous storage; ``a`` itself when it already has it (numpy's
    ``ascontiguousarray``: a 0-d array becomes a view of shape (1,))."""
    if a.ndim == 0:
        return a.reshape(1)
    if a.flags.c_contiguous:
        return a
    return array_module(a).ascontiguousarray(a)


def detach(a: Any) -> Any:
    """``a`` itself; differentiation stops here (its gradient is zero)."""
    return a


def copy(a: Any) -> Any:
    """A new array holding ``a``'s values."""
    return a.copy()
