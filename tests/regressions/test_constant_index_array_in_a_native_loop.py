"""A loop over ``np.arange(a, b)`` whose bounds the compiler knows (constants, or an int argument
that sizes the loop) iterates a constant int64 array. The native loop took only arrays with a
float dtype as constants it reads, so planning the loop raised a ``KeyError`` on the constant
(``<Value %? : Long(6) of prim::Constant>``) instead of running it: ML-From-Scratch's truncated
BPTT (``for t_ in reversed(np.arange(max(0, t - self.bptt_trunc), t+1))``) crashed when its
window was fixed."""

import numpy as np
import pytest

from script import Tensor, script


def tanh_gradient(x: Tensor) -> Tensor:
    return 1 - np.power(2 / (1 + np.exp(-2 * x)) - 1, 2)


def fixed_window(g: Tensor, W: Tensor, state_input: Tensor) -> Tensor:
    for t_ in np.arange(4, 10):
        g = g.dot(W) * tanh_gradient(state_input[:, t_ - 1])
    return g


def window_from_an_argument(g: Tensor, W: Tensor, state_input: Tensor, t: int) -> Tensor:
    for t_ in reversed(np.arange(max(0, t - 5), t + 1)):
        g = g.dot(W) * tanh_gradient(state_input[:, t_ - 1])
    return g


def accumulated(g: Tensor, layer_input: Tensor, states: Tensor, W: Tensor, t: int):
    grad_U = np.zeros((g.shape[1], layer_input.shape[2]), dtype=g.dtype)
    grad_W = np.zeros_like(W)
    for t_ in reversed(np.arange(max(0, t - 5), t + 1)):
        grad_U += g.T.dot(layer_input[:, t_])
        grad_W += g.T.dot(states[:, t_ - 1])
        g = g.dot(W) * tanh_gradient(states[:, t_ - 1])
    return grad_U, grad_W, g


def _arrays(dtype, n):
    rng = np.random.default_rng(3)
    return (rng.standard_normal((n, 10)).astype(dtype),
            (rng.standard_normal((10, 10)) * 0.3).astype(dtype),
            rng.standard_normal((n, 11, 10)).astype(dtype))


@pytest.mark.parametrize("dtype,tol", [(np.float32, 1e-5), (np.float64, 1e-12)])
@pytest.mark.parametrize("n", [1, 4, 33])
def test_a_fixed_window_runs_natively_with_numpys_values(dtype, tol, n):
    g, W, S = _arrays(dtype, n)
    compiled = script(fixed_window)
    np.testing.assert_allclose(compiled(g, W, S), fixed_window(g, W, S), rtol=tol, atol=tol)
    assert "runs natively" in compiled.explain(g, W, S)


@pytest.mark.parametrize("dtype,tol", [(np.float32, 1e-5), (np.float64, 1e-12)])
@pytest.mark.parametrize("t", [0, 3, 9])
def test_a_window_an_int_argument_sets(dtype, tol, t):
    g, W, S = _arrays(dtype, 5)
    compiled = script(window_from_an_argument)
    np.testing.assert_allclose(compiled(g, W, S, t), window_from_an_argument(g, W, S, t),
                               rtol=tol, atol=tol)


@pytest.mark.parametrize("dtype,tol", [(np.float32, 1e-4), (np.float64, 1e-11)])
def test_bptt_sums_over_a_fixed_window(dtype, tol):
    g, W, S = _arrays(dtype, 6)
    L = np.random.default_rng(4).standard_normal((6, 11, 7)).astype(dtype)
    got, want = script(accumulated)(g, L, S, W, 9), accumulated(g, L, S, W, 9)
    for a, b in zip(got, want):
        np.testing.assert_allclose(a, b, rtol=tol, atol=tol)
