"""A method of a plain class scripted as written: ``script(GRUCell.forward)`` takes the object
first (its ``self`` unannotated, an object of the class), ``script(cell.forward)`` is the bound
method compiled; both equal Python, read the object's attributes at every call, and a scripted
function that calls the method on an object argument is unchanged."""

from __future__ import annotations

import numpy as np
import pytest

from script import ScriptError, Tensor, script


def sigmoid(x):
    return 1 / (1 + np.exp(-x))


class GRUCell:
    """A GRU cell as numpy tutorials write one: weights as attributes, ``forward(h, x)``."""

    def __init__(self, i, h, o, seed=0):
        rng = np.random.default_rng(seed)
        self.Wz, self.Wr, self.Wh = (rng.normal(size=(i + h, h)) for _ in range(3))
        self.Wy = rng.normal(size=(h, o))
        self.bz, self.br, self.bh = (np.zeros((1, h)) for _ in range(3))
        self.by = np.zeros((1, o))

    def forward(self, h_prev, x_t):
        h_x = np.concatenate((h_prev, x_t), axis=1)
        z_t = sigmoid(np.matmul(h_x, self.Wz) + self.bz)
        r_t = sigmoid(np.matmul(h_x, self.Wr) + self.br)
        h_x = np.concatenate((r_t * h_prev, x_t), axis=1)
        h_hat = np.tanh(np.matmul(h_x, self.Wh) + self.bh)
        h_next = (1 - z_t) * h_prev + z_t * h_hat
        return h_next, np.matmul(h_next, self.Wy) + self.by


def run(cell: GRUCell, X: Tensor, h0: Tensor):
    h, ys = h0, []
    for t in range(X.shape[0]):
        h, y = cell.forward(h, X[t])
        ys.append(y)
    return h, np.array(ys)


def _inputs():
    rng = np.random.default_rng(1)
    return rng.standard_normal((5, 4, 3)), rng.standard_normal((4, 6))


def _same(got, want):
    for g, w in zip(got, want):
        np.testing.assert_allclose(g, w, rtol=1e-12, atol=1e-12)


def test_the_class_function_takes_the_object_first():
    cell, (X, h0) = GRUCell(3, 6, 2), _inputs()
    f = script(GRUCell.forward)
    _same(f(cell, h0, X[0]), cell.forward(h0, X[0]))
    other = GRUCell(3, 6, 2, seed=7)  # another object of the class: its own weights
    _same(f(other, h0, X[0]), other.forward(h0, X[0]))


def test_the_bound_method_is_the_method_compiled():
    cell, (X, h0) = GRUCell(3, 6, 2), _inputs()
    fm = script(cell.forward)
    _same(fm(h0, X[0]), cell.forward(h0, X[0]))
    _same(fm(h_prev=h0, x_t=X[1]), cell.forward(h0, X[1]))
    cell.Wz = cell.Wz * 0.5  # read at every call, as a weight an optimizer replaced
    _same(fm(h0, X[0]), cell.forward(h0, X[0]))
    assert "tensor::matmul" in str(fm.graph_for(h0, X[0]))
    assert "forward(" in fm.explain(h0, X[0])
    assert "GRUCell.forward" in repr(fm)


def test_a_function_calling_the_method_on_an_object_argument():
    cell, (X, h0) = GRUCell(3, 6, 2), _inputs()
    _same(script(run)(cell, X, h0), run(cell, X, h0))


def test_a_method_of_a_class_inside_a_function_still_asks_for_the_annotation():
    class Local:
        def __init__(self):
            self.W = np.ones((2, 2))

        def forward(self, x):
            return x @ self.W

    with pytest.raises(ScriptError, match="annotate it with the object's class"):
        script(Local.forward)(Local(), np.ones((2, 2)))
