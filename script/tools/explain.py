"""Did it compile the way I think? Fusion, fallbacks, loops and matmuls of an optimized graph.

``analyze(graph)`` reads a specialized, optimized graph and finds the fusion groups formed, every
elementwise op left outside a group with the reason (the fuser has no code for it; a shape or
dtype unknown at compile time; a side effect between it and its neighbours; a single op, not worth
a kernel call; ...), every fusion group that runs as Python because the fuser could not compile
it, the loops left and the matmuls (inside or outside loops, hoisted, batched). Each op is judged
by the fuser backend of the device its tensors live on (``fuser.backend.backend_of``): a CUDA
graph by the CUDA backend's rules, a CPU graph by the CPU backend's.

``fn.explain(*args)`` turns that into a readable report; ``script(fn, strict=True)`` turns the ops
left out (but a single op alone, which a kernel would not speed up) and the fallbacks into a
``ScriptError`` when a specialization is compiled.
"""

from __future__ import annotations

import os
import shutil
import subprocess
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any

from fuser.analysis import VIEW_OPS
from fuser.backend import Backend, backend_of
from fuser.group import FUSION_GROUP, MIN_COMPUTE_OPS
from ir.core import CONSTANT, SUBGRAPH, Block, Graph, Node, Value
from ir.kinds import LOOP
from ir.registry import lookup
from ir.types import TensorType
from script.errors import ScriptError, render_caret
from script.runtime.group_writers import numbers_only

MATMULS = frozenset({"tensor::matmul", "tensor::linear", "tensor::matmul_sum"})
"""Kinds reported as matmuls."""
BATCHING_INPUTS = frozenset({"tensor::cat", "tensor::stack"})
"""Producers that mark a matmul operand as several operands batched into one."""


@dataclass
class GroupInfo:
    """One fusion group."""

    node: Node
    ops: list[str]
    """the kinds inside it, in order (constants left out)."""
    loop_depth: int
    fallback: str | None = None
    """why its backend could not compile it (it then runs as Python), or None."""
    backend: str = "CPU"
    """the name of the fuser backend that compiles it."""


@dataclass
class LeftOut:
    """An elementwise op outside every fusion group."""

    node: Node
    reason: str


@dataclass
class LoopInfo:
    node: Node
    depth: int
    trip_count: int | None
    """the constant trip count of a for-loop, or None (data-dependent, or a while-loop)."""
    is_for: bool


@dataclass
class MatmulInfo:
    node: Node
    loop_depth: int
    notes: list[str] = field(default_factory=list)


@dataclass
class Analysis:
    """What ``analyze`` found in one optimized graph."""

    groups: list[GroupInfo] = field(default_factory=list)
    left_out: list[LeftOut] = field(default_factory=list)
    loops: list[LoopInfo] = field(default_factory=list)
    matmuls: list[MatmulInfo] = field(default_factory=list)

    @property
    def fallbacks(self) -> list[GroupInfo]:
        return [g for g in self.groups if g.fallback is not None]


# -- walking --------------------------------------------------------------------------------------
def walk_with_depth(block: Block, depth: int = 0) -> Iterator[tuple[Node, int]]:
    """Every node with its loop depth, nested blocks and non-fusion subgraphs included."""
    for node in block:
        yield node, depth
        inner = depth + (node.kind == LOOP)
        for b in node.blocks:
            yield from walk_with_depth(b, inner)
        sub = node.attrs.get(SUBGRAPH)
        if isinstance(sub, Graph) and node.kind != FUSION_GROUP:
            yield from walk_with_depth(sub.block, depth)


def analyze(graph: Graph) -> Analysis:
    """Fusion groups, unfused elementwise ops, fallbacks, loops and matmuls of ``graph``."""
    result = Analysis()
    for node, depth in walk_with_depth(graph.block):
        if node.kind == FUSION_GROUP:
            ops = [n.kind for n in node.subgraph.walk() if n.kind != CONSTANT]
            backend = backend_of(node)
            result.groups.append(GroupInfo(node, ops, depth, _fallback(node, backend),
                                           backend.name if backend is not None else "unknown"))
        elif node.kind == LOOP:
            result.loops.append(_loop_info(node, depth))
        elif node.kind in MATMULS:
            result.matmuls.append(MatmulInfo(node, depth, _matmul_notes(node, depth)))
        elif _is_tensor_elementwise(node):
            result.left_out.append(LeftOut(node, why_not_fused(node)))
    return result


