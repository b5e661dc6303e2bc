"""Lists passed at many lengths are keyed and compiled for any length
(``script.runtime.list_lengths``): a cell that keeps each step's activations in a list
attribute and is called once per step (numpy-ml's ``RNNCell.forward``) compiled again at every
call, 1.5 ms a call at 50 steps and 11.5 ms at 1600."""

from __future__ import annotations

from typing import List

import numpy as np

from script import Tensor, script, vjp
from script.runtime.list_lengths import MAX_LENGTHS
from tests.gradcheck import check_vjp


class Cell:
    def __init__(self, n: int):
        self.W = np.random.default_rng(0).standard_normal((n, n)) * 0.1
        self.A = []

    def forward(self, x):
        if len(self.A) == 0:
            self.A.append(np.zeros_like(x))
        a = np.tanh(self.A[-1] @ self.W + x)
        self.A.append(a)
        return a


def weighted(xs: List[Tensor], w: Tensor) -> Tensor:
    total = xs[0] * w
    for k in range(1, len(xs)):
        total = total + xs[k] * w * k
    return np.tanh(total)


def test_a_list_attribute_that_grows_every_call_compiles_a_few_times():
    plain, compiled = Cell(4), Cell(4)
    step = script(Cell.forward)
    x = np.linspace(-1, 1, 12).reshape(3, 4)
    for _ in range(30):
        np.testing.assert_allclose(step(compiled, x), Cell.forward(plain, x), rtol=1e-12)
    assert len(compiled.A) == len(plain.A) == 31
    assert step.compiled_signatures <= MAX_LENGTHS + 2  # (the empty list is one of them)


def test_lists_of_any_length_give_numpys_values_and_gradients():
    rng = np.random.default_rng(1)
    f = script(weighted)
    w = rng.standard_normal(3)
    for n in range(1, 12):
        xs = [rng.standard_normal(3) for _ in range(n)]
        np.testing.assert_allclose(f(xs, w), weighted(xs, w), rtol=1e-12)
    assert f.compiled_signatures <= MAX_LENGTHS + 1
    for n in (2, 9):
        check_vjp(f, ([rng.standard_normal(3) for _ in range(n)], w))
    xs = [rng.standard_normal(3) for _ in range(7)]
    out, back = vjp(f, xs, w)
    grads = back(np.ones(3))
    assert len(grads[0]) == 7


def test_items_of_other_shapes_are_still_keyed_one_by_one():
    f = script(weighted)
    w = np.ones((2, 3))
    for n in range(1, 8):
        f([np.ones((2, 3))] * n, w)
    mixed = [np.ones((2, 3)), np.full((1, 3), 2.0), np.ones((2, 1)) * 3]  # broadcast items
    np.testing.assert_allclose(f(mixed, w), weighted(mixed, w), rtol=1e-12)
    floats32 = [np.ones((2, 3), np.float32)] * 6
    got = f(floats32, w.astype(np.float32))
    assert got.dtype == np.float32
    np.testing.assert_allclose(got, weighted(floats32, w.astype(np.float32)), rtol=1e-6)


def pairs(ps):
    total = 0.0
    for pair in ps:
        total = total + pair[0].sum() + 2 * pair[1].sum()
    return total


def test_lists_of_lists_stay_keyed_item_by_item():
    """A list of lists of arrays of different shapes is taken array by array: keyed whatever
    its length, a length-5 layout had served every later length."""
    f = script(pairs)
    for n in range(1, 9):
        ps = [[np.full(3, float(k)), np.full(4, float(k))] for k in range(n)]
        assert f(ps) == pairs(ps)
