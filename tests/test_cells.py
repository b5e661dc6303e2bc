"""The fastrnns cell family: scripted results equal the plain Python function's."""

import numpy as np
import pytest

from script import script
from tests.programs import cells

SHAPES = [(3, 5, 4), (1, 5, 4), (2, 3, 1), (1, 1, 1), (8, 16, 32)]  # (batch, input, hidden)
TOL = {np.float32: dict(rtol=1e-5, atol=1e-6), np.float64: dict(rtol=1e-6, atol=1e-12)}


def _rand(rng, dtype, *shape):
    return rng.standard_normal(shape).astype(dtype)


def _lstm_weights(rng, dtype, inp, hid):
    return (_rand(rng, dtype, 4 * hid, inp), _rand(rng, dtype, 4 * hid, hid),
            _rand(rng, dtype, 4 * hid), _rand(rng, dtype, 4 * hid))


def _args(name, rng, dtype, batch, inp, hid, seq=4, layers=2):
    x = _rand(rng, dtype, batch, inp)
    h = _rand(rng, dtype, batch, hid)
    c = _rand(rng, dtype, batch, hid)
    w = _lstm_weights(rng, dtype, inp, hid)
    if name == "lstm_cell":
        return (x, (h, c), *w)
    if name == "flat_lstm_cell":
        return (x, h, c, *w)
    if name == "premul_lstm_cell":
        return (_rand(rng, dtype, batch, 4 * hid), (h, c), w[1], w[2], w[3])
    if name == "premul_lstm_cell_no_bias":
        return (_rand(rng, dtype, batch, 4 * hid), (h, c), w[1], w[3])
    if name == "milstm_cell":
        vecs = [_rand(rng, dtype, 4 * hid) for _ in range(4)]
        return (x, h, c, w[0], w[1], *vecs)
    if name == "gru_cell":
        return (x, h, _rand(rng, dtype, 3 * hid, inp), _rand(rng, dtype, 3 * hid, hid),
                _rand(rng, dtype, 3 * hid), _rand(rng, dtype, 3 * hid))
    if name in ("rnn_tanh_cell", "rnn_relu_cell"):
        return (x, h, _rand(rng, dtype, hid, inp), _rand(rng, dtype, hid, hid),
                _rand(rng, dtype, hid), _rand(rng, dtype, hid))
    xs = _rand(rng, dtype, seq, batch, inp)
    if name in ("lstm_layer", "lstm_layer_indexed"):
        return (xs, h, c, *w)
    if name == "lstm_multilayer":
        params = list(w) + list(_lstm_weights(rng, dtype, hid, hid))
        hs = _rand(rng, dtype, layers, batch, hid)
        cs = _rand(rng, dtype, layers, batch, hid)
        return (xs, hs, cs, params)
    raise KeyError(name)


CELLS = ["lstm_cell", "flat_lstm_cell", "premul_lstm_cell", "premul_lstm_cell_no_bias",
         "milstm_cell", "gru_cell", "rnn_tanh_cell", "rnn_relu_cell", "lstm_layer",
         "lstm_layer_indexed", "lstm_multilayer"]


def _assert_same(got, want, dtype):
    if isinstance(want, tuple):
        assert isinstance(got, tuple) and len(got) == len(want)
        for g, w in zip(got, want):
            _assert_same(g, w, dtype)
        return
    got = np.asarray(got)
    assert got.dtype == np.asarray(want).dtype
    assert got.shape == np.asarray(want).shape
    np.testing.assert_allclose(got, want, **TOL[dtype])


@pytest.mark.parametrize("name", CELLS)
@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_cell_matches_python(name, dtype):
    fn = getattr(cells, name)
    scripted = script(fn)
    rng = np.random.default_rng(0)
    for batch, inp, hid in SHAPES:
        args = _args(name, rng, dtype, batch, inp, hid)
        _assert_same(scripted(*args), fn(*args), dtype)


def test_cell_reuses_specialization():
    scripted = script(cells.flat_lstm_cell)
    rng = np.random.default_rng(1)
    args = _args("flat_lstm_cell", rng, np.float32, 3, 5, 4)
    scripted(*args)
    scripted(*args)
    assert scripted.compiled_signatures == 1
    scripted(*_args("flat_lstm_cell", rng, np.float32, 2, 5, 4))
    assert scripted.compiled_signatures == 2
    scripted(*_args("flat_lstm_cell", rng, np.float64, 2, 5, 4))
    assert scripted.compiled_signatures == 3
