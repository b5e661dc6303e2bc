"""The timing driver (upstream's ``fastrnns/bench.py``): flags, checks, timing, output.

For every variant: build it (``runner``/``factory``), call forward and backward once (the first
call, which compiles), check outputs and gradients against the reference, then time ``warmup``
discarded and ``nloops`` kept iterations of forward and backward separately, then measure the peak
memory of a forward + backward (the smaller of two more, ``memory``). Backward is the gradient of
every input and parameter for a fixed random output cotangent. On a GPU the clock stops after a
device synchronisation. All times are milliseconds. With ``--first-call fresh`` the first calls of
the scripted rows are measured again in fresh processes with an empty kernel cache
(``firstcall``).
"""

from __future__ import annotations

import argparse
import contextlib
import gc
import json
import os
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import Any

import numpy as np

from benchmarks.fastrnns import checks, firstcall, memory, report, runner
from benchmarks.fastrnns.factory import (
    ModelDef,
    RNNInputs,
    Sizes,
    Unsupported,
    rnn_inputs,
    varlen_inputs,
)
from benchmarks.fastrnns.progress import Progress

GPU_LOOPS = (10, 100)
"""Upstream's warm-up and timed iterations, used on a GPU."""
CPU_LOOPS = (2, 5)
"""The defaults on a CPU, where one iteration at the default sizes takes about a second: the
default run then finishes in a few minutes on two cores."""


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    """Upstream's flags and defaults, plus device, dtype, output and peer options."""
    p = argparse.ArgumentParser(prog="python -m benchmarks.fastrnns", description="Profile RNNs")
    p.add_argument("--seqLength", type=int, default=100)
    p.add_argument("--numLayers", type=int, default=1)
    p.add_argument("--inputSize", type=int, default=512)
    p.add_argument("--hiddenSize", type=int, default=512)
    p.add_argument("--miniBatch", type=int, default=64)
    p.add_argument("--warmup", type=int, default=None,
                   help=f"untimed iterations (default {GPU_LOOPS[0]} on cuda, {CPU_LOOPS[0]} on "
                        "cpu)")
    p.add_argument("--nloops", type=int, default=None,
                   help=f"timed iterations (default {GPU_LOOPS[1]} on cuda, {CPU_LOOPS[1]} on "
                        "cpu)")
    p.add_argument("--device", choices=("cpu", "cuda", "auto"), default="auto",
                   help="auto: cuda when CuPy sees a GPU, else cpu")
    p.add_argument("--dtype", choices=("float32", "float64"), default="float32")
    p.add_argument("--variable-lstms", "--variable_lstms", action="store_true",
                   help="also run the variable-length group (vl_py, vl_script)")
    p.add_argument("--sep", default=" ", help="column separator of the table")
    p.add_argument("--print-json", nargs="?", choices=("oss", "pep"), const="oss", default=None,
                   help="print upstream's JSON to stdout (the table goes to stderr)")
    p.add_argument("--rnns", nargs="*", default=None,
                   help="variants to run (default: " + " ".join(runner.DEFAULT_RNNS)
                        + "); 'all' adds " + " ".join(runner.EXTRA_RNNS)
                        + "; choices: " + " ".join(runner.RUNNERS))
    p.add_argument("--peers", action="store_true",
                   help="add the PyTorch rows (" + " ".join(runner.PEER_RNNS)
                        + ", and torch_layernorm when a layer-norm row runs) when torch is "
                          "installed")
    p.add_argument("--seed", type=int, default=17)
    p.add_argument("--threads", type=int, default=None,
                   help="BLAS and torch threads (numpy's OpenBLAS directly, or threadpoolctl)")
    p.add_argument("--busy", action="store_true",
                   help="time each row a second time with a busy neighbour (a process spinning "
                        "on one core) and show the slowdown in its notes")
    p.add_argument("--fuser", choices=("on", "off"), default="on",
                   help="elementwise fusion in scripted variants")
    p.add_argument("--disable-passes", default="",
                   help="comma-separated optimization passes the scripted variants skip")
    p.add_argument("--first-call", choices=("here", "fresh"), default="here",
                   help="here: first calls as they happen in this process (caches warmed by "
                        "earlier rows and runs); fresh: the scripted rows' first plain forward "
                        "and first forward + backward each in a new process with an empty "
                        "kernel disk cache (slower: two processes per scripted row)")
    p.add_argument("--json", metavar="PATH", default=None,
                   help="write results, config and environment as JSON")
    p.add_argument("--plot", metavar="PATH.png", default=None, help="write a bar chart")
    p.add_argument("--quiet", action="store_true", help="no progress bar")
    return p.parse_args(argv)


