"""``np.diag`` and an ``order=`` that changes no value, as ported numpy code writes them (a
Jacobian ``np.diag(1 - h ** 2)``, ``np.zeros((n, m), order='C')``). Both were refused: np.diag
as an unknown function, ``order`` as an unexpected keyword argument.
"""

from __future__ import annotations

import numpy as np
import pytest

from script import ScriptError, Tensor, script
from tests.gradcheck import check_vjp
from tests.helpers import assert_same


def diagonals(v: Tensor, M: Tensor, k: int):
    return (np.diag(v), np.diag(v, 1), np.diag(v, k=-2), np.diag(M), np.diag(M, 1),
            np.diag(M, -1), np.diag(M, k), np.diag(v, k))


@pytest.mark.parametrize("k", [0, 2, -3, 5, -7])
@pytest.mark.parametrize("dtype", ["float32", "float64", "int64"])
def test_diag_as_numpy(k, dtype):
    v = np.arange(1, 4).astype(dtype)
    M = np.arange(12).reshape(3, 4).astype(dtype)
    for got, want in zip(script(diagonals)(v, M, k), diagonals(v, M, k)):
        assert got.shape == want.shape and got.dtype == want.dtype
        assert_same(got, want)


def test_diag_gradients():
    r = np.random.default_rng(0)
    check_vjp(script(diagonals), (r.standard_normal(3), r.standard_normal((3, 4)), 1))


def jacobian_step(h: Tensor, W: Tensor):
    return np.diag(1 - h ** 2) @ W


def test_diag_of_a_tanh_derivative():
    r = np.random.default_rng(1)
    h, W = np.tanh(r.standard_normal(4)), r.standard_normal((4, 4))
    assert_same(script(jacobian_step)(h, W), jacobian_step(h, W))
    check_vjp(script(jacobian_step), (h, W))


def diag_of(x: Tensor):
    return np.diag(x)


def test_diag_of_another_rank_raises_numpys_error():
    with pytest.raises(ValueError, match="Input must be 1- or 2-d"):
        script(diag_of)(np.ones((2, 2, 2)))


def ordered(x: Tensor):
    return (np.zeros((2, 3), order="C"), np.ones(2, order="C"), np.ones_like(x, order="K"),
            np.zeros_like(x, order="A"), np.full_like(x, 2.0, order="C"), x.copy(order="C"),
            x.reshape((-1,), order="C"), x.flatten(order="C"), x.astype(np.float32, order="K"))


def fortran(x: Tensor):
    return x.reshape((-1,), order="F")


def test_orders_that_change_no_value():
    x = np.arange(6.0).reshape(2, 3)
    for got, want in zip(script(ordered)(x), ordered(x)):
        assert got.dtype == want.dtype
        assert_same(got, want)
    with pytest.raises(ScriptError, match="Fortran order is not supported"):
        script(fortran)(x)


def diag_of_made_arrays(n: int, k: int):
    return np.diag(np.ones(3)), np.diag(np.arange(3.0), k), np.diag(np.ones(n)[:0], k)


@pytest.mark.parametrize("k", [0, 2, -1])
def test_diag_of_arrays_whose_rank_is_known(k):
    """A 1-D array of known rank compiled only the 1-D case (the 2-D one was typed too, and
    refused); an empty one with k != 0 is |k| x |k| zeros."""
    for got, want in zip(script(diag_of_made_arrays)(3, k), diag_of_made_arrays(3, k)):
        assert got.shape == want.shape
        assert_same(got, want)
