"""The generated entry of a call with plain object arguments (``object_reads.entry``): the
inputs and the cache key it gives are those of the general bind and ``call_key``, and a call
it cannot take (another layout, another class, a value that is not an object, one object by
two paths) goes the general way, with its results and errors."""

import copy

import numpy as np
import pytest

from benchmarks.realworld_programs.dlfs2_layers import RNN
from script import SignatureError, Tensor, script
from script.frontend.signature import call_key


class Params:
    def __init__(self, W, b, scale=2, name="p"):
        self.W, self.b, self.scale, self.name = W, b, scale, name
        self.history = [W]


class Other:
    def __init__(self, W, b):
        self.W, self.b, self.scale, self.name = W, b, 2, "p"
        self.history = [W]


def affine(p: Params, x: Tensor) -> Tensor:
    y = x @ p.W + p.b
    for _ in range(p.scale):
        y = np.tanh(y)
    p.last = y
    return y + p.history[0].sum()


def pair(a: Params, b: Params, x: Tensor) -> Tensor:
    a.out = x
    return x @ b.W


def _params(seed=0, dtype="float64", n=4):
    rng = np.random.default_rng(seed)
    return Params(rng.standard_normal((n, n)).astype(dtype), rng.standard_normal(n).astype(dtype))


def _entered(f, args):
    fn = f.function if hasattr(f, "function") else f
    return fn._entered(args)


def test_the_entry_gives_the_general_inputs_and_key():
    f = script(affine)
    p, x = _params(), np.ones((3, 4))
    f(p, x)
    fn = f.function if hasattr(f, "function") else f
    d = fn._definition
    general = fn._bind((p, x), {})
    found = _entered(f, (p, x))
    assert found is not None
    inputs, spec = found
    assert len(inputs) == len(general)
    assert all(a is b for a, b in zip(inputs, general))
    entry = fn.__dict__["_entries"][id(d)][1]
    assert entry((p, x))[1] == call_key(general, d.static_ints, d.trip_ints, d.any_length,
                                        d.container_inputs)
    assert spec is fn._cache[entry((p, x))[1]]


def test_calls_with_fresh_objects_reuse_the_specialization():
    f = script(affine)
    p, x = _params(), np.ones((3, 4))
    for k in range(20):
        q = copy.deepcopy(p)
        plain = copy.deepcopy(p)
        np.testing.assert_allclose(f(q, x * k), affine(plain, x * k), rtol=1e-12)
        np.testing.assert_allclose(q.last, plain.last, rtol=1e-12)
    fn = f.function if hasattr(f, "function") else f
    assert fn.compiled_signatures == 1


def test_other_layouts_and_classes_go_the_general_way():
    f = script(affine)
    x = np.ones((3, 4))
    p = _params()
    f(p, x)
    q = _params(dtype="float32")  # other dtypes: another specialization
    np.testing.assert_allclose(f(q, x.astype("float32")),
                               affine(_params(dtype="float32"), x.astype("float32")), rtol=1e-5)
    r = _params()
    r.scale = 3  # an int attribute the loop count compiled in: its value is checked
    np.testing.assert_allclose(f(r, x), affine(_with(3), x), rtol=1e-12)
    o = Other(*(_params().W, _params().b))  # another class
    np.testing.assert_allclose(f(o, x), affine(Other(_params().W, _params().b), x), rtol=1e-12)
    bigger = _params(n=5)  # other shapes
    np.testing.assert_allclose(f(bigger, np.ones((2, 5))), affine(_params(n=5), np.ones((2, 5))),
                               rtol=1e-12)
    np.testing.assert_allclose(f(p, x), affine(_params(), x), rtol=1e-12)


def _with(scale):
    p = _params()
    p.scale = scale
    return p


def test_errors_are_the_general_path_s():
    f = script(affine)
    x = np.ones((3, 4))
    f(_params(), x)
    with pytest.raises(SignatureError, match="'p'"):
        f(np.ones(3), x)
    g = script(pair)
    g(_params(), _params(1), x)
    shared = _params()
    with pytest.raises(SignatureError, match="'a' and 'b' are the same object"):
        g(shared, shared, x)
    with pytest.raises(SignatureError):
        f(_params(), x, x)


def test_the_book_s_rnn_layer_takes_the_entry():
    rng = np.random.default_rng(3)
    layer = RNN(*(rng.standard_normal(s).astype("float32") for s in ((6, 5), (5, 5), (5,))))
    x, h = rng.standard_normal((3, 6)).astype("float32"), rng.standard_normal((3, 5)).astype(
        "float32")
    forward = script(RNN.forward)
    want = RNN.forward(copy.deepcopy(layer), x, h)
    forward(layer, x, h)
    assert _entered(forward, (layer, x, h)) is not None
    for _ in range(3):
        fresh = copy.deepcopy(layer)
        np.testing.assert_allclose(forward(fresh, x, h), want, rtol=1e-5)
        assert fresh.cache[0] is x and fresh.cache[1] is h
    fn = forward.function if hasattr(forward, "function") else forward
    assert fn.compiled_signatures == 1


class Growing:
    def __init__(self, W):
        self.W = W
        self.hs = []

    def forward(self, x):
        h = np.tanh(x @ self.W)
        self.hs.append(h)
        return h


def test_a_list_keyed_by_any_length_later_makes_the_entry_again():
    """A list attribute passed at many lengths is keyed whatever its length from then on
    (``list_lengths``): the entry made before keyed it item by item, a key no specialization
    has; it is made again for the definition as it is now (here: none, the general bind)."""
    forward = script(Growing.forward)
    fn = forward.function if hasattr(forward, "function") else forward
    c = Growing(np.random.default_rng(0).standard_normal((4, 4)))
    plain = Growing(c.W.copy())
    x = np.ones((2, 4))
    for k in range(30):
        np.testing.assert_allclose(forward(c, x * k), plain.forward(x * k), rtol=1e-12)
    assert len(c.hs) == 30
    d = fn._definition
    assert d.any_length
    before = fn.compiled_signatures
    assert fn._entered((c, x)) is None or fn._entered((c, x))[1] is not None
    for _ in range(5):
        forward(c, x)
    assert fn.compiled_signatures == before
    found = fn.__dict__["_entries"][id(d)]
    assert found[2] == d.any_length