# -- device, threads, compiler settings ----------------------------------------------------------
def resolve_device(device: str) -> tuple[str, Any]:
    """``(device, array module)``; ``auto`` picks cuda when CuPy sees a GPU."""
    if device == "cpu":
        return "cpu", np
    try:
        import cupy
        if cupy.cuda.runtime.getDeviceCount() > 0:
            return "cuda", cupy
    except Exception as e:  # noqa: BLE001 - no CuPy, no driver or no device: all mean "no GPU"
        if device == "cuda":
            raise SystemExit(f"--device cuda: no usable GPU ({type(e).__name__}: {e})") from None
    if device == "cuda":
        raise SystemExit("--device cuda: CuPy sees no GPU")
    return "cpu", np


def synchronizer(device: str) -> Callable[[], None]:
    """What to call before reading the clock: waits for queued GPU work (ours and torch's)."""
    if device == "cpu":
        return lambda: None

    def sync() -> None:
        import cupy
        cupy.cuda.Device().synchronize()
        torch = sys.modules.get("torch")
        if torch is not None and torch.cuda.is_available():
            torch.cuda.synchronize()
    return sync


@contextlib.contextmanager
def compiler_settings(args: argparse.Namespace, say: Callable[[str], None]) -> Iterator[None]:
    """Threads, fusion and disabled passes for the duration of the run."""
    import fuser
    import passes
    with contextlib.ExitStack() as stack:
        if args.threads:
            stack.enter_context(_thread_limit(args.threads, say))
        if args.fuser == "off":
            stack.enter_context(fuser.disabled())
        names = [n for n in args.disable_passes.split(",") if n.strip()]
        if names:
            stack.enter_context(passes.disable(*[n.strip() for n in names]))
        yield


@contextlib.contextmanager
def _thread_limit(threads: int, say: Callable[[str], None]) -> Iterator[None]:
    torch = sys.modules.get("torch")
    torch_threads = None if torch is None else torch.get_num_threads()
    if torch is not None:
        torch.set_num_threads(threads)
    try:
        with _blas_limit(threads, say):
            yield
    finally:
        if torch is not None:  # later runs in this process get the machine's threads again
            torch.set_num_threads(torch_threads)


@contextlib.contextmanager
def _blas_limit(threads: int, say: Callable[[str], None]) -> Iterator[None]:
    try:
        from threadpoolctl import threadpool_limits
    except ImportError:
        from fuser.cpu import blas
        if blas.get_threads() is None:
            say("--threads: numpy's BLAS is not OpenBLAS and threadpoolctl is not installed: it "
                "keeps its own thread count (pip install threadpoolctl)")
            yield
            return
        with blas.threads(threads):
            yield
        return
    with threadpool_limits(limits=threads):
        yield


# -- one variant ----------------------------------------------------------------------------------
def time_model(model: ModelDef, cotangent: Any, warmup: int, nloops: int,
               sync: Callable[[], None], progress: Progress) -> dict[str, list[float]]:
    """Upstream's ``trainbench``: per iteration time forward, then backward (``time_call``); the
    first ``warmup`` iterations are dropped. Wall and process-CPU milliseconds. Garbage is
    collected once, all of it, before the first iteration (``time_call`` collects only what the
    calls made)."""
    times: dict[str, list[float]] = {"fwd": [], "bwd": [], "cpu_fwd": [], "cpu_bwd": []}
    gc.collect()
    for k in range(warmup + nloops):
        fwd, cpu_fwd, bwd, cpu_bwd = time_call(model, cotangent, sync)
        progress.update()
        if k < warmup:
            continue
        times["fwd"].append(fwd * 1e3)
        times["cpu_fwd"].append(cpu_fwd * 1e3)
        if bwd is not None:
            times["bwd"].append(bwd * 1e3)
            times["cpu_bwd"].append(cpu_bwd * 1e3)
    return times


