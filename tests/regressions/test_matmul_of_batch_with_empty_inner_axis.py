"""``a @ w`` with a batched ``a`` (..., m, k) and a 2-D ``w`` runs as one 2-D matmul of ``a``'s
rows. The rows were written ``reshape(-1, k)``, which numpy cannot resolve when ``k`` is 0
(``cannot reshape array of size 0``): a (2, 3, 0) @ (0, 4) product, which numpy answers with
zeros, was rejected at compile time. The weight's gradient had the same flaw for a 0-size
weight axis when the batch is known only at run time (``reshape(g, (-1, 0))`` raised ValueError).
"""

from __future__ import annotations

import numpy as np

from script import Tensor, script
from tests.gradcheck import check_vjp


def batch_times_matrix(a: Tensor, w: Tensor) -> Tensor:
    return a @ w


def runtime_batch_times_matrix(x: Tensor, w: Tensor, n: int) -> Tensor:
    return x.reshape((n, 3, 4)) @ w


def test_batch_with_empty_inner_axis_times_matrix_is_zeros():
    a, w = np.zeros((2, 3, 0)), np.zeros((0, 4))
    got = script(batch_times_matrix)(a, w)
    want = batch_times_matrix(a, w)
    assert got.shape == want.shape == (2, 3, 4)
    np.testing.assert_array_equal(got, want)


def test_gradient_of_batch_with_empty_inner_axis():
    check_vjp(batch_times_matrix, (np.zeros((2, 3, 0)), np.zeros((0, 4))))


def test_gradient_of_runtime_batch_times_matrix_with_no_columns():
    rng = np.random.default_rng(0)
    check_vjp(runtime_batch_times_matrix, (rng.standard_normal(24), np.zeros((4, 0)), 2))
