"""A loop over the rows of an array that stops early (``return`` or ``break`` inside it) wrote
the rows' cotangents into a preallocated array slot by slot, and the slots of the rows it never
reached kept whatever memory the array was given: the gradient of ``x`` came out as ``2 + x``
(found by the gradient fuzzer). Such loops now accumulate the row cotangents one by one."""

import numpy as np

from script import Tensor, script
from tests.gradcheck import check_vjp


def return_from_the_first_row(x0: Tensor) -> Tensor:
    for r in np.ones((2, 3)) * x0:
        return r * 2.0
    return x0


def break_on_a_threshold(xs: Tensor, lim: float) -> Tensor:
    acc = np.zeros(3)
    for r in xs:
        if float(acc.sum()) > lim:
            break
        acc = acc + np.tanh(r)
    return acc


def test_return_inside_a_loop_over_rows():
    check_vjp(script(return_from_the_first_row), (np.array([0.1, 0.2, 0.3]),))


def test_break_inside_a_loop_over_rows():
    xs = np.random.default_rng(0).random((4, 3))
    check_vjp(script(break_on_a_threshold), (xs, 1.0))
