"""A 0-d integer array where Python or numpy takes an int (``range(n)``, ``np.arange(n)``,
``np.zeros(n)`` for ``n = np.argmax(x)`` or a count ``np.sum(mask)``): its int, as
``operator.index`` reads it. Compiled equals plain numpy."""

import numpy as np
import pytest

from script import Tensor, script
from tests.helpers import assert_same


def arange_of_count(x: Tensor) -> Tensor:
    n = np.sum(x > 0)
    return np.arange(n) * 1.0


def range_of_argmax(x: Tensor) -> Tensor:
    out = np.zeros_like(x)
    for i in range(np.argmax(x)):
        out[i] = x[i] * 2.0
    return out


def zeros_of_argmax(x: Tensor) -> Tensor:
    n = np.argmax(x)
    return np.zeros(n + 1) + x[n]


def rows_up_to(x: Tensor) -> Tensor:
    k = np.argmax(x[:, 0])
    return x[np.arange(k + 1)]


@pytest.mark.parametrize("fn", [arange_of_count, range_of_argmax, zeros_of_argmax])
@pytest.mark.parametrize("values", [[0.5, -1.0, 2.0, 0.1], [3.0, 1.0, -2.0, 0.0]])
def test_integer_arrays_count(fn, values):
    x = np.array(values)
    assert_same(script(fn)(x), fn(x))


def test_integer_array_bounds_an_index():
    x = np.random.default_rng(0).standard_normal((5, 3))
    assert_same(script(rows_up_to)(x), rows_up_to(x))
