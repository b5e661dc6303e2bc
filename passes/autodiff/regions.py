"""The split of a graph into differentiable regions, as ``prim::DifferentiableGraph`` nodes.

``differentiable_regions(graph, active)`` returns a copy of ``graph`` in which each maximal run
of top-level nodes that compute active values (``grad.differentiate``'s activity analysis: they
depend on a differentiated input and an output's cotangent depends on them) is one
``prim::DifferentiableGraph`` node; the computation around the regions (integer bookkeeping,
masks made from lengths, decisions such as argmax decoding, the data-only parts) runs forward
only. A pure inactive node that does not read what the open region computes or writes moves
before it, so it does not cut the region in two. Loops and ifs are regions of their own or part
of one, whole: their backward is symbolic (a reverse loop, an If on the saved condition), which
is what lets weight gradients leave the loop as one matmul.

This is the view ``vjp_graphs_for(..., regions=True)`` prints and ``RNNSCRIPT_LOG=passes``
logs (built only then: ``differentiate(..., regions=True)``). What runs is one augmented forward
and one backward for the whole graph (see ``passes.autodiff``): the regions say which nodes
those graphs differentiate.
"""

from __future__ import annotations

import os
import sys
from dataclasses import dataclass, field

from ir.core import SUBGRAPH, Graph, Node, Value, clone_node
from ir.kinds import DIFFERENTIABLE_GRAPH as REGION
from ir.registry import WRITES, effects_on_input, lookup
from passes.dce import run as dce

PACKING = frozenset({"prim::TupleConstruct", "prim::TupleUnpack", "prim::TupleIndex"})
"""Structure ops: they join an open region but do not open one (packing a region's results
with a decision into the returned tuple is not differentiable computation of its own)."""


@dataclass(eq=False)
class _Region:
    """A region being built: the original nodes and their copies in its subgraph."""

    graph: Graph = field(default_factory=lambda: Graph("region"))
    """the region's subgraph: its inputs are the outer values its nodes read."""
    nodes: list[Node] = field(default_factory=list)
    """the original (top-level) nodes, in order."""
    values: dict[Value, Value] = field(default_factory=dict)
    """original value -> its copy in the subgraph (an input for an outer value)."""
    outer: list[Value] = field(default_factory=list)
    """per subgraph input, the outer value (in the graph being built) it stands for."""
    defined: set[Value] = field(default_factory=set)
    """original values its nodes define (at any depth)."""
    written: set[Value] = field(default_factory=set)
    """original values its nodes write into (a list appended to)."""


def differentiable_regions(graph: Graph, active: set[Value]) -> Graph:
    """A copy of ``graph`` with its maximal active regions grouped (see the module docstring)."""
    out = Graph(graph.name)
    vmap = {v: out.add_input(v.type, v.name) for v in graph.inputs}
    region: _Region | None = None
    for node in graph.block:
        if _is_active(node, active) and (region is not None or node.kind not in PACKING):
            region = region or _Region()
            _add(region, node, vmap)
        elif region is not None and _movable(node, region):  # runs before the region
            out.block.append(clone_node(node, out, vmap))
        else:
            if region is not None:
                _close(region, out, vmap)
                region = None
            out.block.append(clone_node(node, out, vmap))
    if region is not None:
        _close(region, out, vmap)
    out.set_outputs([vmap.get(v, v) for v in graph.outputs])
    dce(out)  # the constants copied into the regions and no longer read outside
    return out


def _walk(node: Node):
    yield node
    for b in node.blocks:
        for inner in b:
            yield from _walk(inner)


def _is_active(node: Node, active: set[Value]) -> bool:
    """Does ``node`` (or a node in its blocks) compute an active value or write one into a
    container?"""
    for n in _walk(node):
        if any(v in active for v in n.outputs):
            return True
        if any(v in active for b in n.blocks for v in b.params):
            return True
        if any(v in active for k, v in enumerate(n.inputs) if WRITES in effects_on_input(n, k)):
            return True
    return False


def _free_values(node: Node) -> list[Value]:
    """Values ``node`` and its blocks read that are defined outside it, in order."""
    inside: set[Value] = set()
    free: list[Value] = []
    for n in _walk(node):
        inside.update(v for b in n.blocks for v in b.params)
        inside.update(n.outputs)
    for n in _walk(node):
        reads = list(n.inputs) + [v for b in n.blocks for v in b.returns]
        free += [v for v in reads if v not in inside and v not in free]
    return free


def _movable(node: Node, region: _Region) -> bool:
    """Can inactive ``node`` run before the open region (pure, reads nothing it makes or
    writes)?"""
    op = lookup(node.kind)
    if op is None or not op.is_pure or node.blocks:
        return False
    return not any(v in region.defined or v in region.written for v in _free_values(node))


def _add(region: _Region, node: Node, vmap: dict[Value, Value]) -> None:
    """Copy ``node`` into the region's subgraph, reading outer values through its inputs."""
    for v in _free_values(node):
        if v in region.values:
            continue
        if v.node is not None and v.is_constant:  # a copy, as fusion groups hold theirs
            region.graph.block.append(clone_node(v.node, region.graph, region.values))
            continue
        region.values[v] = region.graph.add_input(v.type, v.name)
        region.outer.append(vmap.get(v, v))
    region.graph.block.append(clone_node(node, region.graph, region.values))
    region.nodes.append(node)
    for n in _walk(node):
        region.defined.update(n.outputs)
        region.written.update(v for k, v in enumerate(n.inputs)
                              if WRITES in effects_on_input(n, k))


def _close(region: _Region, out: Graph, vmap: dict[Value, Value]) -> None:
    """Append the region's node to ``out``; its outputs are the values it defines that are read
    after it."""
    members = set(region.nodes)
    escaping = [v for n in region.nodes for v in n.outputs
                if any(_top_level(use.node) not in members for use in v.uses)]
    region.graph.set_outputs([region.values[v] for v in escaping])
    node = out.create(REGION, region.outer, [v.type for v in escaping],
                      {SUBGRAPH: region.graph}, names=[v.name for v in escaping])
    out.block.append(node)
    vmap.update(zip(escaping, node.outputs))


def logging_regions() -> bool:
    """Does ``RNNSCRIPT_LOG`` ask for the passes' log (which then shows the split)?"""
    return "passes" in os.environ.get("RNNSCRIPT_LOG", "").replace(" ", "").split(",")


def log_regions(regions: Graph) -> None:
    """Print the split to stderr under ``RNNSCRIPT_LOG=passes`` (as the passes log graphs)."""
    if logging_regions():
        print(f"// ---- differentiable regions ----\n{regions}", file=sys.stderr)


def _top_level(node: Node) -> Node:
    """The node of the graph's own block that is or contains ``node``."""
    while node.owner is not None and node.owner.owner is not None:
        node = node.owner.owner
    return node


__all__ = ["differentiable_regions", "log_regions", "logging_regions"]
