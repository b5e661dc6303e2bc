"""Frozen vs unfrozen forward time of a scripted LSTM stack (custom_lstms' ``script_lstm``).

    python -m benchmarks.freeze [--repeat 7] [--sizes small,fastrnns] [--layers 2]

Both run the same scripted module in eval mode: unfrozen, the weights are graph inputs read from
the parameters at each call and ``w.T`` runs every call (outside the time loop after licm);
frozen, they are constants and the transposes were folded at freeze time. A third column runs
the frozen model after ``save`` + ``load`` (it must match the frozen one). Samples alternate
between the models in one process; each time is the best sample, and the ratio is unfrozen over
frozen (> 1: freezing is faster). float32; on a busy machine set OPENBLAS_NUM_THREADS=1.
"""

from __future__ import annotations

import argparse
import os
import tempfile
import time
from collections.abc import Callable
from typing import Any

import numpy as np

from script import freeze, load, save, script
from tests.programs.custom_lstms import random_states, script_lstm

SIZES = {  # name -> (T, B, I = H)
    "short": (8, 8, 64),
    "small": (100, 8, 64),
    "fastrnns": (100, 64, 512),
}


def best_time(fn: Callable[[], Any], number: int) -> float:
    start = time.perf_counter()
    for _ in range(number):
        fn()
    return (time.perf_counter() - start) / number


def measure(size: str, layers: int, repeat: int) -> dict[str, float]:
    steps, batch, hidden = SIZES[size]
    module = script(script_lstm(hidden, hidden, layers, dtype="float32")).eval()
    rng = np.random.default_rng(0)
    x = rng.standard_normal((steps, batch, hidden)).astype(np.float32)
    states = random_states(layers, batch, hidden, rng, dtype="float32")
    frozen = freeze(module)
    with tempfile.TemporaryDirectory() as tmp:
        path = os.path.join(tmp, "lstm.rsm")
        save(frozen, path)
        loaded = load(path)
    models = {"unfrozen": module, "frozen": freeze(module), "loaded": loaded}
    for model in models.values():  # compile, and check they agree
        np.testing.assert_allclose(model(x, states)[0], module(x, states)[0], rtol=1e-4,
                                   atol=1e-5)
    number = max(1, int(0.2 / max(best_time(lambda: module(x, states), 1), 1e-6)))
    best = {name: float("inf") for name in models}
    for _ in range(repeat):
        for name, model in models.items():
            best[name] = min(best[name], best_time(lambda m=model: m(x, states), number))
    return best


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeat", type=int, default=7)
    parser.add_argument("--layers", type=int, default=2)
    parser.add_argument("--sizes", default="short,small,fastrnns")
    args = parser.parse_args()
    print(f"{'size (T, B, H)':<28} {'unfrozen ms':>12} {'frozen ms':>10} {'loaded ms':>10} "
          f"{'unfrozen/frozen':>16}")
    for size in args.sizes.split(","):
        t = measure(size, args.layers, args.repeat)
        label = f"{size} {SIZES[size]} x{args.layers}"
        print(f"{label:<28} {t['unfrozen'] * 1e3:>12.3f} {t['frozen'] * 1e3:>10.3f} "
              f"{t['loaded'] * 1e3:>10.3f} {t['unfrozen'] / t['frozen']:>16.3f}")


if __name__ == "__main__":
    main()
