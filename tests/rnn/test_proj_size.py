"""``rnn.LSTM(proj_size=P)``: torch's projected LSTM (``h = W_hr (o * tanh(c))``): parameter
names and shapes, output/state shapes, values and gradients against a numpy reference and torch
(when installed), state checks naming the two shapes, and the constructor's errors."""

from __future__ import annotations

import numpy as np
import pytest

import rnn
from rnn.checks import RNNInputError
from script import vjp

SEQ, BATCH, INPUT, HIDDEN, PROJ = 5, 3, 4, 6, 2
CONFIGS = [(1, False, False), (2, True, False), (2, False, True)]
"""(layers, bidirectional, batch_first)."""


def _sigmoid(v):
    return 1.0 / (1.0 + np.exp(-v))


def reference_lstm(m, x, h0, c0):
    """A projected LSTM in float64 numpy, time-major ``x`` (T, B, I)."""
    d = 2 if m.bidirectional else 1
    layer_input = x.astype("float64")
    h_n, c_n = [], []
    for k in range(m.num_layers):
        outputs = []
        for direction in range(d):
            suffix = f"_l{k}" + ("_reverse" if direction else "")
            w = {name: m.get_parameter(name + suffix).data.astype("float64")
                 for name in ("weight_ih", "weight_hh", "bias_ih", "bias_hh", "weight_hr")}
            h, c = h0[k * d + direction].astype("float64"), c0[k * d + direction].astype("float64")
            steps = range(len(layer_input))[::-1] if direction else range(len(layer_input))
            out = [None] * len(layer_input)
            for t in steps:
                gates = layer_input[t] @ w["weight_ih"].T + h @ w["weight_hh"].T + \
                    w["bias_ih"] + w["bias_hh"]
                i, f, g, o = np.split(gates, 4, axis=1)
                c = _sigmoid(f) * c + _sigmoid(i) * np.tanh(g)
                h = (_sigmoid(o) * np.tanh(c)) @ w["weight_hr"].T
                out[t] = h
            outputs.append(np.stack(out))
            h_n.append(h)
            c_n.append(c)
        layer_input = np.concatenate(outputs, axis=-1)
    return layer_input, np.stack(h_n), np.stack(c_n)


def _states(m, seed=3):
    rng = np.random.default_rng(seed)
    rows = m.num_layers * (2 if m.bidirectional else 1)
    return (rng.standard_normal((rows, BATCH, PROJ)).astype("float32"),
            rng.standard_normal((rows, BATCH, HIDDEN)).astype("float32"))


@pytest.mark.parametrize("layers,bidir,batch_first", CONFIGS)
def test_projected_lstm_equals_the_numpy_reference(layers, bidir, batch_first):
    m = rnn.LSTM(INPUT, HIDDEN, num_layers=layers, bidirectional=bidir, proj_size=PROJ,
                 batch_first=batch_first, rng=0)
    d = 2 if bidir else 1
    assert m.weight_hr_l0.shape == (PROJ, HIDDEN) and m.weight_hh_l0.shape == (4 * HIDDEN, PROJ)
    if layers > 1:
        assert m.weight_ih_l1.shape == (4 * HIDDEN, d * PROJ)
    x = np.random.default_rng(1).standard_normal((SEQ, BATCH, INPUT)).astype("float32")
    h0, c0 = _states(m)
    layout = x.transpose(1, 0, 2) if batch_first else x
    out, (h, c) = m(layout, (h0, c0))
    out = out.transpose(1, 0, 2) if batch_first else out
    ref_out, ref_h, ref_c = reference_lstm(m, x, h0, c0)
    assert out.shape == (SEQ, BATCH, d * PROJ) and h.shape == h0.shape and c.shape == c0.shape
    np.testing.assert_allclose(out, ref_out, rtol=1e-4, atol=1e-5)
    np.testing.assert_allclose(h, ref_h, rtol=1e-4, atol=1e-5)
    np.testing.assert_allclose(c, ref_c, rtol=1e-4, atol=1e-5)
    assert "prim::FusionGroup" in str(m.graph_for(layout, (h0, c0)))
    zero_out, (zero_h, zero_c) = m(x[:, 0])  # hx None, unbatched (T, I)
    assert zero_out.shape == (SEQ, d * PROJ) and zero_h.shape == (layers * d, PROJ)
    assert zero_c.shape == (layers * d, HIDDEN)


