"""Higher-order gradients: ``grad(f)`` is a differentiable function, so ``vjp``,
``value_and_grad`` and ``grad`` of it give second derivatives (checked against finite differences
of the first derivative, and against closed forms)."""

import numpy as np
import pytest

from script import Tensor, ops
from script.errors import ScriptError
from script.runtime.autodiff import vjp
from script.runtime.gradients import grad, value_and_grad


def cubic(x: Tensor) -> Tensor:
    return np.sum(x * x * x + np.tanh(x) * x)


def quadratic_form(x: Tensor, w: Tensor) -> Tensor:
    y = ops.sigmoid(x @ w)
    return np.mean(y * y) + np.sum(w * w) * 0.5


def _fd(fn, x, eps=1e-6):
    """Jacobian of fn at x (central differences), shaped x.shape + fn(x).shape."""
    out = np.asarray(fn(x))
    jac = np.zeros(x.shape + out.shape)
    for idx in np.ndindex(x.shape):
        up, down = x.copy(), x.copy()
        up[idx] += eps
        down[idx] -= eps
        jac[idx] = (np.asarray(fn(up)) - np.asarray(fn(down))) / (2 * eps)
    return jac


def test_grad_matches_the_closed_form():
    x = np.array([0.3, -0.7, 1.1])
    t = np.tanh(x)
    np.testing.assert_allclose(grad(cubic)(x), 3 * x * x + t + x * (1 - t * t), rtol=1e-12)


def test_second_and_third_derivatives_of_a_scalar_function():
    """grad(grad(f)) of a function of a 0-d array (each gradient is again a scalar)."""
    x = np.array(0.4)
    t = np.tanh(x)
    d2 = 6 * x + 2 * (1 - t * t) - 2 * x * t * (1 - t * t)
    np.testing.assert_allclose(grad(grad(cubic))(x), d2, rtol=1e-10)
    np.testing.assert_allclose(grad(grad(grad(cube)))(x), 6.0, rtol=1e-10)


def cube(x: Tensor) -> Tensor:
    return np.sum(x * x * x)


@pytest.mark.parametrize("argnums", [0, 1])
def test_vjp_of_a_gradient_is_a_hessian_vector_product(argnums):
    rng = np.random.default_rng(0)
    x, w = rng.standard_normal((3, 4)), rng.standard_normal((4, 2))
    g = grad(quadratic_form, argnums=argnums)
    first, backward = vjp(g, x, w)
    arg = (x, w)[argnums]
    np.testing.assert_allclose(first, g(x, w), rtol=1e-12)
    v = rng.standard_normal(arg.shape)
    hvp = backward(v)

    def gradient_at(a):
        return g(*[(a if k == argnums else b) for k, b in enumerate((x, w))])
    jac = _fd(gradient_at, arg)  # arg.shape + arg.shape
    want = np.tensordot(jac, v, axes=v.ndim)  # the Hessian is symmetric
    np.testing.assert_allclose(hvp[argnums], want, rtol=1e-5, atol=1e-7)


def test_value_and_grad_of_grad():
    x = np.array(-0.3)
    value, second = value_and_grad(grad(cube))(x)
    np.testing.assert_allclose(value, 3 * x * x, rtol=1e-12)
    np.testing.assert_allclose(second, 6 * x, rtol=1e-12)


def test_grad_rejects_non_scalar_outputs():
    def vector(x: Tensor) -> Tensor:
        return x * 2.0
    with pytest.raises(ScriptError, match="one scalar output"):
        grad(vector)(np.ones(3))


def filled_rows(X: Tensor, W: Tensor, h0: Tensor, wrand: Tensor):
    # Karpathy's batched LSTM's style: preallocated arrays written per step, the previous row
    # read back (gist.github.com/karpathy/587454dc0146a6ae21fc)
    n, b, input_size = X.shape
    d = W.shape[1] // 4
    Hin = np.zeros((n, b, W.shape[0]))
    Hout = np.zeros((n, b, d))
    IFOGf = np.zeros((n, b, d * 4))
    for t in range(n):
        prevh = Hout[t - 1] if t > 0 else h0
        Hin[t, :, 0] = 1
        Hin[t, :, 1:input_size + 1] = X[t]
        Hin[t, :, input_size + 1:] = prevh
        ifog = Hin[t].dot(W)
        IFOGf[t, :, :3 * d] = 1.0 / (1.0 + np.exp(-ifog[:, :3 * d]))
        IFOGf[t, :, 3 * d:] = np.tanh(ifog[:, 3 * d:])
        Hout[t] = IFOGf[t, :, 2 * d:3 * d] * IFOGf[t, :, 3 * d:]
    return np.sum(Hout * wrand)


def rows_two_back(X: Tensor, W: Tensor, h0: Tensor, wrand: Tensor):
    # the same, each step reading the row two steps back: its branch is not the first trip's
    n, b, input_size = X.shape
    d = W.shape[1] // 4
    Hin = np.zeros((n, b, W.shape[0]))
    Hout = np.zeros((n, b, d))
    IFOGf = np.zeros((n, b, d * 4))
    for t in range(n):
        prevh = Hout[t - 2] if t > 1 else h0
        Hin[t, :, 0] = 1
        Hin[t, :, 1:input_size + 1] = X[t]
        Hin[t, :, input_size + 1:] = prevh
        ifog = Hin[t].dot(W)
        IFOGf[t, :, :3 * d] = 1.0 / (1.0 + np.exp(-ifog[:, :3 * d]))
        IFOGf[t, :, 3 * d:] = np.tanh(ifog[:, 3 * d:])
        Hout[t] = IFOGf[t, :, 2 * d:3 * d] * IFOGf[t, :, 3 * d:]
    return np.sum(Hout * wrand)


@pytest.mark.parametrize("n", [1, 2, 5])
def test_second_derivatives_through_preallocated_rows_match_finite_differences(n):
    # the branch on t > 0 is peeled before differentiation: the first gradient writes no
    # row cotangent into a buffer, and differentiates again
    rng = np.random.default_rng(n)
    X, W = rng.standard_normal((n, 2, 2)), rng.standard_normal((5, 8)) * 0.5
    h0, wrand = rng.standard_normal((2, 2)), rng.standard_normal((n, 2, 2))
    args = [X, W, h0, wrand]
    first = grad(filled_rows, argnums=0)
    _, backward = vjp(first, *args)
    v = rng.standard_normal(X.shape)
    hvp = backward(v)
    for k, arg in enumerate(args):
        def first_at(a, k=k):
            return first(*[a if j == k else b for j, b in enumerate(args)])
        want = np.tensordot(_fd(first_at, arg), v, axes=v.ndim)
        np.testing.assert_allclose(hvp[k], want, rtol=1e-6, atol=1e-8)


def test_a_second_derivative_the_first_gradients_slot_writes_would_lose_is_refused():
    # the first gradient writes the cotangents of the rows read into a buffer in place; the
    # second differentiation has no rule for that write, and gave zeros before it refused
    rng = np.random.default_rng(0)
    X, W = rng.standard_normal((4, 2, 2)), rng.standard_normal((5, 8)) * 0.5
    h0, wrand = rng.standard_normal((2, 2)), rng.standard_normal((4, 2, 2))
    first = grad(rows_two_back, argnums=0)
    np.testing.assert_allclose(first(X, W, h0, wrand), _fd(
        lambda x: rows_two_back(x, W, h0, wrand), X), rtol=1e-6, atol=1e-8)
    with pytest.raises(ScriptError, match="second derivatives through such a loop"):
        vjp(first, X, W, h0, wrand)
