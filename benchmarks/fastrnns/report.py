"""What a run prints and writes: the table, the environment, upstream's JSON forms, the plot."""

from __future__ import annotations

import datetime
import json
import os
import platform
import sys
import time
from importlib import metadata
from typing import Any

import numpy as np

RATIO_REFERENCES = {"lstm": ("py", "torch_lstm", "floor"), "vl_lstm": ("vl_py",)}
"""The rows each group's ratio columns divide by."""

MEMORY_REFERENCE = {"lstm": "torch_lstm"}
"""The row each group's peak-memory ratio divides by."""

PEER_GROUPS = ("lstm",)
"""The groups whose tables have the ``x_peer`` column (rows with a torch eager twin)."""

GROUP_TITLES = {"lstm": "LSTMs", "vl_lstm": "variable-length sequence LSTMs"}


# -- the table ----------------------------------------------------------------------------------
def _ms(value: float | None) -> str:
    return "-" if value is None else f"{value:.4g}"


def _ratio(ratio: dict[str, float | None] | None) -> str:
    if not ratio:
        return "-"
    fwd, bwd = ratio.get("fwd"), ratio.get("bwd")
    return f"{fwd:.2f}" if bwd is None else f"{fwd:.2f}/{bwd:.2f}"


def table_rows(group: str, results: dict[str, dict]) -> list[list[str]]:
    """Header and one row per variant of ``group``: upstream's columns, the first calls (where
    scripted variants compile), the peak memory, and the ratios (fwd/bwd) to the reference rows,
    to torch_lstm's peak memory and to the row's torch twin (``x_peer``)."""
    refs = RATIO_REFERENCES.get(group, ())
    memory_ref = MEMORY_REFERENCE.get(group)
    header = ["name", "avg_fwd", "std_fwd", "avg_bwd", "std_bwd", "first_fwd", "first_fb",
              "peak_mb"]
    header += [f"x_{r}" for r in refs]
    header += [f"peak_x_{memory_ref}"] if memory_ref else []
    header += ["x_peer"] if group in PEER_GROUPS else []
    rows = [header]
    for name, r in results.items():
        if r["group"] != group:
            continue
        if r.get("status") != "ok":
            rows.append([name, r.get("status", "skipped")] + [""] * (len(header) - 2))
            continue
        row = [name, _ms(r["avg_fwd"]), _ms(r["std_fwd"]), _ms(r["avg_bwd"]), _ms(r["std_bwd"]),
               _ms(r.get("first_call_fwd")), _ms(r.get("first_call_fb")),
               _mb(r.get("peak_mb"))]
        row += [_ratio(r["ratios"].get(ref)) for ref in refs]
        if memory_ref:
            peak_ratio = r.get("peak_ratios", {}).get(memory_ref)
            row.append("-" if peak_ratio is None else f"{peak_ratio:.2f}")
        if group in PEER_GROUPS:
            peer = r.get("peer_ratio")
            row.append(f"{_ratio(peer)} ({peer['peer']})" if peer else "-")
        rows.append(row)
    return rows


def _mb(value: float | None) -> str:
    return "-" if value is None else f"{value:.1f}"


def format_table(rows: list[list[str]], sep: str = " ") -> str:
    """Right-aligned columns (the name left-aligned) joined by ``sep``; with a separator other
    than whitespace (``--sep ,``) the cells are not padded."""
    if sep.strip():
        return "\n".join(sep.join(row) for row in rows)
    widths = [max(len(row[k]) for row in rows if k < len(row)) for k in range(len(rows[0]))]
    lines = []
    for row in rows:
        cells = [c.ljust(widths[0]) if k == 0 else c.rjust(widths[k]) for k, c in enumerate(row)]
        lines.append(sep.join(cells).rstrip())
    return "\n".join(lines)


def markdown_table(rows: list[list[str]]) -> str:
    """The same rows as a Markdown table."""
    lines = ["| " + " | ".join(rows[0]) + " |",
             "|" + "|".join("---" if k == 0 else "---:" for k in range(len(rows[0]))) + "|"]
    lines += ["| " + " | ".join(row + [""] * (len(rows[0]) - len(row))) + " |"
              for row in rows[1:]]
    return "\n".join(lines)


