"""Functions defined in the compiled one (``def step(h, x)`` in its body, ``act = lambda z:
...``) compute what Python computes: they read the enclosing function's names when called,
may call each other and nest, and are compiled per call's argument types; gradients equal
finite differences; what stays unsupported is a ScriptError at the user's line."""

from typing import List, Tuple

import numpy as np
import pytest

from script import Module, Parameter, ScriptError, Tensor, script
from tests.gradcheck import check_vjp
from tests.helpers import assert_same, assert_same_at


def late_binding(x: Tensor) -> Tensor:
    a = 1.0

    def scaled(y):
        return y * a
    first = scaled(x)
    a = 2.0
    return first + scaled(x)


def recurrent(xs: Tensor, W: Tensor, U: Tensor) -> Tensor:
    sig = lambda z: 1 / (1 + np.exp(-z))  # noqa: E731

    def step(h, x, gain=1.0):
        return gain * np.tanh(h @ W + sig(x @ U))
    h = np.zeros((xs.shape[1], W.shape[0]), dtype=xs.dtype)
    for t in range(xs.shape[0]):
        h = step(h, xs[t])
    return step(h, xs[0], gain=0.5)


def calls_another(x: Tensor, k: float) -> Tensor:
    def inner(z):
        return z * k

    def outer(z):
        return inner(z) + inner(2 * z)
    return outer(x)


def nested_twice(x: Tensor, w: Tensor) -> Tensor:
    def f(z):
        def g(u):
            return u * w
        return g(z) + g(z * z)
    return f(x)


def per_call_types(x: Tensor, n: int) -> Tuple[Tensor, float, Tensor]:
    def twice(v):
        return v + v
    return twice(x), twice(1.5), twice(x[0]) * n


def pushes(x: Tensor) -> List[Tensor]:
    hs = []

    def push(v):
        hs.append(np.tanh(v))
    push(x)
    push(x * 3)
    return hs


def defined_in_loop(x: Tensor) -> Tensor:
    out = x
    for k in range(3):
        def shift(z):
            return z * 0.5 + k
        out = shift(out)
    return out


def array_module(x: Tensor) -> Tensor:
    xp = np

    def act(z):
        return xp.tanh(z) + xp.exp(-z)
    return act(x)


def annotated(x: Tensor) -> Tensor:
    def f(z: Tensor, n: int) -> Tensor:
        return z * n
    return f(x, 3) + f(n=2, z=x)


def reads_after_write(x: Tensor) -> Tensor:
    buf = np.zeros(3, dtype=x.dtype)

    def total():
        return buf.sum()
    before = total()
    buf[0] = 5.0
    return before + total() + x


def branches(x: Tensor) -> Tuple[Tensor, Tensor]:
    def f(z):
        if z.sum() > 0:
            return z, z * 2
        return z * 3, z
    return f(x)


@pytest.mark.parametrize("dtype", ["float32", "float64"])
@pytest.mark.parametrize("fn, shapes", [
    (late_binding, [(3,)]), (recurrent, [(4, 2, 3), (5, 5), (3, 5)]),
    (nested_twice, [(3,), (3,)]), (pushes, [(2, 3)]), (defined_in_loop, [(3,)]),
    (array_module, [(2, 2)]), (annotated, [(3,)]), (reads_after_write, [(3,)]),
    (branches, [(3,)]),
])
def test_nested_functions_compute_what_python_does(fn, shapes, dtype):
    r = np.random.default_rng(0)
    args = tuple((0.3 * r.standard_normal(s)).astype(dtype) for s in shapes)
    assert_same_at(script(fn)(*args), fn(*args), dtype)
    if fn is branches:
        assert_same_at(script(fn)(-np.abs(args[0])), fn(-np.abs(args[0])), dtype)


def test_nested_functions_with_numbers():
    x = np.arange(3.0)
    assert_same(script(calls_another)(x, 2.5), calls_another(x, 2.5))
    assert_same(script(per_call_types)(x, 4), per_call_types(x, 4))


@pytest.mark.parametrize("fn, shapes", [
    (late_binding, [(3,)]), (recurrent, [(4, 2, 3), (5, 5), (3, 5)]),
    (nested_twice, [(3,), (3,)]), (defined_in_loop, [(3,)]),
])
def test_nested_function_gradients_equal_finite_differences(fn, shapes):
    r = np.random.default_rng(1)
    check_vjp(fn, tuple(0.3 * r.standard_normal(s) for s in shapes))


class Reads(Module):
    def __init__(self):
        super().__init__()
        self.W = Parameter(np.eye(3))

    def forward(self, x: Tensor) -> Tensor:
        W = self.W

        def f(z):
            return np.tanh(z @ W)
        return f(x) + f(2 * x)


class ReadsSelf(Reads):
    def forward(self, x: Tensor) -> Tensor:
        def f(z):
            return z @ self.W
        return f(x)


def test_nested_function_in_a_module_method():
    x = np.arange(6.0).reshape(2, 3) / 6
    m = Reads()
    assert_same(script(m)(x), m(x))
    with pytest.raises(ScriptError, match=r"'f' reads 'self'.*W = self.W") as info:
        script(ReadsSelf())(x)
    assert "return f(x)" in str(info.value)


