"""Passes that fold, rewrite and type: constant propagation, canonicalization, inlining,
specialization and shape propagation, and the standard pipeline on a small cell."""

from __future__ import annotations

import numpy as np
import pytest

import ir
import passes
from ir.core import SourceRange
from ir.types import BOOL, FLOAT, INT, NONE, TENSOR, ListType, OptionalType, TensorType, TupleType
from passes import canonicalize, constant_prop, inline, shape_prop
from tests.passes.graph_builders import (
    F43,
    binop,
    count,
    if_node,
    kinds,
    loop_node,
    read_inside,
    read_values,
)


def test_constant_prop_folds_scalar_arithmetic():
    g = ir.Graph()
    s = binop(g, "tensor::add", g.constant(2), g.constant(3), INT)
    m = binop(g, "tensor::minimum", g.constant(1), g.constant(2.5), FLOAT)
    d = binop(g, "tensor::div", g.constant(1), g.constant(0), FLOAT)
    c = binop(g, "tensor::lt", s, g.constant(10), BOOL)
    for v in (s, m, d, c):
        g.add_output(v)
    assert constant_prop.run(g)
    values = [v.constant if v.is_constant else None for v in g.outputs]
    assert values[0] == 5 and type(values[0]) is int
    assert values[1] == 1.0 and type(values[1]) is float
    assert values[2] is None  # 1 / 0 raises at run time, where the user sees it
    assert values[3] is True


def test_constant_prop_leaves_non_constant_inputs():
    g = ir.Graph()
    n = g.add_input(INT, "n")
    g.add_output(binop(g, "tensor::add", n, g.constant(3), INT))
    assert not constant_prop.run(g)
    assert kinds(g) == ["prim::Constant", "tensor::add"]


def test_constant_prop_folds_tuples_and_shape_queries():
    g = ir.Graph()
    x = g.add_input(F43, "x")
    t = g.insert("prim::TupleConstruct", [g.constant(1), g.constant(2.0)],
                 [TupleType((INT, FLOAT))]).output
    g.add_output(g.insert("prim::TupleIndex", [t, g.constant(1)], [FLOAT]).output)
    g.add_output(g.insert("tensor::size", [x, g.constant(-1)], [INT]).output)
    g.add_output(g.insert("tensor::ndim", [x], [INT]).output)
    constant_prop.run(g)
    assert [v.constant for v in g.outputs] == [2.0, 3, 2]


def test_constant_prop_keeps_unknown_dims():
    g = ir.Graph()
    x = g.add_input(TensorType("float32", (None, 3)), "x")
    g.add_output(g.insert("tensor::size", [x, g.constant(0)], [INT]).output)
    assert not constant_prop.run(g)


def test_constant_prop_tensor_ops_need_an_evaluator():
    g = ir.Graph()
    c = g.constant(np.arange(3, dtype=np.float32))
    g.add_output(g.insert("tensor::tanh", [c], [TensorType("float32", (3,))]).output)
    big = g.constant(np.zeros(constant_prop.FOLD_LIMIT + 1, np.float32))
    g.add_output(g.insert("tensor::tanh", [big], [TENSOR]).output)
    registered = constant_prop.get_evaluator()
    try:
        constant_prop.set_evaluator(None)
        assert not constant_prop.run(g)
        constant_prop.set_evaluator(lambda kind, args: getattr(np, kind.split("::")[1])(*args))
        assert constant_prop.run(g)
    finally:
        constant_prop.set_evaluator(registered)
    np.testing.assert_allclose(g.outputs[0].constant, np.tanh(np.arange(3)), rtol=1e-6)
    assert g.outputs[1].node.kind == "tensor::tanh"  # bigger than FOLD_LIMIT: left alone


def test_constant_prop_takes_constant_if_branch():
    g = ir.Graph()
    x = g.add_input(F43, "x")
    node = if_node(g, g.constant(False), [lambda g: binop(g, "tensor::add", x, x, F43)],
                   [lambda g: binop(g, "tensor::mul", x, x, F43)], [F43])
    g.add_output(node.output)
    assert constant_prop.run(g)
    assert "prim::If" not in kinds(g)
    assert g.outputs[0].node.kind == "tensor::mul" and g.outputs[0].node.owner is g.block


def test_constant_prop_removes_loops_that_never_run():
    g = ir.Graph()
    x = g.add_input(F43, "x")
    zero = loop_node(g, g.constant(0), [x], lambda g, i, h: [binop(g, "tensor::mul", h, h, F43)])
    g.add_output(zero.output)
    never = g.insert("prim::Loop", [g.constant(10), g.constant(False), x], [F43], nblocks=1)
    body = never.blocks[0]
    body.add_param(INT)
    h = body.add_param(F43)
    with g.inserting_before(body):
        body.add_return(g.constant(False))
    body.add_return(h)
    g.add_output(never.output)
    assert constant_prop.run(g)
    assert "prim::Loop" not in kinds(g)
    assert g.outputs[0] is x and g.outputs[1] is x


