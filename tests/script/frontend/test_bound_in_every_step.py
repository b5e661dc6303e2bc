"""A name a ``for`` loop's body binds in every step and the code reads after the loop holds the
last step's value there, as in Python, and is unbound (``UnboundLocalError``) after a loop that
ran no iterations (the Coursera ``lstm_backward`` reads ``gradients["da_prev"]`` after its
reversed loop). It was refused: "'g' is only assigned inside the loop"."""

from __future__ import annotations

import numpy as np
import pytest

from script import ScriptError, script
from tests.gradcheck import check_vjp


def last_result(X):
    for t in reversed(range(X.shape[0])):
        g = {"d": np.tanh(X[t])}
    return g["d"]


def last_output(X, h):
    for t in range(X.shape[0]):
        y = np.tanh(X[t] + h)
        h = y * 0.5
    return y, h


def last_pair(X):
    for t in range(X.shape[0]):
        a, b = X[t] * 2, X[t] + 1
    return a * b


def bound_on_one_path(X):
    for t in range(X.shape[0]):
        if t > 0:
            g = X[t] * 2
    return g


def read_before_bound(X):
    for t in range(X.shape[0]):
        if t > 0:
            X = X + g  # noqa: F821 (bound in the step before, as Python runs it)
        g = X[t]
    return g


def with_break(X):
    for t in range(X.shape[0]):
        g = X[t]
        if g.sum() > 100:
            break
    return g


@pytest.mark.parametrize("fn, args", [(last_result, (4,)), (last_output, (4, "h")),
                                      (last_pair, (4,)), (last_output, (300, "h"))],
                         ids=["dict", "array", "pair", "native-loop"])
def test_the_last_steps_value(fn, args):
    rng = np.random.default_rng(0)
    X = rng.standard_normal((args[0], 8))
    call = (X, X[0]) if len(args) == 2 else (X,)
    got, want = script(fn)(*call), fn(*call)
    for g, w in zip(got, want) if isinstance(want, tuple) else ((got, want),):
        np.testing.assert_allclose(g, w, rtol=1e-12)


def test_unbound_after_a_loop_that_ran_no_iterations():
    X = np.ones((0, 3))
    with pytest.raises(UnboundLocalError):
        last_result(X)
    with pytest.raises(UnboundLocalError):
        script(last_result)(X)
    with pytest.raises(UnboundLocalError):
        script(last_output)(X, np.ones(3))


def test_gradients_through_the_last_steps_value():
    rng = np.random.default_rng(1)
    for T in (3, 40):
        check_vjp(script(last_output), (rng.standard_normal((T, 5)), rng.standard_normal(5)))


@pytest.mark.parametrize("fn, message", [(bound_on_one_path, "only assigned inside the loop"),
                                         (with_break, "only assigned inside the loop"),
                                         (read_before_bound, "undefined name 'g'")])
def test_other_bindings_in_a_loop_stay_refused(fn, message):
    with pytest.raises(ScriptError, match=message):
        script(fn)(np.ones((3, 2)))


def view_kept(X):
    x = X.copy()
    for t in range(x.shape[0]):
        r = x[t]
    x[:] = 0.0  # numpy: r shows the write
    return r


def updated_after(x):
    h = np.zeros(4)
    for t in range(x.shape[0]):
        h = np.tanh(h + x[t])
        c = h * h
    return c + h  # (an update in place of the loop's last c)


def test_a_view_kept_past_the_loop_is_refused_before_a_write():
    with pytest.raises(ScriptError, match="would also change 'r'"):
        script(view_kept)(np.arange(12.0).reshape(4, 3))


def test_an_update_in_place_of_the_last_steps_value():
    x = np.random.default_rng(1).standard_normal((40, 4))
    np.testing.assert_allclose(script(updated_after)(x), updated_after(x), rtol=1e-13)
