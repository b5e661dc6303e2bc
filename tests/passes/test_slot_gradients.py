"""The slot-gradients pass: a reverse loop whose trip count is known at run time writes each
step's gradient of ``x[t]`` into its slot instead of adding a whole-sequence array every step;
the values are those of the sums, and loops whose slots may repeat are left alone."""

from __future__ import annotations

import numpy as np
import pytest

import fuser.cpu.loop
import ir
import passes
from script import script, vjp
from script.runtime.codegen import generate
from tests.gradcheck import check_vjp

REVERSE = """
graph(%xs : Double(5, 2, 3), %g0 : Double(2, 3), %n : int, %z0 : Double(5, 2, 3)):
  %true : bool = prim::Constant[value=True]()
  %one : int = prim::Constant[value=1]()
  %zero : int = prim::Constant[value=0]()
  %shape : (int, int, int) = prim::Constant[value=(5, 2, 3)]()
  %dt : str = prim::Constant[value="float64"]()
  %z : Double(5, 2, 3) = tensor::zeros(%shape, %dt)
  %gx : Double(5, 2, 3), %g : Double(2, 3) = prim::Loop(%n, %true, %z, %g0)
    block0(%k : int, %gx.1 : Double(5, 2, 3), %g.1 : Double(2, 3)):
      %last : int = tensor::sub(%n, %one)
      %i : int = tensor::sub(%last, %k)
      %x : Double(2, 3) = tensor::select(%xs, %zero, %i)
      %g.2 : Double(2, 3) = tensor::mul(%g.1, %x)
      %s : Double(5, 2, 3) = tensor::select_backward(%g.2, %shape, %zero, %i)
      %gx.2 : Double(5, 2, 3) = tensor::add(%gx.1, %s)
      -> (%true, %gx.2, %g.2)
  return (%gx, %g)
"""


def _args(graph: ir.Graph, n: int) -> list:
    rng = np.random.default_rng(n)
    return [n if str(v.type) == "int" else rng.standard_normal(v.type.shape)
            for v in graph.inputs]


def _carried(graph: ir.Graph) -> list[str]:
    (loop,) = [n for n in graph.nodes() if n.kind == "prim::Loop"]
    return [str(v.type) for v in loop.outputs]


@pytest.mark.parametrize("n", [0, 1, 3, 5])
@pytest.mark.parametrize("index", ["reversed", "counter"])
def test_slots_written_in_place_hold_the_sums(n, index):
    text = REVERSE if index == "reversed" else REVERSE.replace(
        "%s : Double(5, 2, 3) = tensor::select_backward(%g.2, %shape, %zero, %i)",
        "%s : Double(5, 2, 3) = tensor::select_backward(%g.2, %shape, %zero, %k)")
    graph = ir.parse(text)
    want = generate(graph)[0](*_args(graph, n))
    assert passes.run_pipeline(graph, "slot-gradients,dce")
    graph.verify()
    assert _carried(graph) == ["Double(2, 3)"]  # the sequence's gradient is no longer carried
    body = [m.kind for m in graph.walk() if m.kind == "tensor::write_slot"]
    assert body == ["tensor::write_slot"]
    got = generate(graph)[0](*_args(graph, n))
    for g, w in zip(got, want):
        np.testing.assert_array_equal(g, w)


@pytest.mark.parametrize("change", [
    ("%last : int = tensor::sub(%n, %one)", "%last : int = tensor::add(%n, %zero)"),  # n - k
    ("%gx : Double(5, 2, 3), %g : Double(2, 3) = prim::Loop(%n, %true, %z, %g0)",
     "%gx : Double(5, 2, 3), %g : Double(2, 3) = prim::Loop(%n, %true, %z0, %g0)"),
    ("  return (%gx, %g)", "  %zz : Double(5, 2, 3) = tensor::add(%z, %gx)\n  return (%zz, %g)"),
    ("%gx.2 : Double(5, 2, 3) = tensor::add(%gx.1, %s)",
     "%gx.3 : Double(5, 2, 3) = tensor::add(%gx.1, %s)\n"
     "      %gx.2 : Double(5, 2, 3) = tensor::add(%gx.3, %gx.1)"),
], ids=["n-k may wrap", "not fresh zeros", "zeros read again", "the carry read twice"])
def test_sums_whose_slots_may_repeat_or_start_nonzero_are_left_alone(change):
    graph = ir.parse(REVERSE.replace(*change))
    before = str(graph)
    assert not passes.run_pipeline(graph, "slot-gradients")
    assert str(graph) == before