def legend(group: str, first_call: str = "here") -> str:
    """What the columns of ``group``'s table mean; ``first_call`` is the ``--first-call`` mode."""
    refs = RATIO_REFERENCES.get(group, ())
    memory_ref = MEMORY_REFERENCE.get(group)
    return ("times in ms, avg_* = mean and std_* = standard deviation over the timed "
            "iterations (upstream's statistics; rows are timed one after the other, so a ratio "
            "of two rows mixes the load of two moments: python -m benchmarks.fastrnns.paired "
            "times two rows side by side); " + FIRST_CALL_LEGEND[first_call]
            + "; peak_mb = MB a forward + backward adds to the process at its peak (GPU: to the "
            "device allocators)"
            + "; " + ", ".join(f"x_{r} = this row / {r}" for r in refs)
            + " as fwd/bwd (below 1 is faster)"
            + (f"; peak_x_{memory_ref} = peak_mb / {memory_ref}'s" if memory_ref else "")
            + ("; x_peer = this row / its torch eager twin (named), as fwd/bwd"
               if group in PEER_GROUPS else ""))


FIRST_CALL_LEGEND = {
    "here": "first_fwd = building the row and its first training forward, first_fb = that and "
            "its first backward, in this process (scripted rows compile forward and gradient in "
            "the first forward; kernels already compiled by earlier rows or found in the kernel "
            "disk cache are reused; --first-call fresh measures each in a fresh process)",
    "fresh": "first_fwd = building the row and its first plain forward call (scripted rows; "
             "others: the training forward), first_fb = building it and its first training "
             "forward + backward, scripted rows each in a fresh process with an empty kernel "
             "disk cache (RNNSCRIPT_CACHE_DIR), other rows in this process",
}
"""``--first-call`` mode -> what the first_fwd and first_fb columns measure."""


# -- upstream's --print-json -------------------------------------------------------------------
def oss_json(results: dict[str, dict]) -> str:
    """``--print-json oss``: ``{group: {model: avg_fwd}, group-backward: {model: avg_bwd}}``."""
    out: dict[str, dict[str, float]] = {}
    for name, r in results.items():
        if r.get("status") != "ok":
            continue
        out.setdefault(r["group"], {})[name] = r["avg_fwd"]
        if r["avg_bwd"] is not None:
            out.setdefault(r["group"] + "-backward", {})[name] = r["avg_bwd"]
    return json.dumps(out)


def pep_lines(results: dict[str, dict]) -> list[str]:
    """``--print-json pep``: one Caffe2Observer line per timed iteration."""
    lines = []
    for name, r in results.items():
        for suffix, key in (("", "fwd_times"), ("-backward", "bwd_times")):
            for value in r.get(key) or ():
                record = {"type": "NET", "metric": f"{r['group']}{suffix}-{name}", "unit": "ms",
                          "value": str(value)}
                lines.append("Caffe2Observer " + json.dumps(record))
    return lines


# -- the environment ----------------------------------------------------------------------------
def _cpu_model() -> str:
    try:
        with open("/proc/cpuinfo") as f:
            for line in f:
                if line.startswith("model name"):
                    return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or platform.machine()


def _version(dist: str) -> str | None:
    try:
        return metadata.version(dist)
    except metadata.PackageNotFoundError:
        return None


def _blas() -> dict[str, Any]:
    info: dict[str, Any] = {}
    try:
        config = np.show_config(mode="dicts")
        info["numpy_build"] = config.get("Build Dependencies", {}).get("blas", {})
    except Exception as e:  # noqa: BLE001 - older numpy: no dict mode
        info["numpy_build"] = f"unavailable ({type(e).__name__})"
    try:
        import threadpoolctl
    except ImportError:
        info["threadpools"] = "threadpoolctl not installed"
        return info
    info["threadpools"] = [
        {k: p.get(k) for k in ("internal_api", "version", "num_threads", "architecture",
                               "threading_layer")}
        for p in threadpoolctl.threadpool_info()]
    return info