def time_call(model: ModelDef, cotangent: Any, sync: Callable[[], None]
              ) -> tuple[float, float, float | None, float | None]:
    """One training forward and its backward: wall and process-CPU seconds of each (backward
    None when the row has none). Garbage is collected before and the collector is off inside (as
    pytest-benchmark's ``disable_gc``), so no collection lands in a timed window
    (``collected_before``)."""
    with collected_before():
        wall, cpu = time.perf_counter(), time.process_time()
        out, saved = model.forward()
        sync()
        fwd, cpu_fwd = time.perf_counter() - wall, time.process_time() - cpu
        bwd = cpu_bwd = None
        if model.backward is not None:
            wall, cpu = time.perf_counter(), time.process_time()
            model.backward(saved, cotangent)
            sync()
            bwd, cpu_bwd = time.perf_counter() - wall, time.process_time() - cpu
        del out, saved  # freed before the collector is back on
    return fwd, cpu_fwd, bwd, cpu_bwd


@contextlib.contextmanager
def collected_before() -> Iterator[None]:
    """Collects the young generation's garbage, then keeps the collector off until the block
    ends. The young generation holds what was made since the last collection: the cycles the
    last call left (``time_call`` drops its outputs and saved values inside its block) are freed
    by the collector's own run once it is back on, or here. Older garbage is left to the
    collector's own runs of the older generations, between calls, never in the block. A full
    collection here would walk every object of the process (about 200,000 with torch imported,
    50-80 ms) and leave the call after it cold: the small configuration's scripted forward took
    2.36-2.80 ms after one against 1.20-1.25 ms after a young one (torch's ``nn.LSTM`` 2.63-2.88
    against 1.51-1.72 ms, one thread), a cost of the measurement, not of the row; the seed
    configuration's calls (200 ms and more) hardly moved. Callers collect everything once before
    they start timing (``time_model``, ``paired.measure_pair``)."""
    gc.collect(0)
    was_enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if was_enabled:
            gc.enable()


def _stats(samples: list[float]) -> tuple[float | None, float | None]:
    if not samples:
        return None, None
    return float(np.mean(samples)), float(np.std(samples, ddof=1)) if len(samples) > 1 else 0.0


def bench_variant(name: str, inputs: RNNInputs, refs: checks.References, args: Any,
                  sync: Callable[[], None], progress: Progress) -> dict[str, Any]:
    """Build, first-call, check and time one variant; the result record of the JSON. A variant
    that raises is reported (status ``error``) and the run goes on with the next one."""
    try:
        return _bench_variant(name, inputs, refs, args, sync, progress)
    except Exception as e:  # noqa: BLE001 - one broken variant must not hide the others' times
        entry = runner.RUNNERS[name]
        return {"group": entry.group, "doc": entry.doc, "status": "error",
                "notes": [f"raised {type(e).__name__}: {_first_line(e)}"]}


def _first_line(e: BaseException) -> str:
    lines = str(e).strip().splitlines()
    return lines[0][:300] if lines else ""


@dataclass
class Prepared:
    """A row built, called once (its first call: scripted rows compile) and checked."""

    record: dict[str, Any]
    """group, doc, notes, check; ``status`` when the row cannot be timed"""
    model: ModelDef | None = None
    """None when the row was skipped or failed its check"""
    cotangent: Any = None
    """the shared output cotangent in the row's own arrays"""
    setup: float = 0.0
    """seconds to build the row"""
    first_fwd: float = 0.0
    """seconds of its first forward"""
    first_bwd: float | None = None
    """seconds of its first backward (None without one)"""


