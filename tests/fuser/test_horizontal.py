"""Horizontal fusion (sibling groups become one kernel) and cats stored by the kernel itself."""

import numpy as np
import pytest

from fuser.cpu import compile_group
from ir import Graph, ListType
from tests.fuser.reference import (
    FUSION,
    check_fused_equals_eager,
    fuse,
    groups,
    kinds,
    random_args,
)
from tests.helpers import T, emit, flat


def cat(g: Graph, pieces, axis: int):
    t = pieces[0].type
    lst = g.insert("prim::ListConstruct", list(pieces), [ListType(t)]).output
    return emit(g, "tensor::cat", lst, g.constant(axis))


# -- horizontal merging -----------------------------------------------------------------------
def siblings(shape_b=(3, 5)):
    """Two chains reading a common input ``x``, plus a lone mul; returned as a tuple."""
    g = Graph()
    x, y = g.add_input(T("float32", 3, 5), "x"), g.add_input(T("float32", 3, 5), "y")
    z = g.add_input(T("float32", *shape_b), "z")
    a = emit(g, "tensor::tanh", emit(g, "tensor::mul", x, y))
    b = emit(g, "tensor::exp", emit(g, "tensor::sub", x, z))
    c = emit(g, "tensor::mul", x, x)
    g.add_output(emit(g, "prim::TupleConstruct", a, b, c))
    return g


def test_independent_groups_of_one_shape_become_one_kernel():
    g = check_fused_equals_eager(siblings, random_args(siblings(), seed=0))
    (group,) = groups(g)
    assert len(group.outputs) == 3
    assert kinds(g) == [FUSION, "prim::TupleConstruct"]


def test_groups_of_other_shapes_stay_apart():
    g = siblings(shape_b=(2, 3, 5))  # b iterates over (2, 3, 5), a and c over (3, 5)
    fuse(g)
    shapes = sorted(n.outputs[0].type.shape for n in groups(g))
    assert shapes == [(2, 3, 5), (3, 5)]


def test_no_horizontal_merge_through_an_outside_node():
    """b reads a matmul of a: merging a and b would need the matmul inside the kernel."""
    def make():
        g = Graph()
        x, w = g.add_input(T("float64", 4, 4)), g.add_input(T("float64", 4, 4))
        a = emit(g, "tensor::tanh", emit(g, "tensor::mul", x, x))
        m = emit(g, "tensor::matmul", a, w)
        b = emit(g, "tensor::sigmoid", emit(g, "tensor::exp", m))
        g.add_output(emit(g, "prim::TupleConstruct", a, b))
        return g
    g = check_fused_equals_eager(make, random_args(make(), seed=1))
    assert kinds(g) == [FUSION, "tensor::matmul", FUSION, "prim::TupleConstruct"]


def test_no_horizontal_merge_across_a_side_effect():
    def make():
        g = Graph()
        x = g.add_input(T("float32", 2, 3))
        a = emit(g, "tensor::tanh", emit(g, "tensor::mul", x, x))
        g.insert("prim::Print", [x])
        b = emit(g, "tensor::exp", emit(g, "tensor::neg", x))
        g.add_output(emit(g, "prim::TupleConstruct", a, b))
        return g
    g = check_fused_equals_eager(make, [np.ones((2, 3), np.float32)])
    assert kinds(g) == [FUSION, "prim::Print", FUSION, "prim::TupleConstruct"]


def test_lone_ops_join_a_kernel_but_do_not_make_one():
    def make(with_group):
        g = Graph()
        x, y = g.add_input(T("float32", 7)), g.add_input(T("float32", 7))
        a, b = emit(g, "tensor::add", x, y), emit(g, "tensor::mul", x, y)
        c = emit(g, "tensor::exp", emit(g, "tensor::neg", x)) if with_group else x
        g.add_output(emit(g, "prim::TupleConstruct", a, b, c))
        return g
    args = random_args(make(True), seed=2)
    g = check_fused_equals_eager(lambda: make(True), args)
    assert kinds(g) == [FUSION, "prim::TupleConstruct"]
    g = check_fused_equals_eager(lambda: make(False), args)
    assert kinds(g) == ["tensor::add", "tensor::mul", "prim::TupleConstruct"]


# -- cats stored by the kernel ----------------------------------------------------------------
def gate_grads(dtype: str, B: int, H: int, axis: int, bias_shape=None, extra_use=False,
               outside_piece=False):
    """Four gate-gradient-like pieces of shape (B, H) concatenated along ``axis``."""
    def make():
        g = Graph()
        d, s, t = (g.add_input(T(dtype, B, H), n) for n in ("d", "s", "t"))
        bias = g.add_input(T(dtype, *(bias_shape or (B, H))), "bias")
        one = g.constant(1.0)
        p0 = emit(g, "tensor::mul", emit(g, "tensor::mul", d, s), emit(g, "tensor::sub", one, s))
        p1 = emit(g, "tensor::mul", d, emit(g, "tensor::sub", one, emit(g, "tensor::mul", t, t)))
        p2 = emit(g, "tensor::add", emit(g, "tensor::mul", d, t), bias)
        p3 = t if outside_piece else emit(g, "tensor::tanh", emit(g, "tensor::add", d, bias))
        out = cat(g, [p0, p1, p2, p3], axis)
        g.add_output(emit(g, "prim::TupleConstruct", out, p1) if extra_use else out)
        return g
    return make


