"""Gradients through script-class objects whose fields hold other script-class objects
(``Stack(Cell(W), Cell(U))`` then ``stack.step(h)``): the inner objects' fields keep the types
of the arrays stored in them, so gradients reach those arrays and equal finite differences, in
float64 and float32, two and three levels deep, in a loop, and through ``__call__``. An inner
object replaced on only some paths is refused with a ``ScriptError`` at the user's line, never a
zero gradient."""

from __future__ import annotations

import numpy as np
import pytest

from script import ScriptError, Tensor, script, vjp
from tests.gradcheck import check_vjp, numerical_grad, random_like


@script
class Cell:
    def __init__(self, W: Tensor):
        self.W = W

    def step(self, h: Tensor) -> Tensor:
        return np.tanh(h @ self.W)

    def __call__(self, h: Tensor) -> Tensor:
        return self.step(h)


@script
class Stack:
    def __init__(self, a: Cell, b: Cell):
        self.a = a
        self.b = b

    def step(self, h: Tensor) -> Tensor:
        return self.b.step(self.a.step(h))

    def __call__(self, h: Tensor) -> Tensor:
        return self.b(self.a(h))


@script
class Deep:
    def __init__(self, stack: Stack, W: Tensor):
        self.stack = stack
        self.out = Cell(W)

    def step(self, h: Tensor) -> Tensor:
        return self.out.step(self.stack.step(h)) + self.stack.a.W.sum()


@script
class Shared:
    """A field holding an object built from another object's field."""

    def __init__(self, stack: Stack):
        self.stack = stack
        self.tied = Cell(stack.a.W * 0.5 + stack.b.W)

    def step(self, h: Tensor) -> Tensor:
        return self.tied.step(self.stack.step(h))


def two_levels(W: Tensor, h: Tensor):
    s = Stack(Cell(W), Cell(W * 2))
    return np.sum(s.step(h))


def three_levels(W: Tensor, U: Tensor, h: Tensor):
    d = Deep(Stack(Cell(W), Cell(U)), U.T)
    return d.step(h)


def from_a_field(W: Tensor, U: Tensor, h: Tensor):
    s = Stack(Cell(W), Cell(U))
    t = Stack(s.b, Cell(s.a.W - U))
    return Shared(t).step(h)


def looped(W: Tensor, U: Tensor, h: Tensor, T: int):
    s = Stack(Cell(W), Cell(U))
    for _ in range(T):
        h = s.step(h) + h
    return h


def called(W: Tensor, U: Tensor, h: Tensor):
    s = Stack(Cell(W), Cell(U))
    for _ in range(2):
        h = s(h)
    return h


def replaced_on_a_path(W: Tensor, U: Tensor, h: Tensor):
    s = Stack(Cell(W), Cell(U))
    if h.sum() > 0.0:
        s.a = Cell(U)
    return s.step(h)


def inner_field_replaced_on_a_path(W: Tensor, U: Tensor, h: Tensor):
    s = Stack(Cell(W), Cell(U))
    if h.sum() > 0.0:
        s.a.W = U
    return s.step(h)


def inner_replaced_in_a_loop(W: Tensor, U: Tensor, h: Tensor):
    s = Stack(Cell(W), Cell(U))
    for _ in range(2):
        h = s.step(h)
        s.a = Cell(s.a.W * 0.5)
    return h


def args(dtype=np.float64):
    r = np.random.default_rng(0)
    W, U = r.standard_normal((3, 3)) * 0.5, r.standard_normal((3, 3)) * 0.5
    return W.astype(dtype), U.astype(dtype), r.standard_normal((2, 3)).astype(dtype)


CASES = [
    (two_levels, lambda W, U, h: (W, h)),
    (three_levels, lambda W, U, h: (W, U, h)),
    (from_a_field, lambda W, U, h: (W, U, h)),
    (looped, lambda W, U, h: (W, U, h, 3)),
    (called, lambda W, U, h: (W, U, h)),
]


@pytest.mark.parametrize("fn,pick", CASES, ids=[fn.__name__ for fn, _ in CASES])
def test_gradients_reach_the_arrays_in_nested_objects(fn, pick):
    inputs = pick(*args())
    np.testing.assert_allclose(script(fn)(*inputs), fn(*inputs), rtol=1e-12)
    check_vjp(fn, inputs)


@pytest.mark.parametrize("fn,pick", CASES, ids=[fn.__name__ for fn, _ in CASES])
def test_float32_gradients_equal_float64_finite_differences(fn, pick):
    inputs = pick(*args(np.float32))
    sf = script(fn)
    out, backward = vjp(sf, *inputs)
    ct = random_like(out, np.random.default_rng(1))
    grads = backward(ct)
    wide = tuple(x.astype(np.float64) if isinstance(x, np.ndarray) else x for x in inputs)
    for k, x in enumerate(inputs):
        if not isinstance(x, np.ndarray):
            continue
        assert grads[k].dtype == np.float32
        want = numerical_grad(fn, wide, ct, (k,), 1e-6)
        np.testing.assert_allclose(grads[k], want, rtol=1e-4, atol=1e-5)


def test_the_forward_reads_the_inner_arrays_directly():
    graph = str(script(three_levels).graph_for(*args()))
    assert "prim::LoadAttr" not in graph and "prim::CreateObject" not in graph


OUTER_FIELD = "cannot differentiate the field 'a' of an object that is assigned more than once"
STORED = "cannot differentiate a value stored in an object's field"


@pytest.mark.parametrize("fn,match,line", [
    (replaced_on_a_path, OUTER_FIELD, "self.b.step(self.a.step(h))"),
    (inner_field_replaced_on_a_path, STORED, "s.a.W = U"),
    (inner_replaced_in_a_loop, OUTER_FIELD, "self.b.step(self.a.step(h))"),
])
def test_inner_objects_replaced_on_some_paths_are_refused(fn, match, line):
    inputs = args()
    np.testing.assert_allclose(script(fn)(*inputs), fn(*inputs), rtol=1e-12)
    with pytest.raises(ScriptError, match=match) as info:
        vjp(script(fn), *inputs)
    assert "test_nested_objects.py" in str(info.value) and line in str(info.value)
