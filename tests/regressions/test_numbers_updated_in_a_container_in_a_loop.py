"""A loop updating a number held in a dict or list argument (``d["n"] += 1``: numpy-ml's
``self.derived_variables["n_timesteps"] += 1`` in ``RNNCell.forward``) kept one step's update:
the reads of the item were marked as reads of an argument the function never changes (its
declared type, typed by the call, equalled the call's type), so LICM computed the read once
before the loop. ``{"n": 0}`` ended at ``{"n": 1}`` after six steps, and ``d["n"]`` read back 1.
"""

from __future__ import annotations

import copy

import numpy as np
import pytest

from script import script


def counted(d, X):
    for t in range(X.shape[0]):
        d["n"] += 1
    return d["n"]


def counted_at_run_time(d, X, steps: int):
    before = d["n"]
    for t in range(steps):
        d["n"] = d["n"] + 1.5 * t
    return before, d["n"] * X[0]


def halves(items, X):
    for t in range(X.shape[0]):
        items[0] += 0.5
        items[1] = items[1] * 2
    return items[0] + items[1]


class Cell:
    def __init__(self):
        self.W = np.eye(3) * 0.5
        self.counters = {"n_timesteps": 0}

    def forward(self, x):
        self.counters["n_timesteps"] += 1
        return np.tanh(x @ self.W)


def run(cell: Cell, X):
    ys = []
    for t in range(X.shape[0]):
        ys.append(cell.forward(X[t]))
    return ys


X = np.ones((6, 2, 3))


@pytest.mark.parametrize("fn, args", [(counted, ({"n": 0}, X)),
                                      (counted, ({"n": 0.5}, X)),
                                      (counted_at_run_time, ({"n": 1.0}, X, 4)),
                                      (halves, ([0.0, 1.0], X))],
                         ids=["int", "float", "run-time-count", "list"])
def test_each_step_updates_the_item(fn, args):
    plain_args, compiled_args = copy.deepcopy(args), copy.deepcopy(args)
    want = fn(*plain_args)
    got = script(fn)(*compiled_args)
    for g, w in zip(got, want) if isinstance(want, tuple) else ((got, want),):
        np.testing.assert_array_equal(g, w)
    assert compiled_args[0] == plain_args[0]


def test_a_counter_in_a_dict_an_object_holds():
    a, b = Cell(), Cell()
    want, got = run(a, X), script(run)(b, X)
    assert b.counters == a.counters == {"n_timesteps": 6}
    for w, g in zip(want, got):
        np.testing.assert_allclose(g, w)


def read_one_change_other(d, e, k: int):
    t = 0
    for i in range(k):
        e["n"] += 1
        t += d["n"]  # d is e: the change shows here
    return t


def test_one_dict_passed_for_a_read_and_a_changed_parameter():
    """The reads of a dict the function only reads were moved out of the loop while the same
    dict, passed for another parameter, changed in it (0 instead of 10)."""
    f = script(read_one_change_other)
    a, b = {"n": 0}, {"n": 0}
    assert f(b, b, 4) == read_one_change_other(a, a, 4) == 10
    c, d, e = {"n": 0}, {"n": 0}, {"n": 0}
    assert f(d, e, 4) == read_one_change_other(c, {"n": 0}, 4) == 0
    assert f(b, b, 4) == 26 and b == {"n": 8}
