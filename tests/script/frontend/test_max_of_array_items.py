"""Python's ``max`` / ``min`` of numbers and items of arrays (numpy scalars): ssm's numba-style
logsumexp, ``m = -np.inf; for i in range(N): m = max(m, x[i])``. It was refused ("max() of a
Tensor is not supported"); as Python's, it is the first value unless a later one compares
greater (less), kept as it is."""

import numpy as np
import pytest

from script import ScriptError, script
from tests.gradcheck import check_vjp


def logsumexp(x):
    N = x.shape[0]
    m = -np.inf
    for i in range(N):
        m = max(m, x[i])
    out = 0
    for i in range(N):
        out += np.exp(x[i] - m)
    return m + np.log(out)


def extremes(x):
    return max(x[0], x[1], x[2]), min(x[2], 0.5), max(x[0], np.nan), max(np.nan, x[0])


def of_a_row(x):
    return max(x[0], x[1])


@pytest.mark.parametrize("dtype", ["float32", "float64"])
def test_values_and_dtypes_are_pythons(dtype):
    x = np.array([0.5, -1.0, 2.0, 40.0], dtype)
    got, want = script(logsumexp)(x), logsumexp(x)
    np.testing.assert_allclose(got, want, rtol=1e-6)
    assert np.asarray(got).dtype == np.asarray(want).dtype == dtype
    got, want = script(extremes)(x), extremes(x)
    for g, w in zip(got, want):  # (a Python number the comparison picks is a 0-d array)
        np.testing.assert_array_equal(g, w)
    assert np.asarray(got[0]).dtype == dtype
    check_vjp(script(logsumexp), (np.array([0.5, -1.0, 2.0, 1.5]),))


def test_arrays_of_more_than_one_item_raise_as_numpy():
    x = np.ones((2, 3))
    with pytest.raises(ValueError):
        of_a_row(x)
    with pytest.raises((ValueError, ScriptError)):
        script(of_a_row)(x)
