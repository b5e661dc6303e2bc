"""Row-wise hoisting on the LayerNorm-LSTM: the input-side layer norm runs once per sequence.

The layer's cell normalises ``x_t @ w_ih.T`` every step; after ``hoist-rowwise`` the optimized
forward computes that layer norm over the whole hoisted projection before the loop, and the
backward (which differentiates the optimized forward) makes one ``layer_norm_backward`` over the
whole sequence after the reverse loop, with no per-step op the size of the sequence.
"""

from __future__ import annotations

import numpy as np
import pytest

import passes
from benchmarks.fastrnns import cells
from script import script
from script.runtime.autodiff import compile_gradient, run_vjp
from tests.gradcheck import check_vjp, random_like

SEQ, BATCH, INPUT, HIDDEN = 6, 3, 5, 4
LN = "tensor::layer_norm"
LN_BACKWARD = "tensor::layer_norm_backward"


def _args(dtype: str = "float64", seed: int = 0, seq: int = SEQ) -> tuple[np.ndarray, ...]:
    rng = np.random.default_rng(seed)

    def r(*shape: int, center: float = 0.0) -> np.ndarray:
        return (center + 0.5 * rng.standard_normal(shape)).astype(dtype)

    g = 4 * HIDDEN
    return (r(seq, BATCH, INPUT), r(BATCH, HIDDEN), r(BATCH, HIDDEN), r(g, INPUT), r(g, HIDDEN),
            r(g, center=1.0), r(g), r(g, center=1.0), r(g), r(HIDDEN, center=1.0), r(HIDDEN))


def _loop(graph):
    (loop,) = [n for n in graph.nodes() if n.kind == "prim::Loop"]
    return loop


def _sequence_layer_norms(graph):
    """The layer norms of the top level of ``graph`` that normalise a (T, B, 4H) sequence."""
    loop = _loop(graph)
    before = graph.nodes()[:graph.nodes().index(loop)]
    whole = (SEQ, BATCH, 4 * HIDDEN)
    return [n for n in before if n.kind == LN and n.inputs[0].type.shape == whole]


def _forward_graph(args):
    return compile_gradient(script(cells.layernorm_lstm_layer), args).gradient.forward


# -- the optimized graphs -------------------------------------------------------------------------
@pytest.mark.parametrize("which", ["inference", "training"])
def test_input_layer_norm_runs_before_the_loop(which):
    args = _args()
    f = script(cells.layernorm_lstm_layer)
    graph = f.graph_for(*args) if which == "inference" else _forward_graph(args)
    (hoisted,) = _sequence_layer_norms(graph)
    assert [v.name for v in hoisted.inputs[1:3]] == ["ln_i_w", "ln_i_b"]
    body = [n.kind for n in _loop(graph).blocks[0].nodes]
    assert body.count(LN) == 2  # the hidden-side and the cell-state layer norms stay per step


def test_without_the_pass_the_layer_norm_stays_in_the_loop():
    """The graph checks above see the pass's work, not something the pipeline did anyway."""
    with passes.disable("hoist-rowwise"):
        graph = _forward_graph(_args(seed=1))
    assert _sequence_layer_norms(graph) == []
    assert [n.kind for n in _loop(graph).blocks[0].nodes].count(LN) == 3


def test_backward_has_one_sequence_layer_norm_backward_and_no_per_step_sequence_op():
    graph = script(cells.layernorm_lstm_layer).backward_graph_for(*_args())
    loop = _loop(graph)
    seq_size = SEQ * BATCH * 4 * HIDDEN
    for node in loop.blocks[0].walk():
        for out in node.outputs:
            shape = getattr(out.type, "shape", None)
            assert shape is None or int(np.prod(shape)) < seq_size, f"per step: {node.kind}"
    body = [n.kind for n in loop.blocks[0].nodes]
    assert body.count(LN_BACKWARD) == 2
    after = graph.nodes()[graph.nodes().index(loop) + 1:]
    whole = [n for n in after if n.kind == LN_BACKWARD]
    assert len(whole) == 1
    assert whole[0].inputs[0].type.shape == (SEQ, BATCH, 4 * HIDDEN)


# -- results ---------------------------------------------------------------------------------------
@pytest.mark.parametrize("dtype, tol", [("float32", 1e-5), ("float64", 1e-12)])
def test_results_equal_eager(dtype, tol):
    args = _args(dtype, seed=2)
    f = script(cells.layernorm_lstm_layer)
    want = cells.layernorm_lstm_layer(*args)
    for got, ref in zip(f(*args), want):
        assert got.dtype == np.dtype(dtype)
        np.testing.assert_allclose(got, ref, rtol=tol, atol=tol)
    outs, _ = run_vjp(compile_gradient(f, args), args)
    for got, ref in zip(outs, want):
        np.testing.assert_allclose(got, ref, rtol=tol, atol=tol)


def test_gradients_equal_finite_differences_and_the_unoptimized_compile():
    check_vjp(script(cells.layernorm_lstm_layer), _args(seed=3, seq=4), rtol=1e-6, atol=1e-8)


def test_float32_gradients_equal_the_unoptimized_compile():
    args = _args("float32", seed=4)
    f = script(cells.layernorm_lstm_layer)
    ct = random_like(f(*args), np.random.default_rng(0))
    grads = [run_vjp(compile_gradient(f, args, optimize=opt), args)[1](ct) for opt in (True, False)]
    for got, want in zip(*grads):
        np.testing.assert_allclose(got, want, rtol=1e-4, atol=1e-5)
