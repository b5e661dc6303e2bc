"""The batch-accumulation pass: sums over loop iterations computed once after the loop give the
same numbers as the loop, and the loop no longer accumulates."""

from __future__ import annotations

from typing import List

import numpy as np
import pytest

import ir
import passes
from script import Tensor, ops, script
from script.runtime.codegen import generate
from tests.gradcheck import check_vjp

ACCUMULATE_TRANSPOSED = """
graph(%xs : Double(4, 2, 3), %w : Double(5, 3), %b0 : Double(5)):
  %true : bool = prim::Constant[value=True]()
  %n : int = prim::Constant[value=4]()
  %zero : int = prim::Constant[value=0]()
  %t : (int, int) = prim::Constant[value=(1, 0)]()
  %dt : str = prim::Constant[value="float64"]()
  %ws : (int, int) = prim::Constant[value=(3, 5)]()
  %bs : (int,) = prim::Constant[value=(5,)]()
  %z : Double(3, 5) = tensor::zeros(%ws, %dt)
  %wt : Double(3, 5) = tensor::transpose(%w, %t)
  %dw : Double(3, 5), %db : Double(5) = prim::Loop(%n, %true, %z, %b0)
    block0(%k : int, %dw.1 : Double(3, 5), %db.1 : Double(5)):
      %x : Double(2, 3) = tensor::select(%xs, %zero, %k)
      %g0 : Double(2, 5) = tensor::matmul(%x, %wt)
      %g : Double(2, 5) = tensor::tanh(%g0)
      %xt : Double(3, 2) = tensor::transpose(%x, %t)
      %c : Double(3, 5) = tensor::matmul(%xt, %g)
      %dw.2 : Double(3, 5) = tensor::add(%dw.1, %c)
      %gb : Double(5) = tensor::sum_to(%g, %bs)
      %db.2 : Double(5) = tensor::add(%db.1, %gb)
      -> (%true, %dw.2, %db.2)
  return (%dw, %db)
"""

ACCUMULATE_PLAIN = """
graph(%xs : Double(4, 3, 2), %ys : Double(4, 2, 5), %a0 : Double(3, 5), %v : Double(3, 2)):
  %true : bool = prim::Constant[value=True]()
  %n : int = prim::Constant[value=4]()
  %zero : int = prim::Constant[value=0]()
  %a : Double(3, 5), %u : Double(3, 5) = prim::Loop(%n, %true, %a0, %a0)
    block0(%k : int, %a.1 : Double(3, 5), %u.1 : Double(3, 5)):
      %x : Double(3, 2) = tensor::select(%xs, %zero, %k)
      %x2 : Double(3, 2) = tensor::mul(%x, %x)
      %y : Double(2, 5) = tensor::select(%ys, %zero, %k)
      %c : Double(3, 5) = tensor::matmul(%x2, %y)
      %a.2 : Double(3, 5) = tensor::add(%c, %a.1)
      %inv : Double(3, 5) = tensor::matmul(%v, %y)
      %u.2 : Double(3, 5) = tensor::add(%u.1, %inv)
      %u.3 : Double(3, 5) = tensor::tanh(%u.2)
      -> (%true, %a.2, %u.3)
  return (%a, %u)
"""


def _run(graph: ir.Graph, args):
    fn, _ = generate(graph)
    return fn(*args)


def _loop_body_kinds(graph: ir.Graph) -> list[str]:
    (loop,) = [n for n in graph.nodes() if n.kind == "prim::Loop"]
    return [n.kind for n in loop.blocks[0].nodes]


@pytest.mark.parametrize("text", [ACCUMULATE_TRANSPOSED, ACCUMULATE_PLAIN],
                         ids=["transposed", "plain"])
def test_batched_accumulation_computes_the_same_sums(text):
    graph = ir.parse(text)
    rng = np.random.default_rng(0)
    args = [rng.standard_normal(v.type.shape) for v in graph.inputs]
    want = _run(graph, args)
    assert passes.run_pipeline(graph, "batch-accumulation,cse,dce")
    graph.verify()
    got = _run(graph, args)
    for g, w in zip(got, want):
        np.testing.assert_allclose(g, w, rtol=1e-12, atol=1e-12)


