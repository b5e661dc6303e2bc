"""The verifier accepts well-formed graphs and names the node and the problem in malformed ones."""

import random

import numpy as np
import pytest

from ir import (
    BOOL,
    INT,
    TENSOR,
    Graph,
    ListType,
    Node,
    OptionalType,
    SourceRange,
    TensorType,
    TupleType,
    Use,
    VerifyError,
)
from ir.core import Block
from tests.helpers import emit
from tests.programs.graphs import lstm_pointwise_graph as lstm_cell_graph

F34 = TensorType("float32", (3, 4))
F64x512 = TensorType("float32", (64, 512))


def if_graph():
    """``y = tanh(x) if n > 0 else x``; returns the graph and the If node."""
    g = Graph("choose")
    x = g.add_input(F34, "x")
    n = g.add_input(INT, "n")
    cond = emit(g, "tensor::gt", n, g.constant(0), name="cond")
    node = g.insert("prim::If", [cond], [F34], nblocks=2, names=["y"])
    with g.inserting_before(node.blocks[0]):
        node.blocks[0].add_return(emit(g, "tensor::tanh", x, name="a"))
    node.blocks[1].add_return(x)
    g.add_output(node.output)
    return g, node


def loop_graph():
    """``for i in range(n): h = h * 2.0; if i < 2: h = tanh(h)``; returns graph and Loop node."""
    g = Graph("loop")
    x = g.add_input(F34, "x")
    n = g.add_input(INT, "n")
    loop = g.insert("prim::Loop", [n, g.constant(True), x], [F34], nblocks=1, names=["h"])
    body = loop.blocks[0]
    body.add_param(INT, "i")
    h = body.add_param(F34, "h")
    with g.inserting_before(body):
        h2 = emit(g, "tensor::mul", h, g.constant(2.0), name="h")
        small = emit(g, "tensor::lt", body.params[0], g.constant(2), name="small")
        inner = g.insert("prim::If", [small], [F34], nblocks=2, names=["h"])
        with g.inserting_before(inner.blocks[0]):
            inner.blocks[0].add_return(emit(g, "tensor::tanh", h2))
        inner.blocks[1].add_return(h2)
        body.add_return(g.constant(True))
        body.add_return(inner.output)
    g.add_output(loop.output)
    return g, loop


def fusion_graph():
    """``z = FusionGroup(x, y)`` whose subgraph computes ``sigmoid(x) * y``."""
    sub = Graph()
    a, b = sub.add_input(F34, "a"), sub.add_input(F34, "b")
    sub.add_output(emit(sub, "tensor::mul", emit(sub, "tensor::sigmoid", a), b))
    g = Graph("fused")
    x, y = g.add_input(F34, "x"), g.add_input(F34, "y")
    node = g.insert("prim::FusionGroup", [x, y], [F34], {"Subgraph": sub}, names=["z"])
    g.add_output(node.output)
    return g, node


# -- valid graphs ------------------------------------------------------------------------------
@pytest.mark.parametrize("build", [lstm_cell_graph, lambda: if_graph()[0],
                                   lambda: loop_graph()[0], lambda: fusion_graph()[0]])
def test_valid_graphs_pass(build):
    g = build()
    g.verify()
    g.clone().verify()


def test_valid_constants_of_every_form_pass():
    g = Graph()
    outs = [g.constant(v) for v in (1, 2.5, True, "s", None, (1, 2.0), [1, 2],
                                    np.zeros((2, 3), np.float32))]
    outs.append(g.constant(None, OptionalType(TENSOR)))
    outs.append(g.constant([], ListType(TENSOR)))
    outs.append(g.constant(np.ones(3), TENSOR))
    for v in outs:
        g.add_output(v)
    g.verify()


def test_nested_subgraph_inside_loop_passes():
    g, loop = loop_graph()
    _, fused = fusion_graph()
    body = loop.blocks[0]
    h = body.params[1]
    node = g.create("prim::FusionGroup", [h, h], [F34], {"Subgraph": fused.subgraph.clone()})
    node.insert_before(body.return_node)
    body.return_node.set_input(1, node.output)
    g.verify()


