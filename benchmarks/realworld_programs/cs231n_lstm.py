"""The LSTM layer of Stanford's CS231n assignment 3 (``cs231n/rnn_layers.py``: the provided
numerically stable ``sigmoid``, and ``lstm_step_forward``, ``lstm_forward``; the assignments are
distributed from https://github.com/cs231n/cs231n.github.io, MIT License). The starter code
leaves the two LSTM bodies to the student; they are written here as the assignment is commonly
completed: one ``(N, 4H)`` product split into the gates, each step's state written into a
preallocated ``h[:, t, :]``, the caches appended to a list.

The provided ``sigmoid`` computes ``exp`` of the non-positive half of its input through boolean
masks: ``z[pos_mask] = np.exp(-x[pos_mask])``.

Changes: annotations (the empty ``cache`` list gets its element type); ``forward_h`` is an added
wrapper returning the states alone, for the gradient check.
"""

from typing import List, Tuple

import numpy as np

from benchmarks.realworld_programs import Case, arrays
from script import Tensor

LSTMCache = Tuple[Tensor, Tensor, Tensor, Tensor, Tensor, Tensor, Tensor, Tensor, Tensor,
                  Tensor, Tensor, Tensor]


def sigmoid(x: Tensor) -> Tensor:
    """
    A numerically stable version of the logistic sigmoid function.
    """
    pos_mask = (x >= 0)
    neg_mask = (x < 0)
    z = np.zeros_like(x)
    z[pos_mask] = np.exp(-x[pos_mask])
    z[neg_mask] = np.exp(x[neg_mask])
    top = np.ones_like(x)
    top[neg_mask] = z[neg_mask]
    return top / (1 + z)


def lstm_step_forward(x: Tensor, prev_h: Tensor, prev_c: Tensor, Wx: Tensor, Wh: Tensor,
                      b: Tensor):
    N, H = prev_h.shape
    a = x.dot(Wx) + prev_h.dot(Wh) + b
    i = sigmoid(a[:, :H])
    f = sigmoid(a[:, H:2 * H])
    o = sigmoid(a[:, 2 * H:3 * H])
    g = np.tanh(a[:, 3 * H:])
    next_c = f * prev_c + i * g
    next_h = o * np.tanh(next_c)
    cache = (x, prev_h, prev_c, Wx, Wh, a, i, f, o, g, next_c, next_h)
    return next_h, next_c, cache


def lstm_forward(x: Tensor, h0: Tensor, Wx: Tensor, Wh: Tensor, b: Tensor):
    N, T, D = x.shape
    H = h0.shape[1]
    h = np.zeros((N, T, H))
    cache: List[LSTMCache] = []
    prev_h = h0
    prev_c = np.zeros_like(h0)
    for t in range(T):
        next_h, next_c, cache_t = lstm_step_forward(x[:, t, :], prev_h, prev_c, Wx, Wh, b)
        h[:, t, :] = next_h
        prev_h = next_h
        prev_c = next_c
        cache.append(cache_t)
    return h, cache


def forward_h(x: Tensor, h0: Tensor, Wx: Tensor, Wh: Tensor, b: Tensor) -> Tensor:
    h, _ = lstm_forward(x, h0, Wx, Wh, b)
    return h


SIZES = {"test": (3, 5, 4, 6), "bench": (50, 20, 64, 128)}  # N, T, D, H


def step_args(dtype: str, size: str) -> tuple:
    N, _, D, H = SIZES[size]
    return arrays(dtype, 2, (N, D), (N, H), (N, H), (D, 4 * H), (H, 4 * H), (4 * H,))


def forward_args(dtype: str, size: str) -> tuple:
    N, T, D, H = SIZES[size]
    return arrays(dtype, 3, (N, T, D), (N, H), (D, 4 * H), (H, 4 * H), (4 * H,))


CASES = {
    "lstm_step_forward": Case(lstm_step_forward, step_args, grad=True),
    "lstm_forward": Case(lstm_forward, forward_args),
    "forward_h": Case(forward_h, forward_args, grad=True),
}
BENCH = "lstm_forward"
CELLS = ("lstm_step_forward",)
