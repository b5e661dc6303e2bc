"""Side-by-side timing of pairs of rows: both rows built once in one process, their calls
alternated, so that both see the same load.

    python -m benchmarks.fastrnns.paired [size flags] [--threads 1]
        --pairs script:torch_lstm,rnn_lstm:script [--rounds 30] [--warmup 2] [--json PATH]

The harness (``bench``) times one row after the other: on a shared machine two rows timed
minutes apart see different load, and the ratio of two rows then moves from run to run (the seed
configuration's ``script`` / ``torch_lstm`` forward read 1.07x to 1.78x in runs of the same code).
Here every row named in ``--pairs`` is built once with the harness's creators, inputs, threads and
compiler settings, called once (its first call: scripted rows compile) and checked as the harness
checks it. Then each pair runs ``warmup`` untimed and ``rounds`` timed rounds; a round times a
training forward and its backward of row A, then of row B (B first in every other round), with a
collection of the young generation's garbage before each call and a full collection before the
first round (``bench.time_call``). Before each timed call the row rests
``--settle`` seconds, then makes ``--warm-ms`` milliseconds of untimed calls of its own (at least
one): thread pools keep their threads spinning for a while after a call (numpy's OpenBLAS about
0.1 s), and a row timed right after the other would share the cores with the other row's spinning
threads (torch's ``nn.LSTM`` at the small size ran 0.96 ms alone and 4.9 ms right after a numpy
product); and a core that idled through the rest runs the next calls slowly (the small size's
first call after the rest took 2.3x a tight loop's, the second 1.4x, for either row). After the
rest and its own untimed calls a row runs with its own threads awake, as in a training loop.
Per pair: each row's median forward time
and median forward + backward time (the median of each round's sum), in ms, and the ratio A / B of
those medians; the spread of the rounds' own ratios (25th to 75th percentile) says how much the
load moved under the measurement.
"""

from __future__ import annotations

import argparse
import gc
import json
import os
import sys
import time
from collections.abc import Callable
from typing import Any

import numpy as np

from benchmarks.fastrnns import bench, checks, report, runner
from benchmarks.fastrnns.factory import Sizes, rnn_inputs, varlen_inputs
from benchmarks.fastrnns.progress import Progress

COMMAND = "python -m benchmarks.fastrnns.paired"
SETTLE = 0.15
"""Seconds a row rests before each timed call (numpy's OpenBLAS threads spin about 0.1 s after
a product before they sleep)."""
WARM_MS = 20.0
"""Milliseconds of a row's own untimed calls between its rest and its timed call (at least one
call): a core idle for the rest runs the next calls slowly (on this project's 2-core virtual
machine the small size's first call after 0.15 s of rest took 2.3x a call in a tight loop, the
second 1.4x), and a training loop's calls follow each other."""
FIGURES = ("fwd", "fb")
"""``fwd``: the training forward; ``fb``: forward + backward."""


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    """The harness's size, device, thread and compiler flags, the pairs and the rounds."""
    p = argparse.ArgumentParser(prog=COMMAND, description=__doc__.splitlines()[0])
    p.add_argument("--pairs", required=True,
                   help="comma-separated ROW_A:ROW_B pairs, rows as in the harness (e.g. "
                        "script:torch_lstm); the ratio is A / B")
    p.add_argument("--rounds", type=int, default=30, help="timed rounds per pair")
    p.add_argument("--warmup", type=int, default=2, help="untimed rounds per pair")
    p.add_argument("--settle", type=float, default=SETTLE,
                   help="seconds a row rests before its untimed and timed calls (0: no rest and "
                        "no untimed call)")
    p.add_argument("--warm-ms", type=float, default=WARM_MS,
                   help="milliseconds of untimed calls of the row after its rest, before its "
                        "timed call (at least one call; 0: one call)")
    p.add_argument("--seqLength", type=int, default=100)
    p.add_argument("--numLayers", type=int, default=1)
    p.add_argument("--inputSize", type=int, default=512)
    p.add_argument("--hiddenSize", type=int, default=512)
    p.add_argument("--miniBatch", type=int, default=64)
    p.add_argument("--device", choices=("cpu", "cuda", "auto"), default="auto")
    p.add_argument("--dtype", choices=("float32", "float64"), default="float32")
    p.add_argument("--seed", type=int, default=17)
    p.add_argument("--threads", type=int, default=None, help="BLAS and torch threads")
    p.add_argument("--fuser", choices=("on", "off"), default="on")
    p.add_argument("--disable-passes", default="")
    p.add_argument("--json", metavar="PATH", default=None, help="write the results as JSON")
    p.add_argument("--quiet", action="store_true", help="no progress bar")
    args = p.parse_args(argv)
    if args.rounds < 1 or args.warmup < 0 or args.settle < 0 or args.warm_ms < 0:
        p.error("--rounds must be at least 1, --warmup, --settle and --warm-ms at least 0")
    return args