@pytest.mark.parametrize("layers,bidir,batch_first", CONFIGS)
def test_projected_lstm_values_and_gradients_equal_torch(layers, bidir, batch_first):
    torch = pytest.importorskip("torch")
    t = torch.nn.LSTM(INPUT, HIDDEN, num_layers=layers, bidirectional=bidir, proj_size=PROJ,
                      batch_first=batch_first)
    m = rnn.LSTM(INPUT, HIDDEN, num_layers=layers, bidirectional=bidir, proj_size=PROJ,
                 batch_first=batch_first)
    assert list(dict(m.named_parameters())) == [n for n, _ in t.named_parameters()]
    m.load_state_dict({k: v.detach().numpy().copy() for k, v in t.state_dict().items()})
    shape = (BATCH, SEQ, INPUT) if batch_first else (SEQ, BATCH, INPUT)
    x = np.random.default_rng(1).standard_normal(shape).astype("float32")
    h0, c0 = _states(m)
    (out, (h, c)), backward = vjp(m, x, (h0, c0))
    rng = np.random.default_rng(4)
    cts = [rng.standard_normal(a.shape).astype("float32") for a in (out, h, c)]
    gx, (gh0, gc0), _ = backward((cts[0], (cts[1], cts[2])))
    tx, th0, tc0 = (torch.tensor(a, requires_grad=True) for a in (x, h0, c0))
    t_out, (t_h, t_c) = t(tx, (th0, tc0))
    sum((a * torch.tensor(b)).sum() for a, b in zip((t_out, t_h, t_c), cts)).backward()
    for ours, theirs in [(out, t_out), (h, t_h), (c, t_c), (gx, tx.grad), (gh0, th0.grad),
                         (gc0, tc0.grad)]:
        np.testing.assert_allclose(ours, theirs.detach().numpy(), rtol=1e-4, atol=1e-5)
    for name, p in t.named_parameters():
        np.testing.assert_allclose(m.get_parameter(name).grad, p.grad.numpy(), rtol=1e-4,
                                   atol=1e-5, err_msg=name)


def test_states_are_checked_with_their_two_shapes():
    m = rnn.LSTM(INPUT, HIDDEN, proj_size=PROJ, rng=0)
    x = np.zeros((SEQ, BATCH, INPUT), "float32")
    h0 = np.zeros((1, BATCH, PROJ), "float32")
    c0 = np.zeros((1, BATCH, HIDDEN), "float32")
    with pytest.raises(RNNInputError, match=r"c0 \(hx\[1\]\) has shape \(1, 3, 2\); expected "
                                            r"\(1, 3, 6\)"):
        m(x, (h0, h0))
    with pytest.raises(RNNInputError, match=r"h0 \(hx\[0\]\) has shape \(1, 3, 6\); expected "
                                            r"\(1, 3, 2\)"):
        m(x, (c0, c0))
    with pytest.raises(RNNInputError, match=r"shapes \(1, 3, 2\) and \(1, 3, 6\)"):
        m(x, h0)
    assert m(x, (h0, c0))[0].shape == (SEQ, BATCH, PROJ)


@pytest.mark.parametrize("proj", [-1, HIDDEN, HIDDEN + 1])
def test_bad_proj_size_is_refused_as_torch_does(proj):
    with pytest.raises(ValueError, match="proj_size"):
        rnn.LSTM(INPUT, HIDDEN, proj_size=proj)
