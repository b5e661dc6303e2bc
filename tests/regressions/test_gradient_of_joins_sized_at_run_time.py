"""pyESN's ``predict`` could not be differentiated: ``np.vstack([laststate, np.zeros((n, N))])``
joins a 1-D row with a matrix ("np.vstack of arrays whose numbers of axes ... differ"), and
``np.concatenate([states[n, :], inputs[n, :]])`` joins pieces whose sizes come from int
arguments ("sizes along the axis are not known when compiling"). The row is now a 1-row matrix
(numpy's ``atleast_2d``) and the concatenation's gradient is split at the pieces' sizes read
when the backward runs."""

import numpy as np

from script import Tensor, script
from tests.gradcheck import check_vjp


def rows_then_matrix(first: Tensor, rest: Tensor, n: int) -> Tensor:
    states = np.vstack([first, np.zeros((n, first.shape[0]))])
    states[1:] = rest * 2.0
    return np.vstack([first, states]) * states.sum()


def joined(a: Tensor, b: Tensor, n_a: int, n_b: int, W: Tensor) -> Tensor:
    pa = np.zeros(n_a) + a
    pb = np.zeros(n_b) + b
    return np.dot(W, np.concatenate([pa, pb]))


def test_gradients_through_joins_sized_at_run_time():
    rng = np.random.default_rng(0)
    args = (rng.standard_normal(3), rng.standard_normal((2, 3)), 2)
    np.testing.assert_allclose(script(rows_then_matrix)(*args), rows_then_matrix(*args),
                               rtol=1e-12)
    check_vjp(script(rows_then_matrix), args)
    args2 = (rng.standard_normal(2), rng.standard_normal(3), 2, 3, rng.standard_normal((4, 5)))
    np.testing.assert_allclose(script(joined)(*args2), joined(*args2), rtol=1e-12)
    check_vjp(script(joined), args2)
