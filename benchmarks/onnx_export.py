"""onnxruntime on an exported LSTM layer vs rnnscript running the same model, in one run.

    python -m benchmarks.onnx_export [--sizes seed,small] [--repeat 5] [--threads 1]

The model is ``rnn.LSTM(I, H)`` (one layer, float32). ``script.export_onnx`` writes it (the time
loop an ONNX ``Loop``, the input projection hoisted out of it); onnxruntime runs the file with
``--threads`` intra-op threads, rnnscript runs the model as users call it (compiled on first
call) and frozen. Samples alternate between the three; each time is the best of ``--repeat``
samples after a warm-up call. Prints one markdown row per size: forward milliseconds, wall and
process CPU (on a shared machine the CPU time is the steadier figure), and onnxruntime's wall
time over rnnscript's (> 1: rnnscript is faster). Set OPENBLAS_NUM_THREADS to the
same thread count so both use one BLAS thread per matmul.
"""

from __future__ import annotations

import argparse
import os
import tempfile
import time
from collections.abc import Callable
from typing import Any

import numpy as np

import rnn
import script

SIZES = {  # name -> (T, B, I = H)
    "seed": (100, 64, 512),
    "small": (100, 8, 64),
}


def sample(fn: Callable[[], Any], samples: list[tuple[float, float]]) -> None:
    """Append (wall, process CPU) seconds of one call."""
    wall, cpu = time.perf_counter(), time.process_time()
    fn()
    samples.append((time.perf_counter() - wall, time.process_time() - cpu))


def measure(size: str, repeat: int, threads: int) -> dict[str, tuple[float, float]]:
    """Best forward (wall, CPU) ms of onnxruntime, rnnscript and frozen rnnscript at ``size``."""
    import onnxruntime as ort
    steps, batch, features = SIZES[size]
    model = rnn.LSTM(features, features, rng=0)
    x = np.random.default_rng(0).standard_normal((steps, batch, features)).astype(np.float32)
    frozen = script.freeze(model)
    with tempfile.TemporaryDirectory() as tmp:
        path = os.path.join(tmp, "lstm.onnx")
        script.export_onnx(model, (x,), path)
        options = ort.SessionOptions()
        options.intra_op_num_threads = threads
        options.inter_op_num_threads = 1
        session = ort.InferenceSession(path, options, providers=["CPUExecutionProvider"])
    runs = {"onnxruntime": lambda: session.run(None, {"input": x}),
            "rnnscript": lambda: model(x), "rnnscript_frozen": lambda: frozen(x)}
    ours, theirs = model(x)[0], runs["onnxruntime"]()[0]
    np.testing.assert_allclose(theirs, ours, rtol=1e-4, atol=1e-5)
    samples: dict[str, list[tuple[float, float]]] = {name: [] for name in runs}
    for _ in range(repeat):
        for name, run in runs.items():
            sample(run, samples[name])
    return {name: (1000 * min(w for w, _ in times), 1000 * min(c for _, c in times))
            for name, times in samples.items()}


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--sizes", default="seed,small")
    parser.add_argument("--repeat", type=int, default=5)
    parser.add_argument("--threads", type=int, default=1)
    args = parser.parse_args(argv)
    print("| size (T, B, I=H) | onnxruntime ms | rnnscript ms | rnnscript frozen ms | "
          "onnxruntime / rnnscript |")
    print("|---|---:|---:|---:|---:|")
    for size in args.sizes.split(","):
        t = measure(size, args.repeat, args.threads)
        cells = [f"{t[name][0]:.1f} (cpu {t[name][1]:.1f})"
                 for name in ("onnxruntime", "rnnscript", "rnnscript_frozen")]
        ratio = t["onnxruntime"][0] / t["rnnscript"][0]
        print(f"| {size} {SIZES[size]} | {' | '.join(cells)} | {ratio:.2f}x |")


if __name__ == "__main__":
    main()
