"""Native loops that keep tuples beyond the step (``fuser.cpu.loop``): a tuple the body builds
and appends to a list from outside (CS231n's step caches) runs natively, and the list gets the
tuples the Python loop builds: equal items, the caller's own arrays where the Python loop holds
them, views of them where it holds views, one array per step made by the body."""

from typing import List, Tuple

import numpy as np
import pytest

from fuser.cpu import loop as native
from script import Tensor, script
from tests.helpers import native_loops, python_loop_result

Cache = Tuple[Tensor, Tensor, Tensor, Tensor, Tensor]


def loop_node(f, *args):
    (node,) = [n for n in f.graph_for(*args).nodes() if n.kind == "prim::Loop"]
    return node


def assert_same_tree(got, want, dtype):
    """Equal structure, types and values (arrays to the dtype's tolerance)."""
    assert type(got) is type(want)
    if isinstance(want, (tuple, list)):
        assert len(got) == len(want)
        for g, w in zip(got, want):
            assert_same_tree(g, w, dtype)
    elif isinstance(want, np.ndarray):
        assert got.dtype == want.dtype and got.shape == want.shape
        tol = 1e-5 if dtype == np.float32 else 1e-12
        np.testing.assert_allclose(got, want, rtol=tol, atol=tol)
    else:
        assert got == want


def rnn_forward(x: Tensor, h0: Tensor, Wx: Tensor, Wh: Tensor, b: Tensor
                ) -> Tuple[Tensor, List[Cache]]:
    """CS231n's ``rnn_forward`` (``h`` of x's dtype)."""
    h = np.zeros((x.shape[0], x.shape[1], h0.shape[1]), x.dtype)
    cache: List[Cache] = []
    prev_h = h0
    for t in range(x.shape[1]):
        xt = x[:, t, :]
        next_h = np.tanh(prev_h.dot(Wh) + xt.dot(Wx) + b)
        h[:, t, :] = next_h
        cache.append((xt, prev_h, Wx, Wh, next_h))
        prev_h = next_h
    return h, cache


def rnn_args(dtype, n=4, t=20, d=5, hidden=6, seed=0):
    rng = np.random.default_rng(seed)

    def f(*s, scale=1.0):
        return (rng.standard_normal(s) * scale).astype(dtype)
    return (f(n, t, d), f(n, hidden), f(d, hidden, scale=0.5), f(hidden, hidden, scale=0.5),
            f(hidden))


@pytest.mark.parametrize("threads", ["1", "2"])
@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_step_caches_are_appended_natively_with_the_python_loops_tuples(monkeypatch, dtype,
                                                                        threads):
    monkeypatch.setenv("RNNSCRIPT_LOOP_THREADS", threads)
    args = rnn_args(dtype)
    x, h0, Wx, Wh, b = args
    f = script(rnn_forward)
    h, cache = f(*args)
    (lp,) = native_loops(f, *args)
    assert lp.calls == 1
    assert "runs natively" in f.explain(*args)
    assert_same_tree((h, cache), python_loop_result(monkeypatch, rnn_forward, *args), dtype)
    assert_same_tree((h, cache), rnn_forward(*args), dtype)
    assert len(cache) == 20 and all(type(c) is tuple for c in cache)
    # the arrays from outside are the caller's objects, the rows of x views of it
    assert cache[0][1] is h0 and all(c[2] is Wx and c[3] is Wh for c in cache)
    assert all(c[0].base is x for c in cache)
    # each step's state is one array: appended by its step, carried into the next step's tuple
    assert all(cache[t + 1][1] is cache[t][4] for t in range(19))
    assert not np.shares_memory(cache[3][4], cache[4][4])
    x[:, 7, :] = 42.0  # a view sees later writes into the array, as numpy's does
    assert (cache[7][0] == 42.0).all() and not (cache[6][0] == 42.0).any()