# -- canonicalize ---------------------------------------------------------------------------------
def test_canonicalize_double_transpose():
    g = ir.Graph()
    x = g.add_input(F43, "x")
    none = g.constant(None)
    t1 = g.insert("tensor::transpose", [x, none], [TensorType("float32", (3, 4))]).output
    t2 = g.insert("tensor::transpose", [t1, none], [F43]).output
    axes = g.constant((1, 0))
    p1 = g.insert("tensor::transpose", [x, axes], [TensorType("float32", (3, 4))]).output
    p2 = g.insert("tensor::transpose", [p1, axes], [F43]).output
    g.add_output(t2)
    g.add_output(p2)
    assert canonicalize.run(g)
    assert g.outputs[0] is x
    assert g.outputs[1] is p2  # explicit axes are left alone


def test_canonicalize_identity_arithmetic_when_type_is_kept():
    g = ir.Graph()
    x = g.add_input(F43, "x")
    read_inside(g, [binop(g, "tensor::mul", x, g.constant(1), F43),
                    binop(g, "tensor::add", g.constant(-0.0), x, F43),
                    binop(g, "tensor::sub", x, g.constant(0), F43),
                    binop(g, "tensor::div", x, g.constant(1.0), F43)])
    assert canonicalize.run(g)
    assert all(v is x for v in read_values(g))


def test_canonicalize_keeps_a_float_plus_positive_zero():
    """-0.0 + 0.0 is +0.0: a float plus +0.0 is not itself (an int plus 0 is)."""
    g = ir.Graph()
    x = g.add_input(F43, "x")
    n = g.add_input(TensorType("int64", (4, 3)), "n")
    read_inside(g, [binop(g, "tensor::add", x, g.constant(0.0), F43),
                    binop(g, "tensor::add", g.constant(0), x, F43),
                    binop(g, "tensor::add", n, g.constant(0), n.type)])
    canonicalize.run(g)
    assert [v is x or v is n for v in read_values(g)] == [False, False, True]


def test_canonicalize_identity_arithmetic_keeps_a_new_array_for_the_caller():
    # return x * 1.0 is a new array in Python: mutating it must not change the argument
    g = ir.Graph()
    x = g.add_input(F43, "x")
    outs = [binop(g, "tensor::mul", x, g.constant(1), F43),
            binop(g, "tensor::add", g.constant(0.0), x, F43),
            g.insert("tensor::neg", [g.insert("tensor::neg", [x], [F43]).output], [F43]).output]
    for v in outs:
        g.add_output(v)
    items = g.insert("prim::ListConstruct", [], [ListType(F43)]).output
    g.add_output(items)
    g.insert("prim::ListAppend", [items, binop(g, "tensor::sub", x, g.constant(0), F43)], [])
    canonicalize.run(g)  # the list appended to becomes the literal [x - 0], nothing else
    assert list(g.outputs[:3]) == outs and count(g, "tensor::sub") == 1
    assert count(g, "prim::ListAppend") == 0


def test_canonicalize_keeps_identity_that_changes_type():
    g = ir.Graph()
    x = g.add_input(F43, "x")
    ints = g.add_input(TensorType("int64", (4, 3)), "n")
    unknown = g.add_input(TENSOR, "u")
    ones = g.constant(np.ones((2, 1, 1), np.float32))
    outs = [binop(g, "tensor::mul", x, ones, TensorType("float32", (2, 4, 3))),
            binop(g, "tensor::mul", ints, g.constant(1.0), TensorType("float64", (4, 3))),
            binop(g, "tensor::div", ints, g.constant(1), TensorType("float64", (4, 3))),
            binop(g, "tensor::add", unknown, g.constant(0), TENSOR),
            binop(g, "tensor::mul", x, g.constant(True), F43),
            binop(g, "tensor::mul", x, g.constant(2), F43)]
    for v in outs:
        g.add_output(v)
    assert not canonicalize.run(g)
    assert list(g.outputs) == outs


