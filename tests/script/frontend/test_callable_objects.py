"""Calling an instance, ``layer(x)``, calls its class's ``__call__``: for a plain object argument
(its attributes read per call) and for a ``@script`` class object (also one a field holds,
``self.cell(h)``). Compiled equals plain Python (float32 and float64), gradients equal finite
differences, and an object without ``__call__`` is a ScriptError at the call."""

import numpy as np
import pytest

from script import ScriptError, Tensor, script
from tests.gradcheck import check_vjp
from tests.helpers import assert_same_at


class Dense:
    def __init__(self, W, b):
        self.W = W
        self.b = b

    def __call__(self, x, scale: float = 1.0):
        return np.tanh(x @ self.W + self.b) * scale


class TwoLayers:
    def __init__(self, first, second):
        self.first = first
        self.second = second


def dense_twice(layer: Dense, x: Tensor) -> Tensor:
    return layer(x) + layer(x * x, scale=2.0)


def two_layers(model: TwoLayers, x: Tensor) -> Tensor:
    return model.second(model.first(x))


@script
class Cell:
    def __init__(self, W: Tensor):
        self.W = W

    def __call__(self, h: Tensor) -> Tensor:
        return np.tanh(h @ self.W)


@script
class Stacked:
    def __init__(self, first: Cell, second: Cell):
        self.first = first
        self.second = second

    def __call__(self, h: Tensor) -> Tensor:
        return self.second(self.first(h))


def cell_steps(W: Tensor, x: Tensor) -> Tensor:
    cell = Cell(W)
    h = x
    for _ in range(2):
        h = cell(h)
    return h * 2.0


def stacked(W: Tensor, x: Tensor) -> Tensor:
    return Stacked(Cell(W), Cell(W * 0.5))(x)


def _arrays(dtype: str):
    r = np.random.default_rng(0)
    return (r.standard_normal((3, 3)).astype(dtype), r.standard_normal(3).astype(dtype),
            r.standard_normal((2, 3)).astype(dtype))


@pytest.mark.parametrize("dtype", ["float32", "float64"])
def test_calling_instances_is_pythons(dtype):
    W, b, x = _arrays(dtype)
    layer, model = Dense(W, b), TwoLayers(Dense(W, b), Dense(W * 0.5, b))
    assert_same_at(script(dense_twice)(layer, x), dense_twice(layer, x))
    assert_same_at(script(two_layers)(model, x), two_layers(model, x))
    assert_same_at(script(cell_steps)(W, x), cell_steps(W, x))
    assert_same_at(script(stacked)(W, x), stacked(W, x))


def test_gradients_through_call_match_finite_differences():
    W, b, x = _arrays("float64")
    check_vjp(script(dense_twice), (Dense(W, b), x))
    check_vjp(script(two_layers), (TwoLayers(Dense(W, b), Dense(W * 0.5, b)), x))
    check_vjp(script(cell_steps), (W, x))


@script
class NoCall:
    def __init__(self, W: Tensor):
        self.W = W


def calls_a_cell_without_call(W: Tensor) -> Tensor:
    return NoCall(W)(W)


def calls_an_array(W: Tensor) -> Tensor:
    return W(W)


@pytest.mark.parametrize("fn, match, line", [
    (calls_a_cell_without_call, "'NoCall' object has no method '__call__'",
     "return NoCall(W)(W)"),
    (calls_an_array, "a value of type Tensor is not callable", "return W(W)"),
])
def test_calling_what_has_no_call_is_refused_at_the_line(fn, match, line):
    with pytest.raises(ScriptError, match=match) as info:
        script(fn)(np.ones((2, 2)))
    assert line in str(info.value)


@script
class Squash:
    """No __init__: a class of methods only."""

    def __call__(self, h: Tensor) -> Tensor:
        return np.tanh(h) * 0.5


def squashed(x: Tensor) -> Tensor:
    squash = Squash()
    return squash(squash(x)) + x


@pytest.mark.parametrize("dtype", ["float32", "float64"])
def test_script_class_without_init_is_constructed_without_arguments(dtype):
    x = _arrays(dtype)[2]
    assert_same_at(script(squashed)(x), squashed(x))
    check_vjp(script(squashed), (x.astype(np.float64),))


def squash_with_argument(x: Tensor) -> Tensor:
    return Squash(x)(x)


def test_script_class_without_init_takes_no_arguments():
    with pytest.raises(ScriptError, match=r"Squash\(\) takes no arguments") as info:
        script(squash_with_argument)(np.ones(2))
    assert "return Squash(x)(x)" in str(info.value)
