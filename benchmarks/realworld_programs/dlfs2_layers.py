"""The layers of "Deep Learning from Scratch 2" (https://github.com/oreilly-japan/
deep-learning-from-scratch-2, ``common/time_layers.py`` and ``common/functions.py``, MIT
License): ``softmax``, ``cross_entropy_error``, the ``RNN`` and ``LSTM`` cells' forward and
hand-written backward, ``TimeAffine.forward`` and ``TimeSoftmaxWithLoss.forward``. They use
``np.dot`` for 2-D products (outer products of batches in the backward), ``np.hstack``,
``.argmax``, ``x[np.arange(n), t]``, ``.size``, ``/=`` and ``*=`` on a mask.

The ``RNN`` and ``LSTM`` classes are also here as the book writes them: ``forward`` stores
``self.cache``, ``backward`` reads it and writes ``self.grads[i][...] = ...`` into the arrays
the optimizer holds.

Changes: annotations; for the functions, each class method is a function taking what the
method read from ``self`` (``self.params``, ``self.cache``, ``self.ignore_label`` as a local
constant) and returning what it stored there (``self.cache``, ``self.grads[i][...] =``); the
book's ``import numpy as np`` through ``common.np``. ``lstm_step`` is an added wrapper without
the cache. The classes: none (``LSTM.__init__``'s docstring left out).
"""

from typing import Tuple

import numpy as np

from benchmarks.realworld_programs import Case, arrays
from script import Tensor

LSTMCache = Tuple[Tensor, Tensor, Tensor, Tensor, Tensor, Tensor, Tensor, Tensor]


# -- common/functions.py ------------------------------------------------------------------------
def sigmoid(x: Tensor) -> Tensor:
    return 1 / (1 + np.exp(-x))


def softmax(x: Tensor) -> Tensor:
    if x.ndim == 2:
        x = x - x.max(axis=1, keepdims=True)
        x = np.exp(x)
        x /= x.sum(axis=1, keepdims=True)
    elif x.ndim == 1:
        x = x - np.max(x)
        x = np.exp(x) / np.sum(np.exp(x))

    return x


def cross_entropy_error(y: Tensor, t: Tensor) -> Tensor:
    if y.ndim == 1:
        t = t.reshape(1, t.size)
        y = y.reshape(1, y.size)

    # the labels as indices when they are one-hot vectors
    if t.size == y.size:
        t = t.argmax(axis=1)

    batch_size = y.shape[0]

    return -np.sum(np.log(y[np.arange(batch_size), t] + 1e-7)) / batch_size


# -- common/time_layers.py: RNN -----------------------------------------------------------------
def rnn_forward(x: Tensor, h_prev: Tensor, Wx: Tensor, Wh: Tensor, b: Tensor) -> Tensor:
    t = np.dot(h_prev, Wh) + np.dot(x, Wx) + b
    h_next = np.tanh(t)
    return h_next


def rnn_backward(dh_next: Tensor, Wx: Tensor, Wh: Tensor, x: Tensor, h_prev: Tensor,
                 h_next: Tensor) -> Tuple[Tensor, Tensor, Tensor, Tensor, Tensor]:
    dt = dh_next * (1 - h_next ** 2)
    db = np.sum(dt, axis=0)
    dWh = np.dot(h_prev.T, dt)
    dh_prev = np.dot(dt, Wh.T)
    dWx = np.dot(x.T, dt)
    dx = np.dot(dt, Wx.T)
    return dx, dh_prev, dWx, dWh, db


# -- LSTM ---------------------------------------------------------------------------------------
def lstm_forward(x: Tensor, h_prev: Tensor, c_prev: Tensor, Wx: Tensor, Wh: Tensor,
                 b: Tensor) -> Tuple[Tensor, Tensor, LSTMCache]:
    N, H = h_prev.shape

    A = np.dot(x, Wx) + np.dot(h_prev, Wh) + b

    f = A[:, :H]
    g = A[:, H:2*H]
    i = A[:, 2*H:3*H]
    o = A[:, 3*H:]

    f = sigmoid(f)
    g = np.tanh(g)
    i = sigmoid(i)
    o = sigmoid(o)

    c_next = f * c_prev + g * i
    h_next = o * np.tanh(c_next)

    cache = (x, h_prev, c_prev, i, f, g, o, c_next)
    return h_next, c_next, cache


def lstm_step(x: Tensor, h_prev: Tensor, c_prev: Tensor, Wx: Tensor, Wh: Tensor,
              b: Tensor) -> Tuple[Tensor, Tensor]:
    h_next, c_next, _ = lstm_forward(x, h_prev, c_prev, Wx, Wh, b)
    return h_next, c_next


