"""Regenerates ``benchmarks/RESULTS.md``: the harness at fastrnns' seed configuration and at a small
one, every variant, PyTorch peers included when torch is installed, then the re-specialization
benchmark (``benchmarks.respecialize``) at the seed configuration's sizes.

    python -m benchmarks.fastrnns.results [--out benchmarks/RESULTS.md] [--compile]
                                          [bench flags ...]

Four runs: the seed and small configurations at the machine's default threads (every row, and
each row timed again beside a spinning neighbour process, ``--busy``), then the rows the
one-thread targets compare, at one thread. Extra flags (``--threads 1``, ``--nloops 20``, even
sizes such as ``--seqLength 5``) are passed to every run; sizes and ``--threads`` also to the
re-specialization benchmark. ``--compile`` adds the ``torch_compile`` row to the runs of every
row (its compilation takes minutes). The seed configuration
measures the scripted rows' first calls in fresh processes with an empty kernel cache
(``--first-call fresh``).

After each run, the rows that the section's ratio targets compare (``targets.pairs``) are timed
again side by side (``paired``: both rows in one process, calls alternated, medians), with the
run's sizes and settings, ``PAIRED_ROUNDS`` rounds per pair (``--paired-rounds N`` for all, 0 for
none); targets are judged on those ratios.
"""

from __future__ import annotations

import argparse
import os
import shlex
import sys
from typing import Any

from benchmarks import respecialize
from benchmarks.fastrnns import bench, checks, paired, report, runner, targets

FRONT_END_AND_TWINS = ["rnn_lstm", "rnn_lstm_2l", "rnn_lstm_bidir", "rnn_gru", "script_lstm_2l",
                       "script_lstm_bidir", "script_gru", "torch_lstm_2l", "torch_lstm_bidir",
                       "torch_gru"]
"""The torch-style front end's rows and their hand-written and torch twins."""

SEED = ["--seqLength", "100", "--miniBatch", "64", "--inputSize", "512", "--hiddenSize", "512"]
SMALL = ["--seqLength", "100", "--miniBatch", "8", "--inputSize", "64", "--hiddenSize", "64",
         "--warmup", "10", "--nloops", "100"]
"""The small configuration with upstream's iteration counts: a call takes milliseconds, and the
harness's CPU default of 5 timed calls made one scheduler time slice (3-8 ms beside a busy
neighbour) a third of a row's mean."""

CONFIGS = [
    ("Seed configuration: T=100, B=64, I=H=512 (fastrnns' defaults)",
     SEED + ["--rnns", "all", "--peers", "--first-call", "fresh", "--busy"]),
    ("Small configuration: T=100, B=8, I=H=64",
     SMALL + ["--rnns", "all", "--peers", "--variable-lstms", "--busy"]),
    ("Seed configuration, one thread",
     SEED + ["--threads", "1", "--rnns", "script", "floor", "torch_lstm"]),
    ("Small configuration, one thread",
     SMALL + ["--threads", "1", "--rnns", "script", "floor", "torch_lstm",
              *FRONT_END_AND_TWINS]),
]
"""(title, flags) of each section: default threads with a busy neighbour's timings, then the
rows the one-thread targets compare (BLAS and torch limited to one thread)."""

SECTION_KEYS = ("seed", "small", "seed1", "small1")
"""The names ``benchmarks.fastrnns.targets`` gives the sections of ``CONFIGS``, in order."""

PAIRED_ROUNDS = {"seed": 10, "small": 50, "seed1": 10, "small1": 50}
"""Side-by-side rounds per pair of each section: a seed-size call takes 0.1-0.5 s, a small one a
few ms; a minute or two in all at the default sizes."""

COMMAND = "python -m benchmarks.fastrnns.results"


