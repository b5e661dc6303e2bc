"""Group formation: the groups ``fuse_elementwise`` promises, and the ones it must not form."""

import itertools

import numpy as np
import pytest

import fuser
from fuser.group import fuse_elementwise
from ir import BOOL, INT, TENSOR, Graph, ListType, TensorType
from tests.fuser.reference import FUSION, check_fused_equals_eager, fuse, groups, kinds
from tests.helpers import T, emit
from tests.programs.graphs import lstm_cell_graph


def gru_cell(B=3, H=4) -> Graph:
    g = Graph("gru_cell")
    x, hx = (g.add_input(T("float32", B, H), n) for n in ("x", "hx"))
    w_ih, w_hh = (g.add_input(T("float32", 3 * H, H), n) for n in ("w_ih", "w_hh"))
    b_ih, b_hh = (g.add_input(T("float32", 3 * H), n) for n in ("b_ih", "b_hh"))
    none = g.constant(None)
    gi = emit(g, "tensor::add", emit(g, "tensor::matmul", x,
                                     emit(g, "tensor::transpose", w_ih, none)), b_ih)
    gh = emit(g, "tensor::add", emit(g, "tensor::matmul", hx,
                                     emit(g, "tensor::transpose", w_hh, none)), b_hh)
    i_r, i_i, i_n = emit(g, "tensor::chunk", gi, g.constant(3), g.constant(1))
    h_r, h_i, h_n = emit(g, "tensor::chunk", gh, g.constant(3), g.constant(1))
    r = emit(g, "tensor::sigmoid", emit(g, "tensor::add", i_r, h_r))
    z = emit(g, "tensor::sigmoid", emit(g, "tensor::add", i_i, h_i))
    n = emit(g, "tensor::tanh", emit(g, "tensor::add", i_n, emit(g, "tensor::mul", r, h_n)))
    hy = emit(g, "tensor::add", n, emit(g, "tensor::mul", z, emit(g, "tensor::sub", hx, n)))
    g.add_output(hy)
    return g


# -- the cells ----------------------------------------------------------------------------------
def test_lstm_cell_fuses_into_one_group_with_the_chunk():
    g = lstm_cell_graph()
    assert fuse(g)
    (group,) = groups(g)
    assert kinds(g) == ["tensor::transpose", "tensor::matmul", "tensor::transpose",
                        "tensor::matmul", FUSION, "prim::TupleConstruct"]
    inner = [n.kind for n in group.subgraph.nodes() if n.kind != "prim::Constant"]
    assert sorted(inner) == sorted(["tensor::add"] * 4 + ["tensor::chunk"] +
                                   ["tensor::sigmoid"] * 3 + ["tensor::tanh"] * 2 +
                                   ["tensor::mul"] * 3)
    assert len(group.outputs) == 2 and {v.name for v in group.outputs} == {"hy", "cy"}
    assert "prim::FusionGroup_0" in str(g)


@pytest.mark.parametrize("order", list(itertools.permutations(range(4)))[::5])
def test_lstm_gate_sum_in_any_order_fuses_into_one_group(order):
    g = lstm_cell_graph(order=order)
    fuse(g)
    assert len(groups(g)) == 1
    assert kinds(g).count("tensor::add") == 0


def test_fused_lstm_cell_computes_the_same_values():
    check_fused_equals_eager(lambda: lstm_cell_graph(B=5, H=8))


def test_gru_cell_fuses_into_one_group_and_computes_the_same():
    g = gru_cell()
    fuse(g)
    (group,) = groups(g)
    assert kinds(g).count("tensor::matmul") == 2
    assert not any(k.startswith("tensor::") and k not in ("tensor::matmul", "tensor::transpose")
                   for k in kinds(g))
    assert sum(n.kind == "tensor::chunk" for n in group.subgraph.nodes()) == 2
    check_fused_equals_eager(gru_cell)


# -- what must not fuse -------------------------------------------------------------------------
def _two_halves(barrier):
    """tanh(x) * y, then ``barrier``, then exp(t) + x: two groups, one each side."""
    g = Graph()
    x, y = g.add_input(T("float32", 2, 3)), g.add_input(T("float32", 2, 3))
    t = emit(g, "tensor::mul", emit(g, "tensor::tanh", x), y)
    barrier(g, x)
    g.add_output(emit(g, "tensor::add", emit(g, "tensor::exp", t), x))
    return g


def _print(g, x):
    g.insert("prim::Print", [x])


def _append(g, x):
    lst = g.insert("prim::ListConstruct", [], [ListType(TensorType("float32", (2, 3)))]).output
    g.insert("prim::ListAppend", [lst, x])


@pytest.mark.parametrize("barrier", [_print, _append])
def test_groups_do_not_cross_side_effects(barrier):
    g = _two_halves(barrier)
    fuse(g)
    order = kinds(g)
    assert order.count(FUSION) == 2
    side = "prim::Print" if barrier is _print else "prim::ListAppend"
    assert order.index(FUSION) < order.index(side) < len(order) - 1 - order[::-1].index(FUSION)


