"""A parameter whose default is a dtype (``def init(n, dtype=numpy.float64)``, as numpy code
writes an initialiser) compiles: it holds the dtype's name, and a call may pass any dtype as
numpy spells one. Before, the default was refused ("a type, which cannot be a constant").
"""

from __future__ import annotations

import numpy
import numpy as np
import pytest

from script import Module, Parameter, SignatureError, Tensor, freeze, grad, script, value_and_grad
from tests.helpers import assert_same


def filled(x: Tensor, dtype=numpy.float64):
    return np.zeros(x.shape, dtype=dtype) + x.astype(dtype)


@pytest.mark.parametrize("dtype", [None, np.float32, np.dtype("float32"), "float16", float,
                                   np.float64])
def test_any_dtype_for_a_dtype_default(dtype):
    x = np.linspace(0, 1, 4).astype(np.float32)
    args = (x,) if dtype is None else (x, dtype)
    got, want = script(filled)(*args), filled(*args)
    assert got.dtype == want.dtype
    assert_same(got, want)
    got = script(filled)(x, dtype=dtype) if dtype is not None else got
    assert got.dtype == want.dtype


def test_a_value_that_is_no_dtype_is_refused():
    with pytest.raises(SignatureError, match="argument 'dtype' must be a dtype"):
        script(filled)(np.ones(2), 3)


def ones(n: int, dtype=np.float64):
    return np.ones(n, dtype=dtype)


def caller(x: Tensor):
    return ones(3, np.float32), ones(2), ones(2, dtype=x.dtype)


def test_helper_with_a_dtype_default():
    x = np.ones(2, np.float16)
    for got, want in zip(script(caller)(x), caller(x)):
        assert got.dtype == want.dtype
        assert_same(got, want)


def squares(x: Tensor, dtype=np.float64):
    return (x.astype(dtype) ** 2).sum()


def test_gradients_and_freeze_with_a_dtype_argument():
    x = np.array([1.0, 2.0, 3.0])
    value, g = value_and_grad(script(squares))(x, np.float32)
    assert isinstance(value, np.float32)
    assert_same(g, 2 * x)
    assert_same(grad(script(squares))(x, np.float32), 2 * x)


class Scaled(Module):
    def __init__(self):
        super().__init__()
        self.w = Parameter(np.arange(3.0))

    def forward(self, x: Tensor, dtype=np.float64):
        return (x * self.w).astype(dtype)


def test_module_and_frozen_module_with_a_dtype_argument():
    x = np.ones(3)
    for m in (script(Scaled()), freeze(script(Scaled()))):
        assert m(x, np.float32).dtype == np.float32
        assert m(x, dtype=np.dtype("float16")).dtype == np.float16
        assert_same(m(x), np.arange(3.0))


def compares_the_dtype(x: Tensor, dtype=np.float32):
    return dtype == "float32"


def compares_np_dtype(x: Tensor, dtype=np.float32):
    if np.dtype(dtype) == np.float32:
        return x.astype(dtype) * 2
    return x.astype(dtype)


def test_a_dtype_parameter_is_read_only_as_a_dtype():
    """It holds the dtype's name, which a scalar type is not (np.float32 == "float32" is False
    in Python): other reads are refused; np.dtype(d) compares as numpy's dtypes do."""
    from script import ScriptError
    with pytest.raises(ScriptError, match="holds a dtype"):
        script(compares_the_dtype)(np.ones(2))
    x = np.array([1.0, 2.0])
    for d in (np.float32, np.float64, None):
        got, want = script(compares_np_dtype)(x, d), compares_np_dtype(x, d)
        assert got.dtype == want.dtype
        assert_same(got, want)
