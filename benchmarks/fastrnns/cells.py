"""The layers the fastrnns variants time, written in the scripting language.

Each function is one recurrent layer over a whole sequence (or, for ``multilayer_lstm`` and
``dropout_lstm``, a stack of them). The ``script_*`` variants compile these with ``script``; the
same functions run eagerly as references. The LSTM gate order is PyTorch's (i, f, g, o), so the
weights of ``torch.nn.LSTM`` can be copied in unchanged.

Layouts: ``x (T, B, I)``, states ``(B, H)``, ``w_ih (4H, I)``, ``w_hh (4H, H)``, biases ``(4H,)``.
Upstream's cell code lives in ``benchmarks/fastrnns/cells.py`` of PyTorch; the comments name the
upstream variant each function mirrors.
"""

from __future__ import annotations

from typing import List, Tuple

import numpy as np

from script import Tensor, ops


def lstm_cell(x, hidden, w_ih, w_hh, b_ih, b_hh):
    # type: (Tensor, Tuple[Tensor, Tensor], Tensor, Tensor, Tensor, Tensor) -> Tuple[Tensor, Tensor]
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


def premul_lstm_cell(igates: Tensor, hidden: Tuple[Tensor, Tensor], w_hh: Tensor, b_ih: Tensor,
                     b_hh: Tensor) -> Tuple[Tensor, Tensor]:
    hx, cx = hidden
    gates = igates + hx @ w_hh.T + b_ih + b_hh
    i, f, g, o = ops.chunk(gates, 4, 1)
    cy = ops.sigmoid(f) * cx + ops.sigmoid(i) * np.tanh(g)
    hy = ops.sigmoid(o) * np.tanh(cy)
    return hy, cy


def premul_lstm_cell_no_bias(igates: Tensor, hidden: Tuple[Tensor, Tensor], w_hh: Tensor,
                             b_hh: Tensor) -> Tuple[Tensor, Tensor]:
    hx, cx = hidden
    gates = igates + hx @ w_hh.T + b_hh
    i, f, g, o = ops.chunk(gates, 4, 1)
    cy = ops.sigmoid(f) * cx + ops.sigmoid(i) * np.tanh(g)
    hy = ops.sigmoid(o) * np.tanh(cy)
    return hy, cy


def lstm_layer(x: Tensor, hx: Tensor, cx: Tensor, w_ih: Tensor, w_hh: Tensor, b_ih: Tensor,
               b_hh: Tensor) -> Tuple[Tensor, Tensor, Tensor]:
    """Upstream ``jit``: the cell called once per step on ``unbind``'s slices."""
    outputs: List[Tensor] = []
    for x_t in ops.unbind(x, 0):
        hx, cx = lstm_cell(x_t, (hx, cx), w_ih, w_hh, b_ih, b_hh)
        outputs += [hx]
    return ops.stack(outputs, 0), hx, cx


def lstm_layer_premul(x: Tensor, hx: Tensor, cx: Tensor, w_ih: Tensor, w_hh: Tensor,
                      b_ih: Tensor, b_hh: Tensor) -> Tuple[Tensor, Tensor, Tensor]:
    """Upstream ``jit_premul``: the input projection of every step as one matmul."""
    outputs: List[Tensor] = []
    for igates in ops.unbind(x @ w_ih.T, 0):
        hx, cx = premul_lstm_cell(igates, (hx, cx), w_hh, b_ih, b_hh)
        outputs += [hx]
    return ops.stack(outputs, 0), hx, cx


def lstm_layer_premul_bias(x: Tensor, hx: Tensor, cx: Tensor, w_ih: Tensor, w_hh: Tensor,
                           b_ih: Tensor, b_hh: Tensor) -> Tuple[Tensor, Tensor, Tensor]:
    """Upstream ``jit_premul_bias``: the projection and ``b_ih`` added once, as a 2-D matmul."""
    seq, batch, size = x.shape
    igates = (x.reshape(seq * batch, size) @ w_ih.T + b_ih).reshape(seq, batch, -1)
    outputs: List[Tensor] = []
    for igates_t in ops.unbind(igates, 0):
        hx, cx = premul_lstm_cell_no_bias(igates_t, (hx, cx), w_hh, b_hh)
        outputs += [hx]
    return ops.stack(outputs, 0), hx, cx