def main(argv: list[str] | None = None) -> int:
    """Runs every configuration and the re-specialization benchmark; writes the Markdown file."""
    parser = argparse.ArgumentParser(prog=COMMAND, description=__doc__.splitlines()[0])
    parser.add_argument("--out", default="benchmarks/RESULTS.md")
    parser.add_argument("--compile", action="store_true",
                        help="add the torch_compile row to both runs (compiles for minutes)")
    parser.add_argument("--paired-rounds", type=int, default=None, metavar="N",
                        help="side-by-side rounds per pair in every section (default: "
                             + ", ".join(f"{k} {n}" for k, n in PAIRED_ROUNDS.items())
                             + "); 0: no side-by-side measurement")
    opts, extra = parser.parse_known_args(argv)
    sections, status = [], 0
    for key, (title, flags) in zip(SECTION_KEYS, CONFIGS):
        args = bench.parse_args(flags + extra)
        if opts.compile and "all" in (args.rnns or ()):
            args.rnns = _with_compile(args.rnns)
        print(f"== {title}", flush=True)
        payload = bench.run(args)
        rounds = PAIRED_ROUNDS[key] if opts.paired_rounds is None else opts.paired_rounds
        side = side_by_side(key, payload, rounds)
        if side is not None:
            payload["paired"] = side
        sections.append((title, payload))
        rows = [*payload["results"].values(), *(side or {}).get("rows", {}).values()]
        if any(r.get("status") in ("check failed", "error") for r in rows):
            status = 1
    print("== Re-specialization", flush=True)
    respec = respecialize.run(respecialize_args(sections[0][1]["config"]))
    print(report.format_table(respecialize.table_rows(respec)), flush=True)
    if any(c["kernels_compiled"] for c in respec["cases"]):
        status = 1
    command = " ".join([COMMAND] + (["--compile"] if opts.compile else [])
                       + ([] if opts.paired_rounds is None
                          else ["--paired-rounds", str(opts.paired_rounds)])
                       + [shlex.quote(a) for a in extra]
                       + ([] if opts.out == "benchmarks/RESULTS.md" else ["--out", opts.out]))
    with open(opts.out, "w") as f:
        f.write(markdown(sections, command, respec))
    print(f"wrote {opts.out}")
    return status


def side_by_side(key: str, payload: dict[str, Any], rounds: int) -> dict[str, Any] | None:
    """The ``paired`` measurement of section ``key``'s target pairs whose rows both ran in
    ``payload``, at its sizes and settings (None when there is none to measure)."""
    results = payload["results"]
    ok = {name for name, r in results.items() if r.get("status") == "ok"}
    pairs = [p for p in targets.pairs(key) if set(p) <= ok]
    if not pairs or rounds <= 0:
        return None
    print(f"== side by side: {', '.join(f'{a}:{b}' for a, b in pairs)}", flush=True)
    flags = paired.flags_from_config(payload["config"])
    return paired.run(paired.parse_args(flags + [
        "--pairs", ",".join(f"{a}:{b}" for a, b in pairs), "--rounds", str(rounds)]))


def _with_compile(rnns: list[str] | None) -> list[str]:
    names = list(rnns or runner.DEFAULT_RNNS)
    return names if "torch_compile" in names else names + ["torch_compile"]


def respecialize_args(config: dict[str, Any]) -> Any:
    """The re-specialization benchmark's flags from a harness run's config (sizes, threads)."""
    flags = ["--seqLength", str(config["seqLength"]), "--miniBatch", str(config["miniBatch"]),
             "--inputSize", str(config["inputSize"]), "--hiddenSize", str(config["hiddenSize"]),
             "--dtype", config["dtype"]]
    if config.get("threads"):
        flags += ["--threads", str(config["threads"])]
    return respecialize.parse_args(flags)


def markdown(sections: list[tuple[str, dict[str, Any]]], command: str,
             respec: dict[str, Any] | None = None) -> str:
    """The results file: how to regenerate it, the environment, one table per configuration,
    the re-specialization table."""
    env = sections[0][1]["environment"]
    lines = ["# fastrnns results", "",
             "Generated by the harness; regenerate (a few minutes to tens of minutes on a 2-core "
             "CPU, depending on load) with:", "", "```", COMMAND, "```", "",
             f"This file: `{command}`, {env['date']}.", ""]
    lines += _environment_lines(sections)
    keyed = dict(zip(SECTION_KEYS, (payload for _, payload in sections)))
    lines += ["", "## Performance targets", "",
              "Each target of the performance work, from the sections below (`fb` = forward + "
              "backward). `serial`: the figure from the section's table, for a ratio the ratio "
              "of the two rows' means there (rows timed one after the other, minutes apart, each "
              "under the load of its moment). `side by side`: for a ratio of two rows' times, "
              "the ratio of their medians over rounds of alternated calls in one process (the "
              "section's side-by-side table), which both rows ran under the same load. `met` is "
              "judged on the side-by-side ratio where there is one, else on the serial figure; "
              "`at the GEMM floor` is serial. `profile`, for a missed target: where the scripted "
              "layer's time went in that section's run: the share its matmuls alone (`floor`) "
              "take of it (`floor` runs a step's GEMMs one after another on one thread; where "
              "the layer splits its loop over threads the floor is slower), and beside a busy "
              "neighbour what the matmuls alone lost (the `floor` row's own busy ratio: a "
              "scripted row running these GEMMs cannot do better).", "",
              *targets.lines(keyed, respec)]
    for title, payload in sections:
        lines += ["", f"## {title}", ""]
        lines += _section_lines(payload)
    if respec is not None:
        lines += ["", "## Re-specialization: a new sequence length or batch size", ""]
        lines += _respecialize_lines(respec)
    lines += ["", "## Reading the tables", "", *_reading_lines()]
    return "\n".join(lines) + "\n"


