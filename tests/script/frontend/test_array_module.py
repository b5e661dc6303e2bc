"""Array-module aliases (CuPy-agnostic code): ``xp = np`` in the body, and a parameter with a
module default (``xp=numpy``) in functions, helpers and module methods; a caller may pass any
array module for it. Values equal plain numpy."""

import numpy
import numpy as np
import pytest

from script import Module, Parameter, ScriptError, SignatureError, Tensor, script
from tests.gradcheck import check_vjp


def aliased(x: Tensor):
    xp = np
    return xp.tanh(x) + xp.zeros(x.shape[-1])


def softmax(x, axis=-1, xp=numpy):
    e = xp.exp(x - xp.max(x, axis=axis, keepdims=True))
    return e / xp.sum(e, axis=axis, keepdims=True)


def attention(q: Tensor, k: Tensor, v: Tensor):
    # the helper takes its default module, then an explicit one
    return softmax(q @ k.T) @ v + softmax(q @ k.T, xp=np) @ v


class Cell(Module):
    def __init__(self):
        super().__init__()
        self.w = Parameter(np.random.default_rng(0).standard_normal((3, 3)))

    def forward(self, x: Tensor, xp=numpy) -> Tensor:
        return xp.tanh(x @ self.w)


def make(r):
    return r.random((2, 3)), r.random((4, 3)), r.random((4, 3))


def test_values_equal_numpy():
    r = np.random.default_rng(0)
    q, k, v = make(r)
    np.testing.assert_allclose(script(aliased)(q), aliased(q))
    np.testing.assert_allclose(script(softmax)(q), softmax(q))
    np.testing.assert_allclose(script(softmax)(q, 0, np), softmax(q, 0, np))
    np.testing.assert_allclose(script(softmax)(q, xp=np, axis=0), softmax(q, xp=np, axis=0))
    np.testing.assert_allclose(script(attention)(q, k, v), attention(q, k, v))
    cell = Cell()
    np.testing.assert_allclose(script(cell)(q), cell.forward(q))
    np.testing.assert_allclose(script(cell)(q, np), cell.forward(q, np))


def test_gradients_equal_finite_differences():
    check_vjp(script(attention), make(np.random.default_rng(1)))


def test_a_module_parameter_takes_only_modules():
    with pytest.raises(SignatureError, match="argument 'xp' must be an array module"):
        script(softmax)(np.ones(3), -1, 3)

    def passes_a_number(x: Tensor):
        return softmax(x, -1, 2)

    with pytest.raises(ScriptError, match="argument 'xp' must be an array module"):
        script(passes_a_number)(np.ones(3))


class _CupyUfunc:
    """Stands for a CuPy object that is not an array (a ufunc: its class lives in cupy)."""

    __module__ = "cupy._core._kernel"

    def reduce(self, x):
        return x.sum(axis=0)


CUPY_ADD = _CupyUfunc()


def reduce_with_a_cupy_ufunc(x: Tensor):
    return CUPY_ADD.reduce(x)


def test_a_cupy_object_that_is_not_an_array_is_not_taken_for_one():
    """Only ``cupy.ndarray`` is an array: a method of another CuPy object is an unknown function
    at the user's line, not a captured array's method (an internal error)."""
    with pytest.raises(ScriptError, match="unknown function CUPY_ADD.reduce"):
        script(reduce_with_a_cupy_ufunc)(np.ones((2, 3)))
