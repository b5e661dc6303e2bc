"""The performance targets, checked against one ``results`` run: each target's measured ratio or
time from the rows of that run, and whether it is met.

A target names a configuration section (``seed``, ``small``, and their one-thread runs ``seed1``,
``small1``), the rows it compares and how:
``ratio`` is a row's time over another row's (``fwd``, ``fb`` = forward + backward), held to at
most ``limit`` (or at least, for "faster than" targets); ``ms`` is a row's own figure in ms.
Targets whose rows are missing from the run (torch not installed, ``--compile`` not given) are
listed as not measured. A ratio of two rows' ``fwd`` or ``fb`` is read twice: ``serial``, the
ratio of the rows' means in the section's harness run (rows timed one after the other, minutes
apart, each under whatever load the machine had then), and ``side by side``, the ratio of their
medians over alternated calls in one process (``paired``; ``pairs(section)`` lists what to
measure). Whether a target is met is judged on the side-by-side ratio when there is one, else on
the serial figure. For ratio targets the table also gives the serial ratio a scripted row would
reach if it took no time beyond its matmuls (the ``floor`` row in its place): a target that the
floor itself misses cannot be met with these GEMMs. For a missed target the ``profile`` column
says where the scripted layer's time went in that run: the share of it its matmuls alone take
(``floor`` over ``script``; the ``floor`` row runs a step's GEMMs one after another on one
thread, so where the layer splits its loop over threads the floor is slower and says so), and
for a busy target what the matmuls alone lost beside the neighbour (the ``floor`` row's own
busy ratio), the bound a scripted row cannot beat with these GEMMs.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, NamedTuple

from benchmarks.fastrnns import paired


@dataclass(frozen=True)
class Target:
    text: str
    """what the target says."""
    section: str
    """``seed``, ``small`` (default threads), ``seed1``, ``small1`` (one thread)."""
    row: str
    other: str | None
    """the row divided by (None: ``row``'s own figure)."""
    figure: str
    """``fwd``, ``fb`` (forward + backward), ``first_fwd``, ``first_fb``, ``peak`` or ``busy``
    (forward + backward beside a spinning neighbour over the quiet time, ``--busy``; a ``row``
    ending in ``*`` takes the worst of the rows it prefixes)."""
    limit: float
    at_most: bool = True
    """True: measured <= limit; False: measured >= limit."""


FRONT_END_TWINS = [("rnn_lstm", "script", "torch_lstm"),
                   ("rnn_lstm_2l", "script_lstm_2l", "torch_lstm_2l"),
                   ("rnn_lstm_bidir", "script_lstm_bidir", "torch_lstm_bidir"),
                   ("rnn_gru", "script_gru", "torch_gru")]
"""(front-end row, its hand-written twin, its torch twin): the front end as users call it is held
to 1.10x the hand-written layer with the same layers and directions and 1.5x torch."""

TARGETS = [
    # default threads (the machine's own BLAS and torch thread counts)
    Target("seed: forward <= 1.0x torch nn.LSTM", "seed", "script", "torch_lstm", "fwd", 1.0),
    Target("seed: forward+backward <= 0.95x torch nn.LSTM", "seed", "script", "torch_lstm", "fb",
           0.95),
    Target("seed: differentiating the input sequence too costs >= 1.0x states + weights "
           "(forward+backward)", "seed", "script_all_grads", "script", "fb", 1.0, at_most=False),
    Target("seed: busy neighbour: worst scripted row <= 1.3x its quiet time", "seed", "script*",
           None, "busy", 1.3),
    Target("seed: torch_script forward >= 1.5x script's", "seed", "torch_script", "script", "fwd",
           1.5, at_most=False),
    Target("seed: LayerNorm LSTM forward+backward: torch eager >= 1.5x script's", "seed",
           "torch_layernorm", "script_layernorm", "fb", 1.5, at_most=False),
    Target("seed: first call forward (fresh process, empty kernel cache) <= 1000 ms", "seed",
           "script", None, "first_fwd", 1000.0),
    Target("seed: first call forward+backward <= 2000 ms", "seed", "script", None, "first_fb",
           2000.0),
    Target("seed: peak memory of forward+backward <= 1.0x torch nn.LSTM's", "seed", "script",
           "torch_lstm", "peak", 1.0),
    Target("small: forward <= 0.8x torch nn.LSTM", "small", "script", "torch_lstm", "fwd", 0.8),
    Target("small: forward+backward <= 0.9x torch nn.LSTM", "small", "script", "torch_lstm",
           "fb", 0.9),
    Target("small: busy neighbour: worst scripted row <= 1.3x its quiet time", "small",
           "script*", None, "busy", 1.3),
    Target("small: torch_compile forward >= 2x script's", "small", "torch_compile", "script",
           "fwd", 2.0, at_most=False),
    Target("small: torch_compile forward+backward >= 2x script's", "small", "torch_compile",
           "script", "fb", 2.0, at_most=False),
    # one thread (BLAS and torch)
    Target("seed, 1 thread: forward <= 1.05x the GEMM floor", "seed1", "script", "floor", "fwd",
           1.05),
    Target("small, 1 thread: forward <= 0.9x torch nn.LSTM", "small1", "script", "torch_lstm",
           "fwd", 0.9),
    *[Target(f"small, 1 thread: {row} {what} <= {limit:.2f}x {other}", "small1", row, other,
             figure, limit)
      for row, twin, peer in FRONT_END_TWINS
      for other, limit in ((twin, 1.10), (peer, 1.5))
      for what, figure in (("forward", "fwd"), ("forward+backward", "fb"))],
]
"""The targets of the performance work (sections by their order in ``results.CONFIGS``)."""

RESPECIALIZE_LIMIT_MS = 50.0


def figure(record: dict[str, Any] | None, name: str) -> float | None:
    """One figure of a harness row, in ms (MB for ``peak``), or None when it was not measured."""
    if not record or record.get("status") != "ok":
        return None
    if name == "fwd":
        return record.get("avg_fwd")
    if name == "fb":
        fwd, bwd = record.get("avg_fwd"), record.get("avg_bwd")
        return None if fwd is None or bwd is None else fwd + bwd
    key = {"first_fwd": "first_call_fwd", "first_fb": "first_call_fb", "peak": "peak_mb",
           "busy": "busy_ratio"}[name]
    return record.get(key)


def worst(results: dict[str, Any], prefix: str, name: str) -> tuple[str | None, float | None]:
    """The row whose name starts with ``prefix`` with the largest figure ``name``, and that
    figure ((None, None) when no such row measured it)."""
    found = [(v, row) for row, r in results.items() if row.startswith(prefix)
             and (v := figure(r, name)) is not None]
    if not found:
        return None, None
    value, row = max(found)
    return row, value


def _ratio(results: dict[str, Any], row: str, other: str, name: str) -> float | None:
    value, base = figure(results.get(row), name), figure(results.get(other), name)
    return None if value is None or not base else value / base


def is_pair_ratio(t: Target) -> bool:
    """A ratio of two rows' times: the targets the side-by-side measurement reads."""
    return t.other is not None and not t.row.endswith("*") and t.figure in ("fwd", "fb")


def pairs(section: str) -> list[tuple[str, str]]:
    """The (row, other) pairs whose times ``section``'s ratio targets compare, in target order."""
    return list(dict.fromkeys((t.row, t.other) for t in TARGETS
                              if t.section == section and is_pair_ratio(t)))


class Evaluation(NamedTuple):
    """One target read off a results run."""

    target: Target
    serial: float | None
    """the figure or ratio from the section's harness rows (None: not measured)"""
    side_by_side: float | None
    """for ratios of two rows' times: the ratio of their medians measured side by side"""
    at_floor: float | None
    """for ratios: the serial ratio with the ``floor`` row in the scripted row's place"""
    profile: str | None = None
    """where the scripted row's time goes, from the same run: for a ratio of its ``fwd`` or
    ``fb``, the share its matmuls alone (``floor``) take of it; for ``busy``, the ``floor`` row's
    own busy ratio (what the GEMMs alone lose beside the neighbour)"""

    @property
    def value(self) -> float | None:
        """What the target is judged on: side by side when measured, else serial."""
        return self.side_by_side if self.side_by_side is not None else self.serial

    @property
    def met(self) -> bool | None:
        value, t = self.value, self.target
        if value is None:
            return None
        return value <= t.limit if t.at_most else value >= t.limit


def evaluate(sections: dict[str, dict[str, Any]]) -> list[Evaluation]:
    """Each target with its serial value, its side-by-side ratio (a section's ``paired``
    payload) and, for ratios, the value a scripted row running at the GEMM floor (``floor``: its
    matmuls alone) would reach (None: not measured)."""
    out = []
    for t in TARGETS:
        section = sections.get(t.section, {})
        results = section.get("results", {})
        if t.row.endswith("*"):
            floor_busy = figure(results.get("floor"), "busy")
            out.append(Evaluation(t, worst(results, t.row[:-1], t.figure)[1], None, None,
                                  None if floor_busy is None
                                  else f"GEMMs alone {floor_busy:.2f}x"))
            continue
        if t.other is None:
            out.append(Evaluation(t, figure(results.get(t.row), t.figure), None, None))
            continue
        scripted = t.row if t.row.startswith("script") else t.other
        at_floor = None
        if t.figure in ("fwd", "fb") and t.other != "floor" and not (
                t.row.startswith("script") and t.other.startswith("script")):
            at_floor = (_ratio(results, "floor", t.other, t.figure) if scripted == t.row
                        else _ratio(results, t.row, "floor", t.figure))
        side = (paired.ratio(section.get("paired"), t.row, t.other, t.figure)
                if is_pair_ratio(t) else None)
        share = (_ratio(results, "floor", scripted, t.figure)  # floor: one LSTM layer's GEMMs
                 if t.figure in ("fwd", "fb") and scripted == "script" else None)
        profile = (None if share is None
                   else f"GEMMs {100 * share:.0f}% of {scripted}" if share <= 1.0
                   else "floor slower: its step GEMMs on one thread")
        out.append(Evaluation(t, _ratio(results, t.row, t.other, t.figure), side, at_floor,
                              profile))
    return out


def lines(sections: dict[str, dict[str, Any]], respec: dict[str, Any] | None) -> list[str]:
    """A Markdown table of the targets and a line for the re-specialization target."""
    rows = ["| target | serial | side by side | met | at the GEMM floor | profile |",
            "|---|---:|---:|:---:|---:|---|"]
    for e in evaluate(sections):
        t = e.target
        floor = "-" if e.at_floor is None else f"{e.at_floor:.2f}x"
        side = "-" if e.side_by_side is None else f"{e.side_by_side:.2f}x"
        if e.serial is None:
            shown = "not measured"
        elif t.other is not None or t.figure == "busy":
            shown = f"{e.serial:.2f}x"
        else:
            shown = f"{e.serial:.0f}" + (" MB" if t.figure == "peak" else " ms")
        if e.serial is not None and t.row.endswith("*"):
            shown += f" ({worst(sections[t.section]['results'], t.row[:-1], t.figure)[0]})"
        met = "-" if e.met is None else ("yes" if e.met else "no")
        profile = e.profile if e.met is False and e.profile else "-"  # explains a miss
        rows.append(f"| {t.text} | {shown} | {side} | {met} | {floor} | {profile} |")
    if respec is not None and respec.get("cases"):
        cases = respec["cases"]
        slowest = max(max(c["fwd_compile_ms"], c["fb_compile_ms"]) for c in cases)
        compiled = sum(c["kernels_compiled"] for c in cases)
        met = slowest <= RESPECIALIZE_LIMIT_MS and compiled == 0
        rows.append(f"| new T or B re-specializes in <= {RESPECIALIZE_LIMIT_MS:.0f} ms with no "
                    f"native compile (compile time, worst case) | {slowest:.0f} ms, {compiled} "
                    f"kernels | - | {'yes' if met else 'no'} | - | - |")
    return rows