def lstm_backward(dh_next: Tensor, dc_next: Tensor, Wx: Tensor, Wh: Tensor, cache: LSTMCache
                  ) -> Tuple[Tensor, Tensor, Tensor, Tensor, Tensor, Tensor]:
    x, h_prev, c_prev, i, f, g, o, c_next = cache

    tanh_c_next = np.tanh(c_next)

    ds = dc_next + (dh_next * o) * (1 - tanh_c_next ** 2)

    dc_prev = ds * f

    di = ds * g
    df = ds * c_prev
    do = dh_next * tanh_c_next
    dg = ds * i

    di *= i * (1 - i)
    df *= f * (1 - f)
    do *= o * (1 - o)
    dg *= (1 - g ** 2)

    dA = np.hstack((df, dg, di, do))

    dWh = np.dot(h_prev.T, dA)
    dWx = np.dot(x.T, dA)
    db = dA.sum(axis=0)

    dx = np.dot(dA, Wx.T)
    dh_prev = np.dot(dA, Wh.T)

    return dx, dh_prev, dc_prev, dWx, dWh, db


# -- the classes, as written -------------------------------------------------------------------
class RNN:
    def __init__(self, Wx, Wh, b):
        self.params = [Wx, Wh, b]
        self.grads = [np.zeros_like(Wx), np.zeros_like(Wh), np.zeros_like(b)]
        self.cache = None

    def forward(self, x, h_prev):
        Wx, Wh, b = self.params
        t = np.dot(h_prev, Wh) + np.dot(x, Wx) + b
        h_next = np.tanh(t)

        self.cache = (x, h_prev, h_next)
        return h_next

    def backward(self, dh_next):
        Wx, Wh, b = self.params
        x, h_prev, h_next = self.cache

        dt = dh_next * (1 - h_next ** 2)
        db = np.sum(dt, axis=0)
        dWh = np.dot(h_prev.T, dt)
        dh_prev = np.dot(dt, Wh.T)
        dWx = np.dot(x.T, dt)
        dx = np.dot(dt, Wx.T)

        self.grads[0][...] = dWx
        self.grads[1][...] = dWh
        self.grads[2][...] = db

        return dx, dh_prev


class LSTM:
    def __init__(self, Wx, Wh, b):
        self.params = [Wx, Wh, b]
        self.grads = [np.zeros_like(Wx), np.zeros_like(Wh), np.zeros_like(b)]
        self.cache = None

    def forward(self, x, h_prev, c_prev):
        Wx, Wh, b = self.params
        N, H = h_prev.shape

        A = np.dot(x, Wx) + np.dot(h_prev, Wh) + b

        f = A[:, :H]
        g = A[:, H:2*H]
        i = A[:, 2*H:3*H]
        o = A[:, 3*H:]

        f = sigmoid(f)
        g = np.tanh(g)
        i = sigmoid(i)
        o = sigmoid(o)

        c_next = f * c_prev + g * i
        h_next = o * np.tanh(c_next)

        self.cache = (x, h_prev, c_prev, i, f, g, o, c_next)
        return h_next, c_next

    def backward(self, dh_next, dc_next):
        Wx, Wh, b = self.params
        x, h_prev, c_prev, i, f, g, o, c_next = self.cache

        tanh_c_next = np.tanh(c_next)

        ds = dc_next + (dh_next * o) * (1 - tanh_c_next ** 2)

        dc_prev = ds * f

        di = ds * g
        df = ds * c_prev
        do = dh_next * tanh_c_next
        dg = ds * i

        di *= i * (1 - i)
        df *= f * (1 - f)
        do *= o * (1 - o)
        dg *= (1 - g ** 2)

        dA = np.hstack((df, dg, di, do))

        dWh = np.dot(h_prev.T, dA)
        dWx = np.dot(x.T, dA)
        db = dA.sum(axis=0)

        self.grads[0][...] = dWx
        self.grads[1][...] = dWh
        self.grads[2][...] = db

        dx = np.dot(dA, Wx.T)
        dh_prev = np.dot(dA, Wh.T)

        return dx, dh_prev, dc_prev


# -- TimeAffine, TimeSoftmaxWithLoss --------------------------------------------------------------
def time_affine_forward(x: Tensor, W: Tensor, b: Tensor) -> Tensor:
    N, T, D = x.shape

    rx = x.reshape(N*T, -1)
    out = np.dot(rx, W) + b
    return out.reshape(N, T, -1)


