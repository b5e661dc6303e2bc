"""Value/Node/Block/Graph behaviour, and the op registry: schemas, binding and type rules."""

import itertools

import numpy as np
import pytest

from ir import (
    BOOL,
    FLOAT,
    INT,
    NONE,
    STR,
    TENSOR,
    Graph,
    IRError,
    ListType,
    Node,
    OptionalType,
    ShapeError,
    TensorType,
    TupleType,
    infer_types,
    op_def,
)
from ir.core import Block
from ir.registry import NO_DEFAULT, bind_args, parse_signature
from tests.helpers import T, emit

F34 = TensorType("float32", (3, 4))


def uses_of(v):
    return [(u.node, u.index) for u in v.uses]


def chain_graph():
    """x -> a = tanh(x) -> b = a * x -> c = b + a; returns (graph, x, a, b, c)."""
    g = Graph("chain")
    x = g.add_input(F34, "x")
    a = emit(g, "tensor::tanh", x, name="a")
    b = emit(g, "tensor::mul", a, x, name="b")
    c = emit(g, "tensor::add", b, a, name="c")
    g.add_output(c)
    return g, x, a, b, c


def if_in_loop_graph():
    """A Loop whose body holds an If; returns (graph, loop, if_node, node_in_then_branch)."""
    g = Graph()
    x = g.add_input(F34, "x")
    n = g.add_input(INT, "n")
    loop = g.insert("prim::Loop", [n, g.constant(True), x], [F34], nblocks=1, names=["h"])
    body = loop.blocks[0]
    i = body.add_param(INT, "i")
    h = body.add_param(F34, "h")
    with g.inserting_before(body):
        cond = emit(g, "tensor::lt", i, g.constant(2), name="small")
        branch = g.insert("prim::If", [cond], [F34], nblocks=2, names=["h2"])
        with g.inserting_before(branch.blocks[0]):
            t = emit(g, "tensor::tanh", h, name="t")
        branch.blocks[0].add_return(t)
        branch.blocks[1].add_return(h)
        body.add_return(g.constant(True))
        body.add_return(branch.output)
    after = emit(g, "tensor::neg", loop.output, name="after")
    g.add_output(after)
    g.verify()
    return g, loop, branch, t.node


# -- use lists ----------------------------------------------------------------------------------
def test_use_lists_track_inputs():
    g, x, a, b, c = chain_graph()
    assert uses_of(x) == [(a.node, 0), (b.node, 1)]
    assert uses_of(a) == [(b.node, 0), (c.node, 1)]
    assert uses_of(c) == [(g.block.return_node, 0)]
    assert a.users == [b.node, c.node]


def test_set_input_moves_the_use():
    g, x, a, b, c = chain_graph()
    b.node.set_input(0, x)
    assert b.node.inputs == (x, x)
    assert uses_of(x) == [(a.node, 0), (b.node, 1), (b.node, 0)]
    assert uses_of(a) == [(c.node, 1)]
    g.verify()


def test_users_are_distinct_nodes():
    g = Graph()
    x = g.add_input(F34, "x")
    sq = emit(g, "tensor::mul", x, x)
    assert uses_of(x) == [(sq.node, 0), (sq.node, 1)]
    assert x.users == [sq.node]


def test_replace_all_uses_with():
    g, x, a, b, c = chain_graph()
    a.replace_all_uses_with(x)
    assert a.uses == []
    assert b.node.inputs == (x, x) and c.node.inputs == (b, x)
    assert sorted(i for _, i in uses_of(x)) == [0, 0, 1, 1]
    x.replace_all_uses_with(x)  # replacing with itself changes nothing
    assert len(x.uses) == 4
    a.node.erase()
    assert len(x.uses) == 3  # the erased tanh no longer reads x
    g.verify()


def test_erase_refuses_while_uses_remain():
    g, x, a, b, c = chain_graph()
    with pytest.raises(IRError, match=r"cannot erase tensor::tanh: output %a still has uses"):
        a.node.erase()
    assert a.node.owner is g.block and len(a.uses) == 2
    g.verify()


