"""Assigning the attributes of plain object arguments (``script.frontend.object_stores``): the
object holds the value after the call, as in Python, and reads after the assignment see it."""

import warnings

import numpy as np
import pytest

from script import ScriptError, SignatureError, Tensor, script, vjp


# -- deep-learning-from-scratch-2's RNN layer (oreilly-japan/deep-learning-from-scratch-2,
# common/time_layers.py, MIT License), unchanged but for the annotation-free method itself --
class RNN:
    def __init__(self, Wx, Wh, b):
        self.params = [Wx, Wh, b]
        self.grads = [np.zeros_like(Wx), np.zeros_like(Wh), np.zeros_like(b)]
        self.cache = None

    def forward(self, x, h_prev):
        Wx, Wh, b = self.params
        t = np.dot(h_prev, Wh) + np.dot(x, Wx) + b
        h_next = np.tanh(t)

        self.cache = (x, h_prev, h_next)
        return h_next


def _rnn(dtype, seed=0):
    rng = np.random.default_rng(seed)
    D, H, N = 4, 5, 3
    weights = [rng.standard_normal(s).astype(dtype) for s in ((D, H), (H, H), (H,))]
    return weights, rng.standard_normal((N, D)).astype(dtype), \
        rng.standard_normal((N, H)).astype(dtype)


@pytest.mark.parametrize("dtype", ["float32", "float64"])
def test_a_layer_caching_what_its_backward_reads(dtype):
    weights, x, h = _rnn(dtype)
    plain, compiled = RNN(*weights), RNN(*weights)
    forward = script(compiled.forward)
    for k in range(3):
        want = RNN.forward(plain, x * (k + 1), h)
        got = forward(x * (k + 1), h)
        np.testing.assert_allclose(got, want, rtol=1e-5 if dtype == "float32" else 1e-12)
        assert type(compiled.cache) is tuple and len(compiled.cache) == 3
        assert compiled.cache[1] is h  # the argument itself, as Python stores it
        np.testing.assert_allclose(compiled.cache[2], plain.cache[2], rtol=1e-5)
    # the old cache was not read: its type and shapes are no part of the call's signature
    assert forward.function.compiled_signatures == 1


def test_the_arrays_an_object_keeps_are_its_own():
    weights, x, h = _rnn("float64")
    layer = RNN(*weights)
    forward = script(layer.forward)
    forward(x, h)
    first = layer.cache
    kept = first[2].copy()
    forward(2 * x, 0.5 * h)
    assert layer.cache[2] is not first[2]
    np.testing.assert_array_equal(first[2], kept)  # the next call wrote elsewhere


def test_the_gradient_of_a_method_that_caches():
    weights, x, h = _rnn("float64")
    layer = RNN(*weights)
    out, back = vjp(script(layer.forward), x, h)
    ct = np.random.default_rng(1).standard_normal(out.shape)
    dx, _ = back(ct)
    numeric = np.zeros_like(x)
    for i in np.ndindex(x.shape):
        e = np.zeros_like(x)
        e[i] = 1e-6
        numeric[i] = ((RNN.forward(RNN(*weights), x + e, h)
                       - RNN.forward(RNN(*weights), x - e, h)) * ct).sum() / 2e-6
    np.testing.assert_allclose(dx, numeric, atol=1e-8)


# -- state updated in loops, branches and called methods ------------------------------------------
class Cell:
    def __init__(self, W):
        self.W = W
        self.h = np.zeros(3)
        self.n = 0

    def step(self, x):
        self.h = np.tanh(self.W @ self.h + x)
        self.n += 1
        return self.h

    def run(self, xs):
        for i in range(xs.shape[0]):
            self.step(xs[i])
        return self.h * 2

    def run_listed(self, xs):
        hs = [self.step(x) for x in xs]
        return np.stack(hs) + self.h

    def counted(self, x, n: int):
        k = 0
        while k < n:
            self.h = self.h + x
            self.n += 1
            k += 1
        return self.h + self.n

    def maybe(self, x):
        if x.sum() > 0:
            self.h = x
        return self.h + 1

    def through_a_name(self, x):
        me = self
        me.h = x * 3
        return self.h


class Model:
    def __init__(self, W):
        self.cell = Cell(W)

    def forward(self, xs):
        for i in range(xs.shape[0]):
            self.cell.step(xs[i])
        return self.cell.h.sum()

    def start_then_step(self, xs):
        self.cell.h = xs[0]
        return self.cell.step(xs[1])


_W = np.random.default_rng(2).standard_normal((3, 3)) * 0.5
_XS = np.random.default_rng(3).standard_normal((4, 3))


