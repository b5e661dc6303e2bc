"""The Python frontend: graphs for the fastrnns cells and for each language feature.

Each program is compiled with ``compile_function`` and (1) checked structurally — node kinds,
output types, If/Loop block arity — and (2) run by a small reference interpreter
(tests/graph_interp.py) against the plain Python function.
"""

import typing
from collections import Counter

import numpy as np
import pytest

import ir
from ir.types import BOOL, FLOAT, INT, TENSOR, ListType, OptionalType, TupleType
from script import Tensor, script
from script.frontend.compiler import compile_function
from script.frontend.definition import FunctionDef
from tests.graph_interp import ScriptRuntimeError, run_graph
from tests.helpers import assert_same
from tests.programs import frontend as P


def compile_ok(fn) -> FunctionDef:
    fdef = compile_function(fn)
    fdef.graph.verify()
    return fdef


def kinds(graph) -> Counter:
    return Counter(node.kind for node in graph.walk())


def arr(rng, *shape):
    return rng.standard_normal(shape)


def lstm_weights(rng, inp, hid):
    return (arr(rng, 4 * hid, inp), arr(rng, 4 * hid, hid), arr(rng, 4 * hid), arr(rng, 4 * hid))


def cell_args(rng, gates):
    b, i, h = 3, 5, 4
    return (arr(rng, b, i), arr(rng, b, h), arr(rng, gates * h, i), arr(rng, gates * h, h),
            arr(rng, gates * h), arr(rng, gates * h))