def check_cat(make, seed=0):
    g = check_fused_equals_eager(make, random_args(make(), seed=seed))
    assert "tensor::cat" not in kinds(g)
    (group,) = groups(g)
    assert [n.kind for n in group.subgraph.nodes()].count("tensor::cat") == 1
    return g


@pytest.mark.parametrize("dtype", ["float32", "float64"])
@pytest.mark.parametrize("axis", [1, -1, 0, -2])
def test_cat_of_group_outputs_is_written_by_the_kernel(dtype, axis):
    g = check_cat(gate_grads(dtype, 3, 5, axis))
    (group,) = groups(g)
    want = (12, 5) if axis in (0, -2) else (3, 20)
    assert group.outputs[0].type.shape == want


def test_cat_with_broadcast_inputs_and_a_piece_read_elsewhere():
    g = check_cat(gate_grads("float32", 7, 3, 1, bias_shape=(3,), extra_use=True))
    (group,) = groups(g)
    assert sorted(v.type.shape for v in group.outputs) == [(7, 3), (7, 12)]


def test_cat_piece_from_outside_the_group_is_copied_in():
    check_cat(gate_grads("float64", 1, 9, 1, outside_piece=True))


def test_cat_of_width_one_pieces_and_of_3d_pieces():
    check_cat(gate_grads("float32", 5, 1, 1))  # each piece is a strided column of the output

    def make():
        g = Graph()
        x, y = g.add_input(T("float32", 2, 3, 5)), g.add_input(T("float32", 5))
        a = emit(g, "tensor::tanh", emit(g, "tensor::mul", x, y))
        b = emit(g, "tensor::sigmoid", emit(g, "tensor::add", x, y))
        g.add_output(emit(g, "prim::TupleConstruct", cat(g, [a, b], 1), cat(g, [b, a], 2)))
        return g
    g = check_fused_equals_eager(make, random_args(make(), seed=3))
    (group,) = groups(g)
    assert [v.type.shape for v in group.outputs] == [(2, 6, 5), (2, 3, 10)]


def test_cat_kernel_with_transposed_input_and_new_sizes():
    make = gate_grads("float32", 4, 6, 1)
    g = make()
    fuse(g)
    kernel = compile_group(groups(g)[0].subgraph)
    rng = np.random.default_rng(4)
    for B, H in ((4, 6), (9, 13), (1, 1)):
        args = [rng.standard_normal((B, H)).astype(np.float32) for _ in range(4)]
        args[1] = np.ascontiguousarray(args[1].T).T  # a column-major input
        for _ in range(2):  # the second call takes the guarded path
            got = kernel(*args)
            d, s, t, bias = args
            want = np.concatenate([d * s * (1 - s), d * (1 - t * t), d * t + bias,
                                   np.tanh(d + bias)], 1)
            np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-6)


def test_cat_output_read_inside_stays_a_group_output():
    """tanh(cat(...)): the cat's output has another shape than its pieces, so the tanh is a
    separate computation."""
    def make():
        g = Graph()
        x = g.add_input(T("float32", 3, 4))
        a, b = emit(g, "tensor::exp", x), emit(g, "tensor::neg", x)
        c = cat(g, [a, b], 1)
        g.add_output(emit(g, "tensor::mul", emit(g, "tensor::tanh", c), c))
        return g
    g = check_fused_equals_eager(make, random_args(make(), seed=5))
    first = groups(g)[0]
    assert first.outputs[0].type.shape == (3, 8)
    assert all(n.kind != "tensor::tanh" for n in first.subgraph.nodes())


def test_lstm_backward_writes_the_gate_gradients_concatenated():
    import script
    from benchmarks.fastrnns import cells
    from benchmarks.fastrnns.factory import Sizes, rnn_inputs
    from script.runtime.autodiff import compile_gradient

    inp = rnn_inputs(Sizes(input_size=5, hidden_size=7, mini_batch=3, seq_length=4))
    args = (inp.x, inp.hx[0], inp.cx[0], *inp.weights[0])
    fn = script.script(cells.lstm_layer)
    back = compile_gradient(fn, args).gradient.backward
    loop = next(n for n in back.nodes() if n.kind == "prim::Loop")
    body = [n.kind for n in loop.blocks[0]]
    assert "tensor::cat" not in body and body.count(FUSION) == 1
    outs, pull = script.vjp(fn, *args)
    cts = tuple(np.random.default_rng(6).standard_normal(o.shape).astype(o.dtype) for o in outs)
    got = pull(cts)
    import fuser
    with fuser.disabled():
        fn2 = script.script(cells.lstm_layer)
        outs2, pull2 = script.vjp(fn2, *args)
        want = pull2(cts)
    for x, y in zip(flat(got), flat(want)):
        np.testing.assert_allclose(x, y, rtol=1e-4, atol=1e-5)
