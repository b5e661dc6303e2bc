"""An attribute holding an empty dict (numpy-ml's layers start ``self.gradients = {}`` and fill
it as they run) was refused with "'self.acc': expected Any, got a dict". It is a dict of
arrays by str keys, as such dicts usually are."""

from __future__ import annotations

import numpy as np
import pytest

from script import ScriptError, script


class Accumulator:
    def __init__(self):
        self.acc = {}

    def step(self, x):
        d = self.acc.get("dA")
        if d is None:
            d = np.zeros_like(x)
        self.acc["dA"] = d + x
        return x * 2.0


def run(c: Accumulator, X):
    for t in range(X.shape[0]):
        c.step(X[t])
    return c.acc["dA"]


class Counts:
    def __init__(self):
        self.seen = {}

    def step(self, x):
        self.seen["n"] = 1
        return x


def test_an_empty_dict_attribute_holds_arrays():
    X = np.arange(12.0).reshape(4, 3)
    plain, compiled = Accumulator(), Accumulator()
    np.testing.assert_array_equal(script(run)(compiled, X), run(plain, X))
    np.testing.assert_array_equal(compiled.acc["dA"], plain.acc["dA"])
    step = script(Accumulator.step)
    a, b = Accumulator(), Accumulator()
    for t in range(3):
        np.testing.assert_array_equal(step(a, X[t]), Accumulator.step(b, X[t]))
    np.testing.assert_array_equal(a.acc["dA"], b.acc["dA"])


def test_a_number_stored_into_an_empty_dict_attribute_is_refused_at_its_line():
    with pytest.raises(ScriptError, match="cannot store an? (int|number)"):
        script(Counts.step)(Counts(), np.ones(2))


class Started:
    def __init__(self):
        self.acc = {"dA": None}  # numpy-ml's accumulators start as None

    def step(self, x):
        d = self.acc["dA"]
        if d is None:
            d = np.zeros_like(x)
        self.acc["dA"] = d + x
        return x


def test_a_dict_attribute_of_nones_holds_optional_arrays():
    step = script(Started.step)
    a, b = Started(), Started()
    for t in range(3):
        x = np.full(2, float(t))
        np.testing.assert_array_equal(step(a, x), Started.step(b, x))
    np.testing.assert_array_equal(a.acc["dA"], b.acc["dA"])