def time_softmax_with_loss(xs: Tensor, ts: Tensor) -> Tensor:
    ignore_label = -1
    N, T, V = xs.shape

    if ts.ndim == 3:  # the labels are one-hot vectors
        ts = ts.argmax(axis=2)

    mask = (ts != ignore_label)

    # batch and time steps together
    xs = xs.reshape(N * T, V)
    ts = ts.reshape(N * T)
    mask = mask.reshape(N * T)

    ys = softmax(xs)
    ls = np.log(ys[np.arange(N * T), ts])
    ls *= mask  # no loss for the ignore_label entries
    loss = -np.sum(ls)
    loss /= mask.sum()
    return loss


SIZES = {"test": (3, 4, 5, 6, 7), "bench": (64, 128, 256, 20, 1000)}  # N, D, H, T, V


def _sized(dtype: str, size: str, *names: str) -> tuple:
    N, D, H, T, V = SIZES[size]
    dims = {"N": N, "D": D, "H": H, "4H": 4 * H, "T": T, "V": V}
    shapes = [tuple(dims[d] for d in name.split(",")) for name in names]
    return arrays(dtype, len(names), *shapes)


def _labels(size: str) -> np.ndarray:
    N, _, _, T, V = SIZES[size]
    ts = np.random.default_rng(5).integers(0, V, (N, T))
    ts[0, 2] = -1  # ignored
    return ts


def _probs(dtype: str, size: str) -> Tensor:
    return softmax(_sized(dtype, size, "N,V")[0])


CASES = {
    "softmax_2d": Case(softmax, lambda d, s: _sized(d, s, "N,V"), grad=True),
    "softmax_1d": Case(softmax, lambda d, s: _sized(d, s, "V"), grad=True),
    "cross_entropy_labels": Case(cross_entropy_error, lambda d, s: (
        _probs(d, s), np.arange(SIZES[s][0]) % SIZES[s][4]), grad=True),
    "cross_entropy_one_hot": Case(cross_entropy_error, lambda d, s: (
        _probs(d, s), np.eye(SIZES[s][4], dtype=d)[np.arange(SIZES[s][0]) % SIZES[s][4]])),
    "rnn_forward": Case(rnn_forward, lambda d, s: _sized(d, s, "N,D", "N,H", "D,H", "H,H", "H"),
                        grad=True),
    "rnn_backward": Case(rnn_backward, lambda d, s: _sized(d, s, "N,H", "D,H", "H,H", "N,D",
                                                           "N,H", "N,H")),
    "lstm_forward": Case(lstm_forward, lambda d, s: _sized(d, s, "N,D", "N,H", "N,H", "D,4H",
                                                           "H,4H", "4H"), grad=True),
    "lstm_backward": Case(lstm_backward, lambda d, s: (
        *_sized(d, s, "N,H", "N,H"), *_sized(d, s, "D,4H", "H,4H"),
        lstm_forward(*_sized(d, s, "N,D", "N,H", "N,H", "D,4H", "H,4H", "4H"))[2])),
    "time_affine": Case(time_affine_forward, lambda d, s: _sized(d, s, "N,T,D", "D,V", "V"),
                        grad=True),
    "time_softmax_labels": Case(time_softmax_with_loss, lambda d, s: (
        *_sized(d, s, "N,T,V"), _labels(s)), grad=True),
    "time_softmax_one_hot": Case(time_softmax_with_loss, lambda d, s: (
        *_sized(d, s, "N,T,V"), np.eye(SIZES[s][4], dtype=d)[np.abs(_labels(s))])),
}
CASES.update({
    "RNN.forward": Case(RNN.forward, lambda d, s: (
        RNN(*_sized(d, s, "D,H", "H,H", "H")), *_sized(d, s, "N,D", "N,H")), grad=True),
    "LSTM.forward": Case(LSTM.forward, lambda d, s: (
        LSTM(*_sized(d, s, "D,4H", "H,4H", "4H")), *_sized(d, s, "N,D", "N,H", "N,H")),
        grad=True),
    "RNN.backward": Case(RNN.backward, lambda d, s: _rnn_after_forward(d, s)),
    "LSTM.backward": Case(LSTM.backward, lambda d, s: _lstm_after_forward(d, s)),
})


def _rnn_after_forward(d: str, s: str) -> tuple:
    layer = RNN(*_sized(d, s, "D,H", "H,H", "H"))
    x, h = _sized(d, s, "N,D", "N,H")
    return layer, layer.forward(x, h)


def _lstm_after_forward(d: str, s: str) -> tuple:
    layer = LSTM(*_sized(d, s, "D,4H", "H,4H", "4H"))
    x, h, c = _sized(d, s, "N,D", "N,H", "N,H")
    return (layer, *layer.forward(x, h, c))


BENCH = "lstm_forward"
CELLS = ("lstm_forward", "rnn_forward", "LSTM.forward", "RNN.forward")
BENCH_DTYPE = "float32"  # the book's weights are astype('f')
