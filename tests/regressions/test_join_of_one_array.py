"""np.concatenate / np.stack / np.hstack / np.vstack of one array join its items, as numpy
iterates it (a port's ``np.concatenate(y_heads, axis=-1)`` over an array of heads). Before,
the array was refused ("argument 'tensors' must be a list or tuple of Tensors").
"""

from __future__ import annotations

import numpy as np

from script import Tensor, script
from tests.gradcheck import check_vjp
from tests.helpers import assert_same


def joins(y: Tensor, m: Tensor):
    return (np.concatenate(y, axis=-1), np.concatenate(y), np.stack(y), np.stack(y, axis=1),
            np.hstack(y), np.vstack(y), np.hstack(m), np.vstack(m), np.concatenate(m))


def test_joins_of_one_array():
    r = np.random.default_rng(0)
    y, m = r.standard_normal((3, 2, 4)), r.standard_normal((3, 5))
    for got, want in zip(script(joins)(y, m), joins(y, m)):
        assert got.shape == want.shape
        assert_same(got, want)
    check_vjp(script(joins), (y, m))
