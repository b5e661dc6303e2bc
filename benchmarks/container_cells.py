"""GRU and LSTM layers written over a weight dict, a weight list and separate arguments, and
two stacked LSTM layers over separate arguments and over a list of weight dicts: compiled vs
plain numpy, side by side.

    python -m benchmarks.container_cells [--steps 20] [--batch 16] [--hidden 64] [--repeat 15]

Each layer runs ``steps`` cell steps in a Python loop (float32). Times are the fastest of many
interleaved short runs in one process (on a loaded machine the median measures the load); the
ratio is plain numpy / compiled. Run it with one BLAS thread
(``OPENBLAS_NUM_THREADS=1``) on a shared machine: a hoisted input projection is a bigger matmul
than a step's, and a multi-threaded BLAS on busy cores makes it the slowest call of all.
"""

from __future__ import annotations

import argparse
import time
from typing import Dict, List

import numpy as np

from script import Tensor, script


def sigmoid(x):
    return 1.0 / (1.0 + np.exp(-x))


def gru_args(xs: Tensor, h: Tensor, W_z: Tensor, U_z: Tensor, b_z: Tensor, W_r: Tensor,
             U_r: Tensor, b_r: Tensor, W_h: Tensor, U_h: Tensor, b_h: Tensor):
    for t in range(xs.shape[0]):
        z = sigmoid(xs[t] @ W_z + h @ U_z + b_z)
        r = sigmoid(xs[t] @ W_r + h @ U_r + b_r)
        hh = np.tanh(xs[t] @ W_h + (r * h) @ U_h + b_h)
        h = (1 - z) * h + z * hh
    return h


def gru_dict(xs: Tensor, h: Tensor, p: Dict[str, Tensor]):
    for t in range(xs.shape[0]):
        z = sigmoid(xs[t] @ p["W_z"] + h @ p["U_z"] + p["b_z"])
        r = sigmoid(xs[t] @ p["W_r"] + h @ p["U_r"] + p["b_r"])
        hh = np.tanh(xs[t] @ p["W_h"] + (r * h) @ p["U_h"] + p["b_h"])
        h = (1 - z) * h + z * hh
    return h


def gru_list(xs: Tensor, h: Tensor, params: List[Tensor]):
    W_z, U_z, b_z, W_r, U_r, b_r, W_h, U_h, b_h = params
    return gru_args(xs, h, W_z, U_z, b_z, W_r, U_r, b_r, W_h, U_h, b_h)


def lstm_args(xs: Tensor, h: Tensor, c: Tensor, W: Tensor, U: Tensor, b: Tensor):
    H = h.shape[1]
    for t in range(xs.shape[0]):
        a = xs[t] @ W + h @ U + b
        i, f, o = sigmoid(a[:, :H]), sigmoid(a[:, H:2 * H]), sigmoid(a[:, 2 * H:3 * H])
        c = f * c + i * np.tanh(a[:, 3 * H:])
        h = o * np.tanh(c)
    return h, c


def lstm_dict(xs: Tensor, h: Tensor, c: Tensor, p: Dict[str, Tensor]):
    H = h.shape[1]
    for t in range(xs.shape[0]):
        a = xs[t] @ p["W"] + h @ p["U"] + p["b"]
        i, f, o = sigmoid(a[:, :H]), sigmoid(a[:, H:2 * H]), sigmoid(a[:, 2 * H:3 * H])
        c = f * c + i * np.tanh(a[:, 3 * H:])
        h = o * np.tanh(c)
    return h, c


def lstm_list(xs: Tensor, h: Tensor, c: Tensor, params: List[Tensor]):
    return lstm_args(xs, h, c, params[0], params[1], params[2])


def lstm_sequence(xs: Tensor, h: Tensor, c: Tensor, W: Tensor, U: Tensor, b: Tensor):
    H = h.shape[1]
    hs = []
    for t in range(xs.shape[0]):
        a = xs[t] @ W + h @ U + b
        i, f, o = sigmoid(a[:, :H]), sigmoid(a[:, H:2 * H]), sigmoid(a[:, 2 * H:3 * H])
        c = f * c + i * np.tanh(a[:, 3 * H:])
        h = o * np.tanh(c)
        hs.append(h)
    return np.stack(hs)


