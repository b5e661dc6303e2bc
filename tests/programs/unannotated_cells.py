"""The fastrnns cells of ``cells.py`` without annotations, to be typed by example inputs."""

from typing import List

import numpy as np

from script import ops
from tests.programs.cells import lstm_cell as annotated_lstm_cell


def lstm_cell(x, hidden, w_ih, w_hh, b_ih, b_hh):
    hx, cx = hidden
    gates = x @ w_ih.T + hx @ w_hh.T + b_ih + b_hh
    ingate, forgetgate, cellgate, outgate = ops.chunk(gates, 4, 1)
    ingate = ops.sigmoid(ingate)
    forgetgate = ops.sigmoid(forgetgate)
    cellgate = np.tanh(cellgate)
    outgate = ops.sigmoid(outgate)
    cy = forgetgate * cx + ingate * cellgate
    hy = outgate * np.tanh(cy)
    return hy, cy


def flat_lstm_cell(x, hx, cx, w_ih, w_hh, b_ih, b_hh):
    gates = np.matmul(x, w_ih.T) + np.matmul(hx, w_hh.T) + b_ih + b_hh
    i, f, g, o = ops.chunk(gates, 4, 1)
    cy = ops.sigmoid(f) * cx + ops.sigmoid(i) * np.tanh(g)
    hy = ops.sigmoid(o) * np.tanh(cy)
    return hy, cy


def premul_lstm_cell(igates, hidden, w_hh, b_ih, b_hh):
    hx, cx = hidden
    gates = igates + hx @ w_hh.T + b_ih + b_hh
    i, f, g, o = ops.chunk(gates, 4, 1)
    cy = ops.sigmoid(f) * cx + ops.sigmoid(i) * np.tanh(g)
    hy = ops.sigmoid(o) * np.tanh(cy)
    return hy, cy


def premul_lstm_cell_no_bias(igates, hidden, w_hh, b_hh):
    hx, cx = hidden
    gates = igates + hx @ w_hh.T + b_hh
    i, f, g, o = ops.chunk(gates, 4, 1)
    cy = ops.sigmoid(f) * cx + ops.sigmoid(i) * np.tanh(g)
    hy = ops.sigmoid(o) * np.tanh(cy)
    return hy, cy


def milstm_cell(x, hx, cx, w_ih, w_hh, alpha, beta_i, beta_h, bias):
    wx = x @ w_ih.T
    uz = hx @ w_hh.T
    gates = alpha * wx * uz + beta_i * wx + beta_h * uz + bias
    i, f, g, o = ops.chunk(gates, 4, 1)
    cy = ops.sigmoid(f) * cx + ops.sigmoid(i) * np.tanh(g)
    hy = ops.sigmoid(o) * np.tanh(cy)
    return hy, cy


def gru_cell(x, hidden, w_ih, w_hh, b_ih, b_hh):
    gi = x @ w_ih.T + b_ih
    gh = hidden @ w_hh.T + b_hh
    i_r, i_i, i_n = ops.chunk(gi, 3, 1)
    h_r, h_i, h_n = ops.chunk(gh, 3, 1)
    resetgate = ops.sigmoid(i_r + h_r)
    inputgate = ops.sigmoid(i_i + h_i)
    newgate = np.tanh(i_n + resetgate * h_n)
    return newgate + inputgate * (hidden - newgate)


def rnn_tanh_cell(x, hidden, w_ih, w_hh, b_ih, b_hh):
    return np.tanh(x @ w_ih.T + b_ih + hidden @ w_hh.T + b_hh)


def rnn_relu_cell(x, hidden, w_ih, w_hh, b_ih, b_hh):
    return ops.relu(x @ w_ih.T + b_ih + hidden @ w_hh.T + b_hh)


def lstm_layer(x, hx, cx, w_ih, w_hh, b_ih, b_hh):
    outputs: List[np.ndarray] = []
    for x_t in ops.unbind(x, 0):
        gates = x_t @ w_ih.T + hx @ w_hh.T + b_ih + b_hh
        i, f, g, o = ops.chunk(gates, 4, 1)
        cx = ops.sigmoid(f) * cx + ops.sigmoid(i) * np.tanh(g)
        hx = ops.sigmoid(o) * np.tanh(cx)
        outputs.append(hx)
    return ops.stack(outputs, 0), (hx, cx)


def lstm_layer_indexed(x, hx, cx, w_ih, w_hh, b_ih, b_hh):
    outputs: List[np.ndarray] = []
    for t in range(x.shape[0]):
        hx, cx = annotated_lstm_cell(x[t], (hx, cx), w_ih, w_hh, b_ih, b_hh)
        outputs += [hx]
    return np.stack(outputs), hx, cx


def lstm_multilayer(x, hx, cx, params):
    layers = len(params) // 4
    h_out: List[np.ndarray] = []
    c_out: List[np.ndarray] = []
    for layer in range(layers):
        w_ih = params[4 * layer]
        w_hh = params[4 * layer + 1]
        b_ih = params[4 * layer + 2]
        b_hh = params[4 * layer + 3]
        h = hx[layer]
        c = cx[layer]
        outputs: List[np.ndarray] = []
        for t in range(x.shape[0]):
            h, c = annotated_lstm_cell(x[t], (h, c), w_ih, w_hh, b_ih, b_hh)
            outputs.append(h)
        x = ops.stack(outputs, 0)
        h_out.append(h)
        c_out.append(c)
    return x, np.stack(h_out), np.stack(c_out)