def test_erase_drops_the_node_and_its_uses():
    g, x, a, b, c = chain_graph()
    c.replace_all_uses_with(b)
    c.node.erase()
    assert uses_of(a) == [(b.node, 0)]
    assert uses_of(b) == [(g.block.return_node, 0)]
    assert [n.kind for n in g.nodes()] == ["tensor::tanh", "tensor::mul"]
    assert c.node.owner is None
    g.verify()


def test_insert_input_renumbers_later_uses():
    g = Graph()
    x, y, z = (g.add_input(F34, n) for n in "xyz")
    node = g.insert("prim::TupleConstruct", [x, z])
    node.insert_input(1, y)
    assert node.inputs == (x, y, z)
    assert uses_of(z) == [(node, 2)] and uses_of(y) == [(node, 1)] and uses_of(x) == [(node, 0)]


def test_remove_input_renumbers_later_uses():
    g = Graph()
    x, y, z = (g.add_input(F34, n) for n in "xyz")
    node = g.insert("prim::TupleConstruct", [x, y, z])
    node.remove_input(0)
    assert node.inputs == (y, z)
    assert x.uses == [] and uses_of(y) == [(node, 0)] and uses_of(z) == [(node, 1)]


def test_add_input_rejects_non_values():
    with pytest.raises(IRError, match="must be a Value"):
        Node("tensor::neg", [3])


def test_short_name_list_keeps_every_output():
    node = Node("prim::TupleUnpack", [], [INT, FLOAT, BOOL], names=["a"])
    assert [v.name for v in node.outputs] == ["a", None, None]
    assert [v.type for v in node.outputs] == [INT, FLOAT, BOOL]


def test_insert_and_erase_outputs_renumber():
    node = Node("prim::TupleUnpack", [], [INT, FLOAT])
    node.insert_output(0, BOOL, "flag")
    assert [(v.index, v.type) for v in node.outputs] == [(0, BOOL), (1, INT), (2, FLOAT)]
    node.erase_output(1)
    assert [(v.index, v.type) for v in node.outputs] == [(0, BOOL), (1, FLOAT)]
    with pytest.raises(IRError, match="not 1"):
        node.output  # noqa: B018


# -- position ----------------------------------------------------------------------------------
def test_insert_before_after_and_move():
    g, x, a, b, c = chain_graph()
    neg = g.create("tensor::neg", [x], [F34])
    neg.insert_after(a.node)
    assert g.nodes() == [a.node, neg, b.node, c.node]
    with pytest.raises(IRError, match="already in a block"):
        neg.insert_before(c.node)
    neg.move_before(a.node)
    assert g.nodes() == [neg, a.node, b.node, c.node]
    neg.move_after(c.node)
    assert g.nodes() == [a.node, b.node, c.node, neg]
    with pytest.raises(IRError, match="before a block's parameters"):
        g.create("prim::Constant", [], [INT], {"value": 1}).insert_before(g.block.param_node)
    with pytest.raises(IRError, match="after a block's return"):
        g.create("prim::Constant", [], [INT], {"value": 1}).insert_after(g.block.return_node)
    g.verify()


def test_prepend_append_and_insert_point():
    g, x, a, b, c = chain_graph()
    first = g.block.prepend(g.create("prim::Constant", [], [INT], {"value": 1}))
    last = g.block.append(g.create("prim::Constant", [], [INT], {"value": 2}))
    assert g.nodes()[0] is first and g.nodes()[-1] is last
    with g.inserting_before(b.node):
        k = g.constant(3)
    assert k.node.next is b.node
    assert g.insert_point is g.block.return_node  # restored after the with block
    g.verify()


def test_block_iteration_survives_erasing_the_current_node():
    g = Graph()
    x = g.add_input(F34, "x")
    dead = [emit(g, "tensor::tanh", x) for _ in range(5)]
    keep = emit(g, "tensor::neg", x)
    g.add_output(keep)
    seen = []
    for node in g.block:
        seen.append(node.kind)
        if not node.outputs[0].uses:
            node.erase()
    assert seen == ["tensor::tanh"] * 5 + ["tensor::neg"]
    assert g.nodes() == [keep.node]
    assert uses_of(x) == [(keep.node, 0)] and all(v.node.owner is None for v in dead)
    g.verify()


