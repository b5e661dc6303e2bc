"""Comparing float32 results whose rounding error depends on the order of summation.

A compiled float32 program may add in another order than numpy does (a projection hoisted out
of a loop into one matmul, a fused kernel, BLAS splitting a product over threads), and a
recurrence carries each step's rounding into the next. A fixed tolerance between two float32
results is then a guess that one more step, a larger shape or another BLAS build breaks. The
sound comparison is against the exact answer: evaluate the same function in float64, and require
the compiled result to be about as close to it as plain numpy's own float32 result is.
"""

from __future__ import annotations

from typing import Any, Callable

import numpy as np

FACTOR = 16.0
"""How many times plain float32's error the compiled result may have. Another order of summation
has another rounding error of the same size, but the largest error over thousands of elements
is set by the few worst-conditioned ones, so the ratio of two such maxima spreads: over 30 seeds
of the 20-step (8, 64, 64) LSTM layer it had median 0.93 and maximum 5.8. A wrong computation
is off by orders of magnitude more."""


def _as_float64(value: Any) -> Any:
    if isinstance(value, (tuple, list)):
        return type(value)(_as_float64(v) for v in value)
    if isinstance(value, np.ndarray) and value.dtype == np.float32:
        return value.astype(np.float64)
    return value


def _arrays(value: Any) -> list[np.ndarray]:
    if isinstance(value, (tuple, list)):
        return [a for v in value for a in _arrays(v)]
    return [np.asarray(value)]


def assert_float32_close(got: Any, fn: Callable[..., Any], args: tuple,
                         factor: float = FACTOR) -> None:
    """``got`` (a compiled float32 result of ``fn(*args)``) is within ``factor`` times plain
    float32's error from the float64 evaluation of ``fn`` (max norm, per output), with a floor
    of a few float32 ulps of the output's magnitude."""
    eager = fn(*args)
    exact = fn(*_as_float64(args))
    got_arrays, eager_arrays, exact_arrays = _arrays(got), _arrays(eager), _arrays(exact)
    assert len(got_arrays) == len(exact_arrays)
    for k, (g, e, x) in enumerate(zip(got_arrays, eager_arrays, exact_arrays)):
        assert g.dtype == e.dtype and g.shape == e.shape, f"output {k}: {g.dtype}{g.shape}"
        ulp = float(np.finfo(np.float32).eps) * max(1.0, float(np.abs(x).max(initial=0.0)))
        eager_error = float(np.abs(e.astype(np.float64) - x).max(initial=0.0))
        error = float(np.abs(g.astype(np.float64) - x).max(initial=0.0))
        assert error <= factor * max(eager_error, 4 * ulp), (
            f"output {k}: compiled float32 is {error:.3g} from the float64 result, plain "
            f"float32 {eager_error:.3g}")
