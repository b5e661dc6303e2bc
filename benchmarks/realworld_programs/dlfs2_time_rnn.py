"""The sequence layers ``TimeRNN`` and ``TimeLSTM`` of "Deep Learning from Scratch 2"
(https://github.com/oreilly-japan/deep-learning-from-scratch-2, ``common/time_layers.py``, MIT
License): ``forward`` unpacks ``Wx, Wh, b = self.params`` (a list), allocates
``hs = np.empty((N, T, H), dtype='f')``, starts from zeros unless the layer is stateful and has
a state, and writes each step's state with ``hs[:, t, :] = self.h``.

Changes: annotations; each ``forward`` is a function taking what it read from ``self``
(``params``, the state ``h`` / ``c`` as Optional, ``stateful``) and returning the outputs and
the state it stored in ``self.h`` / ``self.c``; ``layer = RNN(*self.params);
layer.forward(...)`` calls the cell's forward function (``dlfs2_layers``) with the parameters;
the per-step layers kept for the backward (``self.layers.append(layer)``) are not kept.
"""

from typing import List, Optional, Tuple

import numpy as np

from benchmarks.realworld_programs import Case, arrays
from benchmarks.realworld_programs.dlfs2_layers import lstm_forward, rnn_forward
from script import Tensor


def time_rnn_forward(xs: Tensor, params: List[Tensor], h: Optional[Tensor],
                     stateful: bool) -> Tuple[Tensor, Tensor]:
    Wx, Wh, b = params
    N, T, D = xs.shape
    D, H = Wx.shape

    hs = np.empty((N, T, H), dtype='f')

    if not stateful or h is None:
        h = np.zeros((N, H), dtype='f')

    for t in range(T):
        h = rnn_forward(xs[:, t, :], h, Wx, Wh, b)
        hs[:, t, :] = h

    return hs, h


def time_lstm_forward(xs: Tensor, params: List[Tensor], h: Optional[Tensor],
                      c: Optional[Tensor], stateful: bool) -> Tuple[Tensor, Tensor, Tensor]:
    Wx, Wh, b = params
    N, T, D = xs.shape
    H = Wh.shape[0]

    hs = np.empty((N, T, H), dtype='f')

    if not stateful or h is None:
        h = np.zeros((N, H), dtype='f')
    if not stateful or c is None:
        c = np.zeros((N, H), dtype='f')

    for t in range(T):
        h, c, _ = lstm_forward(xs[:, t, :], h, c, Wx, Wh, b)
        hs[:, t, :] = h

    return hs, h, c


SIZES = {"test": (3, 5, 4, 6), "bench": (64, 20, 128, 256)}  # N, T, D, H


def rnn_args(dtype: str, size: str) -> tuple:
    N, T, D, H = SIZES[size]
    xs, Wx, Wh, b, h = arrays(dtype, 11, (N, T, D), (D, H), (H, H), (H,), (N, H))
    return xs, [Wx, Wh, b], h, True


def lstm_args(dtype: str, size: str) -> tuple:
    N, T, D, H = SIZES[size]
    xs, Wx, Wh, b = arrays(dtype, 12, (N, T, D), (D, 4 * H), (H, 4 * H), (4 * H,))
    return xs, [Wx, Wh, b], None, None, False


CASES = {
    "time_rnn_forward": Case(time_rnn_forward, rnn_args, grad=True, fd=(1e-3, 2e-3, 1e-4)),
    "time_lstm_forward": Case(time_lstm_forward, lstm_args, grad=True, fd=(1e-3, 2e-3, 1e-4)),
}
BENCH = "time_lstm_forward"
BENCH_DTYPE = "float32"  # the book's weights are astype('f')
