"""Gradients through the fields of a script-class object the differentiated function builds
(``cell = Cell(W, U, b)`` then ``cell.step(x)``): the arrays stored in its fields reach
the result, and their gradients equal finite differences. A field stored again reads the value
stored last when every path agrees on it; one stored on some paths or in a loop, or an object
returned, is refused with a ``ScriptError`` at the user's line, never a zero gradient."""

from __future__ import annotations

from typing import Optional

import numpy as np
import pytest

from script import ScriptError, Tensor, script, vjp
from tests.gradcheck import check_vjp


@script
class Cell:
    def __init__(self, W: Tensor, U: Tensor, b: Optional[Tensor] = None):
        self.W = W
        self.U = U
        self.b = b
        self.steps = 0

    def step(self, x: Tensor, h: Optional[Tensor] = None) -> Tensor:
        if h is None:
            h = np.zeros((x.shape[0], self.U.shape[0]))
        z = x @ self.W + h @ self.U
        if self.b is not None:
            z = z + self.b
        self.steps += 1
        return np.tanh(z)

    def scale(self, s: float) -> None:
        self.W = self.W * s


def one_step(x: Tensor, W: Tensor, b: Tensor):
    cell = Cell(W, W, b)
    return cell.step(x)


def unrolled(xs: Tensor, W: Tensor, U: Tensor, b: Tensor):
    cell = Cell(W, U, b)
    h = cell.step(xs[0])
    for t in range(1, xs.shape[0]):
        h = cell.step(xs[t], h)
    return h


def counted(xs: Tensor, W: Tensor, U: Tensor, n: int):
    cell = Cell(W, U)
    h = cell.step(xs[0])
    for t in range(n):
        h = cell.step(xs[t % 3], h)
    return h.sum() * float(cell.steps)


def scaled(x: Tensor, W: Tensor, U: Tensor):
    cell = Cell(W, U)
    cell.scale(2.0)
    return cell.step(x)


def replaced(x: Tensor, W: Tensor, U: Tensor):
    cell = Cell(W, U)
    if x.sum() > 0.0:
        cell.W = U
    return cell.step(x)


def scaled_in_loop(x: Tensor, W: Tensor, U: Tensor):
    cell = Cell(W, U)
    for _ in range(x.shape[0]):
        cell.scale(0.5)
    return cell.step(x)


def returned(x: Tensor, W: Tensor, U: Tensor):
    cell = Cell(W, U)
    return cell.step(x), cell


def rng():
    return np.random.default_rng(0)


def test_gradients_reach_the_arrays_stored_in_fields():
    r = rng()
    x, W, b = r.standard_normal((2, 3)), r.standard_normal((3, 3)), r.standard_normal(3)
    check_vjp(one_step, (x, W, b))
    xs, W, U = r.standard_normal((3, 2, 4)), r.standard_normal((4, 5)), r.standard_normal((5, 5))
    check_vjp(unrolled, (xs, W, U, r.standard_normal(5)))
    check_vjp(counted, (xs, W, U, 4))
    check_vjp(scaled, (xs[0], W, U))


def test_the_forward_reads_the_stored_arrays_directly():
    r = rng()
    args = (r.standard_normal((2, 3)), r.standard_normal((3, 3)), r.standard_normal(3))
    graph = str(script(one_step).graph_for(*args))
    assert "prim::LoadAttr" not in graph and "prim::CreateObject" not in graph
    np.testing.assert_allclose(script(one_step)(*args), one_step(*args), rtol=1e-12)


@pytest.mark.parametrize("fn,match", [
    (scaled_in_loop, "cannot differentiate the field 'W' of an object that is assigned more "
     "than once"),
    (replaced, "a value stored in an object's field"),
    (returned, "a value stored in an object's field"),
])
def test_fields_assigned_again_or_objects_returned_are_refused(fn, match):
    r = rng()
    x, W, U = r.standard_normal((2, 3)), r.standard_normal((3, 3)), r.standard_normal((3, 3))
    args = (x, W, U)
    out = script(fn)(*args)
    want = fn(*args)
    np.testing.assert_allclose(out[0] if isinstance(out, tuple) else out,
                               want[0] if isinstance(want, tuple) else want, rtol=1e-12)
    with pytest.raises(ScriptError, match=match) as info:
        vjp(script(fn), *args)
    assert "test_object_fields.py" in str(info.value)
