"""IR text: ``str(graph)`` prints TorchScript-style text and ``ir.parse`` reads it back exactly."""

from __future__ import annotations

import math
import time

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import ir
from ir import (
    BOOL,
    FLOAT,
    INT,
    NONE,
    STR,
    TENSOR,
    ClassType,
    DictType,
    Graph,
    ListType,
    OptionalType,
    ParseError,
    SourceRange,
    TensorType,
    TupleType,
    parse,
)
from ir.core import SUBGRAPH
from tests.helpers import emit
from tests.ir.strategies import graphs
from tests.programs.graphs import lstm_state_update

F = TensorType("float32", (64, 512))


def round_trip(g: Graph) -> Graph:
    """Print, parse, and check the parsed graph prints the same text."""
    text = str(g)
    parsed = parse(text)
    assert str(parsed) == text
    return parsed


def lstm_cell_graph() -> Graph:
    g = Graph("lstm_cell")
    x, hx, cx = (g.add_input(TensorType("float32", (64, 256)), n) for n in ("x", "hx", "cx"))
    w_ih, w_hh = (g.add_input(TensorType("float32", (1024, 256)), n) for n in ("w_ih", "w_hh"))
    b_ih, b_hh = (g.add_input(TensorType("float32", (1024,)), n) for n in ("b_ih", "b_hh"))
    src = lambda line, col: SourceRange("cell.py", line, col)
    none = g.constant(None)
    w_ih_t = emit(g, "tensor::transpose", w_ih, none)
    gates = emit(g, "tensor::matmul", x, w_ih_t, source=src(3, 12))
    gates = emit(g, "tensor::add", gates, b_ih, names=["gates"], source=src(3, 12))
    hh = emit(g, "tensor::matmul", hx, emit(g, "tensor::transpose", w_hh, none))
    gates = emit(g, "tensor::add", gates, hh, names=["gates"], source=src(3, 30))
    gates = emit(g, "tensor::add", gates, b_hh, names=["gates"], source=src(3, 40))
    i, f, c, o = emit(g, "tensor::chunk", gates, g.constant(4), g.constant(1),
                      names=["i", "f", "g", "o"], source=src(4, 4))
    g.set_outputs(list(lstm_state_update(g, i, f, c, o, cx)))
    return g


def fusion_subgraph(n_inputs: int = 2) -> Graph:
    sub = Graph()
    ps = [sub.add_input(F, "p") for _ in range(n_inputs)]
    t = emit(sub, "tensor::tanh", ps[0])
    sub.set_outputs([emit(sub, "tensor::mul", t, ps[-1])])
    return sub


# -- exact text ---------------------------------------------------------------------------------
def test_prints_torchscript_style_text():
    g = Graph()
    x = g.add_input(F, "x")
    w = g.add_input(TENSOR, "w")
    one = g.constant(1)
    mm = emit(g, "tensor::matmul", x, w, source=SourceRange("cell.py", 12, 4))
    cond = g.constant(True, name="c")
    node = g.insert("prim::If", [cond], [TENSOR, TENSOR], nblocks=2, names=["a", "b"])
    for block in node.blocks:
        with g.inserting_before(block):
            y = emit(g, "tensor::add", mm, one, names=["y"])
        block.set_returns([y, x])
    g.insert("prim::Print", [node.outputs[0]])
    r = g.insert("prim::FusionGroup", [x, x], [F], {SUBGRAPH: fusion_subgraph()}, names=["r"])
    g.set_outputs([r.output, node.outputs[1]])
    assert str(g) == """\
graph(%x : Float(64, 512),
      %w : Tensor):
  %0 : int = prim::Constant[value=1]()
  %1 : Tensor = tensor::matmul(%x, %w) # cell.py:12:4
  %c : bool = prim::Constant[value=True]()
  %a : Tensor, %b : Tensor = prim::If(%c)
    block0():
      %y : Tensor = tensor::add(%1, %0)
      -> (%y, %x)
    block1():
      %y.1 : Tensor = tensor::add(%1, %0)
      -> (%y.1, %x)
   = prim::Print(%a)
  %r : Float(64, 512) = prim::FusionGroup_0(%x, %x)
  return (%r, %b)
with prim::FusionGroup_0 = graph(%p : Float(64, 512),
      %p.1 : Float(64, 512)):
  %0 : Float(64, 512) = tensor::tanh(%p)
  %1 : Float(64, 512) = tensor::mul(%0, %p.1)
  return (%1)
"""
    round_trip(g)


