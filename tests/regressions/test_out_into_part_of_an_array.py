"""``out=`` naming a part of an array (``np.multiply(a, b, out=alpha[0])``, a ported HMM
forward pass filling its first row) writes the result there as ``alpha[0] = ...`` does, and
the call's value is that part. Before, it was refused ("out= that is not a local array name").
"""

from __future__ import annotations

import numpy as np

from script import Tensor, script
from tests.gradcheck import check_vjp
from tests.helpers import assert_same


def rows_by_out(a: Tensor, b: Tensor):
    alpha = np.zeros((3, 4))
    np.multiply(a, b, out=alpha[0])
    np.add(a, alpha[0], out=alpha[1, :])
    np.tanh(alpha[1], out=alpha[2])
    y = np.exp(a, out=alpha[2])
    return alpha, y


def test_out_into_rows():
    r = np.random.default_rng(0)
    a, b = r.standard_normal(4), r.standard_normal(4)
    for got, want in zip(script(rows_by_out)(a, b), rows_by_out(a, b)):
        assert_same(got, want)
    check_vjp(script(rows_by_out), (a, b))
