"""CS231n's numerically stable sigmoid writes through boolean masks:
``z[pos_mask] = np.exp(-x[pos_mask])``, ``top[neg_mask] = z[neg_mask]``; it was refused
("boolean mask indexing is not supported"). A write ``a[m] = <elementwise expression of numbers
and arrays read through m>`` with a boolean ``m`` of ``a``'s shape is ``np.where(m, <the
expression over the whole arrays>, a)`` in ``a``'s dtype; other values are refused at the line,
and a mask of another shape is a ValueError when the function runs."""

import numpy as np
import pytest

from script import ScriptError, Tensor, script
from script.errors import SignatureError
from tests.gradcheck import check_vjp


def sigmoid(x: Tensor) -> Tensor:
    pos_mask = (x >= 0)
    neg_mask = (x < 0)
    z = np.zeros_like(x)
    z[pos_mask] = np.exp(-x[pos_mask])
    z[neg_mask] = np.exp(x[neg_mask])
    top = np.ones_like(x)
    top[neg_mask] = z[neg_mask]
    return top / (1 + z)


def clamp_negatives(x: Tensor, floor: float) -> Tensor:
    y = x * 1.0
    y[x < 0] = floor
    m = x > 1
    y[m] = 2.0 * x[m] - 1.0
    return y


def summed_through_the_mask(x: Tensor) -> Tensor:
    m = x > 0
    y = np.zeros_like(x)
    y[m] = np.sum(x[m])
    return y


def other_shape(x: Tensor) -> Tensor:
    m = x[:, 0] > 0
    y = np.zeros_like(x)
    y[m] = 1.0
    return y


def test_masked_writes_equal_numpy():
    x = np.random.default_rng(0).standard_normal((3, 4)) * 3
    for dtype in (np.float32, np.float64):
        xd = x.astype(dtype)
        got, want = script(sigmoid)(xd), sigmoid(xd)
        assert got.dtype == want.dtype
        np.testing.assert_allclose(got, want, rtol=1e-6)
    np.testing.assert_allclose(script(clamp_negatives)(x, -0.5), clamp_negatives(x, -0.5))
    check_vjp(script(sigmoid), (x,))


def test_what_a_mask_write_cannot_follow_is_refused():
    with pytest.raises(ScriptError, match="boolean mask"):
        script(summed_through_the_mask)(np.ones(3))
    with pytest.raises((ScriptError, SignatureError, ValueError),
                       match="boolean mask|do not broadcast"):
        script(other_shape)(np.ones((3, 2)))
