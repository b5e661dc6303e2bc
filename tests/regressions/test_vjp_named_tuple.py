"""A NamedTuple on the differentiated path (an LSTM cell returning ``LSTMState(hy, cy)``) lost
its cotangent: the NamedTuple was not a differentiable type, so the cotangent given for the
state output was dropped and the gradient came out wrong without a word. NamedTuples are now
differentiated as the tuple of their fields; the gradient of a NamedTuple argument is a
NamedTuple of the same class."""

from typing import NamedTuple, Tuple

import numpy as np

from script import Tensor, script, vjp
from tests.gradcheck import numerical_grad


class State(NamedTuple):
    h: Tensor
    c: Tensor


def step(x: Tensor, s: State) -> Tuple[Tensor, State]:
    c = np.tanh(x + s.c)
    h = c * s.h
    return h * 2.0, State(h, c)


def flat(x, h, c):
    """``step`` of plain arrays, for finite differences."""
    out, s = step(x, State(h, c))
    return out, (s.h, s.c)


def test_gradient_through_a_named_tuple_output_and_argument():
    rng = np.random.default_rng(0)
    x, h, c = (rng.standard_normal((2, 3)) for _ in range(3))
    ct = (rng.standard_normal((2, 3)), (rng.standard_normal((2, 3)), rng.standard_normal((2, 3))))
    _, backward = vjp(script(step), x, State(h, c))
    gx, gs = backward((ct[0], State(*ct[1])))
    assert isinstance(gs, State)
    for k, got in enumerate((gx, gs.h, gs.c)):
        want = numerical_grad(flat, (x, h, c), ct, (k,), 1e-6)
        np.testing.assert_allclose(got, want, rtol=1e-6, atol=1e-8)


def test_gradient_through_a_named_tuple_state_carried_by_a_loop():
    """custom_lstms' ``LSTMLayer`` carries its ``LSTMState`` through the loop over time: the
    reverse loop dropped the state's cotangent between steps (gradients off by up to 2.2)."""
    from tests.programs import custom_lstms as cl

    rng = np.random.default_rng(3)
    layer = cl.LSTMLayer(cl.LSTMCell, 3, 4, rng)
    x = rng.standard_normal((5, 2, 3))
    h0, c0 = rng.standard_normal((2, 4)), rng.standard_normal((2, 4))
    ct = (rng.standard_normal((5, 2, 4)), (rng.standard_normal((2, 4)),
                                            rng.standard_normal((2, 4))))
    _, backward = vjp(script(layer), x, cl.LSTMState(h0, c0))
    gx, gs = backward((ct[0], cl.LSTMState(*ct[1])))
    assert isinstance(gs, cl.LSTMState)

    def run(x, h, c):
        out, state = layer(x, cl.LSTMState(h, c))
        return out, (state.hx, state.cx)

    for k, got in enumerate((gx, gs.hx, gs.cx)):
        want = numerical_grad(run, (x, h0, c0), ct, (k,), 1e-6)
        np.testing.assert_allclose(got, want, rtol=1e-6, atol=1e-8)
