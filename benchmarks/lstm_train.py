"""Forward + backward of an LSTM layer: the scripted ``vjp`` vs numpy eager with a hand-written
backward, side by side in one process.

    python -m benchmarks.lstm_train [--repeat 5] [--sizes 100,64,512,512 100,8,64,64]

Sizes are (T, B, I, H), float32; the defaults are fastrnns' (T=100, B=64, I=H=512) and a small
overhead-bound one. Times are medians of interleaved runs; the ratio is numpy / scripted (above 1
means the scripted version is faster). The gradients of both are checked to agree first.
"""

from __future__ import annotations

import argparse
import statistics
import time

import numpy as np

from script import script, vjp
from script.autodiff import compile_gradient
from tests.programs.cells import lstm_layer


def _sigmoid(x):
    return 1 / (1 + np.exp(-x))


def numpy_forward(x, h, c, w_ih, w_hh, b_ih, b_hh):
    """The LSTM layer in numpy, keeping what the backward needs."""
    T, H = x.shape[0], h.shape[1]
    ys, tape = [], []
    wi_t, wh_t, b = w_ih.T, w_hh.T, b_ih + b_hh
    for t in range(T):
        gates = x[t] @ wi_t + h @ wh_t + b
        i, f, o = _sigmoid(gates[:, :H]), _sigmoid(gates[:, H:2 * H]), _sigmoid(gates[:, 3 * H:])
        g = np.tanh(gates[:, 2 * H:3 * H])
        c_prev, h_prev = c, h
        c = f * c + i * g
        tc = np.tanh(c)
        h = o * tc
        ys.append(h)
        tape.append((i, f, g, o, tc, c_prev, h_prev))
    return (np.stack(ys), (h, c)), tape


def numpy_backward(tape, args, dys, dh, dc):
    """The hand-written backward: reverse loop for the recurrence, weight gradients of the input
    projection batched over time."""
    x, _, _, w_ih, w_hh, _, _ = args
    T = x.shape[0]
    dgates_all = np.empty((T,) + (dys.shape[1], w_ih.shape[0]), dtype=x.dtype)
    dw_hh = np.zeros_like(w_hh)
    for t in reversed(range(T)):
        i, f, g, o, tc, c_prev, h_prev = tape[t]
        dh = dh + dys[t]
        dc = dc + dh * o * (1 - tc * tc)
        dgates = dgates_all[t]
        H = i.shape[1]
        dgates[:, :H] = dc * g * i * (1 - i)
        dgates[:, H:2 * H] = dc * c_prev * f * (1 - f)
        dgates[:, 2 * H:3 * H] = dc * i * (1 - g * g)
        dgates[:, 3 * H:] = dh * tc * o * (1 - o)
        dc = dc * f
        dw_hh += dgates.T @ h_prev
        dh = dgates @ w_hh
    flat = dgates_all.reshape(-1, w_ih.shape[0])
    dw_ih = flat.T @ x.reshape(-1, x.shape[2])
    dx = (flat @ w_ih).reshape(x.shape)
    db = flat.sum(axis=0)
    return dx, dh, dc, dw_ih, dw_hh, db, db


def _args(T, B, inp, H, rng):
    def r(*s):
        return (rng.standard_normal(s) * 0.1).astype(np.float32)
    return (r(T, B, inp), r(B, H), r(B, H), r(4 * H, inp), r(4 * H, H), r(4 * H), r(4 * H))


def _time(fn, repeat):
    samples = []
    for _ in range(repeat):
        start = time.perf_counter()
        fn()
        samples.append(time.perf_counter() - start)
    return samples


def run(T, B, inp, H, repeat):
    rng = np.random.default_rng(0)
    args = _args(T, B, inp, H, rng)
    f = script(lstm_layer)
    start = time.perf_counter()
    compile_gradient(f, args)
    compile_s = time.perf_counter() - start
    ct = (rng.standard_normal((T, B, H)).astype(np.float32),
          (np.zeros((B, H), np.float32), np.zeros((B, H), np.float32)))

    def scripted():
        _, backward = vjp(f, *args)
        return backward(ct)

    def eager():
        _, tape = numpy_forward(*args)
        return numpy_backward(tape, args, ct[0], ct[1][0], ct[1][1])

    for got, want in zip(scripted(), eager()):
        np.testing.assert_allclose(got, want, rtol=2e-3, atol=2e-4)
    ours, theirs = [], []
    for _ in range(repeat):  # interleaved, so drift hits both alike
        ours += _time(scripted, 1)
        theirs += _time(eager, 1)
    a, b = statistics.median(ours), statistics.median(theirs)
    print(f"T={T} B={B} I={inp} H={H}: scripted {a * 1e3:8.2f} ms   numpy+hand backward "
          f"{b * 1e3:8.2f} ms   ratio numpy/scripted {b / a:5.2f}   (compile {compile_s:.2f} s)")


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeat", type=int, default=5)
    parser.add_argument("--sizes", nargs="*", default=["100,64,512,512", "100,8,64,64"])
    opts = parser.parse_args(argv)
    for sizes in opts.sizes:
        run(*map(int, sizes.split(",")), opts.repeat)


if __name__ == "__main__":
    main()
