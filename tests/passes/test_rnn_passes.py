"""The RNN passes (licm, hoist-projection, unroll, batch-matmul) on scripted programs.

What a user notices: the optimized LSTM layer computes the input projection once for the whole
sequence, and every program still computes what plain Python computes, with each pass on, off,
or turned up (unrolling by 8).
"""

from typing import List

import numpy as np
import pytest

import ir
import passes
from passes import unroll
from script import Tensor, ops, script
from tests.graph_interp import run_graph
from tests.helpers import assert_same, assert_same_at
from tests.precision import assert_float32_close
from tests.programs import cells
from tests.programs.cell_inputs import CELLS, cell_args
from tests.programs.language import PROGRAMS

RNN_PASSES = ["licm", "hoist-projection", "unroll", "batch-matmul"]


def _layer_args(rng, seq=6, batch=3, inp=5, hid=4, dtype=np.float32):
    return cell_args("lstm_layer", rng, dtype, batch, inp, hid, seq=seq)


def _kinds(block: ir.Block) -> list[str]:
    return [n.kind for n in block]


def _only_loop(graph: ir.Graph) -> ir.Node:
    loops = [n for n in graph.nodes() if n.kind == "prim::Loop"]
    assert len(loops) == 1
    return loops[0]


# -- the LSTM layer ---------------------------------------------------------------------------
@pytest.mark.parametrize("name", ["lstm_layer", "lstm_layer_indexed"])
def test_lstm_layer_projects_the_whole_sequence_before_the_loop(name):
    fn = getattr(cells, name)
    scripted = script(fn)
    args = cell_args(name, np.random.default_rng(0), np.float32, 3, 5, 4, seq=6)
    graph = scripted.graph_for(*args)
    loop = _only_loop(graph)
    before = [n for n in graph.nodes() if n.is_before(loop)]
    outer_mms = [n for n in before if n.kind == "tensor::matmul"]
    assert len(outer_mms) == 1
    assert outer_mms[0].inputs[0].type.shape == (6 * 3, 5)  # (T*B, I): every step at once
    assert outer_mms[0].output.type.shape == (6 * 3, 16)
    assert _kinds(loop.blocks[0]).count("tensor::matmul") == 1  # the recurrent term only
    assert "tensor::transpose" not in _kinds(loop.blocks[0])  # w_hh.T is computed once
    assert_same_at(scripted(*args), fn(*args), np.float32)


def test_lstm_layer_matches_python_at_larger_shapes():
    scripted = script(cells.lstm_layer)
    args = cell_args("lstm_layer", np.random.default_rng(1), np.float32, 8, 64, 64, seq=20)
    # 20 recurrent steps of float32 rounding, summed in another order than numpy's (the
    # projection is one matmul for all steps; BLAS splits it over threads): compared with the
    # float64 answer, not with numpy's float32 one
    assert_float32_close(scripted(*args), cells.lstm_layer, args)


def test_float32_comparison_catches_an_error_beyond_rounding():
    args = cell_args("lstm_layer", np.random.default_rng(1), np.float32, 2, 8, 8, seq=5)
    y, (h, c) = cells.lstm_layer(*args)
    assert_float32_close((y, (h, c)), cells.lstm_layer, args)
    with pytest.raises(AssertionError, match="output 1"):
        h[1, 2] += np.float32(1e-3)  # one element off
        assert_float32_close((y, (h, c)), cells.lstm_layer, args)


def test_without_hoisting_the_projection_stays_in_the_loop():
    args = _layer_args(np.random.default_rng(2))
    with passes.disable("hoist-projection", "batch-matmul"):
        graph = script(cells.lstm_layer).graph_for(*args)
    assert _kinds(_only_loop(graph).blocks[0]).count("tensor::matmul") == 2
    with passes.disable("hoist-projection"):  # then the two products sum as one matmul
        body = _only_loop(script(cells.lstm_layer).graph_for(*args)).blocks[0]
    assert _kinds(body).count("tensor::matmul") == 1 and "tensor::cat" in _kinds(body)


# -- every program, each pass on, off and turned up ----------------------------------------------
@pytest.mark.parametrize("disabled", RNN_PASSES)
@pytest.mark.parametrize("name", sorted(PROGRAMS))
def test_language_programs_without_each_rnn_pass(name, disabled):
    fn, make_args = PROGRAMS[name]
    args = make_args(np.random.default_rng(3))
    with passes.disable(disabled):
        got = script(fn)(*args)
    assert_same(got, fn(*args))


@pytest.mark.parametrize("name", sorted(PROGRAMS))
def test_language_programs_unrolled_by_eight(name, monkeypatch):
    monkeypatch.setattr(unroll, "DEFAULT_FACTOR", unroll.PYTORCH_FACTOR)
    fn, make_args = PROGRAMS[name]
    args = make_args(np.random.default_rng(4))
    assert_same(script(fn)(*args), fn(*args))


@pytest.mark.parametrize("name", CELLS)
def test_cells_unrolled_by_eight(name, monkeypatch):
    monkeypatch.setattr(unroll, "DEFAULT_FACTOR", unroll.PYTORCH_FACTOR)
    fn = getattr(cells, name)
    for seq in (3, 8, 11):  # fewer trips than the factor, exactly one round, a remainder
        args = cell_args(name, np.random.default_rng(seq), np.float32, 3, 5, 4, seq=seq)
        assert_same_at(script(fn)(*args), fn(*args), np.float32)


@pytest.mark.parametrize("name", CELLS)
def test_cells_without_rnn_passes(name):
    fn = getattr(cells, name)
    args = cell_args(name, np.random.default_rng(5), np.float64, 3, 5, 4, seq=5)
    with passes.disable(*RNN_PASSES):
        assert_same_at(script(fn)(*args), fn(*args), np.float64)


