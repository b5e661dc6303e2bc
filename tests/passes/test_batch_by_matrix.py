"""A batch of matrices times one matrix (``canonicalize`` rewrites it to one 2-D product): equal
to eager numpy for every dtype, layout and empty size, gradients equal finite differences, and a
mismatched inner size is a SignatureError."""

from __future__ import annotations

import numpy as np
import pytest

from script import SignatureError, Tensor, script
from tests.gradcheck import check_vjp
from tests.helpers import assert_same, rand, rng


def batch_times_matrix(a: Tensor, w: Tensor) -> Tensor:
    return a @ w


def _transposed(r):
    return rand(r, (4, 3, 2)).transpose(2, 1, 0), rand(r, (4, 5))


MATMUL_CASES = {
    "3d": lambda r: (rand(r, (2, 3, 4)), rand(r, (4, 5))),
    "4d": lambda r: (rand(r, (2, 2, 3, 4)), rand(r, (4, 5))),
    "1d-right": lambda r: (rand(r, (2, 3, 4)), rand(r, (4,))),
    "float32-by-float64": lambda r: (rand(r, (2, 3, 4)).astype(np.float32), rand(r, (4, 5))),
    "float32": lambda r: (rand(r, (2, 3, 4)).astype(np.float32),
                          rand(r, (4, 5)).astype(np.float32)),
    "int": lambda r: (np.arange(24).reshape(2, 3, 4), np.arange(20).reshape(4, 5)),
    "transposed": _transposed,
    "fortran-weight": lambda r: (rand(r, (2, 3, 4)), np.asfortranarray(rand(r, (4, 5)))),
    "empty-batch": lambda r: (rand(r, (0, 3, 4)), rand(r, (4, 5))),
    "empty-rows": lambda r: (rand(r, (2, 0, 4)), rand(r, (4, 5))),
    "empty-columns": lambda r: (rand(r, (2, 3, 4)), np.zeros((4, 0))),
    "empty-inner": lambda r: (np.zeros((2, 3, 0)), np.zeros((0, 4))),
}


@pytest.mark.parametrize("name", MATMUL_CASES)
def test_batch_times_matrix_equals_eager(name):
    a, w = MATMUL_CASES[name](rng(5))
    got = script(batch_times_matrix)(a, w)
    tol = 1e-5 if got.dtype == np.float32 else 1e-12
    assert_same(got, batch_times_matrix(a, w), rtol=tol, atol=tol)


@pytest.mark.parametrize("name", ["3d", "4d", "1d-right", "transposed", "empty-batch",
                                  "empty-columns", "empty-inner"])
def test_batch_times_matrix_gradients(name):
    check_vjp(batch_times_matrix, MATMUL_CASES[name](rng(6)))


def test_batch_times_matrix_of_other_inner_size_is_a_signature_error():
    with pytest.raises(SignatureError, match="inner dimensions differ"):
        script(batch_times_matrix)(np.ones((2, 3, 4)), np.ones((5, 5)))