def test_unknown_types_are_not_contradictions():
    g = Graph()
    x, y = g.add_input(TENSOR, "x"), g.add_input(TensorType("float32", (None, 4)), "y")
    node = g.insert("tensor::add", [x, y], [TensorType("float32", (8, 4))], names=["z"])
    g.add_output(node.output)
    g.verify()


# -- malformed graphs: SSA -------------------------------------------------------------------------
def test_use_before_definition():
    g = Graph()
    x = g.add_input(F34, "x")
    t = emit(g, "tensor::tanh", x, name="t")
    user = g.create("tensor::neg", [t], [F34], names=["early"])
    user.insert_before(t.node)
    g.add_output(user.output)
    with pytest.raises(VerifyError, match=r"tensor::neg \(%early\): input 0 \(%t\) is used "
                                          r"before it is defined") as info:
        g.verify()
    assert info.value.node is user


def test_value_of_inner_block_used_outside():
    g, node = if_graph()
    inner = node.blocks[0].returns[0]
    g.set_outputs([inner])
    with pytest.raises(VerifyError, match=r"graph return .*%a\) is defined inside a nested "
                                          r"block of prim::If \(%y\)"):
        g.verify()


def test_value_of_sibling_branch_is_not_visible():
    g, node = if_graph()
    a = node.blocks[0].returns[0]
    node.blocks[1].set_returns([a])
    with pytest.raises(VerifyError, match=r"return of block 1 of prim::If.*%a\) is defined "
                                          r"inside a nested block"):
        g.verify()


def test_value_from_another_graph():
    other = Graph()
    foreign = other.add_input(F34, "foreign")
    g = Graph()
    x = g.add_input(F34, "x")
    g.add_output(emit(g, "tensor::add", x, foreign, name="s"))
    with pytest.raises(VerifyError, match=r"tensor::add \(%s\): input 1 \(%foreign\) is not "
                                          r"defined in this graph"):
        g.verify()


def test_value_defined_twice():
    g = Graph()
    x = g.add_input(F34, "x")
    t = emit(g, "tensor::tanh", x, name="t")
    dup = g.insert("tensor::tanh", [x])
    dup.outputs.append(t)  # corruption: the same Value listed as an output of two nodes
    with pytest.raises(VerifyError, match=r"tensor::tanh .*does not point back to it"):
        g.verify()


def test_message_names_source_position():
    g = Graph()
    x = g.add_input(F34, "x")
    later = g.create("tensor::exp", [x], [F34], names=["e"])
    user = g.create("tensor::neg", [later.output], [F34], names=["n"],
                    source=SourceRange("cell.py", 3, 4))
    g.block.append(user)
    g.block.append(later)
    with pytest.raises(VerifyError, match=r"tensor::neg \(%n\) at cell.py:3:4: input 0"):
        g.verify()


# -- malformed graphs: schema ----------------------------------------------------------------------
def test_unknown_op_kind():
    g = Graph()
    x = g.add_input(F34, "x")
    g.add_output(g.insert("tensor::frobnicate", [x], [F34], names=["y"]).output)
    with pytest.raises(VerifyError, match=r"tensor::frobnicate \(%y\): unknown op kind"):
        g.verify()


def test_wrong_input_count():
    g = Graph()
    x = g.add_input(F34, "x")
    g.add_output(g.insert("tensor::add", [x], [F34], names=["y"]).output)
    with pytest.raises(VerifyError, match=r"tensor::add \(%y\): wrong number of inputs.*"
                                          r"takes 2 inputs, got 1"):
        g.verify()


def test_tensor_passed_where_int_expected():
    g = Graph()
    t = g.add_input(TupleType((F34, F34)), "t")
    x = g.add_input(F34, "x")
    g.add_output(g.insert("prim::TupleIndex", [t, x], [F34], names=["e"]).output)
    with pytest.raises(VerifyError, match=r"prim::TupleIndex \(%e\): input 1 \(%x : "
                                          r"Float\(3, 4\)\) is passed as argument 'i', which "
                                          r"expects int"):
        g.verify()


def test_wrong_block_count():
    g = Graph()
    c = g.add_input(BOOL, "c")
    node = g.insert("prim::If", [c], [], nblocks=1)
    del node
    with pytest.raises(VerifyError, match=r"prim::If: has 1 blocks, prim::If has 2"):
        g.verify()


