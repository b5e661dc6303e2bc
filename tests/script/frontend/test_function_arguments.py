"""Functions passed as values: a call that passes a function (``rk4(f, x, dt)``, ``apply(np.tanh,
x)``) or leaves a parameter at a function default (``def layer(x, W, act=sigmoid)``) compiles the
callee with that parameter bound to the function, once per function, and the callee's calls of
it are calls of that function: values and gradients as Python gives them."""

import numpy as np
import pytest

from script import ScriptError, Tensor, script
from tests.gradcheck import check_vjp


def sigmoid(z):
    return 1.0 / (1.0 + np.exp(-z))


def relu(z):
    return np.maximum(z, 0.0)


def lorenz(x):  # DAPPER-style dynamics: x' = f(x)
    return np.roll(x, 1) * (np.roll(x, -1) - np.roll(x, 2)) - x + 8.0


def rk4(f, x, dt: float):
    k1 = dt * f(x)
    k2 = dt * f(x + k1 / 2)
    k3 = dt * f(x + k2 / 2)
    k4 = dt * f(x + k3)
    return x + (k1 + 2 * (k2 + k3) + k4) / 6


def integrate(x: Tensor, steps: int) -> Tensor:
    for _ in range(steps):
        x = rk4(lorenz, x, 0.01)
    return x


def layer(x, W, act=sigmoid):
    return act(x @ W)


def mlp(x: Tensor, W1: Tensor, W2: Tensor) -> Tensor:
    h = layer(x, W1, act=np.tanh)
    h = layer(h, W1, relu) + layer(h, W1)  # positional, and the default
    return layer(h, W2)


def apply(f, x, scale=1.0):
    return f(x) * scale


def twice(f, x):
    return apply(f, apply(f, x), scale=2.0)  # passed on from a parameter bound to a function


def ufuncs(x: Tensor) -> Tensor:
    return apply(np.tanh, x) + apply(np.exp, x, scale=0.5) + twice(np.sin, x) + apply(abs, x)


@script
def scripted_square(z: Tensor) -> Tensor:
    return z * z


def of_a_scripted_function(x: Tensor) -> Tensor:
    return apply(scripted_square, x) + twice(relu, x)


def test_a_function_argument_is_called_where_the_callee_calls_it():
    x = np.random.default_rng(0).standard_normal(40)
    np.testing.assert_allclose(script(integrate)(x, 5), integrate(x, 5), rtol=1e-12)
    check_vjp(script(integrate), (x, 3))


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_function_defaults_and_keywords_each_compile_their_own_callee(dtype):
    rng = np.random.default_rng(1)
    x, W1, W2 = (rng.standard_normal(s).astype(dtype) for s in ((4, 5), (5, 5), (5, 3)))
    got, want = script(mlp)(x, W1, W2), mlp(x, W1, W2)
    assert got.dtype == want.dtype
    np.testing.assert_allclose(got, want, rtol=1e-5 if dtype == np.float32 else 1e-12)
    if dtype == np.float64:
        check_vjp(script(mlp), (x, W1, W2))


def test_numpy_builtin_and_scripted_functions_as_arguments():
    x = np.random.default_rng(2).standard_normal((3, 4))
    np.testing.assert_allclose(script(ufuncs)(x), ufuncs(x), rtol=1e-12)
    np.testing.assert_allclose(script(of_a_scripted_function)(x), of_a_scripted_function(x),
                               rtol=1e-12)
    check_vjp(script(ufuncs), (x + 3.0,))  # away from abs's kink


def returns_it(f, x):
    return f


def keeps_the_function(x: Tensor) -> Tensor:
    g = returns_it(np.tanh, x)
    return g(x)


def test_a_function_parameter_used_as_a_value_is_an_error_at_its_line():
    with pytest.raises(ScriptError, match="function 'tanh'") as err:
        script(keeps_the_function)(np.ones(3))
    assert "test_function_arguments.py" in str(err.value)


def scripted_with_a_default(x: Tensor, act=np.tanh) -> Tensor:
    return act(x) + apply(act, x)


def test_the_scripted_function_itself_compiles_its_function_default():
    from script import SignatureError
    x = np.linspace(-1, 1, 5)
    f = script(scripted_with_a_default)
    np.testing.assert_allclose(f(x), scripted_with_a_default(x), rtol=1e-12)
    np.testing.assert_allclose(f(x, act=np.tanh), scripted_with_a_default(x), rtol=1e-12)
    with pytest.raises(SignatureError, match="argument 'act' is compiled as its default"):
        f(x, np.sin)


def given_twice(x: Tensor) -> Tensor:
    return layer(x, np.ones((3, 3)), np.tanh, act=np.sin)


def too_many(x: Tensor) -> Tensor:
    return apply(np.tanh, x, 2.0, 3.0)


@pytest.mark.parametrize("fn,message", [(given_twice, "multiple values for argument 'act'"),
                                        (too_many, "too many positional arguments")])
def test_a_call_python_would_refuse_is_an_error_at_its_line(fn, message):
    with pytest.raises(TypeError):
        fn(np.ones((2, 3)))
    with pytest.raises(ScriptError, match=message):
        script(fn)(np.ones((2, 3)))


def maybe_activated(x, act=None):
    if act is not None:
        x = act(x)
    return x * 2.0


def optional_activation(x: Tensor) -> Tensor:
    return maybe_activated(x, act=np.tanh) + maybe_activated(x) + maybe_activated(x, relu)


def test_an_optional_function_parameter_tested_against_none():
    x = np.linspace(-1.0, 1.0, 5)
    np.testing.assert_allclose(script(optional_activation)(x), optional_activation(x),
                               rtol=1e-12)
