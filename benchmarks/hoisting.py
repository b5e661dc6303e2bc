"""The RNN passes on the scripted LSTM layer: forward time with and without each, side by side.

    python -m benchmarks.hoisting [--repeat 5] [--sizes fastrnns,small,short]

The layer is tests/programs/cells.py ``lstm_layer`` (a loop over ``ops.unbind(x, 0)``), float32.
Each configuration is compiled once under ``passes.disable(...)`` (or with a changed unrolling
setting), then all configurations run interleaved in one process, and the
ratio is the configuration's time over the default pipeline's (> 1: the default is faster).
Times are the best sample (least disturbed by other processes); on a busy machine set
OPENBLAS_NUM_THREADS=1, as a multi-threaded GEMM stalls when its threads are descheduled.
"""

from __future__ import annotations

import argparse
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager, nullcontext
from typing import Any

import numpy as np

import passes
from passes import unroll
from script import script
from tests.programs.cells import lstm_layer

SIZES = {  # name -> (T, B, I = H)
    "fastrnns": (100, 64, 512),
    "small": (100, 8, 64),
    "short": (8, 8, 64),
}
RNN_PASSES = ("licm", "hoist-projection", "unroll", "batch-matmul")


@contextmanager
def unrolling(factor: int, full_trips: int | None = None) -> Iterator[None]:
    """Compile with another unroll factor (and optionally a larger full-unroll bound)."""
    saved = (unroll.DEFAULT_FACTOR, unroll.MAX_FULL_UNROLL_TRIPS, unroll.MAX_FULL_UNROLL_NODES)
    unroll.DEFAULT_FACTOR = factor
    if full_trips is not None:
        unroll.MAX_FULL_UNROLL_TRIPS, unroll.MAX_FULL_UNROLL_NODES = full_trips, 10**6
    try:
        yield
    finally:
        unroll.DEFAULT_FACTOR, unroll.MAX_FULL_UNROLL_TRIPS, unroll.MAX_FULL_UNROLL_NODES = saved


CONFIGS: dict[str, Callable[[], Any]] = {
    "default pipeline": nullcontext,
    "without licm": lambda: passes.disable("licm"),
    "without hoist-projection": lambda: passes.disable("hoist-projection"),
    "without hoisting or batch-mm": lambda: passes.disable("hoist-projection", "batch-matmul"),
    "without batch-matmul": lambda: passes.disable("batch-matmul"),
    "without any RNN pass": lambda: passes.disable(*RNN_PASSES),
    "unroll by 8": lambda: unrolling(unroll.PYTORCH_FACTOR),
    "unroll fully": lambda: unrolling(1, full_trips=10**6),
}


def make_args(T: int, B: int, H: int) -> tuple[np.ndarray, ...]:
    rng = np.random.default_rng(0)
    f = np.float32
    x = rng.standard_normal((T, B, H)).astype(f)
    h, c = rng.standard_normal((B, H)).astype(f), rng.standard_normal((B, H)).astype(f)
    w_ih = (rng.standard_normal((4 * H, H)) / np.sqrt(H)).astype(f)
    w_hh = (rng.standard_normal((4 * H, H)) / np.sqrt(H)).astype(f)
    b = rng.standard_normal(4 * H).astype(f)
    return (x, h, c, w_ih, w_hh, b, b.copy())


def compiled(config: str, args: tuple) -> tuple[Callable[..., Any], float]:
    """A scripted layer compiled under ``config``, and the compile time in seconds."""
    fn = script(lstm_layer)
    with CONFIGS[config]():
        t0 = time.perf_counter()
        fn(*args)
        return fn, time.perf_counter() - t0


def measure(size: str, repeat: int, configs: list[str]) -> None:
    T, B, H = SIZES[size]
    args = make_args(T, B, H)
    inner = max(1, int(2e6 // (T * B * H * 8)))  # about the same wall time per sample everywhere
    fns = {"numpy eager": (lstm_layer, 0.0)}
    fns.update({c: compiled(c, args) for c in configs})
    want = lstm_layer(*args)[0]
    samples: dict[str, list[float]] = {name: [] for name in fns}
    for _ in range(repeat):
        for name, (fn, _) in fns.items():
            t0 = time.perf_counter()
            for _ in range(inner):
                out = fn(*args)
            samples[name].append((time.perf_counter() - t0) / inner)
            assert np.allclose(out[0], want, rtol=1e-3, atol=1e-4), name
    base = min(samples["default pipeline"])
    print(f"\nLSTM layer forward, T={T} B={B} I=H={H} float32 (best of {repeat} x {inner})")
    print(f"{'configuration':32} {'ms':>10} {'vs default':>11} {'compile s':>10}")
    for name, times in samples.items():
        t = min(times)
        print(f"{name:32} {t * 1e3:10.3f} {t / base:11.2f} {fns[name][1]:10.3f}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeat", type=int, default=5)
    parser.add_argument("--sizes", default="fastrnns,small,short")
    parser.add_argument("--configs", default=",".join(CONFIGS))
    opts = parser.parse_args()
    configs = [c for c in opts.configs.split(",") if c]
    for size in opts.sizes.split(","):
        measure(size, opts.repeat, configs)


if __name__ == "__main__":
    main()
