"""``range(start, n, batch_size)`` with the step an int argument (a mini-batch loop,
raphaelsenn's numpy RNN ``forward``): the trip count and items are computed when the code runs,
for either sign, and a zero step raises Python's ValueError. Before, the step had to be a
constant ("the step of range() must be a constant int").
"""

from __future__ import annotations

import numpy as np
import pytest

from script import Tensor, script
from tests.gradcheck import check_vjp
from tests.helpers import assert_same


def batches(X: Tensor, batch_size: int, start: int):
    out = []
    for i in range(start, X.shape[0], batch_size):
        out.append(X[i:i + batch_size].sum())
    total = 0
    for j in range(X.shape[0] - 1, start - 1, -batch_size):
        total = total + j
    return out, total, [k for k in range(0, 10, batch_size)]


@pytest.mark.parametrize("step, start", [(3, 0), (4, 2), (20, 0), (1, 5), (-2, 9), (3, 12)])
def test_steps_known_when_the_code_runs(step, start):
    X = np.arange(10.0)
    got, want = script(batches)(X, step, start), batches(X, step, start)
    assert len(got[0]) == len(want[0]) and got[1:] == want[1:]
    for g, w in zip(got[0], want[0]):
        assert_same(g, w)


def test_zero_step_raises_pythons_error():
    with pytest.raises(ValueError, match="must not be zero"):
        script(batches)(np.arange(10.0), 0, 0)


def batch_loss(X: Tensor, W: Tensor, batch_size: int):
    loss = 0.0
    for i in range(0, X.shape[0], batch_size):
        loss = loss + np.tanh(X[i:i + batch_size] @ W).sum()
    return loss


def test_gradient_through_a_batch_loop():
    r = np.random.default_rng(0)
    check_vjp(script(batch_loss), (r.standard_normal((7, 3)), r.standard_normal((3, 2)), 3))
