"""The GRU layers of "Deep Learning from Scratch 2" (https://github.com/oreilly-japan/
deep-learning-from-scratch-2, ``common/time_layers.py``: ``GRU.forward``, ``TimeGRU.forward``,
MIT License): the gates' weights are column slices of ``Wx`` and ``Wh`` (``self.Wx[:, :H]``),
each step's state is written with ``hs[:, t, :] = self.h`` into ``np.empty(..., dtype='f')``.

Changes: annotations; each ``forward`` is a function taking what it read from ``self``
(``Wx``, ``Wh``, the state ``h`` as Optional, ``stateful``) and returning what it stored
(``self.cache``, ``self.h``); ``layer = GRU(self.Wx, self.Wh); layer.forward(...)`` calls
``gru_forward``; the per-step layers are not kept.
"""

from typing import Optional, Tuple

import numpy as np

from benchmarks.realworld_programs import Case, arrays
from benchmarks.realworld_programs.dlfs2_layers import sigmoid
from script import Tensor

GRUCache = Tuple[Tensor, Tensor, Tensor, Tensor, Tensor]


def gru_forward(x: Tensor, h_prev: Tensor, Wx: Tensor, Wh: Tensor) -> Tuple[Tensor, GRUCache]:
    H, H3 = Wh.shape
    Wxz, Wxr, Wx = Wx[:, :H], Wx[:, H:2 * H], Wx[:, 2 * H:]
    Whz, Whr, Wh = Wh[:, :H], Wh[:, H:2 * H], Wh[:, 2 * H:]

    z = sigmoid(np.dot(x, Wxz) + np.dot(h_prev, Whz))
    r = sigmoid(np.dot(x, Wxr) + np.dot(h_prev, Whr))
    h_hat = np.tanh(np.dot(x, Wx) + np.dot(r*h_prev, Wh))
    h_next = (1-z) * h_prev + z * h_hat

    cache = (x, h_prev, z, r, h_hat)

    return h_next, cache


def time_gru_forward(xs: Tensor, Wx: Tensor, Wh: Tensor, h: Optional[Tensor],
                     stateful: bool) -> Tuple[Tensor, Tensor]:
    N, T, D = xs.shape
    H, H3 = Wh.shape

    hs = np.empty((N, T, H), dtype='f')

    if not stateful or h is None:
        h = np.zeros((N, H), dtype='f')

    for t in range(T):
        h, _ = gru_forward(xs[:, t, :], h, Wx, Wh)
        hs[:, t, :] = h

    return hs, h


SIZES = {"test": (3, 5, 4, 6), "bench": (64, 20, 128, 256)}  # N, T, D, H


def step_args(dtype: str, size: str) -> tuple:
    N, _, D, H = SIZES[size]
    return arrays(dtype, 13, (N, D), (N, H), (D, 3 * H), (H, 3 * H))


def time_args(dtype: str, size: str) -> tuple:
    N, T, D, H = SIZES[size]
    return (*arrays(dtype, 14, (N, T, D), (D, 3 * H), (H, 3 * H)), None, False)


CASES = {
    "gru_forward": Case(gru_forward, step_args, grad=True),
    "time_gru_forward": Case(time_gru_forward, time_args, grad=True, fd=(1e-3, 2e-3, 1e-4)),
}
BENCH = "time_gru_forward"
CELLS = ("gru_forward",)
BENCH_DTYPE = "float32"  # the book's weights are astype('f')