def test_constant_value_type_mismatch():
    g = Graph()
    g.add_output(g.constant(1.5, INT, name="k"))
    with pytest.raises(VerifyError, match=r"prim::Constant \(%k\): constant value 1.5 has type "
                                          r"float, which is not a subtype of the output type int"):
        g.verify()


def test_constant_without_value():
    g = Graph()
    g.add_output(g.insert("prim::Constant", [], [INT], names=["k"]).output)
    with pytest.raises(VerifyError, match=r"prim::Constant \(%k\): a constant without a 'value'"):
        g.verify()


def test_none_constant_needs_optional_output():
    g = Graph()
    g.add_output(g.constant(None, TENSOR, name="k"))
    with pytest.raises(VerifyError, match=r"prim::Constant \(%k\).*NoneType.*Tensor"):
        g.verify()


def test_output_type_contradicts_type_rule():
    g = Graph()
    x = g.add_input(F34, "x")
    node = g.insert("tensor::add", [x, x], [TensorType("float64", (3, 4))], names=["y"])
    g.add_output(node.output)
    with pytest.raises(VerifyError, match=r"tensor::add \(%y\): output %y : Double\(3, 4\) "
                                          r"contradicts the inferred type Float\(3, 4\)"):
        g.verify()


def test_shape_error_from_type_rule_is_a_verify_error():
    g = Graph()
    x = g.add_input(F34, "x")
    y = g.add_input(TensorType("float32", (5,)), "y")
    g.add_output(g.insert("tensor::mul", [x, y], [TENSOR], names=["p"]).output)
    with pytest.raises(VerifyError, match=r"tensor::mul \(%p\): its type rule rejects the "
                                          r"inputs: shapes \(3, 4\), \(5\) do not broadcast"):
        g.verify()


# -- malformed graphs: control flow ---------------------------------------------------------------
def test_if_branch_arity_mismatch():
    g, node = if_graph()
    node.blocks[1].set_returns([])
    with pytest.raises(VerifyError, match=r"prim::If \(%y\): block 1 returns 0 values but the "
                                          r"node has 1 outputs"):
        g.verify()


def test_if_branch_type_not_subtype_of_output():
    g, node = if_graph()
    node.blocks[1].set_returns([g.inputs[1]])
    with pytest.raises(VerifyError, match=r"prim::If \(%y\): block 1 result 0 %n : int is not "
                                          r"a subtype of the output type Float\(3, 4\)"):
        g.verify()


def test_if_block_with_params():
    g, node = if_graph()
    node.blocks[0].add_param(INT, "p")
    with pytest.raises(VerifyError, match=r"prim::If \(%y\): block 0 has 1 parameters"):
        g.verify()


def test_if_condition_of_wrong_type():
    g, node = if_graph()
    with g.inserting_before(node):
        node.set_input(0, g.constant("yes"))
    with pytest.raises(VerifyError, match=r"prim::If \(%y\): condition .* : str is not bool"):
        g.verify()


def test_loop_block_param_count_wrong():
    g, loop = loop_graph()
    loop.blocks[0].add_param(INT, "extra")
    with pytest.raises(VerifyError, match=r"prim::Loop \(%h\): loop body has 3 parameters, "
                                          r"expected 2"):
        g.verify()


def test_loop_condition_of_wrong_type():
    g, loop = loop_graph()
    with g.inserting_before(loop):
        loop.set_input(1, g.constant(1.0, name="one"))
    with pytest.raises(VerifyError, match=r"prim::Loop \(%h\): initial condition %one : float "
                                          r"is not a bool"):
        g.verify()


def test_loop_trip_count_tensor():
    g, loop = loop_graph()
    loop.set_input(0, g.inputs[0])
    with pytest.raises(VerifyError, match=r"prim::Loop \(%h\): .*%x : Float\(3, 4\)"):
        g.verify()


def test_loop_body_condition_of_wrong_type():
    g, loop = loop_graph()
    body = loop.blocks[0]
    body.return_node.set_input(0, body.params[1])
    with pytest.raises(VerifyError, match=r"prim::Loop \(%h\): loop body's condition %h : "
                                          r"Float\(3, 4\) is not a bool"):
        g.verify()


