"""Real numpy RNN code: the layers of "Deep Learning from Scratch 2" (oreilly-japan/
deep-learning-from-scratch-2, ``common/time_layers.py`` and ``common/functions.py``, MIT License),
ported with type annotations only. Each class method becomes a function taking what the method
read from ``self`` and returning what it stored there (``self.cache``, ``self.grads[i][...] =``);
the bodies are the book's. They use ``np.dot`` for 2-D products (outer products of batches in the
backward), ``np.hstack``, ``.argmax``, ``x[np.arange(n), t]``, ``.size``, ``/=``.

Compiled equals plain (float32 and float64); the book's hand-written LSTM backward, compiled,
equals the gradient the compiler derives from the compiled forward; gradients equal finite
differences."""

from typing import Tuple

import numpy as np
import pytest

from script import Tensor, script
from script import vjp
from tests.gradcheck import check_vjp

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


# -- arguments -----------------------------------------------------------------------------------
N, D, H, T, V = 3, 4, 5, 6, 7


def _arrays(dtype, *shapes):
    rng = np.random.default_rng(sum(map(sum, shapes)))
    return tuple((rng.standard_normal(s) * 0.5).astype(dtype) for s in shapes)


def lstm_args(dtype):
    return _arrays(dtype, (N, D), (N, H), (N, H), (D, 4 * H), (H, 4 * H), (4 * H,))


def labels():
    ts = np.random.default_rng(5).integers(0, V, (N, T))
    ts[0, 2] = -1  # ignored
    return ts


PROGRAMS = {
    "softmax_2d": (softmax, lambda d: _arrays(d, (N, V))),
    "softmax_1d": (softmax, lambda d: _arrays(d, (V,))),
    "cross_entropy_labels": (cross_entropy_error, lambda d: (
        softmax(_arrays(d, (N, V))[0]), np.array([1, 0, 6]))),
    "cross_entropy_one_hot": (cross_entropy_error, lambda d: (
        softmax(_arrays(d, (N, V))[0]), np.eye(V, dtype=d)[[1, 0, 6]])),
    "rnn_forward": (rnn_forward, lambda d: _arrays(d, (N, D), (N, H), (D, H), (H, H), (H,))),
    "rnn_backward": (rnn_backward, lambda d: _arrays(d, (N, H), (D, H), (H, H), (N, D), (N, H),
                                                     (N, H))),
    "lstm_forward": (lstm_forward, lstm_args),
    "time_affine": (time_affine_forward, lambda d: _arrays(d, (N, T, D), (D, V), (V,))),
    "time_softmax_labels": (time_softmax_with_loss, lambda d: (*_arrays(d, (N, T, V)),
                                                               labels())),
    "time_softmax_one_hot": (time_softmax_with_loss, lambda d: (
        *_arrays(d, (N, T, V)), np.eye(V, dtype=d)[np.abs(labels())])),
}


def _same(got, want, dtype):
    if isinstance(want, tuple):
        for g, w in zip(got, want):
            _same(g, w, dtype)
        return
    assert np.asarray(got).dtype == np.asarray(want).dtype
    assert np.shape(got) == np.shape(want)
    np.testing.assert_allclose(got, want, rtol=2e-5 if dtype == "float32" else 1e-12,
                               atol=1e-6 if dtype == "float32" else 1e-12)


@pytest.mark.parametrize("dtype", ["float32", "float64"])
@pytest.mark.parametrize("name", sorted(PROGRAMS))
def test_compiled_equals_plain(name, dtype):
    fn, make_args = PROGRAMS[name]
    args = make_args(dtype)
    _same(script(fn)(*args), fn(*args), dtype)


@pytest.mark.parametrize("dtype", ["float32", "float64"])
def test_the_books_lstm_backward_equals_the_derived_gradient(dtype):
    args = lstm_args(dtype)
    x, h_prev, c_prev, Wx, Wh, b = args
    dh_next, dc_next = _arrays(dtype, (N, H), (N, H) + (1,))[0], _arrays(dtype, (N, H))[0]
    _, _, cache = lstm_forward(*args)
    want = lstm_backward(dh_next, dc_next, Wx, Wh, cache)
    _same(script(lstm_backward)(dh_next, dc_next, Wx, Wh, cache), want, dtype)
    _, backward = vjp(script(lstm_step), *args)
    derived = backward((dh_next, dc_next))
    # the derived order is the arguments' (x, h_prev, c_prev, Wx, Wh, b)
    got = tuple(derived[k] for k in (0, 1, 2, 3, 4, 5))
    _same(got, want, dtype)


@pytest.mark.parametrize("name", ["rnn_forward", "lstm_forward", "time_affine",
                                  "time_softmax_labels", "cross_entropy_labels"])
def test_gradients_match_finite_differences(name):
    fn, make_args = PROGRAMS[name]
    check_vjp(script(fn), make_args("float64"))
