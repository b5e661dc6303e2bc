"""The cleanup passes and the pass infrastructure, on graphs built through the IR API."""

from __future__ import annotations

import numpy as np
import pytest

import ir
import passes
from ir.types import BOOL, INT, TENSOR, ListType, TensorType, TupleType
from passes import cse, dce
from tests.passes.graph_builders import (
    CLEANUP_PASSES,
    F43,
    binop,
    count,
    if_node,
    kinds,
    loop_node,
    read_inside,
    read_values,
)


def test_registry_names_every_pass():
    assert set(passes.all_passes()) >= CLEANUP_PASSES
    assert passes.get_pass("dce") is dce.run
    for name in passes.STANDARD_PIPELINE.split(","):
        passes.get_pass(name)


def test_unknown_pass_lists_known_names():
    g = ir.Graph()
    with pytest.raises(ValueError, match="unknown pass 'fold'.*constant-prop.*dce"):
        passes.run_pipeline(g, "dce,fold")


def _graph_with_dead_node() -> ir.Graph:
    g = ir.Graph()
    x = g.add_input(F43, "x")
    binop(g, "tensor::add", x, x, F43)
    g.add_output(x)
    return g


def test_pipeline_accepts_string_and_list():
    g = _graph_with_dead_node()
    assert passes.run_pipeline(g, "cse, dce") is True
    assert kinds(g) == []
    assert passes.run_pipeline(g, ["cse", "dce"]) is False


def test_disable_context_manager_skips_pass():
    g = _graph_with_dead_node()
    with passes.disable("dce"):
        assert passes.run_pipeline(g, "dce") is False
        assert kinds(g) == ["tensor::add"]
    assert passes.run_pipeline(g, "dce") is True


def test_disable_from_environment(monkeypatch):
    g = _graph_with_dead_node()
    monkeypatch.setenv("RNNSCRIPT_DISABLE_PASSES", "cse,dce")
    passes.run_pipeline(g, "dce")
    assert kinds(g) == ["tensor::add"]


def test_disable_unknown_name_raises():
    with pytest.raises(ValueError, match="unknown pass"), passes.disable("nope"):
        pass


def test_log_prints_graph_after_each_pass(monkeypatch, capsys):
    monkeypatch.setenv("RNNSCRIPT_LOG", "passes")
    g = _graph_with_dead_node()
    passes.run_pipeline(g, "dce,cse")
    err = capsys.readouterr().err
    assert "after dce (changed)" in err
    assert "after cse (unchanged)" in err
    assert err.index("after dce") < err.index("after cse")
    assert "graph(%x : Float(4, 3))" in err


def test_no_log_without_environment(monkeypatch, capsys):
    monkeypatch.delenv("RNNSCRIPT_LOG", raising=False)
    passes.run_pipeline(_graph_with_dead_node(), "dce")
    assert capsys.readouterr().err == ""


def test_verifier_runs_after_each_pass(monkeypatch):
    def corrupt(graph: ir.Graph) -> bool:
        graph.block.nodes[0].outputs[0].type = INT  # tensor::add of tensors cannot give an int
        return True

    monkeypatch.setenv("RNNSCRIPT_VERIFY", "1")
    monkeypatch.setitem(passes.PASSES, "corrupt", corrupt)
    g = ir.Graph()
    x = g.add_input(F43, "x")
    g.add_output(binop(g, "tensor::add", x, x, F43))
    with pytest.raises(ir.VerifyError):
        passes.run_pipeline(g, "corrupt")


# -- dce ------------------------------------------------------------------------------------------
def test_dce_removes_unused_pure_and_traitless_ops():
    g = ir.Graph()
    x = g.add_input(F43, "x")
    lst = g.add_input(ListType(TENSOR), "l")
    binop(g, "tensor::add", x, x, F43)
    g.insert("prim::ListIndex", [lst, g.constant(0)], [TENSOR])
    g.insert("tensor::dropout", [x, g.constant(0.5), g.constant(True)], [F43])
    g.add_output(x)
    assert dce.run(g)
    assert kinds(g) == []