CASES = {
    "lstm_cell": (P.lstm_cell, lambda r: (arr(r, 3, 5), (arr(r, 3, 4), arr(r, 3, 4)),
                                          *lstm_weights(r, 5, 4))),
    "flat_lstm_cell": (P.flat_lstm_cell, lambda r: (arr(r, 3, 5), arr(r, 3, 4), arr(r, 3, 4),
                                                    *lstm_weights(r, 5, 4))),
    "gru_cell": (P.gru_cell, lambda r: cell_args(r, 3)),
    "rnn_tanh_cell": (P.rnn_tanh_cell, lambda r: cell_args(r, 1)),
    "rnn_relu_cell": (P.rnn_relu_cell, lambda r: cell_args(r, 1)),
    "milstm_cell": (P.milstm_cell, lambda r: (arr(r, 1, 5), arr(r, 1, 1), arr(r, 1, 1),
                                              arr(r, 4, 5), arr(r, 4, 1), *(arr(r, 4) for _ in
                                                                            range(4)))),
    "lstm_layer": (P.lstm_layer, lambda r: (arr(r, 6, 3, 5), (arr(r, 3, 4), arr(r, 3, 4)),
                                            *lstm_weights(r, 5, 4))),
    "stacked_lstm": (P.stacked_lstm, lambda r: (
        arr(r, 4, 2, 3), [(arr(r, 2, 3), arr(r, 2, 3)) for _ in range(3)],
        [lstm_weights(r, 3, 3) for _ in range(3)])),
    "arithmetic": (P.arithmetic, lambda r: (arr(r, 3, 4), arr(r, 3, 4), 2)),
    "comparisons": (P.comparisons, lambda r: (1, 2, 3)),
    "comparisons_false": (P.comparisons, lambda r: (3, 3, 1)),
    "conditional_true": (P.conditional_expression, lambda r: (arr(r, 3), True)),
    "conditional_false": (P.conditional_expression, lambda r: (arr(r, 3), False)),
    "branches_if": (P.branches, lambda r: (arr(r, 3), 5)),
    "branches_elif": (P.branches, lambda r: (arr(r, 3), -2)),
    "branches_else": (P.branches, lambda r: (arr(r, 3), 0)),
    "while_loop": (P.while_loop, lambda r: (arr(r, 3), 4)),
    "while_loop_zero": (P.while_loop, lambda r: (arr(r, 3), 0)),
    "range_forms": (P.range_forms, lambda r: (9,)),
    "range_forms_empty": (P.range_forms, lambda r: (-3,)),
    "break_continue": (P.break_continue, lambda r: (20,)),
    "break_continue_short": (P.break_continue, lambda r: (4,)),
    "while_break": (P.while_break, lambda r: (arr(r, 2),)),
    "early_return_neg": (P.early_return, lambda r: (arr(r, 3), -1)),
    "early_return_loop": (P.early_return, lambda r: (arr(r, 3), 10)),
    "early_return_short": (P.early_return, lambda r: (arr(r, 3), 2)),
    "return_both_true": (P.return_in_both_branches, lambda r: (arr(r, 3), True)),
    "return_both_false": (P.return_in_both_branches, lambda r: (arr(r, 3), False)),
    "optional_some": (P.optional_arg, lambda r: (arr(r, 3), arr(r, 3))),
    "optional_none": (P.optional_arg, lambda r: (arr(r, 3), None)),
    "optional_exit_none": (P.optional_early_exit, lambda r: (arr(r, 3), None)),
    "optional_exit_some": (P.optional_early_exit, lambda r: (arr(r, 3), arr(r, 3))),
    "tuple_loop": (P.tuple_loop, lambda r: (arr(r, 3),)),
    "list_ops": (P.list_ops, lambda r: (arr(r, 3),)),
    "enumerate_zip": (P.enumerate_zip, lambda r: ([arr(r, 2) for _ in range(3)],
                                                  [arr(r, 2) for _ in range(4)])),
    "indexing": (P.indexing, lambda r: (arr(r, 4, 3), 2)),
    "shapes": (P.shapes, lambda r: (arr(r, 2, 3),)),
    "tuples": (P.tuples, lambda r: ((arr(r, 2), 3, 1.5),)),
    "globals_and_asserts": (P.globals_and_asserts, lambda r: (arr(r, 2, 3), 1)),
    "dtypes": (P.dtypes, lambda r: (arr(r, 2, 3),)),
    "builtins_on_scalars": (P.builtins_on_scalars, lambda r: (4, 2.7)),
    "annotated_locals": (P.annotated_locals, lambda r: (arr(r, 2), 3)),
    "annotated_locals_zero": (P.annotated_locals, lambda r: (arr(r, 2), 0)),
    "string_annotations": (P.string_annotations, lambda r: (arr(r, 2), 1)),
    "dict_lookup": (P.dict_lookup, lambda r: ({"a": arr(r, 2)}, arr(r, 2))),
    "calls_helper": (P.calls_helper, lambda r: (arr(r, 2),)),
    "method_spellings": (P.method_spellings, lambda r: (arr(r, 2, 3),)),
    "nested_loops": (P.nested_loops, lambda r: (5, 4)),
    "closure": (P.closure_fn, lambda r: (arr(r, 2),)),
    "rows_and_raise": (P.rows_and_raise, lambda r: (arr(r, 3, 2), 100.0)),
    "optional_else_none": (P.optional_else, lambda r: (arr(r, 2), None)),
    "optional_else_some": (P.optional_else, lambda r: (arr(r, 2), arr(r, 2))),
    "while_continue": (P.w_continue, lambda r: (10,)),
    "while_continue_zero": (P.w_continue, lambda r: (0,)),
    "nested_return": (P.nested_ret, lambda r: (5,)),
    "nested_return_none": (P.nested_ret, lambda r: (2,)),
    "unrolled_break": (P.unrolled_break, lambda r: (arr(r, 3),)),
    "unrolled_continue_1": (P.unrolled_continue_ret, lambda r: (arr(r, 3), 1)),
    "unrolled_continue_2": (P.unrolled_continue_ret, lambda r: (arr(r, 3), 2)),
    "unrolled_continue_3": (P.unrolled_continue_ret, lambda r: (arr(r, 3), 3)),
    "widen": (P.widen, lambda r: ([arr(r, 2), arr(r, 2)],)),
    "widen_empty": (P.widen, lambda r: ([],)),
    "no_parameters": (P.no_parameters, lambda r: ()),
    "loop_index_after": (P.loop_index_after, lambda r: (3,)),
    "loop_index_after_zero": (P.loop_index_after, lambda r: (0,)),
    "while_return": (P.while_ret, lambda r: (arr(r, 3), 5)),
    "while_return_late": (P.while_ret, lambda r: (arr(r, 3), 1)),
    "continue_keeps_values": (P.continue_keeps_values, lambda r: (5,)),
    "break_keeps_values": (P.break_keeps_values, lambda r: (6,)),
    "nested_branch_return_tt": (P.return_in_nested_branch, lambda r: (True, True)),
    "nested_branch_return_tf": (P.return_in_nested_branch, lambda r: (True, False)),
    "nested_branch_return_ff": (P.return_in_nested_branch, lambda r: (False, False)),
}


