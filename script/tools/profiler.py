"""Where the time goes: ``with script.profile() as prof:`` around calls of scripted functions.

While a profiler is active, every call of a ``ScriptFunction`` runs an instrumented variant of its
generated code (built once per specialization and cached apart from the fast code, which stays
untouched): each node's line is bracketed by two clock reads and its time is added under a key —
the op kind (``tensor::add``), the fusion group (``FusionGroup_0 [add, mul, tanh]``) or the matmul
(``matmul @ cells.py:14``). Compilations that happen inside the ``with`` block are timed by stage
(frontend, passes, codegen, native compile). ``print(prof)`` shows a table sorted by total time;
``prof.export_chrome_trace(path)`` writes Chrome trace event JSON for chrome://tracing / Perfetto.

A ``Profile`` is a ``script.runtime.instrument.Instrument``: ``profile()`` makes it the active one,
and the runtime, which never imports this module, routes calls and compile stages through it.
"""

from __future__ import annotations

import json
import os
import threading
import time
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Any

from script.runtime import instrument
from script.runtime.codegen import generate
from script.runtime.nested_args import with_leaves

_clock = time.perf_counter

MAX_TRACE_EVENTS = 1_000_000
"""Events kept for the Chrome trace; the totals keep counting past it."""


@dataclass
class Stat:
    """Accumulated time of one key."""

    category: str
    """``op``, ``fusion``, ``matmul``, ``call`` or ``compile``."""
    calls: int = 0
    total: float = 0.0
    """seconds."""

    @property
    def mean(self) -> float:
        return self.total / self.calls if self.calls else 0.0


