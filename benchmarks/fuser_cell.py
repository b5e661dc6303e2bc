"""The LSTM cell's elementwise part: one fused CPU kernel vs numpy eager, side by side.

    python -m benchmarks.fuser_cell [--repeat 200]

Inputs are the two gate matmul results, the two biases and the cell state (float32); outputs are
hy and cy. Times are medians of interleaved runs in one process; the ratio is numpy / fused. The
compile time is per kernel: the first kernel of the process (which also starts the JIT) and then a
new kernel in a warm JIT.
"""

from __future__ import annotations

import argparse
import statistics
import time

import numpy as np

from fuser.cpu import compile_group
from ir import Graph, TensorType, infer_types


def _emit(g: Graph, kind: str, *inputs):
    node = g.insert(kind, inputs)
    for t in infer_types(node):
        node.add_output(t)
    return node.outputs[0] if len(node.outputs) == 1 else node.outputs


def lstm_tail_graph(B: int, H: int, dtype: str = "float32") -> Graph:
    """gates = mm1 + b_ih + mm2 + b_hh; i, f, g, o = chunk(gates, 4, 1); cy, hy."""
    g = Graph("lstm_tail")
    t = lambda *s: TensorType(dtype, s)  # noqa: E731
    mm1, mm2 = g.add_input(t(B, 4 * H)), g.add_input(t(B, 4 * H))
    b_ih, b_hh, cx = g.add_input(t(4 * H)), g.add_input(t(4 * H)), g.add_input(t(B, H))
    gates = _emit(g, "tensor::add", _emit(g, "tensor::add", _emit(g, "tensor::add", mm1, b_ih),
                                          mm2), b_hh)
    i, f, c, o = _emit(g, "tensor::chunk", gates, g.constant(4), g.constant(1))
    i, f, o = (_emit(g, "tensor::sigmoid", v) for v in (i, f, o))
    cy = _emit(g, "tensor::add", _emit(g, "tensor::mul", f, cx),
               _emit(g, "tensor::mul", i, _emit(g, "tensor::tanh", c)))
    g.add_output(_emit(g, "tensor::mul", o, _emit(g, "tensor::tanh", cy)))
    g.add_output(cy)
    return g


def numpy_lstm_tail(mm1, mm2, b_ih, b_hh, cx):
    gates = mm1 + b_ih + mm2 + b_hh
    i, f, c, o = np.split(gates, 4, axis=1)
    i, f, o = (1 / (1 + np.exp(-v)) for v in (i, f, o))
    cy = f * cx + i * np.tanh(c)
    return o * np.tanh(cy), cy


def _median_us(fn, repeat: int, inner: int) -> float:
    times = []
    for _ in range(repeat):
        t0 = time.perf_counter()
        for _ in range(inner):
            fn()
        times.append((time.perf_counter() - t0) / inner)
    return statistics.median(times) * 1e6


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeat", type=int, default=200)
    args = parser.parse_args()

    t0 = time.perf_counter()
    compile_group(lstm_tail_graph(64, 512))
    first = time.perf_counter() - t0
    t0 = time.perf_counter()
    compile_group(lstm_tail_graph(64, 512, "float64"))
    warm = time.perf_counter() - t0
    print(f"compile: first kernel {first * 1e3:.1f} ms (JIT start included), "
          f"next kernel {warm * 1e3:.1f} ms")

    rng = np.random.default_rng(0)
    print(f"{'size':>8} {'numpy us':>10} {'fused us':>10} {'ratio':>7}")
    for B, H in ((64, 512), (8, 64)):
        g = lstm_tail_graph(B, H)
        kernel = compile_group(g)  # same kernel for both sizes: sizes are run-time arguments
        inputs = [rng.standard_normal(v.type.shape).astype(np.float32) for v in g.inputs]
        hy, cy = kernel(*inputs)
        want_hy, want_cy = numpy_lstm_tail(*inputs)
        assert np.allclose(hy, want_hy, atol=1e-5) and np.allclose(cy, want_cy, atol=1e-5)
        inner = max(1, 20000 // (B * H))
        np_times, fused_times = [], []
        for _ in range(5):  # interleave so machine noise hits both alike
            np_times.append(_median_us(lambda: numpy_lstm_tail(*inputs), args.repeat // 5, inner))
            fused_times.append(_median_us(lambda: kernel(*inputs), args.repeat // 5, inner))
        t_np, t_fused = statistics.median(np_times), statistics.median(fused_times)
        print(f"{B:>3}x{H:<4} {t_np:>10.1f} {t_fused:>10.1f} {t_np / t_fused:>6.1f}x")


if __name__ == "__main__":
    main()
