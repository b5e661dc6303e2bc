"""A preallocated buffer written once per step against the list+stack form, compiled and plain.

    python -m benchmarks.inplace_writes [--repeat 20] [--sizes fastrnns,small]

An Elman RNN's outputs collected two ways: ``h = np.zeros((T, B, H)); h[t] = ...`` (the write
becomes ``select_put`` and the ``inplace-writes`` pass stores into the buffer) and
``hs.append(...)`` then ``np.stack(hs)`` (``stack-to-slots`` preallocates). Also the buffer form
with the pass disabled (a copy of the buffer every step) and plain numpy. All run interleaved in
one process; times are the best sample. float32.
"""

from __future__ import annotations

import argparse
import time
from typing import Any

import numpy as np

import passes
from script import Tensor, script

SIZES = {  # name -> (T, B, I, H)
    "fastrnns": (100, 64, 512, 512),
    "small": (100, 8, 64, 64),
}


def buffer_form(x: Tensor, W: Tensor, U: Tensor) -> Tensor:
    T = x.shape[0]
    h = np.zeros((T, x.shape[1], W.shape[1]), dtype=np.float32)
    prev = np.zeros((x.shape[1], W.shape[1]), dtype=np.float32)
    for t in range(T):
        prev = np.tanh(x[t] @ W + prev @ U)
        h[t] = prev
    return h


def list_form(x: Tensor, W: Tensor, U: Tensor) -> Tensor:
    T = x.shape[0]
    hs = []
    prev = np.zeros((x.shape[1], W.shape[1]), dtype=np.float32)
    for t in range(T):
        prev = np.tanh(x[t] @ W + prev @ U)
        hs.append(prev)
    return np.stack(hs)


def best_time(fn: Any, args: tuple, repeat: int) -> float:
    fn(*args)
    best = float("inf")
    for _ in range(repeat):
        start = time.perf_counter()
        fn(*args)
        best = min(best, time.perf_counter() - start)
    return best


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeat", type=int, default=20)
    parser.add_argument("--sizes", default="fastrnns,small")
    opts = parser.parse_args()
    for size in opts.sizes.split(","):
        T, B, n_in, H = SIZES[size]
        r = np.random.default_rng(0)
        args = (r.standard_normal((T, B, n_in), np.float32) * 0.1,
                r.standard_normal((n_in, H), np.float32) * 0.1,
                r.standard_normal((H, H), np.float32) * 0.1)
        copying = script(buffer_form)
        with passes.disable("inplace-writes"):
            copying(*args)  # specialize without the pass
        configs = {"buffer, compiled": script(buffer_form), "list+stack, compiled":
                   script(list_form), "buffer, copy per step": copying,
                   "buffer, plain numpy": buffer_form, "list+stack, plain numpy": list_form}
        best = {name: float("inf") for name in configs}
        for _ in range(3):  # interleaved rounds
            for name, fn in configs.items():
                best[name] = min(best[name], best_time(fn, args, opts.repeat))
        print(f"{size} (T={T}, B={B}, I={n_in}, H={H}):")
        for name, t in best.items():
            print(f"  {name:26s} {t * 1e3:8.2f} ms")


if __name__ == "__main__":
    main()