def cpu_snapshot() -> tuple[float, float, float] | None:
    """(seconds, the CPU seconds every process on the machine has used, those this process and
    its waited-for children have used): two snapshots give what other processes used between
    them (``others_cpus``). None where ``/proc/stat`` cannot be read (not Linux)."""
    try:
        import resource  # (Unix only)

        with open("/proc/stat") as f:
            fields = [int(x) for x in f.readline().split()[1:]]
    except (ImportError, OSError, ValueError):
        return None
    # user nice system idle iowait irq softirq steal (guest time is counted in user already)
    busy = sum(fields[:8]) - fields[3] - (fields[4] if len(fields) > 4 else 0)
    own = sum(getattr(resource.getrusage(who), k) for who in (resource.RUSAGE_SELF,
                                                              resource.RUSAGE_CHILDREN)
              for k in ("ru_utime", "ru_stime"))
    return time.monotonic(), busy / os.sysconf("SC_CLK_TCK"), own


def others_cpus(start: tuple[float, float, float] | None) -> float | None:
    """How many CPUs other processes (other users' work, other virtual machines' stolen time)
    kept busy on average since the ``cpu_snapshot`` ``start``: the machine's busy time less
    what this run used itself, its busy neighbour (``--busy``) and fresh first-call processes
    included. The load average cannot tell the run's own threads and neighbour from other
    work."""
    end = cpu_snapshot()
    if start is None or end is None or end[0] <= start[0]:
        return None
    return max(0.0, ((end[1] - start[1]) - (end[2] - start[2])) / (end[0] - start[0]))


def environment(device: str, since: tuple[float, float, float] | None = None
                ) -> dict[str, Any]:
    """CPU, BLAS, versions, load: what a reader needs to trust (or distrust) the numbers;
    ``since``: the run's first ``cpu_snapshot``, for ``others_cpus``."""
    env: dict[str, Any] = {
        "date": datetime.datetime.now(datetime.UTC).isoformat(timespec="seconds"),
        "cpu": _cpu_model(),
        "logical_cpus": os.cpu_count(),
        "load_average": list(os.getloadavg()) if hasattr(os, "getloadavg") else None,
        "others_cpus": others_cpus(since),
        "platform": platform.platform(),
        "python": platform.python_version(),
        "device": device,
        "blas": _blas(),
        "versions": {d: _version(d) for d in ("rnnscript", "numpy", "llvmlite", "lark", "torch",
                                              "cupy-cuda13x")},
    }
    torch = sys.modules.get("torch")
    if torch is not None:
        env["torch_threads"] = torch.get_num_threads()
    return env


# -- the plot -----------------------------------------------------------------------------------
def write_plot(payload: dict[str, Any], path: str) -> str:
    """A bar chart of forward and backward times per variant (one panel per group); returns
    what happened, as a sentence."""
    try:
        import matplotlib
        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        return f"--plot {path}: matplotlib is not installed (pip install matplotlib); no plot"
    results = payload["results"]
    groups = [g for g in GROUP_TITLES if any(r["group"] == g and r.get("status") == "ok"
                                             for r in results.values())]
    if not groups:
        return f"--plot {path}: nothing was timed; no plot"
    fig, axes = plt.subplots(len(groups), 1, figsize=(10, 4 * len(groups)), squeeze=False)
    for ax, group in zip(axes[:, 0], groups):
        _bars(ax, group, {n: r for n, r in results.items()
                          if r["group"] == group and r.get("status") == "ok"})
    config = payload["config"]
    fig.suptitle(f"fastrnns: T={config['seqLength']} L={config['numLayers']} "
                 f"I={config['inputSize']} H={config['hiddenSize']} B={config['miniBatch']} "
                 f"{config['dtype']} on {payload['environment']['device']}")
    fig.tight_layout()
    fig.savefig(path, dpi=100)
    plt.close(fig)
    return f"wrote {path}"


def _bars(ax: Any, group: str, rows: dict[str, dict]) -> None:
    names = list(rows)
    pos = np.arange(len(names))
    fwd = [rows[n]["avg_fwd"] for n in names]
    bwd = [rows[n]["avg_bwd"] or 0.0 for n in names]
    ax.bar(pos - 0.2, fwd, 0.4, yerr=[rows[n]["std_fwd"] for n in names], label="forward")
    ax.bar(pos + 0.2, bwd, 0.4, yerr=[rows[n]["std_bwd"] or 0.0 for n in names],
           label="backward")
    ax.set_xticks(pos, names, rotation=30, ha="right")
    ax.set_ylabel("ms")
    ax.set_title(GROUP_TITLES[group])
    ax.legend()