def flags_from_config(config: dict[str, Any]) -> list[str]:
    """This command's flags for the sizes, device and settings of a harness run's config."""
    flags = ["--seqLength", str(config["seqLength"]), "--numLayers", str(config["numLayers"]),
             "--inputSize", str(config["inputSize"]), "--hiddenSize", str(config["hiddenSize"]),
             "--miniBatch", str(config["miniBatch"]), "--device", config["device"],
             "--dtype", config["dtype"], "--seed", str(config["seed"]),
             "--fuser", config.get("fuser", "on"),
             "--disable-passes", config.get("disable_passes", "")]
    if config.get("threads"):
        flags += ["--threads", str(config["threads"])]
    if config.get("quiet"):
        flags.append("--quiet")
    return flags


def parse_pairs(text: str) -> list[tuple[str, str]]:
    """``"a:b,c:d"`` -> ``[("a", "b"), ("c", "d")]``; ValueError for unknown rows, a row paired
    with itself or rows of different groups (different inputs)."""
    pairs = []
    for item in (part.strip() for part in text.split(",")):
        if not item:
            continue
        a, sep, b = item.partition(":")
        if not sep or not a or not b:
            raise ValueError(f"--pairs: {item!r} is not ROW_A:ROW_B")
        unknown = [n for n in (a, b) if n not in runner.RUNNERS]
        if unknown:
            raise ValueError(f"--pairs: unknown row(s) {', '.join(unknown)}; choose from "
                             f"{', '.join(runner.RUNNERS)}")
        if a == b:
            raise ValueError(f"--pairs: {item!r} pairs a row with itself")
        if runner.RUNNERS[a].group != runner.RUNNERS[b].group:
            raise ValueError(f"--pairs: {a} and {b} run on different inputs")
        pairs.append((a, b))
    if not pairs:
        raise ValueError("--pairs: no pair given")
    return list(dict.fromkeys(pairs))


# -- the measurement ------------------------------------------------------------------------------
def run(args: argparse.Namespace, out: Any = None) -> dict[str, Any]:
    """Build, check and time the pairs of ``args``; prints the table to ``out`` (stdout) and
    returns ``{config, load_average, rows: {name: record}, pairs: [record]}``."""
    out = out or sys.stdout
    say = lambda msg: print(msg, file=out, flush=True)
    pairs = parse_pairs(args.pairs)
    device, xp = bench.resolve_device(args.device)
    sizes = Sizes(args.seqLength, args.numLayers, args.inputSize, args.hiddenSize,
                  args.miniBatch, args.dtype, args.seed)
    say(f"T={sizes.seq_length} L={sizes.num_layers} I={sizes.input_size} H={sizes.hidden_size} "
        f"B={sizes.mini_batch} {sizes.dtype} on {device}, "
        + (f"{args.threads} thread(s)" if args.threads else "default threads")
        + f": {args.warmup} warm-up + {args.rounds} timed rounds of alternated calls per pair")
    sync = bench.synchronizer(device)
    names = list(dict.fromkeys(n for pair in pairs for n in pair))
    torch_missing = runner.torch_available()
    rows: dict[str, dict[str, Any]] = {}
    prepared: dict[str, bench.Prepared] = {}
    results = []
    with bench.compiler_settings(args, say):
        groups = {runner.RUNNERS[n].group for n in names}
        inputs = {g: (rnn_inputs if g == "lstm" else varlen_inputs)(sizes, xp) for g in groups}
        refs = {g: checks.References(g, inputs[g], sync) for g in groups}
        for name in names:
            entry = runner.RUNNERS[name]
            if entry.is_peer and torch_missing is not None:
                rows[name] = {"status": "skipped", "notes": [f"torch does not import "
                                                             f"({torch_missing})"]}
                continue
            prepared[name] = _prepare(name, inputs[entry.group], refs[entry.group], sync)
            rows[name] = prepared[name].record
        progress = Progress(len(pairs) * (args.warmup + args.rounds), enabled=not args.quiet)
        for a, b in pairs:
            progress.describe(f"{a}:{b}")
            results.append(measure_pair(a, b, prepared, args.warmup, args.rounds, sync,
                                        progress.update, args.settle, args.warm_ms))
        progress.close()
    say(report.format_table(table_rows(results)))
    say("(" + legend(args.rounds, args.settle, args.warm_ms) + ")")
    for record in results:
        if record["status"] != "ok":
            say(f"  {record['a']}:{record['b']}: not measured: {record['reason']}")
    load = list(os.getloadavg()) if hasattr(os, "getloadavg") else None
    return {"config": dict(vars(args)), "load_average": load, "rows": rows, "pairs": results}