def test_dce_keeps_side_effects():
    g = ir.Graph()
    x = g.add_input(F43, "x")
    lst = g.add_input(ListType(TENSOR), "l")
    g.insert("prim::ListAppend", [lst, x], [])
    g.insert("prim::RaiseException", [g.constant("boom")], [])
    g.add_output(x)
    dce.run(g)
    assert kinds(g) == ["prim::ListAppend", "prim::Constant", "prim::RaiseException"]


def test_dce_prunes_unused_if_outputs():
    g = ir.Graph()
    x = g.add_input(F43, "x")
    c = g.add_input(BOOL, "c")
    node = if_node(g, c, [lambda g: binop(g, "tensor::add", x, x, F43), x],
                   [x, lambda g: binop(g, "tensor::mul", x, x, F43)], [F43, F43])
    g.add_output(node.outputs[0])
    assert dce.run(g)
    assert len(node.outputs) == 1 and len(node.blocks[1].returns) == 1
    assert "tensor::mul" not in kinds(g) and "tensor::add" in kinds(g)


def test_dce_removes_unused_if_without_effects_but_keeps_raising_one():
    g = ir.Graph()
    x = g.add_input(F43, "x")
    c = g.add_input(BOOL, "c")
    if_node(g, c, [lambda g: binop(g, "tensor::add", x, x, F43)], [x], [F43])
    raising = g.insert("prim::If", [c], [], nblocks=2)
    with g.inserting_before(raising.blocks[0]):
        g.insert("prim::RaiseException", [g.constant("bad")], [])
    g.add_output(x)
    dce.run(g)
    assert count(g, "prim::If") == 1 and count(g, "prim::RaiseException") == 1


def test_dce_drops_loop_carried_value_that_only_feeds_itself():
    g = ir.Graph()
    x = g.add_input(F43, "x")
    n = g.add_input(INT, "n")
    loop = loop_node(g, n, [x, x], lambda g, i, h, acc: [
        binop(g, "tensor::mul", h, h, F43), binop(g, "tensor::add", acc, h, F43)])
    g.add_output(loop.outputs[0])
    assert dce.run(g)
    assert len(loop.outputs) == 1 and len(loop.inputs) == 3
    assert len(loop.blocks[0].params) == 2
    assert "tensor::add" not in kinds(g) and "tensor::mul" in kinds(g)


def test_dce_makes_a_value_every_step_passes_on_the_loops_input():
    """A carried value each step passes on unchanged (a reverse loop's ``grad_loss``) is the
    loop's input for it, in the body (through a view too) and after the loop."""
    g = ir.Graph()
    x = g.add_input(F43, "x")
    g0 = g.add_input(F43, "g0")
    n = g.add_input(INT, "n")

    def body(g, i, h, grad):
        view = g.insert("tensor::transpose", [grad, g.constant((1, 0))],
                        [TensorType("float32", (3, 4))]).output
        back = g.insert("tensor::transpose", [view, g.constant((1, 0))], [F43]).output
        return [binop(g, "tensor::mul", h, back, F43), grad]

    loop = loop_node(g, n, [x, g0], body)
    g.add_output(loop.outputs[0])
    g.add_output(loop.outputs[1])
    assert dce.run(g)
    assert len(loop.outputs) == 1 and len(loop.blocks[0].params) == 2
    assert g.outputs[1] is g0
    (mul,) = [v for v in loop.blocks[0].nodes if v.kind == "tensor::mul"]
    assert mul.inputs[1].node.inputs[0].node.inputs[0] is g0


def test_dce_keeps_a_value_passed_on_that_a_step_writes():
    g = ir.Graph()
    x = g.add_input(F43, "x")
    n = g.add_input(INT, "n")

    def body(g, i, buf):  # buf[i] = x[0]: the next step reads what this one wrote
        row = g.insert("tensor::select", [x, g.constant(0), g.constant(0)],
                       [TensorType("float32", (3,))]).output
        g.insert("tensor::write_slot", [buf, g.constant(0), i, row], [])
        return [buf]

    loop = loop_node(g, n, [x], body)
    g.add_output(loop.outputs[0])
    dce.run(g)
    assert len(loop.outputs) == 1 and g.outputs[0] is loop.outputs[0]