def test_only_sums_of_per_step_values_leave_the_loop():
    graph = ir.parse(ACCUMULATE_PLAIN)
    passes.run_pipeline(graph, "batch-accumulation,cse,dce")
    kinds = _loop_body_kinds(graph)
    # a = a + x2_k @ y_k leaves; u is read by tanh each step, so its matmul stays in the loop;
    # x2_k is stacked slot by slot, y_k is read from ys, the input that stacks it already
    assert kinds.count("tensor::matmul") == 1
    assert kinds.count("tensor::add") == 1
    assert kinds.count("tensor::write_slot") == 1
    assert any(n.inputs[0] is graph.inputs[1] for n in graph.nodes()  # ys, reshaped whole
               if n.kind == "tensor::reshape")


def test_transposed_operands_are_stacked_untransposed():
    graph = ir.parse(ACCUMULATE_TRANSPOSED)
    passes.run_pipeline(graph, "batch-accumulation,cse,dce")
    kinds = _loop_body_kinds(graph)
    assert "tensor::transpose" not in kinds and "tensor::add" not in kinds
    assert kinds.count("tensor::matmul") == 1  # the step's own projection
    outside = [n.kind for n in graph.nodes()]
    assert outside.count("tensor::matmul") == 1 and outside.count("tensor::sum_to") == 1


def test_loops_of_unknown_trip_count_are_left_alone():
    text = (ACCUMULATE_TRANSPOSED.replace("  %n : int = prim::Constant[value=4]()\n", "")
            .replace("(%xs : Double(4, 2, 3)", "(%xs : Double(*, 2, 3)")
            .replace("  %t :", "  %n : int = tensor::size(%xs, %zero)\n  %t :", 1))
    graph = ir.parse(text)
    before = str(graph)
    assert not passes.run_pipeline(graph, "batch-accumulation")
    assert str(graph) == before


# -- through autodiff: weight gradients of recurrent layers ---------------------------------------
def rnn_layer(x: Tensor, h: Tensor, w_ih: Tensor, w_hh: Tensor, b: Tensor) -> Tensor:
    outputs: List[Tensor] = []
    for t in range(x.shape[0]):
        h = np.tanh(x[t] @ w_ih.T + h @ w_hh.T + b)
        outputs.append(h)
    return ops.stack(outputs, 0)


def shared_weight_layer(x: Tensor, h: Tensor, w: Tensor) -> Tensor:
    # the same weight in the input and the recurrent matmul: both contributions are batched
    for t in range(x.shape[0]):
        h = np.tanh(x[t] @ w + h @ w) * 0.5 + h
    return h


@pytest.mark.parametrize("fn, shapes", [
    (rnn_layer, [(20, 3, 4), (3, 5), (5, 4), (5, 5), (5,)]),
    (shared_weight_layer, [(20, 2, 3), (2, 3), (3, 3)]),
], ids=["rnn", "shared_weight"])
def test_recurrent_weight_gradients_match_finite_differences(fn, shapes):
    rng = np.random.default_rng(3)
    args = tuple(rng.standard_normal(s) * 0.5 for s in shapes)
    check_vjp(script(fn), args)


def test_rnn_layer_weight_gradient_matmuls_leave_the_reverse_loop():
    rng = np.random.default_rng(4)
    args = (rng.standard_normal((20, 3, 4)), rng.standard_normal((3, 5)),
            rng.standard_normal((5, 4)), rng.standard_normal((5, 5)), rng.standard_normal(5))
    g = script(rnn_layer).backward_graph_for(*args)
    kinds = _loop_body_kinds(g)
    assert kinds.count("tensor::matmul") == 1
    assert "tensor::add" not in kinds and "tensor::sum_to" not in kinds
