"""Native loops over arrays whose sizes are known only at run time (``fuser.cpu.loop.shapes``):
a loop over a sentence of ``T = len(x)`` words is compiled when reached, for the shapes its
arrays have then, and gives the Python loop's results for every length, 0 and 1 included."""

from typing import List

import numpy as np
import pytest

from benchmarks.fastrnns import cells
from benchmarks.realworld_programs import programs
from fuser.cpu.loop import NativeLoop, RunTimeShapes
from script import Tensor, script
from tests.fuser.test_native_loop import assert_same, lstm_args
from tests.helpers import native_loops, python_loop_result


def softmax(x: Tensor) -> Tensor:
    xt = np.exp(x - np.max(x))
    return xt / np.sum(xt)


def forward(x: List[int], U: Tensor, V: Tensor, W: Tensor):
    """Britz's RNNLM forward step loop, the states in the weights' dtype."""
    T = len(x)
    s = np.zeros((T, W.shape[0]), dtype=U.dtype)
    s[-1] = np.zeros(W.shape[0], dtype=U.dtype)
    o = np.zeros((T, V.shape[0]), dtype=U.dtype)
    for t in np.arange(T):
        s[t] = np.tanh(U[:, x[t]] + W.dot(s[t - 1]))
        o[t] = softmax(V.dot(s[t]))
    return [o, s]


def total(xs: List[List[int]], U: Tensor, V: Tensor, W: Tensor):
    """``forward`` over several sentences (one loop, several lengths, in one call)."""
    L = 0.0
    for i in range(len(xs)):
        o, s = forward(xs[i], U, V, W)
        L += float(np.sum(o * o)) + float(np.sum(s))
    return L


def shifted(x: List[int], U: Tensor, W: Tensor):
    """A state before the first word: the loop runs ``len(x)`` steps, none for no words."""
    T = len(x)
    s = np.zeros((T + 1, W.shape[0]), dtype=U.dtype)
    for t in range(T):
        s[t + 1] = np.tanh(U[:, x[t]] + W @ s[t])
    return s


def past_the_end(x: List[int], U: Tensor, W: Tensor):
    T = len(x)
    s = np.zeros((T, W.shape[0]), dtype=U.dtype)
    for t in range(T):
        s[t] = np.tanh(U[:, x[t + 1]] + W @ s[t - 1])
    return s


def weights(dtype, words=11, hidden=6, seed=0):
    rng = np.random.default_rng(seed)

    def f(*s):
        return (rng.standard_normal(s) * 0.5).astype(dtype)
    return f(hidden, words), f(words, hidden), f(hidden, hidden)


def sentence(n, words=11, seed=1):
    return [int(i) for i in np.random.default_rng(seed + n).integers(0, words, n)]


def inner_loop(f, *args):
    (lp,) = native_loops(f, *args)
    return lp


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_a_sentence_loop_runs_natively_for_each_length(monkeypatch, dtype):
    U, V, W = weights(dtype)
    f = script(forward)
    for n in (1, 2, 5, 9, 5):
        args = (sentence(n), U, V, W)
        got = f(*args)
        lp = inner_loop(f, *args)
        assert isinstance(lp, RunTimeShapes) and lp.calls >= 1
        assert_same(tuple(got), tuple(python_loop_result(monkeypatch, forward, *args)), dtype)
        assert_same(tuple(got), tuple(forward(*args)), dtype)


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_one_loop_keeps_a_specialization_per_length(monkeypatch, dtype):
    U, V, W = weights(dtype)
    xs = [sentence(n) for n in (4, 1, 7, 4, 2)]
    f = script(total)
    got = f(xs, U, V, W)
    lp = inner_loop(f, xs, U, V, W)
    assert lp.calls == 5 and len(lp.specialized) == 4  # lengths 4, 1, 7 and 2
    assert len(lp.code) == 1  # 4, 7 and 2 share their machine code; 1 is compiled apart
    assert all(found is not None for found in lp.specialized.values())
    assert f(xs, U, V, W) == got and lp.calls == 10 and len(lp.specialized) == 4
    want = python_loop_result(monkeypatch, total, xs, U, V, W)
    np.testing.assert_allclose(got, want, rtol=1e-5 if dtype == np.float32 else 1e-12)
    np.testing.assert_allclose(got, total(xs, U, V, W), rtol=1e-5 if dtype == np.float32
                               else 1e-12)