def test_canonicalize_tuples_reshapes_len_neg_unwrap():
    g = ir.Graph()
    x = g.add_input(F43, "x")
    y = g.add_input(F43, "y")
    opt = g.add_input(OptionalType(F43), "o")
    t = g.insert("prim::TupleConstruct", [x, y], [TupleType((F43, F43))]).output
    a, b = g.insert("prim::TupleUnpack", [t], [F43, F43]).outputs
    second = g.insert("prim::TupleIndex", [t, g.constant(-1)], [F43]).output
    r1 = g.insert("tensor::reshape", [x, g.constant((12,))], [TensorType("float32", (12,))])
    r2 = g.insert("tensor::reshape", [r1.output, g.constant((3, 4))],
                  [TensorType("float32", (3, 4))])
    n = g.insert("prim::len", [t], [INT]).output
    rows = g.insert("prim::len", [x], [INT]).output
    neg = g.insert("tensor::neg", [g.insert("tensor::neg", [y], [F43]).output], [F43]).output
    u1 = g.insert("prim::unchecked_unwrap_optional", [x], [F43]).output
    u2 = g.insert("prim::unchecked_unwrap_optional", [opt], [F43]).output
    tanh = g.insert("tensor::tanh", [neg], [F43]).output
    for v in (a, b, second, r2.output, n, rows, tanh, u1, u2):
        g.add_output(v)
    assert canonicalize.run(g)
    out = g.outputs
    assert (out[0], out[1], out[2]) == (x, y, y)
    assert r2.inputs[0] is x
    assert out[4].constant == 2 and out[5].constant == 4
    assert out[6].node.inputs[0] is y and out[7] is x
    assert out[8].node.kind == "prim::unchecked_unwrap_optional"


def test_canonicalize_reaches_fixed_point():
    g = ir.Graph()
    x = g.add_input(F43, "x")
    v = x
    for _ in range(4):
        v = g.insert("tensor::neg", [v], [F43]).output
    read_inside(g, [v])
    assert canonicalize.run(g)
    assert read_values(g)[0] is x and not canonicalize.run(g)


# -- inline ---------------------------------------------------------------------------------------
def _callee(name: str, body) -> ir.Graph:
    g = ir.Graph(name)
    x = g.add_input(F43, "x")
    g.add_output(body(g, x))
    return g


def test_inline_nested_calls_keeps_sources_and_callees():
    src = SourceRange("cell.py", 3, 4)
    leaf = _callee("leaf", lambda g, x: g.insert("tensor::tanh", [x], [F43], source=src).output)

    def middle_body(g, x):
        c = g.add_input(BOOL, "c")
        node = if_node(g, c, [lambda g: g.insert("prim::CallFunction", [x], [F43],
                                                 {"Subgraph": leaf, "name": "leaf"}).output],
                       [x], [F43])
        return node.output

    middle = _callee("middle", middle_body)
    g = ir.Graph("top")
    x = g.add_input(F43, "x")
    c = g.add_input(BOOL, "c")
    call = g.insert("prim::CallFunction", [x, c], [F43], {"Subgraph": middle, "name": "middle"})
    g.add_output(binop(g, "tensor::add", call.output, call.output, F43))
    assert inline.run(g)
    assert "prim::CallFunction" not in kinds(g)
    tanh = next(n for n in g.walk() if n.kind == "tensor::tanh")
    assert tanh.source == src and tanh.inputs[0] is x
    assert tanh.owner.owner.kind == "prim::If"
    assert count(middle, "prim::CallFunction") == 1  # the callee itself is not changed
    assert not inline.run(g)


def test_inline_stops_at_call_chains_deeper_than_the_limit():
    callee = _callee("leaf", lambda g, x: x)
    for depth in range(inline.MAX_DEPTH + 1):
        inner = callee
        callee = _callee(f"f{depth}", lambda g, x: g.insert(
            "prim::CallFunction", [x], [F43], {"Subgraph": inner, "name": "f"}).output)
    top = ir.Graph()
    x = top.add_input(F43, "x")
    top.add_output(top.insert("prim::CallFunction", [x], [F43], {"Subgraph": callee}).output)
    with pytest.raises(ir.IRError, match="recursion"):
        inline.run(top)


# -- shape-prop -----------------------------------------------------------------------------------
def test_specialize_propagates_through_ops():
    g = ir.Graph()
    x = g.add_input(TENSOR, "x")
    b = g.add_input(TENSOR, "b")
    s = binop(g, "tensor::add", x, b)
    g.add_output(g.insert("tensor::tanh", [s], [TENSOR]).output)
    shape_prop.specialize(g, [F43, TensorType("float32", (3,))])
    assert s.type == F43 and g.outputs[0].type == F43


def test_specialize_rejects_non_subtype_input():
    g = ir.Graph()
    g.add_input(TensorType("float32", (None, 3)), "x")
    with pytest.raises(ir.ShapeError, match=r"input 0 \(%x\)"):
        shape_prop.specialize(g, [TensorType("float32", (4, 5))])


def test_specialize_error_names_source_position():
    g = ir.Graph()
    x, y = g.add_input(TENSOR, "x"), g.add_input(TENSOR, "y")
    g.add_output(g.insert("tensor::add", [x, y], [TENSOR], source=SourceRange("m.py", 7, 8))
                 .output)
    with pytest.raises(ir.ShapeError, match=r"do not broadcast.*m\.py:7:8"):
        shape_prop.specialize(g, [F43, TensorType("float32", (5,))])