def _respecialize_lines(respec: dict[str, Any]) -> list[str]:
    config = respec["config"]
    return [f"`{respecialize.COMMAND}` at I=H={config['inputSize']}, `{config['dtype']}`"
            + (f", {config['threads']} thread(s)" if config.get("threads") else "")
            + ": `script(cells.lstm_layer)`, compiled and warmed, called at new shapes.", "",
            report.markdown_table(respecialize.table_rows(respec)), "",
            respecialize.legend(respec) + "."]


OTHERS_BUSY = 0.25
"""The CPUs other processes may keep busy on average during a run before the file says the
machine was busy (the load average, the fallback off Linux, counts the run's own threads and its
busy neighbour)."""


def _environment_lines(sections: list[tuple[str, dict[str, Any]]]) -> list[str]:
    env = sections[0][1]["environment"]
    versions = ", ".join(f"{k} {v}" for k, v in env["versions"].items() if v)
    pools = env["blas"].get("threadpools")
    blas = "; ".join(map(_pool_text, pools)) if isinstance(pools, list) else str(pools)
    threads = sections[0][1]["config"].get("threads")
    lines = [f"- CPU: {env['cpu']}, {env['logical_cpus']} logical CPUs; {env['platform']}",
             f"- BLAS: {blas}" + (f"; limited to {threads} thread(s) by --threads" if threads
                                  else ""),
             f"- versions: Python {env['python']}, {versions}"]
    if "torch_threads" in env:
        lines.append(f"- torch threads: {env['torch_threads']}")
    others = [p["environment"].get("others_cpus") for _, p in sections]
    if all(o is not None for o in others):
        lines.append("- other processes' work while each run ran (the machine's busy time less "
                     "the run's own, its busy neighbour's included), in CPUs kept busy on "
                     "average: " + ", ".join(f"{o:.2f}" for o in others))
        if any(o > OTHERS_BUSY for o in others):
            lines += ["", "**Caveat: the machine was busy with other work while this ran** "
                      f"(other processes kept {max(others):.2f} of its {env['logical_cpus']} "
                      "CPUs busy on average during one run). Absolute times are noisy and "
                      "inflated; ratios between rows are more trustworthy, but rows timed at "
                      "different moments saw different load. Regenerate on a quiet machine."]
        return lines
    loads = [p["environment"]["load_average"] for _, p in sections]
    if any(load and load[0] > (env["logical_cpus"] or 1) for load in loads):
        lines += ["", "**Caveat: the machine was busy with other work while this ran** (1-minute "
                  "load average " + ", ".join(f"{load[0]:.1f}" for load in loads if load)
                  + f" on {env['logical_cpus']} CPUs at the end of each run). Absolute times are "
                  "noisy and inflated; ratios between rows are more trustworthy, but rows timed "
                  "at different moments saw different load. Regenerate on a quiet machine."]
    return lines


def _pool_text(pool: dict[str, Any]) -> str:
    """``openblas 0.3.31 (SkylakeX, 2 threads)`` from a threadpoolctl record."""
    name = " ".join(str(pool[k]) for k in ("internal_api", "version") if pool.get(k))
    detail = [str(pool["architecture"])] if pool.get("architecture") else []
    detail.append(f"{pool.get('num_threads')} threads")
    return f"{name} ({', '.join(detail)})"


