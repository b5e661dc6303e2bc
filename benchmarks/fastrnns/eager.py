"""An LSTM layer in plain numpy with a hand-written backward: the ``py`` variant of fastrnns.

``numpy_forward`` runs the layer and keeps a tape of what the backward needs; ``numpy_backward``
walks the recurrence in reverse and batches the input-projection weight gradients over time. Both
work on CuPy arrays as well (numpy dispatches to CuPy through its array protocols).
"""

from __future__ import annotations

import numpy as np


def _sigmoid(x):
    return 1 / (1 + np.exp(-x))


def numpy_forward(x, h, c, w_ih, w_hh, b_ih, b_hh):
    """The LSTM layer in numpy, keeping what the backward needs: ``((y, (h, c)), tape)``."""
    T, H = x.shape[0], h.shape[1]
    ys, tape = [], []
    wi_t, wh_t, b = w_ih.T, w_hh.T, b_ih + b_hh
    for t in range(T):
        gates = x[t] @ wi_t + h @ wh_t + b
        i, f, o = _sigmoid(gates[:, :H]), _sigmoid(gates[:, H:2 * H]), _sigmoid(gates[:, 3 * H:])
        g = np.tanh(gates[:, 2 * H:3 * H])
        c_prev, h_prev = c, h
        c = f * c + i * g
        tc = np.tanh(c)
        h = o * tc
        ys.append(h)
        tape.append((i, f, g, o, tc, c_prev, h_prev))
    return (np.stack(ys), (h, c)), tape


def numpy_backward(tape, args, dys, dh, dc):
    """The hand-written backward: reverse loop for the recurrence, weight gradients of the input
    projection batched over time. Returns the gradients of ``args`` (the bias gradient twice, for
    ``b_ih`` and ``b_hh``)."""
    x, _, _, w_ih, w_hh, _, _ = args
    T = x.shape[0]
    dgates_all = np.empty_like(dys, shape=(T, dys.shape[1], w_ih.shape[0]))
    dw_hh = np.zeros_like(w_hh)
    for t in reversed(range(T)):
        i, f, g, o, tc, c_prev, h_prev = tape[t]
        dh = dh + dys[t]
        dc = dc + dh * o * (1 - tc * tc)
        dgates = dgates_all[t]
        H = i.shape[1]
        dgates[:, :H] = dc * g * i * (1 - i)
        dgates[:, H:2 * H] = dc * c_prev * f * (1 - f)
        dgates[:, 2 * H:3 * H] = dc * i * (1 - g * g)
        dgates[:, 3 * H:] = dh * tc * o * (1 - o)
        dc = dc * f
        dw_hh += dgates.T @ h_prev
        dh = dgates @ w_hh
    flat = dgates_all.reshape(-1, w_ih.shape[0])
    dw_ih = flat.T @ x.reshape(-1, x.shape[2])
    dx = (flat @ w_ih).reshape(x.shape)
    db = flat.sum(axis=0)
    return dx, dh, dc, dw_ih, dw_hh, db, db
