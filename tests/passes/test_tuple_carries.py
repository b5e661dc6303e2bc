"""Loops carrying tuples (``state = (h, c)``) carry their items (``passes.tuple_carries``): the
compiled results equal the Python function's, gradients finite differences, and such a loop
runs natively."""

from __future__ import annotations

import numpy as np
import pytest

from script import Tensor, script
from tests.gradcheck import check_vjp
from tests.helpers import assert_same, native_loops


def pair_state(X: Tensor, h0: Tensor, c0: Tensor, W: Tensor):
    # hipsternet's LSTM (wiseodd/hipsternet, Unlicense) carries its state as a pair
    H = h0.shape[1]
    state = (h0, c0)
    for t in range(X.shape[0]):
        h, c = state
        z = np.concatenate((h, X[t]), axis=1) @ W
        c = c * (1.0 / (1.0 + np.exp(-z[:, :H]))) + np.tanh(z[:, H:])
        h = np.tanh(c)
        state = (h, c)
    return state


def nested_state(X: Tensor, h0: Tensor, W: Tensor):
    state = ((h0, 0), h0 * 0.0)
    for t in range(X.shape[0]):
        (h, k), acc = state
        h = np.tanh(X[t] @ W + h)
        state = ((h, k + 1), acc + h)
    (h, k), acc = state
    return h * k, acc


def _args(fn, T, rng):
    X = rng.standard_normal((T, 3, 4))
    if fn is pair_state:
        return X, rng.standard_normal((3, 5)), rng.standard_normal((3, 5)), \
            rng.standard_normal((9, 10)) * 0.3
    return X, rng.standard_normal((3, 4)), rng.standard_normal((4, 4)) * 0.3


@pytest.mark.parametrize("fn", [pair_state, nested_state], ids=lambda f: f.__name__)
@pytest.mark.parametrize("T", [1, 3, 30])
def test_tuple_carries_give_the_python_result(fn, T):
    args = _args(fn, T, np.random.default_rng(T))
    assert_same(script(fn)(*args), fn(*args), rtol=1e-12)


@pytest.mark.parametrize("fn", [pair_state, nested_state], ids=lambda f: f.__name__)
def test_tuple_carries_differentiate(fn):
    check_vjp(script(fn), _args(fn, 4, np.random.default_rng(7)))


def test_a_loop_carrying_a_pair_of_arrays_runs_natively():
    args = _args(pair_state, 30, np.random.default_rng(0))
    f = script(pair_state)
    f(*args)
    (loop,) = native_loops(f, *args)
    assert loop.calls == 1


def test_a_loop_that_runs_no_steps_gives_the_initial_pair():
    args = _args(pair_state, 0, np.random.default_rng(0))
    assert_same(script(pair_state)(*args), pair_state(*args))