def test_loop_outputs_count_wrong():
    g, loop = loop_graph()
    loop.add_output(F34, "extra")
    with pytest.raises(VerifyError, match=r"prim::Loop \(%h, %extra\): has 2 outputs for 1 "
                                          r"carried values"):
        g.verify()


def test_loop_carried_type_mismatch():
    g, loop = loop_graph()
    body = loop.blocks[0]
    with g.inserting_before(body.return_node):
        body.return_node.set_input(1, g.constant(3, name="three"))
    with pytest.raises(VerifyError, match=r"prim::Loop \(%h\): carried value 0: body result "
                                          r"%three : int is not a subtype"):
        g.verify()


# -- malformed graphs: subgraphs -------------------------------------------------------------------
def test_subgraph_arity_mismatch():
    g, node = fusion_graph()
    node.remove_input(1)
    with pytest.raises(VerifyError, match=r"prim::FusionGroup \(%z\): has 1 inputs but its "
                                          r"subgraph takes 2"):
        g.verify()


def test_subgraph_output_count_mismatch():
    g, node = fusion_graph()
    node.subgraph.add_output(node.subgraph.inputs[0])
    with pytest.raises(VerifyError, match=r"prim::FusionGroup \(%z\): has 1 outputs but its "
                                          r"subgraph returns 2"):
        g.verify()


def test_malformed_subgraph_is_reported_with_its_owner():
    g, node = fusion_graph()
    sub = node.subgraph
    mul = sub.outputs[0].node
    mul.set_input(1, g.inputs[0])  # a value of the outer graph read inside the subgraph
    with pytest.raises(VerifyError, match=r"in the subgraph of prim::FusionGroup \(%z\): "
                                          r"tensor::mul .*%x\) is not defined in this graph") as e:
        g.verify()
    assert e.value.node is mul


def test_subgraph_attribute_not_a_graph():
    g, node = fusion_graph()
    node.attrs["Subgraph"] = "not a graph"
    with pytest.raises(VerifyError, match=r"prim::FusionGroup \(%z\): attribute Subgraph is a "
                                          r"str, not a Graph"):
        g.verify()


# -- malformed graphs: corrupted internals ---------------------------------------------------------
def test_use_list_missing_entry():
    g = lstm_cell_graph()
    cx = g.inputs[4]
    cx.uses.clear()
    with pytest.raises(VerifyError, match=r"tensor::mul .*: input 1 \(%cx\) is recorded 0 "
                                          r"times in that value's use list"):
        g.verify()


def test_use_list_names_detached_user():
    g = lstm_cell_graph()
    x = g.inputs[0]
    stray = Node("tensor::neg", [], [F34])
    x.uses.append(Use(stray, 0))  # as if a node had been dropped without clearing its inputs
    with pytest.raises(VerifyError, match=r"graph parameters .*%ingate is used by "
                                          r"tensor::neg .*which is detached"):
        g.verify()


def test_use_list_wrong_index():
    g = lstm_cell_graph()
    x = g.inputs[0]
    x.uses.append(Use(x.uses[0].node, 5))
    with pytest.raises(VerifyError, match=r"records input 5 of tensor::sigmoid.*which does not "
                                          r"read it"):
        g.verify()


def test_broken_prev_pointer():
    g = lstm_cell_graph()
    third = g.nodes()[2]
    third.prev = g.nodes()[0]
    with pytest.raises(VerifyError, match=r"tensor::sigmoid .*its prev pointer is not"):
        g.verify()


def test_node_owner_mismatch():
    g, node = if_graph()
    tanh = node.blocks[0].nodes[0]
    tanh.owner = g.block
    with pytest.raises(VerifyError, match=r"tensor::tanh \(%a\): its owner is not the block"):
        g.verify()


def test_block_of_another_graph():
    g, node = if_graph()
    node.blocks[1].graph = Graph()
    with pytest.raises(VerifyError, match=r"prim::If \(%y\): block 1 belongs to another graph"):
        g.verify()


