"""Writes into arrays the caller holds (``script.frontend.caller_writes``): ``self.grads[0][...]
= dWx`` changes the caller's array itself, as numpy does (reads around such writes:
``test_write_order``)."""

from typing import Dict, List, NamedTuple

import numpy as np
import pytest

from benchmarks.realworld_programs.dlfs2_optimizers import (
    SGD,
    AdaGrad,
    Adam,
    Momentum,
    Nesterov,
    RMSprop,
)
from script import ScriptError, SignatureError, Tensor, script, vjp


class Layer:
    def __init__(self):
        self.params = [np.ones((2, 3)), np.full(3, 0.5)]
        self.grads = [np.zeros((2, 3)), np.zeros(3)]
        self.named = {"W": np.zeros((2, 3), dtype=np.float32)}
        self.dW = np.zeros((2, 3))


def writes(self: Layer, x: Tensor) -> Tensor:
    self.grads[0][...] = x * 2
    self.grads[1][:] = x.sum(axis=0)
    return x @ self.params[1]


def updates(self: Layer, x: Tensor) -> Tensor:
    self.grads[0][...] += x
    self.named["W"][...] -= x  # (float64 into a float32 array: cast, as numpy's -=)
    self.dW[...] = 3.0
    return x


def in_a_loop(self: Layer, x: Tensor) -> Tensor:
    for i in range(2):
        self.grads[i][...] = x.sum() * (i + 1)
    return x


def into_a_list(grads: List[Tensor], x: Tensor) -> Tensor:
    grads[0][...] = x
    return x


def into_a_dict(grads: Dict[str, Tensor], x: Tensor) -> Tensor:
    grads["W"][...] += x * x
    return x


def _layer_args(x):
    return (Layer(), x)


@pytest.mark.parametrize("fn, make", [
    (writes, _layer_args), (updates, _layer_args), (in_a_loop, _layer_args),
    (into_a_list, lambda x: ([np.zeros((2, 3))], x)),
    (into_a_dict, lambda x: ({"W": np.ones((2, 3))}, x)),
])
def test_the_caller_sees_the_write(fn, make):
    x = np.arange(6.0).reshape(2, 3)
    plain, compiled = make(x), make(x)
    held = compiled[0].grads[0] if isinstance(compiled[0], Layer) else None
    compiled_fn = script(fn)
    for _ in range(3):  # (augmented writes accumulate over calls)
        np.testing.assert_array_equal(compiled_fn(*compiled), fn(*plain))
        got, want = compiled[0], plain[0]
        if isinstance(want, Layer):
            for name in ("grads", "named", "dW", "params"):
                a, b = getattr(got, name), getattr(want, name)
                for k in (range(len(b)) if isinstance(b, list) else b if isinstance(b, dict)
                          else [None]):
                    g, w = (a, b) if k is None else (a[k], b[k])
                    assert g.dtype == w.dtype
                    np.testing.assert_array_equal(g, w)
            assert got.grads[0] is held  # the same array, written into
        else:
            for k in (range(len(want)) if isinstance(want, list) else want):
                np.testing.assert_array_equal(got[k], want[k])


def test_gradients_of_a_function_that_writes_into_its_caller():
    x = np.arange(6.0).reshape(2, 3)
    layer = Layer()
    out, back = vjp(script(writes), layer, x)
    dx = back(np.ones(2))[1]
    np.testing.assert_allclose(dx, np.tile(layer.params[1], (2, 1)))
    np.testing.assert_array_equal(layer.grads[0], 2 * x)


def test_an_array_written_into_that_another_input_holds_is_refused_at_the_call():
    layer = Layer()
    layer.grads[1] = layer.params[1][:]  # a view of what the function reads
    with pytest.raises(SignatureError, match=r"writes into in 'self.grads' shares memory with "
                                             r"'self.params'"):
        script(writes)(layer, np.ones((2, 3)))
    np.testing.assert_array_equal(layer.params[1], np.full(3, 0.5))  # before anything ran


# -- Deep Learning from Scratch 2's optimizers, as written (the realworld corpus's port) ------