def test_names_are_unique_readable_and_avoid_hints():
    g = Graph()
    a = g.add_input(TENSOR, "x")
    b = g.add_input(TENSOR, "x")
    c = g.add_input(TENSOR, "x.1")  # a later value's hint is not stolen by the repeat of "x"
    d = g.add_input(TENSOR, None)
    e = g.add_input(TENSOR, "0")  # nor a number
    f = g.add_input(TENSOR, "bad name!")
    g.set_outputs([a, b, c, d, e, f])
    header, ret = str(g).splitlines()[0], str(g).splitlines()[-1]
    assert header.startswith("graph(%x : Tensor,")
    assert ret == "  return (%x, %x.2, %x.1, %1, %0, %bad_name_)"
    round_trip(g)


def test_zero_inputs_and_outputs():
    g = Graph()
    g.insert("prim::Print", [g.constant("hi")])
    assert str(g) == 'graph():\n  %0 : str = prim::Constant[value="hi"]()\n   = prim::Print(%0)\n' \
                     "  return ()\n"
    round_trip(g)


# -- round trips of hand-built graphs ------------------------------------------------------------
def test_lstm_cell_round_trip():
    g = lstm_cell_graph()
    text = str(g)
    assert "%gates.2 : Float(64, 1024) = tensor::add(%gates.1, %b_hh) # cell.py:3:40" in text
    assert "%i : Float(64, 256), %f : Float(64, 256), %g : Float(64, 256), %o : Float(64, 256)" \
           " = tensor::chunk(%gates.2, %5, %6) # cell.py:4:4" in text
    parsed = round_trip(g)
    assert [v.name for v in parsed.inputs] == ["x", "hx", "cx", "w_ih", "w_hh", "b_ih", "b_hh"]
    assert [n.kind for n in parsed.nodes()] == [n.kind for n in g.nodes()]
    assert [v.type for v in parsed.outputs] == [v.type for v in g.outputs]
    chunk = next(n for n in parsed.nodes() if n.kind == "tensor::chunk")
    assert chunk.source == SourceRange("cell.py", 4, 4)
    assert chunk.inputs[1].constant == 4


def loop_with_if() -> Graph:
    g = Graph()
    x = g.add_input(F, "x")
    n = g.add_input(INT, "n")
    loop = g.insert("prim::Loop", [n, g.constant(True), x], [F], nblocks=1, names=["h"])
    body = loop.blocks[0]
    i = body.add_param(INT, "i")
    h = body.add_param(F, "h")
    with g.inserting_before(body):
        cond = emit(g, "tensor::lt", i, g.constant(2))
        branch = g.insert("prim::If", [cond], [F], nblocks=2, names=["h"])
    with g.inserting_before(branch.blocks[0]):
        inner = g.insert("prim::Loop", [g.constant(3), g.constant(True), h], [F], nblocks=1)
        ib = inner.blocks[0]
        ib.add_param(INT, "j")
        hp = ib.add_param(F, "h")
        with g.inserting_before(ib):
            ib.set_returns([g.constant(True), emit(g, "tensor::tanh", hp, names=["h"])])
    branch.blocks[0].set_returns([inner.output])
    branch.blocks[1].set_returns([h])
    with g.inserting_before(body):
        body.set_returns([g.constant(True), branch.output])
    g.set_outputs([loop.output])
    return g