def _is_tensor_elementwise(node: Node) -> bool:
    op = lookup(node.kind)
    if op is None or not op.is_elementwise:
        return False
    return any(isinstance(v.type, TensorType) for v in node.outputs)


def _fallback(node: Node, backend: Backend | None) -> str | None:
    if backend is None:
        return "no fuser backend serves its device"
    try:
        backend.compile_group(node.subgraph)  # cached: the executor compiled it already
    except (ValueError, RuntimeError) as exc:
        return str(exc) or type(exc).__name__
    return None


# -- why an elementwise op stayed out -------------------------------------------------------------
LONE = "a single op with no fusible neighbour"
"""the start of the reason of an op left out that a kernel would not speed up."""


def _known(v: Value, backend: Backend) -> bool:
    if not isinstance(v.type, TensorType):
        return True  # scalars are fine: they enter a kernel as arguments
    return backend.knows(v.type)


def _either(words: list[str]) -> str:
    return words[0] if len(words) == 1 else f"{', '.join(words[:-1])} or {words[-1]}"


def why_not_fused(node: Node) -> str:
    """Why an elementwise node is outside every fusion group, in words (by the rules of the
    fuser backend of its device)."""
    backend = backend_of(node)
    if backend is None:
        return "no fuser backend serves its device"
    if node.kind not in backend.rules:
        return f"the {backend.name} fuser has no code for {node.kind}"
    unknown = [v for v in (*node.inputs, *node.outputs) if not _known(v, backend)]
    if unknown:
        v = unknown[0]
        return (f"the shape or dtype of %{v.name or 'value'} ({v.type}) is unknown at compile "
                f"time (the fuser needs both, and {_either(list(backend.storage))})")
    if not backend.can_generate(node):
        return (f"the {backend.name} fuser cannot generate {node.kind} for these operands "
                f"(result {node.outputs[0].type})")
    neighbours = _fusible_neighbours(node)
    if not neighbours:
        return (f"{LONE}: a group needs {MIN_COMPUTE_OPS} ops to pay for a kernel call")
    barrier = _barrier_between(node, neighbours)
    if barrier is not None:
        where = f" at {barrier.source}" if barrier.source is not None else ""
        return (f"a side effect ({barrier.kind}{where}) lies between it and its fusible "
                "neighbours, and no op moves across a side effect")
    shapes = {_shape(n) for n in neighbours}
    if _shape(node) not in shapes:
        return ("its result's shape differs from its neighbours' (a kernel has one iteration "
                "space for all its outputs)")
    return "joining its neighbours' group would make a cycle through an op outside the group"


def _shape(node: Node) -> Any:
    t = node.outputs[0].type if node.outputs else None
    return t.shape if isinstance(t, TensorType) else None


def _fusible_neighbours(node: Node) -> list[Node]:
    from fuser.group import is_fusible
    block = node.owner
    near = [v.node for v in node.inputs]
    near += [use.node for v in node.outputs for use in v.uses]
    found: list[Node] = []
    for n in near:
        if n.owner is not block or n in found or n.kind in (CONSTANT, "prim::Return"):
            continue
        if n.kind == FUSION_GROUP or (n.kind not in VIEW_OPS and is_fusible(n)):
            found.append(n)
    return found


def _barrier_between(node: Node, neighbours: list[Node]) -> Node | None:
    for other in neighbours:
        first, last = (node, other) if node.is_before(other) else (other, node)
        n = first.next
        while n is not None and n is not last:
            if _has_side_effects(n):
                return n
            n = n.next
    return None


def _has_side_effects(node: Node) -> bool:
    op = lookup(node.kind)
    if op is None or op.has_side_effects:
        return True
    return any(_has_side_effects(n) for b in node.blocks for n in b)


# -- loops and matmuls ----------------------------------------------------------------------------
def _loop_info(node: Node, depth: int) -> LoopInfo:
    from passes.licm import constant_trip_count, is_for_loop
    return LoopInfo(node, depth, constant_trip_count(node), is_for_loop(node))


def _matmul_notes(node: Node, depth: int) -> list[str]:
    notes = []
    if any(v.node.kind in BATCHING_INPUTS for v in node.inputs):
        notes.append("batched: an operand concatenates several operands")
    if depth == 0 and _read_by_loop_step(node.outputs[0]):
        notes.append("hoisted out of a loop: one matmul for every step, each step reads a slice")
    notes += [f"{k}={v}" for k, v in node.attrs.items() if k != SUBGRAPH]
    return notes