@pytest.mark.parametrize("via", ["tuple", "list", "carry"])
def test_dce_keeps_a_value_passed_on_that_a_step_writes_through_another_name(via):
    """A carried value a step keeps elsewhere (a tuple, a list, another carried value) may be
    written through that name: it stays carried."""
    g = ir.Graph()
    x, buf0 = g.add_input(F43, "x"), g.add_input(F43, "buf")
    n, lst = g.add_input(INT, "n"), g.add_input(ListType(F43), "l")

    def body(g, i, buf, other):
        row = g.insert("tensor::select", [x, g.constant(0), g.constant(0)],
                       [TensorType("float32", (3,))]).output
        if via == "tuple":
            t = g.insert("prim::TupleConstruct", [buf], [TupleType((F43,))]).output
            alias = g.insert("prim::TupleIndex", [t, g.constant(0)], [F43]).output
        elif via == "list":
            g.insert("prim::ListAppend", [lst, buf], [])
            alias = g.insert("prim::ListIndex", [lst, g.constant(-1)], [F43]).output
        else:  # the next step's other carried value is buf: that step writes it
            alias = other
        g.insert("tensor::write_slot", [alias, g.constant(0), i, row], [])
        return [buf, buf]

    loop = loop_node(g, n, [buf0, buf0], body)
    g.add_output(loop.outputs[0])
    g.add_output(loop.outputs[1])
    dce.run(g)
    assert len(loop.outputs) == 2 and g.outputs[0] is loop.outputs[0]


def test_dce_keeps_carried_value_a_side_effect_reads():
    g = ir.Graph()
    x = g.add_input(F43, "x")
    n = g.add_input(INT, "n")
    lst = g.add_input(ListType(TENSOR), "l")

    def body(g, i, h):
        g.insert("prim::ListAppend", [lst, h], [])
        return [binop(g, "tensor::mul", h, h, F43)]

    loop = loop_node(g, n, [x], body)
    g.add_output(x)
    dce.run(g)
    assert len(loop.outputs) == 1 and loop.owner is not None
    assert "tensor::mul" in kinds(g)


def test_dce_removes_append_only_list():
    g = ir.Graph()
    x = g.add_input(F43, "x")
    n = g.add_input(INT, "n")
    lst = g.insert("prim::ListConstruct", [], [ListType(TENSOR)]).output

    def body(g, i):
        g.insert("prim::ListAppend", [lst, binop(g, "tensor::add", x, x, F43)], [])
        return []

    loop_node(g, n, [], body)
    g.add_output(x)
    assert dce.run(g)
    assert kinds(g) == []


def test_dce_keeps_list_that_escapes():
    g = ir.Graph()
    x = g.add_input(F43, "x")
    kept = g.insert("prim::ListConstruct", [], [ListType(TENSOR)]).output
    inner = g.insert("prim::ListConstruct", [], [ListType(TENSOR)]).output
    outer = g.insert("prim::ListConstruct", [], [ListType(ListType(TENSOR))]).output
    g.insert("prim::ListAppend", [kept, x], [])
    g.insert("prim::ListAppend", [inner, x], [])
    g.insert("prim::ListAppend", [outer, inner], [])  # inner escapes into outer
    g.add_output(kept)
    dce.run(g)
    # kept is returned; inner is reachable through outer, but outer itself is never read
    assert count(g, "prim::ListConstruct") == 1
    assert g.outputs[0] is kept and len(kept.uses) == 2


# -- cse ------------------------------------------------------------------------------------------
def test_cse_merges_pure_and_commutative():
    g = ir.Graph()
    x, y = g.add_input(F43, "x"), g.add_input(F43, "y")
    a = binop(g, "tensor::add", x, y, F43)
    b = binop(g, "tensor::add", y, x, F43)
    s1 = binop(g, "tensor::sub", x, y, F43)
    s2 = binop(g, "tensor::sub", y, x, F43)
    read_inside(g, [a, b, s1, s2])
    assert cse.run(g)
    read = read_values(g)
    assert read[0] is read[1]
    assert read[2] is not read[3]
    assert count(g, "tensor::add") == 1 and count(g, "tensor::sub") == 2