def test_cycle_in_node_list():
    g = lstm_cell_graph()
    first, second = g.nodes()[:2]
    second.next = first
    with pytest.raises(VerifyError, match=r"appears twice|prev pointer"):
        g.verify()


def test_non_value_input():
    g = lstm_cell_graph()
    g.nodes()[0]._inputs[0] = "oops"
    with pytest.raises(VerifyError, match=r"tensor::sigmoid .*input 0 is a str, not a Value"):
        g.verify()


def test_graph_output_not_defined():
    g, _ = if_graph()
    g.set_outputs([Graph().add_input(F34, "elsewhere")])
    with pytest.raises(VerifyError, match=r"graph return \(prim::Return\): input 0 "
                                          r"\(%elsewhere\) is not defined in this graph"):
        g.verify()


def _corruptions(g: Graph):
    """Every pointer slot of the graph we can overwrite, as (object, attribute) pairs."""
    slots = []
    for n in [g.block.param_node, *g.walk(), g.block.return_node]:
        slots += [(n, a) for a in ("prev", "next", "owner", "kind")]
        slots += [(v, a) for v in n.outputs for a in ("node", "index", "type")]
        slots += [(b, a) for b in n.blocks for a in ("graph", "owner", "param_node")]
    return slots


@pytest.mark.parametrize("seed", range(200))
def test_random_corruption_is_always_reported_as_verify_error(seed):
    rng = random.Random(seed)
    g, _ = loop_graph()
    pool = [None, 0, "x", g.block, *g.walk(), *g.inputs, Block(None)]
    slots = _corruptions(g)
    changed = False
    for _ in range(rng.randint(1, 3)):
        obj, attr = rng.choice(slots)
        new = rng.choice(pool)
        changed |= getattr(obj, attr) is not new
        setattr(obj, attr, new)
    if not changed:
        g.verify()
        return
    with pytest.raises(VerifyError) as info:
        g.verify()
    assert "malformed graph" not in str(info.value)  # a specific check caught it


def test_verify_error_for_every_mutation_kind_of_the_lstm_cell():
    """Swapping any two nodes with a data dependency between them breaks SSA."""
    g = lstm_cell_graph()
    for user in g.nodes():
        for v in user.inputs:
            producer = v.node
            if producer.kind == "prim::Param":
                continue
            broken = g.clone()
            index = g.nodes().index(producer)
            moved = broken.nodes()[index]
            moved.move_before(broken.block.return_node)
            with pytest.raises(VerifyError, match="used before it is defined"):
                broken.verify()


# -- If branches the types rule out ----------------------------------------------------------------
def _branch_rejecting_its_inputs(decided: bool):
    """``y = transpose(x, (0, 2, 1)) if x.ndim == 3 else x`` for a matrix ``x`` (an inlined
    callee's branch for rank 3, typed for any rank); ``decided``: the condition is ``x.ndim ==
    3`` (the types rule the branch out), else an int argument (only a run decides)."""
    g = Graph("branch")
    x = g.add_input(F34, "x")
    n = g.add_input(INT, "n")
    ndim = emit(g, "tensor::ndim", x, name="ndim") if decided else n
    cond = emit(g, "tensor::eq", ndim, g.constant(3), name="cond")
    node = g.insert("prim::If", [cond], [TENSOR], nblocks=2, names=["y"])
    with g.inserting_before(node.blocks[0]):
        t = g.insert("tensor::transpose", [x, g.constant((0, 2, 1))], [TENSOR], names=["t"])
        node.blocks[0].add_return(t.output)
    node.blocks[1].add_return(x)
    g.add_output(node.output)
    return g


def test_a_branch_the_types_rule_out_may_reject_its_inputs():
    from ir.verify import verify
    from passes.shape_prop import static_condition
    g = _branch_rejecting_its_inputs(decided=True)
    verify(g, static_condition)
    with pytest.raises(VerifyError, match="rejects the inputs"):
        g.verify()  # without a way to decide conditions, every branch may run


def test_a_branch_only_a_run_decides_must_accept_its_inputs():
    from ir.verify import verify
    from passes.shape_prop import static_condition
    with pytest.raises(VerifyError, match="rejects the inputs"):
        verify(_branch_rejecting_its_inputs(decided=False), static_condition)
