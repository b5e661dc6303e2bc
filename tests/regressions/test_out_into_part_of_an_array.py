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


def out_into_a_copy(x: Tensor):
    buf = np.zeros((3, 2))
    np.add(x, 1.0, out=buf[[0, 2]])
    return buf


def out_into_an_item(x: Tensor):
    buf = np.zeros(3)
    np.add(x[0], 1.0, out=buf[1])
    return buf


def out_with_a_cast(x: Tensor):
    buf = np.zeros((2, 2), dtype=np.int64)
    np.add(x, 0.5, out=buf[0])
    return buf


def test_out_that_numpy_would_not_write_is_refused():
    """An integer-array index is a copy in numpy (the result would be lost there), an int per
    axis an item (numpy's TypeError), a float result into an int part numpy's same-kind
    TypeError."""
    import pytest

    from script import ScriptError
    x = np.array([1.0, 2.0])
    with pytest.raises(ScriptError, match="numpy indexes a copy there"):
        script(out_into_a_copy)(x)
    with pytest.raises(ScriptError, match="out= must be an array"):
        script(out_into_an_item)(x)
    with pytest.raises(TypeError):
        out_with_a_cast(x)
    with pytest.raises(TypeError, match="same_kind"):
        script(out_with_a_cast)(x)
