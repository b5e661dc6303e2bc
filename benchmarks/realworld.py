"""Plain numpy against compiled, on the real-world corpus (``benchmarks/realworld_programs``).

    python -m benchmarks.realworld [--quick] [--programs a,b] [--repeat 15] [--dtype D]

For each program, its ``BENCH`` case and its function-style cells (``CELLS``: one step of a
recurrent layer written as a function, marked ``cell`` in the table) at the benchmark sizes, in
the dtype its source computes in
(``BENCH_DTYPE``: float32 for Deep Learning from Scratch 2, whose weights are ``astype('f')``;
``--dtype`` for all): the plain function and the ``script``-compiled one are called alternately
(``--repeat`` times each, after one warm-up call that also compiles; a case whose calls are short
gets more rounds, up to ``MIN_TIMED_S`` of plain calls, so the median of a sub-millisecond cell is
not set by a few noisy calls), and the table gives the median time of each and plain/compiled
(above 1 the compiled program is faster). Arguments are
copied before every call and the copy is not timed. A program that does not compile today is
listed with its error. ``--quick`` uses the tiny test sizes and 3 repeats (a smoke run, not a
measurement).
"""

from __future__ import annotations

import argparse
import copy
import os
import statistics
import time
from dataclasses import dataclass
from typing import Any

from benchmarks.realworld_programs import Case, programs
from script import ScriptError, script


@dataclass
class Row:
    """One program's measurement."""

    program: str
    case: str
    plain_s: float | None = None
    compiled_s: float | None = None
    error: str = ""
    dtype: str = ""
    cell: bool = False
    """a function-style cell (``CELLS``)."""

    @property
    def ratio(self) -> float | None:
        if self.plain_s is None or not self.compiled_s:
            return None
        return self.plain_s / self.compiled_s


def _timed(fn: Any, args: tuple) -> float:
    fresh = copy.deepcopy(args)
    start = time.perf_counter()
    fn(*fresh)
    return time.perf_counter() - start


MIN_TIMED_S = 0.25
"""the least time the plain calls of a case are timed for (more rounds when calls are short)."""
MAX_ROUNDS = 1000


def measure(program: str, name: str, case: Case, dtype: str, size: str, repeat: int) -> Row:
    """Median plain and compiled times of ``case``, interleaved; compilation excluded."""
    args = case.make_args(dtype, size)
    compiled = script(case.fn)
    try:
        _timed(compiled, args)  # compiles this specialization
    except ScriptError as exc:
        where, _, message = str(exc).splitlines()[0].partition(": ")
        return Row(program, name, error=f"{os.path.basename(where)}: {message}")
    first = _timed(case.fn, args)
    if repeat > 3:
        repeat = max(repeat, min(MAX_ROUNDS, int(MIN_TIMED_S / max(first, 1e-6))))
    plain, fast = [], []
    for _ in range(repeat):
        plain.append(_timed(case.fn, args))
        fast.append(_timed(compiled, args))
    return Row(program, name, statistics.median(plain), statistics.median(fast))


def run(names: list[str] | None, dtype: str | None, size: str, repeat: int) -> list[Row]:
    """One row per program: its ``BENCH`` case in ``dtype``, or in the program's own
    ``BENCH_DTYPE`` (the dtype its source computes in; float64 when it names none)."""
    rows = []
    for program, module in programs().items():
        if names is not None and program not in names:
            continue
        own = dtype or getattr(module, "BENCH_DTYPE", "float64")
        cells = tuple(getattr(module, "CELLS", ()))
        for name in dict.fromkeys((module.BENCH, *cells)):
            row = measure(program, name, module.CASES[name], own, size, repeat)
            row.dtype, row.cell = own, name in cells
            rows.append(row)
    return rows


def table(rows: list[Row]) -> str:
    lines = [f"{'program':20s} {'case':24s} {'dtype':8s} {'plain ms':>10s} {'compiled ms':>12s} "
             f"{'plain/compiled':>15s}"]
    for r in rows:
        case = r.case + (" (cell)" if r.cell else "")
        if r.error:
            lines.append(f"{r.program:20s} {case:24s} {r.dtype:8s} does not compile: {r.error}")
            continue
        lines.append(f"{r.program:20s} {case:24s} {r.dtype:8s} {r.plain_s * 1e3:10.3f} "
                     f"{r.compiled_s * 1e3:12.3f} {r.ratio:14.2f}x")
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> list[Row]:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="tiny sizes, 3 repeats")
    parser.add_argument("--programs", default=None, help="comma-separated program names")
    parser.add_argument("--repeat", type=int, default=15)
    parser.add_argument("--dtype", default=None, choices=["float32", "float64"],
                        help="for every program (default: each program's BENCH_DTYPE)")
    opts = parser.parse_args(argv)
    names = opts.programs.split(",") if opts.programs else None
    unknown = sorted(set(names or ()) - set(programs()))
    if unknown:
        parser.error(f"unknown programs: {', '.join(unknown)} (known: {', '.join(programs())})")
    size, repeat = ("test", 3) if opts.quick else ("bench", opts.repeat)
    rows = run(names, opts.dtype, size, repeat)
    print(f"{size} sizes, median of {repeat} or more interleaved calls each (more for short calls)")
    print(table(rows))
    return rows


if __name__ == "__main__":
    main()
