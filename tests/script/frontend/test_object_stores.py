"""Assigning the attributes of plain object arguments (``script.frontend.object_stores``): the
object holds the value after the call, as in Python, and reads after the assignment see it."""

import warnings

import numpy as np
import pytest

from benchmarks.realworld_programs.dlfs2_layers import RNN
from script import ScriptError, SignatureError, Tensor, script, vjp

# -- deep-learning-from-scratch-2's RNN layer as the book writes it (the corpus's class) -----------


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
                           r"assign a copy to 'self.cache'"),
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


def test_an_update_of_an_array_attribute_returned_is_the_caller_s_array():
    holder = Holder()
    held = holder.W
    out = script(adds_into_weights)(holder, np.full(3, 2.0))
    assert out is held and holder.W is held  # numpy returns the array it updated
    np.testing.assert_array_equal(held, np.full(3, 3.0))


def two_objects(a: Cell, b: Cell, x: Tensor) -> Tensor:
    a.h = x
    return b.h + 1


def test_one_object_reached_twice_is_refused_at_the_call():
    fn = script(two_objects)
    np.testing.assert_array_equal(fn(Cell(_W), Cell(_W), np.ones(3)), np.ones(3))
    with pytest.raises(SignatureError, match="'a' and 'b' are the same object"):
        shared = Cell(_W)
        fn(shared, shared, np.ones(3))


# -- what an earlier call left decides what compiles ----------------------------------------------
class Accumulator:
    def __init__(self):
        self.total = None
        self.cache = (1.0,)

    def add(self, x):
        if self.total is None:
            self.total = x
        else:
            self.total = self.total + x
        return self.total

    def flip(self, x):
        out = x * len(self.cache)
        self.cache = (x,) if len(self.cache) == 1 else (1.0,)
        return out

    def narrowed(self, x):
        if self.total is not None:
            return self.total - x
        self.total = x * 2
        return -self.total


@pytest.mark.parametrize("method", ["add", "flip", "narrowed"])
def test_the_value_an_earlier_call_assigned_is_read_as_it_is_now(method):
    """``self.total is None`` decided when compiling: the old value's type stays part of the
    call's signature (None, then an array), and a tuple of other items compiles again."""
    plain, compiled = Accumulator(), Accumulator()
    fn = script(getattr(Accumulator, method))
    for k in range(4):
        x = np.full(3, k + 1.0)
        np.testing.assert_allclose(fn(compiled, x), getattr(Accumulator, method)(plain, x))
        np.testing.assert_allclose(compiled.total if plain.total is not None else 0,
                                   plain.total if plain.total is not None else 0)


def test_the_gradient_after_an_earlier_call_assigned_the_attribute():
    acc = Accumulator()
    fn = script(Accumulator.add)
    fn(acc, np.ones(3))  # total: None -> an array
    out, back = vjp(fn, acc, np.full(3, 2.0))
    np.testing.assert_allclose(out, np.full(3, 3.0))
    g_acc, g_x = back(np.full(3, 1.0))
    np.testing.assert_allclose(g_x, np.ones(3))
    np.testing.assert_allclose(g_acc.total, np.ones(3))


class Stepper:
    def __init__(self):
        self.n = 0
        self.h = np.zeros(3)

    def advance(self):
        self.n += 1
        return self.n < 4

    def until(self, x):
        while self.advance():
            x = x * 2
        return x

    def until_broken(self, x):
        k = 0
        while self.advance():
            k += 1
            if k >= 10:
                break
        return x * k

    def counted(self, x):
        for self.n in range(3):
            x = x + 1
        return x * self.n


class Trainer:
    """A forward and a backward in one step, the cache None before the first call (Deep
    Learning from Scratch 2's layers, driven by one method)."""

    def __init__(self):
        self.W = np.eye(3) * 0.5
        self.cache = None
        self.calls = 0

    def forward(self, x):
        h = np.tanh(x @ self.W)
        self.cache = (x, h)
        return h

    def backward(self, dh):
        x, h = self.cache
        self.calls += 1
        return (dh * (1 - h ** 2)) @ self.W.T * self.calls

    def step(self, x):
        h = self.forward(x)
        return self.backward(h)


@pytest.mark.parametrize("cls, method", [(Stepper, "until"), (Stepper, "counted"),
                                         (Trainer, "step")])
def test_methods_assigning_for_conditions_targets_and_other_methods(cls, method):
    plain, compiled = cls(), cls()
    fn = script(getattr(cls, method))
    for _ in range(3):
        x = np.linspace(-1.0, 1.0, 3)
        np.testing.assert_allclose(fn(compiled, x), getattr(cls, method)(plain, x))
        for name, value in vars(plain).items():
            got = getattr(compiled, name)
            if isinstance(value, tuple):
                for g, w in zip(got, value):
                    np.testing.assert_allclose(g, w)
            else:
                np.testing.assert_allclose(got, value)


class Checked:
    def __init__(self):
        self._h = np.zeros(3)

    @property
    def h(self):
        return self._h

    @h.setter
    def h(self, value):
        self._h = value * 2


def through_a_setter(self: Checked, x: Tensor) -> Tensor:
    self.h = x
    return self.h


def breaks_after_assigning_in_the_condition(self: Stepper, x: Tensor) -> Tensor:
    return Stepper.until_broken(self, x)


