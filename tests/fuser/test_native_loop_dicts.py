"""Native loops over steps kept in dicts and one-hot rows (``fuser.cpu.loop``): a loop storing
``d[t] = ...`` a step, a loop reading ``d[t]`` of a dict filled before it, and ``x[i] = 1`` into
a fresh array run as one native function each, with the plain function's results, errors
(``KeyError``, ``IndexError``) and gradients; a dict whose keys are not consecutive ints runs
the Python loop."""

from __future__ import annotations

from typing import Dict, List

import numpy as np
import pytest

import benchmarks.realworld_programs.min_char_rnn as M
from script import Tensor, script
from tests.gradcheck import check_vjp
from tests.helpers import assert_same_at, native_loops, python_loop_result


@pytest.mark.parametrize("size", ["test", "bench"])
def test_min_char_rnn_runs_both_loops_natively_with_the_plain_results(monkeypatch, size):
    f = script(M.lossFun)
    args = M.make_args("float64", size)
    got = f(*args)
    loops = native_loops(f, *args)
    assert len(loops) == 2 and all(lp.calls == 1 for lp in loops)
    assert_same_at(got, M.lossFun(*M.make_args("float64", size)), "float64")
    assert_same_at(got, python_loop_result(monkeypatch, M.lossFun, *args), "float64")
    assert "runs as Python" not in str(f.explain(*args))


def test_min_char_rnn_in_float32_gives_the_plain_results():
    # float32 weights meet the float64 one-hots: the state's dtype changes after the first
    # step, so these loops stay Python, with the plain results
    f = script(M.lossFun)
    got = f(*M.make_args("float32", "test"))
    assert_same_at(got, M.lossFun(*M.make_args("float32", "test")), "float32")


def test_min_char_rnn_gradients_match_finite_differences():
    check_vjp(M.lossFun, M.make_args("float64", "test"), rtol=1e-5, atol=1e-7)


def one_hot_steps(idx: List[int], W: Tensor, V: int) -> Tensor:
    out = np.zeros((W.shape[0], 1), dtype=W.dtype)
    for t in range(len(idx)):
        x = np.zeros((V, 1), dtype=W.dtype)
        x[idx[t]] = 1
        out = np.tanh(out + np.dot(W, x))
    return out


@pytest.mark.parametrize("dtype", ["float32", "float64"])
def test_a_number_written_into_a_fresh_array_runs_natively(dtype):
    W = np.random.default_rng(0).standard_normal((3, 5)).astype(dtype)
    for idx in ([0, 4, 2, 2], [-1, -5, 3]):
        f = script(one_hot_steps)
        got = f(idx, W, 5)
        assert [lp.calls for lp in native_loops(f, idx, W, 5)] == [1]
        assert_same_at(got, one_hot_steps(idx, W, 5), dtype)


def test_a_row_out_of_range_raises_index_error_as_python():
    W = np.ones((3, 5))
    with pytest.raises(IndexError):
        one_hot_steps([1, 5], W, 5)
    with pytest.raises(IndexError):
        script(one_hot_steps)([1, 5], W, 5)


def store_then_read(xs: List[Tensor], h0: Tensor, W: Tensor, shift: int) -> Tensor:
    hs = {}
    hs[-1] = h0 * 1.0
    for t in range(len(xs)):
        hs[t] = np.tanh(np.dot(W, hs[t - 1]) + xs[t])
    g = np.zeros_like(h0)
    for t in reversed(range(len(xs))):
        g = np.tanh(np.dot(W, g) + hs[t + shift] * hs[t - 1])
    return g + hs[len(xs) - 1]


def store_args(T: int, dtype: str) -> tuple:
    rng = np.random.default_rng(1)
    return ([rng.standard_normal((4, 1)).astype(dtype) for _ in range(T)],
            rng.standard_normal((4, 1)).astype(dtype), rng.standard_normal((4, 4)).astype(dtype))


@pytest.mark.parametrize("dtype", ["float32", "float64"])
def test_a_dict_stored_by_one_loop_and_read_by_the_next_runs_natively(dtype):
    for T in (1, 6):
        args = (*store_args(T, dtype), 0)
        f = script(store_then_read)
        got = f(*args)
        loops = native_loops(f, *args)
        assert len(loops) == 2 and all(lp.calls == 1 for lp in loops)
        assert_same_at(got, store_then_read(*args), dtype)


def test_gradients_through_a_dict_between_loops_match_finite_differences():
    check_vjp(store_then_read, (*store_args(4, "float64"), 0))


def test_a_missing_key_raises_key_error_as_python():
    args = (*store_args(4, "float64"), 1)  # hs[t + 1] at t = 3: no such key
    with pytest.raises(KeyError):
        store_then_read(*args)
    f = script(store_then_read)
    with pytest.raises(KeyError):
        f(*args)
    args = (*store_args(4, "float64"), -2)  # hs[-2] at t = 0: below the lowest key (-1)
    with pytest.raises(KeyError):
        store_then_read(*args)
    with pytest.raises(KeyError):
        f(*args)
    assert all(lp.calls == 0 for lp in native_loops(f, *args)[1:])


def read_steps(d: Dict[int, Tensor], W: Tensor, n: int) -> Tensor:
    g = np.zeros((4, 1))
    for t in range(n):
        g = np.tanh(np.dot(W, g) + d[t])
    return g


def store_steps(d: Dict[int, Tensor], W: Tensor, n: int) -> Tensor:
    g = np.zeros((4, 1))
    for t in range(n):
        g = np.tanh(np.dot(W, g) + 1.0)
        d[2 * t - 1] = g
    return g


@pytest.mark.parametrize("keys,native", [((0, 1, 2), True), ((2, 0, 1, -1), True),
                                         ((0, 1, 3), False), ((0, 1, 2.0), False)])
def test_a_dict_argument_read_by_key(keys, native):
    rng = np.random.default_rng(2)
    d = {k: rng.standard_normal((4, 1)) for k in keys}
    W = rng.standard_normal((4, 4))
    f = script(read_steps)
    n = 2
    got = f(d, W, n)
    assert [lp.calls for lp in native_loops(f, d, W, n)] == [int(native)]
    assert_same_at(got, read_steps(d, W, n), "float64")


def test_items_stored_into_a_dict_argument_keep_pythons_order_and_overwrites():
    rng = np.random.default_rng(3)
    first = {1: rng.standard_normal((4, 1)), 7: rng.standard_normal((4, 1))}
    W = rng.standard_normal((4, 4))
    d, want = dict(first), dict(first)
    f = script(store_steps)
    # (the call adds items: another specialization after; 3 trips, not an axis's 4, which
    # would be compiled in)
    loops = native_loops(f, d, W, 3)
    assert_same_at(f(d, W, 3), store_steps(want, W, 3), "float64")
    assert [lp.calls for lp in loops] == [1]
    assert list(d) == list(want) == [1, 7, -1, 3]
    for k in want:
        assert_same_at(d[k], want[k], "float64")
    assert len({id(v) for v in d.values()}) == len(d)
