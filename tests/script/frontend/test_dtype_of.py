"""``dtype=x.dtype`` anywhere: a function (and each helper it calls) is specialized per dtype, so
``x.dtype`` is a constant there and the ops it is passed to type their results; in plain
functions, helpers, module methods and after ``freeze``."""

import numpy as np
import pytest

from script import Module, Parameter, Tensor, freeze, script
from tests.gradcheck import check_vjp


def zeros_like_dtype(x: Tensor):
    return np.zeros(3, dtype=x.dtype) + x.sum()


def init_hidden(x: Tensor, hidden: int):
    # a helper: its dtype follows the caller's tensor
    return np.zeros((x.shape[0], hidden), dtype=x.dtype)


def rnn_from_zero(xs: Tensor, w: Tensor):
    h = init_hidden(xs[0], w.shape[1])
    for t in range(xs.shape[0]):
        h = np.tanh(xs[t] @ w + h)
    return h


def one_hot(idx: int, n: int, like: Tensor):
    # min-char-rnn's `xs[t] = np.zeros((vocab_size, 1)); xs[t][inputs[t]] = 1`, as an expression
    return (np.arange(n) == idx).astype(like.dtype).reshape(n, 1)


def cast_back(x: Tensor, y: Tensor):
    return (x.astype(np.float64) * y.astype(np.float64)).astype(x.dtype)


class Cell(Module):
    def __init__(self, dtype):
        super().__init__()
        self.weight = Parameter(np.random.default_rng(0).standard_normal((3, 3)).astype(dtype))

    def forward(self, x: Tensor) -> Tensor:
        h = np.ones((x.shape[0], 3), dtype=x.dtype)
        return np.tanh(x @ self.weight + h)


CASES = [
    (zeros_like_dtype, lambda r, dt: (r.random(3).astype(dt),)),
    (rnn_from_zero, lambda r, dt: (r.random((4, 2, 3)).astype(dt), r.random((3, 5)).astype(dt))),
    (one_hot, lambda r, dt: (2, 5, r.random(1).astype(dt))),
    (cast_back, lambda r, dt: (r.random(3).astype(dt), r.random(3).astype(dt))),
]


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("fn,make", CASES, ids=[c[0].__name__ for c in CASES])
def test_compiled_equals_numpy(fn, make, dtype):
    args = make(np.random.default_rng(0), dtype)
    got, want = script(fn)(*args), fn(*args)
    assert got.dtype == want.dtype == dtype
    np.testing.assert_allclose(got, want, rtol=1e-6)


def test_each_dtype_gets_its_own_specialization():
    f = script(zeros_like_dtype)
    assert f(np.ones(3, np.float32)).dtype == np.float32
    assert f(np.ones(3, np.float64)).dtype == np.float64
    assert "tensor::dtype" not in str(f.graph_for(np.ones(3, np.float32)))


def test_gradients_equal_finite_differences():
    r = np.random.default_rng(1)
    check_vjp(script(rnn_from_zero), (r.random((4, 2, 3)), r.random((3, 5))))
    check_vjp(script(cast_back), (r.random(3), r.random(3)))


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_module_method_and_freeze(dtype):
    x = np.random.default_rng(2).random((2, 3)).astype(dtype)
    cell = Cell(dtype)
    want = cell.forward(x)
    for compiled in (script(cell), freeze(script(cell))):
        got = compiled(x)
        assert got.dtype == dtype
        np.testing.assert_allclose(got, want, rtol=1e-6)