@pytest.mark.parametrize("cls", [SGD, Momentum, Nesterov, AdaGrad, RMSprop, Adam])
def test_an_optimizer_updates_the_parameters_the_model_holds(cls):
    """Its state (``self.m``...) made by the first call and updated in place by the next ones,
    read after each update (``write_order``)."""
    rng = np.random.default_rng(4)
    params = [rng.standard_normal((3, 4)), rng.standard_normal(4).astype(np.float32)]
    grads = [rng.standard_normal((3, 4)), rng.standard_normal(4).astype(np.float32)]
    plain, compiled = cls(), cls()
    plain_params = [p.copy() for p in params]
    held = list(params)  # the model's layers hold the same arrays
    update = script(compiled.update)
    state = plain_state = None
    for _ in range(4):
        cls.update(plain, plain_params, grads)
        update(params, grads)
        for got, want, same in zip(params, plain_params, held):
            assert got is same and got.dtype == want.dtype
            np.testing.assert_allclose(got, want, rtol=1e-6)
        names = [n for n in ("m", "v", "h") if isinstance(getattr(plain, n, None), list)]
        for n in names:
            for got, want in zip(getattr(compiled, n), getattr(plain, n)):
                assert got.dtype == want.dtype
                np.testing.assert_allclose(got, want, rtol=1e-6)
        now = [a for n in names for a in getattr(compiled, n)]
        plain_now = [a for n in names for a in getattr(plain, n)]
        if state is not None:  # updated in place after the first call where numpy does
            assert [a is b for a, b in zip(now, state)] == \
                [a is b for a, b in zip(plain_now, plain_state)]
        state, plain_state = now, plain_now
    assert getattr(compiled, "iter", 0) == getattr(plain, "iter", 0)


class Owner:
    def __init__(self):
        self.W = np.ones(3)
        self.dW = np.full(3, 0.5)
        self.grads = [np.zeros(3)]
        self.z = np.array(2.0)

    def accumulate(self, x):
        self.dW[...] += x
        return x

    def reads_after_a_method_wrote(self, x):
        a = self.dW.sum()
        self.accumulate(x)
        return a + self.dW.sum()

    def step(self, lr):
        self.W -= lr * self.grads[0]  # numpy: into the array the optimizer also holds
        self.W **= 2
        return lr

    def colon_of_0d(self, x):
        self.z[:] = x.sum()
        return x


def test_a_write_in_a_called_method_and_a_read_in_the_caller_are_refused():
    with pytest.raises(ScriptError, match=r"'Owner.accumulate' \(called here\) writes into "
                                          r"'self.dW' in place"):
        script(Owner.reads_after_a_method_wrote)(Owner(), np.ones(3))


def test_an_attribute_array_updated_in_place_is_the_caller_s_array():
    plain, compiled = Owner(), Owner()
    held = compiled.W
    plain.grads[0][:] = compiled.grads[0][:] = 0.25
    for _ in range(2):
        Owner.step(plain, 0.5)
        script(Owner.step)(compiled, 0.5)
        assert compiled.W is held
        np.testing.assert_allclose(compiled.W, plain.W)


def test_a_colon_write_into_a_0d_array_raises_as_numpy_does():
    with pytest.raises(IndexError):
        Owner.colon_of_0d(Owner(), np.ones(3))
    with pytest.raises(IndexError):
        script(Owner.colon_of_0d)(Owner(), np.ones(3))


class Pair(NamedTuple):
    W: Tensor


def _writes_beside(grads: List[Tensor], p: Pair) -> Tensor:
    grads[0][...] = 2.0
    return p.W * 1


def test_an_array_a_named_tuple_holds_is_compared_too():
    W = np.ones(3)
    with pytest.raises(SignatureError, match="shares memory"):
        script(_writes_beside)([W], Pair(W))
    np.testing.assert_array_equal(W, np.ones(3))


def stored_then_updated(held: List[Tensor], a: Tensor):
    x = a * 2.0
    held[0] = x
    x += 1.0  # numpy: the caller's held[0] is this array, and shows the update


def appended_then_updated(held: List[Tensor], a: Tensor):
    x = a * 2.0
    held.append(x)
    x *= 3.0


class State:
    def __init__(self, v):
        self.v = v

    def update(self, grads: List[Tensor]):
        for i in range(len(grads)):
            x = 0.9 * self.v[i] - grads[i]
            self.v[i] = x
            x *= 2.0  # numpy: self.v[i] too


def copied_then_updated(held: List[Tensor], a: Tensor):
    x = a * 2.0
    held[0] = x.copy()
    x += 1.0
    held[1] = x


@pytest.mark.parametrize("fn", [stored_then_updated, appended_then_updated])
def test_an_array_stored_into_the_caller_s_list_then_updated_in_place_is_refused(fn):
    with pytest.raises(ScriptError, match=r"would also change 'held'.*caller's container"):
        script(fn)([np.zeros(3)], np.ones(3))
    with pytest.raises(ScriptError, match=r"would also change 'self.v'"):
        script(State.update)(State([np.zeros(3), np.zeros(2)]), [np.ones(3), np.ones(2)])
    plain, compiled = [np.zeros(3), np.zeros(3)], [np.zeros(3), np.zeros(3)]
    copied_then_updated(plain, np.ones(3))
    script(copied_then_updated)(compiled, np.ones(3))
    for a, b in zip(plain, compiled):
        np.testing.assert_array_equal(b, a)
