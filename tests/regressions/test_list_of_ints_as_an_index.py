"""``o[np.arange(n), y]`` with ``y: List[int]`` was refused ("an index must be an int or an
integer array, not int[]"); numpy reads a list of ints as an integer array, in a read (a gather)
and in a write (a scatter): ``delta_o[np.arange(len(y)), y] -= 1.``."""

from typing import List

import numpy as np

from script import Tensor, script
from tests.gradcheck import check_vjp


def picked_log(o: Tensor, y: List[int]) -> Tensor:
    return np.sum(np.log(o[np.arange(len(y)), y]))


def minus_one_at(o: Tensor, y: List[int]) -> Tensor:
    d = o * 1.0
    d[np.arange(len(y)), y] -= 1.
    return d


def rows(W: Tensor, idx: List[int]) -> Tensor:
    return W[idx] * 2.0


def test_a_list_of_ints_gathers_and_scatters():
    o = np.random.default_rng(0).random((4, 5)) + 0.1
    y = [1, 4, 0, 4]
    np.testing.assert_allclose(script(picked_log)(o, y), picked_log(o, y), rtol=1e-12)
    np.testing.assert_allclose(script(minus_one_at)(o, y), minus_one_at(o, y), rtol=1e-12)
    np.testing.assert_allclose(script(rows)(o, [3, 0, 3]), rows(o, [3, 0, 3]), rtol=1e-12)
    check_vjp(script(picked_log), (o, y))
    check_vjp(script(rows), (o, [3, 0, 3]))
