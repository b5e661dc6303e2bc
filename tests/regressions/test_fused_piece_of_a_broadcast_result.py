"""A piece (``chunk``/``split``) of a fused elementwise result, one of whose operands broadcasts
along the cut axis: the operand is read whole there, at its own offset.

The slow fuzzer found ``ops.chunk(k - x[1:2, 0:1], 4, 0)[2]`` computed with ``x[2:3, 0:1]``'s
neighbourhood: the chunk's row offset was applied to the (1, 1) operand as well, because the
fuser dropped a view only where the *group input* (here ``x``, 2 rows) was size 1, not where the
operand the view passes through broadcasts. Values and gradients were wrong.
"""

import numpy as np
import pytest

from script import Tensor, ops, script
from tests.gradcheck import check_vjp


def third_piece(x: Tensor, k: Tensor) -> Tensor:
    g7, g8, g9, g10 = ops.chunk(k - x[1:2, 0:1], 4, 0)
    return np.tanh(g9) + g10


def split_columns(x: Tensor, k: Tensor) -> Tensor:
    a, b = np.split(k * x[1:2, 2:3] + x[0:1, :], 2, 1)
    return np.tanh(b) * a


def mean_of_a_piece(x: Tensor) -> Tensor:
    g7, g8, g9, g10 = ops.chunk(np.full((8, 4), 3.0) - x[1:2, 0:1], 4, 0)
    return np.tanh(g9).mean()


@pytest.mark.parametrize("fn", [third_piece, split_columns])
@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_compiled_equals_numpy(fn, dtype):
    r = np.random.default_rng(0)
    x, k = r.standard_normal((2, 4)).astype(dtype), r.standard_normal((8, 4)).astype(dtype)
    tol = 1e-6 if dtype == np.float32 else 1e-12
    np.testing.assert_allclose(script(fn)(x, k), fn(x, k), rtol=tol, atol=tol)


def test_gradients_equal_finite_differences():
    r = np.random.default_rng(1)
    check_vjp(script(mean_of_a_piece), (r.standard_normal((2, 4)),))
    check_vjp(script(third_piece), (r.standard_normal((2, 4)), r.standard_normal((8, 4))))
