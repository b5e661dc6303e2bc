"""A two-layer ``rnn.LSTM`` trained with ``vjp``: the second layer's input projection reads the
first layer's output, a buffer the layout passes make after the RNN passes. Its length (T) was
known only after them, so the projection and the second layer's loop kept an unknown T and the
loop ran as Python in the training forward (one native loop of two; the plain forward had both).
Shapes are propagated again after the layout passes."""

import gc

import numpy as np

import rnn
from script import vjp
from script.runtime.function import ScriptFunction


def _training_forward_sources():
    for obj in gc.get_objects():
        if isinstance(obj, ScriptFunction) and obj.__dict__.get("_gradient_cache"):
            for cg in obj.__dict__["_gradient_cache"].values():
                yield cg.forward.__rnnscript_source__


def test_every_layer_of_a_stacked_lstm_trains_in_a_native_loop():
    lstm = rnn.LSTM(6, 5, num_layers=2)
    x = (np.random.default_rng(0).standard_normal((9, 3, 6)) * 0.5).astype(np.float32)
    out, back = vjp(lstm, x)
    grads = back((np.ones_like(out[0]), (np.ones_like(out[1][0]), np.ones_like(out[1][1]))))
    assert all(g is not None for g in grads[:1])
    sources = [s for s in _training_forward_sources() if "LSTM" in s or "_loop" in s]
    assert sources and max(s.count("= _loop") for s in sources) == 2
