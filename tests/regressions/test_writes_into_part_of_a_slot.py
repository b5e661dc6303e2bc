"""Writes into a part of one step's slot of a buffer, the style of Karpathy's batched LSTM
(``Hin[t, :, 0] = 1``, ``Hin[t, :, 1:D + 1] = X[t]``, ``IFOGf[t, :, :3 * d] = ...``), store
into the slot itself as numpy does: no copy of the slot, none of the buffer, and the loop runs
natively (a slice written, a number filling a column, by element-by-element copies).

Before, each such write read the slot out, copied it with the part replaced and wrote it back,
and the loop ran as Python; two buffers of zeros that the passes merged into one were copied
whole on their first write, as was each loop's first value read anywhere else.
"""

from __future__ import annotations

import numpy as np
import pytest

from script import Tensor, script
from tests.gradcheck import check_vjp
from tests.helpers import native_loops, python_loop_result


def lstm_forward(X: Tensor, W: Tensor, h0: Tensor, c0: Tensor):
    """One weight matrix over [1, x, h] per step, every step's pieces kept in buffers."""
    steps, rows, nx = X.shape
    nh = W.shape[1] // 4
    xh = np.zeros((steps, rows, W.shape[0]))
    hs = np.zeros((steps, rows, nh))
    pre = np.zeros((steps, rows, 4 * nh))
    acts = np.zeros((steps, rows, 4 * nh))
    cs = np.zeros((steps, rows, nh))
    tcs = np.zeros((steps, rows, nh))
    for s in range(steps):
        xh[s, :, 0] = 1
        xh[s, :, 1:nx + 1] = X[s]
        xh[s, :, nx + 1:] = hs[s - 1] if s > 0 else h0
        pre[s] = xh[s].dot(W)
        acts[s, :, :3 * nh] = 1.0 / (1.0 + np.exp(-pre[s, :, :3 * nh]))
        acts[s, :, 3 * nh:] = np.tanh(pre[s, :, 3 * nh:])
        c_before = cs[s - 1] if s > 0 else c0
        cs[s] = acts[s, :, nh:2 * nh] * c_before + acts[s, :, :nh] * acts[s, :, 3 * nh:]
        tcs[s] = np.tanh(cs[s])
        hs[s] = tcs[s] * acts[s, :, 2 * nh:3 * nh]
    return hs, xh, acts, cs, tcs


def lstm_backward(dhs: Tensor, W: Tensor, xh: Tensor, acts: Tensor, cs: Tensor, tcs: Tensor,
                  c0: Tensor):
    """Its gradients, step by step from the last: into the step before, or the first state."""
    steps, rows, nh = dhs.shape
    nx = W.shape[0] - nh - 1
    g_pre = np.zeros(acts.shape)
    g_acts = np.zeros(acts.shape)
    gW = np.zeros(W.shape)
    g_xh = np.zeros(xh.shape)
    g_cs = np.zeros(cs.shape)
    gX = np.zeros((steps, rows, nx))
    gh0 = np.zeros((rows, nh))
    gc0 = np.zeros((rows, nh))
    g_hs = dhs.copy()
    for s in reversed(range(steps)):
        g_acts[s, :, 2 * nh:3 * nh] = g_hs[s] * tcs[s]
        g_cs[s] += g_hs[s] * acts[s, :, 2 * nh:3 * nh] * (1 - tcs[s] * tcs[s])
        if s > 0:
            g_acts[s, :, nh:2 * nh] = g_cs[s] * cs[s - 1]
            g_cs[s - 1] += g_cs[s] * acts[s, :, nh:2 * nh]
        else:
            g_acts[s, :, nh:2 * nh] = g_cs[s] * c0
            gc0 = g_cs[s] * acts[s, :, nh:2 * nh]
        g_acts[s, :, :nh] = g_cs[s] * acts[s, :, 3 * nh:]
        g_acts[s, :, 3 * nh:] = g_cs[s] * acts[s, :, :nh]
        sig = acts[s, :, :3 * nh]
        g_pre[s, :, :3 * nh] = g_acts[s, :, :3 * nh] * sig * (1.0 - sig)
        g_pre[s, :, 3 * nh:] = g_acts[s, :, 3 * nh:] * (1 - acts[s, :, 3 * nh:] ** 2)
        gW += np.dot(xh[s].T, g_pre[s])
        g_xh[s] = g_pre[s].dot(W.T)
        gX[s] = g_xh[s, :, 1:nx + 1]
        if s > 0:
            g_hs[s - 1, :] += g_xh[s, :, nx + 1:]
        else:
            gh0 += g_xh[s, :, nx + 1:]
    return gX, gW, gc0, gh0


def lstm_loss(X: Tensor, W: Tensor, h0: Tensor, c0: Tensor) -> Tensor:
    hs, _, _, cs, _ = lstm_forward(X, W, h0, c0)
    return np.sum(hs * hs) + np.sum(cs[-1])


