"""The backward half of activity analysis: which values an output's cotangent reaches.

A value is *active* when it depends on a differentiated input (``prepare.active_values``, the
forward half) and some output that gets a cotangent depends on it (``needed_values``, here). Only
active values are differentiated: a value that feeds only a comparison, an ``argmax``-like
decision, an integer result or nothing returned gets no cotangent, its backward is not built and
nothing is saved for it. That matters for values carried by a loop: the reverse loop would
otherwise carry a zero cotangent for them and run (and save for) their backward every step.

The analysis walks each block from its end, marking the inputs of a node whose output (or whose
written-into operand: a list appended to, a dict entry set) is needed; If branches return what
the If's needed outputs are, and a loop's carried value (initial value, parameter, return,
output) is needed as a whole when any part of it is. Containers are marked as one value, so
the walk is repeated until nothing changes (a list needed after an append seen earlier in the
walk).
"""

from __future__ import annotations

from collections.abc import Iterable

from ir.core import Block, Graph, Node, Value
from ir.kinds import IF, LOOP, PARAM
from ir.registry import FRESH, WRITES, effects_on_input, lookup
from passes.autodiff.prepare import is_differentiable_type


def needed_values(graph: Graph, non_differentiable: frozenset[str] | set[str]) -> set[Value]:
    """Values of a differentiable type that some graph output's derivative depends on."""
    needed: set[Value] = set()
    _mark(graph.outputs, needed)
    while True:
        before = len(needed)
        _visit_block(graph.block, needed, non_differentiable)
        if len(needed) == before:
            return needed


def _mark(values: Iterable[Value], needed: set[Value]) -> None:
    needed.update(v for v in values if is_differentiable_type(v.type))


def _visit_block(block: Block, needed: set[Value], nd: frozenset[str] | set[str]) -> None:
    for node in reversed(list(block)):
        _visit_node(node, needed, nd)


def _visit_node(node: Node, needed: set[Value], nd: frozenset[str] | set[str]) -> None:
    if node.kind == LOOP:
        return _visit_loop(node, needed, nd)
    if node.kind == IF:
        for k, out in enumerate(node.outputs):
            if out in needed:
                _mark([b.returns[k] for b in node.blocks], needed)
        for b in node.blocks:
            _visit_block(b, needed, nd)
        return
    if node.kind in nd:
        return
    written = [v for k, v in enumerate(node.inputs) if WRITES in effects_on_input(node, k)]
    if (any(v in needed for v in node.outputs)
            or any(v in needed or not _tracked(v) for v in written)):
        _mark(node.inputs, needed)
        for b in node.blocks:
            _mark(b.returns, needed)
    for b in node.blocks:
        _visit_block(b, needed, nd)


def _tracked(container: Value) -> bool:
    """Is ``container`` a value the walk follows whole: made here fresh (a list literal), a graph
    input or a block parameter? Another (an item read out of a list of lists) may alias a
    container that is needed, so what is written into it is needed."""
    if container.node is None or container.node.kind == PARAM:
        return True
    op = lookup(container.node.kind)
    return op is not None and FRESH in op.traits


def _visit_loop(node: Node, needed: set[Value], nd: frozenset[str] | set[str]) -> None:
    """A carried value is needed as a whole: its initial value (the result when the loop runs
    no iteration), the body's parameter and return, and the loop's output, since the reverse
    loop carries one cotangent for all of them."""
    body = node.blocks[0]
    carried = list(zip(node.outputs, body.params[1:], body.returns[1:], node.inputs[2:]))
    for slot in carried:
        if any(v in needed for v in slot):
            _mark(slot, needed)
    _visit_block(body, needed, nd)
    for slot in carried:
        if any(v in needed for v in slot):
            _mark(slot, needed)


__all__ = ["needed_values"]
