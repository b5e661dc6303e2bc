"""``rnn.LSTM`` / ``GRU`` / ``RNN`` against an independent numpy implementation (everywhere) and
against ``torch.nn`` with the same weights (when torch is installed): outputs, final states and
gradients, eager and scripted, uni- and bidirectional, 1 and 3 layers, batch_first both ways."""

from __future__ import annotations

import numpy as np
import pytest

import rnn
from script import script, vjp

SEQ, BATCH, INPUT, HIDDEN = 5, 3, 4, 6
CONFIGS = [(layers, bidir, batch_first) for layers in (1, 3) for bidir in (False, True)
           for batch_first in (False, True)]


# -- an independent numpy reference ---------------------------------------------------------------
def sigmoid(x):
    return 1.0 / (1.0 + np.exp(-x))


def lstm_step(x, h, c, w_ih, w_hh, b_ih, b_hh):
    i, f, g, o = np.split(x @ w_ih.T + b_ih + h @ w_hh.T + b_hh, 4, axis=1)
    c = sigmoid(f) * c + sigmoid(i) * np.tanh(g)
    return sigmoid(o) * np.tanh(c), c


def gru_step(x, h, c, w_ih, w_hh, b_ih, b_hh):
    i_r, i_z, i_n = np.split(x @ w_ih.T + b_ih, 3, axis=1)
    h_r, h_z, h_n = np.split(h @ w_hh.T + b_hh, 3, axis=1)
    r, z = sigmoid(i_r + h_r), sigmoid(i_z + h_z)
    n = np.tanh(i_n + r * h_n)
    return (1 - z) * n + z * h, c


def tanh_step(x, h, c, w_ih, w_hh, b_ih, b_hh):
    return np.tanh(x @ w_ih.T + b_ih + h @ w_hh.T + b_hh), c


STEPS = {"LSTM": lstm_step, "GRU": gru_step, "RNN": tanh_step}


def reference(mode, x, h0, c0, state, layers, directions, batch_first=False):
    """A multi-layer (bi)directional RNN over the torch-named weights in ``state``."""
    if batch_first:
        x = x.transpose(1, 0, 2)
    step = STEPS[mode]
    h_n, c_n = [], []
    for k in range(layers):
        outs = []
        for d, suffix in enumerate(["", "_reverse"][:directions]):
            w = [state[f"{n}_l{k}{suffix}"] for n in ("weight_ih", "weight_hh", "bias_ih",
                                                       "bias_hh")]
            h, c = h0[k * directions + d], c0[k * directions + d]
            order = range(len(x)) if d == 0 else reversed(range(len(x)))
            out = [None] * len(x)
            for t in order:
                h, c = step(x[t], h, c, *w)
                out[t] = h
            outs.append(np.stack(out))
            h_n.append(h)
            c_n.append(c)
        x = np.concatenate(outs, axis=-1)
    if batch_first:
        x = x.transpose(1, 0, 2)
    return x, np.stack(h_n), np.stack(c_n)


def make(mode, layers, bidir, batch_first, dtype="float32", seed=0):
    cls = getattr(rnn, mode)
    return cls(INPUT, HIDDEN, num_layers=layers, bidirectional=bidir, batch_first=batch_first,
               rng=seed, dtype=dtype)


def data(layers, directions, batch_first, dtype="float32", seed=1):
    rng = np.random.default_rng(seed)
    shape = (BATCH, SEQ, INPUT) if batch_first else (SEQ, BATCH, INPUT)
    x = rng.standard_normal(shape).astype(dtype)
    h0 = (0.5 * rng.standard_normal((layers * directions, BATCH, HIDDEN))).astype(dtype)
    c0 = (0.5 * rng.standard_normal((layers * directions, BATCH, HIDDEN))).astype(dtype)
    return x, h0, c0


