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
    nan = x[3] * np.nan
    return max(x[0], x[1], x[2]), min(x[2], x[0]), max(x[0], nan), max(nan, x[0])


def number_and_item(x):
    return max(0, x[1])  # Python: the int 0, or the array's item


def of_a_row(x):
    return max(x[0], x[1])


@pytest.mark.parametrize("dtype", ["float32", "float64"])
def test_values_and_dtypes_are_pythons(dtype):
    x = np.array([0.5, -1.0, 2.0, 40.0], dtype)
    got, want = script(logsumexp)(x), logsumexp(x)
    np.testing.assert_allclose(got, want, rtol=1e-6)
    assert np.asarray(got).dtype == np.asarray(want).dtype == dtype
    got, want = script(extremes)(x), extremes(x)
    for g, w in zip(got, want):
        np.testing.assert_array_equal(g, w)
        assert np.asarray(g).dtype == np.asarray(w).dtype == dtype
    check_vjp(script(logsumexp), (np.array([0.5, -1.0, 2.0, 1.5]),))


def test_arrays_of_more_than_one_item_raise_as_numpy():
    x = np.ones((2, 3))
    with pytest.raises(ValueError):
        of_a_row(x)
    with pytest.raises((ValueError, ScriptError)):
        script(of_a_row)(x)


def test_a_number_among_arrays_is_refused_with_what_to_write():
    with pytest.raises(ScriptError, match=r"max\(\) of a number and an array.*np.maximum"):
        script(number_and_item)(np.arange(3.0))
