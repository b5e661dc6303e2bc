"""Real numpy RNN code with in-place writes: the vanilla RNN layer of the CS231n (Stanford)
assignment 3, ``cs231n/rnn_layers.py`` (``rnn_step_forward``, ``rnn_forward``,
``rnn_step_backward``, ``rnn_backward``, with the bodies as the assignment is commonly completed),
ported with type annotations only (the empty ``cache`` list gets its element type). The forward
writes each step's state into a preallocated ``h[:, t, :]``; the hand-written backward writes
``dx[:, t, :]`` through a tuple-unpacking assignment and accumulates with ``+=``.

Compiled equals plain (float32 and float64); the hand-written backward, compiled, equals the
gradient the compiler derives from the compiled forward; the forward's gradients equal finite
differences (differentiating the backward itself needs the items of its ``List[Tuple]`` argument to
keep their shapes, which they do not yet)."""

from typing import List, Tuple

import numpy as np
import pytest

from script import Tensor, script, vjp
from tests.gradcheck import check_vjp

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
    """The states alone (autodiff does not return the cache list through a tuple)."""
    h, _ = rnn_forward(x, h0, Wx, Wh, b)
    return h


def inputs(dtype, seed=0):
    r = np.random.default_rng(seed)
    N, T, D, H = 3, 5, 4, 6
    return (r.standard_normal((N, T, D)).astype(dtype), r.standard_normal((N, H)).astype(dtype),
            (r.standard_normal((D, H)) * 0.3).astype(dtype),
            (r.standard_normal((H, H)) * 0.3).astype(dtype), r.standard_normal(H).astype(dtype))


def close(got, want, dtype):
    tol = 1e-5 if dtype == np.float32 else 1e-12
    for g, w in zip(got, want):
        assert np.asarray(g).dtype == np.asarray(w).dtype
        np.testing.assert_allclose(g, w, rtol=tol, atol=tol)


@pytest.mark.parametrize("dtype", [np.float64, np.float32])
def test_forward_and_backward_equal_numpy(dtype):
    args = inputs(dtype)
    h, cache = script(rnn_forward)(*args)
    h_np, cache_np = rnn_forward(*args)
    close([h], [h_np], dtype)  # stored into np.zeros((N, T, H)): float64 in both
    dh = np.random.default_rng(1).standard_normal(h.shape).astype(dtype)
    close(script(rnn_backward)(dh, cache_np), rnn_backward(dh, cache_np), dtype)


def test_hand_written_backward_equals_the_derived_gradient():
    args = inputs(np.float64)
    dh = np.random.default_rng(2).standard_normal((3, 5, 6))

    _, backward = vjp(script(forward_h), *args)
    derived = backward(dh)
    _, cache = rnn_forward(*args)
    dx, dh0, dWx, dWh, db = script(rnn_backward)(dh, cache)
    for got, want in zip((dx, dh0, dWx, dWh, db), derived):
        np.testing.assert_allclose(got, want, rtol=1e-10, atol=1e-12)


def test_gradients_equal_finite_differences():
    check_vjp(script(forward_h), inputs(np.float64))