def run(m, mode, x, h0, c0):
    """(output, h_n, c_n) of an rnn front end (c_n is c0 for single-state modes)."""
    if mode == "LSTM":
        out, (h, c) = m(x, (h0, c0))
        return out, h, c
    out, h = m(x, h0)
    return out, h, c0


def close(got, want, tol=1e-5):
    assert got.shape == want.shape and got.dtype == want.dtype
    np.testing.assert_allclose(got, want, rtol=tol, atol=tol)


# -- construction ---------------------------------------------------------------------------------
def test_parameter_names_shapes_and_default_initialisation():
    m = rnn.LSTM(INPUT, HIDDEN, num_layers=2, bidirectional=True, rng=0)
    names = [n for n, _ in m.named_parameters()]
    assert names[:8] == ["weight_ih_l0", "weight_hh_l0", "bias_ih_l0", "bias_hh_l0",
                         "weight_ih_l0_reverse", "weight_hh_l0_reverse", "bias_ih_l0_reverse",
                         "bias_hh_l0_reverse"]
    assert len(names) == 16 and names[8] == "weight_ih_l1"
    assert list(m.state_dict()) == names
    state = m.state_dict()
    assert state["weight_ih_l0"].shape == (4 * HIDDEN, INPUT)
    assert state["weight_ih_l1"].shape == (4 * HIDDEN, 2 * HIDDEN)
    assert state["bias_hh_l1_reverse"].shape == (4 * HIDDEN,)
    bound = 1 / np.sqrt(HIDDEN)
    values = np.concatenate([v.ravel() for v in state.values()])
    assert values.dtype == np.float32 and np.abs(values).max() <= bound
    assert np.abs(values).max() > 0.9 * bound and abs(values.mean()) < 0.05
    again = rnn.LSTM(INPUT, HIDDEN, num_layers=2, bidirectional=True, rng=0).state_dict()
    assert all(np.array_equal(again[k], state[k]) for k in names)
    assert [n for n, _ in rnn.GRU(INPUT, HIDDEN, bias=False).named_parameters()] == [
        "weight_ih_l0", "weight_hh_l0"]
    assert rnn.GRU(INPUT, HIDDEN).state_dict()["weight_hh_l0"].shape == (3 * HIDDEN, HIDDEN)


def test_load_state_dict_reaches_the_cells_and_the_script_module():
    m = rnn.GRU(INPUT, HIDDEN, num_layers=2, rng=0)
    sm = script(m)
    x, h0, _ = data(2, 1, False)
    before, _ = sm(x, h0)
    other = rnn.GRU(INPUT, HIDDEN, num_layers=2, rng=5).state_dict()
    m.load_state_dict({k: v.copy() for k, v in other.items()})
    after, _ = sm(x, h0)
    want, _, _ = reference("GRU", x, h0, h0, other, 2, 1)
    assert np.abs(after - before).max() > 1e-3
    close(after, want)


# -- forward: numpy reference, eager == scripted --------------------------------------------------
@pytest.mark.parametrize("mode", ["LSTM", "GRU", "RNN"])
@pytest.mark.parametrize("layers,bidir,batch_first", CONFIGS)
def test_forward_matches_numpy_reference(mode, layers, bidir, batch_first, monkeypatch):
    m = make(mode, layers, bidir, batch_first)
    directions = 2 if bidir else 1
    x, h0, c0 = data(layers, directions, batch_first)
    want = reference(mode, x, h0, c0, m.state_dict(), layers, directions, batch_first)
    got = run(script(m), mode, x, h0, c0)
    monkeypatch.setenv("RNNSCRIPT_DISABLE", "1")  # the module as Python, submodules included
    eager = run(m, mode, x, h0, c0)
    out_shape = (BATCH, SEQ, directions * HIDDEN) if batch_first else \
        (SEQ, BATCH, directions * HIDDEN)
    assert got[0].shape == out_shape and got[1].shape == (layers * directions, BATCH, HIDDEN)
    for g, e, w in zip(got, eager, want):
        close(g, w)
        close(e, w)


