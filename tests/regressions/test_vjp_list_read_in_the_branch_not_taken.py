"""A list item read in the branch an ``if`` did not take still added its gradient: ``vjp`` gave
2 where the gradient is 1 (found by the gradient fuzzer)."""

import numpy as np

from script import Tensor, script
from tests.gradcheck import check_vjp


def read_in_one_branch(x0: Tensor, b: bool) -> Tensor:
    items = [x0]
    y = x0 if b else items[0]
    return y * 1.0


def test_a_list_read_in_the_branch_not_taken_adds_nothing():
    x = np.array([0.5, -1.0, 2.0])
    for b in (True, False):
        check_vjp(script(read_in_one_branch), (x, b))
