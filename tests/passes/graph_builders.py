"""Builders of small graphs through the IR API, for the pass tests."""

from __future__ import annotations

import ir
from ir.types import INT, TENSOR, TensorType

F43 = TensorType("float32", (4, 3))
CLEANUP_PASSES = {"inline", "canonicalize", "constant-prop", "shape-prop", "dce", "cse"}


def kinds(graph: ir.Graph) -> list[str]:
    return [n.kind for n in graph.walk()]


def count(graph: ir.Graph, kind: str) -> int:
    return kinds(graph).count(kind)


def binop(g: ir.Graph, kind: str, a: ir.Value, b: ir.Value, t: ir.Type = TENSOR) -> ir.Value:
    return g.insert(kind, [a, b], [t]).output


def read_inside(g: ir.Graph, values: list[ir.Value]) -> None:
    """Return ``-v`` for each value: the values themselves stay inside the graph, where a pass may
    merge or forward them (values the caller receives must stay distinct arrays)."""
    for v in values:
        g.add_output(g.insert("tensor::neg", [v], [v.type]).output)


def read_values(g: ir.Graph) -> list[ir.Value]:
    """The values ``read_inside`` returned the negations of, as the graph reads them now (a
    negation CSE made a copy of another, equal one reads what that one reads)."""
    found = []
    for out in g.outputs:
        reader = out.node
        while reader.kind == "tensor::copy":
            reader = reader.inputs[0].node
        found.append(reader.inputs[0])
    return found


def if_node(g: ir.Graph, cond: ir.Value, then: list, other: list, types: list) -> ir.Node:
    """An If whose blocks return ``then`` / ``other`` (values defined outside, or callables that
    build the block's values given the graph)."""
    node = g.insert("prim::If", [cond], types, nblocks=2)
    for block, results in zip(node.blocks, (then, other)):
        with g.inserting_before(block):
            values = [r(g) if callable(r) else r for r in results]
        for v in values:
            block.add_return(v)
    return node


def loop_node(g: ir.Graph, trips: ir.Value, carried: list[ir.Value], body) -> ir.Node:
    """A for-loop; ``body(g, i, *params)`` builds the body and returns the next carried values."""
    cond = g.constant(True)
    node = g.insert("prim::Loop", [trips, cond, *carried], [v.type for v in carried], nblocks=1)
    block = node.blocks[0]
    i = block.add_param(INT, "i")
    params = [block.add_param(v.type, v.name) for v in carried]
    with g.inserting_before(block):
        nexts = body(g, i, *params)
        true = g.constant(True)
    block.add_return(true)
    for v in nexts:
        block.add_return(v)
    return node


# -- infrastructure -------------------------------------------------------------------------------
