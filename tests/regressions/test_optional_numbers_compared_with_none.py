"""``v == None`` / ``v != None`` of an Optional number (a ``List[Optional[int]]`` of token ids
with gaps, as a ported decoder tests its input), and an Optional number used as an operand:
Python's values, and Python's TypeError where the number is None. Before, ``X[t] != None`` was
refused ("unsupported operand types for !=: 'int?' and 'NoneType'"), as was ``out + X[t]``.
"""

from __future__ import annotations

from typing import List, Optional

import numpy as np
import pytest

from script import ScriptError, Tensor, script
from tests.helpers import assert_same


def count_present(X: List[Optional[int]], h: Tensor):
    out = h
    for t in range(len(X)):
        if X[t] != None:  # noqa: E711  (as the ported code writes it)
            out = out + X[t]
        if None == X[t]:  # noqa: E711
            out = out - 1
        if X[t] is not None and X[t] > 2:
            out = out * 2
    return out


@pytest.mark.parametrize("X", [[1, None, 3], [None, None], [4], []])
def test_optional_items_compared_with_none(X):
    h = np.zeros(2)
    assert_same(script(count_present)(X, h), count_present(X, h))


def plus(a: Optional[int], x: Tensor):
    return x + a, a == None, a != None  # noqa: E711


def test_none_operand_raises_pythons_type_error():
    x = np.ones(2)
    for got, want in zip(script(plus)(3, x), plus(3, x)):
        assert_same(got, want)
    with pytest.raises(TypeError):
        plus(None, x)
    with pytest.raises(TypeError, match="unsupported operand"):
        script(plus)(None, x)


def numbers(n: int, s: str):
    return n == None, None != s, None == None  # noqa: E711


def test_values_that_are_never_none():
    assert script(numbers)(3, "a") == numbers(3, "a")


def array_equals_none(x: Optional[Tensor]):
    return x != None  # noqa: E711


def test_an_array_compared_with_none_is_refused():
    with pytest.raises(ScriptError, match="compares with None elementwise"):
        script(array_equals_none)(np.ones(2))
