"""Every gradient of ``rnn.LSTM`` / ``GRU`` / ``RNN`` against central finite differences, element
by element over whole arrays: every parameter of every layer and direction, the input, the
initial states, and padded batches (``lengths``). float64, small sizes, no torch needed.

The objective is ``<cotangents, outputs>`` of the plain eager module with random cotangents on
every output (the sequence output and the final states), so a gradient that is wrong, dropped or
summed into the wrong direction or layer shows in at least one element.
"""

from __future__ import annotations

import numpy as np
import pytest

import rnn
from script import script, vjp

SEQ, BATCH, INPUT, HIDDEN = 3, 2, 3, 2
EPS = 1e-6


def make(mode, layers, bidir, batch_first, seed=0):
    kwargs = {"nonlinearity": "relu"} if mode == "RNN-relu" else {}
    cls = getattr(rnn, mode.split("-")[0])
    return cls(INPUT, HIDDEN, num_layers=layers, bidirectional=bidir, batch_first=batch_first,
               rng=seed, dtype="float64", **kwargs)


def inputs(mode, layers, directions, batch_first, seed=1):
    rng = np.random.default_rng(seed)
    x = rng.standard_normal((BATCH, SEQ, INPUT) if batch_first else (SEQ, BATCH, INPUT))
    states = [0.5 * rng.standard_normal((layers * directions, BATCH, HIDDEN))
              for _ in range(2 if mode == "LSTM" else 1)]
    return x, states


def pack(mode, states):
    return tuple(states) if mode == "LSTM" else states[0]


def flatten(mode, result):
    """(output, h_n[, c_n]) of a front end's result."""
    out, state = result
    return [out, *state] if mode == "LSTM" else [out, state]


def numerical(objective, array):
    grad = np.zeros_like(array)
    for idx in np.ndindex(array.shape):
        saved = array[idx]
        array[idx] = saved + EPS
        up = objective()
        array[idx] = saved - EPS
        down = objective()
        array[idx] = saved
        grad[idx] = (up - down) / (2 * EPS)
    return grad


def close(got, want, what):
    np.testing.assert_allclose(got, want, rtol=1e-6, atol=1e-8, err_msg=what)


CONFIGS = [(mode, layers, bidir, batch_first)
           for mode in ("LSTM", "GRU", "RNN", "RNN-relu")
           for layers, bidir, batch_first in ((1, False, False), (2, True, True))]


@pytest.mark.parametrize("mode,layers,bidir,batch_first", CONFIGS)
def test_every_gradient_matches_finite_differences(mode, layers, bidir, batch_first):
    directions = 2 if bidir else 1
    m = make(mode, layers, bidir, batch_first)
    x, states = inputs(mode, layers, directions, batch_first)
    outputs, backward = vjp(script(m), x, pack(mode, states))
    rng = np.random.default_rng(7)
    cts = [rng.standard_normal(o.shape) for o in flatten(mode, outputs)]

    def objective():
        got = flatten(mode, m(x, pack(mode, states)))
        return sum(float((g * c).sum()) for g, c in zip(got, cts))

    m.zero_grad()
    grads = backward((cts[0], tuple(cts[1:])) if mode == "LSTM" else tuple(cts))
    gx, gstate = grads[:2]  # (and None for lengths)
    close(gx, numerical(objective, x), "input")
    for k, (g, s) in enumerate(zip(gstate if mode == "LSTM" else [gstate], states)):
        close(g, numerical(objective, s), f"initial state {k}")
    for name, p in m.named_parameters():
        assert p.grad is not None, name
        close(p.grad, numerical(objective, p.data), name)


@pytest.mark.parametrize("mode", ["LSTM", "GRU"])
def test_padded_batch_gradients_match_finite_differences(mode):
    """Sequences of lengths 3 and 1: steps past a sequence's end get no gradient, and the final
    state of the short one is its state at step 1."""
    m = make(mode, 2, True, False, seed=2)
    x, states = inputs(mode, 2, 2, False, seed=3)
    lengths = np.array([SEQ, 1])
    outputs, backward = vjp(script(m), x, pack(mode, states), lengths)
    rng = np.random.default_rng(8)
    cts = [rng.standard_normal(o.shape) for o in flatten(mode, outputs)]

    def objective():
        got = flatten(mode, m(x, pack(mode, states), lengths))
        return sum(float((g * c).sum()) for g, c in zip(got, cts))

    m.zero_grad()
    grads = backward((cts[0], tuple(cts[1:])) if mode == "LSTM" else tuple(cts))
    close(grads[0], numerical(objective, x), "input")
    assert not grads[0][1:, 1].any()  # past the end of the second sequence
    for name, p in m.named_parameters():
        close(p.grad, numerical(objective, p.data), name)
