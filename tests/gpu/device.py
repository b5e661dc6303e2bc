"""What the GPU tests share: whether a GPU is here, moving arguments to it, and comparing a
result on it with numpy's."""

from __future__ import annotations

import copy
from typing import Any

import numpy as np
import pytest


def gpu_reason() -> str | None:
    """Why no GPU is visible to CuPy, or None when one is."""
    try:
        import cupy
        if cupy.cuda.runtime.getDeviceCount() > 0:
            return None
    except Exception as e:  # no CuPy, no driver, no device
        return f"no CUDA device visible to CuPy ({type(e).__name__})"
    return "no CUDA device visible to CuPy"


GPU = [pytest.mark.gpu, pytest.mark.skipif(gpu_reason() is not None, reason=gpu_reason() or "")]
"""The marks of a test that needs a GPU (``pytestmark = GPU``)."""


def gpu(fn: Any) -> Any:
    """Mark one test as needing a GPU."""
    for mark in reversed(GPU):
        fn = mark(fn)
    return fn


def to_device(value: Any) -> Any:
    """numpy arrays as CuPy arrays, through tuples, lists, dicts and plain objects' attributes
    (an object is copied, not changed)."""
    import cupy
    if isinstance(value, np.ndarray):
        return cupy.asarray(value)
    if isinstance(value, (tuple, list)):
        return type(value)(to_device(v) for v in value)
    if isinstance(value, dict):
        return {k: to_device(v) for k, v in value.items()}
    if hasattr(value, "__dict__") and not isinstance(value, type):
        moved = copy.copy(value)
        for k, v in vars(value).items():
            setattr(moved, k, to_device(v))
        return moved
    return value


def assert_device_equal(got: Any, want: Any, rtol: float, atol: float,
                        where: str = "result") -> None:
    """``got`` (from a call on CuPy arrays) has ``want``'s structure (numpy's), a CuPy array
    where ``want`` has an array of one or more axes, and the same dtypes, shapes and values."""
    import cupy
    if isinstance(want, (tuple, list)):
        assert isinstance(got, (tuple, list)) and len(got) == len(want), where
        for k, (g, w) in enumerate(zip(got, want)):
            assert_device_equal(g, w, rtol, atol, f"{where}[{k}]")
        return
    if isinstance(want, dict):
        assert isinstance(got, dict) and sorted(got) == sorted(want), where
        for key in want:
            assert_device_equal(got[key], want[key], rtol, atol, f"{where}[{key!r}]")
        return
    if want is None or isinstance(want, (bool, int, str)) and not isinstance(want, np.generic):
        if isinstance(got, cupy.ndarray):
            got = got.item()
        assert got == want, f"{where}: {got!r} != {want!r}"
        return
    w = np.asarray(want)
    if w.ndim > 0:
        assert isinstance(got, cupy.ndarray), f"{where}: a {type(got).__name__} for an array"
    g = cupy.asnumpy(got) if isinstance(got, cupy.ndarray) else np.asarray(got)
    assert g.shape == w.shape and g.dtype == w.dtype, (where, g.shape, g.dtype, w.shape, w.dtype)
    if w.dtype.kind in "fc":
        np.testing.assert_allclose(g, w, rtol=rtol, atol=atol, equal_nan=True, err_msg=where)
    else:
        np.testing.assert_array_equal(g, w, err_msg=where)