@pytest.mark.parametrize("name", sorted(CASES))
def test_graph_computes_what_python_computes(name):
    fn, make_args = CASES[name]
    fdef = compile_ok(fn)
    args = make_args(np.random.default_rng(0))
    globals_read = [ref.read() for ref in fdef.attr_refs]  # global arrays are inputs too
    assert_same(run_graph(fdef.graph, *args, *globals_read), fn(*args), rtol=1e-12)


# -- structure of the cells -------------------------------------------------------------------
def test_lstm_cell_graph_structure():
    fdef = compile_ok(P.lstm_cell)
    assert fdef.name == "lstm_cell"
    assert fdef.arg_names == ["x", "hidden", "w_ih", "w_hh", "b_ih", "b_hh"]
    assert fdef.arg_types[1] == TupleType((TENSOR, TENSOR))
    assert fdef.return_type == TupleType((TENSOR, TENSOR))
    k = kinds(fdef.graph)
    assert k["tensor::matmul"] == 2 and k["tensor::transpose"] == 2
    assert k["tensor::chunk"] == 1 and k["tensor::sigmoid"] == 3 and k["tensor::tanh"] == 2
    assert k["prim::If"] == 0 and k["prim::Loop"] == 0
    chunk = next(n for n in fdef.graph.walk() if n.kind == "tensor::chunk")
    assert len(chunk.outputs) == 4
    assert [v.name for v in chunk.outputs] == ["ingate", "forgetgate", "cellgate", "outgate"]
    (out,) = fdef.graph.outputs
    assert out.node.kind == "prim::TupleConstruct"
    assert [v.name for v in out.node.inputs] == ["hy", "cy"]


def test_type_comment_gives_the_signature():
    fdef = compile_ok(P.flat_lstm_cell)
    assert fdef.arg_types == [TENSOR] * 7
    assert fdef.return_type == TupleType((TENSOR, TENSOR))


def test_lstm_layer_is_a_loop_over_the_first_axis():
    fdef = compile_ok(P.lstm_layer)
    loops = [n for n in fdef.graph.walk() if n.kind == "prim::Loop"]
    assert len(loops) == 1
    (loop,) = loops
    trip = loop.inputs[0].node
    assert trip.kind == "tensor::size"
    body = loop.blocks[0]
    assert [p.type for p in body.params] == [INT, TupleType((TENSOR, TENSOR))]
    assert len(body.returns) == 2 and body.returns[0].type == BOOL
    assert [n.kind for n in body.nodes].count("tensor::select") == 1
    assert kinds(fdef.graph)["prim::ListExtend"] == 1
    assert kinds(fdef.graph)["tensor::stack"] == 1
    call = next(n for n in fdef.graph.walk() if n.kind == "prim::CallFunction")
    assert call.attrs["name"] == "lstm_cell"
    assert isinstance(call.attrs["Subgraph"], ir.Graph)
    assert call.attrs["Subgraph"] is not compile_function(P.lstm_cell).graph