def test_is_before_in_one_block():
    g, x, a, b, c = chain_graph()
    assert a.node.is_before(b.node) and a.node.is_before(c.node)
    assert not c.node.is_before(a.node) and not a.node.is_before(a.node)
    assert g.block.param_node.is_before(a.node) and c.node.is_before(g.block.return_node)


def test_is_before_across_nested_blocks():
    g, loop, branch, inner = if_in_loop_graph()
    trip_const = loop.inputs[1].node
    after = g.outputs[0].node
    assert trip_const.is_before(inner)  # outer node before a doubly nested one
    assert inner.is_before(after)  # nested node before a later outer node
    assert not inner.is_before(trip_const) and not after.is_before(inner)
    body_cond = branch.inputs[0].node
    assert body_cond.is_before(inner) and not inner.is_before(body_cond)
    # a node and the nodes nested inside it share their position: neither is before the other
    assert not loop.is_before(inner) and not inner.is_before(loop)
    # the two branches of an If are not ordered
    other = g.create("tensor::neg", [g.inputs[0]], [F34])
    branch.blocks[1].prepend(other)
    assert not other.is_before(inner) and not inner.is_before(other)


def test_walk_visits_nested_nodes_in_program_order():
    g, loop, branch, inner = if_in_loop_graph()
    kinds = [n.kind for n in g.walk()]
    assert kinds == ["prim::Constant", "prim::Loop", "prim::Constant", "tensor::lt", "prim::If",
                     "tensor::tanh", "prim::Constant", "tensor::neg"]
    assert list(loop.walk())[-1].kind == "prim::Constant" and inner in list(loop.walk())


def test_erase_of_a_node_with_blocks_erases_their_contents():
    g, loop, branch, inner = if_in_loop_graph()
    h = loop.blocks[0].params[1]
    n = g.inputs[1]
    g.outputs[0].node.set_input(0, g.inputs[0])
    loop.erase()
    assert h.uses == [] and inner.owner is None
    assert all(u.node.owner is not None for u in n.uses)
    assert n.uses == []
    g.verify()


def test_replace_uses_after():
    g, x, a, b, c = chain_graph()
    neg = g.create("tensor::neg", [x], [F34], names=["nx"])
    neg.insert_after(a.node)
    x.replace_uses_after(neg.output, neg)
    assert a.node.inputs == (x,)  # before the node: untouched
    assert b.node.inputs == (a, neg.output)
    assert neg.inputs == (x,)  # the node itself keeps reading x
    g.verify()


def test_replace_uses_after_reaches_into_nested_blocks():
    g, loop, branch, inner = if_in_loop_graph()
    x = g.inputs[0]
    with g.inserting_before(loop):
        y = emit(g, "tensor::neg", x, name="y")
    body = loop.blocks[0]
    with g.inserting_before(body.return_node):
        z = emit(g, "tensor::add", body.params[1], x, name="z")
    x.replace_uses_after(y, y.node)
    assert z.node.inputs[1] is y and loop.inputs[2] is y
    assert y.node.inputs == (x,)
    g.verify()


# -- clone ----------------------------------------------------------------------------------------
def fused_graph():
    sub = Graph()
    a = sub.add_input(F34, "a")
    sub.add_output(emit(sub, "tensor::sigmoid", a))
    g, loop, branch, inner = if_in_loop_graph()
    with g.inserting_before(inner):
        fused = g.insert("prim::FusionGroup", [inner.inputs[0]], [F34], {"Subgraph": sub},
                         names=["f"])
    inner.set_input(0, fused.output)
    g.verify()
    return g


def _shape(g: Graph):
    return [(n.kind, [v.name for v in n.inputs], [(v.name, v.type) for v in n.outputs],
             len(n.blocks)) for n in g.walk()]