OUTER = """
graph(%xs : Double(5, 2, 3), %g0 : Double(2, 3), %n : int):
  %true : bool = prim::Constant[value=True]()
  %one : int = prim::Constant[value=1]()
  %zero : int = prim::Constant[value=0]()
  %shape : (int, int, int) = prim::Constant[value=(5, 2, 3)]()
  %dt : str = prim::Constant[value="float64"]()
  %z : Double(5, 2, 3) = tensor::zeros(%shape, %dt)
  %o : Double(5, 2, 3) = prim::Loop(%n, %true, %z)
    block0(%j : int, %o.1 : Double(5, 2, 3)):
      %gx : Double(5, 2, 3) = prim::Loop(%n, %true, %z)
        block0(%k : int, %gx.1 : Double(5, 2, 3)):
          %last : int = tensor::sub(%n, %one)
          %i : int = tensor::sub(%last, %k)
          %s : Double(5, 2, 3) = tensor::select_backward(%g0, %shape, %zero, %i)
          %gx.2 : Double(5, 2, 3) = tensor::add(%gx.1, %s)
          -> (%true, %gx.2)
      %o.2 : Double(5, 2, 3) = tensor::add(%o.1, %gx)
      -> (%true, %o.2)
  return (%o)
"""


def test_zeros_made_outside_an_enclosing_loop_are_left_alone():
    # written in place, the array would keep the slots of the outer loop's earlier trips
    graph = ir.parse(OUTER)
    before = str(graph)
    assert not passes.run_pipeline(graph, "slot-gradients")
    assert str(graph) == before


# -- through autodiff ------------------------------------------------------------------------------
def tanh_layer(x: np.ndarray, h: np.ndarray, u: np.ndarray, n: int):
    loss = 0.0
    for t in range(n):
        h = np.tanh(x[t] + h @ u)
        loss += np.sum(h * h)
    return loss


@pytest.mark.parametrize("n", [0, 1, 4, 6])
def test_gradients_of_a_loop_over_an_int_argument_match_finite_differences(n):
    rng = np.random.default_rng(n)
    args = (rng.standard_normal((6, 3, 4)), rng.standard_normal((3, 4)),
            rng.standard_normal((4, 4)) * 0.4, n)
    check_vjp(script(tanh_layer), args)


def test_the_reverse_loop_over_an_int_argument_runs_natively():
    rng = np.random.default_rng(0)
    # 6 trips over 7 rows: a count equal to an axis is compiled in (trip_inputs)
    args = (rng.standard_normal((7, 3, 4)), rng.standard_normal((3, 4)),
            rng.standard_normal((4, 4)), 6)
    graph = script(tanh_layer).backward_graph_for(*args)
    (loop,) = [m for m in graph.nodes() if m.kind == "prim::Loop"]
    assert all(v.type.shape[0] != 7 for v in loop.outputs)  # no (T, B, I) carry
    fuser.cpu.loop.compile_loop(loop)  # LoopRefused says why not
    out, backward = vjp(script(tanh_layer), *args)
    assert np.isclose(out, tanh_layer(*args))
    assert backward(1.0)[0].shape == (7, 3, 4)


def two_layers(x: np.ndarray, y: np.ndarray, h: np.ndarray, u: np.ndarray, n: int, m: int):
    # two sequences of one shape read by loops of different trip counts: each reverse loop
    # writes zeros of its own (equal zeros merged into one array would share the slots)
    loss = 0.0
    for t in range(n):
        h = np.tanh(x[t] + h @ u)
        loss += np.sum(h * h)
    for t in range(m):
        h = np.tanh(y[t] * 0.5 + h @ u)
        loss += np.sum(h * h)
    return loss


@pytest.mark.parametrize("same", [False, True], ids=["two sequences", "one read twice"])
def test_two_reverse_loops_write_zeros_of_their_own(same):
    rng = np.random.default_rng(5)
    x = rng.standard_normal((6, 3, 4))
    y = x if same else rng.standard_normal((6, 3, 4))
    args = (x, y, rng.standard_normal((3, 4)), rng.standard_normal((4, 4)) * 0.4, 2, 5)
    check_vjp(script(two_layers), args)
    graph = script(two_layers).backward_graph_for(*args)
    zeros = [m for m in graph.walk() if m.kind == "tensor::zeros"
             and any(u.node.kind == "tensor::write_slot" for u in m.output.uses)]
    assert len(zeros) == 2
