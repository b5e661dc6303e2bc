"""A layer norm in a native loop is row-wise: the loop runs over batch row ranges at once
(``RNNSCRIPT_LOOP_THREADS``), each range normalizing its own rows, with the one loop's results;
in a layer norm's gradient each range sums the weight's and bias's gradients of its own rows, in
an accumulator of its own, and the ranges' sums are added after the loop."""

import numpy as np
import pytest

from benchmarks.fastrnns import cells, factory
from script import Tensor, ops, script
from tests.helpers import (
    assert_close_scaled,
    gradient_loops,
    native_loops,
    python_loop_result,
    row_ranges,
    trains_over_row_ranges,
)


def _layer_norm_lstm_args(batch, dtype, seed):
    inp = factory.rnn_inputs(factory.Sizes(12, 1, 16, 16, batch, np.dtype(dtype).name, seed))
    return (inp.x, inp.hx[0], inp.cx[0], *factory.layernorm_weights(inp)[0])


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("threads", [2, 3, 4])
@pytest.mark.parametrize("batch", [8, 13, 17])
def test_a_layer_norm_lstm_splits_into_row_ranges(monkeypatch, threads, batch, dtype):
    args = _layer_norm_lstm_args(batch, dtype, threads + batch)
    want = python_loop_result(monkeypatch, cells.layernorm_lstm_layer, *args)
    monkeypatch.setenv("RNNSCRIPT_LOOP_THREADS", str(threads))
    f = script(cells.layernorm_lstm_layer)
    got = f(*args)
    (lp,) = native_loops(f, *args)
    assert lp.calls == 1 and lp.prog.batch == batch
    assert row_ranges(lp) == [min(threads, batch // 4)]
    assert_close_scaled(got, want, dtype)


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("threads", [1, 2, 3, 4])
def test_training_splits_both_loops_and_sums_the_ranges_gradients(monkeypatch, threads, dtype):
    """The training forward (saving the layer norms' inputs) and the reverse loop (with the
    layer norms' gradients: each range's weight and bias sums its own) run as row ranges; the
    gradients are the Python loops', called twice (the second call reuses the buffers)."""
    args = _layer_norm_lstm_args(17, dtype, threads)
    f = trains_over_row_ranges(monkeypatch, cells.layernorm_lstm_layer, args, threads, dtype)
    loops = gradient_loops(f)
    assert [lp.calls for lp in loops] == [2, 2]
    assert [lp.prog.batch for lp in loops] == [17, 17]
    assert len(loops[1].prog.partials) == 4  # the weight and bias of two layer norms
    assert [row_ranges(lp) for lp in loops] == [[] if threads == 1 else [threads]] * 2


def test_a_layer_norm_of_rows_of_several_vectors_splits(monkeypatch):
    """``(B, 3, C)`` normalized over C: a range normalizes its rows' 3 vectors each."""

    def step(x: Tensor, h: Tensor, g: Tensor, b: Tensor) -> Tensor:
        for t in range(x.shape[0]):
            a = ops.layer_norm(x[t] + np.tanh(h), g, b)
            h = a * 0.5 + h
        return h

    rng = np.random.default_rng(3)
    x, h = rng.standard_normal((20, 11, 3, 5)), rng.standard_normal((11, 3, 5))
    g, b = rng.standard_normal(5), rng.standard_normal(5)
    want = python_loop_result(monkeypatch, step, x, h, g, b)
    monkeypatch.setenv("RNNSCRIPT_LOOP_THREADS", "2")
    f = script(step)
    got = f(x, h, g, b)
    (lp,) = native_loops(f, x, h, g, b)
    assert lp.calls == 1 and row_ranges(lp) == [2]
    assert_close_scaled([got], [want], np.float64)