def prepare_variant(name: str, inputs: RNNInputs, refs: checks.References,
                    sync: Callable[[], None]) -> Prepared:
    """Build row ``name``, run its first forward and backward and check them against the
    group's reference; a skipped or failing row comes back with ``model`` None and its status."""
    entry = runner.RUNNERS[name]
    record: dict[str, Any] = {"group": entry.group, "doc": entry.doc, "notes": []}
    start = time.perf_counter()
    try:
        model = entry.create(inputs)
    except Unsupported as e:
        return Prepared({**record, "status": "skipped", "notes": [str(e)]})
    setup = time.perf_counter() - start
    record["notes"] += model.notes

    start = time.perf_counter()
    outputs, saved = model.forward()
    sync()
    first_fwd = time.perf_counter() - start
    cotangent = refs.cotangent_for(outputs)
    native_ct = model.prepare_cotangent(cotangent)
    grads, first_bwd = None, None
    if model.backward is not None:
        start = time.perf_counter()
        grads = model.backward(saved, native_ct)
        sync()
        first_bwd = time.perf_counter() - start
    del saved

    record["check"] = refs.check(name, model, outputs, grads, cotangent)
    if not record["check"]["passed"]:
        return Prepared({**record, "status": "check failed"})
    return Prepared(record, model, native_ct, setup, first_fwd, first_bwd)


def _bench_variant(name: str, inputs: RNNInputs, refs: checks.References, args: Any,
                   sync: Callable[[], None], progress: Progress) -> dict[str, Any]:
    entry = runner.RUNNERS[name]
    prepared = prepare_variant(name, inputs, refs, sync)
    if prepared.model is None:
        return prepared.record
    record, model, native_ct = prepared.record, prepared.model, prepared.cotangent
    setup, first_fwd, first_bwd = prepared.setup, prepared.first_fwd, prepared.first_bwd
    times = time_model(model, native_ct, args.warmup, args.nloops, sync, progress)
    avg_fwd, std_fwd = _stats(times["fwd"])
    avg_bwd, std_bwd = _stats(times["bwd"])
    first = (setup + first_fwd + (first_bwd or 0.0)) * 1e3
    device = "cpu" if inputs.xp is np else "cuda"
    record = {**record, "status": "ok", "avg_fwd": avg_fwd, "std_fwd": std_fwd,
              "avg_bwd": avg_bwd, "std_bwd": std_bwd,
              "first_call": first,
              "compile_estimate": max(0.0, first - avg_fwd - (avg_bwd or 0.0)),
              "setup_ms": setup * 1e3, "first_fwd": first_fwd * 1e3,
              "first_bwd": None if first_bwd is None else first_bwd * 1e3,
              "first_call_fwd": (setup + first_fwd) * 1e3, "first_call_fb": first,
              "first_call_how": "here",
              "peak_mb": memory.peak_mb(lambda: _train_once(model, native_ct, sync), device),
              "cpu_fwd": _stats(times["cpu_fwd"])[0], "cpu_bwd": _stats(times["cpu_bwd"])[0],
              "fwd_times": times["fwd"], "bwd_times": times["bwd"]}
    if getattr(args, "first_call", "here") == "fresh" and entry.is_scripted:
        _fresh_first_calls(name, record, args)
    if getattr(args, "busy", False):
        _busy_times(record, model, native_ct, args, sync, progress)
    return record


def _busy_times(record: dict[str, Any], model: ModelDef, cotangent: Any, args: Any,
                sync: Callable[[], None], progress: Progress) -> None:
    """Time the row again beside a process spinning on one core (a data loader, another job):
    ``busy_fwd`` / ``busy_bwd`` and their ratios to the quiet times, in the row's notes."""
    spinner = subprocess.Popen([sys.executable, "-c", "while True: pass"])
    try:
        time.sleep(0.2)  # let it take its core
        times = time_model(model, cotangent, args.warmup, args.nloops, sync, progress)
    finally:
        spinner.kill()
        spinner.wait()
    busy_fwd, busy_bwd = _stats(times["fwd"])[0], _stats(times["bwd"])[0]
    record["busy_fwd"], record["busy_bwd"] = busy_fwd, busy_bwd
    parts = []
    for what, busy, quiet in (("forward", busy_fwd, record["avg_fwd"]),
                              ("backward", busy_bwd, record["avg_bwd"])):
        if busy is not None and quiet:
            parts.append(f"{what} {busy:.2f} ms ({busy / quiet:.2f}x quiet)")
    total_q = (record["avg_fwd"] or 0.0) + (record["avg_bwd"] or 0.0)
    total_b = (busy_fwd or 0.0) + (busy_bwd or 0.0)
    record["busy_ratio"] = total_b / total_q if total_q else None
    record["notes"].append("busy neighbour: " + ", ".join(parts))