def test_clone_is_a_deep_copy():
    g = fused_graph()
    c = g.clone()
    c.verify()
    assert _shape(c) == _shape(g)
    old_nodes = {id(n) for n in g.walk()} | {id(b) for n in g.walk() for b in n.blocks}
    assert not any(id(n) in old_nodes for n in c.walk())
    assert not any(id(b) in old_nodes for n in c.walk() for b in n.blocks)
    assert all(b.graph is c for n in c.walk() for b in n.blocks)
    old_fused = next(n for n in g.walk() if n.kind == "prim::FusionGroup")
    new_fused = next(n for n in c.walk() if n.kind == "prim::FusionGroup")
    assert new_fused.subgraph is not old_fused.subgraph
    assert _shape(new_fused.subgraph) == _shape(old_fused.subgraph)


def test_clone_is_independent():
    g = fused_graph()
    before = _shape(g)
    c = g.clone()
    loop = next(n for n in c.walk() if n.kind == "prim::Loop")
    tanh = next(n for n in c.walk() if n.kind == "tensor::tanh")
    tanh.outputs[0].replace_all_uses_with(tanh.inputs[0])
    tanh.erase()
    loop.blocks[0].params[1].type = TENSOR
    fused = next(n for n in c.walk() if n.kind == "prim::FusionGroup")
    fused.subgraph.outputs[0].node.kind = "tensor::tanh"
    c.add_input(INT, "extra")
    assert _shape(g) == before
    assert len(g.inputs) == 2
    g.verify()
    old_fused = next(n for n in g.walk() if n.kind == "prim::FusionGroup")
    assert old_fused.subgraph.outputs[0].node.kind == "tensor::sigmoid"


def test_clone_preserves_names_sources_and_attrs():
    g, x, a, b, c = chain_graph()
    k = g.constant(2.5, name="k")
    c2 = g.clone()
    assert [v.name for v in c2.inputs] == ["x"] and c2.name == "chain"
    consts = [n for n in c2.nodes() if n.kind == "prim::Constant"]
    assert consts[0].attrs == {"value": 2.5} and consts[0].output.name == k.name


# -- Graph.constant --------------------------------------------------------------------------------
@pytest.mark.parametrize("value, t", [
    (1, INT), (np.int64(3), INT), (2.5, FLOAT), (np.float32(1.0), FLOAT), (True, BOOL),
    (np.bool_(False), BOOL), ("s", STR), (None, NONE), ((1, 2.0), TupleType((INT, FLOAT))),
    ([1, 2], ListType(INT)), (np.zeros((2, 3), np.float32), TensorType("float32", (2, 3))),
])
def test_graph_constant_types(value, t):
    g = Graph()
    v = g.constant(value)
    assert v.type == t and v.is_constant and v.constant is value


def test_graph_constant_with_explicit_type():
    g = Graph()
    assert g.constant(None, OptionalType(TENSOR)).type == OptionalType(TENSOR)
    assert g.constant([], ListType(TENSOR)).type == ListType(TENSOR)
    with pytest.raises(TypeError, match="cannot be an IR constant"):
        g.constant(object())


def test_non_constant_value_has_no_constant():
    g, x, a, b, c = chain_graph()
    with pytest.raises(IRError, match="not a constant"):
        a.constant  # noqa: B018


# -- registry: schemas and binding -----------------------------------------------------------------
def test_parse_signature():
    kind, args, variadic, results = parse_signature(
        "tensor::foo(x: Tensor, dims: ints, scale: float = 1.5, name: str? = None) -> Tensor")
    assert kind == "tensor::foo" and not variadic and results == "Tensor"
    assert [(a.name, a.kind, a.default) for a in args] == [
        ("x", "Tensor", NO_DEFAULT), ("dims", "ints", NO_DEFAULT), ("scale", "float", 1.5),
        ("name", "str?", None)]
    kind, args, variadic, results = parse_signature("prim::Print(*values: any) -> ()")
    assert variadic and [a.name for a in args] == ["values"] and results == "()"
    with pytest.raises(IRError, match="unknown argument kind 'matrix'"):
        parse_signature("tensor::bad(x: matrix) -> Tensor")


