"""The cells of ``rnn.cells``: compiled equals eager equals numpy, gradients equal finite
differences, and every cell's optimized graph has its elementwise tail in fusion groups."""

from __future__ import annotations

import numpy as np
import pytest

import rnn
from ir.registry import lookup
from script import script, vjp

BATCH, INPUT, HIDDEN = 3, 4, 5


def sigmoid(x):
    return 1.0 / (1.0 + np.exp(-x))


def layer_norm(x, eps=1e-5):
    mu = x.mean(-1, keepdims=True)
    return (x - mu) / np.sqrt(((x - mu) ** 2).mean(-1, keepdims=True) + eps)


def numpy_step(cell, x, state):
    """An independent implementation of each cell (layer norms at their initial gain 1, bias 0)."""
    w_ih, w_hh = cell.weight_ih, cell.weight_hh
    if isinstance(cell, rnn.LayerNormLSTMCell):
        h, c = state
        i, f, g, o = np.split(layer_norm(x @ w_ih.T) + layer_norm(h @ w_hh.T), 4, axis=1)
        c = layer_norm(sigmoid(f) * c + sigmoid(i) * np.tanh(g))
        return sigmoid(o) * np.tanh(c), c
    if isinstance(cell, rnn.LayerNormGRUCell):
        i_r, i_z, i_n = np.split(layer_norm(x @ w_ih.T), 3, axis=1)
        h_r, h_z, h_n = np.split(layer_norm(state @ w_hh.T), 3, axis=1)
        r, z = sigmoid(i_r + h_r), sigmoid(i_z + h_z)
        return (1 - z) * np.tanh(i_n + r * h_n) + z * state
    b = cell.bias_ih + cell.bias_hh
    if isinstance(cell, rnn.LSTMCell):
        h, c = state
        i, f, g, o = np.split(x @ w_ih.T + h @ w_hh.T + b, 4, axis=1)
        c = sigmoid(f) * c + sigmoid(i) * np.tanh(g)
        return sigmoid(o) * np.tanh(c), c
    if isinstance(cell, rnn.GRUCell):
        i_r, i_z, i_n = np.split(x @ w_ih.T + cell.bias_ih, 3, axis=1)
        h_r, h_z, h_n = np.split(state @ w_hh.T + cell.bias_hh, 3, axis=1)
        r, z = sigmoid(i_r + h_r), sigmoid(i_z + h_z)
        return (1 - z) * np.tanh(i_n + r * h_n) + z * state
    pre = x @ w_ih.T + state @ w_hh.T + b
    return np.maximum(pre, 0) if cell.use_relu else np.tanh(pre)


CELLS = {
    "lstm": lambda dtype: rnn.LSTMCell(INPUT, HIDDEN, rng=0, dtype=dtype),
    "gru": lambda dtype: rnn.GRUCell(INPUT, HIDDEN, rng=0, dtype=dtype),
    "rnn_tanh": lambda dtype: rnn.RNNCell(INPUT, HIDDEN, rng=0, dtype=dtype),
    "rnn_relu": lambda dtype: rnn.RNNCell(INPUT, HIDDEN, nonlinearity="relu", rng=0,
                                          dtype=dtype),
    "layernorm_lstm": lambda dtype: rnn.LayerNormLSTMCell(INPUT, HIDDEN, rng=0, dtype=dtype),
    "layernorm_gru": lambda dtype: rnn.LayerNormGRUCell(INPUT, HIDDEN, rng=0, dtype=dtype),
}


def inputs(cell, dtype, seed=1):
    rng = np.random.default_rng(seed)
    x = rng.standard_normal((BATCH, INPUT)).astype(dtype)
    h = rng.standard_normal((BATCH, HIDDEN)).astype(dtype)
    c = rng.standard_normal((BATCH, HIDDEN)).astype(dtype)
    return x, ((h, c) if cell.state_arity == 2 else h)


