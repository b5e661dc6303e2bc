"""``np.concatenate((x, h))`` (a tuple literal, as most numpy RNN code writes it) was refused
by ``vjp`` ("cannot differentiate np.concatenate of a list whose length or item sizes are not
known") while ``np.concatenate([x, h])`` was differentiated: a tuple literal of arrays given to
an op that takes a sequence of arrays is now the same list literal."""

import numpy as np

from script import Tensor, script
from tests.gradcheck import check_vjp


def cell(x: Tensor, h: Tensor, W: Tensor) -> Tensor:
    return np.tanh(W @ np.concatenate((x, h)))


def columns(a: Tensor, b: Tensor) -> Tensor:
    return np.concatenate((a, b * 2.0), axis=1) ** 2


def test_concatenate_of_a_tuple_literal_has_gradients():
    rng = np.random.default_rng(0)
    x, h, W = rng.standard_normal(3), rng.standard_normal(2), rng.standard_normal((4, 5))
    np.testing.assert_allclose(script(cell)(x, h, W), cell(x, h, W), rtol=1e-12)
    check_vjp(script(cell), (x, h, W))
    check_vjp(script(columns), (rng.standard_normal((2, 3)), rng.standard_normal((2, 2))))