@pytest.mark.parametrize("mode", ["LSTM", "GRU"])
def test_initial_state_defaults_to_zeros(mode):
    m = make(mode, 2, True, False)
    sm = script(m)
    x, h0, c0 = data(2, 2, False)
    zeros = np.zeros_like(h0)
    default = sm(x)
    explicit = sm(x, (zeros, zeros)) if mode == "LSTM" else sm(x, zeros)
    close(default[0], explicit[0])
    close(m(x)[0], explicit[0])


def test_relu_rnn_matches_numpy():
    m = rnn.RNN(INPUT, HIDDEN, num_layers=2, nonlinearity="relu", rng=3)
    x, h0, _ = data(2, 1, False)
    state = m.state_dict()
    h, out = h0, x
    finals = []
    for k in range(2):
        hk, steps = h[k], []
        for x_t in out:
            hk = np.maximum(x_t @ state[f"weight_ih_l{k}"].T + state[f"bias_ih_l{k}"] +
                            hk @ state[f"weight_hh_l{k}"].T + state[f"bias_hh_l{k}"], 0)
            steps.append(hk)
        out = np.stack(steps)
        finals.append(hk)
    got, h_n = script(m)(x, h0)
    close(got, out)
    close(h_n, np.stack(finals))
    with pytest.raises(ValueError, match="nonlinearity"):
        rnn.RNN(INPUT, HIDDEN, nonlinearity="sigmoid")


def test_dropout_between_layers_only_while_training():
    m = rnn.LSTM(INPUT, HIDDEN, num_layers=3, dropout=0.5, rng=0)
    sm = script(m)
    x, h0, c0 = data(3, 1, False)
    sm.eval()
    evaluated, _ = sm(x, (h0, c0))
    close(evaluated, reference("LSTM", x, h0, c0, m.state_dict(), 3, 1)[0])
    sm.train()
    trained, _ = sm(x, (h0, c0))
    assert np.abs(trained - evaluated).max() > 1e-3
    one = rnn.LSTM(INPUT, HIDDEN, num_layers=1, dropout=0.5, rng=0)
    out, _ = script(one)(x, (h0[:1], c0[:1]))  # a single layer: nothing to drop out
    close(out, reference("LSTM", x, h0[:1], c0[:1], one.state_dict(), 1, 1)[0])


# -- gradients: finite differences of the numpy reference -----------------------------------------
@pytest.mark.parametrize("mode", ["LSTM", "GRU"])
@pytest.mark.parametrize("layers,bidir", [(1, True), (2, False)])
def test_gradients_match_finite_differences_of_the_reference(mode, layers, bidir):
    directions = 2 if bidir else 1
    m = make(mode, layers, bidir, False, dtype="float64")
    x, h0, c0 = data(layers, directions, False, dtype="float64")
    rng = np.random.default_rng(9)
    out, h, c = reference(mode, x, h0, c0, m.state_dict(), layers, directions)
    cts = [rng.standard_normal(a.shape) for a in (out, h, c)]

    def objective(state, x):
        got = reference(mode, x, h0, c0, state, layers, directions)
        return sum(float((g * w).sum()) for g, w in zip(got[:2], cts[:2])) + \
            (float((got[2] * cts[2]).sum()) if mode == "LSTM" else 0.0)

    state0 = m.state_dict()
    m.zero_grad()
    hx = (h0, c0) if mode == "LSTM" else h0
    _, backward = vjp(script(m), x, hx)
    grads = backward((cts[0], (cts[1], cts[2])) if mode == "LSTM" else (cts[0], cts[1]))
    eps = 1e-6
    names = ["weight_ih_l0", "bias_hh_l0"] + (["weight_hh_l0_reverse", "bias_ih_l0_reverse"]
                                             if bidir else ["weight_hh_l1", "bias_ih_l1"])
    for name in names:
        p = m.get_parameter(name)
        for idx in [(0,) * p.data.ndim, tuple(s - 1 for s in p.data.shape)]:
            saved = p.data[idx]
            p.data[idx] = saved + eps
            plus = objective({k: v.copy() for k, v in state0.items()}, x)
            p.data[idx] = saved - eps
            minus = objective({k: v.copy() for k, v in state0.items()}, x)
            p.data[idx] = saved
            np.testing.assert_allclose(p.grad[idx], (plus - minus) / (2 * eps), rtol=1e-5,
                                       atol=1e-7)
    dx = np.zeros_like(x)
    dx[2, 1, 3] = eps
    fd = (objective(state0, x + dx) - objective(state0, x - dx)) / (2 * eps)
    np.testing.assert_allclose(grads[0][2, 1, 3], fd, rtol=1e-5, atol=1e-7)