def test_unknown_shapes_and_dtypes_stay_out():
    for t in (TensorType("float32", (None, 3)), TensorType(None, (2, 3)), TENSOR,
              TensorType("int64", (2, 3))):
        g = Graph()
        x = g.add_input(t)
        g.add_output(emit(g, "tensor::neg", emit(g, "tensor::abs", x)))
        assert not fuse(g)
        assert groups(g) == []


def test_a_single_op_is_not_worth_a_group():
    g = Graph()
    x = g.add_input(T("float32", 2, 3))
    a, b = emit(g, "tensor::chunk", x, g.constant(3), g.constant(1))[:2]
    g.add_output(emit(g, "tensor::mul", a, b))
    assert not fuse(g)


def test_a_few_ops_on_numpy_scalars_are_not_worth_a_group():
    """0-d values (numpy scalars) are fused only from ``MIN_SCALAR_OPS`` ops on: numpy's
    scalar arithmetic is cheaper than a kernel call."""
    from fuser.group import MIN_SCALAR_OPS

    for count, fused in ((3, False), (MIN_SCALAR_OPS, True)):
        g = Graph()
        x = g.add_input(T("float64"))
        y = x
        for _ in range(count):
            y = emit(g, "tensor::tanh", y)
        g.add_output(y)
        assert bool(fuse(g)) == fused


def test_no_cycle_through_an_outside_node():
    def make():
        g = Graph()
        x, w = g.add_input(T("float32", 3, 3)), g.add_input(T("float32", 3, 3))
        a = emit(g, "tensor::tanh", x)
        m = emit(g, "tensor::matmul", a, w)
        g.add_output(emit(g, "tensor::sigmoid", emit(g, "tensor::add", emit(g, "tensor::exp", a),
                                                     m)))
        return g
    g = make()
    fuse(g)
    for group in groups(g):
        assert g.nodes().index(group) > [n.kind for n in g.nodes()].index("tensor::matmul")
    check_fused_equals_eager(make)


def test_users_between_members_move_after_the_group():
    def make():
        g = Graph()
        x, w = g.add_input(T("float32", 3, 3)), g.add_input(T("float32", 3, 3))
        a = emit(g, "tensor::tanh", x)
        m = emit(g, "tensor::matmul", a, w)     # reads a, sits between the members
        b = emit(g, "tensor::mul", a, x)
        g.add_output(emit(g, "prim::TupleConstruct", m, b))
        return g
    g = make()
    fuse(g)
    assert kinds(g) == [FUSION, "tensor::matmul", "prim::TupleConstruct"]
    check_fused_equals_eager(make)


def test_groups_form_inside_loop_bodies():
    g = Graph()
    x, h0 = g.add_input(T("float32", 2, 3)), g.add_input(T("float32", 2, 3))
    trip, cond = g.constant(5), g.constant(True)
    loop = g.insert("prim::Loop", [trip, cond, h0], [T("float32", 2, 3)], nblocks=1)
    body = loop.blocks[0]
    body.add_param(INT, "i")
    h = body.add_param(T("float32", 2, 3), "h")
    with g.inserting_before(body):
        h_next = emit(g, "tensor::tanh", emit(g, "tensor::add", emit(g, "tensor::mul", h,
                                                                     g.constant(0.5)), x))
        body.add_return(g.constant(True))
    body.add_return(h_next)
    g.add_output(loop.outputs[0])
    assert body.returns[0].type == BOOL
    g.verify()
    assert fuse(g)
    assert [n.kind for n in g.nodes()].count(FUSION) == 0
    assert sum(n.kind == FUSION for n in body) == 1


def test_disabled_fusion_leaves_the_graph_alone():
    g = lstm_cell_graph()
    before = str(g)
    with fuser.disabled():
        assert not fuse_elementwise(g)
    assert str(g) == before


def gru_gates(x, h, wx, wh):  # DLFS2's GRU: a product between the two groups reads r * h
    H = h.shape[1]
    z = 1 / (1 + np.exp(-(x @ wx[:, :H] + h @ wh[:, :H])))
    r = 1 / (1 + np.exp(-(x @ wx[:, H:2 * H] + h @ wh[:, H:2 * H])))
    h_hat = np.tanh(x @ wx[:, 2 * H:] + (r * h) @ wh[:, 2 * H:])
    return (1 - z) * h + z * h_hat


def test_a_gate_chunk_a_later_group_reads_stays_a_view():
    """The first group does not write out chunks of a product for the second to read: the
    second reads them from the product, through views made outside the groups."""
    from script import script
    from tests.helpers import rand, rng
    r = rng(11)
    args = tuple(rand(r, s) for s in ((5, 3), (5, 4), (3, 12), (4, 12)))
    f = script(gru_gates)
    np.testing.assert_allclose(f(*args), gru_gates(*args), rtol=1e-12)
    graph = f.graph_for(*args)
    fusion = [n for n in graph.walk() if n.kind == "prim::FusionGroup"]
    assert len(fusion) == 2
    for node in fusion:
        sub = node.attrs["Subgraph"]
        for out in sub.outputs:
            made = out.node
            assert not (made.kind in ("tensor::chunk", "tensor::split", "tensor::slice")
                        and made.inputs[0].node.kind == "prim::Param"), made.kind