def test_a_length_equal_to_another_size_gets_code_of_its_own(monkeypatch):
    U, V, W = weights(np.float64, hidden=6)
    xs = [sentence(n) for n in (3, 6, 5, 11)]  # 6 is the states' size, 11 the words'
    f = script(total)
    got = f(xs, U, V, W)
    lp = inner_loop(f, xs, U, V, W)
    assert lp.calls == 4 and len(lp.code) == 3
    np.testing.assert_allclose(got, python_loop_result(monkeypatch, total, xs, U, V, W), rtol=1e-12)
    np.testing.assert_allclose(got, total(xs, U, V, W), rtol=1e-12)


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_no_words_run_no_steps_and_one_word_one(monkeypatch, dtype):
    U, _, W = weights(dtype)
    f = script(shifted)
    for n in (0, 1, 3, 0):
        args = (sentence(n), U, W)
        got = f(*args)
        assert got.shape == (n + 1, W.shape[0])
        assert_same(got, python_loop_result(monkeypatch, shifted, *args), dtype)
        assert_same(got, shifted(*args), dtype)
    lp = inner_loop(f, sentence(3), U, W)
    assert isinstance(lp, RunTimeShapes) and lp.calls == 1


def test_a_word_index_past_the_end_raises_numpys_error():
    U, _, W = weights(np.float64)
    f = script(past_the_end)
    x = sentence(4)
    with pytest.raises(IndexError):
        past_the_end(x, U, W)
    with pytest.raises(IndexError):
        f(x, U, W)
    assert inner_loop(f, x, U, W).calls == 0  # the native loop handed the call back


def test_words_that_are_not_ints_run_the_python_loop():
    U, V, W = weights(np.float64)
    x = sentence(5)
    f = script(forward)
    f(x, U, V, W)
    lp = inner_loop(f, x, U, V, W)
    before = lp.calls
    big = [2**70] + x[1:]  # no int64 copy of it: Python's loop raises numpy's error
    with pytest.raises(IndexError):
        forward(big, U, V, W)
    with pytest.raises(IndexError):
        f(big, U, V, W)
    assert lp.calls == before


def test_explain_reports_the_loop_compiled_for_its_run_time_sizes():
    U, V, W = weights(np.float64)
    args = (sentence(5), U, V, W)
    text = script(forward).explain(*args)
    assert "runs natively, compiled for the sizes its arrays have when it is reached" in text
    # float32 weights with float64 states: numpy promotes; the weights are cast once before
    # the loop (``contiguous-weights``), and the loop runs natively too
    m = programs()["rnnlm_numpy"]
    args32 = m.forward_args("float32", "test")
    f = script(m.forward_propagation)
    text = f.explain(*args32)
    assert "runs natively, compiled for the sizes its arrays have when it is reached" in text
    for got, want in zip(f(*args32), m.forward_propagation(*args32)):
        np.testing.assert_allclose(got, want, rtol=1e-12, atol=1e-12)


def test_a_loop_of_known_shapes_compiles_as_before():
    args = lstm_args(6, 4, 5, 3, np.float64)
    f = script(cells.lstm_layer)
    got = f(*args)
    (lp,) = native_loops(f, *args)
    assert isinstance(lp, NativeLoop) and lp.calls == 1
    assert_same(got, cells.lstm_layer(*args), np.float64)


def test_the_rnnlm_programs_loss_runs_its_sentence_loop_natively():
    m = programs()["rnnlm_numpy"]
    case = m.CASES["calculate_total_loss"]
    args = case.make_args("float64", "test")
    f = script(case.fn)
    got = f(*args)
    assert inner_loop(f, *args).calls == len(args[0])
    np.testing.assert_allclose(got, case.fn(*args), rtol=1e-12)