# -- torch parity ---------------------------------------------------------------------------------
def torch_module(torch, mode, layers, bidir, batch_first, ours):
    cls = getattr(torch.nn, mode)
    t = cls(INPUT, HIDDEN, num_layers=layers, bidirectional=bidir, batch_first=batch_first)
    ours.load_state_dict({k: v.detach().numpy().copy() for k, v in t.state_dict().items()})
    return t








@pytest.mark.parametrize("mode", ["LSTM", "GRU"])
@pytest.mark.parametrize("layers,bidir,batch_first", CONFIGS)
def test_matches_torch_outputs_and_gradients(mode, layers, bidir, batch_first):
    torch = pytest.importorskip("torch")
    m = make(mode, layers, bidir, batch_first)
    t = torch_module(torch, mode, layers, bidir, batch_first, m)
    directions = 2 if bidir else 1
    x, h0, c0 = data(layers, directions, batch_first)
    tx = torch.tensor(x, requires_grad=True)
    th0, tc0 = torch.tensor(h0, requires_grad=True), torch.tensor(c0, requires_grad=True)
    if mode == "LSTM":
        t_out, (t_h, t_c) = t(tx, (th0, tc0))
    else:
        (t_out, t_h), t_c = t(tx, th0), tc0
    sm = script(m)
    got = run(sm, mode, x, h0, c0)
    for g, w in zip(got, (t_out, t_h, t_c)):
        close(g, w.detach().numpy())
    # gradients of <R, output> + <S, h_n> (+ <U, c_n>) for random R, S, U
    rng = np.random.default_rng(4)
    cts = [rng.standard_normal(a.shape).astype("float32") for a in got]
    loss = sum((w * torch.tensor(c)).sum() for w, c in zip((t_out, t_h), cts[:2]))
    if mode == "LSTM":
        loss = loss + (t_c * torch.tensor(cts[2])).sum()
    loss.backward()
    m.zero_grad()
    hx = (h0, c0) if mode == "LSTM" else h0
    _, backward = vjp(sm, x, hx)
    grads = backward((cts[0], (cts[1], cts[2])) if mode == "LSTM" else (cts[0], cts[1]))
    close(grads[0], tx.grad.numpy(), 1e-4)
    for name, param in t.named_parameters():
        close(m.get_parameter(name).grad, param.grad.numpy(), 1e-4)
    if mode == "GRU":
        close(grads[1], th0.grad.numpy(), 1e-4)
        return
    # the gradients of (h0, c0): through the front end's Optional tuple argument, and through
    # the stack, which takes them as plain tensors
    close(grads[1][0], th0.grad.numpy(), 1e-4)
    close(grads[1][1], tc0.grad.numpy(), 1e-4)
    steps_first = (lambda a: a.transpose(1, 0, 2)) if batch_first else (lambda a: a)
    _, backward = vjp(script(m.rnn), steps_first(x), h0, c0)
    state_grads = backward((steps_first(cts[0]), cts[1], cts[2]))
    dh0, dc0 = state_grads[1], state_grads[2]
    close(dh0, th0.grad.numpy(), 1e-4)
    close(dc0, tc0.grad.numpy(), 1e-4)