def test_if_and_loop_nests_round_trip():
    g = loop_with_if()
    text = str(g)
    assert "  %h : Float(64, 512) = prim::Loop(%n, %0, %x)\n" \
           "    block0(%i : int, %h.1 : Float(64, 512)):\n" in text
    parsed = round_trip(g)
    loop = parsed.nodes()[-1]
    assert loop.kind == "prim::Loop" and len(loop.blocks[0].params) == 2
    nested_if = [n for n in loop.blocks[0] if n.kind == "prim::If"][0]
    assert [len(b.nodes) for b in nested_if.blocks] == [3, 0]
    assert nested_if.blocks[1].returns[0] is loop.blocks[0].params[1]


def test_tuples_and_lists_round_trip():
    g = Graph()
    x = g.add_input(TENSOR, "x")
    one = emit(g, "prim::TupleConstruct", x, names=["t"])
    pair = emit(g, "prim::TupleConstruct", x, g.constant(2), names=["t"])
    empty = g.insert("prim::TupleConstruct", [], [TupleType(())]).output
    a, b = g.insert("prim::TupleUnpack", [pair], list(pair.type.elements)).outputs
    lst = emit(g, "prim::ListConstruct", x, a)
    empty_list = g.insert("prim::ListConstruct", [], [ListType(TENSOR)]).output
    g.insert("prim::ListAppend", [empty_list, x])
    g.set_outputs([one, empty, lst, empty_list, b])
    text = str(g)
    assert "%t : (Tensor,) = prim::TupleConstruct(%x)" in text
    assert "%1 : () = prim::TupleConstruct()" in text
    parsed = round_trip(g)
    assert parsed.outputs[0].type == TupleType((TENSOR,))
    assert parsed.outputs[1].type == TupleType(())
    assert parsed.outputs[3].type == ListType(TENSOR)


CONSTANTS = [
    0, -7, 2**80, 1.0, -0.0, 1e-05, 1.5e300, math.inf, -math.inf, 0.1, True, False, None,
    "", 'quote " and \\ backslash\n\ttab \x00 é \u2028', (), (1,), (1, 2.5, "s"), [], [1, 2],
    [[1.0], []], ((True,), (None, "x")),
    np.array([[1.0, 2.0], [3.0, 4.5]], dtype=np.float32), np.array(3.25),
    np.array([1, -2, 3], dtype=np.int32), np.array([True, False]), np.zeros((0,)),
    np.array([0.1, 65504.0], dtype=np.float16),
]


@pytest.mark.parametrize("value", CONSTANTS, ids=repr)
def test_constant_attribute_round_trip(value):
    g = Graph()
    g.set_outputs([g.constant(value)])
    parsed = round_trip(g)
    got = parsed.outputs[0].constant
    if isinstance(value, np.ndarray):
        assert got.dtype == value.dtype and got.shape == value.shape
        np.testing.assert_array_equal(got, value)
    else:
        assert got == value and type(got) is type(value)
        assert repr(got) == repr(value)  # 1 stays an int, 1.0 a float, -0.0 keeps its sign


def test_nan_and_large_array_constants():
    g = Graph()
    big = np.ones((512, 2048), dtype=np.float32)
    g.set_outputs([g.constant(math.nan), g.constant(big)])
    text = str(g)
    assert "prim::Constant[value=array(Float(512, 2048), ...)]()" in text
    parsed = round_trip(g)
    assert math.isnan(parsed.outputs[0].constant)
    read = parsed.outputs[1].constant
    assert read.shape == (512, 2048) and read.dtype == np.float32 and not read.any()


