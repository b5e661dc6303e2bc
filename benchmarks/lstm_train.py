"""Forward + backward of an LSTM layer: the scripted ``vjp`` vs numpy eager with a hand-written
backward, side by side in one process.

    python -m benchmarks.lstm_train [--repeat 5] [--sizes 100,64,512,512 100,8,64,64]

Sizes are (T, B, I, H), float32; the defaults are fastrnns' (T=100, B=64, I=H=512) and a small
overhead-bound one. Times are medians of interleaved runs; the ratio is numpy / scripted (above 1
means the scripted version is faster). The gradients of both are checked to agree first.
A third row differentiates only what training needs (``argnums``: the initial state and the
weights, not the input sequence, as ``torch.nn.LSTM`` does for an input that does not require
grad); its ratio to the full ``vjp`` is the saving of activity analysis. With torch installed,
``torch.nn.LSTM`` trained the same way (one thread) is timed too.

Both wall-clock and process CPU time are reported: on a shared machine BLAS threads waiting for
cores inflate wall time erratically, while CPU time stays comparable. For a steady single-core
comparison run with ``OPENBLAS_NUM_THREADS=1``.
"""

from __future__ import annotations

import argparse
import statistics
import time

import numpy as np

from benchmarks.fastrnns.eager import numpy_backward, numpy_forward
from script import script, vjp
from script.runtime.autodiff import compile_gradient
from tests.programs.cells import lstm_layer

WEIGHTS_AND_STATE = (1, 2, 3, 4, 5, 6)
"""What training differentiates: everything but the input sequence (argument 0)."""


def _args(T, B, inp, H, rng):
    def r(*s):
        return (rng.standard_normal(s) * 0.1).astype(np.float32)
    return (r(T, B, inp), r(B, H), r(B, H), r(4 * H, inp), r(4 * H, H), r(4 * H), r(4 * H))


def _time(fn):
    """(wall seconds, process CPU seconds) of one call."""
    wall, cpu = time.perf_counter(), time.process_time()
    fn()
    return time.perf_counter() - wall, time.process_time() - cpu


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

    def weights_only():
        _, backward = vjp(f, *args, argnums=WEIGHTS_AND_STATE)
        return backward(ct)

    def eager():
        _, tape = numpy_forward(*args)
        return numpy_backward(tape, args, ct[0], ct[1][0], ct[1][1])

    compile_gradient(f, args, wrt=frozenset(WEIGHTS_AND_STATE))
    want = eager()
    for got in zip(scripted(), want):
        np.testing.assert_allclose(*got, rtol=2e-3, atol=2e-4)
    pruned = weights_only()
    assert pruned[0] is None
    for got in zip(pruned[1:], want[1:]):
        np.testing.assert_allclose(*got, rtol=2e-3, atol=2e-4)
    variants = {"scripted": scripted, "numpy+hand backward": eager,
                "scripted, argnums=state+weights": weights_only}
    peer = _torch_training(args, ct)
    if peer is not None:
        variants["torch nn.LSTM, x not requiring grad"] = peer
    for fn in variants.values():  # warm up: first calls allocate and fill caches
        fn()
    times = {name: [] for name in variants}
    for _ in range(repeat):  # interleaved, so drift hits all alike
        for name, fn in variants.items():
            times[name].append(_time(fn))
    print(f"T={T} B={B} I={inp} H={H} (compile {compile_s:.2f} s)")
    for k, clock in enumerate(("wall", "cpu")):
        med = {name: statistics.median(t[k] for t in ts) for name, ts in times.items()}
        a, b = med["scripted"], med["numpy+hand backward"]
        print(f"  {clock:4}: scripted {a * 1e3:9.2f} ms   numpy+hand backward {b * 1e3:9.2f} ms   "
              f"ratio numpy/scripted {b / a:5.2f}")
        c = med["scripted, argnums=state+weights"]
        print(f"        scripted, argnums=state+weights {c * 1e3:9.2f} ms   "
              f"saving vs all arguments {1 - c / a:6.1%}")
        for name in list(med)[3:]:
            print(f"        {name} {med[name] * 1e3:9.2f} ms   "
                  f"ratio argnums-scripted/torch {c / med[name]:5.2f}")


def _torch_training(args, ct):
    """``torch.nn.LSTM``'s forward + backward with respect to the initial state and the weights
    (one thread), or None without torch."""
    try:
        import torch
    except ImportError:
        return None
    torch.set_num_threads(1)
    x, h0, c0, w_ih, w_hh, b_ih, b_hh = (torch.from_numpy(a) for a in args)
    lstm = torch.nn.LSTM(x.shape[2], h0.shape[1])
    with torch.no_grad():
        for param, w in zip(lstm.parameters(), (w_ih, w_hh, b_ih, b_hh)):
            param.copy_(w)
    h0, c0 = h0[None].requires_grad_(), c0[None].requires_grad_()
    cts = (torch.from_numpy(ct[0]), torch.from_numpy(ct[1][0])[None],
           torch.from_numpy(ct[1][1])[None])
    leaves = [h0, c0, *lstm.parameters()]

    def train():
        y, (h, c) = lstm(x, (h0, c0))
        return torch.autograd.grad((y, h, c), leaves, cts)
    return train


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeat", type=int, default=5)
    parser.add_argument("--sizes", nargs="*", default=["100,64,512,512", "100,8,64,64"])
    opts = parser.parse_args(argv)
    for sizes in opts.sizes:
        run(*map(int, sizes.split(",")), opts.repeat)


if __name__ == "__main__":
    main()