def _train_once(model: ModelDef, cotangent: Any, sync: Callable[[], None]) -> None:
    """One forward and backward, everything it made dropped on return."""
    _, saved = model.forward()
    if model.backward is not None:
        model.backward(saved, cotangent)
    sync()


def _fresh_first_calls(name: str, record: dict[str, Any], args: Any) -> None:
    """Replaces the row's first-call times by the fresh-process ones (``firstcall``); keeps the
    children's records (kernels compiled, their compile time) under ``first_call_fresh``."""
    flags = firstcall.child_flags(args)
    fresh = {what: firstcall.measure(name, what, flags) for what in firstcall.WHAT}
    record["first_call_fresh"] = fresh
    errors = [f"{what}: {r['error']}" for what, r in fresh.items() if "error" in r]
    if errors:
        record["notes"].append("fresh first call failed (" + "; ".join(errors) + ")")
        return
    record["first_call_fwd"], record["first_call_fb"] = fresh["fwd"]["ms"], fresh["fb"]["ms"]
    record["first_call_how"] = "fresh"
    record["notes"].append(
        f"fresh first calls: {fresh['fwd']['kernels']} native kernel(s) compiled for the plain "
        f"forward ({fresh['fwd']['kernel_ms']:.0f} ms of compiling, summed over threads), "
        f"{fresh['fb']['kernels']} for forward + backward ({fresh['fb']['kernel_ms']:.0f} ms)")


def add_ratios(results: dict[str, dict]) -> None:
    """``ratios[ref] = {fwd, bwd}``: this row's time over the reference row's, same group;
    ``peak_ratios[ref]``: its peak memory over the memory reference's; ``peer_ratio``: its times
    over its torch twin's (``runner.PEERS_OF``)."""
    for name, r in results.items():
        r["ratios"], r["peak_ratios"], r["peer_ratio"] = {}, {}, None
        if r.get("status") != "ok":
            continue
        for ref in report.RATIO_REFERENCES.get(r["group"], ()):
            base = _ok(results, ref)
            if base is not None:
                r["ratios"][ref] = _time_ratio(r, base)
        memory_ref = report.MEMORY_REFERENCE.get(r["group"])
        base = _ok(results, memory_ref)
        if base is not None and r.get("peak_mb") is not None and base.get("peak_mb"):
            r["peak_ratios"][memory_ref] = r["peak_mb"] / base["peak_mb"]
        peer = runner.PEERS_OF.get(name)
        base = _ok(results, peer)
        if base is not None:
            r["peer_ratio"] = {**_time_ratio(r, base), "peer": peer}


def _ok(results: dict[str, dict], name: str | None) -> dict | None:
    base = results.get(name) if name else None
    return base if base and base.get("status") == "ok" else None


def _time_ratio(r: dict[str, Any], base: dict[str, Any]) -> dict[str, float | None]:
    fwd = r["avg_fwd"] / base["avg_fwd"]
    bwd = (r["avg_bwd"] / base["avg_bwd"]
           if r["avg_bwd"] is not None and base["avg_bwd"] else None)
    return {"fwd": fwd, "bwd": bwd}