@pytest.mark.parametrize("name", sorted(CELLS))
@pytest.mark.parametrize("dtype", ["float32", "float64"])
def test_cell_matches_eager_and_numpy(name, dtype):
    cell = CELLS[name](dtype)
    x, state = inputs(cell, dtype)
    got = script(cell)(x, state)
    want = numpy_step(cell, x, state)
    tol = 1e-5 if dtype == "float32" else 1e-10
    listed = (lambda r: [r]) if cell.state_arity == 1 else list
    for g, e, w in zip(listed(got), listed(cell(x, state)), listed(want)):
        assert g.dtype == np.dtype(dtype)
        np.testing.assert_allclose(g, e, rtol=tol, atol=tol)
        np.testing.assert_allclose(g, w, rtol=tol, atol=tol)


@pytest.mark.parametrize("name", sorted(CELLS))
def test_cell_elementwise_tail_is_fused(name):
    cell = CELLS[name]("float32")
    x, state = inputs(cell, "float32")
    graph = script(cell).graph_for(x, state)
    kinds = [n.kind for n in graph.nodes()] if hasattr(graph, "nodes") else \
        [n.kind for n in graph.block]
    loose = [k for k in kinds if lookup(k) is not None and lookup(k).is_elementwise]
    assert any(k.startswith("prim::FusionGroup") for k in kinds), str(graph)
    assert loose == [], f"elementwise ops outside fusion groups: {loose}\n{graph}"


@pytest.mark.parametrize("name", sorted(CELLS))
def test_cell_gradients_match_finite_differences(name):
    cell = CELLS[name]("float64")
    x, state = inputs(cell, "float64")
    rng = np.random.default_rng(5)
    out = cell(x, state)
    cts = [rng.standard_normal(o.shape) for o in ([out] if cell.state_arity == 1 else out)]
    ct = cts[0] if cell.state_arity == 1 else tuple(cts)

    def objective():
        got = cell(x, state)
        return sum(float((g * c).sum()) for g, c in zip([got] if cell.state_arity == 1 else got,
                                                        cts))

    cell.zero_grad()
    _, backward = vjp(script(cell), x, state)
    dx = backward(ct)[0]
    eps = 1e-6
    for name, p in cell.named_parameters():
        idx = tuple(s - 1 for s in p.data.shape)
        saved = p.data[idx]
        p.data[idx] = saved + eps
        plus = objective()
        p.data[idx] = saved - eps
        minus = objective()
        p.data[idx] = saved
        np.testing.assert_allclose(p.grad[idx], (plus - minus) / (2 * eps), rtol=1e-5,
                                   atol=1e-8, err_msg=name)
    x[1, 2] += eps
    plus = objective()
    x[1, 2] -= 2 * eps
    minus = objective()
    np.testing.assert_allclose(dx[1, 2], (plus - minus) / (2 * eps), rtol=1e-5, atol=1e-8)


def test_custom_cell_plugs_into_layers():
    """Any cell with the (input, state) convention runs in a layer, eager and compiled."""
    cell = rnn.LayerNormGRUCell(INPUT, HIDDEN, rng=2)
    layer = rnn.bidirectional(cell, rnn.LayerNormGRUCell(INPUT, HIDDEN, rng=3))
    rng = np.random.default_rng(0)
    x = rng.standard_normal((6, BATCH, INPUT)).astype("float32")
    h0 = np.zeros((2, BATCH, HIDDEN), "float32")
    out, h_n, _ = script(layer)(x, h0, h0)
    eager, _, _ = layer(x, h0, h0)
    np.testing.assert_allclose(out, eager, rtol=1e-5, atol=1e-5)
    h = h0[0]
    for x_t in x:
        h = numpy_step(cell, x_t, h)
    np.testing.assert_allclose(h_n[0], h, rtol=1e-5, atol=1e-5)
    assert out.shape == (6, BATCH, 2 * HIDDEN)