def lstm_layer_simple(x: Tensor, hx: Tensor, cx: Tensor, w_ih: Tensor, w_hh: Tensor,
                      b_ih: Tensor, b_hh: Tensor) -> Tuple[Tensor, Tensor]:
    """Upstream ``jit_simple``: flat states, no output list; returns only the last state."""
    for seq_idx in range(x.shape[0]):
        gates = x[seq_idx] @ w_ih.T + hx @ w_hh.T + b_ih + b_hh
        i, f, g, o = ops.chunk(gates, 4, 1)
        cx = ops.sigmoid(f) * cx + ops.sigmoid(i) * np.tanh(g)
        hx = ops.sigmoid(o) * np.tanh(cx)
    return hx, cx


def multilayer_lstm(x: Tensor, hx: Tensor, cx: Tensor,
                    params: List[Tensor]) -> Tuple[Tensor, Tensor, Tensor]:
    """Upstream ``jit_multilayer``: the layers loop inside the script; ``params`` holds
    (w_ih, w_hh, b_ih, b_hh) per layer, ``hx``/``cx`` are ``(L, B, H)``."""
    h_out: List[Tensor] = []
    c_out: List[Tensor] = []
    for layer in range(len(params) // 4):
        h = hx[layer]
        c = cx[layer]
        inputs = ops.unbind(x, 0)
        outputs: List[Tensor] = []
        for seq_idx in range(len(inputs)):
            h, c = lstm_cell(inputs[seq_idx], (h, c), params[4 * layer], params[4 * layer + 1],
                             params[4 * layer + 2], params[4 * layer + 3])
            outputs += [h]
        x = ops.stack(outputs, 0)
        h_out += [h]
        c_out += [c]
    return x, ops.stack(h_out, 0), ops.stack(c_out, 0)


def dropout_lstm(x: Tensor, hx: Tensor, cx: Tensor, params: List[Tensor],
                 training: bool) -> Tuple[Tensor, Tensor, Tensor]:
    """Upstream ``jit_dropout`` (custom_lstms' StackedLSTMWithDropout): dropout 0.4 on the
    output of every layer but the last, when ``training``."""
    layers = len(params) // 4
    h_out: List[Tensor] = []
    c_out: List[Tensor] = []
    for layer in range(layers):
        h = hx[layer]
        c = cx[layer]
        inputs = ops.unbind(x, 0)
        outputs: List[Tensor] = []
        for seq_idx in range(len(inputs)):
            h, c = lstm_cell(inputs[seq_idx], (h, c), params[4 * layer], params[4 * layer + 1],
                             params[4 * layer + 2], params[4 * layer + 3])
            outputs += [h]
        x = ops.stack(outputs, 0)
        if layer < layers - 1:
            x = ops.dropout(x, 0.4, training)
        h_out += [h]
        c_out += [c]
    return x, ops.stack(h_out, 0), ops.stack(c_out, 0)


def layernorm_lstm_layer(x: Tensor, hx: Tensor, cx: Tensor, w_ih: Tensor, w_hh: Tensor,
                         ln_i_w: Tensor, ln_i_b: Tensor, ln_h_w: Tensor, ln_h_b: Tensor,
                         ln_c_w: Tensor, ln_c_b: Tensor) -> Tuple[Tensor, Tensor, Tensor]:
    """Upstream ``jit_layernorm`` (custom_lstms' LayerNormLSTMCell with ``nn.LayerNorm``): no
    biases; layer norm (eps 1e-5, affine) on both gate projections and on the cell state."""
    outputs: List[Tensor] = []
    for x_t in ops.unbind(x, 0):
        igates = ops.layer_norm(x_t @ w_ih.T, ln_i_w, ln_i_b)
        hgates = ops.layer_norm(hx @ w_hh.T, ln_h_w, ln_h_b)
        i, f, g, o = ops.chunk(igates + hgates, 4, 1)
        cx = ops.layer_norm(ops.sigmoid(f) * cx + ops.sigmoid(i) * np.tanh(g), ln_c_w, ln_c_b)
        hx = ops.sigmoid(o) * np.tanh(cx)
        outputs += [hx]
    return ops.stack(outputs, 0), hx, cx


def decomposed_layer_norm(a: Tensor, weight: Tensor, bias: Tensor) -> Tensor:
    """custom_lstms' LayerNorm: mean and biased standard deviation, no epsilon."""
    mu = a.mean(-1, keepdims=True)
    sigma = a.std(-1, keepdims=True)
    return (a - mu) / sigma * weight + bias


def layernorm_decom_lstm_layer(x: Tensor, hx: Tensor, cx: Tensor, w_ih: Tensor, w_hh: Tensor,
                               ln_i_w: Tensor, ln_i_b: Tensor, ln_h_w: Tensor, ln_h_b: Tensor,
                               ln_c_w: Tensor, ln_c_b: Tensor) -> Tuple[Tensor, Tensor, Tensor]:
    """Upstream ``jit_layernorm_decom``: the layer norms written as mean/std ops."""
    outputs: List[Tensor] = []
    for x_t in ops.unbind(x, 0):
        igates = decomposed_layer_norm(x_t @ w_ih.T, ln_i_w, ln_i_b)
        hgates = decomposed_layer_norm(hx @ w_hh.T, ln_h_w, ln_h_b)
        i, f, g, o = ops.chunk(igates + hgates, 4, 1)
        cx = decomposed_layer_norm(ops.sigmoid(f) * cx + ops.sigmoid(i) * np.tanh(g), ln_c_w,
                                   ln_c_b)
        hx = ops.sigmoid(o) * np.tanh(cx)
        outputs += [hx]
    return ops.stack(outputs, 0), hx, cx


def gru_cell(x: Tensor, hidden: Tensor, w_ih: Tensor, w_hh: Tensor, b_ih: Tensor,
             b_hh: Tensor) -> Tensor:
    gi = x @ w_ih.T + b_ih
    gh = hidden @ w_hh.T + b_hh
    i_r, i_i, i_n = ops.chunk(gi, 3, 1)
    h_r, h_i, h_n = ops.chunk(gh, 3, 1)
    resetgate = ops.sigmoid(i_r + h_r)
    inputgate = ops.sigmoid(i_i + h_i)
    newgate = np.tanh(i_n + resetgate * h_n)
    return newgate + inputgate * (hidden - newgate)


def gru_layer(x: Tensor, hx: Tensor, w_ih: Tensor, w_hh: Tensor, b_ih: Tensor,
              b_hh: Tensor) -> Tuple[Tensor, Tensor]:
    """A GRU layer over upstream's ``gru_cell`` (gates r, z, n as in ``torch.nn.GRU``)."""
    outputs: List[Tensor] = []
    for x_t in ops.unbind(x, 0):
        hx = gru_cell(x_t, hx, w_ih, w_hh, b_ih, b_hh)
        outputs += [hx]
    return ops.stack(outputs, 0), hx


def varlen_lstm(sequences: List[Tensor], hx: Tensor, cx: Tensor, w_ih: Tensor, w_hh: Tensor,
                b_ih: Tensor, b_hh: Tensor) -> Tuple[List[Tensor], Tensor, Tensor]:
    """Upstream ``vl_jit``: one batch element at a time, each over its own length;
    ``sequences[b]`` is ``(T_b, 1, I)``, ``hx``/``cx`` are ``(B, H)``."""
    outputs: List[Tensor] = []
    h_out: List[Tensor] = []
    c_out: List[Tensor] = []
    for b in range(len(sequences)):
        seq = sequences[b]
        h = hx[b:b + 1]
        c = cx[b:b + 1]
        steps: List[Tensor] = []
        for t in range(seq.shape[0]):
            h, c = lstm_cell(seq[t], (h, c), w_ih, w_hh, b_ih, b_hh)
            steps += [h]
        outputs += [ops.stack(steps, 0)]
        h_out += [h]
        c_out += [c]
    return outputs, ops.cat(h_out, 0), ops.cat(c_out, 0)