@pytest.mark.parametrize("fn, obj, match", [
    (through_a_setter, Checked, r"cannot assign 'self.h': 'h' is a property of its class"),
    (breaks_after_assigning_in_the_condition, Stepper,
     r"a method this condition calls assigns an attribute, in a loop that can leave by break"),
])
def test_what_the_compiled_code_cannot_follow_is_refused(fn, obj, match):
    with pytest.raises(ScriptError, match=match):
        script(fn)(obj(), np.ones(3))


class Lin:
    def __init__(self, W):
        self.W = W
        self.x = None

    def forward(self, x):
        self.x = x
        return x @ self.W

    def backward(self, d):
        return self.x.T @ d


class Net:
    def __init__(self):
        self.layers = [Lin(np.eye(2) * 0.5), Lin(np.eye(2) * 2.0)]

    def forward(self, x):
        for layer in self.layers:
            x = layer.forward(x)
        return x

    def backward(self, d):
        for layer in reversed(self.layers):
            d = layer.backward(d)
        return d


def forward_backward(net: Net, x: Tensor) -> Tensor:
    return net.backward(net.forward(x))


def test_a_holder_s_methods_read_what_its_layers_assigned():
    """Each layer's ``self.x`` (None before the call) is assigned by ``Net.forward`` and read
    by ``Net.backward``, both looping over ``self.layers``."""
    x = np.arange(4.0).reshape(2, 2)
    plain, compiled = Net(), Net()
    fn = script(forward_backward)
    for _ in range(2):
        np.testing.assert_allclose(fn(compiled, x), forward_backward(plain, x))
        for a, b in zip(compiled.layers, plain.layers):
            np.testing.assert_allclose(a.x, b.x)


class Private:
    """Deep Learning from Scratch's BatchNormalization calls ``self.__forward``: Python's name
    mangling makes it ``_Private__forward``."""

    def __init__(self):
        self.gamma = np.full(3, 2.0)

    def forward(self, x):
        return self.__forward(x) + 1

    def __forward(self, x):
        self.__cache = x * 2
        return x * self.gamma


class Relu:  # deep-learning-from-scratch (MIT License), common/layers.py: as written
    def __init__(self):
        self.mask = None

    def forward(self, x):
        self.mask = (x <= 0)
        out = x.copy()
        out[self.mask] = 0

        return out

    def backward_of_a_copy(self, dout):  # (the book's writes into its argument: refused)
        dout = dout.copy()
        dout[self.mask] = 0
        return dout


@pytest.mark.parametrize("cls", [Private, Relu])
def test_private_names_and_masks_kept_in_attributes(cls):
    x = np.array([1.0, -2.0, 3.0])
    plain, compiled = cls(), cls()
    np.testing.assert_array_equal(script(cls.forward)(compiled, x), cls.forward(plain, x))
    for name, value in vars(plain).items():
        np.testing.assert_array_equal(getattr(compiled, name), value)


class Stateful:
    def __init__(self, W):
        self.W = W
        self.h = np.zeros((2, 3))

    def forward(self, xs):
        for t in range(xs.shape[0]):
            self.h = np.tanh(xs[t] + self.h @ self.W)
            if t == 2:
                return self.h * 2  # (leaves the loop: the object holds this step's state)
        return self.h


def test_a_loop_assigning_an_attribute_stores_it_once_after_the_loop():
    """The object holds the last step's value, and the loop's body stores nothing (it can run
    natively): the store is after the loop."""
    xs = np.random.default_rng(5).standard_normal((5, 2, 3))
    W = np.eye(3) * 0.5
    fn = script(Stateful.forward)
    for steps in (5, 2, 0):  # (three steps reach the return; none leave h as it was)
        plain, compiled = Stateful(W), Stateful(W)
        compiled.h = plain.h = np.full((2, 3), 0.25)
        np.testing.assert_allclose(fn(compiled, xs[:steps]), Stateful.forward(plain, xs[:steps]))
        np.testing.assert_allclose(compiled.h, plain.h)
    graph = fn.graph_for(Stateful(W), xs)
    loops = [n for n in graph.walk() if n.kind == "prim::Loop"]
    assert loops and not any(n.kind == "prim::SetAttr" for loop in loops for b in loop.blocks
                             for n in b.walk())
    assert any(n.kind == "prim::SetAttr" for n in graph.walk())


def test_a_mask_an_earlier_call_left_in_an_attribute():
    """``Relu.backward`` reads the mask ``forward`` stored: a boolean array when it compiles,
    so the write through it is a masked write; a call whose attribute holds another kind of
    array compiles again."""
    x = np.array([1.0, -2.0, 3.0])
    plain, compiled = Relu(), Relu()
    Relu.forward(plain, x)
    script(Relu.forward)(compiled, x)
    fn = script(Relu.backward_of_a_copy)
    np.testing.assert_array_equal(fn(compiled, np.ones(3)),
                                  Relu.backward_of_a_copy(plain, np.ones(3)))
    compiled.mask = plain.mask = np.array([2, 0])  # an index array now: numpy's integer write
    np.testing.assert_array_equal(fn(compiled, np.ones(3)),
                                  Relu.backward_of_a_copy(plain, np.ones(3)))
