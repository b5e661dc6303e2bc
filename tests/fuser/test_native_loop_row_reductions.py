"""Reductions over later axes are row-wise in a native loop (row r of a mean, a standard
deviation or a ``sum_to`` of its row's items from row r alone), and so are views that keep the
rows first (a broadcast to later axes): such loops split into batch row ranges, each range
reducing its own rows, with the one loop's results, forward and backward."""

import numpy as np
import pytest

from benchmarks.fastrnns import cells, factory
from script import Tensor, script, vjp
from tests.helpers import (
    assert_close_scaled,
    assert_same,
    gradient_loops,
    native_loops,
    python_loop_result,
    row_ranges,
    trains_over_row_ranges,
)


def _decomposed_args(batch, dtype, seed):
    inp = factory.rnn_inputs(factory.Sizes(9, 1, 12, 12, batch, np.dtype(dtype).name, seed))
    return (inp.x, inp.hx[0], inp.cx[0], *factory.layernorm_weights(inp)[0])


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("threads", [1, 2, 3, 4])
@pytest.mark.parametrize("batch", [8, 17])
def test_a_decomposed_layer_norm_lstm_trains_over_row_ranges(monkeypatch, threads, batch,
                                                             dtype):
    """custom_lstms' layer norm as ``mean`` and ``std`` over the last axis: its forward loop and
    the reverse loop (``sum_to`` the (B, 1) statistics, broadcasts back) split by rows."""
    args = _decomposed_args(batch, dtype, threads + batch)
    f = trains_over_row_ranges(monkeypatch, cells.layernorm_decom_lstm_layer, args, threads,
                               dtype)
    loops = gradient_loops(f)
    assert [lp.calls for lp in loops] == [2, 2]
    assert [lp.prog.batch for lp in loops] == [batch, batch]
    split = [] if threads == 1 else [min(threads, batch // 4)]
    assert [row_ranges(lp) for lp in loops] == [split, split]


def softmax_attention(q: Tensor, keys: Tensor, w: Tensor, h: Tensor) -> Tensor:
    """Each step attends over ``keys`` (B, S, C) with the query ``h @ w``: a softmax over the
    last axis (max, exp, sum with keepdims), the weighted sum of the keys as a product summed
    over axis 1, and a mean over the last axis mixed back in."""
    for t in range(q.shape[0]):
        s = ((h @ w)[:, None, :] * keys).sum(axis=2)  # (B, S)
        e = np.exp(s - s.max(axis=1, keepdims=True))
        a = e / e.sum(axis=1, keepdims=True)
        ctx = (a[:, :, None] * keys).sum(axis=1)  # (B, C)
        h = np.tanh(ctx + q[t] - h.mean(axis=1, keepdims=True))
    return h


@pytest.mark.parametrize("threads", [2, 3])
@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_an_attention_loop_splits_its_softmax_and_weighted_sums(monkeypatch, threads, dtype):
    rng = np.random.default_rng(threads)
    batch, length, size = 13, 5, 8
    q = rng.standard_normal((6, batch, size)).astype(dtype)
    keys = rng.standard_normal((batch, length, size)).astype(dtype)
    w = (rng.standard_normal((size, size)) * 0.3).astype(dtype)
    h = rng.standard_normal((batch, size)).astype(dtype)
    want = python_loop_result(monkeypatch, softmax_attention, q, keys, w, h)
    monkeypatch.setenv("RNNSCRIPT_LOOP_THREADS", str(threads))
    f = script(softmax_attention)
    got = f(q, keys, w, h)
    (lp,) = native_loops(f, q, keys, w, h)
    assert lp.calls == 1 and lp.prog.batch == batch and row_ranges(lp) == [threads]
    assert_close_scaled([got], [want], dtype)


def test_a_reduction_over_the_rows_keeps_its_loop_whole(monkeypatch):
    """A sum over axis 0 gathers every row: the loop runs over all rows at once."""

    def step(x: Tensor, h: Tensor, w: Tensor) -> Tensor:
        for t in range(x.shape[0]):
            h = np.tanh(x[t] + h @ w - h.sum(axis=0, keepdims=True) * 0.1)
        return h

    rng = np.random.default_rng(5)
    x, h = rng.standard_normal((40, 12, 6)), rng.standard_normal((12, 6))
    w = rng.standard_normal((6, 6)) * 0.3
    want = python_loop_result(monkeypatch, step, x, h, w)
    monkeypatch.setenv("RNNSCRIPT_LOOP_THREADS", "2")
    f = script(step)
    got = f(x, h, w)
    (lp,) = native_loops(f, x, h, w)
    assert lp.calls == 1 and lp.prog.batch is None
    assert_close_scaled([got], [want], np.float64)


@pytest.mark.parametrize("program,case", [("cs231n_lstm", "lstm_forward"),
                                          ("dlfs2_attention", "time_attention_forward")])
def test_corpus_loops_with_constructors_and_reshapes_split(monkeypatch, program, case):
    """cs231n's LSTM makes ``np.zeros_like`` / ``np.ones_like`` arrays each step (its stable
    sigmoid); Deep Learning from Scratch 2's attention reshapes (B, H) to (B, 1, H): a range
    fills and reshapes its own rows."""
    from benchmarks.realworld_programs import programs

    c = programs()[program].CASES[case]
    args = c.make_args("float64", "bench")
    want = python_loop_result(monkeypatch, c.fn, *args)
    monkeypatch.setenv("RNNSCRIPT_LOOP_THREADS", "2")
    f = script(c.fn)
    got = f(*args)
    (lp,) = native_loops(f, *args)
    assert lp.calls == 1 and lp.prog.batch is not None and row_ranges(lp) == [2]
    assert_same(got, want, rtol=1e-10, atol=1e-12)


def loss_and_mean_state(x: Tensor, y: Tensor, h: Tensor, w: Tensor, u: Tensor, v: Tensor):
    """A per-step softmax cross-entropy summed into a number that starts as ``0.0`` and the
    batch's mean state summed over the steps: sums over the rows, carried."""
    loss = 0.0
    mean_h = np.zeros(h.shape[1])
    for t in range(x.shape[0]):
        h = np.tanh(x[t] @ w + h @ u)
        logits = h @ v
        m = logits.max(axis=1, keepdims=True)
        logp = logits - m - np.log(np.exp(logits - m).sum(axis=1, keepdims=True))
        loss -= np.sum(logp * y[t])
        mean_h += h.mean(axis=0)
    return loss / x.shape[1], h, mean_h


@pytest.mark.parametrize("threads", [1, 2, 3, 4])
@pytest.mark.parametrize("batch", [8, 13])
def test_carried_sums_over_the_rows_split_per_range(monkeypatch, threads, batch):
    """Each range sums its own rows into a loss and a mean of its own (the first range's
    starting from the initial value, the others from zero), added after the loop; a number
    comes back as numpy's number."""
    rng = np.random.default_rng(threads + batch)
    x, y = rng.standard_normal((30, batch, 8)), np.eye(10)[rng.integers(0, 10, (30, batch))]
    h = rng.standard_normal((batch, 12))
    w, u, v = (rng.standard_normal(s) * 0.3 for s in ((8, 12), (12, 12), (12, 10)))
    args = (x, y, h, w, u, v)
    want = python_loop_result(monkeypatch, loss_and_mean_state, *args)
    monkeypatch.setenv("RNNSCRIPT_LOOP_THREADS", str(threads))
    f = script(loss_and_mean_state)
    for _ in range(2):
        got = f(*args)
        assert type(got[0]) is type(want[0]) is np.float64
        assert_same(got, want, rtol=1e-12, atol=1e-12)
    (lp,) = native_loops(f, *args)
    assert lp.calls == 2 and lp.prog.batch == batch and len(lp.prog.partials) == 2
    assert row_ranges(lp) == ([] if threads == 1 else [min(threads, batch // 4)])


def test_the_loss_loop_trains_over_row_ranges(monkeypatch):
    rng = np.random.default_rng(9)
    x, y = rng.standard_normal((30, 13, 8)), np.eye(10)[rng.integers(0, 10, (30, 13))]
    h = rng.standard_normal((13, 12))
    w, u, v = (rng.standard_normal(s) * 0.3 for s in ((8, 12), (12, 12), (12, 10)))
    args = (x, y, h, w, u, v)

    def train(f):
        out, back = vjp(f, *args)
        return out, back((1.0, np.ones_like(out[1]), np.ones_like(out[2])))

    with monkeypatch.context() as m:
        m.setenv("RNNSCRIPT_NATIVE_LOOPS", "0")
        want = train(script(loss_and_mean_state))
    monkeypatch.setenv("RNNSCRIPT_LOOP_THREADS", "2")
    f = script(loss_and_mean_state)
    got = train(f)
    assert_same(got, want, rtol=1e-10, atol=1e-12)
    forward = gradient_loops(f)[0]
    assert row_ranges(forward) == [2]


def test_explain_says_whether_a_loop_splits_by_rows_and_why_not():
    rng = np.random.default_rng(2)
    x, h, w = rng.standard_normal((40, 12, 6)), rng.standard_normal((12, 6)), \
        rng.standard_normal((6, 6))

    def whole(x: Tensor, h: Tensor, w: Tensor) -> Tensor:
        for t in range(x.shape[0]):
            h = np.tanh(x[t] + h @ w - h.sum(axis=0, keepdims=True) * 0.1)
        return h

    def rows(x: Tensor, h: Tensor, w: Tensor) -> Tensor:
        for t in range(x.shape[0]):
            h = np.tanh(x[t] + h @ w - h.sum(axis=1, keepdims=True) * 0.1)
        return h

    assert "its steps are independent across the batch's 12 rows" in script(rows).explain(x, h, w)
    text = script(whole).explain(x, h, w)
    assert "over every row at once (tensor::sum at " in text
    assert "a reduction over the batch axis, not a carried sum)" in text


def history_sum(x: Tensor, h: Tensor, w: Tensor, v: Tensor) -> Tensor:
    """Reads the (T, B, H) buffer its steps write: its first axis is the steps', even when T
    equals B and it looks like (B, ...)."""
    hs = np.zeros((x.shape[0], h.shape[0], h.shape[1]))
    for t in range(x.shape[0]):
        hs[t] = h
        m = hs.sum(axis=2)
        h = np.tanh(x[t] + h @ w + m @ v * 0.1)
    return h


def history_product(x: Tensor, h: Tensor, c: Tensor, w: Tensor, v: Tensor) -> Tensor:
    hs = np.zeros((x.shape[0], h.shape[0]))
    for t in range(x.shape[0]):
        hs[t] = c
        h = np.tanh(x[t] + h @ w + hs @ v)
        c = np.tanh(c * 0.9 + 0.1)
    return h


def test_a_time_major_buffer_the_steps_read_keeps_the_loop_whole_when_t_equals_b(monkeypatch):
    rng = np.random.default_rng(4)
    steps = batch = 20
    x, h = rng.standard_normal((steps, batch, 6)), rng.standard_normal((batch, 6))
    w = rng.standard_normal((6, 6)) * 0.3
    cases = [(history_sum, (x, h, w, rng.standard_normal((steps, 6)))),
             (history_product, (x, h, rng.standard_normal(batch), w,
                                rng.standard_normal((steps, 6)) * 0.3))]
    for fn, args in cases:
        want = python_loop_result(monkeypatch, fn, *args)
        with monkeypatch.context() as m:
            m.setenv("RNNSCRIPT_LOOP_THREADS", "2")
            f = script(fn)
            got = f(*args)
        (lp,) = native_loops(f, *args)
        assert lp.calls == 1 and lp.prog.batch is None
        assert "a (T, B, ...) buffer the steps write" in lp.prog.whole_why
        assert_close_scaled([got], [want], np.float64)


def loss_from(x: Tensor, h: Tensor, w: Tensor, start: Tensor):
    """Accumulators that start where the caller says: only the first range starts there."""
    total = start.sum()
    seen = start * 2.0
    for t in range(x.shape[0]):
        h = np.tanh(x[t] + h @ w)
        total += np.sum(h * h)
        seen = seen + h.sum(axis=0)
    return total, seen, h


@pytest.mark.parametrize("threads", [2, 3])
def test_carried_sums_starting_from_values_count_them_once(monkeypatch, threads):
    rng = np.random.default_rng(threads)
    x, h = rng.standard_normal((30, 12, 5)), rng.standard_normal((12, 5))
    args = (x, h, rng.standard_normal((5, 5)) * 0.4, rng.standard_normal(5) + 3.0)
    want = python_loop_result(monkeypatch, loss_from, *args)
    monkeypatch.setenv("RNNSCRIPT_LOOP_THREADS", str(threads))
    f = script(loss_from)
    got = f(*args)
    (lp,) = native_loops(f, *args)
    assert lp.calls == 1 and len(lp.prog.partials) == 2 and row_ranges(lp) == [threads]
    assert_same(got, want, rtol=1e-12, atol=1e-12)


def test_a_loop_without_products_splits_by_its_elementwise_work(monkeypatch):
    """Unset ``RNNSCRIPT_LOOP_THREADS``: the attention loop has no matmul, but its softmax
    over the keys and weighted sums reach ``SPLIT_MIN_PRODUCT`` additions' worth a step."""
    from benchmarks.realworld_programs import programs
    from fuser.cpu import products
    from fuser.cpu.loop import ranges

    monkeypatch.delenv("RNNSCRIPT_LOOP_THREADS", raising=False)
    monkeypatch.setattr(products, "threads", lambda: 2)
    c = programs()["dlfs2_attention"].CASES["time_attention_forward"]
    args = c.make_args("float32", "bench")
    f = script(c.fn)
    got = f(*args)
    (lp,) = native_loops(f, *args)
    (variant,) = lp.variants.values()
    assert not any(n.kind == "tensor::matmul" for n in lp.prog.node.blocks[0])
    assert variant.step_product >= ranges.SPLIT_MIN_PRODUCT and row_ranges(lp) == [2]
    assert_same(got, c.fn(*args), rtol=1e-5, atol=1e-6)


def batch_major_rnn(x: Tensor, W: Tensor, U: Tensor, b: Tensor) -> Tensor:
    """NumpyDL's SimpleRNN.forward: a (B, T, H) output written a step at a time, each step
    reading the one before from it (``out[:, i - 1, :]``, a select along the time axis)."""
    out = np.zeros((x.shape[0], x.shape[1], W.shape[1]), x.dtype)
    out[:, 0, :] = np.tanh(x[:, 0, :] @ W + b)
    for i in range(1, x.shape[1]):
        out[:, i, :] = np.tanh(x[:, i, :] @ W + out[:, i - 1, :] @ U + b)
    return out


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("threads", [1, 2, 3, 4])
@pytest.mark.parametrize("batch", [9, 16])
def test_a_step_reading_the_last_slot_of_a_batch_major_buffer_splits_by_rows(
        monkeypatch, threads, batch, dtype):
    """A range reads its own rows of the step before (it wrote them), so the loop splits."""
    rng = np.random.default_rng(threads * batch)
    args = (rng.standard_normal((batch, 24, 5)).astype(dtype),  # (not unrolled)
            (rng.standard_normal((5, 12)) * 0.4).astype(dtype),
            (rng.standard_normal((12, 12)) * 0.3).astype(dtype),
            rng.standard_normal(12).astype(dtype))
    want = python_loop_result(monkeypatch, batch_major_rnn, *args)
    monkeypatch.setenv("RNNSCRIPT_LOOP_THREADS", str(threads))
    f = script(batch_major_rnn)
    for _ in range(2):
        assert_close_scaled([f(*args)], [want], dtype)
    (lp,) = native_loops(f, *args)
    assert lp.prog.batch == batch
    assert row_ranges(lp) == ([] if threads == 1 else [min(threads, batch // 4)])
    trains_over_row_ranges(monkeypatch, batch_major_rnn, args, threads, dtype)
