"""ir.alias: which values' memory the caller of a graph can reach."""

from __future__ import annotations

import numpy as np

import ir
from ir.alias import StorageClasses
from ir.registry import all_ops
from ir.types import BOOL, INT, STR, DictType, ListType, TensorType, TupleType

F3 = TensorType("float64", (3,))
F23 = TensorType("float64", (2, 3))


def op(g: ir.Graph, kind: str, inputs: list[ir.Value], t: ir.Type = F3) -> ir.Value:
    return g.insert(kind, inputs, [t]).output


def test_a_new_array_is_its_own_memory_and_a_view_shares_its_base():
    g = ir.Graph()
    x = g.add_input(F23, "x")
    y = op(g, "tensor::tanh", [x], F23)  # new
    row = op(g, "tensor::select", [y, g.constant(0), g.constant(0)])  # a view of y
    z = op(g, "tensor::mul", [x, g.constant(2.0)], F23)  # new, read only inside
    s = op(g, "tensor::sum", [z, g.constant(None)], TensorType("float64", ()))
    g.add_output(row)
    g.add_output(s)
    c = StorageClasses(g)
    assert c.escapes(row) and c.escapes(y)
    assert not c.escapes(x) and not c.escapes(z)


def test_items_of_a_returned_container_escape_but_not_the_other_way():
    g = ir.Graph()
    x = g.add_input(F3, "x")
    a = op(g, "tensor::tanh", [x])
    b = op(g, "tensor::exp", [x])
    lst = g.insert("prim::ListConstruct", [a, b], [ListType(F3)]).output  # holds a returned a
    cat = op(g, "tensor::cat", [lst, g.constant(0)], TensorType("float64", (6,)))
    t = g.insert("prim::TupleConstruct", [a, cat], [TupleType((F3, cat.type))]).output
    g.add_output(t)
    c = StorageClasses(g)
    assert c.escapes(a) and c.escapes(cat) and c.escapes(t)
    assert not c.escapes(lst)  # read by cat only: the list itself never reaches the caller
    assert c.escapes(b)  # one location for a list's items


def test_what_is_stored_into_a_mutable_argument_escapes():
    g = ir.Graph()
    x = g.add_input(F3, "x")
    out = g.add_input(ListType(F3), "out")
    d = g.add_input(DictType(STR, F3), "d")
    a = op(g, "tensor::tanh", [x])
    b = op(g, "tensor::exp", [x])
    n = op(g, "tensor::neg", [x])
    g.insert("prim::ListAppend", [out, a], [])
    g.insert("prim::DictSetItem", [d, g.constant("k"), b], [])
    g.add_output(op(g, "tensor::add", [n, n]))
    c = StorageClasses(g)
    assert c.escapes(a) and c.escapes(b) and not c.escapes(n)


def test_if_and_loop_results_are_the_values_they_may_be():
    g = ir.Graph()
    x = g.add_input(F3, "x")
    cond = g.add_input(BOOL, "c")
    k = op(g, "tensor::tanh", [x])
    node = g.insert("prim::If", [cond], [F3], nblocks=2)
    with g.inserting_before(node.blocks[0]):
        then = op(g, "tensor::exp", [x])
    node.blocks[0].add_return(then)
    node.blocks[1].add_return(k)
    loop = g.insert("prim::Loop", [g.constant(3), g.constant(True), node.output], [F3], nblocks=1)
    body = loop.blocks[0]
    body.add_param(INT, "i")
    h = body.add_param(F3, "h")
    with g.inserting_before(body):
        step = op(g, "tensor::sin", [h])
        inside = op(g, "tensor::cos", [h])
        true = g.constant(True)
    body.add_return(true)
    body.add_return(step)
    g.add_output(loop.output)
    c = StorageClasses(g)
    assert all(c.escapes(v) for v in (then, k, node.output, h, step, loop.output))
    assert not c.escapes(inside) and not c.escapes(x)


def test_constants_and_scalars():
    g = ir.Graph()
    x = g.add_input(F3, "x")
    zeros = g.constant(np.zeros(3))
    kept = g.constant(np.ones(3))
    g.add_output(zeros)
    g.add_output(op(g, "tensor::mul", [x, kept]))
    g.add_output(g.constant(2))
    c = StorageClasses(g)
    assert c.escapes(zeros) and not c.escapes(kept)
    assert not c.escapes(g.outputs[2])  # an int holds no memory


def test_join_records_a_rewrite():
    g = ir.Graph()
    x = g.add_input(F3, "x")
    a = op(g, "tensor::tanh", [x])
    b = op(g, "tensor::tanh", [x])
    g.add_output(op(g, "tensor::neg", [a]))
    g.add_output(b)
    c = StorageClasses(g)
    assert not c.escapes(a)
    c.join(a, b)
    assert c.escapes(a)


def test_view_ops_are_the_ones_numpy_may_return_a_view_from():
    """Each ``tensor::`` op without the VIEW trait returns a new array (spot checks of ops that
    look like they could return a view: a future view op must declare the trait)."""
    views = {o.kind for o in all_ops() if o.is_view}
    assert {"tensor::select", "tensor::slice", "tensor::transpose", "tensor::reshape",
            "tensor::chunk", "tensor::split", "tensor::unbind", "tensor::squeeze",
            "tensor::expand_dims", "tensor::broadcast_to", "tensor::sum_to",
            "tensor::contiguous", "tensor::dropout"} <= views
    assert not {"tensor::cat", "tensor::stack", "tensor::matmul", "tensor::sum",
                "tensor::astype", "tensor::add"} & views


def test_tuple_elements_have_their_own_locations():
    g = ir.Graph()
    x = g.add_input(F3, "x")
    a = op(g, "tensor::tanh", [x])
    b = op(g, "tensor::exp", [x])
    t = g.insert("prim::TupleConstruct", [a, b], [TupleType((F3, F3))]).output
    first = g.insert("prim::TupleIndex", [t, g.constant(-2)], [F3]).output
    saved = g.insert("prim::ListConstruct", [first], [ListType(F3)]).output
    g.add_output(t)
    g.add_output(saved)
    c = StorageClasses(g)
    assert c.overlap(t, [saved]) == (True, None)  # a is also saved; b is not
    assert c.overlap(b, [saved]) is None and c.overlap(a, [saved]) is True
    loose = g.insert("prim::ListConstruct", [t], [ListType(t.type)]).output
    items = g.insert("prim::ListIndex", [loose, g.constant(0)], [t.type]).output
    g.insert("prim::TupleUnpack", [items], [F3, F3])
    c = StorageClasses(g)
    assert c.overlap(t, [saved]) == (True, None)


def test_sum_to_shares_its_input_only_when_the_shapes_can_agree():
    from ir.alias import may_share_input
    g = ir.Graph()
    x = g.add_input(F23, "x")
    same = g.insert("tensor::sum_to", [x, g.constant((2, 3))], [F23])
    summed = g.insert("tensor::sum_to", [x, g.constant((3,))], [F3])
    assert may_share_input(same) and not may_share_input(summed)


def test_a_view_shares_no_memory_with_its_shape_argument():
    # uniting the result with its list of ints made a cycle that ``unite`` recursed into
    g = ir.Graph()
    x = g.add_input(F23, "x")
    shape = g.insert("prim::ListConstruct", [g.constant(2), g.constant(3)],
                     [ListType(INT)]).output
    y = op(g, "tensor::sum_to", [x, shape], F23)
    g.add_output(y)
    c = StorageClasses(g)
    assert c.overlap(y, [x]) and not c.overlap(y, [shape])
