"""Plain objects as the ported programs use them: a cell object handed to a module function
whose parameter has no annotation (Paddle's ``rnn(cell, inputs, initial_states)``), a method
attached to its class after the class body (d2l's ``@d2l.add_to_class``), and a plain class
constructed in compiled code (refused with what to write instead)."""

from itertools import groupby

import numpy as np
import pytest

from script import ScriptError, script


class Cell:
    def __init__(self):
        self.W = np.eye(3) * 0.5

    def __call__(self, x, h):
        return np.tanh(x @ self.W + h)


def rnn(cell, inputs, h):
    for t in range(inputs.shape[0]):
        h = cell(inputs[t], h)
    return h


class Layer:
    def __init__(self):
        self.cell = Cell()

    def forward(self, inputs, h):
        return rnn(self.cell, inputs, h)


def add_to_class(cls):
    def attach(fn):
        setattr(cls, fn.__name__, fn)
    return attach


class Scratch:
    def __init__(self):
        self.W = np.eye(3) * 0.25


@add_to_class(Scratch)
def forward(self, X):
    return np.tanh(X @ self.W)


class State:
    def __init__(self, n):
        self.s = np.zeros(n)


def makes_a_state(x):
    return State(x.shape[0]).s + x


def test_an_object_passed_to_an_unannotated_parameter_is_an_object_argument():
    layer, rng = Layer(), np.random.default_rng(0)
    inputs, h = rng.standard_normal((4, 2, 3)), rng.standard_normal((2, 3))
    np.testing.assert_allclose(script(layer.forward)(inputs, h), layer.forward(inputs, h),
                               rtol=1e-14)


def test_a_method_attached_to_its_class_scripts_as_a_bound_method():
    m, X = Scratch(), np.arange(6.0).reshape(2, 3)
    f = script(m.forward)
    np.testing.assert_allclose(f(X), m.forward(X), rtol=1e-15)
    m.W = np.eye(3)  # the object's attributes are read at every call
    np.testing.assert_allclose(f(X), np.tanh(X), rtol=1e-15)


def test_constructing_a_plain_class_says_to_make_it_a_script_class():
    with pytest.raises(ScriptError, match=r"State\(\): making an object of a plain class .* "
                       "decorate the class with @script") as info:
        script(makes_a_state)(np.ones(2))
    assert "State(x.shape[0])" in str(info.value)


def best_path(mat, chars: str):
    """CTCDecoder's best path: a string indexed by the items of an int array."""
    out = []
    last = -1
    for k in np.argmax(mat, axis=1):
        if k != last and k != len(chars):
            out.append(chars[k])
        last = k
    return "".join(out)


def grouped(mat):
    return [k for k, _ in groupby(np.argmax(mat, axis=1))]


def test_a_string_indexed_by_an_int_array_item_and_a_library_class_named():
    mat = np.array([[0.1, 0.7, 0.2], [0.6, 0.3, 0.1], [0.6, 0.3, 0.1], [0.2, 0.1, 0.7]])
    assert script(best_path)(mat, "ab") == best_path(mat, "ab") == "ba"
    with pytest.raises(ScriptError, match=r"itertools.groupby is not supported"):
        script(grouped)(mat)