def _section_lines(payload: dict[str, Any]) -> list[str]:
    config = payload["config"]
    threads = (f"{config['threads']} thread(s)" if config.get("threads")
               else "the machine's default threads")
    lines = [f"`{config['dtype']}`, {config['numLayers']} layer(s), on "
             f"{payload['environment']['device']}, {threads}; {config['warmup']} warm-up and "
             f"{config['nloops']} timed iterations per row. First calls: "
             + ("scripted rows in fresh processes with an empty kernel disk cache."
                if config.get("first_call") == "fresh" else "in the benchmark process.")]
    results = payload["results"]
    for group, title in report.GROUP_TITLES.items():
        if not any(r["group"] == group for r in results.values()):
            continue
        lines += ["", f"### {title}", "", report.markdown_table(report.table_rows(group, results)),
                  ""]
        for name, r in results.items():
            if r["group"] != group:
                continue
            lines += [f"- `{name}`: {note}" for note in r.get("notes", ())]
            check = r.get("check") or {}
            if check and not check.get("passed"):
                lines.append(f"- `{name}`: check failed: {check.get('message')}")
    side = payload.get("paired")
    if side is not None:
        lines += ["", "### Side by side", "",
                  f"`{paired.COMMAND}`, same sizes and settings: each pair's rows built once in "
                  f"one process, {side['config']['warmup']} untimed and "
                  f"{side['config']['rounds']} timed rounds per pair, a round calling row A's "
                  "forward and backward, then row B's (B first in every other round).", "",
                  report.markdown_table(paired.table_rows(side["pairs"])), "",
                  "(" + paired.legend(side["config"]["rounds"],
                                      side["config"].get("settle", 0.0),
                                      side["config"].get("warm_ms", 0.0)) + ")"]
        lines += [f"- `{name}`: {r.get('status')}: {'; '.join(r.get('notes', ()))}"
                  for name, r in side["rows"].items() if r.get("status") in (
                      "skipped", "error", "check failed")]
        lines += [f"- `{r['a']}:{r['b']}`: not measured: {r['reason']}"
                  for r in side["pairs"] if r["status"] != "ok"]
    return lines


def _reading_lines() -> list[str]:
    fwd_tol, bwd_tol = checks.TOLERANCES["float32"]
    return [
        "- Times are milliseconds per call, mean and sample standard deviation over the timed "
        "iterations (upstream's `avg_*`/`std_*` columns, kept as upstream defines them; the "
        "side-by-side tables give medians). `fwd` is the training forward (it keeps what the "
        "backward needs); `bwd` is the gradient of every input and parameter for a fixed random "
        "output cotangent.",
        "- Side by side: the rows a ratio target compares, timed again after the section's run "
        "with the same sizes, threads and settings, alternating their calls so that load "
        "changes on a shared machine hit both; the ratio is row A's median over row B's, and "
        "`q1-q3` the spread of the rounds' own ratios.",
        "- `first_fwd` / `first_fb`: building the row and its first forward / first forward and "
        "backward; for scripted rows they include compilation (compare them with `avg_fwd` and "
        "`avg_fwd + avg_bwd`). Where a section says so (`--first-call fresh`), the scripted rows' "
        "first calls ran in fresh processes with an empty kernel disk cache, the forward being "
        "a plain call (no gradient compiled); otherwise in the benchmark process, where kernels "
        "compiled by earlier rows or earlier runs (disk cache) are reused.",
        "- `peak_mb`: megabytes one forward + backward adds to the process at its peak (peak "
        "resident set, reset through `/proc/self/clear_refs`, minus the resident set before); "
        "`peak_x_torch_lstm` divides it by `torch_lstm`'s. `-` where the platform cannot tell.",
        "- `x_peer`: the row's times divided by its torch eager twin's (`script_layernorm` by "
        "`torch_layernorm`: the same layer-norm cell and weights), as forward/backward.",
        "- `x_py`, `x_torch_lstm`, `x_floor`: this row's time divided by that row's, as "
        "forward/backward; below 1 is faster. `floor` is the same GEMMs alone, so `x_floor` "
        "is how far a row is from the physical limit of its matmuls.",
        f"- Every row was checked before timing against `py` (or, for layer norm and GRU, "
        f"against itself compiled without optimization): largest relative error at most "
        f"{fwd_tol:g} on outputs and {bwd_tol:g} on gradients in float32.",
        "- `-` in the backward columns: the row has no backward yet (the note says why).",
    ]


if __name__ == "__main__":
    os.environ.setdefault("PYTHONHASHSEED", "0")
    sys.exit(main())
