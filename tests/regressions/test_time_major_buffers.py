"""A recurrent loop that writes each step into time-major ``(T, B, ...)`` buffers made with
``np.zeros`` (float64) from float32 inputs, as batched numpy LSTMs written without a framework
do: the write of a float32 step into a float64 buffer is cast as its own op (``cast-writes``), a
float32 weight multiplied by float64 activations is cast once before the loop
(``contiguous-weights``), so the loop runs natively; its steps are not independent across
batch rows in the loop's terms (the buffers' batch axis is their second), so a large step
product goes to BLAS on its threads (``RowRanges._threaded``). Values equal numpy's."""

from __future__ import annotations

import numpy as np
import pytest

from fuser.cpu import products
from script import Tensor, script
from tests.helpers import native_loops


def time_major_lstm(X: Tensor, W: Tensor) -> tuple[Tensor, Tensor]:
    n, b, d_in = X.shape
    d = W.shape[1] // 4
    Hin = np.zeros((n, b, W.shape[0]))
    Hout = np.zeros((n, b, d))
    C = np.zeros((n, b, d))
    for t in range(n):
        prevh = Hout[t - 1] if t > 0 else np.zeros((b, d))
        prevc = C[t - 1] if t > 0 else np.zeros((b, d))
        Hin[t, :, 0] = 1
        Hin[t, :, 1:d_in + 1] = X[t]
        Hin[t, :, d_in + 1:] = prevh
        gates = Hin[t].dot(W)
        s = 1.0 / (1.0 + np.exp(-gates[:, :3 * d]))
        C[t] = s[:, :d] * np.tanh(gates[:, 3 * d:]) + s[:, d:2 * d] * prevc
        Hout[t] = s[:, 2 * d:3 * d] * np.tanh(C[t])
    return Hout, C


@pytest.mark.parametrize("dtype", ["float32", "float64"])
@pytest.mark.parametrize("threads", [1, 2])
@pytest.mark.parametrize("sizes", [(4, 3, 5, 6), (3, 64, 128, 256)])
def test_time_major_loop_runs_natively_and_equals_numpy(monkeypatch, dtype, threads, sizes):
    monkeypatch.setattr(products, "threads", lambda: threads)
    n, b, d_in, d = sizes
    rng = np.random.default_rng(0)
    X = rng.standard_normal((n, b, d_in)).astype(dtype)
    W = (rng.standard_normal((d_in + d + 1, 4 * d)) / np.sqrt(d_in + d)).astype(dtype)
    f = script(time_major_lstm)
    for _ in range(2):
        got = f(X, W)
        want = time_major_lstm(X, W)
        for g, w in zip(got, want):
            assert g.dtype == w.dtype == np.float64
            np.testing.assert_allclose(g, w, rtol=1e-12, atol=1e-12)
    assert "runs natively" in f.explain(X, W)
    (loop,) = native_loops(f, X, W)
    threaded = threads > 1 and b * 4 * d * (d_in + d + 1) >= 1 << 21  # the step's product
    assert bool(loop.fns[3]) != threaded, "the float64 product: BLAS on threads, else the kernel"