# -- refused ------------------------------------------------------------------------------------
def recursive(x: Tensor) -> Tensor:
    def f(z):
        return f(z)
    return f(x)


def stored(x: Tensor) -> Tensor:
    def f(z):
        return z
    fs = [f]
    return x + len(fs)


def uses_nonlocal(x: Tensor) -> Tensor:
    a = x

    def double():
        nonlocal a
        a = a * 2
    double()
    return a


def rebound(x: Tensor) -> Tensor:
    def f(z):
        return z
    f = 3  # noqa: F811
    return x * f


def writes_enclosing(x: Tensor) -> Tensor:
    buf = np.zeros(3)

    def fill(v):
        buf[0] = v
    fill(2.0)
    return buf + x


def reads_unbound(x: Tensor) -> Tensor:
    def f(z):
        return z * later
    y = f(x)
    later = 2.0
    return y


def computed_default(x: Tensor) -> Tensor:
    def f(z, s=x.sum()):  # noqa: B008
        return z * s
    return f(x)


@pytest.mark.parametrize("fn, match, line", [
    (recursive, "recursive calls are not supported: 'f'", "return f(z)"),
    (stored, "'f' is a nested function: it can only be called", "fs = [f]"),
    (uses_nonlocal, "nonlocal is not supported: return the new value", "nonlocal a"),
    (rebound, "'f' is assigned here and also names a nested function", "f = 3"),
    (writes_enclosing, "in-place write to 'buf' of the enclosing function.*return the new "
                       "array", "buf[0] = v"),
    (reads_unbound, "'f' reads 'later' of the enclosing function, which has no value",
     "y = f(x)"),
    (computed_default, "a nested function's default must be a constant", "s=x.sum()"),
])
def test_unsupported_nested_functions_are_script_errors(fn, match, line):
    with pytest.raises(ScriptError, match=match) as info:
        script(fn)(np.ones(3))
    assert line in str(info.value)


# -- *args of a called function -------------------------------------------------------------------
def concat_and_multiply(weights, *args):
    """HIPS/autograd's examples/rnn.py helper (MIT): the states to concatenate as *args."""
    cat_state = np.hstack(args + (np.ones((args[0].shape[0], 1)),))
    return np.dot(cat_state, weights)


def rnn_predict(W: Tensor, xs: Tensor, h: Tensor) -> Tensor:
    def update_rnn(x, hiddens):
        return np.tanh(concat_and_multiply(W, x, hiddens))
    for x in xs:
        h = update_rnn(x, h)
    return h


def total(*xs: Tensor):
    out = xs[0]
    for x in xs[1:]:
        out = out + x
    return out, len(xs)


def totals(a: Tensor, b: Tensor, pair: Tuple[Tensor, Tensor]):
    return total(a), total(a, b * 2.0), total(*pair, a)


def not_a_tensor(a: Tensor):
    return total(a, 3)


def takes_varargs(*xs: Tensor):
    return xs[0]


@pytest.mark.parametrize("dtype", ["float32", "float64"])
def test_varargs_of_a_called_function(dtype):
    r = np.random.default_rng(2)
    W, xs, h = (0.3 * r.standard_normal(s).astype(dtype) for s in ((8, 4), (5, 2, 3), (2, 4)))
    assert_same_at(script(rnn_predict)(W, xs, h), rnn_predict(W, xs, h), dtype)
    a, b = np.arange(3, dtype=dtype), np.ones(3, dtype=dtype)
    assert_same_at(script(totals)(a, b, (b, a)), totals(a, b, (b, a)), dtype)


def test_varargs_gradients_equal_finite_differences():
    r = np.random.default_rng(3)
    check_vjp(rnn_predict, tuple(0.3 * r.standard_normal(s) for s in ((8, 4), (5, 2, 3), (2, 4))))


def test_varargs_errors_point_at_the_line():
    with pytest.raises(ScriptError, match=r"total\(\) takes \*xs of Tensor, not int") as info:
        script(not_a_tensor)(np.ones(2))
    assert "return total(a, 3)" in str(info.value)
    with pytest.raises(ScriptError, match=r"\*args is not supported in the function scripted "
                                          r"itself \(a function it calls may take \*args\)"):
        script(takes_varargs)(np.ones(2))


def nested_varargs(x: Tensor, W: Tensor) -> Tensor:
    def join(*parts: Tensor):
        return np.hstack(parts + (np.ones((parts[0].shape[0], 1)),)) @ W

    total = lambda *xs: sum(xs)  # noqa: E731
    return join(x, x * 2.0) + total(1.0, 2.0, x[:, :1]) + join(*(x, x))


def test_varargs_of_a_nested_function():
    r = np.random.default_rng(4)
    x, W = r.standard_normal((2, 3)), r.standard_normal((7, 2))
    assert_same(script(nested_varargs)(x, W), nested_varargs(x, W))
    check_vjp(nested_varargs, (x, W))
