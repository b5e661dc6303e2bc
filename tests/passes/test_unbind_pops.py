"""The unbind-pops pass: a list of an array's rows a counted loop pops one a step reads the row
itself (``select``), with the same results; lists used any other way stay lists."""

from __future__ import annotations

import numpy as np
import pytest

import ir
import passes
from benchmarks.fastrnns import cells
from script import script, vjp
from script.runtime.autodiff import compile_gradient, run_vjp
from script.runtime.codegen import generate

POPS = """
graph(%xs : Double(4, 3), %h0 : Double(3)):
  %true : bool = prim::Constant[value=True]()
  %n : int = prim::Constant[value=4]()
  %zero : int = prim::Constant[value=0]()
  %last : int = prim::Constant[value=-1]()
  %rows : Double(3)[] = tensor::unbind(%xs, %zero)
  %h : Double(3) = prim::Loop(%n, %true, %h0)
    block0(%k : int, %h.1 : Double(3)):
      %x : Double(3) = prim::ListPop(%rows, {pop})
      %a : Double(3) = tensor::mul(%h.1, %x)
      %h.2 : Double(3) = tensor::tanh(%a)
      -> (%true, %h.2)
  {after}
"""

PLAIN = POPS.format(pop="%last", after="return (%h)")


def _kinds(graph: ir.Graph) -> list[str]:
    return [n.kind for n in graph.walk()]


def _run(graph: ir.Graph, args):
    fn, _ = generate(graph)
    return fn(*args)


def test_popped_rows_are_read_in_place_with_the_same_results():
    graph = ir.parse(PLAIN)
    rng = np.random.default_rng(0)
    args = [rng.standard_normal((4, 3)), rng.standard_normal(3)]
    want = _run(graph, [a.copy() for a in args])
    assert passes.run_pipeline(graph, "unbind-pops,dce")
    graph.verify()
    kinds = _kinds(graph)
    assert "tensor::unbind" not in kinds and "prim::ListPop" not in kinds
    assert "tensor::select" in kinds
    np.testing.assert_array_equal(_run(graph, args), want)


@pytest.mark.parametrize("pop, after", [
    ("%zero", "return (%h)"),  # pops the first row: not the step's row from the end
    ("%last", "%m : int = prim::len(%rows)\n  return (%h, %m)"),  # the list is read after
], ids=["pops the front", "read after the loop"])
def test_other_lists_stay_lists(pop, after):
    graph = ir.parse(POPS.format(pop=pop, after=after))
    assert not passes.run_pipeline(graph, "unbind-pops")
    assert "tensor::unbind" in _kinds(graph)


def test_rows_not_the_trip_count_stay_a_list():
    graph = ir.parse(PLAIN.replace("prim::Constant[value=4]", "prim::Constant[value=3]"))
    assert not passes.run_pipeline(graph, "unbind-pops")


def test_an_lstm_backward_reads_the_output_cotangent_by_row():
    """The gradient of the layer's stacked outputs reaches each reverse step as its row, and
    the gradients are the unoptimized pair's."""
    rng = np.random.default_rng(1)
    T, B, H, I = 11, 3, 5, 4  # noqa: E741
    n = lambda *s: (rng.standard_normal(s) * 0.5).astype(np.float32)  # noqa: E731
    args = (n(T, B, I), n(B, H), n(B, H), n(4 * H, I), n(4 * H, H), n(4 * H), n(4 * H))
    grad = compile_gradient(script(cells.lstm_layer), args).gradient
    assert "tensor::unbind" not in _kinds(grad.backward)
    out, back = vjp(script(cells.lstm_layer), *args)
    ct = tuple(rng.standard_normal(o.shape).astype(np.float32) for o in out)
    want_out, want_back = run_vjp(compile_gradient(script(cells.lstm_layer), args,
                                                   optimize=False), args)
    for a, b in zip((*out, *back(ct)), (*want_out, *want_back(ct))):
        np.testing.assert_allclose(a, b, rtol=1e-5, atol=1e-6)
