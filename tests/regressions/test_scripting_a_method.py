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


def test_a_method_of_a_class_inside_a_function_compiles_for_the_object_passed():
    class Local:
        def __init__(self):
            self.W = np.ones((2, 2))

        def forward(self, x):
            return x @ self.W

    obj = Local()  # (self is unannotated there: the object the call passes makes it one)
    np.testing.assert_array_equal(script(Local.forward)(obj, np.ones((2, 2))),
                                  obj.forward(np.ones((2, 2))))
    with pytest.raises(ScriptError, match="annotate it with the object's class"):
        script(Local.forward)(np.ones((2, 2)), np.ones((2, 2)))  # an array for self


class Scorer:
    """A scalar loss as a method: ``loss(h, x)`` over the object's weights."""

    def __init__(self, seed=0):
        rng = np.random.default_rng(seed)
        self.W = rng.standard_normal((4, 5))
        self.U = rng.standard_normal((5, 5))

    def loss(self, h: Tensor, x: Tensor, scale: float = 1.0):
        return np.sum(np.tanh(x @ self.W + h @ self.U) ** 2) * scale


def _fd(fn, arrays, k, eps=1e-6):
    """Central finite differences of scalar ``fn(*arrays)`` in ``arrays[k]``."""
    g = np.zeros_like(arrays[k])
    for i in np.ndindex(g.shape):
        plus = [a.copy() for a in arrays]
        minus = [a.copy() for a in arrays]
        plus[k][i] += eps
        minus[k][i] -= eps
        g[i] = (fn(*plus) - fn(*minus)) / (2 * eps)
    return g


def test_gradients_of_a_bound_method_are_its_arguments():
    from script import grad, value_and_grad, vjp
    obj = Scorer()
    rng = np.random.default_rng(2)
    h, x = rng.standard_normal((3, 5)), rng.standard_normal((3, 4))
    fm = script(obj.loss)
    want_h, want_x = _fd(obj.loss, [h, x], 0), _fd(obj.loss, [h, x], 1)
    value, backward = vjp(fm, h, x)
    np.testing.assert_allclose(value, obj.loss(h, x), rtol=1e-12)
    gh, gx, g_scale = backward(np.ones(()))  # one per argument, the defaulted one too
    assert g_scale is None  # a Python float
    np.testing.assert_allclose(gh, want_h, rtol=1e-6, atol=1e-7)
    np.testing.assert_allclose(gx, want_x, rtol=1e-6, atol=1e-7)
    _, backward = vjp(fm, h, x, argnums=1)
    gh, gx, _ = backward(np.ones(()))
    assert gh is None
    np.testing.assert_allclose(gx, want_x, rtol=1e-6, atol=1e-7)
    np.testing.assert_allclose(grad(fm)(h, x), want_h, rtol=1e-6, atol=1e-7)
    np.testing.assert_allclose(grad(fm, argnums=1)(h, x, scale=2.0), 2 * want_x, rtol=1e-6,
                               atol=1e-7)
    value, (gh, gx) = value_and_grad(fm, argnums=(0, 1))(h, x)
    np.testing.assert_allclose(value, obj.loss(h, x), rtol=1e-12)
    np.testing.assert_allclose(gh, want_h, rtol=1e-6, atol=1e-7)
    obj.W = obj.W * 2  # the object's arrays as they are at the call
    np.testing.assert_allclose(grad(fm, argnums=1)(h, x), _fd(obj.loss, [h, x], 1), rtol=1e-6,
                               atol=1e-7)


def test_the_class_function_differentiates_the_objects_arrays_too():
    from script import vjp
    obj = Scorer()
    rng = np.random.default_rng(4)
    h, x = rng.standard_normal((3, 5)), rng.standard_normal((3, 4))
    _, backward = vjp(script(Scorer.loss), obj, h, x)
    g_obj, gh = backward(np.ones(()))[:2]

    def by_w(W):
        other = Scorer()
        other.W, other.U = W, obj.U
        return other.loss(h, x)
    np.testing.assert_allclose(g_obj.W, _fd(by_w, [obj.W], 0), rtol=1e-6, atol=1e-7)
    np.testing.assert_allclose(gh, _fd(obj.loss, [h, x], 0), rtol=1e-6, atol=1e-7)
