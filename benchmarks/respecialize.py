"""What a new sequence length or batch size costs a compiled LSTM layer.

    python -m benchmarks.respecialize [--seqLength 100 --miniBatch 64 --inputSize 512
                                       --hiddenSize 512 --threads 1 --repeat 3]

``script(cells.lstm_layer)`` is compiled and warmed at ``(T, B)`` (plain forward and ``vjp``
forward + backward). Then it is called at a new ``T``, a new ``B`` and both: each shape is a new
specialization (shapes are part of the signature), but the native kernels of the fusion groups
are keyed by structure, dtypes and broadcast pattern only, so none should be compiled again.

Per case, for the plain forward and for forward + backward: the first call at the new shape, the
steady state at that shape (the fastest of ``--repeat`` later calls), their difference (the
re-specialization cost), the compile time alone of the forward specialization and of the
gradient pair (the latter on a twin ``script`` object, so the first call above still compiles),
and how many native
kernels were compiled (``fuser.cpu.jit.STATS.kernels``), loaded from the disk cache
(``STATS.disk_hits``) or added to the in-memory kernel cache (``fuser.cpu.cache_size()``) meanwhile.
"""

from __future__ import annotations

import argparse
import contextlib
import gc
import sys
import time
from collections.abc import Callable, Iterator
from typing import Any

import numpy as np

from benchmarks.fastrnns import cells
from benchmarks.fastrnns.factory import Sizes, rnn_inputs
from fuser.cpu import cache_size, jit
from script import script, vjp
from script.runtime.autodiff import compile_gradient

COMMAND = "python -m benchmarks.respecialize"


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    """The sizes of the compiled layer, threads and repetitions."""
    p = argparse.ArgumentParser(prog=COMMAND, description=__doc__.splitlines()[0])
    p.add_argument("--seqLength", type=int, default=100)
    p.add_argument("--miniBatch", type=int, default=64)
    p.add_argument("--inputSize", type=int, default=512)
    p.add_argument("--hiddenSize", type=int, default=512)
    p.add_argument("--dtype", choices=("float32", "float64"), default="float32")
    p.add_argument("--threads", type=int, default=None,
                   help="BLAS threads (needs threadpoolctl)")
    p.add_argument("--repeat", type=int, default=3,
                   help="steady-state calls per shape (the fastest counts)")
    return p.parse_args(argv)


def cases(seq_length: int, batch: int) -> list[tuple[str, int, int]]:
    """(label, T, B): the compiled shape, then a new T, a new B, both (halved, at least 1; a
    size of 1 grows to 2 instead)."""
    new_t = seq_length // 2 if seq_length > 1 else 2
    new_b = batch // 2 if batch > 1 else 2
    return [("new T", new_t, batch), ("new B", seq_length, new_b),
            ("new T and B", new_t, new_b)]


def run(args: argparse.Namespace) -> dict[str, Any]:
    """Compile at the base shape, then measure every case; the JSON-able record."""
    with _threads(args.threads):
        return _run(args)


def _run(args: argparse.Namespace) -> dict[str, Any]:
    f = script(cells.lstm_layer)
    base = _args(args, args.seqLength, args.miniBatch)
    start = time.perf_counter()
    f(*base)
    first_fwd = time.perf_counter() - start
    start = time.perf_counter()
    _train(f, base)
    first_fb = time.perf_counter() - start
    _train(f, base)
    twin = script(cells.lstm_layer)  # times the gradient's compile alone, without a run
    twin.definition  # noqa: B018 - parse the source now, not inside a timed compile
    rows = [_case(f, twin, args, label, t, b)
            for label, t, b in cases(args.seqLength, args.miniBatch)]
    return {"config": {k: v for k, v in vars(args).items()},
            "base": {"T": args.seqLength, "B": args.miniBatch, "first_fwd_ms": first_fwd * 1e3,
                     "first_fb_after_fwd_ms": first_fb * 1e3},
            "cases": rows}