@pytest.mark.parametrize("method, args", [
    ("step", (_XS[0],)), ("run", (_XS,)), ("run_listed", (_XS,)), ("counted", (_XS[0], 3)),
    ("maybe", (_XS[0],)), ("maybe", (-np.abs(_XS[0]),)), ("through_a_name", (_XS[0],)),
])
def test_state_a_method_updates_matches_python(method, args):
    plain, compiled = Cell(_W), Cell(_W)
    fn = script(getattr(Cell, method))
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # (a counter it updates is read per call: no warning)
        for _ in range(4):
            want = getattr(Cell, method)(plain, *args)
            got = fn(compiled, *args)
            np.testing.assert_allclose(got, want, rtol=1e-12)
            np.testing.assert_allclose(compiled.h, plain.h, rtol=1e-12)
            assert compiled.n == plain.n and type(compiled.n) is int
    assert fn.compiled_signatures == 1


@pytest.mark.parametrize("method", ["forward", "start_then_step"])
def test_a_called_method_assigns_for_its_caller(method):
    plain, compiled = Model(_W), Model(_W)
    fn = script(getattr(Model, method))
    for _ in range(3):
        np.testing.assert_allclose(fn(compiled, _XS), getattr(Model, method)(plain, _XS),
                                   rtol=1e-12)
        np.testing.assert_allclose(compiled.cell.h, plain.cell.h, rtol=1e-12)
    out, back = vjp(fn, Model(_W), _XS)
    ct = np.linspace(0.5, 1.5, np.size(out)).reshape(np.shape(out))
    dxs = back(ct)[1]
    numeric = np.zeros_like(_XS)
    for i in np.ndindex(_XS.shape):
        e = np.zeros_like(_XS)
        e[i] = 1e-6
        numeric[i] = ((getattr(Model, method)(Model(_W), _XS + e)
                       - getattr(Model, method)(Model(_W), _XS - e)) * ct).sum() / 2e-6
    np.testing.assert_allclose(dxs, numeric, atol=1e-8)
    assert np.abs(dxs).sum() > 0


class Maybe:
    def __init__(self):
        self.h = np.zeros(3)

    def update(self, x):
        if x.sum() > 0:
            self.h = np.tanh(x)
        return x

    def forward(self, x):
        self.update(x)
        return self.h * 2


def test_a_gradient_through_a_value_read_back_from_an_object_is_refused():
    """``self.h`` after a method that assigns it on one path only is read from the object: its
    gradient is refused, never a silent zero."""
    x = np.abs(_XS[0]) + 0.1
    np.testing.assert_allclose(script(Maybe.forward)(Maybe(), x), Maybe.forward(Maybe(), x))
    with pytest.raises(ScriptError, match="stored in an object's field"):
        vjp(script(Maybe.forward), Maybe(), x)[1](np.ones(3))


# -- what is refused ----------------------------------------------------------------------------
class Holder:
    def __init__(self):
        self.W = np.ones(3)
        self.cache = None
        self.act = np.tanh
        self.other = Cell(_W)


def writes_after_caching(self: Holder, x: Tensor) -> Tensor:
    h = np.tanh(x)
    self.cache = h
    h[0] = 5.0
    return h


def adds_into_weights(self: Holder, g: Tensor) -> Tensor:
    self.W += g
    return self.W


def replaces_a_function(self: Holder, x: Tensor) -> Tensor:
    self.act = x
    return x


def replaces_an_object(self: Holder, x: Tensor) -> Tensor:
    self.other = x
    return x


def stores_an_object(self: Holder, x: Tensor) -> Tensor:
    self.cache = self.other
    return x


def new_on_one_path(self: Holder, x: Tensor) -> Tensor:
    if x.sum() > 0:
        self.fresh = x
    return self.fresh


@pytest.mark.parametrize("fn, match", [
    (writes_after_caching, r"in-place write to 'h' would also change 'self.cache'.*"
                           r"self.cache = h.copy\(\)"),
    (adds_into_weights, r"'self.W \+= \.\.\.' updates the array 'self.W' holds in place"),
    (replaces_a_function, r"cannot assign 'self.act': it holds the function"),
    (replaces_an_object, r"cannot assign 'self.other': it holds a Cell object"),
    (stores_an_object, r"cannot assign the object argument 'self.other' to 'self.cache'"),
    (new_on_one_path, r"'self.fresh' is not defined in the false branch \(the object had no "
                      r"such attribute"),
])
def test_refusals(fn, match):
    with pytest.raises(ScriptError, match=match) as info:
        script(fn)(Holder(), np.ones(3))
    assert "test_object_stores.py" in str(info.value)


def two_objects(a: Cell, b: Cell, x: Tensor) -> Tensor:
    a.h = x
    return b.h + 1


def test_one_object_reached_twice_is_refused_at_the_call():
    fn = script(two_objects)
    np.testing.assert_array_equal(fn(Cell(_W), Cell(_W), np.ones(3)), np.ones(3))
    with pytest.raises(SignatureError, match="'a' and 'b' are the same object"):
        shared = Cell(_W)
        fn(shared, shared, np.ones(3))
