"""What every eager op shares: choosing numpy or CuPy, Python-scalar results, float inputs, and
the random generators behind ``dropout``."""

from __future__ import annotations

import sys
from types import ModuleType
from typing import Any

import numpy as np


def array_module(*xs: Any) -> ModuleType:
    """``cupy`` when any argument is a ``cupy.ndarray``, else ``numpy``.

    CuPy is never imported here: an argument can only be a CuPy array once the caller has imported
    CuPy, so looking in ``sys.modules`` is enough and keeps numpy-only programs free of it.
    """
    cupy = sys.modules.get("cupy")
    if cupy is None:
        return np
    for x in xs:
        if isinstance(x, cupy.ndarray):
            return cupy
        if isinstance(x, (list, tuple)) and any(isinstance(e, cupy.ndarray) for e in x):
            return cupy
    return np


def python_result(result: Any, *inputs: Any) -> Any:
    """``result`` as a Python scalar when every input is a Python scalar (or None).

    The IR types arithmetic on Python numbers as ``int``/``float``/``bool``, so eager code gives
    the same: ``ops.add(1, 2)`` is ``3``, not ``np.int64(3)``. Any array input keeps numpy's result.
    """
    for x in inputs:  # (np.float64 is a float, but a numpy scalar: numpy's result stays)
        if x is not None and type(x) not in (int, float, bool):
            return result
    item = getattr(result, "item", None)
    return result if item is None else item()


def as_float(a: Any) -> Any:
    """Bool and integer inputs as float64, as numpy's mean/var and the registry's softmax and
    layer_norm rules have them."""
    dtype = getattr(a, "dtype", None)
    if dtype is None:
        return float(a)
    return a if dtype.kind in "fc" else a.astype(np.float64)


def as_ufunc_float(a: Any) -> Any:
    """Bool and integer inputs as the smallest float holding them (bool and int8 -> float16,
    int16 -> float32, int64 -> float64): the dtype numpy's math ufuncs compute in, and what the
    registry infers for tanh, exp, floor, ... (numpy alone keeps integers for floor/ceil)."""
    dtype = getattr(a, "dtype", None)
    if dtype is None:
        return float(a)
    return a if dtype.kind in "fc" else a.astype(np.promote_types(dtype, np.float16))


def is_float_array(a: Any) -> bool:
    dtype = getattr(a, "dtype", None)
    return dtype is not None and dtype.kind == "f"


_seed: int | None = None
_generators: dict[str, Any] = {}


def manual_seed(seed: int | None) -> None:
    """Reseed the generators behind ``ops.dropout`` (numpy's and, when in use, CuPy's), so runs
    are reproducible; ``None`` reseeds from fresh entropy."""
    global _seed
    _seed = seed
    _generators.clear()


def generator(xp: ModuleType) -> Any:
    """The random Generator of array module ``xp`` (created on first use from the seed)."""
    gen = _generators.get(xp.__name__)
    if gen is None:
        gen = xp.random.default_rng(_seed)
        _generators[xp.__name__] = gen
    return gen
