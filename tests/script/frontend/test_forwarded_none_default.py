"""Optional values handed on.

An unannotated ``state=None`` (an optional array) passed to a callee that takes another
Optional type (d2l's ``RNNLMScratch.forward(X, state=None)`` calling its RNN's
``forward(inputs, state)`` whose state is a tuple): a call that passes None compiles, one that
passes an array is refused at the inner call's line, before anything runs. An optional array
passed to a function taking a plain object, or read by ``np.where`` (Paddle's ``rnn_numpy``),
is None or an array as the call makes it."""

from collections.abc import Hashable, Sequence
from typing import Optional, Tuple

import numpy as np
import pytest

from script import ScriptError, Tensor, script
from tests.gradcheck import check_vjp


class RNN:
    def __init__(self):
        self.W = np.eye(3) * 0.5

    def forward(self, inputs, state: Optional[Tuple[Tensor]] = None):
        if state is None:
            state = np.zeros((inputs.shape[1], 3))
        else:
            state, = state
        for X in inputs:
            state = np.tanh(X @ self.W + state)
        return state


class LM:
    def __init__(self, rnn):
        self.rnn = rnn

    def forward(self, X, state=None):
        return self.rnn.forward(X, state) * 2.0


def test_a_none_default_handed_on_compiles_where_it_is_none():
    lm, X = LM(RNN()), np.random.default_rng(0).standard_normal((4, 2, 3))
    f = script(LM.forward)
    np.testing.assert_allclose(f(lm, X), lm.forward(X), rtol=1e-13)
    np.testing.assert_allclose(f(lm, X, None), lm.forward(X), rtol=1e-13)


def test_an_array_where_the_callee_takes_a_tuple_is_refused_at_the_call_a_tuple_runs():
    lm, X = LM(RNN()), np.ones((4, 2, 3))
    with pytest.raises(ScriptError, match=r"RNN.forward\(\) argument 'state' must be") as info:
        script(LM.forward)(lm, X, np.zeros((2, 3)))
    assert "self.rnn.forward(X, state)" in str(info.value)
    state = (np.zeros((2, 3)),)  # a tuple for the unannotated state: typed by the call
    np.testing.assert_allclose(script(LM.forward)(lm, X, state), lm.forward(X, state),
                               rtol=1e-13)


class Cell:
    def __init__(self):
        self.W = np.eye(3) * 0.5

    def forward(self, x, hx=None):
        if hx is None:
            hx = np.zeros((x.shape[0], 3))
        h = np.tanh(x @ self.W + hx)
        return h, h


class PairCell:
    def __init__(self):
        self.w = np.ones(3)

    def forward(self, x, hx: Optional[Tuple[Tensor, Tensor]] = None):
        if hx is None:
            hx = (x, x)
        h, c = hx
        return h + x * self.w, (h * c, c)


def rnn(cell: Cell, inputs, initial_states, mask=None):
    """Paddle's ``rnn_numpy.rnn``: the state starts as what the caller passes (None or an
    array), each masked step keeps the old state's rows (``np.where``)."""
    state = initial_states
    outputs = []
    for t in range(inputs.shape[0]):
        y, new_state = cell.forward(inputs[t], state)
        outputs.append(y)
        state = new_state if mask is None else np.where(mask[t], new_state, state)
    return np.stack(outputs), state


def layer(cell: Cell, inputs: Tensor, initial_states=None, mask=None):
    return rnn(cell, inputs, initial_states, mask)


def pair_step(cell: PairCell, x, state):
    y, state = cell.forward(x, state)
    return state


def pair_layer(cell: PairCell, x: Tensor, h0: Tuple[Tensor, Tensor]):
    return pair_step(cell, x, h0)


def test_an_optional_state_handed_to_a_function_taking_an_object():
    rng = np.random.default_rng(1)
    cell, x, h0 = Cell(), rng.standard_normal((5, 2, 3)), rng.standard_normal((2, 3))
    mask = rng.random((5, 2, 1)) > 0.3
    f = script(layer)
    for args in [(cell, x), (cell, x, h0), (cell, x, h0, mask)]:
        for got, want in zip(f(*args), layer(*args)):
            np.testing.assert_allclose(got, want, rtol=1e-13)
    with pytest.raises(ScriptError, match=r"np.where\(\) argument 'b' must be"):
        f(cell, x, None, mask)  # np.where of a state that is None at the first step
    check_vjp(f, (cell, x, h0, mask))