def test_every_attribute_kind_on_one_node():
    g = Graph()
    x = g.add_input(TENSOR, "x")
    attrs = {"i": 3, "f": 2.0, "b": False, "n": None, "s": "a\"b", "t": (1, "x"), "l": [1.5],
             "ty": ListType(TENSOR), "opt": OptionalType(TupleType((INT, FLOAT))),
             "d": DictType(STR, TensorType("float64", (None, 3))), "cls": ClassType("Cell"),
             "dtype": "float32", "arr": np.arange(3, dtype=np.int64)}
    node = g.insert("prim::GetAttr", [x], [TENSOR], attrs, names=["y"])
    g.set_outputs([node.output])
    line = str(g).splitlines()[1]
    assert line == (
        '  %y : Tensor = prim::GetAttr[arr=array(Long(3), [0, 1, 2]), b=False, cls=__class__.Cell, '
        'd=Dict(str, Double(*, 3)), dtype="float32", f=2.0, i=3, l=[1.5], n=None, '
        'opt=(int, float)?, s="a\\"b", t=(1, "x"), ty=Tensor[]](%x)')
    got = round_trip(g).nodes()[0].attrs
    assert {k: v for k, v in got.items() if k != "arr"} == \
           {k: v for k, v in attrs.items() if k != "arr"}
    assert got["cls"] == ClassType("Cell") and got["i"] == 3 and type(got["f"]) is float


def test_every_type_form_round_trips():
    types = [TENSOR, F, TensorType("float64", (None, 512)), TensorType("float32", (3,), "cpu"),
             TensorType("float32", ()), TensorType("float32"), TensorType(None, (2, 3)),
             TensorType(None, None, "cuda"), TensorType("bool", (1,), "cuda"),
             TensorType("float32", None, "cpu"), TensorType("float32", (), "cpu"),
             INT, FLOAT, BOOL, STR, NONE, ir.types.DEVICE, ir.ANY, TupleType(()),
             TupleType((TENSOR,)), TupleType((TupleType((INT,)), ListType(TENSOR))),
             ListType(ListType(INT)), OptionalType(TENSOR), ListType(OptionalType(FLOAT)),
             DictType(INT, DictType(STR, TENSOR)), ClassType("models.Cell")]
    g = Graph()
    for t in types:
        g.add_input(t, "v")
    parsed = round_trip(g)
    assert [v.type for v in parsed.inputs] == types
    text = str(g)
    assert "Float(3, device=cpu)" in text and "Float()" in text and "%v.25" in text
    assert "Float(..., device=cpu)" in text and "Float(device=cpu)" in text  # rank unknown / 0


def test_fusion_group_in_a_loop():
    g = Graph()
    x = g.add_input(F, "x")
    loop = g.insert("prim::Loop", [g.constant(10), g.constant(True), x], [F], nblocks=1)
    body = loop.blocks[0]
    body.add_param(INT, "i")
    h = body.add_param(F, "h")
    with g.inserting_before(body):
        fg = g.insert("prim::FusionGroup", [h, x], [F], {SUBGRAPH: fusion_subgraph()})
        body.set_returns([g.constant(True), fg.output])
    g.set_outputs([loop.output])
    text = str(g)
    assert "prim::FusionGroup_0(%h, %x)" in text
    assert "\nwith prim::FusionGroup_0 = graph(%p : Float(64, 512),\n" in text
    parsed = round_trip(g)
    inner = [n for n in parsed.nodes()[-1].blocks[0] if n.kind == "prim::FusionGroup"][0]
    assert [n.kind for n in inner.subgraph.nodes()] == ["tensor::tanh", "tensor::mul"]


