"""An unannotated ``state=None`` (an optional array) handed on to a callee that takes another
Optional type (d2l's ``RNNLMScratch.forward(X, state=None)`` calling its RNN's
``forward(inputs, state)`` whose state is a tuple): a call that passes None compiles, one that
passes an array is refused at the inner call's line, before anything runs."""

from typing import Optional, Tuple

import numpy as np
import pytest

from script import ScriptError, SignatureError, Tensor, script


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


def test_an_array_where_the_callee_takes_a_tuple_is_refused_at_the_call():
    lm, X = LM(RNN()), np.ones((4, 2, 3))
    with pytest.raises(ScriptError, match=r"RNN.forward\(\) argument 'state' must be") as info:
        script(LM.forward)(lm, X, np.zeros((2, 3)))
    assert "self.rnn.forward(X, state)" in str(info.value)
    with pytest.raises(SignatureError, match="state"):
        script(LM.forward)(lm, X, (np.zeros((2, 3)),))
