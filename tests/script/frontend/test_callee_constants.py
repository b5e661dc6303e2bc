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


def flipper(x, flip):
    out = x
    for _ in range(3):
        if flip:
            out = out * 2.0
        flip = not flip  # the parameter changes: the constant stands for its first value only
    return out


def flips(x: Tensor):
    return flipper(x, True)


def rebound_under_a_condition(x, mode):
    if x.sum() > 0:
        mode = "relu"
    return np.maximum(x, 0) if mode == "relu" else np.tanh(x)


def relu_or_tanh(x: Tensor):
    return rebound_under_a_condition(x, "tanh")


def read_by_a_lambda(x, mode):
    f = lambda y: y * 3 if mode == "a" else y  # noqa: E731
    return f(x)


def triples(x: Tensor):
    return read_by_a_lambda(x, "a")


def test_a_parameter_the_callee_rebinds_or_a_lambda_reads_is_not_compiled_in():
    from tests.gradcheck import check_vjp
    x = np.array([0.5, -1.5])
    for f in (flips, relu_or_tanh, triples):
        np.testing.assert_allclose(script(f)(x), f(x), rtol=1e-15)
    check_vjp(script(flips), (x,))


def static_rebound(x: Tensor):
    act = np.exp
    out = x
    for _ in range(3):
        out = act(out)
        act = np.negative  # the next iteration calls another function
    return out


def test_a_compile_time_object_rebound_in_a_loop_is_refused():
    with pytest.raises(ScriptError, match="'act' refers to another object after an iteration"):
        script(static_rebound)(np.ones(2))