def test_signature_round_trips_through_op_def():
    op = op_def("tensor::clip")
    assert op.signature == "tensor::clip(a: operand, lo: operand?, hi: operand?) -> operand"
    assert op.is_pure and op.is_elementwise and not op.has_side_effects
    assert op_def("tensor::add").is_commutative and not op_def("tensor::sub").is_commutative
    with pytest.raises(IRError, match="unknown op kind"):
        op_def("tensor::nope")


def _op(sig):
    kind, args, variadic, results = parse_signature(sig)
    return type(op_def("tensor::add"))(kind, args, variadic, results, lambda n: [], frozenset())


SUM = _op("tensor::s(x: Tensor, axis: ints? = None, keepdims: bool = False) -> Tensor")


@pytest.mark.parametrize("n, keywords, slots", [
    (1, [], [0, "=default", "=default"]),
    (2, [], [0, 1, "=default"]),
    (3, [], [0, 1, 2]),
    (1, ["keepdims"], [0, "=default", "keepdims"]),
    (1, ["keepdims", "axis"], [0, "axis", "keepdims"]),
    (0, ["x"], ["x", "=default", "=default"]),
])
def test_bind_args(n, keywords, slots):
    assert bind_args(SUM, n, keywords) == slots


@pytest.mark.parametrize("n, keywords, message", [
    (4, [], r"s\(\) takes at most 3 arguments, got 4"),
    (0, [], r"s\(\) missing required argument 'x'"),
    (1, ["x"], r"s\(\) got multiple values for argument 'x'"),
    (1, ["axes"], r"s\(\) got an unexpected keyword argument 'axes'"),
])
def test_bind_args_errors(n, keywords, message):
    with pytest.raises(ShapeError, match=message):
        bind_args(SUM, n, keywords)


def test_bind_args_variadic():
    op = op_def("prim::TupleConstruct")
    assert bind_args(op, 3, []) == [0, 1, 2]
    with pytest.raises(ShapeError, match="takes no keyword arguments"):
        bind_args(op, 1, ["items"])


# -- registry: type rules --------------------------------------------------------------------------
def infer(kind, *types):
    g = Graph()
    node = g.insert(kind, [g.add_input(t) for t in types])
    return infer_types(node)[0]


@pytest.mark.parametrize("kind, a, b, out", [
    ("tensor::mul", T("float32", 3), FLOAT, T("float32", 3)),
    ("tensor::mul", T("float16", 3), FLOAT, T("float16", 3)),
    ("tensor::mul", T("int64", 3), FLOAT, T("float64", 3)),
    ("tensor::mul", T("int32", 3), INT, T("int32", 3)),
    ("tensor::add", T("bool", 3), INT, T("int64", 3)),
    ("tensor::add", T("bool", 3), BOOL, T("bool", 3)),
    ("tensor::add", T("int32", 3), T("int64", 3), T("int64", 3)),
    ("tensor::add", T("float32", 3), T("float64", 3), T("float64", 3)),
    ("tensor::add", T("int64", 3), T("float32", 3), T("float64", 3)),
    ("tensor::add", T("float32", 64, 512), T("float32", 512), T("float32", 64, 512)),
    ("tensor::add", T("float32", 3, 1), T("float32", 1, 4), T("float32", 3, 4)),
    ("tensor::add", T("float32", None, 512), T("float32", 512), T("float32", None, 512)),
    ("tensor::add", T("float32", None, 1), T("float32", 1, 4), T("float32", None, 4)),
    ("tensor::add", T("float32", None), T("float32", 5), T("float32", 5)),
    ("tensor::add", TensorType("float32"), T("float32", 5), TensorType("float32")),
    ("tensor::add", TENSOR, T("float32", 5), TensorType(None, None)),
    ("tensor::div", T("int64", 3), INT, T("float64", 3)),
    ("tensor::div", T("float32", 3), INT, T("float32", 3)),
    ("tensor::lt", T("float32", 3, 1), T("float64", 4), T("bool", 3, 4)),
    ("tensor::add", INT, INT, INT),
    ("tensor::add", INT, FLOAT, FLOAT),
    ("tensor::div", INT, INT, FLOAT),
    ("tensor::lt", INT, FLOAT, BOOL),
])
def test_infer_types_broadcasting_and_promotion(kind, a, b, out):
    assert infer(kind, a, b) == out