def fill_column(X: Tensor) -> Tensor:
    n, b, k = X.shape
    out = np.zeros((n, b, k + 1), dtype=X.dtype)
    for t in range(n):
        out[t, :, 0] = 1
        out[t, :, 1:] = X[t] * 2.0
    return out


def shift_within_slot(X: Tensor) -> Tensor:
    """The part written is read from the same slot (numpy buffers the overlap)."""
    A = X.copy()
    for t in range(X.shape[0]):
        A[t, :, 1:] = A[t, :, :-1]
    return A


def slice_of_a_copy(X: Tensor) -> Tensor:
    """A GRU's reset input: a copy of the step's row with a slice replaced (a new array)."""
    n, b, k = X.shape
    out = np.zeros((n, b, k))
    for t in range(n):
        reset = X[t].copy()
        reset[:, 2:] = X[t, :, 2:] * 0.5
        out[t] = np.tanh(reset)
    return out


def two_buffers_of_zeros(X: Tensor):
    n, b, k = X.shape
    C = np.zeros((n, b, k))
    Ct = np.zeros((n, b, k))
    for t in range(n):
        C[t] = X[t] * 2.0
        Ct[t] = np.tanh(C[t])
    return C, Ct


def _lstm_args(dtype, n=9, b=3, D=5, d=4, seed=0):
    r = np.random.default_rng(seed)
    return (r.standard_normal((n, b, D)).astype(dtype),
            (r.standard_normal((D + d + 1, 4 * d)) / 3).astype(dtype),
            r.standard_normal((b, d)).astype(dtype), r.standard_normal((b, d)).astype(dtype))


def _close(got, want, dtype):
    tol = 1e-5 if dtype == np.float32 else 1e-12
    for g, w in zip(got if isinstance(got, tuple) else (got,),
                    want if isinstance(want, tuple) else (want,)):
        assert g.dtype == w.dtype and g.shape == w.shape
        np.testing.assert_allclose(g, w, rtol=tol, atol=tol)


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_lstm_forward_and_backward_run_natively_as_numpy_computes(dtype):
    args = _lstm_args(dtype)
    f = script(lstm_forward)
    got, want = f(*args), lstm_forward(*args)
    _close(got, want, dtype)
    steps = f.code_for(*args).split("for i in range")[1]  # the Python loop, where not native
    assert "copy" not in steps and "_put(" not in steps  # no buffer or slot copied
    hs, xh, acts, cs, tcs = want
    dH = np.random.default_rng(1).standard_normal(hs.shape).astype(dtype)
    bargs = (dH, args[1], xh, acts, cs, tcs, args[3])
    g = script(lstm_backward)
    _close(g(*bargs), lstm_backward(*bargs), dtype)
    # float32 rows written into float64 buffers: cast as an op of the loop (``cast-writes``)
    assert len(native_loops(f, *args)) == 1
    assert "runs natively" in g.explain(*bargs)


@pytest.mark.parametrize("n", [1, 2, 5])
def test_lstm_at_every_trip_count(n):
    args = _lstm_args(np.float64, n=n)
    _close(script(lstm_forward)(*args), lstm_forward(*args), np.float64)
    hs, xh, acts, cs, tcs = lstm_forward(*args)
    bargs = (hs * 0.5, args[1], xh, acts, cs, tcs, args[3])
    _close(script(lstm_backward)(*bargs), lstm_backward(*bargs), np.float64)


def test_gradients_through_writes_into_part_of_a_slot():
    check_vjp(lstm_loss, _lstm_args(np.float64, n=4), argnums=(0, 1, 2, 3))
    x = np.random.default_rng(2).standard_normal((4, 3, 5))
    check_vjp(fill_column, (x,), argnums=(0,))


@pytest.mark.parametrize("fn", [fill_column, shift_within_slot, slice_of_a_copy,
                                two_buffers_of_zeros])
@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_as_numpy_and_as_the_python_loop(fn, dtype, monkeypatch):
    x = np.random.default_rng(3).standard_normal((40, 3, 5)).astype(dtype)
    f = script(fn)
    _close(f(x), fn(x), dtype)
    _close(f(x), python_loop_result(monkeypatch, fn, x), dtype)
    # (float64 zeros written with float32 rows: a cast, an op of the loop of its own)
    natively = {fill_column: (np.float32, np.float64), slice_of_a_copy: (np.float32, np.float64),
                two_buffers_of_zeros: (np.float32, np.float64)}
    if dtype in natively.get(fn, ()):
        assert "runs natively" in f.explain(x)


def test_merged_buffers_stay_apart():
    x = np.random.default_rng(4).standard_normal((40, 3, 5))
    C, Ct = script(two_buffers_of_zeros)(x)
    assert not np.shares_memory(C, Ct)
    C[0] = 7.0
    assert not (Ct == 7.0).any()