def test_shape_prop_if_unifies_branches():
    g = ir.Graph()
    x, y = g.add_input(TENSOR, "x"), g.add_input(TENSOR, "y")
    c = g.add_input(BOOL, "c")
    node = if_node(g, c, [x], [lambda g: g.insert("tensor::tanh", [y], [TENSOR]).output],
                   [TENSOR])
    g.add_output(node.output)
    shape_prop.specialize(g, [F43, TensorType("float32", (5, 3)), BOOL])
    assert node.output.type == TensorType("float32", (None, 3))


def test_shape_prop_loop_with_changing_carried_shape_ends_unknown():
    g = ir.Graph()
    h0 = g.add_input(TENSOR, "h")
    y = g.add_input(TENSOR, "y")
    n = g.add_input(INT, "n")
    loop = loop_node(g, n, [h0], lambda g, i, h: [binop(g, "tensor::add", h, y)])
    g.add_output(loop.output)
    shape_prop.specialize(g, [TensorType("float32", (4,)), TensorType("float32", (3, 1, 4)), INT])
    body = loop.blocks[0]
    # after one trip h is (3, 1, 4), after none it is (4,): only "some float tensor" is sound
    assert loop.output.type == TensorType("float32", None)
    assert body.params[1].type == TensorType("float32", None)


def test_shape_prop_loop_dtype_change_and_stable_shape():
    g = ir.Graph()
    h0 = g.add_input(TENSOR, "h")
    n = g.add_input(INT, "n")
    loop = loop_node(g, n, [h0], lambda g, i, h: [binop(g, "tensor::mul", h, g.constant(2.5))])
    g.add_output(loop.output)
    shape_prop.specialize(g, [TensorType("int64", (4,)), INT])
    assert loop.output.type == TensorType(None, (4,))  # int64 at first, float64 afterwards


def test_shape_prop_loop_settles_to_exact_type():
    g = ir.Graph()
    h0 = g.add_input(TENSOR, "h")
    n = g.add_input(INT, "n")
    loop = loop_node(g, n, [h0], lambda g, i, h: [g.insert("tensor::tanh", [h], [TENSOR]).output])
    g.add_output(loop.output)
    shape_prop.specialize(g, [F43, INT])
    assert loop.output.type == F43 and loop.blocks[0].params[0].type == INT


def test_shape_prop_into_subgraph():
    sub = ir.Graph()
    a, b = sub.add_input(TENSOR, "a"), sub.add_input(TENSOR, "b")
    sub.add_output(binop(sub, "tensor::mul", a, b))
    g = ir.Graph()
    x = g.add_input(TENSOR, "x")
    fused = g.insert("prim::FusionGroup", [x, x], [TENSOR], {"Subgraph": sub})
    g.add_output(fused.output)
    shape_prop.specialize(g, [F43])
    assert fused.output.type == F43 and sub.outputs[0].type == F43


def test_shape_prop_pass_reports_change_once():
    g = ir.Graph()
    x = g.add_input(F43, "x")
    g.add_output(g.insert("tensor::tanh", [x], [TENSOR]).output)
    assert shape_prop.run(g)
    assert not shape_prop.run(g)


def test_optional_and_none_constant_types_survive_pipeline():
    g = ir.Graph()
    x = g.add_input(F43, "x")
    none = g.constant(None, OptionalType(F43))
    g.add_output(x)
    g.add_output(none)
    passes.run_pipeline(g, passes.STANDARD_PIPELINE)
    assert g.outputs[1].type == OptionalType(F43) and g.outputs[1].constant is None
    assert NONE != g.outputs[1].type


def test_standard_pipeline_cleans_a_small_cell():
    g = ir.Graph("cell")
    x = g.add_input(TENSOR, "x")
    h = g.add_input(TENSOR, "h")
    t = g.insert("prim::TupleConstruct", [x, h], [TupleType((TENSOR, TENSOR))]).output
    a, b = g.insert("prim::TupleUnpack", [t], [TENSOR, TENSOR]).outputs
    s1 = binop(g, "tensor::add", a, b)
    s2 = binop(g, "tensor::add", b, a)
    one = g.constant(1)
    m = binop(g, "tensor::mul", s2, one)
    g.add_output(binop(g, "tensor::mul", s1, m))
    shape_prop.specialize(g, [F43, F43])
    assert passes.run_pipeline(g, passes.STANDARD_PIPELINE)
    assert kinds(g) == ["tensor::add", "tensor::mul"]
    assert g.outputs[0].type == F43