@pytest.mark.parametrize("a, b", [
    (T("float32", 3), T("float32", 4)),
    (T("float32", 64, 512), T("float32", 256)),
    (T("float32", 2, 3), T("float32", 3, 3)),
])
def test_infer_types_mismatched_shapes_raise(a, b):
    with pytest.raises(ShapeError, match="do not broadcast"):
        infer("tensor::add", a, b)


def test_infer_types_rejects_wrong_argument_kinds():
    with pytest.raises(ShapeError, match=r"argument 'b' expects operand, got \(int, int\)"):
        infer("tensor::add", T("float32", 3), TupleType((INT, INT)))
    with pytest.raises(ShapeError, match="takes 2 inputs, got 3"):
        infer("tensor::add", INT, INT, INT)


DTYPES = ["bool", "int8", "uint8", "int32", "int64", "float16", "float32", "float64"]
SHAPES = [(), (3,), (1, 3), (2, 1), (2, 3), (4, 2, 3)]
BINARY = {"tensor::add": np.add, "tensor::mul": np.multiply, "tensor::sub": np.subtract,
          "tensor::div": np.true_divide, "tensor::maximum": np.maximum, "tensor::lt": np.less,
          "tensor::logical_and": np.logical_and}
PY_SCALARS = {INT: 2, FLOAT: 2.0, BOOL: True}


def _numpy_type(result) -> TensorType:
    return TensorType(result.dtype.name, tuple(result.shape))


@pytest.mark.parametrize("kind", sorted(BINARY))
def test_elementwise_rules_agree_with_numpy_on_tensors(kind):
    fn = BINARY[kind]
    for d1, d2 in itertools.product(DTYPES, DTYPES):
        if kind == "tensor::sub" and "bool" == d1 == d2:
            continue  # numpy refuses bool - bool; the rule need not model that refusal
        for s1, s2 in [((3,), (3,)), ((2, 1), (1, 3)), ((4, 2, 3), (3,)), ((), (2, 3))]:
            with np.errstate(all="ignore"):
                expected = _numpy_type(fn(np.ones(s1, d1), np.ones(s2, d2)))
            assert infer(kind, T(d1, *s1), T(d2, *s2)) == expected, (kind, d1, d2, s1, s2)


@pytest.mark.parametrize("kind", sorted(BINARY))
def test_elementwise_rules_agree_with_numpy_on_weak_scalars(kind):
    fn = BINARY[kind]
    for d, shape, (scalar_type, scalar) in itertools.product(DTYPES, SHAPES,
                                                             PY_SCALARS.items()):
        if kind == "tensor::sub" and d == "bool" and scalar_type == BOOL:
            continue
        with np.errstate(all="ignore"):
            expected = _numpy_type(fn(np.ones(shape, d), scalar))
        assert infer(kind, T(d, *shape), scalar_type) == expected, (kind, d, shape, scalar)


FLOAT_UNARY = ("tensor::tanh", "tensor::exp", "tensor::sqrt")


@pytest.mark.parametrize("kind", ["tensor::tanh", "tensor::exp", "tensor::sqrt", "tensor::neg",
                                  "tensor::abs", "tensor::logical_not"])
def test_unary_rules_agree_with_numpy(kind):
    fn = {"tensor::tanh": np.tanh, "tensor::exp": np.exp, "tensor::sqrt": np.sqrt,
          "tensor::neg": np.negative, "tensor::abs": np.abs,
          "tensor::logical_not": np.logical_not}[kind]
    for d, shape in itertools.product(DTYPES, SHAPES):
        if kind == "tensor::neg" and d == "bool":
            continue  # numpy refuses -bool
        with np.errstate(all="ignore"):
            expected = _numpy_type(fn(np.ones(shape, d)))
        assert infer(kind, T(d, *shape)) == expected, (kind, d, shape)


def test_block_without_graph_can_be_built_detached():
    node = Node("prim::If", [], [])
    block = node.add_block()
    assert isinstance(block, Block) and block.owner is node and block.graph is None
    assert list(block) == [] and len(block) == 0
