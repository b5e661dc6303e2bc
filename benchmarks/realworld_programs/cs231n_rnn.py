"""The vanilla RNN layer of Stanford's CS231n assignment 3 (``cs231n/rnn_layers.py``:
``rnn_step_forward``, ``rnn_forward``, ``rnn_step_backward``, ``rnn_backward``; the assignments
are distributed from https://github.com/cs231n/cs231n.github.io, MIT License). The starter code
leaves these bodies to the student; they are written here as the assignment is commonly
completed.

The forward writes each step's state into a preallocated ``h[:, t, :]`` and collects the step
caches in a list; the hand-written backward writes ``dx[:, t, :]`` through a tuple-unpacking
assignment and accumulates with ``+=``.

Changes: annotations (the empty ``cache`` list gets its element type); ``forward_h`` is an added
wrapper returning the states alone, for the gradient check.
"""

from typing import List, Tuple

import numpy as np

from benchmarks.realworld_programs import Case, arrays
from script import Tensor

StepCache = Tuple[Tensor, Tensor, Tensor, Tensor, Tensor]


def rnn_step_forward(x: Tensor, prev_h: Tensor, Wx: Tensor, Wh: Tensor, b: Tensor):
    next_h = np.tanh(prev_h.dot(Wh) + x.dot(Wx) + b)
    cache = (x, prev_h, Wx, Wh, next_h)
    return next_h, cache


def rnn_forward(x: Tensor, h0: Tensor, Wx: Tensor, Wh: Tensor, b: Tensor):
    N, T, D = x.shape
    H = h0.shape[1]
    h = np.zeros((N, T, H))
    cache: List[StepCache] = []
    prev_h = h0
    for t in range(T):
        next_h, cache_t = rnn_step_forward(x[:, t, :], prev_h, Wx, Wh, b)
        h[:, t, :] = next_h
        prev_h = next_h
        cache.append(cache_t)
    return h, cache


def rnn_step_backward(dnext_h: Tensor, cache: StepCache):
    x, prev_h, Wx, Wh, next_h = cache
    dtanh = (1 - next_h ** 2) * dnext_h
    dx = dtanh.dot(Wx.T)
    dprev_h = dtanh.dot(Wh.T)
    dWx = x.T.dot(dtanh)
    dWh = prev_h.T.dot(dtanh)
    db = np.sum(dtanh, axis=0)
    return dx, dprev_h, dWx, dWh, db


def rnn_backward(dh: Tensor, cache: List[StepCache]):
    N, T, H = dh.shape
    D = cache[0][0].shape[1]
    dx = np.zeros((N, T, D))
    dWx = np.zeros((D, H))
    dWh = np.zeros((H, H))
    db = np.zeros((H,))
    dprev_h = np.zeros((N, H))
    for t in reversed(range(T)):
        dx[:, t, :], dprev_h, dWx_t, dWh_t, db_t = rnn_step_backward(dh[:, t, :] + dprev_h,
                                                                     cache[t])
        dWx += dWx_t
        dWh += dWh_t
        db += db_t
    dh0 = dprev_h
    return dx, dh0, dWx, dWh, db


def forward_h(x: Tensor, h0: Tensor, Wx: Tensor, Wh: Tensor, b: Tensor) -> Tensor:
    h, _ = rnn_forward(x, h0, Wx, Wh, b)
    return h


SIZES = {"test": (3, 5, 4, 6), "bench": (50, 20, 64, 128)}  # N, T, D, H


def forward_args(dtype: str, size: str) -> tuple:
    N, T, D, H = SIZES[size]
    x, h0, Wx, Wh, b = arrays(dtype, 0, (N, T, D), (N, H), (D, H), (H, H), (H,))
    return x, h0, Wx * 0.6, Wh * 0.6, b


def backward_args(dtype: str, size: str) -> tuple:
    N, T, D, H = SIZES[size]
    _, cache = rnn_forward(*forward_args(dtype, size))
    (dh,) = arrays(dtype, 1, (N, T, H))
    return dh, cache


CASES = {
    "rnn_forward": Case(rnn_forward, forward_args),
    "forward_h": Case(forward_h, forward_args, grad=True),
    "rnn_backward": Case(rnn_backward, backward_args),
}
BENCH = "rnn_forward"