@dataclass
class Profile:
    """The records of one ``with profile()`` block."""

    stats: dict[str, Stat] = field(default_factory=dict)
    """node, call and compile-stage keys -> their time."""
    events: list[tuple[str, str, float, float, int]] = field(default_factory=list)
    """(name, category, start, duration, thread id) in seconds, for the trace."""
    start: float = field(default_factory=_clock)
    _stage_stack: list[list[float]] = field(default_factory=list)
    scope: str = ""
    """the function whose code is being instrumented (prefixes its fusion groups' rows)."""
    building: bool = False
    """True while instrumented code is generated: its kernel lookups are not compile stages."""
    _graph_code: dict[int, tuple[Any, Callable[..., Any]]] = field(default_factory=dict)
    """id(graph) -> (graph, instrumented code) for ``run_graph`` (the graph is kept so that an
    id is never reused while its entry lives)."""

    # -- recording ------------------------------------------------------------------------------
    def add(self, key: str, category: str, start: float, end: float) -> None:
        """Record one interval under ``key``."""
        stat = self.stats.get(key)
        if stat is None:
            stat = self.stats[key] = Stat(category)
        stat.calls += 1
        stat.total += end - start
        if len(self.events) < MAX_TRACE_EVENTS:
            self.events.append((key, category, start, end - start, threading.get_ident()))

    def node_recorder(self, key: str, category: str) -> Callable[[float], None]:
        """The function generated code calls after a node: ``record(start)``."""
        stat = self.stats.get(key)
        if stat is None:
            stat = self.stats[key] = Stat(category)
        events = self.events
        ident = threading.get_ident

        def record(start: float) -> None:
            end = _clock()
            stat.calls += 1
            stat.total += end - start
            if len(events) < MAX_TRACE_EVENTS:
                events.append((key, category, start, end - start, ident()))
        return record

    def call(self, fn: Any, args: tuple[Any, ...]) -> Any:
        """Run one call of a ``ScriptFunction`` through its instrumented code (``args`` are
        the graph's inputs: the bound arguments, then any globals)."""
        code = instrumented(fn, fn.specialization_for(args), self)
        start = _clock()
        try:
            return code(*args)
        finally:
            self.add(f"call {fn.definition.name}", "call", start, _clock())

    def run_graph(self, graph: Any, name: str, args: Sequence[Any]) -> Any:
        """Run one call of a compiled graph that is not a ``ScriptFunction``'s own (the forward
        or backward of a gradient) through instrumented code built for this profiler."""
        found = self._graph_code.get(id(graph))
        if found is None or found[0] is not graph:
            with _instrumented_lock:
                self.scope, self.building = name, True
                try:
                    code, _ = generate(graph, name="profiled", profiler=self)
                finally:
                    self.scope, self.building = "", False
                found = self._graph_code[id(graph)] = (graph, code)
        start = _clock()
        try:
            return found[1](*args)
        finally:
            self.add(f"call {name}", "call", start, _clock())

    def add_stage(self, name: str, start: float, end: float, child_seconds: float) -> None:
        """A compile stage's exclusive time (nested stages are counted on their own)."""
        self.add(f"compile: {name}", "compile", start, end)
        self.stats[f"compile: {name}"].total -= child_seconds

    @contextmanager
    def stage(self, name: str) -> Iterator[None]:
        """Time a compile stage (``instrument.stage``: compilation only, never a hot path)."""
        if self.building:
            yield
            return
        self._stage_stack.append([0.0])
        start = _clock()
        try:
            yield
        finally:
            end = _clock()
            (children,) = self._stage_stack.pop()
            self.add_stage(name, start, end, children)
            if self._stage_stack:
                self._stage_stack[-1][0] += end - start

    def write_node(self, w: Any, node: Any, write: Callable[[Any], None]) -> None:
        """Write a node of instrumented code timed (``write_timed_node``)."""
        write_timed_node(w, node, write)

    # -- reading --------------------------------------------------------------------------------
    def totals(self, category: str | None = None) -> dict[str, float]:
        """Key -> total seconds, for one category or all."""
        return {k: s.total for k, s in self.stats.items()
                if category is None or s.category == category}

    @property
    def node_seconds(self) -> float:
        """Time spent in the nodes of profiled calls (ops, fusion groups, matmuls)."""
        return sum(s.total for s in self.stats.values()
                   if s.category in ("op", "fusion", "matmul"))

    @property
    def call_seconds(self) -> float:
        """Wall time of the profiled calls (their compilation excluded)."""
        return sum(s.total for s in self.stats.values() if s.category == "call")

    def table(self, limit: int | None = None) -> str:
        """The records as a text table sorted by total time, largest first."""
        rows = sorted(self.stats.items(), key=lambda kv: -kv[1].total)[:limit]
        width = max([len(k) for k, _ in rows] + [4])
        node_total = self.node_seconds or 1.0
        lines = [f"{'name':<{width}}  {'category':<8}  {'calls':>7}  {'total ms':>10}  "
                 f"{'mean us':>10}  {'% nodes':>7}"]
        for key, s in rows:
            share = f"{100 * s.total / node_total:6.1f}%" if s.category in (
                "op", "fusion", "matmul") else ""
            lines.append(f"{key:<{width}}  {s.category:<8}  {s.calls:>7}  "
                         f"{1e3 * s.total:>10.3f}  {1e6 * s.mean:>10.2f}  {share:>7}")
        lines.append(f"nodes: {1e3 * self.node_seconds:.3f} ms of {1e3 * self.call_seconds:.3f} "
                     "ms in profiled calls")
        return "\n".join(lines)

    def __str__(self) -> str:
        return self.table()

    def chrome_trace(self) -> dict[str, Any]:
        """The events in the Chrome trace event format (complete events, microseconds)."""
        pid = os.getpid()
        events = [{"name": name, "ph": "X", "ts": round((start - self.start) * 1e6, 3),
                   "dur": round(dur * 1e6, 3), "pid": pid, "tid": tid, "cat": category}
                  for name, category, start, dur, tid in self.events]
        return {"traceEvents": events, "displayTimeUnit": "ms"}

    def export_chrome_trace(self, path: str | os.PathLike[str]) -> None:
        """Write the trace as JSON, viewable in chrome://tracing or ui.perfetto.dev."""
        with open(path, "w", encoding="utf-8") as f:
            json.dump(self.chrome_trace(), f)


