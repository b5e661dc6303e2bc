"""Arguments for the cell family of ``cells.py``, by name (kept apart from the programs, whose
module holds scripted functions only)."""

from tests.helpers import rand

CELLS = ["lstm_cell", "flat_lstm_cell", "premul_lstm_cell", "premul_lstm_cell_no_bias",
         "milstm_cell", "gru_cell", "rnn_tanh_cell", "rnn_relu_cell", "lstm_layer",
         "lstm_layer_indexed", "lstm_multilayer"]
"""The cells ``cell_args`` makes arguments for."""


def _lstm_weights(rng, dtype, inp, hid):
    return (rand(rng, (4 * hid, inp), dtype), rand(rng, (4 * hid, hid), dtype),
            rand(rng, (4 * hid,), dtype), rand(rng, (4 * hid,), dtype))


def cell_args(name, rng, dtype, batch, inp, hid, seq=4, layers=2):
    """Random arguments for ``cells.<name>``: ``batch`` rows of ``inp`` inputs and ``hid`` hidden
    units, sequences of ``seq`` steps, ``layers`` layers."""
    x = rand(rng, (batch, inp), dtype)
    h = rand(rng, (batch, hid), dtype)
    c = rand(rng, (batch, hid), dtype)
    w = _lstm_weights(rng, dtype, inp, hid)
    if name == "lstm_cell":
        return (x, (h, c), *w)
    if name == "flat_lstm_cell":
        return (x, h, c, *w)
    if name == "premul_lstm_cell":
        return (rand(rng, (batch, 4 * hid), dtype), (h, c), w[1], w[2], w[3])
    if name == "premul_lstm_cell_no_bias":
        return (rand(rng, (batch, 4 * hid), dtype), (h, c), w[1], w[3])
    if name == "milstm_cell":
        vecs = [rand(rng, (4 * hid,), dtype) for _ in range(4)]
        return (x, h, c, w[0], w[1], *vecs)
    if name == "gru_cell":
        return (x, h, rand(rng, (3 * hid, inp), dtype), rand(rng, (3 * hid, hid), dtype),
                rand(rng, (3 * hid,), dtype), rand(rng, (3 * hid,), dtype))
    if name in ("rnn_tanh_cell", "rnn_relu_cell"):
        return (x, h, rand(rng, (hid, inp), dtype), rand(rng, (hid, hid), dtype),
                rand(rng, (hid,), dtype), rand(rng, (hid,), dtype))
    xs = rand(rng, (seq, batch, inp), dtype)
    if name in ("lstm_layer", "lstm_layer_indexed"):
        return (xs, h, c, *w)
    if name == "lstm_multilayer":
        params = list(w) + list(_lstm_weights(rng, dtype, hid, hid))
        hs = rand(rng, (layers, batch, hid), dtype)
        cs = rand(rng, (layers, batch, hid), dtype)
        return (xs, hs, cs, params)
    raise KeyError(name)
