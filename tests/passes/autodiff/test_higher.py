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
