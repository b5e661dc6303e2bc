"""Peeling a loop's first trip (``passes/peel.py``): a value carried as None into a loop whose
first trip makes it a tensor (DLFS2's stateful layers: ``h = None`` before the loop, ``if h is
None: h = np.zeros(...)`` in the step) is carried as that tensor by the loop over the other
trips, which then compiles natively; results and gradients are the plain function's at every
trip count, none included."""

from typing import Optional

import numpy as np
import pytest

from script import Tensor, script
from tests.gradcheck import check_vjp
from tests.helpers import assert_same, native_loops


def step(x: Tensor, h: Optional[Tensor], w: Tensor, u: Tensor) -> Tensor:
    if h is None:
        h = np.zeros((x.shape[0], w.shape[1]), dtype=x.dtype)
    return np.tanh(x @ w + h @ u)


def layer(xs: Tensor, w: Tensor, u: Tensor, n: int) -> Tensor:
    h = None
    out = np.zeros((n, xs.shape[1], w.shape[1]), dtype=xs.dtype)
    for t in range(n):
        h = step(xs[t], h, w, u)
        out[t] = h
    return out


def last(xs: Tensor, w: Tensor, u: Tensor, n: int) -> Optional[Tensor]:
    h = None
    for t in range(n):
        h = step(xs[t], h, w, u)
    return h


def _args(dtype, n=30, seed=0):
    r = np.random.default_rng(seed)
    return (r.standard_normal((max(n, 1), 3, 4)).astype(dtype),
            r.standard_normal((4, 6)).astype(dtype),
            (r.standard_normal((6, 6)) * 0.3).astype(dtype), n)


def _runs_natively_as_python_computes(fn, args, dtype):
    f = script(fn)
    tol = 1e-5 if dtype == np.float32 else 1e-12
    np.testing.assert_allclose(f(*args), fn(*args), rtol=tol, atol=tol)
    (lp,) = native_loops(f, *args)
    assert lp.calls == 1
    assert "runs natively" in f.explain(*args)


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_the_loop_after_the_first_trip_runs_natively(dtype):
    _runs_natively_as_python_computes(layer, _args(dtype), dtype)


@pytest.mark.parametrize("n", [0, 1, 2, 5])
def test_every_trip_count(n):
    f, g = script(layer), script(last)
    args = _args(np.float64, n=n)
    assert_same(f(*args), layer(*args))
    got, want = g(*args), last(*args)
    if n == 0:
        assert got is None and want is None
    else:
        assert_same(got, want)


def test_gradients_through_a_peeled_loop():
    check_vjp(layer, _args(np.float64, n=6, seed=1), argnums=(0, 1, 2))


def test_a_loop_whose_carried_shape_changes_is_not_peeled():
    """Only a value carried in as None is peeled for: an MLP over weights of several shapes
    (its carried activation changes shape each trip) compiles and runs as before."""
    from tests.programs.layers import mlp
    r = np.random.default_rng(3)
    x = r.standard_normal((2, 3))
    ws = [r.standard_normal((3, 4)), r.standard_normal((4, 5)), r.standard_normal((5, 2))]
    np.testing.assert_allclose(script(mlp)(x, ws), mlp(x, ws), rtol=1e-12)


# -- a branch on the counter's first trip ---------------------------------------------------------


def cell_states(xs: Tensor, w: Tensor, c0: Tensor, n: int) -> Tensor:
    C = np.zeros((n, xs.shape[1], w.shape[1]), dtype=xs.dtype)
    for t in range(n):
        prevc = C[t - 1] if t > 0 else c0  # Karpathy's LSTM
        C[t] = np.tanh(xs[t] @ w) + 0.5 * prevc
    return C


def first_step_differs(xs: Tensor, w: Tensor, h: Tensor, n: int) -> Tensor:
    for t in range(n):
        if t == 0:
            h = np.tanh(xs[t] @ w)
        elif 0 != t:
            h = np.tanh(xs[t] @ w + h)
    return h


def _branch_args(dtype, n=30, seed=1):
    r = np.random.default_rng(seed)
    return (r.standard_normal((max(n, 1), 3, 4)).astype(dtype),
            (r.standard_normal((4, 6)) * 0.5).astype(dtype),
            r.standard_normal((3, 6)).astype(dtype), n)


