"""The LSTM cell's elementwise part: one fused CPU kernel vs numpy eager, side by side.

    python -m benchmarks.fuser_cell [--repeat 200]

Inputs are the two gate matmul results, the two biases and the cell state (float32); outputs are
hy and cy. Times are medians of interleaved short runs in one process (short, so a loaded machine
rarely preempts one); the ratio is numpy / fused. The per-call line compares the kernel's guarded
call (the normal path once a layout has been seen) with its general path, at the small size.

Compile time is per kernel, with an empty temporary disk cache: the first kernel of the process
(which also starts the JIT), a new kernel in a warm JIT, each stage of one compile, and loading
the first kernel again from the disk cache in a new process (what a program start pays).
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import llvmlite.binding as llvm
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


def compile_stages(graph: Graph) -> dict[str, float]:
    """Seconds per stage of compiling ``graph``'s kernel from scratch (no caches)."""
    from fuser.cpu import jit
    from fuser.cpu.codegen import KernelBuilder, analyze

    state = jit._jit()
    t0 = time.perf_counter()
    spec = analyze(graph)
    text = KernelBuilder(spec, (1,) * len(spec.leaves), f"stages_{time.monotonic_ns()}").build()
    t1 = time.perf_counter()
    mod = llvm.parse_assembly(text)
    mod.verify()
    t2 = time.perf_counter()
    opt = jit._optimized_module(state, text)
    t3 = time.perf_counter()
    state.opt_tms[False].emit_object(opt)
    t4 = time.perf_counter()
    return {"IR build": t1 - t0, "parse+verify": t2 - t1, "parse+O3": t3 - t2,
            "machine code": t4 - t3}


_CHILD = """
import time
t0 = time.perf_counter()
from benchmarks.fuser_cell import lstm_tail_graph
from fuser.cpu import compile_group, jit
t1 = time.perf_counter()
compile_group(lstm_tail_graph(64, 512))
t2 = time.perf_counter()
print((t2 - t1) * 1e3, jit.STATS.disk_hits)
"""


def disk_cache_load_ms() -> tuple[float, int]:
    """(ms to get the LSTM kernel in a new process, disk hits) with the current cache dir."""
    root = Path(__file__).resolve().parent.parent
    out = subprocess.run([sys.executable, "-c", _CHILD], cwd=root, check=True,
                         capture_output=True, text=True).stdout.split()
    return float(out[0]), int(out[1])


def _interleaved(cands: dict, rounds: int, inner: int) -> dict[str, float]:
    """Median µs per call of each candidate, timed round-robin in short bursts."""
    times: dict[str, list[float]] = {name: [] for name in cands}
    for _ in range(rounds):
        for name, fn in cands.items():
            t0 = time.perf_counter()
            for _ in range(inner):
                fn()
            times[name].append((time.perf_counter() - t0) / inner * 1e6)
    return {name: statistics.median(ts) for name, ts in times.items()}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeat", type=int, default=200)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="rnnscript-bench-") as cache:
        os.environ["RNNSCRIPT_CACHE_DIR"] = cache  # an empty cache: compile times are real
        _run(args.repeat)


def _run(repeat: int) -> None:

    t0 = time.perf_counter()
    compile_group(lstm_tail_graph(64, 512))
    first = time.perf_counter() - t0
    t0 = time.perf_counter()
    compile_group(lstm_tail_graph(64, 512, "float64"))
    warm = time.perf_counter() - t0
    print(f"compile: first kernel {first * 1e3:.1f} ms (JIT start included), "
          f"next kernel {warm * 1e3:.1f} ms")
    stages = compile_stages(lstm_tail_graph(64, 512))
    print("  stages: " + ", ".join(f"{k} {v * 1e3:.1f} ms" for k, v in stages.items()))
    load_ms, hits = disk_cache_load_ms()
    print(f"  from the disk cache in a new process: {load_ms:.1f} ms ({hits} hit)")

    rng = np.random.default_rng(0)
    print(f"{'size':>8} {'numpy us':>10} {'fused us':>10} {'ratio':>7}")
    for B, H in ((64, 512), (8, 64)):
        g = lstm_tail_graph(B, H)
        kernel = compile_group(g)  # same kernel for both sizes: sizes are run-time arguments
        inputs = [rng.standard_normal(v.type.shape).astype(np.float32) for v in g.inputs]
        hy, cy = kernel(*inputs)
        want_hy, want_cy = numpy_lstm_tail(*inputs)
        assert np.allclose(hy, want_hy, atol=1e-5) and np.allclose(cy, want_cy, atol=1e-5)
        inner = max(1, 2000 // (B * H))
        t = _interleaved({"numpy": lambda: numpy_lstm_tail(*inputs),
                          "fused": lambda: kernel(*inputs)}, repeat, inner)
        print(f"{B:>3}x{H:<4} {t['numpy']:>10.1f} {t['fused']:>10.1f} "
              f"{t['numpy'] / t['fused']:>6.1f}x")
    packed = tuple(inputs)
    t = _interleaved({"guarded": lambda: kernel(*inputs),
                      "general": lambda: kernel._call_planned(packed)}, repeat, 20)
    print(f"per call at 8x64: guarded {t['guarded']:.2f} us, general path {t['general']:.2f} us")


if __name__ == "__main__":
    main()