def _prepare(name: str, inputs: Any, refs: checks.References,
             sync: Callable[[], None]) -> bench.Prepared:
    """``bench.prepare_variant``, with an exception turned into the row's ``error`` status."""
    try:
        return bench.prepare_variant(name, inputs, refs, sync)
    except Exception as e:  # noqa: BLE001 - one broken row must not hide the other pairs
        lines = str(e).strip().splitlines()
        return bench.Prepared({"status": "error", "notes": [
            f"raised {type(e).__name__}: {lines[0][:300] if lines else ''}"]})


def measure_pair(a: str, b: str, prepared: dict[str, bench.Prepared], warmup: int, rounds: int,
                 sync: Callable[[], None], tick: Callable[[], None] = lambda: None,
                 settle: float = 0.0, warm_ms: float = 0.0) -> dict[str, Any]:
    """Alternated calls of rows ``a`` and ``b`` (both prepared): ``warmup`` untimed rounds, then
    ``rounds`` timed ones, ``b`` first in every other round, each timed call after ``settle``
    seconds of rest and ``warm_ms`` milliseconds of untimed calls (at least one; the count from
    the row's last call) when ``settle`` is not 0; the pair's record (``summarize``)."""
    record: dict[str, Any] = {"a": a, "b": b}
    missing = [f"{n} {prepared[n].record['status']}" if n in prepared else f"{n} skipped"
               for n in (a, b) if n not in prepared or prepared[n].model is None]
    if missing:
        return {**record, "status": "not measured", "reason": ", ".join(missing)}
    times: dict[str, dict[str, list[float]]] = {a: {"fwd": [], "fb": []},
                                                b: {"fwd": [], "fb": []}}
    last = {a: 0.0, b: 0.0}
    """each row's last call, in seconds (forward + backward)."""
    gc.collect()
    for k in range(warmup + rounds):
        for name in ((a, b) if k % 2 == 0 else (b, a)):
            p = prepared[name]
            if settle:
                time.sleep(settle)
                for _ in range(warm_calls(warm_ms, last[name])):
                    bench.time_call(p.model, p.cotangent, sync)
            fwd, _, bwd, _ = bench.time_call(p.model, p.cotangent, sync)
            last[name] = fwd + (bwd or 0.0)
            if k < warmup:
                continue
            times[name]["fwd"].append(fwd * 1e3)
            if bwd is not None:
                times[name]["fb"].append((fwd + bwd) * 1e3)
        tick()
    return {**record, "status": "ok", "rounds": rounds, "times": times,
            **summarize(times[a], times[b])}


def warm_calls(warm_ms: float, last_s: float) -> int:
    """How many untimed calls of a row whose last call took ``last_s`` seconds fill ``warm_ms``
    milliseconds: at least one, at most 100."""
    if last_s <= 0:
        return 1
    return max(1, min(100, int(np.ceil(warm_ms * 1e-3 / last_s))))