# -- unrolling on graphs, any trip count --------------------------------------------------------
COUNTED = """graph(%x : Float(3), %n : int):
  %true : bool = prim::Constant[value=True]()
  %out : Tensor[] = prim::ListConstruct()
  %h : Float(3) = prim::Loop(%n, %true, %x)
    block0(%i : int, %h.1 : Float(3)):
      %s : Float(3) = tensor::add(%h.1, %i)
       = prim::ListAppend(%out, %s)
      -> (%true, %s)
  %r : (Float(3), Tensor[]) = prim::TupleConstruct(%h, %out)
  return (%r)"""


@pytest.mark.parametrize("trips", [-2, 0, 1, 7, 8, 9, 16, 21])
def test_unroll_by_factor_keeps_results_and_append_order(trips):
    x = np.arange(3.0)
    want = run_graph(ir.parse(COUNTED), x, trips)
    graph = ir.parse(COUNTED)
    assert passes.run_pipeline(graph, "unroll-by-8")
    graph.verify()
    got = run_graph(graph, x, trips)
    np.testing.assert_array_equal(got[0], want[0])
    assert len(got[1]) == len(want[1]) == max(trips, 0)
    for a, b in zip(got[1], want[1]):
        np.testing.assert_array_equal(a, b)


def test_constant_loops_unroll_fully_and_large_ones_stay():
    small = ir.parse(COUNTED.replace("%n : int", "%x2 : int").replace("(%n,", "(%three,").replace(
        "%true : bool = prim::Constant[value=True]()",
        "%true : bool = prim::Constant[value=True]()\n  %three : int = prim::Constant[value=3]()"))
    assert passes.run_pipeline(small, "unroll")
    assert not any(n.kind == "prim::Loop" for n in small.walk())
    assert run_graph(small, np.zeros(3), 0)[0].tolist() == [3.0, 3.0, 3.0]  # 0 + 1 + 2
    large = ir.parse(COUNTED)
    assert not passes.run_pipeline(large, "unroll")  # unknown trips: off by default


# -- licm and a loop that may not run -------------------------------------------------------------
def skip_loop_reads_past_the_end(x: Tensor, n: int) -> Tensor:
    y = x
    for _ in range(n):
        y = y + x[7]
    return y


def test_licm_keeps_a_raising_select_in_a_loop_that_may_not_run():
    scripted = script(skip_loop_reads_past_the_end)
    x = np.arange(3.0)
    np.testing.assert_array_equal(scripted(x, 0), x)
    loop = _only_loop(scripted.graph_for(x, 0))
    assert "tensor::select" in _kinds(loop.blocks[0])
    with pytest.raises(IndexError):
        scripted(x, 2)


# -- batched matmuls in scripted code ------------------------------------------------------------
def gatewise_rnn(xs: List[Tensor], h: Tensor, u_i: Tensor, u_f: Tensor, u_o: Tensor) -> Tensor:
    for x in xs:
        i = ops.sigmoid(h @ u_i + x)
        f = ops.sigmoid(h @ u_f)
        o = np.tanh(h @ u_o)
        h = f * h + i * o
    return h


def summed_rnn(xs: List[Tensor], h: Tensor, w: Tensor, u: Tensor) -> Tensor:
    for x in xs:
        h = np.tanh(x @ w + h @ u)
    return h


def test_side_batching_makes_one_recurrent_matmul_per_step():
    rng = np.random.default_rng(6)
    xs = [rng.standard_normal((2, 4)).astype(np.float32) for _ in range(5)]
    h, u_i, u_f, u_o = (rng.standard_normal(s).astype(np.float32) for s in
                        [(2, 4), (4, 4), (4, 4), (4, 4)])
    scripted = script(gatewise_rnn)
    graph = scripted.graph_for(xs, h, u_i, u_f, u_o)
    body = _only_loop(graph).blocks[0]
    assert _kinds(body).count("tensor::matmul") == 1
    assert "tensor::cat" not in _kinds(body)  # the weights are concatenated once, before
    np.testing.assert_allclose(scripted(xs, h, u_i, u_f, u_o), gatewise_rnn(xs, h, u_i, u_f, u_o),
                               rtol=1e-5, atol=1e-6)


def test_tree_batching_turns_a_sum_of_products_into_one_matmul():
    rng = np.random.default_rng(7)
    xs = [rng.standard_normal((2, 3)).astype(np.float32) for _ in range(5)]
    h, w, u = (rng.standard_normal(s).astype(np.float32) for s in [(2, 4), (3, 4), (4, 4)])
    scripted = script(summed_rnn)
    body = _only_loop(scripted.graph_for(xs, h, w, u)).blocks[0]
    assert _kinds(body).count("tensor::matmul") == 1
    assert _kinds(body).count("tensor::cat") == 1  # the activations; the weights' cat is hoisted
    np.testing.assert_allclose(scripted(xs, h, w, u), summed_rnn(xs, h, w, u), rtol=1e-5,
                               atol=1e-6)
    with passes.disable("batch-matmul"):
        body = _only_loop(script(summed_rnn).graph_for(xs, h, w, u)).blocks[0]
    assert _kinds(body).count("tensor::matmul") == 2


def test_rnn_passes_are_registered_in_pipeline_order():
    order = passes.STANDARD_PIPELINE.split(",")
    assert set(RNN_PASSES) <= set(passes.all_passes())
    firsts = [order.index(name) for name in RNN_PASSES]
    assert firsts == sorted(firsts)
    assert order.index("shape-prop") < firsts[0]