def test_every_call_appends_fresh_arrays_to_the_list_it_is_given(monkeypatch):
    def forward(x: Tensor, h: Tensor, w: Tensor, cache: List[Tuple[Tensor, Tensor]]) -> Tensor:
        for t in range(x.shape[0]):
            a = x[t] @ w
            h = np.tanh(a + h)
            cache.append((a, h))
        return h

    rng = np.random.default_rng(3)
    x, h, w = rng.standard_normal((12, 3, 4)), rng.standard_normal((3, 4)), np.eye(4)
    f = script(forward)
    old = (x[0], h)
    cache = [old]
    last = f(x, h, w, cache)
    assert len(cache) == 13 and cache[0] is old
    assert last is cache[-1][1]  # the state returned is the one the last tuple holds
    first = [c[1].copy() for c in cache[1:]]
    again = [old]  # (a list of another length is another specialization)
    f(x + 1.0, h, w, again)
    assert native_loops(f, x, h, w, [old])[0].calls == 2
    for c, kept in zip(cache[1:], first):  # the second call's buffers are not the first's
        np.testing.assert_array_equal(c[1], kept)
    want = [old]
    python_loop_result(monkeypatch, forward, x + 1.0, h, w, want)
    assert_same_tree(again, want, np.float64)


def numbers_and_nesting(x: Tensor, h: Tensor, scale: float, k: int
                        ) -> Tuple[List[Tuple[int, float, Tensor, Tuple[Tensor, int]]],
                                   List[Tensor]]:
    kept: List[Tuple[int, float, Tensor, Tuple[Tensor, int]]] = []
    rows: List[Tensor] = []
    n = x.shape[0]
    for t in range(n):
        back = n - 1 - t
        row = x[back]
        h = np.tanh(h * scale + row)
        inner = (row, k)
        item = (back, t * scale, h, inner)
        kept.append(item)
        kept.append(item)
        kept.append((back, t * scale, h, inner))
        rows.append(x[t + k])
        rows.append(h[k + 4])
    return kept, rows


def test_numbers_indices_and_nested_tuples_are_the_python_loops(monkeypatch):
    rng = np.random.default_rng(5)
    x, h = rng.standard_normal((20, 3, 2)), rng.standard_normal((3, 2))
    f = script(numbers_and_nesting)
    got = f(x, h, 0.5, -3)
    assert native_loops(f, x, h, 0.5, -3)[0].calls == 1
    want = python_loop_result(monkeypatch, numbers_and_nesting, x, h, 0.5, -3)
    assert_same_tree(got, want, np.float64)
    assert_same_tree(got, numbers_and_nesting(x, h, 0.5, -3), np.float64)
    kept, rows = got
    assert kept[0] is kept[1] and kept[1] is not kept[2]  # one tuple appended twice
    assert kept[0][3] is kept[2][3] and kept[0][2] is kept[2][2]
    assert kept[0][3][0].base is x and rows[0].base is x and rows[0] is not x[17]
    assert np.shares_memory(rows[0], x[17])  # x[0 - 3] wraps, as Python's index does
    assert all(type(c[0]) is int and type(c[1]) is float for c in kept)
    assert rows[1].base is not None and np.shares_memory(rows[1], kept[0][2])  # a row of h


def test_lstm_gates_split_into_views_and_kept_in_the_cache(monkeypatch):
    """CS231n's LSTM: ``a[:, :H]`` ... ``a[:, 3*H:]`` are the pieces of a split (views of the
    step's product), the gates and ``a`` kept in the step cache."""
    def lstm_forward(x: Tensor, h: Tensor, Wx: Tensor, Wh: Tensor, b: Tensor
                     ) -> Tuple[Tensor, List[Tuple[Tensor, Tensor, Tensor, Tensor, Tensor]]]:
        H = h.shape[1]
        c = np.zeros_like(h)
        cache: List[Tuple[Tensor, Tensor, Tensor, Tensor, Tensor]] = []
        for t in range(x.shape[1]):
            a = x[:, t, :].dot(Wx) + h.dot(Wh) + b
            i = 1 / (1 + np.exp(-a[:, :H]))
            f = 1 / (1 + np.exp(-a[:, H:2 * H]))
            o = 1 / (1 + np.exp(-a[:, 2 * H:3 * H]))
            g = np.tanh(a[:, 3 * H:])
            c = f * c + i * g
            h = o * np.tanh(c)
            cache.append((a, i, g, c, h))
        return h, cache

    for dtype in (np.float32, np.float64):
        rng = np.random.default_rng(8)
        x, h = rng.standard_normal((3, 20, 5)).astype(dtype), np.zeros((3, 4), dtype)
        Wx, Wh, b = (rng.standard_normal(s).astype(dtype) * 0.5 for s in ((5, 16), (4, 16),
                                                                            (16,)))
        f = script(lstm_forward)
        got = f(x, h, Wx, Wh, b)
        assert native_loops(f, x, h, Wx, Wh, b)[0].calls == 1
        assert_same_tree(got, python_loop_result(monkeypatch, lstm_forward, x, h, Wx, Wh, b), dtype)
        assert_same_tree(got, lstm_forward(x, h, Wx, Wh, b), dtype)