def test_stacked_lstm_loops_over_a_list_of_weight_tuples():
    fdef = compile_ok(P.stacked_lstm)
    k = kinds(fdef.graph)
    assert k["prim::Loop"] == 2
    assert k["prim::ListIndex"] == 2  # weights[layer], states[layer]
    assert k["prim::TupleUnpack"] >= 1
    outer = next(n for n in fdef.graph.nodes() if n.kind == "prim::Loop")
    assert outer.inputs[0].node.kind == "prim::len"
    assert [v.name for v in outer.outputs] == ["out"]


@pytest.mark.parametrize("fn", [P.gru_cell, P.rnn_tanh_cell, P.rnn_relu_cell, P.milstm_cell])
def test_cells_are_straight_line_code(fn):
    fdef = compile_ok(fn)
    k = kinds(fdef.graph)
    assert k["prim::If"] == k["prim::Loop"] == 0
    assert k["tensor::matmul"] == 2
    assert all(n.source is not None for n in fdef.graph.walk())


# -- control flow -----------------------------------------------------------------------------
def test_if_outputs_are_the_names_redefined_and_used_after():
    fdef = compile_ok(P.branches)
    ifs = [n for n in fdef.graph.nodes() if n.kind == "prim::If"]
    assert len(ifs) == 2
    assert [v.name for v in ifs[0].outputs] == ["y"]
    for node in ifs:
        assert len(node.blocks) == 2
        assert all(len(b.returns) == len(node.outputs) for b in node.blocks)
        assert all(not b.params for b in node.blocks)


def test_loop_carries_names_assigned_in_the_body_and_defined_before():
    fdef = compile_ok(P.while_loop)
    (loop,) = [n for n in fdef.graph.nodes() if n.kind == "prim::Loop"]
    assert loop.inputs[0].constant == 2**63 - 1
    assert [v.name for v in loop.outputs] == ["x", "i"]
    assert [v.type for v in loop.outputs] == [TENSOR, INT]
    body = loop.blocks[0]
    assert len(body.params) == 3 and len(body.returns) == 3


def test_for_over_a_tuple_is_unrolled():
    fdef = compile_ok(P.tuple_loop)
    k = kinds(fdef.graph)
    assert k["prim::Loop"] == 0
    assert k["tensor::add"] == 3 and k["tensor::mul"] == 3


def test_break_and_continue_become_flags():
    fdef = compile_ok(P.break_continue)
    (loop,) = [n for n in fdef.graph.nodes() if n.kind == "prim::Loop"]
    cond = loop.blocks[0].returns[0]
    assert cond.type == BOOL and not cond.node.kind == "prim::Constant"


def test_early_return_uses_placeholders_of_the_return_type():
    fdef = compile_ok(P.early_return)
    placeholders = [n for n in fdef.graph.walk() if n.kind == "prim::Uninitialized"]
    assert placeholders and all(n.output.type == TENSOR for n in placeholders)
    assert fdef.graph.outputs[0].type == TENSOR


def test_optional_refinement_unwraps_inside_the_branch():
    fdef = compile_ok(P.optional_arg)
    assert fdef.arg_types[1] == OptionalType(TENSOR)
    assert fdef.defaults == {"bias": None}
    k = kinds(fdef.graph)
    assert k["prim::IsNone"] == 1 and k["prim::unchecked_unwrap_optional"] == 1


def test_assert_raises_with_its_message():
    fdef = compile_ok(P.globals_and_asserts)
    raises = [n for n in fdef.graph.walk() if n.kind == "prim::RaiseException"]
    assert [r.inputs[0].constant for r in raises] == ["k must be non-negative", "AssertionError"]
    with pytest.raises(ScriptRuntimeError, match="k must be non-negative"):
        run_graph(fdef.graph, np.ones((2, 3)), -1)


def test_raise_statement_raises_when_run():
    fdef = compile_ok(P.rows_and_raise)
    (raise_node,) = [n for n in fdef.graph.walk() if n.kind == "prim::RaiseException"]
    assert raise_node.attrs["exception"] == "ValueError"
    with pytest.raises(ScriptRuntimeError, match="too large"):
        run_graph(fdef.graph, np.ones((3, 2)), 1.0)


