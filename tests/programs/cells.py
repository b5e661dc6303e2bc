"""The fastrnns cell family, written in the scripting language (numpy spellings and ops).

The cells the benchmark harness also times come from ``benchmarks.fastrnns.cells``; the rest are
here.
"""

from typing import List, Tuple

import numpy as np

from benchmarks.fastrnns.cells import (  # noqa: F401  (part of the family tested here)
    gru_cell,
    lstm_cell,
    premul_lstm_cell,
    premul_lstm_cell_no_bias,
)
from script import Tensor, ops


def flat_lstm_cell(x: Tensor, hx: Tensor, cx: Tensor, w_ih: Tensor, w_hh: Tensor, b_ih: Tensor,
                   b_hh: Tensor) -> Tuple[Tensor, Tensor]:
    gates = np.matmul(x, w_ih.T) + np.matmul(hx, w_hh.T) + b_ih + b_hh
    i, f, g, o = ops.chunk(gates, 4, 1)
    cy = ops.sigmoid(f) * cx + ops.sigmoid(i) * np.tanh(g)
    hy = ops.sigmoid(o) * np.tanh(cy)
    return hy, cy






def milstm_cell(x: Tensor, hx: Tensor, cx: Tensor, w_ih: Tensor, w_hh: Tensor, alpha: Tensor,
                beta_i: Tensor, beta_h: Tensor, bias: Tensor) -> Tuple[Tensor, Tensor]:
    wx = x @ w_ih.T
    uz = hx @ w_hh.T
    gates = alpha * wx * uz + beta_i * wx + beta_h * uz + bias
    i, f, g, o = ops.chunk(gates, 4, 1)
    cy = ops.sigmoid(f) * cx + ops.sigmoid(i) * np.tanh(g)
    hy = ops.sigmoid(o) * np.tanh(cy)
    return hy, cy




def rnn_tanh_cell(x: Tensor, hidden: Tensor, w_ih: Tensor, w_hh: Tensor, b_ih: Tensor,
                  b_hh: Tensor) -> Tensor:
    return np.tanh(x @ w_ih.T + b_ih + hidden @ w_hh.T + b_hh)


def rnn_relu_cell(x: Tensor, hidden: Tensor, w_ih: Tensor, w_hh: Tensor, b_ih: Tensor,
                  b_hh: Tensor) -> Tensor:
    return ops.relu(x @ w_ih.T + b_ih + hidden @ w_hh.T + b_hh)


def lstm_layer(x: Tensor, hx: Tensor, cx: Tensor, w_ih: Tensor, w_hh: Tensor, b_ih: Tensor,
               b_hh: Tensor) -> Tuple[Tensor, Tuple[Tensor, Tensor]]:
    outputs: List[Tensor] = []
    for x_t in ops.unbind(x, 0):
        gates = x_t @ w_ih.T + hx @ w_hh.T + b_ih + b_hh
        i, f, g, o = ops.chunk(gates, 4, 1)
        cx = ops.sigmoid(f) * cx + ops.sigmoid(i) * np.tanh(g)
        hx = ops.sigmoid(o) * np.tanh(cx)
        outputs.append(hx)
    return ops.stack(outputs, 0), (hx, cx)


def lstm_layer_indexed(x: Tensor, hx: Tensor, cx: Tensor, w_ih: Tensor, w_hh: Tensor,
                       b_ih: Tensor, b_hh: Tensor) -> Tuple[Tensor, Tensor, Tensor]:
    outputs: List[Tensor] = []
    for t in range(x.shape[0]):
        hx, cx = lstm_cell(x[t], (hx, cx), w_ih, w_hh, b_ih, b_hh)
        outputs += [hx]
    return np.stack(outputs), hx, cx


def lstm_multilayer(x: Tensor, hx: Tensor, cx: Tensor,
                    params: List[Tensor]) -> Tuple[Tensor, Tensor, Tensor]:
    # params: 4 per layer (w_ih, w_hh, b_ih, b_hh); hx, cx: (layers, batch, hidden)
    layers = len(params) // 4
    h_out: List[Tensor] = []
    c_out: List[Tensor] = []
    for layer in range(layers):
        w_ih = params[4 * layer]
        w_hh = params[4 * layer + 1]
        b_ih = params[4 * layer + 2]
        b_hh = params[4 * layer + 3]
        h = hx[layer]
        c = cx[layer]
        outputs: List[Tensor] = []
        for t in range(x.shape[0]):
            h, c = lstm_cell(x[t], (h, c), w_ih, w_hh, b_ih, b_hh)
            outputs.append(h)
        x = ops.stack(outputs, 0)
        h_out.append(h)
        c_out.append(c)
    return x, np.stack(h_out), np.stack(c_out)
