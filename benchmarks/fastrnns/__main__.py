"""fastrnns: time LSTM variants forward, side by side in one process.

    python -m benchmarks.fastrnns [--seqLength 100 --miniBatch 64 --inputSize 512 ...]
"""

from __future__ import annotations

import argparse
import json
import platform
import sys
import time

import numpy as np

from benchmarks.fastrnns import models
from script import script

VARIANTS = ("py", "script", "script_premul", "floor")


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    p = argparse.ArgumentParser(description="Profile RNNs")
    p.add_argument("--seqLength", type=int, default=100)
    p.add_argument("--numLayers", type=int, default=1)
    p.add_argument("--inputSize", type=int, default=512)
    p.add_argument("--hiddenSize", type=int, default=512)
    p.add_argument("--miniBatch", type=int, default=64)
    p.add_argument("--warmup", type=int, default=3)
    p.add_argument("--nloops", type=int, default=10,
                   help="timed iterations (upstream uses 100; fewer on CPU)")
    p.add_argument("--dtype", default="float32", choices=("float32", "float64"))
    p.add_argument("--rnns", nargs="*", default=list(VARIANTS), choices=VARIANTS)
    p.add_argument("--seed", type=int, default=17)
    p.add_argument("--json", default=None, help="also write the results as JSON to this path")
    return p.parse_args(argv)


def make_inputs(args: argparse.Namespace) -> tuple[np.ndarray, ...]:
    rng = np.random.default_rng(args.seed)
    t, b, i, h = args.seqLength, args.miniBatch, args.inputSize, args.hiddenSize
    k = 1.0 / np.sqrt(h)

    def u(*shape):
        return rng.uniform(-k, k, shape).astype(args.dtype)

    return (rng.standard_normal((t, b, i)).astype(args.dtype), u(b, h), u(b, h),
            u(4 * h, i), u(4 * h, h), u(4 * h), u(4 * h))


def runner(name: str):
    if name == "py":
        return models.lstm_layer
    if name == "script":
        return script(models.lstm_layer)
    if name == "script_premul":
        return script(models.lstm_layer_premul)
    return models.gemm_floor


def time_variant(fn, inputs, warmup: int, nloops: int) -> list[float]:
    for _ in range(warmup):
        fn(*inputs)
    times = []
    for _ in range(nloops):
        start = time.perf_counter()
        fn(*inputs)
        times.append((time.perf_counter() - start) * 1e3)
    return times


def main(argv: list[str] | None = None) -> dict:
    args = parse_args(argv)
    inputs = make_inputs(args)
    print("Benchmarking LSTMs...", file=sys.stderr)
    print(f"T={args.seqLength} B={args.miniBatch} I={args.inputSize} H={args.hiddenSize} "
          f"{args.dtype}, {args.nloops} timed loops after {args.warmup} warm-up (ms)",
          file=sys.stderr)
    reference = models.lstm_layer(*inputs)
    results: dict[str, dict] = {}
    for name in args.rnns:
        fn = runner(name)
        start = time.perf_counter()
        out = fn(*inputs)
        first_call = (time.perf_counter() - start) * 1e3
        if name != "floor":
            for got, want in zip(out, reference):
                np.testing.assert_allclose(got, want, rtol=1e-4, atol=1e-5)
        times = time_variant(fn, inputs, args.warmup, args.nloops)
        results[name] = {"avg_fwd": float(np.mean(times)), "std_fwd": float(np.std(times, ddof=1))
                         if len(times) > 1 else 0.0, "first_call": first_call}
    _print_table(results)
    payload = {"config": vars(args), "results": results,
               "environment": {"python": platform.python_version(), "numpy": np.__version__,
                               "machine": platform.machine()}}
    if args.json:
        with open(args.json, "w") as f:
            json.dump(payload, f, indent=2)
    return payload


def _print_table(results: dict[str, dict]) -> None:
    py = results.get("py", {}).get("avg_fwd")
    floor = results.get("floor", {}).get("avg_fwd")
    cols = ("name", "avg_fwd", "std_fwd", "first_call", "vs_py", "vs_floor")
    print("".join(f"{c:>16}" for c in cols))
    for name, r in results.items():
        row = [name, f"{r['avg_fwd']:.4g}", f"{r['std_fwd']:.4g}", f"{r['first_call']:.4g}",
               f"{r['avg_fwd'] / py:.3g}x" if py else "-",
               f"{r['avg_fwd'] / floor:.3g}x" if floor else "-"]
        print("".join(f"{c:>16}" for c in row))


if __name__ == "__main__":
    main()