def _read_by_loop_step(value: Value, hops: int = 3) -> bool:
    """Is ``value`` (through up to ``hops`` reshapes/views) sliced inside a loop body?"""
    for use in value.uses:
        user = use.node
        if user.owner is not None and user.owner.owner is not None and (
                user.owner.owner.kind == LOOP):
            return True
        if hops and user.outputs and user.kind in ("tensor::reshape", "tensor::transpose"):
            if _read_by_loop_step(user.outputs[0], hops - 1):
                return True
    return False


# -- strict mode ----------------------------------------------------------------------------------
def check_strict(graph: Graph, definition: Any) -> None:
    """Raise ``ScriptError`` listing every unfused elementwise op that a fusion group could have
    taken (an op alone, with no fusible neighbour, is numpy's own loop either way: ``explain``
    lists it, strict mode does not refuse it) and every fallback."""
    found = analyze(graph)
    problems = [(x.node, f"{x.node.kind} is not fused: {x.reason}") for x in found.left_out
                if not x.reason.startswith(LONE)]
    problems += [(g.node, f"a fusion group ({', '.join(_short(k) for k in g.ops)}) runs as "
                  f"Python: the {g.backend} fuser could not compile it ({g.fallback})")
                 for g in found.fallbacks]
    if not problems:
        return
    name = getattr(definition, "name", "function")
    lines = [f"strict mode: {name}() does not compile to fused code ({len(problems)} "
             f"problem{'s' if len(problems) != 1 else ''}):"]
    for node, message in problems:
        lines.append(describe_at(node, message, definition))
    error = ScriptError("\n".join(lines))
    first = _position_node(problems[0][0])
    if first is not None and first.source is not None:
        error.file, error.line, error.col = first.source.file, first.source.line, first.source.col
    raise error


def _position_node(node: Node) -> Node | None:
    """The node itself, or for a fusion group the first member with a source position."""
    if node.source is not None or node.kind != FUSION_GROUP:
        return node
    return next((n for n in node.subgraph.walk() if n.source is not None), None)


def describe_at(node: Node, message: str, definition: Any) -> str:
    """``  file:line:col: message`` and the quoted source line with a caret, when known."""
    at = _position_node(node)
    if at is None or at.source is None:
        return f"  {message}"
    text = f"  {at.source}: {message}"
    line = source_line(at, definition)
    if line:
        text += "\n" + render_caret(line, at.source.col)
    return text


def source_line(node: Node, definition: Any) -> str:
    """The text of the node's source line when it comes from the function's own file."""
    info = getattr(definition, "source", None)
    src = node.source
    if info is None or src is None or os.path.basename(info.file) != src.file:
        return ""
    return info.line(src.line)


def _short(kind: str) -> str:
    return kind.split("::", 1)[-1]


# -- the report -----------------------------------------------------------------------------------
def explain_report(fn: Any, args: tuple[Any, ...], svg: str | None = None) -> str:
    """The readable report behind ``ScriptFunction.explain`` (``args``: the call's graph
    inputs, globals included)."""
    spec = fn.specialization_for(args)
    d = fn.definition
    graph = spec.graph
    found = analyze(graph)
    described = ", ".join(f"{n}: {v.type}" for n, v in zip(d.input_names(), graph.inputs))
    lines = [f"{d.name}({described})", ""]
    lines += _groups_section(found)
    lines += _left_out_section(found, d)
    lines += _fallback_section(found, d)
    lines += _loops_section(found, fn)
    lines += _matmul_section(found)
    if svg is not None:
        lines += ["", render_svg(graph, svg)]
    return "\n".join(lines).rstrip() + "\n"


def _groups_section(found: Analysis) -> list[str]:
    lines = [f"fusion groups: {len(found.groups)}"]
    for k, g in enumerate(found.groups):
        where = f", inside {g.loop_depth} loop(s)" if g.loop_depth else ""
        kernel = ("runs as Python (fallback)" if g.fallback else "numpy's arithmetic on numbers"
                  " outside native loops (cheaper than a kernel call)" if numbers_only(g.node)
                  else "native kernel")
        out = g.node.outputs[0].type if g.node.outputs else ""
        lines.append(f"  group {k}: {len([o for o in g.ops if o not in VIEW_OPS])} ops -> "
                     f"{len(g.node.outputs)} output(s) {out}{where}; {kernel}")
        lines.append(f"    {', '.join(_short(o) for o in g.ops)}")
    return lines


def _left_out_section(found: Analysis, d: Any) -> list[str]:
    if not found.left_out:
        return ["elementwise ops outside fusion groups: none"]
    lines = [f"elementwise ops outside fusion groups: {len(found.left_out)}"]
    lines += [describe_at(x.node, f"{x.node.kind}: {x.reason}", d) for x in found.left_out]
    return lines


