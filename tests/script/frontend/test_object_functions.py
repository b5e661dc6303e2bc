"""Builtins and numpy calls of real code that reads objects: ``hasattr`` of an object argument
(asked of the call's object, compiled in, compiled again when a call's object answers
otherwise), functions held by attributes (``self.act = np.tanh``: compiled in, compiled again
when a call's object holds another), ``typing.cast``, ``np.asarray`` and
``np.ascontiguousarray``. Compiled equals plain numpy; gradients equal finite differences."""

import typing

import numpy as np
import pytest

from script import ScriptError, Tensor, script
from tests.gradcheck import check_vjp
from tests.helpers import assert_same


def sigmoid(z):
    return 1.0 / (1.0 + np.exp(-z))


class Params:
    def __init__(self, W, b=None):
        self.W = W
        if b is not None:
            self.b = b


class Layer:
    """A layer whose activation is an attribute, as numpy code from scratch often writes."""

    def __init__(self, W, act):
        self.W = W
        self.act = act

    def forward(self, x):
        h = x @ self.W
        if hasattr(self, "b"):
            h = h + self.b
        return self.act(h)


def affine(p: Params, x: Tensor) -> Tensor:
    if hasattr(p, "b"):
        return x @ p.W + p.b
    return x @ p.W


def layer_forward(layer: Layer, x: Tensor) -> Tensor:
    return layer.forward(x)


def act_by_name(layer: Layer, x: Tensor) -> Tensor:
    act = layer.act
    return act(x) * 2.0


def act_as_value(layer: Layer, x: Tensor):
    return [layer.act, x]


def casts(x: Tensor) -> Tensor:
    y = typing.cast(Tensor, x * 2.0)
    return y + 1.0


def as_arrays(x: Tensor, n: Tensor) -> Tensor:
    a = np.asarray(x)
    b = np.asarray(x, dtype=np.float64)
    c = np.ascontiguousarray(x.T)
    d = np.ascontiguousarray(n)  # a 0-d array becomes shape (1,), as in numpy
    e = np.asarray([1.0, 2.0, 3.0])
    return (a * 2.0).sum() + b.astype(x.dtype).sum() + c[0] + d + e.sum()


def as_arrays_written(x: Tensor) -> Tensor:
    a = np.asarray(x * 1.0)
    a[0] = 0.0  # a is the product itself: written in place
    return a


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_hasattr_is_asked_of_each_calls_object(dtype):
    rng = np.random.default_rng(0)
    x, W = rng.standard_normal((3, 4)).astype(dtype), rng.standard_normal((4, 2)).astype(dtype)
    f = script(affine)
    bare, biased = Params(W), Params(W, np.full(2, 5.0, dtype))
    assert_same(f(bare, x), affine(bare, x))
    assert_same(f(biased, x), affine(biased, x), rtol=1e-5)  # the other answer compiles again
    assert_same(f(bare, x), affine(bare, x))


def test_hasattr_in_a_method_and_of_other_values():
    rng = np.random.default_rng(1)
    x, W = rng.standard_normal((3, 4)), rng.standard_normal((4, 2))
    layer = Layer(W, np.tanh)
    f = script(layer_forward)
    assert_same(f(layer, x), layer_forward(layer, x))
    layer.b = np.ones(2)
    assert_same(f(layer, x), layer_forward(layer, x))


def hasattrs(x: Tensor, n: int, xs: typing.List[Tensor]):
    return (hasattr(x, "shape"), hasattr(x, "nope"), hasattr(n, "bit_length"),
            hasattr(xs, "append"), hasattr(xs, "shape"))


def test_hasattr_of_values_asks_their_class():
    x = np.ones(3)
    assert script(hasattrs)(x, 2, [x]) == hasattrs(x, 2, [x]) == (True, False, True, True,
                                                                  False)


@pytest.mark.parametrize("act", [np.tanh, sigmoid, lambda z: np.maximum(z, 0.0)])
def test_a_function_held_by_an_attribute_is_called(act):
    rng = np.random.default_rng(2)
    x, W = rng.standard_normal((3, 4)), rng.standard_normal((4, 2))
    layer = Layer(W, act)
    f = script(layer_forward)
    assert_same(f(layer, x), layer_forward(layer, x))
    assert_same(script(act_by_name)(layer, x), act_by_name(layer, x))
    check_vjp(f, (layer, x + 0.1))


def test_another_function_compiles_again():
    rng = np.random.default_rng(3)
    x, W = rng.standard_normal((3, 4)), rng.standard_normal((4, 2))
    f = script(layer_forward)
    for act in (np.tanh, sigmoid, np.tanh):
        layer = Layer(W, act)
        assert_same(f(layer, x), layer_forward(layer, x))


def test_a_function_attribute_as_a_value_is_refused():
    layer = Layer(np.ones((2, 2)), np.tanh)
    with pytest.raises(ScriptError, match="holds a function"):
        script(act_as_value)(layer, np.ones(2))


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_cast_asarray_ascontiguousarray(dtype):
    rng = np.random.default_rng(4)
    x, n = rng.standard_normal((3, 4)).astype(dtype), np.array(2.0, dtype)
    assert_same(script(casts)(x), casts(x))
    assert_same(script(as_arrays)(x, n), as_arrays(x, n), rtol=1e-5)
    assert_same(script(as_arrays_written)(x), as_arrays_written(x))


def test_asarray_gradients():
    rng = np.random.default_rng(5)
    check_vjp(script(as_arrays), (rng.standard_normal((3, 4)), np.array(0.5)))
