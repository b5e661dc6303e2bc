"""``for t in np.arange(T)`` gave ``t`` as a 0-d array, which the compiler then refused as an
index of a list (``x[t]``) and as an argument of ``max`` — numpy yields integer scalars there,
which index and count as ints (Denny Britz's RNN tutorial: ``s[t] = np.tanh(U[:, x[t]] +
W.dot(s[t-1]))`` and ``np.arange(max(0, t - k), t + 1)[::-1]``)."""

from typing import List

import numpy as np

from script import Tensor, script
from tests.gradcheck import check_vjp


def states(x: List[int], U: Tensor, W: Tensor) -> Tensor:
    T = len(x)
    s = np.zeros((T, W.shape[0]))
    for t in np.arange(T):
        s[t] = np.tanh(U[:, x[t]] + W.dot(s[t - 1]))
    return s


def window_sum(v: Tensor, k: int) -> Tensor:
    total = np.zeros(())
    for t in np.arange(v.shape[0])[::-1]:
        for j in np.arange(max(0, t - k), t + 1)[::-1]:
            total = total + v[j] * float(t)
    return total


def test_loop_variable_indexes_a_list_and_an_array():
    rng = np.random.default_rng(0)
    args = ([2, 0, 1, 2], rng.standard_normal((3, 3)), rng.standard_normal((3, 3)) * 0.5)
    np.testing.assert_allclose(script(states)(*args), states(*args), rtol=1e-12)
    check_vjp(script(states), args)


def test_loop_variable_counts_as_an_int():
    v = np.random.default_rng(1).standard_normal(6)
    np.testing.assert_allclose(script(window_sum)(v, 2), window_sum(v, 2), rtol=1e-12)
