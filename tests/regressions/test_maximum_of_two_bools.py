"""`np.maximum(a, b)` / `np.minimum(a, b)` of two bools is a bool, as numpy computes it.

The type rule said int (Python's arithmetic on bools), so a function annotated to return the
bool was refused and one annotated `-> int` got numpy's bool where its type said int (caught by
the shape/dtype sanitizer).
"""

import numpy as np

from script import script


def larger(a: bool, b: bool) -> bool:
    return np.maximum(a, b)


def smaller_plus_one(a: bool, b: bool) -> int:
    return np.minimum(a, b) + 1


def test_maximum_of_two_bools_is_a_bool():
    f = script(larger)
    for a in (False, True):
        for b in (False, True):
            got = f(a, b)
            assert got == larger(a, b) and isinstance(got, (bool, np.bool_))


def test_minimum_of_two_bools_then_arithmetic_is_an_int():
    f = script(smaller_plus_one)
    assert f(True, True) == smaller_plus_one(True, True) == 2
    assert f(True, False) == 1
