"""A bool or str a call passes as a constant decides the callee's branches when it compiles:
Paddle's ``rnn_numpy.split_states(states, bidirectional)`` returns a list of arrays on one
branch and a list of pairs on the other, and each call passes a literal or an int attribute
compared with a constant."""

import numpy as np
import pytest

from script import ScriptError, Tensor, script


def unstack(array, axis=0):
    num = array.shape[axis]
    return [np.squeeze(piece, axis) for piece in np.split(array, num, axis)]


def split_states(states, bidirectional=False):
    states = unstack(states)
    if not bidirectional:
        return states
    return list(zip(states[::2], states[1::2]))


class Model:
    def __init__(self, directions):
        self.num_directions = directions


def literal_false(states: Tensor):
    return split_states(states, False)[0] * 2.0


def from_attribute(m: Model, states: Tensor):
    return split_states(states, m.num_directions == 2)[0] * 2.0


def pairs(m: Model, states: Tensor):
    forward, backward = split_states(states, m.num_directions == 2)[0]
    return forward - backward


def mode_of(x: Tensor, mode: str):
    return np.tanh(x) if mode == "tanh" else [x, x]


def by_name(x: Tensor):
    return mode_of(x, "tanh") * 2.0


def typed_by_its_annotation(x: Tensor, scale: float):
    return x * scale


def annotated_float(x: Tensor):
    return typed_by_its_annotation(x, "2")


def test_a_constant_bool_decides_the_callees_branches():
    s = np.arange(24.0).reshape(4, 2, 3)
    np.testing.assert_array_equal(script(literal_false)(s), literal_false(s))
    for m in (Model(1), Model(2)):
        f = from_attribute if m.num_directions == 1 else pairs
        np.testing.assert_array_equal(script(f)(m, s), f(m, s))


def test_a_constant_str_decides_the_callees_branches():
    x = np.linspace(-1, 1, 5)
    np.testing.assert_allclose(script(by_name)(x), by_name(x), rtol=1e-15)


def test_an_annotated_parameter_keeps_its_type():
    with pytest.raises(ScriptError, match="must be float, not str"):
        script(annotated_float)(np.ones(2))
