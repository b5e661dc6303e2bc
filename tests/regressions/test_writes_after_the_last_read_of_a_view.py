"""In-place writes refused although no name that may share the array's memory is read after
them, in code ported from public numpy RNNs (Karpathy's batched LSTM, ``C[t] = ... * prevc``
with ``prevc = C[t - 1] if t > 0 else c0``; Holberton's ``deep_rnn``, ``h_prev = H[time,
layer]`` in the inner of two loops):

- the reads in the written value counted as reads after the write (``C[t] = prev * 2 + x``);
- a name bound to a view or to an argument (``prev = C[t - 1] if t > 0 else c0``) made the
  argument look like it may share memory with the array the function made;
- a name bound in both branches of an ``if`` at the top of a loop body, or in the body of an
  inner loop, counted as read by the next step before it is bound again.

Writes that numpy would show through a name read afterwards are still refused."""

import numpy as np
import pytest

from script import Tensor, script
from script.errors import ScriptError


def view_read_in_the_value(x: Tensor):
    C = np.zeros((3, 2))
    for t in range(3):
        prev = C[t - 1]
        C[t] = prev * 2 + x
    return C


def view_or_argument(x: Tensor, c0: Tensor):
    C = np.zeros((3, 2))
    for t in range(3):
        prevc = C[t - 1] if t > 0 else c0
        C[t] = prevc * 0.5 + x
    return C, c0


def bound_in_both_branches(x: Tensor, c0: Tensor):
    C = np.zeros((3, 2))
    for t in range(3):
        if t > 0:
            prev = C[t - 1]
        else:
            prev = c0
        y = prev * 2 + x
        C[t] = y
    return C, c0


def view_in_an_inner_loop(X: Tensor):
    H = np.zeros((3, 2, 4))
    for t in range(2):
        for j in range(2):
            v = H[t, j]
            y = np.tanh(v + X[t])
            H[t + 1, j] = y
    return H


def view_read_after_the_write(x: Tensor):
    C = np.zeros((3, 2))
    for t in range(1, 3):
        prev = C[t - 1]
        C[t - 1] = prev * 2 + x
        C[t] = prev + 1.0
    return C


def view_bound_by_the_same_statement(x: Tensor):
    C = np.zeros((3, 2))
    v = C[1]
    C[1], y = x * 2.0, v
    return C, y


def view_bound_in_one_branch(x: Tensor):
    C = np.zeros((3, 2))
    prev = x
    for t in range(3):
        if t > 0:
            prev = C[t - 1]
        C[t - 1] = prev * 2.0 + 1.0
    return C


def view_read_by_the_next_inner_step(x: Tensor):
    H = np.zeros((3, 2, 2))
    v = x
    for t in range(2):
        for j in range(2):
            H[t + 1, j] = v + 1.0
            v = H[t + 1, j]
    return H, v


@pytest.mark.parametrize("fn", [view_read_in_the_value, view_or_argument, bound_in_both_branches])
def test_writes_after_the_last_read_of_a_view_compile(fn):
    rng = np.random.default_rng(0)
    args = (rng.standard_normal(2),) if fn is view_read_in_the_value else \
        (rng.standard_normal(2), rng.standard_normal(2))
    want, got = fn(*args), script(fn)(*args)
    for w, g in zip(want if isinstance(want, tuple) else (want,),
                    got if isinstance(got, tuple) else (got,)):
        np.testing.assert_allclose(g, w, rtol=1e-12)


def test_a_view_dead_in_an_inner_loop_body_allows_the_write():
    X = np.random.default_rng(0).standard_normal((2, 4)).astype(np.float32)
    got = script(view_in_an_inner_loop)(X)
    np.testing.assert_allclose(got, view_in_an_inner_loop(X), rtol=1e-6)


@pytest.mark.parametrize("fn", [view_read_after_the_write, view_bound_by_the_same_statement,
                                view_bound_in_one_branch, view_read_by_the_next_inner_step])
def test_a_write_seen_through_a_name_read_later_is_refused(fn):
    with pytest.raises(ScriptError, match="would also change|may share memory"):
        script(fn)(np.arange(2.0))


# -- a later read of a name bound again first (chainer's n_step_bigru reference) ---------------
def view_bound_again_in_a_later_loop(e: Tensor, x: Tensor):
    """The forward pass's last ``h_prev`` is a view of ``e``; the backward pass binds
    ``h_prev`` again at the top of its loop body before reading it."""
    e = e.copy()
    outs = []
    for t in range(3):
        h_prev = e[0, :2]
        e[0, :2] = h_prev * 0.5 + x
        outs.append(e[0, :2] * 1.0)
    for t in range(3):
        h_prev = e[1, :2]
        y = h_prev * 0.5 - x
        e[1, :2] = y
        outs.append(y)
    return outs, e


def view_bound_again_only_in_a_branch(e: Tensor, x: Tensor, c: bool):
    e = e.copy()
    h = e[0, :2]
    e[0, :2] = x
    if c:
        h = e[1, :2]
    return h + 0.0


def view_bound_again_only_in_a_loop(e: Tensor, x: Tensor, n: int):
    e = e.copy()
    h = e[0, :2]
    e[0, :2] = x
    for t in range(n):
        h = e[1, :2]
    return h + 0.0


def test_a_name_bound_again_before_its_later_read_allows_the_write():
    r = np.random.default_rng(1)
    e, x = r.standard_normal((2, 3, 4)), r.standard_normal((2, 4))
    (got, ge), (want, we) = script(view_bound_again_in_a_later_loop)(e, x), \
        view_bound_again_in_a_later_loop(e, x)
    for g, w in zip(got + [ge], want + [we]):
        np.testing.assert_allclose(g, w, rtol=1e-12)


@pytest.mark.parametrize("fn, extra", [(view_bound_again_only_in_a_branch, (True,)),
                                       (view_bound_again_only_in_a_loop, (2,))])
def test_a_name_bound_again_on_only_some_paths_is_refused(fn, extra):
    r = np.random.default_rng(2)
    with pytest.raises(ScriptError, match="would also change 'h'"):
        script(fn)(r.standard_normal((2, 3, 4)), r.standard_normal((2, 4)), *extra)
