"""A backward loop over the list of tuples its forward saved (CS231n's ``rnn_backward``:
``x, prev_h, Wx, Wh, next_h = cache[t]``) runs natively: the list is read as one list per field
of the tuples, and items that are views of one array (``x[:, t, :]``) are read in place.

Before, a list argument of tuples kept no item types (the loop carried a value of unknown
shape and ran as Python), and a native loop refused list items that are not C-contiguous.
"""

from __future__ import annotations

from typing import Dict, List, Tuple

import numpy as np
import pytest

from script import Tensor, script
from tests.helpers import native_loops, python_loop_result

Cache = Tuple[Tensor, Tensor, Tensor]


def forward(x: Tensor, h0: Tensor, Wx: Tensor, Wh: Tensor):
    N, T, D = x.shape
    caches: List[Cache] = []
    h = h0
    for t in range(T):
        xt = x[:, t, :]
        nh = np.tanh(h.dot(Wh) + xt.dot(Wx))
        caches.append((xt, h, nh))
        h = nh
    return h, caches


def backward(dh: Tensor, caches: List[Cache], Wx: Tensor, Wh: Tensor):
    dWx = np.zeros(Wx.shape)
    dWh = np.zeros(Wh.shape)
    dprev = dh
    for t in reversed(range(len(caches))):
        xt, prev_h, nh = caches[t]
        d = (1 - nh ** 2) * dprev
        dWx += xt.T.dot(d)
        dWh += prev_h.T.dot(d)
        dprev = d.dot(Wh.T)
    return dprev, dWx, dWh


def second_field(caches: List[Cache]) -> Tensor:
    total = np.zeros(caches[0][1].shape)
    for t in range(len(caches)):
        total = total + caches[t][1] * 0.5 + caches[t][-1]
    return total


def _args(dtype, N=4, T=12, D=5, H=6, seed=0):
    r = np.random.default_rng(seed)
    return (r.standard_normal((N, T, D)).astype(dtype), r.standard_normal((N, H)).astype(dtype),
            (r.standard_normal((D, H)) * 0.4).astype(dtype),
            (r.standard_normal((H, H)) * 0.4).astype(dtype))


def _close(got, want, dtype):
    tol = 1e-5 if dtype == np.float32 else 1e-12
    for g, w in zip(got if isinstance(got, tuple) else (got,),
                    want if isinstance(want, tuple) else (want,)):
        np.testing.assert_allclose(g, w, rtol=tol, atol=tol)


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_the_backward_over_the_saved_tuples_runs_natively(dtype, monkeypatch):
    x, h0, Wx, Wh = _args(dtype)
    h, caches = forward(x, h0, Wx, Wh)
    assert not caches[0][0].flags.c_contiguous  # the views x[:, t, :]
    dh = np.ones_like(h)
    f = script(backward)
    _close(f(dh, caches, Wx, Wh), backward(dh, caches, Wx, Wh), dtype)
    _close(f(dh, caches, Wx, Wh), python_loop_result(monkeypatch, backward, dh, caches, Wx, Wh),
           dtype)
    (loop,) = native_loops(f, dh, caches, Wx, Wh)
    assert loop.calls == 2  # the native loop ran (it returns None when it cannot)


def test_items_laid_out_differently_run_as_python():
    """An item whose strides are not the first item's: the loop runs as Python, right."""
    x, h0, Wx, Wh = _args(np.float64)
    h, caches = forward(x, h0, Wx, Wh)
    f = script(backward)
    f(np.ones_like(h), caches, Wx, Wh)
    mixed = list(caches)
    mixed[3] = (np.ascontiguousarray(mixed[3][0]), mixed[3][1], mixed[3][2])
    _close(f(np.ones_like(h), mixed, Wx, Wh), backward(np.ones_like(h), mixed, Wx, Wh),
           np.float64)


def test_fields_read_by_constant_index():
    x, h0, Wx, Wh = _args(np.float64)
    _, caches = forward(x, h0, Wx, Wh)
    f = script(second_field)
    _close(f(caches), second_field(caches), np.float64)
    assert "runs natively" in f.explain(caches)


def test_the_forward_and_backward_in_one_function():
    """The list the forward loop appends to is read by the backward loop after it."""
    x, h0, Wx, Wh = _args(np.float64)
    f = script(forward_backward)
    _close(f(x, h0, Wx, Wh), forward_backward(x, h0, Wx, Wh), np.float64)


def forward_backward(x: Tensor, h0: Tensor, Wx: Tensor, Wh: Tensor):
    h, caches = forward(x, h0, Wx, Wh)
    return backward(np.ones_like(h), caches, Wx, Wh)


def clipped_gradients(xs: Tensor, model: Dict[str, Tensor]):
    """hipsternet's clipping: (key, value) pairs of ``d.items()`` read in a loop are tuples of
    a list too (their columns once crashed the alias analysis)."""
    steps = []
    for x in xs:
        steps.append(x * 2.0)
    grads = dict([(k, np.zeros_like(v)) for k, v in model.items()])
    for t in range(len(steps)):
        for k in grads.keys():
            grads[k] += steps[t]
    for k, v in grads.items():
        grads[k] = np.clip(v, -5.0, 5.0)
    return grads


def test_a_loop_over_dict_items():
    xs = np.random.default_rng(5).standard_normal((4, 3)) * 3
    model = {"W": np.zeros(3), "b": np.ones(3)}
    got, want = script(clipped_gradients)(xs, model), clipped_gradients(xs, model)
    assert got.keys() == want.keys()
    for k in want:
        np.testing.assert_array_equal(got[k], want[k])
