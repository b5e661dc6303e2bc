"""The class of every plain object a compiled function reaches is part of the layout it was
compiled for: a call passing an object of another class (with the same attributes) compiles
again, so its own methods run, values and gradients included. A method reached for two
different objects (a base class's ``__call__`` for the model, then for its layer) is two
compilations, not recursion; a method calling itself on the same object is refused."""

from typing import List

import numpy as np
import pytest

from script import ScriptError, Tensor, script
from tests.gradcheck import check_vjp
from tests.helpers import assert_same


class Cell:
    def __init__(self, W):
        self.W = W

    def forward(self, x):
        return np.tanh(x @ self.W)


class Linear(Cell):
    def forward(self, x):
        return x @ self.W * 10.0


class Other:  # unrelated to Cell, the same attribute
    def __init__(self, W):
        self.W = W

    def forward(self, x):
        return x @ self.W - 1.0


class Model:
    def __init__(self, rnn):
        self.rnn = rnn


def run(cell: Cell, x: Tensor) -> Tensor:
    return cell.forward(x)


def run_model(model: Model, x: Tensor) -> Tensor:
    return model.rnn.forward(x)


def run_all(cells: List[Cell], x: Tensor) -> Tensor:
    for cell in cells:
        x = cell.forward(x)
    return x


def _w(seed=0):
    return np.random.default_rng(seed).standard_normal((3, 3)) * 0.5


def test_an_object_of_another_class_runs_its_own_methods():
    x = np.random.default_rng(1).standard_normal((2, 3))
    f = script(run)
    for cell in (Cell(_w()), Linear(_w()), Other(_w()), Cell(_w(1))):
        assert_same(f(cell, x), run(cell, x))
    g = script(run_model)
    for rnn in (Cell(_w()), Linear(_w()), Cell(_w())):
        assert_same(g(Model(rnn), x), run_model(Model(rnn), x))
    h = script(run_all)
    for cells in ([Cell(_w()), Linear(_w())], [Linear(_w()), Cell(_w())]):
        assert_same(h(cells, x), run_all(cells, x))


def test_gradients_follow_the_class():
    x = np.random.default_rng(2).standard_normal((2, 3))
    f = script(run)
    for cell in (Cell(_w()), Linear(_w()), Cell(_w(1))):  # one compiled function, in turn
        check_vjp(f, (cell, x))


class Module:
    def __call__(self, *args):
        return self.forward(*args)


class Layer(Module):
    def __init__(self, W):
        self.W = W

    def forward(self, x):
        return np.tanh(x @ self.W)


class Net(Module):
    def __init__(self, layer):
        self.layer = layer

    def forward(self, x):
        return self.layer(x) * 2.0


class Loop:
    def forward(self, x):
        return self.forward(x)


def call_net(net: Net, x: Tensor) -> Tensor:
    return net(x)


def call_loop(obj: Loop, x: Tensor) -> Tensor:
    return obj.forward(x)


def test_a_base_call_for_two_objects_is_not_recursion():
    x = np.random.default_rng(3).standard_normal((2, 3))
    net = Net(Layer(_w()))
    assert_same(script(call_net)(net, x), call_net(net, x))
    check_vjp(script(call_net), (net, x))


def test_a_method_calling_itself_is_refused():
    with pytest.raises(ScriptError, match="recursive"):
        script(call_loop)(Loop(), np.ones(2))


class LM:
    def __init__(self, W):
        self.W = W

    def output_layer(self, outputs, scale=None):
        out = np.stack([h @ self.W for h in outputs], 1)
        return out if scale is None else out * scale


def via_method(m: LM, x: Tensor) -> Tensor:
    return m.output_layer([x, x * 2.0]) + m.output_layer([x], 3.0).sum()


def test_a_methods_unannotated_parameters_take_the_calls_types():
    x = np.random.default_rng(4).standard_normal((4, 3))
    m = LM(_w())
    assert_same(script(via_method)(m, x), via_method(m, x))
