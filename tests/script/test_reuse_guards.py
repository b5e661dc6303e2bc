"""What decides whether a compiled function's code is reused, each case once found wrong: the
call's object, global and class attribute, read again at each call, must select the code numpy's
semantics call for; and numpy's own rules where the compiled code differed (a signed zero, a
float64 scalar's promotion, an unsigned sum's dtype, an update of a container's array)."""

import threading
from typing import Dict

import numpy as np
import pytest

import script
from script import Module, ScriptError, Tensor, grad
from tests.helpers import assert_same


def first_four(x: Tensor):
    return x.reshape(-1)[:4] * 2 + x.shape[0]


class Sub(np.ndarray):
    pass


def test_an_ndarray_subclass_is_keyed_by_its_shape():
    f = script.script(first_four)
    for x in (np.arange(6.).reshape(2, 3).view(Sub), np.arange(12.).reshape(6, 2).view(Sub)):
        assert_same(np.asarray(f(x)), np.asarray(first_four(x)))


T = (2, 3)
Z = 0.0
S = np.float64(2.5)


def uses_tuple(x: Tensor):
    return x * T[0] + T[1]


def uses_zero(x: Tensor):
    return 1.0 / ((np.abs(x) + 1.0) * Z)


def uses_scalar(x: Tensor):
    return x * S


def test_global_guards_see_types_and_signed_zeros():
    global T, Z
    x = np.arange(3)
    f = script.script(uses_tuple)
    assert_same(f(x), uses_tuple(x))
    T = (2.0, 3)
    try:
        assert_same(f(x), uses_tuple(x))  # float64 now
    finally:
        T = (2, 3)
    g = script.script(uses_zero)
    with np.errstate(divide="ignore"):
        assert_same(g(np.ones(2)), uses_zero(np.ones(2)))
        Z = -0.0
        try:
            assert_same(g(np.ones(2)), uses_zero(np.ones(2)))  # -inf now
        finally:
            Z = 0.0


def test_a_float64_scalar_promotes_as_numpy_does():
    x = np.ones(3, np.float32)
    assert_same(script.script(uses_scalar)(x), uses_scalar(x))  # float64


class Scaled(Module):
    scale = 2.0

    def forward(self, x: Tensor):
        return x * self.scale


def test_a_module_class_attribute_is_read_at_every_call():
    m = Scaled()
    sm = script.script(m)
    x = np.arange(3.)
    assert_same(sm(x), m(x))
    Scaled.scale = 10.0
    try:
        assert_same(sm(x), m(x))
    finally:
        Scaled.scale = 2.0


class Act:
    def act(self, v):
        return np.tanh(v)


def doubled(v):
    return v * 2


def calls_act(p: Act, x: Tensor):
    return p.act(x)


def test_a_method_shadowed_or_replaced_runs_what_python_calls():
    f, x = script.script(calls_act), np.array([0.5, 1.0])
    assert_same(f(Act(), x), calls_act(Act(), x))
    shadowed = Act()
    shadowed.act = doubled
    assert_same(f(shadowed, x), calls_act(shadowed, x))
    original = Act.act
    Act.act = lambda self, v: v - 7
    try:
        assert_same(f(Act(), x), calls_act(Act(), x))
    finally:
        Act.act = original
    assert_same(f(Act(), x), calls_act(Act(), x))


class Holder:
    pass


def relu(v):
    return np.maximum(v, 0)


def calls_attribute(p: Holder, x: Tensor):
    return p.act(x)


@script.script
def scripted_act(v: Tensor) -> Tensor:
    return v + 10


def test_two_threads_with_objects_of_two_layouts():
    f, x = script.script(calls_attribute), np.array([-1.0, 0.5])
    a, b, c = Holder(), Holder(), Holder()
    a.act, b.act, c.act = np.tanh, relu, scripted_act
    wrong = []

    def worker(p):
        for _ in range(300):
            if not np.allclose(f(p, x), calls_attribute(p, x)):
                wrong.append(p.act)

    threads = [threading.Thread(target=worker, args=(p,)) for p in (a, b, c)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not wrong


def adds_zero(x: Tensor):
    return 1.0 / (x * 0 + 0.0)


def sums_unsigned(x: Tensor):
    return x.sum(axis=0), x.sum()


def test_numpys_own_rules():
    with np.errstate(divide="ignore"):
        x = np.array([1.0, -1.0])
        assert_same(script.script(adds_zero)(x), adds_zero(x))  # inf, inf: -0.0 + 0.0 is 0.0
    u = np.arange(12, dtype=np.uint8).reshape(3, 4)
    assert_same(script.script(sums_unsigned)(u), sums_unsigned(u))  # uint64


def updates_item(d: Dict[str, Tensor], x: Tensor):
    d["a"] += x
    return d["a"] * 1


def updates_local_items(x: Tensor):
    grads = {k: np.zeros_like(x) for k in ("a", "b")}
    grads["a"] += x
    grads["b"] += 2 * x
    return grads["a"] + grads["b"]


def updates_aliased_item(x: Tensor):
    h = np.zeros_like(x)
    d = {"a": h}
    d["a"] += x
    return h


G = np.ones(3)


def writes_global(x: Tensor):
    G[0] = x[0]
    return G * 2


def test_updates_of_arrays_numpy_changes_in_place():
    x = np.arange(3.)
    d = {"a": np.ones(3)}
    held = d["a"]  # updated in place and read back, as numpy does
    assert_same(script.script(updates_item)(d, x), updates_item({"a": np.ones(3)}, x))
    assert d["a"] is held
    assert_same(held, np.ones(3) + x)
    assert_same(script.script(updates_local_items)(x), updates_local_items(x))
    with pytest.raises(ScriptError, match="would also change 'h'"):
        script.script(updates_aliased_item)(x)
    with pytest.raises(ScriptError, match="in-place write to 'G'"):
        script.script(writes_global)(x)


def with_default(x: Tensor, s: float = 2.0):
    return (np.tanh(x * s) ** 2).sum()


def test_grad_fills_in_defaults():
    x = np.ones(3)
    assert_same(grad(with_default)(x), script.value_and_grad(with_default)(x)[1])


def doubles(x: Tensor):
    return x * 2.0


def test_the_profiler_runs_the_current_specialization():
    """Instrumented code is cached per specialization; an entry left by a specialization that
    is gone, whose id a new one took, must not run for it."""
    from script.tools.profiler import instrumented
    f, x = script.script(doubles), np.ones(2)
    spec = f.specialization(x)
    with script.profile() as prof:
        stale = lambda *args: "stale code"  # noqa: E731
        f.__dict__["_profiled_code"] = {id(spec): (prof, object(), stale)}
        assert instrumented(f, spec, prof) is not stale
        assert_same(f(x), doubles(x))
