"""Gradients through a list of script-class objects read item by item
(``self.cells = [Cell(W1), Cell(W2)]`` then ``for c in self.cells: h = c.step(h)``): the fields
read become lists of the arrays stored, and gradients equal finite differences. A list that is
changed, or whose items' fields are assigned through it, is refused with a ``ScriptError`` at
the user's line."""

from __future__ import annotations

import numpy as np
import pytest

from script import ScriptError, Tensor, script, vjp
from tests.gradcheck import check_vjp
from tests.passes.autodiff.test_nested_objects import Cell, Stack


@script
class Layers:
    def __init__(self, W1: Tensor, W2: Tensor):
        self.cells = [Cell(W1), Cell(W2)]

    def step(self, h: Tensor) -> Tensor:
        for c in self.cells:
            h = c.step(h)
        return h


def layers(W1: Tensor, W2: Tensor, h: Tensor):
    return Layers(W1, W2).step(h)


def indexed(W1: Tensor, W2: Tensor, h: Tensor):
    c = Cell(W1)
    cells = [c, c, Cell(W2)]
    for k in range(len(cells)):
        h = cells[k].step(h)
    return h, len(cells)


def stored_after(W1: Tensor, W2: Tensor, h: Tensor):
    first = Cell(W1)
    cells = [first, Cell(W2)]
    first.W = W2 * 3.0  # the list holds the object: the loop reads the new field
    for c in cells:
        h = c.step(h)
    return h


def stacks_in_a_loop(W1: Tensor, W2: Tensor, h: Tensor, T: int):
    stacks = [Stack(Cell(W1), Cell(W2)), Stack(Cell(W2), Cell(W1 * 0.5))]
    for _ in range(T):
        for s in stacks:
            h = s(h) + h
    return h


def mixed_shapes(W1: Tensor, W2: Tensor, h: Tensor):
    layers = Layers(W1, W2[:, :2])
    return layers.step(h)


def assigned_through(W1: Tensor, W2: Tensor, h: Tensor):
    cells = [Cell(W1), Cell(W2)]
    for c in cells:
        c.W = c.W * 2.0
        h = c.step(h)
    return h


def appended(W1: Tensor, W2: Tensor, h: Tensor):
    cells = [Cell(W1)]
    cells.append(Cell(W2))
    for c in cells:
        h = c.step(h)
    return h


def args():
    r = np.random.default_rng(0)
    return (r.standard_normal((3, 3)) * 0.5, r.standard_normal((3, 3)) * 0.5,
            r.standard_normal((2, 3)))


CASES = [(layers, ()), (indexed, ()), (stored_after, ()), (stacks_in_a_loop, (3,)),
         (mixed_shapes, ())]


@pytest.mark.parametrize("fn,extra", CASES, ids=[fn.__name__ for fn, _ in CASES])
@pytest.mark.parametrize("dtype", ["float64", "float32"])
def test_gradients_reach_the_arrays_of_listed_objects(fn, extra, dtype):
    inputs = args() + extra
    out, want = script(fn)(*inputs), fn(*inputs)
    for got, expected in zip(out if isinstance(out, tuple) else (out,),
                             want if isinstance(want, tuple) else (want,)):
        np.testing.assert_allclose(got, expected, rtol=1e-12)
    if dtype == "float64":
        check_vjp(fn, inputs)
        return
    narrow = tuple(x.astype(np.float32) if isinstance(x, np.ndarray) else x for x in inputs)
    grads32 = vjp(script(fn), *narrow)[1](_ones(fn(*narrow)))
    grads64 = vjp(script(fn), *inputs)[1](_ones(want))  # checked against finite differences
    for g32, g64 in zip(grads32[:2], grads64[:2]):
        assert g32.dtype == np.float32
        np.testing.assert_allclose(g32, g64, rtol=1e-4, atol=1e-5)


def _ones(out):
    if isinstance(out, tuple):
        return tuple(_ones(o) for o in out)
    return np.ones_like(out) if isinstance(out, np.ndarray) else type(out)(0)


def test_the_list_of_objects_goes():
    graph = str(script(layers).graph_for(*args()))
    assert "prim::LoadAttr" not in graph and "prim::CreateObject" not in graph


@pytest.mark.parametrize("fn", [assigned_through, appended])
def test_lists_changed_or_assigned_through_are_refused(fn):
    inputs = args()
    np.testing.assert_allclose(script(fn)(*inputs), fn(*inputs), rtol=1e-12)
    with pytest.raises(ScriptError, match="cannot differentiate the field 'W' of an object read "
                       "from a list that is changed") as info:
        vjp(script(fn), *inputs)
    assert "test_nested_objects.py" in str(info.value) and "h @ self.W" in str(info.value)
