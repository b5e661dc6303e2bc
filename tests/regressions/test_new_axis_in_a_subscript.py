"""``mask_flat[:, None]`` (CS231n's ``temporal_softmax_loss``) was refused: "None (a new axis)
in a subscript is not supported". A ``None`` in a read subscript (without an ellipsis) inserts an
axis of size 1 where it stands, as in numpy."""

import numpy as np

from script import Tensor, script
from tests.gradcheck import check_vjp


def new_axes(x: Tensor, i: int):
    return x[:, None], x[None], x[None, :, None], x[i, None], x[1:, None, 0], x[None, i]


def scaled_rows(x: Tensor, m: Tensor) -> Tensor:
    return x * m[:, None]


def test_none_inserts_an_axis_where_it_stands():
    x = np.arange(12.0).reshape(3, 4)
    for got, want in zip(script(new_axes)(x, 1), new_axes(x, 1)):
        assert got.shape == want.shape
        np.testing.assert_array_equal(got, want)


def test_gradient_through_a_new_axis():
    rng = np.random.default_rng(0)
    check_vjp(script(scaled_rows), (rng.standard_normal((3, 4)), rng.standard_normal(3)))
