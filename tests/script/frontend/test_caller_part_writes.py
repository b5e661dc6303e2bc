"""A write into a part of an array the caller holds (an object argument's attribute, an item of
a list or dict argument): numpy changes the caller's array, and so does the compiled code (the
array with the part written, written back whole); what it cannot keep in numpy's order is
refused at its line."""

from typing import Dict, List

import numpy as np
import pytest

from script import ScriptError, Tensor, script, vjp


class Cache:
    def __init__(self, n: int = 4):
        self.k = np.zeros((n, 2))
        self.v = np.zeros((n, 2))


def attend(c: Cache, x: Tensor, pos: int):
    c.k[pos:pos + 1] = x
    c.v[pos] += 2.0 * x
    return c.k[:pos + 1] @ x, c.v[:pos + 1].sum(0)


def first_row(d: Dict[str, Tensor], x: Tensor):
    d["h"][0] = x
    return d["h"] * 2.0


def second_of_first(hs: List[Tensor], x: Tensor):
    hs[0][1] = x
    return hs[0].sum()


class Layer:
    def __init__(self):
        self.hs = np.zeros((3, 2))

    def step(self, x: Tensor, t: int):
        self.hs[t] = np.tanh(x)
        return self.hs[t]


def through_a_method(layer: Layer, x: Tensor, t: int):
    return layer.step(x, t)


CASES = [(attend, lambda: (Cache(), np.array([1.0, -2.0]), 1)),
         (first_row, lambda: ({"h": np.ones((3, 2))}, np.array([3.0, 4.0]))),
         (second_of_first, lambda: ([np.ones((4, 2))], np.array([3.0, 4.0]))),
         (through_a_method, lambda: (Layer(), np.array([0.5, -1.0]), 2))]


def _arrays(tree):
    if isinstance(tree, np.ndarray):
        return [tree]
    if isinstance(tree, (tuple, list)):
        return [a for item in tree for a in _arrays(item)]
    if isinstance(tree, dict):
        return [a for item in tree.values() for a in _arrays(item)]
    if hasattr(tree, "__dict__"):
        return _arrays(vars(tree))
    return []


@pytest.mark.parametrize("fn,make", CASES, ids=[c[0].__name__ for c in CASES])
def test_the_callers_array_holds_numpys_values(fn, make):
    plain_args, args = make(), make()
    held = _arrays(args[0])
    want = fn(*plain_args)
    got = script(fn)(*args)
    for g, w in zip(_arrays(got), _arrays(want)):
        np.testing.assert_allclose(g, w, rtol=1e-12)
    assert all(a is b for a, b in zip(_arrays(args[0]), held))  # the same arrays, written
    for g, w in zip(_arrays(args[0]), _arrays(plain_args[0])):
        np.testing.assert_array_equal(g, w)
    again = script(fn)(*args)  # a second call writes again into what the first wrote
    want = fn(*plain_args)
    for g, w in zip(_arrays(again), _arrays(want)):
        np.testing.assert_allclose(g, w, rtol=1e-12)


def in_a_loop(c: Cache, xs: Tensor):
    for t in range(xs.shape[0]):
        c.k[t] = xs[t]
    return c.k.sum()


def read_before(c: Cache, x: Tensor, pos: int):
    old = c.k * 1.0
    c.k[pos] = x
    return old


def differentiated(c: Cache, x: Tensor, pos: int):
    c.k[pos] = x
    return (c.k[:pos + 1] @ x).sum()


def test_what_cannot_keep_numpys_order_is_refused():
    with pytest.raises(ScriptError, match="writing into 'c.k' in place"):
        script(in_a_loop)(Cache(), np.ones((3, 2)))
    with pytest.raises(ScriptError, match="writing into 'c.k' in place"):
        script(read_before)(Cache(), np.ones(2), 1)
    with pytest.raises(ScriptError, match="cannot differentiate"):
        vjp(script(differentiated), Cache(), np.ones(2), 1)