def test_a_tuple_state_handed_to_a_function_taking_an_object():
    cell, x = PairCell(), np.arange(3.0)
    h0 = (np.ones(3), np.full(3, 2.0))
    for got, want in zip(script(pair_layer)(cell, x, h0), pair_layer(cell, x, h0)):
        np.testing.assert_array_equal(got, want)


class Bi:
    """Paddle's ``BiRNN.forward``: one state for both directions, or a pair."""

    def forward(self, inputs, initial_states=None):
        if isinstance(initial_states, (list, tuple)):
            assert len(initial_states) == 2, "need 2"
        else:
            initial_states = [initial_states, initial_states]
        a, b = initial_states
        return inputs + a - b


def bi_pair(m: Bi, x: Tensor, h: Tuple[Tensor, Tensor]):
    return m.forward(x, h)


def narrowed(x: Tensor, state: Optional[Tuple[Tensor, Tensor]] = None):
    if isinstance(state, tuple):
        return x + state[0] * state[1]  # not None where isinstance holds
    return x


def test_isinstance_narrows_and_a_tuple_passed_for_a_none_default_is_a_tuple():
    x, h = np.ones(3), (np.full(3, 2.0), np.full(3, 0.5))
    np.testing.assert_array_equal(script(bi_pair)(Bi(), x, h), bi_pair(Bi(), x, h))
    f = script(narrowed)
    np.testing.assert_array_equal(f(x, h), narrowed(x, h))
    np.testing.assert_array_equal(f(x), narrowed(x))


NoneT = type(None)


def isinstance_of_an_alias(x: Tensor, s: Optional[Tensor] = None):
    if isinstance(s, (NoneT, np.ndarray)):  # None is an instance: s may be None here
        return x * 0 if s is None else x + s
    return x * 5


def test_isinstance_of_a_class_under_another_name_does_not_narrow():
    x = np.ones(2)
    f = script(isinstance_of_an_alias)
    np.testing.assert_array_equal(f(x), isinstance_of_an_alias(x))
    np.testing.assert_array_equal(f(x, x), isinstance_of_an_alias(x, x))


def hashable_or_not(x: Tensor, s: Optional[Tensor] = None, pair=None):
    a = x * 0 if isinstance(s, Hashable) else x * 5  # None is Hashable, an array is not
    b = a + 1 if isinstance(pair, Sequence) else a  # a tuple is a Sequence
    return b


def test_isinstance_of_an_abstract_class_is_pythons():
    x = np.ones(2)
    f = script(hashable_or_not)
    for args in [(x,), (x, x), (x, None, (x,)), (x, x, (2 * x,))]:
        np.testing.assert_array_equal(f(*args), hashable_or_not(*args))


def logits(h, w):
    return h @ w.T


def scored(h, w=None):
    return logits(h, w)  # an array at every call here


def through_a_default(x: Tensor, W: Tensor):
    return scored(x, W)


def attn(h, w, b):
    return h @ w.T + b


def doubled(h, w, b):
    return h * 2.0


def with_scores(h, w: Optional[np.ndarray], b: Optional[np.ndarray], score):
    return score(h, w, b)


def maybe_weighted(x, w):
    if w is not None:
        return x @ w
    return x * 2.0


def caffe2_style(x: Tensor, W: Tensor, b: Tensor):
    """Caffe2's attention references: one helper called with arrays at one site and None at
    another (explicitly, for a parameter without a default)."""
    return (with_scores(x, W, b, attn) + with_scores(x, None, None, doubled)
            + maybe_weighted(x, None) + maybe_weighted(x, W))


def test_an_array_passed_for_an_optional_parameter_is_an_array_in_the_callee():
    rng = np.random.default_rng(4)
    x, W, b = rng.standard_normal((2, 3)), rng.standard_normal((3, 3)), rng.standard_normal(3)
    np.testing.assert_allclose(script(through_a_default)(x, W), through_a_default(x, W),
                               rtol=1e-14)
    np.testing.assert_allclose(script(caffe2_style)(x, W, b), caffe2_style(x, W, b),
                               rtol=1e-14)
    check_vjp(script(caffe2_style), (x, W, b))
