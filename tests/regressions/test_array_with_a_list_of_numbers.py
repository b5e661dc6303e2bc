"""Arithmetic between an array and a list or tuple of numbers (pyESN's ``x - teacher_shift``
with ``teacher_shift=[0.1]``): numpy makes the numbers an array, on either side. Before, it was
refused ("unsupported operand types for -: 'Tensor' and 'float[]'").
"""

from __future__ import annotations

from typing import List

import numpy as np

from script import Tensor, script
from tests.gradcheck import check_vjp
from tests.helpers import assert_same


def shifted(x: Tensor, shift: List[float]):
    return x - shift, [0.5] - x, x * (2.0, 3.0), [1, 2] + x, x ** [2], x > [1.5, 0.5]


def test_lists_of_numbers_as_arrays():
    x = np.array([[1.0, 2.0], [3.0, 4.0]])
    for got, want in zip(script(shifted)(x, [0.1, 0.2]), shifted(x, [0.1, 0.2])):
        assert got.dtype == want.dtype
        assert_same(got, want)
    check_vjp(script(shifted), (x, [0.1, 0.2]))
