"""``OpDef.is_view`` had lost its ``@property``: the bound method is always true, so the
storage classes took every tensor op for a view and united its result with all its inputs, a
shape argument (a list of ints) too; the list's items and the array then formed a cycle that
``StorageClasses.unite`` recursed into without end (an internal compiler error while
differentiating a list comprehension read in a loop, whose backward has ``sum_to(g, shape)``)."""

import numpy as np

from script import Tensor, script
from tests.gradcheck import check_vjp


def comprehension_in_a_loop(x: Tensor) -> Tensor:
    y = x
    for _ in range(3):
        parts = [y[k] * 2.0 for k in range(2)]
        y = y * parts[1] + parts[0]
    return y


def test_a_comprehension_read_in_a_loop_is_differentiated():
    check_vjp(script(comprehension_in_a_loop), (np.random.default_rng(0).standard_normal((3, 3)),))



def test_only_view_ops_are_views():
    from ir.registry import lookup
    assert lookup("tensor::mul").is_view is False
    assert lookup("tensor::select").is_view is True
