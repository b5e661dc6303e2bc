"""The LSTM variants the harness times, as functions of (x, hx, cx, w_ih, w_hh, b_ih, b_hh)."""

from __future__ import annotations

from typing import List, Tuple

import numpy as np

from script import Tensor, ops


def lstm_layer(x: Tensor, hx: Tensor, cx: Tensor, w_ih: Tensor, w_hh: Tensor, b_ih: Tensor,
               b_hh: Tensor) -> Tuple[Tensor, Tensor, Tensor]:
    """One LSTM layer over time (fastrnns `jit` / `py`)."""
    outputs: List[Tensor] = []
    for x_t in ops.unbind(x, 0):
        gates = x_t @ w_ih.T + hx @ w_hh.T + b_ih + b_hh
        i, f, g, o = ops.chunk(gates, 4, 1)
        cx = ops.sigmoid(f) * cx + ops.sigmoid(i) * np.tanh(g)
        hx = ops.sigmoid(o) * np.tanh(cx)
        outputs.append(hx)
    return ops.stack(outputs, 0), hx, cx


def lstm_layer_premul(x: Tensor, hx: Tensor, cx: Tensor, w_ih: Tensor, w_hh: Tensor,
                      b_ih: Tensor, b_hh: Tensor) -> Tuple[Tensor, Tensor, Tensor]:
    """The input projection of every step as one matmul before the loop (fastrnns `jit_premul`)."""
    igates = x @ w_ih.T
    outputs: List[Tensor] = []
    for t in range(x.shape[0]):
        gates = igates[t] + hx @ w_hh.T + b_ih + b_hh
        i, f, g, o = ops.chunk(gates, 4, 1)
        cx = ops.sigmoid(f) * cx + ops.sigmoid(i) * np.tanh(g)
        hx = ops.sigmoid(o) * np.tanh(cx)
        outputs.append(hx)
    return ops.stack(outputs, 0), hx, cx


def gemm_floor(x: np.ndarray, hx: np.ndarray, cx: np.ndarray, w_ih: np.ndarray,
               w_hh: np.ndarray, b_ih: np.ndarray, b_hh: np.ndarray) -> np.ndarray:
    """The forward GEMMs alone: one input projection over the sequence and T recurrent matmuls."""
    seq, batch, _ = x.shape
    igates = x.reshape(seq * batch, -1) @ w_ih.T
    w_hh_t = np.ascontiguousarray(w_hh.T)
    out = np.empty((batch, w_hh.shape[0]), dtype=x.dtype)
    for _ in range(seq):
        np.matmul(hx, w_hh_t, out=out)
    return igates