@pytest.mark.parametrize("fn", [cell_states, first_step_differs])
@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_a_branch_on_the_first_trip_is_peeled_and_the_loop_runs_natively(fn, dtype):
    _runs_natively_as_python_computes(fn, _branch_args(dtype), dtype)


@pytest.mark.parametrize("fn", [cell_states, first_step_differs])
@pytest.mark.parametrize("n", [0, 1, 2, 5])
def test_a_branch_on_the_first_trip_at_every_trip_count(fn, n):
    args = _branch_args(np.float64, n=n)
    assert_same(script(fn)(*args), fn(*args))
    if n:
        check_vjp(script(fn), args, argnums=(0, 1, 2))


# -- a branch on the last trip of a loop counting down ---------------------------------------------


def backward_states(dC: Tensor, w: Tensor, c0: Tensor, n: int) -> Tensor:
    """Karpathy's LSTM backward: the gradient flows to the step before, or to c0 at t == 0."""
    dC = dC.copy()
    dc0 = np.zeros_like(c0)
    for t in reversed(range(n)):
        g = np.tanh(dC[t] @ w)
        if t > 0:
            dC[t - 1] += g * 0.5
        else:
            dc0 = g * c0
    return dC.sum(0) + dc0


def last_step_differs(xs: Tensor, w: Tensor, h: Tensor, n: int) -> Tensor:
    for t in reversed(range(n)):
        if t == 0:
            h = np.tanh(xs[t] @ w) * 2.0
        else:
            h = np.tanh(xs[t] @ w + h)
    return h


def _down_args(dtype, n=30, seed=2):
    # a row more than the loop reads: n equal to an axis would be compiled in (trip_inputs)
    r = np.random.default_rng(seed)
    return (r.standard_normal((n + 1, 3, 6)).astype(dtype),
            (r.standard_normal((6, 6)) * 0.5).astype(dtype),
            r.standard_normal((3, 6)).astype(dtype), n)


@pytest.mark.parametrize("fn", [backward_states, last_step_differs])
@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_a_branch_on_the_last_trip_counting_down_is_peeled_and_the_loop_runs_natively(fn, dtype):
    _runs_natively_as_python_computes(fn, _down_args(dtype), dtype)


@pytest.mark.parametrize("fn", [backward_states, last_step_differs])
@pytest.mark.parametrize("n", [0, 1, 2, 5])
def test_a_branch_on_the_last_trip_at_every_trip_count(fn, n):
    args = _down_args(np.float64, n=n)
    assert_same(script(fn)(*args), fn(*args))
    if n:
        check_vjp(script(fn), args, argnums=(0, 1, 2))


def counting_up(xs: Tensor, w: Tensor, h: Tensor, n: int) -> Tensor:
    for t in range(n):
        h = np.tanh(xs[t] @ w + h) if t > n - 2 else h * 0.5
    return h


def test_a_branch_on_the_last_trip_counting_up_is_left_alone():
    """``t > n - 2`` in a loop counting up is not a test of a step counting down to 0: the
    loop stays as it is (and right)."""
    up = counting_up
    args = _down_args(np.float64, n=6)
    assert_same(script(up)(*args), up(*args))


def rows_until(X: Tensor, h0: Tensor) -> Tensor:
    H = np.zeros_like(X)
    for t in range(X.shape[0]):
        prev = H[t - 1] if t > 0 else h0
        H[t] = np.sin(prev) * X[t]
        if t >= 2:
            break
    return H


def test_a_loop_with_a_break_that_branches_on_its_first_trip_differentiates():
    # the reverse loop's last trip peeled: its constant folding made the slot-gradient buffer
    # (zeros, written in place by write_slot) a constant, and the gradient came back zeros
    X = np.array([[0.3, -0.2], [0.5, 0.7], [1.1, -0.4], [0.2, 0.9]])
    h0 = np.array([0.4, -0.8])
    assert_same(script(rows_until)(X, h0), rows_until(X, h0))
    check_vjp(script(rows_until), (X, h0))