def _case(f: Any, twin: Any, args: argparse.Namespace, label: str, t: int, b: int
          ) -> dict[str, Any]:
    call_args = _args(args, t, b)
    before = _counters()
    fwd = _first_and_steady(lambda: f(*call_args), args.repeat)
    fwd_compile = f.specialization(*call_args).compile_seconds
    fb = _first_and_steady(lambda: _train(f, call_args), args.repeat)
    start = time.perf_counter()
    compile_gradient(twin, call_args)
    fb_compile = time.perf_counter() - start
    after = _counters()
    return {"case": label, "T": t, "B": b,
            "fwd_first_ms": fwd[0], "fwd_steady_ms": fwd[1], "fwd_respecialize_ms": fwd[0] - fwd[1],
            "fwd_compile_ms": fwd_compile * 1e3,
            "fb_first_ms": fb[0], "fb_steady_ms": fb[1], "fb_respecialize_ms": fb[0] - fb[1],
            "fb_compile_ms": fb_compile * 1e3,
            "kernels_compiled": after[0] - before[0], "kernels_loaded": after[1] - before[1],
            "kernels_added": after[2] - before[2]}


def _args(args: argparse.Namespace, t: int, b: int) -> tuple[Any, ...]:
    inp = rnn_inputs(Sizes(t, 1, args.inputSize, args.hiddenSize, b, args.dtype))
    return (inp.x, inp.hx[0], inp.cx[0], *inp.weights[0])


def _train(f: Any, call_args: tuple[Any, ...]) -> None:
    outputs, backward = vjp(f, *call_args)
    backward(tuple(np.ones_like(o) for o in outputs))


def _first_and_steady(call: Callable[[], Any], repeat: int) -> tuple[float, float]:
    """Milliseconds of the first call and of the fastest of ``repeat`` later ones."""
    times = []
    for _ in range(1 + max(1, repeat)):
        gc.collect()
        start = time.perf_counter()
        call()
        times.append((time.perf_counter() - start) * 1e3)
    return times[0], min(times[1:])


def _counters() -> tuple[int, int, int]:
    """(native kernels compiled, loaded from disk, held in memory) so far in this process."""
    return jit.STATS.kernels, jit.STATS.disk_hits, cache_size()


@contextlib.contextmanager
def _threads(threads: int | None) -> Iterator[None]:
    if not threads:
        yield
        return
    try:
        from threadpoolctl import threadpool_limits
    except ImportError:
        print("--threads: threadpoolctl is not installed; BLAS keeps its thread count",
              file=sys.stderr)
        yield
        return
    with threadpool_limits(limits=threads):
        yield


# -- output ---------------------------------------------------------------------------------------
HEADER = ["case", "T", "B", "fwd_first", "fwd_steady", "fwd_respec", "fwd_compile", "fb_first",
          "fb_steady", "fb_respec", "fb_compile", "kernels_compiled", "kernels_loaded"]


def table_rows(result: dict[str, Any]) -> list[list[str]]:
    """Header and one row per case (times in ms)."""
    rows = [HEADER]
    for c in result["cases"]:
        rows.append([c["case"], str(c["T"]), str(c["B"])]
                    + [f"{c[k]:.1f}" for k in ("fwd_first_ms", "fwd_steady_ms",
                                               "fwd_respecialize_ms", "fwd_compile_ms",
                                               "fb_first_ms", "fb_steady_ms",
                                               "fb_respecialize_ms", "fb_compile_ms")]
                    + [str(c["kernels_compiled"]), str(c["kernels_loaded"])])
    return rows


def legend(result: dict[str, Any]) -> str:
    """What the columns mean, with the compiled shape."""
    base = result["base"]
    return (f"compiled and warmed at T={base['T']} B={base['B']}; times in ms; *_first = the "
            "first call at the new shape, *_steady = the fastest of "
            f"{result['config']['repeat']} later calls, *_respec = first - steady (the "
            "re-specialization cost; timing noise can make it negative), fwd_compile / "
            "fb_compile = compiling the forward specialization / the gradient pair for the new "
            "shape alone, without running it (less noisy); fwd = plain call, fb = vjp forward + "
            "backward; kernels_compiled/loaded = native kernels compiled / loaded from the disk "
            "cache during the case (0 expected: kernels do not depend on sizes)")


def _format(rows: list[list[str]]) -> str:
    widths = [max(len(r[k]) for r in rows) for k in range(len(rows[0]))]
    return "\n".join(" ".join(c.ljust(widths[k]) if k == 0 else c.rjust(widths[k])
                              for k, c in enumerate(r)) for r in rows)


def main(argv: list[str] | None = None) -> int:
    """Prints the table; 1 when a case compiled a native kernel."""
    args = parse_args(argv)
    result = run(args)
    print(_format(table_rows(result)))
    print("(" + legend(result) + ")")
    return 1 if any(c["kernels_compiled"] for c in result["cases"]) else 0


if __name__ == "__main__":
    sys.exit(main())