def test_cse_keeps_two_arrays_the_caller_receives():
    g = ir.Graph()
    x = g.add_input(F43, "x")
    two = g.constant(2.0)
    a, b = binop(g, "tensor::mul", x, two, F43), binop(g, "tensor::mul", x, two, F43)
    c, d = binop(g, "tensor::add", x, two, F43), binop(g, "tensor::add", x, two, F43)
    z1 = g.constant(np.zeros(3))
    z2 = g.constant(np.zeros(3))
    t = g.insert("prim::TupleConstruct", [a, c, z1], [TupleType((F43, F43, z1.type))]).output
    row = g.insert("tensor::select", [b, g.constant(0), g.constant(0)],
                   [TensorType("float32", (3,))]).output
    first, second = (g.insert("tensor::select", [x, g.constant(0), g.constant(1)],
                              [TensorType("float32", (3,))]).output for _ in range(2))
    g.add_output(t)
    g.add_output(row)  # a view of b: b's memory reaches the caller too
    g.add_output(g.insert("tensor::neg", [d], [F43]).output)
    g.add_output(z2)
    g.add_output(first)
    g.add_output(second)
    assert cse.run(g)
    copy = row.node.inputs[0].node  # b is computed once, as a copy of a
    assert copy.kind == "tensor::copy" and copy.inputs[0] is a and count(g, "tensor::mul") == 1
    assert count(g, "tensor::add") == 1 and g.outputs[2].node.inputs[0] is c  # d: read inside
    assert z1.node.owner is not None and z2.node.owner is not None
    assert first.node.owner is not None and second.node.owner is not None  # two views, as written


def test_cse_constants_compare_by_value_and_type():
    g = ir.Graph()
    ones32 = np.ones(3, np.float32)
    values = [g.constant(1), g.constant(1), g.constant(1.0), g.constant(True), g.constant(-0.0),
              g.constant(0.0), g.constant(ones32), g.constant(ones32.copy()),
              g.constant(np.ones(3, np.float64)), g.constant(float("nan")),
              g.constant(float("nan"))]
    read_inside(g, values)
    cse.run(g)
    out = read_values(g)
    assert out[0] is out[1]
    assert len({id(v) for v in out[1:6]}) == 5
    assert out[6] is out[7] and out[8] is not out[7]
    assert out[9] is out[10]


def test_cse_never_merges_impure_or_fresh():
    g = ir.Graph()
    x = g.add_input(F43, "x")
    p, t = g.constant(0.5), g.constant(True)
    d1 = g.insert("tensor::dropout", [x, p, t], [F43]).output
    d2 = g.insert("tensor::dropout", [x, p, t], [F43]).output
    l1 = g.insert("prim::ListConstruct", [x], [ListType(F43)]).output
    l2 = g.insert("prim::ListConstruct", [x], [ListType(F43)]).output
    for v in (d1, d2, l1, l2):
        g.add_output(v)
    assert not cse.run(g)
    assert count(g, "tensor::dropout") == 2 and count(g, "prim::ListConstruct") == 2


def test_cse_is_scoped_by_block():
    g = ir.Graph()
    x = g.add_input(F43, "x")
    c = g.add_input(BOOL, "c")
    outer = binop(g, "tensor::mul", x, x, F43)
    node = if_node(g, c, [lambda g: binop(g, "tensor::mul", x, x, F43),
                          lambda g: binop(g, "tensor::sub", x, x, F43)],
                   [lambda g: binop(g, "tensor::sub", x, x, F43), x], [F43, F43])
    after = binop(g, "tensor::sub", x, x, F43)
    read_inside(g, [outer, node.outputs[1], after, node.outputs[0]])
    assert cse.run(g)
    then, other = node.blocks
    assert then.returns[0] is outer  # outer value reused inside the block
    assert then.returns[1] is not other.returns[0]  # siblings don't share
    assert after.node.owner is g.block and after is read_values(g)[2]  # inner not visible outside
