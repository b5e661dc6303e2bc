"""A numpy function of Python numbers among which a bool (``np.log(label != previous_label)``
in a CTC recursion) runs numpy's bool loop, as numpy does on Python scalars: ``np.log(True)``
is a float16 (so ``x + np.log(True)`` keeps float32 ``x`` float32), ``np.add(True, True)`` is
``True``. Before, the op ran on Python's bool, an int: a float64 (``x + np.log(True)`` became
float64) and 2.

And ``np.logaddexp(-inf, -inf)``'s gradient was nan: the branch not taken where both sides
are equal computed ``-inf - -inf``, and its zero gradient times that nan was nan.
"""

from __future__ import annotations

import numpy as np

from script import Tensor, script, value_and_grad
from tests.helpers import assert_same


def bool_ufuncs(x: Tensor, a: int, b: int):
    return (np.log(True), x + np.log(True), np.add(True, True), np.maximum(True, 2),
            np.add(True, 2.5), np.log(3), np.exp(a != b), np.logical_not(True),
            np.multiply(a == b, True), np.log(a != b) + x, np.sqrt(False))


def test_numpy_scalars_of_bools():
    x = np.zeros(2, np.float32)
    for got, want in zip(script(bool_ufuncs)(x, 1, 2), bool_ufuncs(x, 1, 2)):
        assert type(got) is type(want)
        assert np.asarray(got).dtype == np.asarray(want).dtype
        assert_same(got, want)


def unreachable_state(x: Tensor):
    u = -np.inf + x[1]
    w = np.logaddexp(u, -np.inf)
    return np.logaddexp(x[0], w)


def test_logaddexp_of_two_minus_infinities_has_a_finite_gradient():
    x = np.array([0.3, 0.5])
    value, g = value_and_grad(script(unreachable_state))(x)
    assert_same(value, unreachable_state(x))
    assert_same(g, np.array([1.0, 0.0]))