def test_iterating_a_tensor_selects_rows():
    fdef = compile_ok(P.rows_and_raise)
    (loop,) = [n for n in fdef.graph.nodes() if n.kind == "prim::Loop"]
    assert loop.inputs[0].node.kind == "tensor::size"
    assert [n.kind for n in loop.blocks[0].nodes][0] == "tensor::select"


def test_global_scalars_are_constants_and_global_arrays_are_inputs():
    fdef = compile_ok(P.globals_and_asserts)
    values = [n.attrs["value"] for n in fdef.graph.walk() if n.kind == "prim::Constant"]
    assert 0.5 in values and math_pi() in values
    assert not any(isinstance(v, np.ndarray) for v in values)
    assert [ref.name for ref in fdef.attr_refs] == ["TABLE"]
    assert fdef.attr_refs[0].read() is P.TABLE
    assert fdef.graph.inputs[-1].name == "TABLE" and len(fdef.graph.inputs) == 3


def math_pi():
    import math
    return math.pi


def test_unannotated_function_returns_none_and_infers_its_type():
    fdef = compile_ok(P.implicit_none)
    assert fdef.return_type == ir.NONE
    assert fdef.arg_types == [TENSOR, ListType(TENSOR)]
    items = []
    assert run_graph(fdef.graph, np.ones(2), items) is None and len(items) == 1


def test_loop_carried_none_widens_to_optional():
    fdef = compile_ok(P.widen)
    (loop,) = [n for n in fdef.graph.nodes() if n.kind == "prim::Loop"]
    assert [p.type for p in loop.blocks[0].params] == [INT, OptionalType(TENSOR)]
    assert fdef.return_type == OptionalType(TENSOR)


def test_scalar_builtins_have_scalar_types():
    fdef = compile_ok(P.builtins_on_scalars)
    assert fdef.return_type == TupleType((INT, FLOAT, BOOL, INT, FLOAT))


def test_calls_to_python_functions_are_compiled_once_and_cached():
    fdef = compile_ok(P.calls_helper)
    calls = [n for n in fdef.graph.walk() if n.kind == "prim::CallFunction"]
    assert len(calls) == 2
    assert calls[0].inputs[1].constant == 2.0  # the callee's default, materialised
    assert compile_function(P.helper) is compile_function(P.helper)


def test_scripted_function_objects_are_recognised():
    class Wrapper:
        __rnnscript_function__ = compile_function(P.helper)
    assert compile_function(Wrapper()) is Wrapper.__rnnscript_function__


def test_source_ranges_are_absolute_lines_in_the_file():
    fdef = compile_ok(P.gru_cell)
    import inspect
    _, start = inspect.getsourcelines(P.gru_cell)
    lines = {n.source.line for n in fdef.graph.walk()}
    assert min(lines) == start + 2 and max(lines) == start + 9
    assert {n.source.file for n in fdef.graph.walk()} == {"frontend.py"}


def test_graph_prints_with_source_comments():
    text = str(compile_ok(P.lstm_layer).graph)
    assert "prim::Loop" in text and "frontend.py:" in text
    assert "tensor::stack" in text


def pair_bare(x: Tensor) -> tuple:
    return x, x * 2.0


def items_bare(x: Tensor) -> list:
    return [x, x + 1.0]


def named_bare(x: Tensor) -> dict:
    return {"a": x}


def pair_typing_bare(x: Tensor) -> typing.Tuple:
    return x, x.sum()


@pytest.mark.parametrize("fn", [pair_bare, items_bare, named_bare, pair_typing_bare],
                         ids=lambda f: f.__name__)
def test_a_bare_container_return_annotation_is_inferred(fn):
    """``-> tuple`` names no items: the result's type comes from the code, as Python (which
    checks no annotation) runs it."""
    x = np.arange(3.0)
    got, want = script(fn)(x), fn(x)
    assert type(got) is type(want)
    for g, w in zip(got.values() if isinstance(got, dict) else got,
                    want.values() if isinstance(want, dict) else want):
        np.testing.assert_array_equal(g, w)
