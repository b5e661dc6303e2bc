"""The structural queries and the typed insert the IR offers passes, and O(1) use removal."""

from __future__ import annotations

import pytest

from ir import INT, Graph, ShapeError, TensorType
from ir.value import Use, UseList

F34 = TensorType("float32", (3, 4))


def nested_graph():
    """``x -> loop(i, h) { if i < 2 { t = tanh(h) } } -> neg``; returns the graph and its parts."""
    g = Graph()
    x = g.add_input(F34, "x")
    n = g.add_input(INT, "n")
    loop = g.insert("prim::Loop", [n, g.constant(True), x], [F34], nblocks=1)
    body = loop.blocks[0]
    i = body.add_param(INT, "i")
    h = body.add_param(F34, "h")
    with g.inserting_before(body):
        small = g.insert_typed("tensor::lt", [i, g.constant(2)]).output
        branch = g.insert("prim::If", [small], [F34], nblocks=2)
        with g.inserting_before(branch.blocks[0]):
            t = g.insert_typed("tensor::tanh", [h], names=["t"]).output
        branch.blocks[0].add_return(t)
        branch.blocks[1].add_return(h)
        body.add_return(g.constant(True))
        body.add_return(branch.output)
    after = g.insert_typed("tensor::neg", [loop.output]).output
    g.add_output(after)
    g.verify()
    return g, loop, branch, t, after


def test_ancestor_in_finds_the_node_holding_a_nested_one():
    g, loop, branch, t, after = nested_graph()
    assert t.node.ancestor_in(g.block) is loop
    assert t.node.ancestor_in(loop.blocks[0]) is branch
    assert t.node.ancestor_in(branch.blocks[0]) is t.node
    assert after.node.ancestor_in(loop.blocks[0]) is None
    assert loop.ancestor_in(branch.blocks[1]) is None


def test_is_inside_and_defined_inside():
    g, loop, branch, t, after = nested_graph()
    assert t.node.is_inside(loop) and t.node.is_inside(branch)
    assert not loop.is_inside(loop) and not after.node.is_inside(loop)
    assert loop.blocks[0].params[1].defined_inside(loop)  # a block parameter
    assert not loop.output.defined_inside(loop) and not g.inputs[0].defined_inside(loop)


def test_values_defined_inside_a_node():
    g, loop, branch, t, after = nested_graph()
    inside = loop.values_defined_inside()
    assert set(loop.blocks[0].params) <= inside and t in inside and branch.output in inside
    assert loop.output not in inside and after not in inside and g.inputs[0] not in inside
    assert branch.values_defined_inside() == {t}


def test_insert_typed_types_by_the_op_rule_and_names_outputs():
    g = Graph()
    x = g.add_input(F34, "x")
    y = g.insert_typed("tensor::transpose", [x], names=["y"]).output
    assert y.type == TensorType("float32", (4, 3)) and y.name == "y"
    parts = g.insert_typed("tensor::chunk", [x, g.constant(2), g.constant(1)]).outputs
    assert [p.type for p in parts] == [TensorType("float32", (3, 2))] * 2
    with pytest.raises(ShapeError):
        g.insert_typed("tensor::matmul", [x, x])


def test_create_typed_leaves_the_node_detached():
    g = Graph()
    x = g.add_input(F34, "x")
    node = g.create_typed("tensor::tanh", [x])
    assert node.owner is None and node.output.type == F34 and g.nodes() == []


def test_set_input_drops_the_right_use_without_searching_the_list():
    g = Graph()
    x = g.add_input(F34, "x")
    y = g.add_input(F34, "y")
    node = g.insert_typed("tensor::mul", [x, x])
    keep = g.insert_typed("tensor::neg", [x])

    def no_search(self):
        raise AssertionError("a use was searched for")

    saved = UseList.__iter__
    UseList.__iter__ = no_search  # type: ignore[method-assign]
    try:
        node.set_input(0, y)
        node.erase()
    finally:
        UseList.__iter__ = saved  # type: ignore[method-assign]
    assert [(u.node, u.index) for u in x.uses] == [(keep, 0)]
    assert y.uses == []


def test_use_list_keeps_order_and_iterates_a_snapshot():
    g = Graph()
    x = g.add_input(F34, "x")
    y = g.add_input(F34, "y")
    users = [g.insert_typed("tensor::neg", [x]) for _ in range(3)]
    assert [u.node for u in x.uses] == users and x.uses[1].node is users[1]
    for use in x.uses:  # rewriting while iterating visits every use once
        use.node.set_input(use.index, y)
    assert len(x.uses) == 0 and [u.node for u in y.uses] == users
    assert isinstance(y.uses[0], Use)