def test_zero_steps_append_nothing():
    args = rnn_args(np.float64, t=20)
    f = script(rnn_forward)
    f(*args)
    empty = (args[0][:, :0, :], *args[1:])
    h, cache = f(*empty)
    assert cache == [] and h.shape == (4, 0, 6)


def test_a_tuple_holding_a_view_of_a_made_array_stays_python_and_says_why(monkeypatch):
    def transposed(x: Tensor, h: Tensor) -> List[Tuple[Tensor, Tensor]]:
        cache: List[Tuple[Tensor, Tensor]] = []
        for t in range(x.shape[0]):
            h = np.tanh(h + x[t])
            cache.append((h, h.T))
        return cache

    rng = np.random.default_rng(9)
    x, h = rng.standard_normal((20, 3, 2)), rng.standard_normal((3, 2))
    f = script(transposed)
    assert_same_tree(f(x, h), transposed(x, h), np.float64)
    assert not native_loops(f, x, h)
    with pytest.raises(native.LoopRefused, match="a view"):
        native.compile_loop(loop_node(f, x, h))


@pytest.mark.parametrize("threads", [1, 2, 3])
def test_tuples_of_row_ranges_run_at_once_are_the_python_loops(monkeypatch, threads):
    def forward(x: Tensor, h: Tensor, w: Tensor) -> Tuple[Tensor, List[Tuple[Tensor, Tensor]]]:
        cache: List[Tuple[Tensor, Tensor]] = []
        for t in range(x.shape[0]):
            h = np.tanh(x[t] @ w + h)
            cache.append((x[t], h))
        return h, cache

    from fuser.cpu import blas
    rng = np.random.default_rng(10)
    x, h, w = (rng.standard_normal((20, 16, 5)), rng.standard_normal((16, 4)),
               rng.standard_normal((5, 4)) * 0.5)
    want = python_loop_result(monkeypatch, forward, x, h, w)
    monkeypatch.setenv("RNNSCRIPT_LOOP_THREADS", str(threads))
    with blas.threads(threads):
        f = script(forward)
        got = f(x, h, w)
    (lp,) = native_loops(f, x, h, w)
    assert lp.calls == 1 and lp.prog.batch == 16
    assert_same_tree(got, want, np.float64)
    assert all(c[0].base is x for c in got[1]) and got[0] is got[1][-1][1]


@pytest.mark.parametrize("program", ["cs231n_rnn", "cs231n_lstm"])
def test_the_cs231n_forwards_keep_their_caches_natively(monkeypatch, program):
    """The corpus's CS231n forwards at their benchmark sizes (at test sizes the loop is
    unrolled): the step loop runs natively and returns the Python loop's states and caches."""
    from benchmarks.realworld_programs import programs
    module = programs()[program]
    case = module.CASES[module.BENCH]
    args = case.make_args("float64", "bench")
    x, h0, Wx, Wh, _ = args
    f = script(case.fn)
    got = f(*args)
    (lp,) = native_loops(f, *args)
    assert lp.calls == 1
    assert_same_tree(got, python_loop_result(monkeypatch, case.fn, *args), np.float64)
    cache = got[1]
    at = 3 if program == "cs231n_lstm" else 2  # where Wx is in a step's cache
    assert cache[0][1] is h0 and all(c[at] is Wx and c[at + 1] is Wh for c in cache)
    assert all(c[0].base is x for c in cache)
    assert all(cache[t + 1][1] is cache[t][-1] for t in range(len(cache) - 1))


def test_a_dropped_cache_gives_its_buffers_back_to_the_next_call_at_once():
    """Nothing the call leaves behind holds the step buffers (no reference cycle waiting for the
    garbage collector): once the caller drops the caches, the next call reuses the buffers."""
    import gc
    args = rnn_args(np.float64)
    f = script(rnn_forward)
    f(*args)
    gc.collect()
    gc.disable()
    try:
        _, cache = f(*args)
        first = cache[0][4].base.ctypes.data
        del cache
        _, cache = f(*args)
        assert cache[0][4].base.ctypes.data == first
    finally:
        gc.enable()