def stack_args(xs: Tensor, h: Tensor, c: Tensor, W0: Tensor, U0: Tensor, b0: Tensor,
               W1: Tensor, U1: Tensor, b1: Tensor):
    return lstm_sequence(lstm_sequence(xs, h, c, W0, U0, b0), h, c, W1, U1, b1)


def stack_layers(xs: Tensor, h: Tensor, c: Tensor, layers: List[Dict[str, Tensor]]):
    """Two LSTM layers, each a dict of its weights (the layout of most numpy ports)."""
    for layer in layers:
        xs = lstm_sequence(xs, h, c, layer["W"], layer["U"], layer["b"])
    return xs


def cases(steps: int, batch: int, hidden: int) -> list[tuple[str, object, object, tuple]]:
    r = np.random.default_rng(0)
    f32 = lambda *s: (r.standard_normal(s) * 0.1).astype(np.float32)  # noqa: E731
    xs, h, c = f32(steps, batch, hidden), f32(batch, hidden), f32(batch, hidden)
    gru = {f"{k}_{g}": f32(hidden, hidden) if k in "WU" else f32(hidden)
           for g in "zrh" for k in "WUb"}
    gru = {k: gru[k] for k in ["W_z", "U_z", "b_z", "W_r", "U_r", "b_r", "W_h", "U_h", "b_h"]}
    lstm = {"W": f32(hidden, 4 * hidden), "U": f32(hidden, 4 * hidden), "b": f32(4 * hidden)}
    second = {"W": f32(hidden, 4 * hidden), "U": f32(hidden, 4 * hidden), "b": f32(4 * hidden)}
    return [
        ("GRU  separate", gru_args, gru_args, (xs, h, *gru.values())),
        ("GRU  dict", gru_dict, gru_dict, (xs, h, gru)),
        ("GRU  list", gru_list, gru_list, (xs, h, list(gru.values()))),
        ("LSTM separate", lstm_args, lstm_args, (xs, h, c, *lstm.values())),
        ("LSTM dict", lstm_dict, lstm_dict, (xs, h, c, lstm)),
        ("LSTM list", lstm_list, lstm_list, (xs, h, c, list(lstm.values()))),
        ("2xLSTM separate", stack_args, stack_args, (xs, h, c, *lstm.values(), *second.values())),
        ("2xLSTM layers", stack_layers, stack_layers, (xs, h, c, [lstm, second])),
    ]


def best_times(fns: list, args: tuple, repeat: int, inner: int = 5) -> list[float]:
    """The fastest seconds per call of each of ``fns`` over ``repeat`` interleaved runs."""
    samples: list[list[float]] = [[] for _ in fns]
    for _ in range(repeat):
        for k, fn in enumerate(fns):
            start = time.perf_counter()
            for _ in range(inner):
                fn(*args)
            samples[k].append((time.perf_counter() - start) / inner)
    return [min(s) for s in samples]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--steps", type=int, default=20)
    parser.add_argument("--batch", type=int, default=16)
    parser.add_argument("--hidden", type=int, default=64)
    parser.add_argument("--repeat", type=int, default=30)
    opts = parser.parse_args()
    print(f"steps={opts.steps} batch={opts.batch} hidden={opts.hidden} float32")
    print(f"{'layer':15s} {'numpy us':>9s} {'compiled us':>12s} {'ratio':>6s} {'groups':>6s}")
    for name, plain, fn, args in cases(opts.steps, opts.batch, opts.hidden):
        compiled = script(fn)
        np.testing.assert_allclose(compiled(*args)[0], plain(*args)[0], rtol=1e-4, atol=1e-5)
        groups = str(compiled.graph_for(*args)).count("= prim::FusionGroup")
        eager, fast = best_times([plain, compiled], args, opts.repeat)
        print(f"{name:15s} {eager * 1e6:9.0f} {fast * 1e6:12.0f} {eager / fast:5.2f}x {groups:6d}")


if __name__ == "__main__":
    main()
