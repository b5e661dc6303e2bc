"""Global arrays are read at every call, as plain Python reads them.

A module-level array was compiled in as a constant and folded by value: ``np.zeros_like(B)`` of a
``B`` that was zero when the function compiled became ``B`` itself, ``acc + B`` became ``acc``,
and after an optimizer step (``B += 0.5``) or a rebinding the compiled function kept computing with
the old values. Now a global array is a graph input read at each call (its shape and dtype part of
the specialization), and a global scalar is a constant that recompiles the function when it
changes.
"""

import sys
from types import SimpleNamespace

import numpy as np
import pytest

from script import Module, Parameter, Tensor, script, vjp
from script.artifact.freeze import freeze, standalone

B = np.zeros(3)
W = np.eye(3)
SCALE = 2.0
STEPS = 2
CFG = SimpleNamespace(w=np.ones(3))
HERE = sys.modules[__name__]


def accumulate(x: Tensor) -> Tensor:
    acc = np.zeros_like(B)
    acc = acc + x
    return acc + B


def predict(x: Tensor) -> Tensor:
    return np.tanh(W @ x) * SCALE


def project(x: Tensor) -> Tensor:
    return predict(x) + 1.0  # a callee reading the globals


def repeat(x: Tensor) -> Tensor:
    for _ in range(STEPS):
        x = x * 2.0
    return x


def through_attribute(x: Tensor) -> Tensor:
    return x * CFG.w + CFG.w.sum()


def loss(x: Tensor) -> Tensor:
    return (np.tanh(W @ x) * B).sum()


def closure_over(w):
    def scaled(x: Tensor) -> Tensor:
        return x * w

    def rebind(value):
        nonlocal w
        w = value

    return scaled, rebind


@pytest.fixture(autouse=True)
def fresh_globals(monkeypatch):
    """Each test starts from the same globals, whatever the last one did to them."""
    for name, value in (("B", np.zeros(3)), ("W", np.eye(3)), ("SCALE", 2.0), ("STEPS", 2),
                        ("CFG", SimpleNamespace(w=np.ones(3)))):
        monkeypatch.setattr(HERE, name, value)


def check(f, *args):
    np.testing.assert_allclose(f(*args), f.python_fn(*args))


X = np.array([0.5, -1.0, 2.0])


def test_zeros_like_of_a_global_is_not_the_global():
    f = script(accumulate)
    check(f, X)
    b = HERE.B
    b += 0.5  # in place: the global is the same array
    check(f, X)


def test_in_place_updates_between_calls():
    f = script(predict)
    w = HERE.W
    for step in range(3):
        check(f, X)
        w -= 0.1 * np.outer(X, X)  # an optimizer step on the global
        check(f, X)
        w[0, :] = step
        check(f, X)
    assert f.compiled_signatures == 1


def test_rebinding_a_global_is_seen(monkeypatch):
    f = script(predict)
    check(f, X)
    monkeypatch.setattr(HERE, "W", np.full((3, 3), 0.25))
    check(f, X)


def test_a_new_shape_or_dtype_specializes_again(monkeypatch):
    f = script(predict)
    check(f, X)
    monkeypatch.setattr(HERE, "W", np.ones((2, 3)))
    check(f, X)
    monkeypatch.setattr(HERE, "W", np.eye(3, dtype=np.float32))
    x32 = X.astype(np.float32)
    assert f(x32).dtype == f.python_fn(x32).dtype == np.float32
    check(f, x32)
    assert f.compiled_signatures == 3


def test_callees_read_the_globals_of_their_module(monkeypatch):
    f = script(project)
    check(f, X)
    w = HERE.W
    w *= 3.0
    check(f, X)
    monkeypatch.setattr(HERE, "SCALE", -1.0)
    check(f, X)


def test_a_changed_global_scalar_recompiles(monkeypatch):
    f = script(repeat)
    check(f, X)
    monkeypatch.setattr(HERE, "STEPS", 3)
    check(f, X)
    monkeypatch.setattr(HERE, "STEPS", 2)
    check(f, X)


def test_an_attribute_of_a_global_object(monkeypatch):
    f = script(through_attribute)
    check(f, X)
    w = HERE.CFG.w
    w += 1.0
    check(f, X)
    HERE.CFG.w = np.arange(3.0)
    check(f, X)
    monkeypatch.setattr(HERE, "CFG", SimpleNamespace(w=np.full(3, -2.0)))
    check(f, X)


def test_closure_arrays_are_read_live():
    w = np.ones(3)
    scaled, rebind = closure_over(w)
    f = script(scaled)
    check(f, X)
    w += 1.0
    check(f, X)
    rebind(np.arange(3.0))
    check(f, X)


def test_gradient_reads_the_global_and_treats_it_as_constant():
    f = script(loss)
    w, b = HERE.W, HERE.B
    b[:] = 1.0
    for _ in range(2):
        out, backward = vjp(f, X)
        np.testing.assert_allclose(out, loss(X))
        grads = backward(np.ones_like(out))
        assert len(grads) == 1  # none for the globals: they are constants here
        np.testing.assert_allclose(grads[0], w.T @ ((1.0 - np.tanh(w @ X) ** 2) * b))
        w += 0.3
        b *= 2.0


def test_the_gradient_checker_binds_the_globals():
    """tests/gradcheck.check_vjp compiles the gradient pair itself: it must pass the global
    arrays after the arguments (it raised "takes 1 arguments but 1 were given")."""
    from tests.gradcheck import check_vjp
    HERE.B[:] = 0.5
    check_vjp(script(loss), (X,))


class Scaler(Module):
    def __init__(self):
        super().__init__()
        self.weight = Parameter(np.ones(3))

    def forward(self, x: Tensor) -> Tensor:
        return x * self.weight + B


def test_module_methods_read_globals_live_and_freeze_snapshots_them():
    module = Scaler()
    scripted = script(module)
    frozen = freeze(scripted)
    b = HERE.B
    b += 1.0
    np.testing.assert_allclose(scripted(X), module.forward(X))
    np.testing.assert_allclose(frozen(X), X)  # frozen when B was zero
    out, backward = vjp(scripted, X)
    np.testing.assert_allclose(out, X + 1.0)
    (gx,) = backward(np.ones(3))
    np.testing.assert_allclose(gx, np.ones(3))
    np.testing.assert_allclose(dict(module.named_parameters())["weight"].grad, X)


def test_a_standalone_function_keeps_the_global_as_a_named_array():
    f = script(accumulate)
    b = HERE.B
    b += 1.0
    alone = standalone(f)
    assert [name for name, _ in alone.named_buffers()] == ["B"]
    np.testing.assert_allclose(alone(X), accumulate(X))


def test_explain_and_the_profiler_pass_the_globals():
    from script.tools import profiler
    f = script(predict)
    assert "W: Double(3, 3)" in f.explain(X)
    with profiler.profile():
        check(f, X)


class Repeater(Module):
    def forward(self, x: Tensor) -> Tensor:
        return repeat(x) * SCALE  # a global scalar here and one in the callee


def test_module_methods_recompile_when_a_global_scalar_changes(monkeypatch):
    module = Repeater()
    scripted = script(module)
    np.testing.assert_allclose(scripted(X), module.forward(X))
    monkeypatch.setattr(HERE, "STEPS", 4)
    np.testing.assert_allclose(scripted(X), module.forward(X))
    monkeypatch.setattr(HERE, "SCALE", 0.5)
    np.testing.assert_allclose(scripted(X), module.forward(X))
