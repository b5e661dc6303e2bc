"""The matmul-pieces pass: a product split into column pieces becomes one product per piece
read, when a piece goes unread or a loop carries one; the values are the whole product's."""

from __future__ import annotations

import numpy as np
import pytest

import fuser.cpu.loop
import ir
import passes
from script import script, vjp
from script.runtime.codegen import generate
from tests.gradcheck import check_vjp

SPLIT = """
graph(%a : Double(3, 4), %w : Double(4, 6)):
  %two : int = prim::Constant[value=2]()
  %one : int = prim::Constant[value=1]()
  %y : Double(3, 6) = tensor::matmul(%a, %w)
  %p : Double(3, 3), %q : Double(3, 3) = tensor::split(%y, %two, %one)
  %r : Double(3, 3) = tensor::tanh(%q)
  return (%r)
"""

CARRIED = """
graph(%a0 : Double(3, 4), %w : Double(4, 8), %n : int):
  %true : bool = prim::Constant[value=True]()
  %two : int = prim::Constant[value=2]()
  %one : int = prim::Constant[value=1]()
  %s : Double(3, 4), %h : Double(3, 4) = prim::Loop(%n, %true, %a0, %a0)
    block0(%k : int, %s.1 : Double(3, 4), %h.1 : Double(3, 4)):
      %y : Double(3, 8) = tensor::matmul(%h.1, %w)
      %p : Double(3, 4), %q : Double(3, 4) = tensor::split(%y, %two, %one)
      %t : Double(3, 4) = tensor::tanh(%p)
      %s.2 : Double(3, 4) = tensor::add(%s.1, %t)
      -> (%true, %s.2, %q)
  return (%s, %h)
"""


def _args(graph: ir.Graph) -> list:
    rng = np.random.default_rng(0)
    return [3 if str(v.type) == "int" else rng.standard_normal(v.type.shape) * 0.5
            for v in graph.inputs]


def _products(graph: ir.Graph) -> list[tuple]:
    return [tuple(m.output.type.shape) for m in graph.walk() if m.kind == "tensor::matmul"]


def test_an_unread_piece_is_not_computed():
    graph = ir.parse(SPLIT)
    want = generate(graph)[0](*_args(graph))
    assert passes.run_pipeline(graph, "matmul-pieces,dce")
    graph.verify()
    assert _products(graph) == [(3, 3)]
    assert not [m for m in graph.walk() if m.kind == "tensor::split"]
    np.testing.assert_allclose(generate(graph)[0](*_args(graph)), want, rtol=1e-14)


def test_a_carried_piece_is_a_product_of_its_own_made_in_the_step():
    graph = ir.parse(CARRIED)
    want = generate(graph)[0](*_args(graph))
    assert passes.run_pipeline(graph, "matmul-pieces,dce")
    graph.verify()
    assert _products(graph) == [(3, 4), (3, 4)]
    (loop,) = [m for m in graph.nodes() if m.kind == "prim::Loop"]
    # the columns of w are copied once, before the loop
    assert [m.kind for m in graph.nodes()].count("tensor::contiguous") == 2
    assert not any(m.kind == "tensor::slice" for m in loop.blocks[0].nodes)
    for got, w in zip(generate(graph)[0](*_args(graph)), want):
        np.testing.assert_allclose(got, w, rtol=1e-14)


@pytest.mark.parametrize("change", [
    ("%r : Double(3, 3) = tensor::tanh(%q)", "%r : Double(3, 3) = tensor::add(%p, %q)"),
    ("%p : Double(3, 3), %q : Double(3, 3) = tensor::split(%y, %two, %one)\n",
     "%p : Double(3, 3), %q : Double(3, 3) = tensor::split(%y, %two, %one)\n"
     "  %y2 : Double(3, 6) = tensor::tanh(%y)\n"),
], ids=["every piece read", "the product read whole"])
def test_products_read_whole_are_left_alone(change):
    graph = ir.parse(SPLIT.replace(*change))
    before = str(graph)
    assert not passes.run_pipeline(graph, "matmul-pieces")
    assert str(graph) == before


# -- through autodiff ------------------------------------------------------------------------------
def batched_layer(x: np.ndarray, h: np.ndarray, w: np.ndarray, u: np.ndarray, n: int):
    loss = 0.0
    for t in range(n):
        h = np.tanh(x[t] @ w + h @ u)  # one product of [x_t, h] and [w; u]
        loss += np.sum(h * h)
    return loss


def _layer_args(n: int) -> tuple:
    rng = np.random.default_rng(n)
    # a row more than n = 5 reads: a count equal to an axis is compiled in (trip_inputs)
    return (rng.standard_normal((6, 3, 4)), rng.standard_normal((3, 4)),
            rng.standard_normal((4, 4)) * 0.4, rng.standard_normal((4, 4)) * 0.4, n)


@pytest.mark.parametrize("argnums", [None, (1, 2, 3)], ids=["all", "not x"])
@pytest.mark.parametrize("n", [0, 2, 5])
def test_gradients_of_a_batched_product_split_in_the_reverse_loop(n, argnums):
    check_vjp(script(batched_layer), _layer_args(n), argnums=argnums)


@pytest.mark.parametrize("argnums", [None, (1, 2, 3)], ids=["all", "not x"])
def test_the_reverse_loop_of_a_batched_product_runs_natively(argnums):
    args = _layer_args(5)
    graph = script(batched_layer).backward_graph_for(*args, argnums=argnums)
    (loop,) = [m for m in graph.nodes() if m.kind == "prim::Loop"]
    fuser.cpu.loop.compile_loop(loop)  # LoopRefused says why not
    body = [m.kind for m in loop.blocks[0].nodes]
    assert "tensor::split" not in body
    out, backward = vjp(script(batched_layer), *args, argnums=argnums)
    assert np.isclose(out, batched_layer(*args))