def test_differentiable_graph_containing_fusion_groups():
    dg = Graph()
    a = dg.add_input(F, "a")
    f0 = dg.insert("prim::FusionGroup", [a, a], [F], {SUBGRAPH: fusion_subgraph()}, names=["u"])
    f1 = dg.insert("prim::FusionGroup", [f0.output, a], [F], {SUBGRAPH: fusion_subgraph()})
    dg.set_outputs([f1.output])
    g = Graph()
    x = g.add_input(F, "x")
    d = g.insert("prim::DifferentiableGraph", [x], [F], {SUBGRAPH: dg, "tag": 1})
    f = g.insert("prim::FusionGroup", [d.output, x], [F], {SUBGRAPH: fusion_subgraph()})
    g.set_outputs([f.output])
    text = str(g)
    headers = [line.split(" = graph")[0] for line in text.splitlines() if line.startswith("with")]
    # pre-order: the differentiable graph's own sections come right after it, numbered within it
    assert headers == ["with prim::DifferentiableGraph_0", "with prim::FusionGroup_0",
                       "with prim::FusionGroup_1", "with prim::FusionGroup_1"]
    assert "prim::DifferentiableGraph_0[tag=1](%x)" in text
    parsed = round_trip(g)
    pd, pf = parsed.nodes()
    assert pd.attrs["tag"] == 1
    assert [n.kind for n in pd.subgraph.nodes()] == ["prim::FusionGroup"] * 2
    assert pd.subgraph.nodes()[0].outputs[0].name == "u"
    assert [n.kind for n in pf.subgraph.nodes()] == ["tensor::tanh", "tensor::mul"]


def test_types_may_be_left_out_and_comments_and_layout_are_free():
    text = """
    # CHECK: a comment line is ignored
    graph(%x : Float(2, 3), %y):   # inputs without a type are Tensors
      %z = tensor::add(%x, %x)  # f.py:1:2
      # another comment
      %s : Float(2, 3) = tensor::neg(%z) return (%s, %y)
    """
    g = parse(text)
    assert g.inputs[1].type == TENSOR
    add = g.nodes()[0]
    assert add.outputs[0].type == TensorType("float32", (2, 3))
    assert add.source == SourceRange("f.py", 1, 2)


def test_parser_is_built_once():
    from ir import parser
    parse("graph():\n  return ()\n")
    assert parser._parser() is parser._parser()


