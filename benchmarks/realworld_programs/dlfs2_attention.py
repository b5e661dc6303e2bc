"""The attention layers of "Deep Learning from Scratch 2" (https://github.com/oreilly-japan/
deep-learning-from-scratch-2, ``ch08/attention_layer.py``, MIT License): ``AttentionWeight``
(``hs * h.reshape(N, 1, H)`` summed over H, then the ``Softmax`` layer of ``common/layers.py``),
``WeightSum`` and ``TimeAttention``, which writes each decoder step's context into
``out = np.empty_like(hs_dec)`` with ``out[:, t, :] = ...`` and keeps the attention weights in
a list.

Changes: annotations; each ``forward`` is a function taking what it read from ``self`` and
returning what it stored there (``self.cache``, ``self.attention_weight``,
``self.attention_weights``); ``Softmax().forward(s)`` is the book's ``softmax(s)`` (what the
layer's forward computes); the per-step layers are not kept.
"""

from typing import List, Tuple

import numpy as np

from benchmarks.realworld_programs import Case, arrays
from benchmarks.realworld_programs.dlfs2_layers import softmax
from script import Tensor


def weight_sum_forward(hs: Tensor, a: Tensor) -> Tuple[Tensor, Tuple[Tensor, Tensor]]:
    N, T, H = hs.shape
    ar = a.reshape(N, T, 1)
    t = hs * ar
    c = np.sum(t, axis=1)

    cache = (hs, ar)
    return c, cache


def attention_weight_forward(hs: Tensor, h: Tensor) -> Tuple[Tensor, Tuple[Tensor, Tensor]]:
    N, T, H = hs.shape

    hr = h.reshape(N, 1, H)  # .repeat(T, axis=1)
    t = hs * hr
    s = np.sum(t, axis=2)
    a = softmax(s)

    cache = (hs, hr)
    return a, cache


def attention_forward(hs: Tensor, h: Tensor) -> Tuple[Tensor, Tensor]:
    a, _ = attention_weight_forward(hs, h)
    out, _ = weight_sum_forward(hs, a)
    attention_weight = a
    return out, attention_weight


def time_attention_forward(hs_enc: Tensor, hs_dec: Tensor) -> Tuple[Tensor, List[Tensor]]:
    N, T, H = hs_dec.shape
    out = np.empty_like(hs_dec)
    attention_weights = []

    for t in range(T):
        out[:, t, :], attention_weight = attention_forward(hs_enc, hs_dec[:, t, :])
        attention_weights.append(attention_weight)

    return out, attention_weights


SIZES = {"test": (3, 5, 4, 6), "bench": (64, 30, 20, 256)}  # N, T_enc, T_dec, H


def step_args(dtype: str, size: str) -> tuple:
    N, T, _, H = SIZES[size]
    return arrays(dtype, 21, (N, T, H), (N, H))


def time_args(dtype: str, size: str) -> tuple:
    N, T_enc, T_dec, H = SIZES[size]
    return arrays(dtype, 22, (N, T_enc, H), (N, T_dec, H))


CASES = {
    "attention_forward": Case(attention_forward, step_args, grad=True),
    "time_attention_forward": Case(time_attention_forward, time_args, grad=True),
}
BENCH = "time_attention_forward"
CELLS = ("attention_forward",)
BENCH_DTYPE = "float32"  # the book's weights are astype('f')