def summarize(a: dict[str, list[float]], b: dict[str, list[float]]
              ) -> dict[str, dict[str, float] | None]:
    """Per figure (``fwd``, ``fb``): ``{a_ms, b_ms}`` the medians of each row's rounds,
    ``ratio`` = a_ms / b_ms, ``q1``/``q3`` the quartiles of the rounds' own ratios a / b; None
    for a figure one of the rows has no times of (no backward)."""
    out: dict[str, dict[str, float] | None] = {}
    for figure in FIGURES:
        xs, ys = a.get(figure) or [], b.get(figure) or []
        if not xs or not ys:
            out[figure] = None
            continue
        a_ms, b_ms = float(np.median(xs)), float(np.median(ys))
        per_round = [x / y for x, y in zip(xs, ys)]
        q1, q3 = (float(q) for q in np.percentile(per_round, [25, 75]))
        out[figure] = {"a_ms": a_ms, "b_ms": b_ms, "ratio": a_ms / b_ms, "q1": q1, "q3": q3}
    return out


def ratio(payload: dict[str, Any] | None, row: str, other: str, figure: str) -> float | None:
    """The side-by-side ratio ``row`` / ``other`` of ``figure`` in a ``run`` payload (a pair
    measured the other way round gives its inverse: the ratio of medians inverts exactly);
    None when the pair was not measured."""
    for record in (payload or {}).get("pairs", ()):
        if record.get("status") != "ok" or {record["a"], record["b"]} != {row, other}:
            continue
        stats = record.get(figure)
        if stats is None:
            return None
        return stats["ratio"] if record["a"] == row else stats["b_ms"] / stats["a_ms"]
    return None


# -- output ---------------------------------------------------------------------------------------
def table_rows(results: list[dict[str, Any]]) -> list[list[str]]:
    """Header and one row per pair: the medians of each row and their ratio, per figure."""
    header = ["pair", "fwd_a", "fwd_b", "x_fwd", "x_fwd_q1-q3", "fb_a", "fb_b", "x_fb",
              "x_fb_q1-q3"]
    rows = [header]
    for record in results:
        row = [f"{record['a']}:{record['b']}"]
        if record["status"] != "ok":
            rows.append(row + ["not measured"] + [""] * (len(header) - 2))
            continue
        for figure in FIGURES:
            stats = record[figure]
            if stats is None:
                row += ["-"] * 4
                continue
            row += [f"{stats['a_ms']:.4g}", f"{stats['b_ms']:.4g}", f"{stats['ratio']:.2f}",
                    f"{stats['q1']:.2f}-{stats['q3']:.2f}"]
        rows.append(row)
    return rows


def legend(rounds: int, settle: float = SETTLE, warm_ms: float = WARM_MS) -> str:
    """What the columns of ``table_rows`` mean."""
    warm = (f"{warm_ms:g} ms of untimed calls (at least one)" if warm_ms
            else "an untimed call")
    rest = (f", each timed call after {settle:g} s of rest and {warm} of its row"
            if settle else "")
    return (f"ms, medians over {rounds} rounds of alternated calls in one process{rest}; "
            "fwd = training "
            "forward, fb = forward + backward; x_fwd, x_fb = row A's median / row B's (below 1: A "
            "is faster); q1-q3 = 25th to 75th percentile of the rounds' own ratios")


def main(argv: list[str] | None = None) -> int:
    """The command line; 1 when a row raised or failed its check, 2 for bad pairs."""
    args = parse_args(argv)
    try:
        payload = run(args)
    except ValueError as e:
        print(f"error: {e}", file=sys.stderr)
        return 2
    if args.json:
        with open(args.json, "w") as f:
            json.dump(payload, f, indent=2)
        print(f"wrote {args.json}", file=sys.stderr)
    failed = any(r.get("status") in ("check failed", "error") for r in payload["rows"].values())
    return 1 if failed else 0


if __name__ == "__main__":
    os.environ.setdefault("PYTHONHASHSEED", "0")
    sys.exit(main())