# -- property tests ------------------------------------------------------------------------------
@settings(max_examples=100, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(graphs())
def test_random_graphs_round_trip(g):
    parsed = round_trip(g)
    assert [n.kind for n in parsed.walk()] == [n.kind for n in g.walk()]
    assert [len(n.blocks) for n in parsed.walk()] == [len(n.blocks) for n in g.walk()]
    assert [v.type for v in parsed.inputs] == [v.type for v in g.inputs]


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(graphs(max_nodes=6), st.data())
def test_mutated_text_only_raises_parse_error(g, data):
    text = str(g)
    for _ in range(data.draw(st.integers(1, 3))):
        pos = data.draw(st.integers(0, len(text)))
        if data.draw(st.booleans()) and pos < len(text):
            text = text[:pos] + text[pos + 1:]
        else:
            text = text[:pos] + data.draw(st.sampled_from(list('%():,=[]"#?*.-0a \n'))) + text[pos:]
    try:
        parse(text)
    except ParseError as e:
        assert e.line >= 1 and e.column >= 1


# -- malformed text -------------------------------------------------------------------------------
H = "graph(%x : Float(2, 3)):\n"
IF_HEAD = H + "  %c : bool = prim::Constant[value=True]()\n  %y : Tensor = prim::If(%c)\n"
SUB = "  %y : Tensor = prim::FusionGroup_0(%x)\n  return (%y)\n"
MALFORMED = [
    # (text, line, column, words the message must contain)
    (H + "  %y : Tensor = tensor::frob(%x)\n  return (%y)\n", 2, 17,
     "unknown op kind tensor::frob"),
    (H + "  %y : Tensor = tensor::neg(%z)\n  return (%y)\n", 2, 29, "undefined value %z"),
    (H + "  %y : Tensor = tensor::neg(%x)\n  return (%q)\n", 3, 11, "undefined value %q"),
    (H + "  %x : Tensor = tensor::neg(%x)\n  return (%x)\n", 2, 3, "%x is defined twice"),
    (H + "  %y : Tensor, %y : Tensor = prim::TupleUnpack(%x)\n  return ()\n", 2, 16,
     "%y is defined twice"),
    (H + "  %y : Flot(2) = tensor::neg(%x)\n  return (%y)\n", 2, 8, "unknown type 'Flot'"),
    (H + "  %y : Float(2, n) = tensor::neg(%x)\n  return (%y)\n", 2, 17, "tensor dimension"),
    ("graph(%x : Dict(str)):\n  return ()\n", 1, 12, "Dict takes a key and a value type"),
    ("graph(%x : [Tensor]):\n  return ()\n", 1, 12, "list literal is not a type"),
    (H + "  %y : Tensor = tensor::neg(%x\n  return (%y)\n", 3, 3, "expected ')' or ','"),
    (H + "  %y : Tensor = tensor::neg(%x)\n", 2, 32, "expected '# file:line:col', '->', '=', "
     "'return'"),
    (H + "  %y : Tensor = tensor::neg(%x) @\n  return (%y)\n", 2, 33, "unexpected character '@'"),
    (H + "  %y : int = prim::Constant[value=01x]()\n  return (%y)\n", 2, 37,
     "unexpected name 'x'"),
    (H + "  %y : int = prim::Constant[value=foo]()\n  return (%y)\n", 2, 35,
     "bad attribute value: unknown name 'foo'"),
    (H + "  %y : int = prim::Constant[value=(1)]()\n  return (%y)\n", 2, 36,
     "1-tuple is written with a trailing comma"),
    (H + "  %y : str = prim::Constant[value=\"abc]()\n  return (%y)\n", 2, 35,
     "unterminated string"),
    (H + "  %y : str = prim::Constant[value=\"a\\qb\"]()\n  return (%y)\n", 2, 35, "bad escape"),
    (H + "  %y : int = prim::Constant[value=1, value=2]()\n  return (%y)\n", 2, 38,
     "attribute value is given twice"),
    (H + "  %y : Tensor = prim::Constant[value=array(Float(2), [1.0])]()\n  return (%y)\n", 2, 54,
     "has 2 element(s), found 1"),
    (IF_HEAD + "    block0():\n      -> (%x, %x)\n    block1():\n      -> (%x)\n  return (%y)\n",
     5, 7, "each branch of prim::If must return 1 value(s), found 2"),
    (IF_HEAD + "    block0():\n      -> (%x)\n  return (%y)\n", 3, 17,
     "prim::If takes 2 block(s), found 1"),
    (IF_HEAD + "    block0(%p : int):\n      -> (%x)\n    block1():\n      -> (%x)\n"
     "  return (%y)\n", 4, 5, "each branch of prim::If takes 0 block parameter(s), found 1"),
    (IF_HEAD + "    block1():\n      -> (%x)\n    block0():\n      -> (%x)\n  return (%y)\n",
     4, 5, "expected block0 here, found block1"),
    (IF_HEAD + "    block0():\n      %t : Tensor = tensor::neg(%x)\n      -> (%t)\n"
     "    block1():\n      -> (%x)\n  return (%t)\n", 9, 11, "%t is not visible here"),
    (H + "  %y : Tensor = tensor::neg(%x) # cell.py:12\n  return (%y)\n", 2, 33,
     "bad source position"),
    (H + "  %y : Tensor = tensor::neg(%x)\n  %z : Tensor = tensor::neg(%y)\n", 3, 32,
     "unexpected end of text"),
    (H + SUB, 2, 17, "no `with prim::FusionGroup_0 = graph(...)` section"),
    (H + SUB + "with prim::FusionGroup_1 = graph(%p : Tensor):\n  return (%p)\n", 4, 6,
     "expected the section for prim::FusionGroup_0, found prim::FusionGroup_1"),
    (H + SUB + "with prim::FusionGroup_0 = graph(%p : Tensor):\n  return (%p)\n"
     "with prim::FusionGroup_1 = graph(%p : Tensor):\n  return (%p)\n", 6, 6,
     "belongs to no subgraph node"),
    (H + "  %y : Tensor = prim::FusionGroup_1(%x)\n  return (%y)\n", 2, 17,
     "expected prim::FusionGroup_0"),
    (H + SUB + "with prim::FusionGroup_0 = graph(%p : Tensor):\n  return (%x)\n", 5, 11,
     "undefined value %x"),  # a section has its own names
    (H + "  %y = prim::If(%x)\n  return (%y)\n", 2, 3, "cannot infer the type of %y"),
    (H + "  %y : Tensor = prim::Loop(%x)\n    block0():\n      -> ()\n  return (%y)\n", 2, 17,
     "prim::Loop takes (max_trip_count, cond, *carried)"),
    ("graf():\n  return ()\n", 1, 1, "expected 'graph'"),
    ("", 1, 1, "unexpected end of text"),
]


@pytest.mark.parametrize("text,line,column,words", MALFORMED, ids=[m[3] for m in MALFORMED])
def test_malformed_text_raises_parse_error(text, line, column, words):
    with pytest.raises(ParseError) as info:
        parse(text)
    err = info.value
    assert words in str(err)
    assert (err.line, err.column) == (line, column), str(err)


def test_parse_error_quotes_the_line_with_a_caret():
    with pytest.raises(ParseError) as info:
        parse(H + "  %y : Tensor = tensor::frob(%x)\n  return (%y)\n")
    assert str(info.value).endswith("    %y : Tensor = tensor::frob(%x)\n                  ^")
    assert info.value.token == "tensor::frob"


def test_deep_nesting_never_exhausts_the_stack():
    depth = 3000
    text = "graph(%x : " + "(" * depth + "Tensor" + ",)" * depth + "):\n  return ()\n"
    t = parse(text).inputs[0].type
    for _ in range(depth):
        assert isinstance(t, TupleType)
        t = t.elements[0]
    assert t == TENSOR
    with pytest.raises(ParseError):
        parse("graph(%x : " + "(" * depth + "Tensor):\n  return ()\n")
    lines = [H, "  %c : bool = prim::Constant[value=True]()\n"]
    for k in range(depth):
        lines.append(f"{'  ' * (k + 1)}%v{k} : Tensor = prim::If(%c)\n{'  ' * (k + 2)}block0():\n")
    lines.append(f"{'  ' * (depth + 2)}-> (%x)\n")
    for k in reversed(range(depth)):
        lines.append(f"{'  ' * (k + 2)}block1():\n{'  ' * (k + 3)}-> (%x)\n")
        if k:
            lines.append(f"{'  ' * (k + 2)}-> (%v{k})\n")
    lines.append("  return (%v0)\n")
    # each level returns its own If's value from block0, so the text is well formed
    g = parse("".join(lines))
    assert str(parse(str(g))) == str(g)


# -- size ------------------------------------------------------------------------------------------
def chain_graph(n: int) -> Graph:
    g = Graph()
    x = g.add_input(F, "x")
    h = x
    for k in range(n):
        h = emit(g, "tensor::tanh" if k % 2 else "tensor::add", *((h,) if k % 2 else (h, x)),
                 names=["h"], source=SourceRange("cell.py", k + 1, 4))
    g.set_outputs([h])
    return g


def test_parses_a_thousand_node_graph():
    g = chain_graph(1000)
    text = str(g)
    start = time.perf_counter()
    parsed = parse(text)
    elapsed = time.perf_counter() - start
    print(f"parsed 1000 nodes in {elapsed * 1000:.1f} ms")
    assert len(parsed.nodes()) == 1000
    assert parsed.outputs[0].name == "h.999"
    assert parsed.nodes()[-1].inputs[0] is parsed.nodes()[-2].outputs[0]
    assert str(parsed) == text
