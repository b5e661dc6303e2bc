"""First calls measured from a cold start: one fresh process per measurement.

A scripted row's first call compiles: its specializations (in-memory caches of the ``script``
object), its native kernels (an in-process cache shared by every function, then the on-disk object
cache of ``fuser.cpu.jit``). In the benchmark process those caches are warmed by earlier rows and
by earlier runs (the disk cache outlives processes), which flatters the first call. Here each
measurement runs in a new Python process whose ``RNNSCRIPT_CACHE_DIR`` is a new empty directory,
so nothing compiled before is reused:

- ``fwd``: building the row and its first plain forward call (``ModelDef.infer``, the forward a
  user's first ``f(*args)`` compiles; rows without one run their training forward);
- ``fb``: building the row and its first training forward (forward and gradient compiled) and
  backward.

Building a row is part of both: for the whole-stack rows (``script_multilayer``,
``script_dropout``) it compiles the gradient already (to learn whether there is a backward), so
their ``fwd`` includes that compile too.

Imports happen before the clock starts; compilation, including any module a compile imports
lazily, is timed. ``measure`` starts the child; the child is ``python -m
benchmarks.fastrnns.firstcall {fwd,fb} ROW [bench flags]`` and prints one JSON line.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

WHAT = ("fwd", "fb")

_ROOT = Path(__file__).resolve().parents[2]
"""The directory that holds the ``benchmarks`` package (the child's working directory)."""


def measure(name: str, what: str, flags: list[str], timeout: float = 600.0) -> dict[str, Any]:
    """The child's record for row ``name``: ``ms`` (the first call, building included),
    ``setup_ms``, ``kernels`` (native kernels compiled) and ``kernel_ms`` (their compile time,
    summed over the threads that compiled them: background compiles overlap, so it may exceed
    ``ms``); ``{"error": ...}`` when the child failed. ``flags`` are the benchmark's size and
    compiler flags."""
    with tempfile.TemporaryDirectory(prefix="rnnscript-cold-") as cache:
        env = dict(os.environ, RNNSCRIPT_CACHE_DIR=cache)
        env["PYTHONPATH"] = os.pathsep.join(p for p in (str(_ROOT), env.get("PYTHONPATH")) if p)
        cmd = [sys.executable, "-m", "benchmarks.fastrnns.firstcall", what, name, *flags]
        try:
            proc = subprocess.run(cmd, capture_output=True, text=True, env=env, cwd=_ROOT,
                                  timeout=timeout)
        except subprocess.TimeoutExpired:
            return {"error": f"no result within {timeout:g} s"}
    lines = proc.stdout.strip().splitlines()
    if proc.returncode != 0 or not lines:
        tail = (proc.stderr.strip().splitlines() or ["no output"])[-1]
        return {"error": f"exit status {proc.returncode}: {tail[:300]}"}
    return json.loads(lines[-1])


def child_flags(args: Any) -> list[str]:
    """The benchmark flags a child needs to build the same row with the same inputs."""
    flags = ["--seqLength", str(args.seqLength), "--numLayers", str(args.numLayers),
             "--inputSize", str(args.inputSize), "--hiddenSize", str(args.hiddenSize),
             "--miniBatch", str(args.miniBatch), "--dtype", args.dtype, "--seed", str(args.seed),
             "--device", args.device, "--fuser", args.fuser,
             "--disable-passes", args.disable_passes]
    if args.threads:
        flags += ["--threads", str(args.threads)]
    return flags


# -- the child ----------------------------------------------------------------------------------
def _child(argv: list[str]) -> int:
    import numpy as np

    from benchmarks.fastrnns import bench, checks, runner
    from benchmarks.fastrnns.factory import Sizes, rnn_inputs, varlen_inputs
    from fuser.cpu import jit

    what, name, rest = argv[0], argv[1], argv[2:]
    if what not in WHAT:
        raise SystemExit(f"first argument: one of {', '.join(WHAT)}, not {what!r}")
    args = bench.parse_args(rest)
    device, xp = bench.resolve_device(args.device)
    sync = bench.synchronizer(device)
    entry = runner.RUNNERS[name]
    sizes = Sizes(args.seqLength, args.numLayers, args.inputSize, args.hiddenSize,
                  args.miniBatch, args.dtype, args.seed)
    inputs = (rnn_inputs if entry.group == "lstm" else varlen_inputs)(sizes, xp)
    if entry.is_peer:
        import torch  # noqa: F401 - imported before the clock, as in the benchmark process
    record: dict[str, Any] = {}
    with bench.compiler_settings(args, lambda msg: None):
        start = time.perf_counter()
        model = entry.create(inputs)
        record["setup_ms"] = (time.perf_counter() - start) * 1e3
        if what == "fwd":
            t0 = time.perf_counter()
            model.infer() if model.infer is not None else model.forward()
            sync()
            call = time.perf_counter() - t0
            record["plain"] = model.infer is not None
        else:
            t0 = time.perf_counter()
            outputs, saved = model.forward()
            sync()
            call = time.perf_counter() - t0
            if model.backward is not None:
                rng = np.random.default_rng(args.seed + 3)
                ct = model.prepare_cotangent(checks.mask(checks.random_like(outputs, rng, xp),
                                                         outputs))
                t0 = time.perf_counter()
                model.backward(saved, ct)
                sync()
                call += time.perf_counter() - t0
    record["ms"] = record["setup_ms"] + call * 1e3
    record["kernels"] = jit.STATS.kernels
    record["kernel_ms"] = jit.STATS.seconds * 1e3
    record["disk_hits"] = jit.STATS.disk_hits
    print(json.dumps(record))
    return 0


if __name__ == "__main__":
    sys.exit(_child(sys.argv[1:]))