# -- activation -----------------------------------------------------------------------------------
@contextmanager
def profile() -> Iterator[Profile]:
    """Profile the scripted calls made inside the ``with`` block."""
    prof = Profile()
    previous = instrument.activate(prof)
    try:
        yield prof
    finally:
        instrument.restore(previous)


# -- instrumented code ----------------------------------------------------------------------------
_instrumented_lock = threading.Lock()


def instrumented(fn: Any, spec: Any, prof: Profile) -> Callable[..., Any]:
    """The instrumented variant of a specialization's code for ``prof`` (built once per
    specialization and profiler; the fast code is never touched)."""
    cache = fn.__dict__.setdefault("_profiled_code", {})
    code = cache.get(id(spec))
    if code is not None and code[0] is prof and code[1] is spec:  # (a new specialization may
        return code[2]  # have the id of one that is gone)
    with _instrumented_lock:
        prof.scope, prof.building = fn.definition.name, True
        try:
            made, _ = generate(spec.graph, name="profiled", profiler=prof)
        finally:
            prof.building = False
        made = with_leaves(made, spec.nested)
        cache[id(spec)] = (prof, spec, made)
    return made


UNTIMED = frozenset({"prim::Constant", "prim::If", "prim::Loop", "prim::DifferentiableGraph"})
"""Nodes whose own line is not timed: constants emit no code; the nodes inside control flow and
differentiable graphs are timed one by one."""
MATMULS = frozenset({"tensor::matmul", "tensor::linear", "tensor::matmul_sum"})
"""Kinds timed per node (each matmul on its own row), not per kind."""
_TIMER = "_prof_t"
SUMMARY_WIDTH = 48
"""Longest op list shown in a fusion group's row."""


def write_timed_node(w: Any, node: Any, write: Callable[[Any], None]) -> None:
    """Write ``node`` through ``write`` between a clock read and a call recording the time
    (``Profile.write_node``: ``script.runtime.codegen.FunctionWriter`` calls it while
    instrumenting)."""
    if node.kind in UNTIMED:
        write(node)
        return
    key, category = node_key(node, w)
    if "_prof_clock" not in w.consts:
        w.consts["_prof_clock"] = _clock
        w.ns.used.add(_TIMER)
    recorder = w.ns.fresh("_prof_r")
    w.consts[recorder] = w.profiler.node_recorder(key, category)
    w.emit(f"{_TIMER} = _prof_clock()")
    write(node)
    w.emit(f"{recorder}({_TIMER})")


def node_key(node: Any, w: Any) -> tuple[str, str]:
    """The profile row a node's time goes to, and its category."""
    if node.kind == "prim::FusionGroup":
        counter = w.consts.setdefault("_prof_groups", [0])
        index = counter[0]
        counter[0] += 1
        summary = group_summary(node.subgraph)
        if len(summary) > SUMMARY_WIDTH:
            summary = summary[:SUMMARY_WIDTH - 3] + "..."
        return f"{w.profiler.scope}/FusionGroup_{index} [{summary}]", "fusion"
    if node.kind in MATMULS:
        where = f" @ {node.source}" if node.source is not None else ""
        if not where:
            counter = w.consts.setdefault("_prof_matmuls", [0])
            where = f" #{counter[0]} in {w.profiler.scope}"
            counter[0] += 1
        return f"{node.kind}{where}", "matmul"
    return node.kind, "op"


def group_summary(graph: Any) -> str:
    """The computing ops of a fusion group's subgraph, in order (``add, sigmoid, mul``)."""
    return ", ".join(n.kind.split("::", 1)[-1] for n in graph.walk()
                     if n.kind != "prim::Constant")
