"""A fused kernel whose 0-d output is stored into one item of a 1-D buffer (the backward of a
double loop summing ``xi[i, j] = a[i] * A[i, j]``, a port of a numpy attention score loop)
writes into that item in place.

Before, the item was taken as ``buf[i]`` -- for a 1-D buffer a numpy scalar, not a view -- and
handing it to the kernel as its output was an internal error (``'numpy.float64' object does not
support item assignment``) while running the backward.
"""

from __future__ import annotations

import numpy as np

from script import Tensor, script, value_and_grad
from tests.gradcheck import check_vjp
from tests.helpers import assert_same


def double_loop_sum(a: Tensor, A: Tensor):
    xi = np.zeros_like(A)
    s = 0.0
    for i in range(len(A)):
        for j in range(len(A)):
            xi[i, j] = a[i] * A[i, j]
            s += xi[i, j]
    return s


def test_backward_of_a_number_accumulated_over_a_double_loop():
    r = np.random.default_rng(0)
    a, A = r.standard_normal(3), r.standard_normal((3, 3))
    f = script(double_loop_sum)
    assert_same(f(a, A), double_loop_sum(a, A))
    value, (ga, gA) = value_and_grad(f, argnums=(0, 1))(a, A)
    assert_same(value, double_loop_sum(a, A))
    assert_same(ga, A.sum(axis=1))
    assert_same(gA, np.repeat(a[:, None], 3, axis=1))
    check_vjp(f, (a, A))