# -- the run --------------------------------------------------------------------------------------
def run(args: argparse.Namespace, out: Any = None) -> dict[str, Any]:
    """Run the benchmark described by ``args``; print as it goes to ``out`` (the table) and
    stderr (progress, messages); return the JSON payload."""
    out = out or (sys.stderr if args.print_json else sys.stdout)
    say = lambda msg: print(msg, file=out, flush=True)
    device, xp = resolve_device(args.device)
    loops = GPU_LOOPS if device == "cuda" else CPU_LOOPS
    default_loops = args.warmup is None and args.nloops is None
    args.warmup = loops[0] if args.warmup is None else args.warmup
    args.nloops = loops[1] if args.nloops is None else args.nloops
    names = _runnable(runner.select(args.rnns, args.peers, args.variable_lstms), say)
    sizes = Sizes(args.seqLength, args.numLayers, args.inputSize, args.hiddenSize,
                  args.miniBatch, args.dtype, args.seed)
    say(f"T={sizes.seq_length} L={sizes.num_layers} I={sizes.input_size} "
        f"H={sizes.hidden_size} B={sizes.mini_batch} {sizes.dtype} on {device}: "
        f"{args.warmup} warm-up + {args.nloops} timed iterations"
        + (f" (fewer than upstream's {GPU_LOOPS[0]} + {GPU_LOOPS[1]} on a CPU; "
           "--warmup/--nloops to change)" if device == "cpu" and default_loops else ""))
    _warn_if_busy(args, say)
    since = report.cpu_snapshot()
    sync = synchronizer(device)
    results: dict[str, dict] = {}
    with compiler_settings(args, say):
        for group in report.GROUP_TITLES:
            members = [n for n in names if runner.RUNNERS[n].group == group]
            if not members:
                continue
            say(f"Benchmarking {report.GROUP_TITLES[group]}...")
            inputs = (rnn_inputs if group == "lstm" else varlen_inputs)(sizes, xp)
            refs = checks.References(group, inputs, sync)
            rounds = 2 if getattr(args, "busy", False) else 1
            progress = Progress(len(members) * (args.warmup + args.nloops) * rounds,
                                enabled=not args.quiet)
            for name in members:
                progress.describe(name)
                results[name] = bench_variant(name, inputs, refs, args, sync, progress)
            progress.close()
            add_ratios(results)
            rows = report.table_rows(group, results)
            say(report.format_table(rows, args.sep))
            say("(" + report.legend(group, args.first_call) + ")")
            _say_notes(results, group, say)
        environment = report.environment(device, since)  # (with the thread limits in force)
    return {"config": dict(vars(args)), "results": results, "environment": environment}


def _warn_if_busy(args: argparse.Namespace, say: Callable[[str], None]) -> None:
    """Says so when other processes compete for the cores: the times are then noisy, and BLAS
    threads that wait for a core can inflate them many times over."""
    cpus = os.cpu_count() or 1
    load = os.getloadavg()[0] if hasattr(os, "getloadavg") else 0.0
    if load <= cpus:
        return
    say(f"note: this machine is busy (load average {load:.1f} on {cpus} CPUs): times are noisy"
        + ("" if args.threads else "; --threads 1 keeps BLAS threads from waiting for cores"))


def _runnable(names: list[str], say: Callable[[str], None]) -> list[str]:
    """Drops the torch rows, with a message, when torch does not import."""
    peers = [n for n in names if runner.RUNNERS[n].is_peer]
    if not peers:
        return names
    reason = runner.torch_available()
    if reason is None:
        return names
    say(f"skipping {', '.join(peers)}: torch does not import ({reason}); "
        "pip install torch to include them")
    return [n for n in names if n not in peers]


def _say_notes(results: dict[str, dict], group: str, say: Callable[[str], None]) -> None:
    for name, r in results.items():
        if r["group"] != group:
            continue
        check = r.get("check", {})
        if check and not check.get("passed"):
            say(f"  {name}: CHECK FAILED: {check.get('message')}")
        for note in r.get("notes", ()):
            say(f"  {name}: {note}")


def main(argv: list[str] | None = None) -> int:
    """The command line; returns 1 when a variant raised or failed its check."""
    args = parse_args(argv)
    try:
        payload = run(args)
    except ValueError as e:
        print(f"error: {e}", file=sys.stderr)
        return 2
    results = payload["results"]
    if args.print_json == "oss":
        print(report.oss_json(results))
    elif args.print_json == "pep":
        print("\n".join(report.pep_lines(results)))
    if args.json:
        with open(args.json, "w") as f:
            json.dump(payload, f, indent=2)
        print(f"wrote {args.json}", file=sys.stderr)
    if args.plot:
        print(report.write_plot(payload, args.plot), file=sys.stderr)
    failed = any(r.get("status") in ("check failed", "error") for r in results.values())
    return 1 if failed else 0