def _fallback_section(found: Analysis, d: Any) -> list[str]:
    if not found.fallbacks:
        return ["fallbacks to Python: none"]
    lines = [f"fallbacks to Python: {len(found.fallbacks)}"]
    lines += [describe_at(g.node, f"fusion group ({', '.join(_short(o) for o in g.ops)}): "
                          f"{g.fallback}", d) for g in found.fallbacks]
    return lines


def _loops_section(found: Analysis, fn: Any) -> list[str]:
    written = _loops_written(fn)
    head = f"loops: {len(found.loops)} after optimization, {written} as written"
    if written > len(found.loops):
        head += f" ({written - len(found.loops)} unrolled or removed)"
    lines = [head]
    for loop in found.loops:
        where = f" at {loop.node.source}" if loop.node.source is not None else ""
        if loop.trip_count is not None:
            trips = f"{loop.trip_count} iterations"
        else:
            trips = "trip count known at run time" if loop.is_for else "while loop"
        body = sum(1 for n in loop.node.blocks[0].walk() if n.kind != CONSTANT)
        lines.append(f"  loop{where}: {trips}, depth {loop.depth + 1}, {body} nodes in its body"
                     f"; {_native_status(loop.node)}")
    return lines


def _native_status(node: Node) -> str:
    """Whether the loop runs as one native function (``fuser.cpu.loop``) or as Python, and why."""
    from fuser.backend import backend_of
    backend = backend_of(node)
    if backend is None or backend.compile_loop is None:
        return "runs as Python (its device's backend compiles no loops)"
    try:
        native = backend.compile_loop(node)
    except ValueError as e:
        return f"runs as Python: {e}"
    if getattr(native, "runtime_shapes", False):
        return ("runs natively, compiled for the sizes its arrays have when it is reached (one "
                "compiled function per set of sizes, no Python per step)")
    return "runs natively (one compiled function, no Python per step)" + _rows_status(native)


def _rows_status(native: Any) -> str:
    """Whether a native loop's steps are independent across batch rows (it may then run as
    several ranges of rows at once, ``RNNSCRIPT_LOOP_THREADS``), and why not."""
    prog = getattr(native, "prog", None)
    if prog is None or not prog.params:
        return ""
    if prog.batch is not None:
        return (f"; its steps are independent across the batch's {prog.batch} rows (it may run "
                "as several ranges of rows at once)")
    return f"; over every row at once ({prog.whole_why})" if prog.whole_why else ""


def _loops_written(fn: Any) -> int:
    from passes import run_pipeline
    graph = fn.graph.clone()
    run_pipeline(graph, "inline")
    return sum(1 for n, _ in walk_with_depth(graph.block) if n.kind == LOOP)


def _matmul_section(found: Analysis) -> list[str]:
    inside = sum(1 for m in found.matmuls if m.loop_depth)
    lines = [f"matmuls: {len(found.matmuls)} ({len(found.matmuls) - inside} outside loops, "
             f"{inside} inside)"]
    for m in found.matmuls:
        operands = " @ ".join(str(v.type) for v in m.node.inputs[:2])
        where = f" at {m.node.source}" if m.node.source is not None else ""
        place = f"inside {m.loop_depth} loop(s)" if m.loop_depth else "outside loops"
        notes = "; ".join([place, *m.notes])
        lines.append(f"  {m.node.kind}{where}: {operands}; {notes}")
    return lines


# -- pictures -------------------------------------------------------------------------------------
INSTALL_HINT = ("Graphviz's `dot` program is needed to draw the graph: install it with "
                "`apt-get install graphviz` (Debian/Ubuntu), `brew install graphviz` (macOS) or "
                "`conda install graphviz`; `pip install graphviz` alone is not enough, it only "
                "wraps the program. `graph.to_dot()` gives the DOT text without it.")


def render_svg(graph: Graph, path: str) -> str:
    """Draw ``graph`` as SVG at ``path`` with Graphviz; returns a line for the report."""
    dot = shutil.which("dot")
    if dot is None:
        return f"graph picture not written to {path}: {INSTALL_HINT}"
    done = subprocess.run([dot, "-Tsvg", "-o", os.fspath(path)], input=graph.to_dot(),
                          text=True, capture_output=True, check=False)
    if done.returncode != 0:
        return f"graph picture not written to {path}: dot failed: {done.stderr.strip()}"
    return f"graph picture written to {path}"
