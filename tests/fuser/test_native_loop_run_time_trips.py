"""Layers whose trip count is an int argument (``for t in range(n)``): the reverse loop
autodiff makes runs natively too (the gradient of ``x[t]`` written slot by slot, the product of
``[x_t, h]`` split into its pieces, the weight's gradient summed per row range), over every
thread count, with the Python loops' values. A count equal to an argument's axis is compiled in
(``passes.static_ints.trip_inputs``), so these counts differ from every axis but one case's."""

from __future__ import annotations

import numpy as np
import pytest

from fuser.cpu import blas
from script import script, vjp
from tests.helpers import assert_close_scaled, gradient_loops, row_ranges


def _sigmoid(x: np.ndarray) -> np.ndarray:
    return 1.0 / (1.0 + np.exp(-x))


def lstm_steps(x: np.ndarray, h: np.ndarray, c: np.ndarray, w_ih: np.ndarray,
               w_hh: np.ndarray, b: np.ndarray, n: int):
    outs = []
    for t in range(n):
        gates = x[t] @ w_ih.T + h @ w_hh.T + b
        i, f, g, o = np.split(gates, 4, axis=1)
        c = _sigmoid(f) * c + _sigmoid(i) * np.tanh(g)
        h = _sigmoid(o) * np.tanh(c)
        outs.append(h)
    return np.stack(outs), h, c


def rnn_loss(x: np.ndarray, h: np.ndarray, w: np.ndarray, u: np.ndarray, n: int):
    loss = 0.0
    for t in range(n):
        h = np.tanh(x[t] @ w + h @ u)
        loss += np.sum(h * h)
    return loss


def _lstm_args(t, b, i, hidden, dtype, n, seed=0):
    rng = np.random.default_rng(seed)

    def r(*shape, scale=1.0):
        return (rng.standard_normal(shape) * scale).astype(dtype)
    return (r(t, b, i), r(b, hidden), r(b, hidden), r(4 * hidden, i, scale=0.3),
            r(4 * hidden, hidden, scale=0.3), r(4 * hidden), n)


def _train(f, args, argnums=None):
    out, back = vjp(f, *args, argnums=argnums)
    rng = np.random.default_rng(1)
    outs = out if isinstance(out, tuple) else (out,)
    cts = tuple(rng.standard_normal(np.shape(o)).astype(np.asarray(o).dtype) for o in outs)
    grads = back(cts if isinstance(out, tuple) else cts[0])
    return outs, [g for g in grads if g is not None]


@pytest.mark.parametrize("threads", [1, 2, 3, 4])
@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("shape", [(9, 13, 5, 7, 8), (6, 13, 5, 7, 4), (6, 1, 3, 5, 4),
                                   (2, 8, 3, 5, 1), (9, 13, 5, 7, 9)],
                         ids=["odd", "n<T", "B=1", "n=1", "n=T compiled in"])
def test_lstm_over_an_int_trip_count_matches_python_loops(monkeypatch, threads, dtype, shape):
    t, b, i, hidden, n = shape
    args = _lstm_args(t, b, i, hidden, dtype, n, seed=threads)
    with monkeypatch.context() as m:
        m.setenv("RNNSCRIPT_NATIVE_LOOPS", "0")
        want_out, want_grads = _train(script(lstm_steps), args)
    monkeypatch.setenv("RNNSCRIPT_LOOP_THREADS", str(threads))
    monkeypatch.setattr("fuser.cpu.loop.ranges.MIN_ROWS", 1)
    with blas.threads(threads):
        f = script(lstm_steps)
        out, grads = _train(f, args)
    forward, reverse = gradient_loops(f)
    assert [lp.calls for lp in (forward, reverse)] == [1, 1]  # both ran natively
    inputs = f.vjp_graphs_for(*args)[0].inputs
    assert bool(inputs[6].uses) == (n != t)  # n read per call, or compiled in
    if threads > 1 and b > 1:
        assert row_ranges(reverse) == [min(threads, b)]
    assert_close_scaled((*out, *grads), (*want_out, *want_grads), dtype)


@pytest.mark.parametrize("argnums", [None, (1, 2, 3)], ids=["all", "weights and state"])
def test_weight_gradients_over_row_ranges_match_finite_differences(monkeypatch, argnums):
    from tests.gradcheck import check_vjp
    monkeypatch.setenv("RNNSCRIPT_LOOP_THREADS", "2")
    monkeypatch.setattr("fuser.cpu.loop.ranges.MIN_ROWS", 1)
    rng = np.random.default_rng(2)
    args = (rng.standard_normal((8, 5, 3)), rng.standard_normal((5, 4)),
            rng.standard_normal((3, 4)) * 0.4, rng.standard_normal((4, 4)) * 0.4, 7)
    f = script(rnn_loss)
    check_vjp(f, args, argnums=argnums)
    assert any(row_ranges(lp) == [2] for lp in gradient_loops(f))


HOISTED_TRANSPOSE = """
graph(%X : Double(4, 3), %g0 : Double(4, 5), %u : Double(5, 5), %p0 : Double(3, 5), %n : int):
  %t : bool = prim::Constant[value=True]()
  %perm : (int, int) = prim::Constant[value=(1, 0)]()
  %xt : Double(3, 4) = tensor::transpose(%X, %perm)
  %g : Double(4, 5), %p : Double(3, 5) = prim::Loop(%n, %t, %g0, %p0)
    block0(%k : int, %gc : Double(4, 5), %pc : Double(3, 5)):
      %g2 : Double(4, 5) = tensor::matmul(%gc, %u)
      %g3 : Double(4, 5) = tensor::tanh(%g2)
      %s : Double(3, 5) = tensor::matmul(%xt, %g3)
      %p2 : Double(3, 5) = tensor::add(%pc, %s)
      -> (%t, %g3, %p2)
  return (%g, %p)
"""


@pytest.mark.parametrize("where", ["before the loop", "in the step"])
def test_a_sum_of_x_transposed_times_rows_over_row_ranges(monkeypatch, where):
    # X^T @ G with the transpose made before the loop: the loop reads X^T whole, not X's rows
    import fuser
    import ir
    import passes
    from script.runtime.codegen import generate
    text = HOISTED_TRANSPOSE
    if where == "in the step":
        text = text.replace("  %xt : Double(3, 4) = tensor::transpose(%X, %perm)\n", "").replace(
            "      %s : Double(3, 5)",
            "      %xt : Double(3, 4) = tensor::transpose(%X, %perm)\n      %s : Double(3, 5)")
    monkeypatch.setenv("RNNSCRIPT_LOOP_THREADS", "2")
    monkeypatch.setattr("fuser.cpu.loop.ranges.MIN_ROWS", 1)
    fuser.register_passes()
    graph = ir.parse(text)
    passes.run_pipeline(graph, "fuse-elementwise")
    fn = generate(graph)[0]
    rng = np.random.default_rng(0)
    x, g0, p0 = (rng.standard_normal(s) for s in ((4, 3), (4, 5), (3, 5)))
    u = rng.standard_normal((5, 5)) * 0.4
    for n in (0, 1, 3):
        g, p = g0, p0
        for _ in range(n):
            g = np.tanh(g @ u)
            p = p + x.T @ g
        got = fn(x, g0, u, p0, n)
        np.testing.assert_allclose(got[0], g, rtol=1e-12)
        np.testing.assert_allclose(got[1], p, rtol=1e-12)
