"""Methods of plain object arguments (``layer.forward(x)``, ``self.cell.step(h, x)``), lists and
tuples of plain objects (``layers: List[Layer]``, ``self.layers = [...]``) and ``grad`` of a
function taking objects: compiled equals plain Python (float32 and float64), gradients come back
as objects (lists of objects) of the arguments' classes and equal finite differences, a list of
another length compiles again, and what stays unsupported is a ScriptError at the user's line."""

import copy
from typing import List, Tuple

import numpy as np
import pytest

import script as S
from script import ScriptError, SignatureError, Tensor, script
from tests.gradcheck import check_vjp
from tests.helpers import assert_same, assert_same_at


class Dense:
    def __init__(self, W, b):
        self.W = W
        self.b = b

    def forward(self, x, scale: float = 1.0):
        return np.tanh(x @ self.W + self.b) * scale

    def twice(self, x):
        return self.forward(self.forward(x), scale=0.5)

    @staticmethod
    def squash(x):
        return x / (1.0 + np.abs(x))


class RNNCell:
    """A cs231n-style recurrent layer: the step is a method, the sequence loop another."""

    def __init__(self, Wx, Wh, b):
        self.Wx, self.Wh, self.b = Wx, Wh, b

    def step(self, h, x):
        return np.tanh(x @ self.Wx + h @ self.Wh + self.b)

    def forward(self, xs, h=None):
        if h is None:
            h = np.zeros((xs.shape[1], self.Wh.shape[0]), dtype=xs.dtype)
        for t in range(xs.shape[0]):
            h = self.step(h, xs[t])
        return h


class Model:
    def __init__(self, cell, head):
        self.cell = cell
        self.head = head

    def forward(self, xs):
        return self.head.forward(self.cell.forward(xs))


class Stack:
    def __init__(self, layers):
        self.layers = layers

    def forward(self, x):
        for layer in self.layers:
            x = layer.forward(x)
        return x


def _dense(rng, n_in, n_out, dtype="float64"):
    return Dense(rng.standard_normal((n_in, n_out)).astype(dtype) * 0.5,
                 rng.standard_normal(n_out).astype(dtype))


def _cell(rng, n_in, n_hidden, dtype="float64"):
    return RNNCell(rng.standard_normal((n_in, n_hidden)).astype(dtype) * 0.5,
                   rng.standard_normal((n_hidden, n_hidden)).astype(dtype) * 0.5,
                   rng.standard_normal(n_hidden).astype(dtype))


# -- methods --------------------------------------------------------------------------------------
def calls_methods(layer: Dense, x: Tensor) -> Tensor:
    return layer.twice(x) + layer.forward(x, 2.0) + Dense.squash(x) * 0 + layer.squash(x)


def runs_model(model: Model, xs: Tensor) -> Tensor:
    return model.forward(xs)


def runs_cell_from(cell: RNNCell, xs: Tensor, h: Tensor) -> Tensor:
    return cell.forward(xs, h)


@pytest.mark.parametrize("dtype", ["float32", "float64"])
def test_methods_compile_like_python(dtype):
    rng = np.random.default_rng(0)
    layer, x = _dense(rng, 3, 3, dtype), rng.standard_normal((2, 3)).astype(dtype)
    assert_same_at(script(calls_methods)(layer, x), calls_methods(layer, x))
    model = Model(_cell(rng, 3, 4, dtype), _dense(rng, 4, 2, dtype))
    xs = rng.standard_normal((5, 2, 3)).astype(dtype)
    assert_same_at(script(runs_model)(model, xs), runs_model(model, xs))
    h = rng.standard_normal((2, 4)).astype(dtype)
    assert_same_at(script(runs_cell_from)(model.cell, xs, h), runs_cell_from(model.cell, xs, h))


def test_method_gradients_match_finite_differences():
    rng = np.random.default_rng(1)
    check_vjp(script(calls_methods), (_dense(rng, 3, 3), rng.standard_normal((2, 3))))
    model = Model(_cell(rng, 3, 4), _dense(rng, 4, 2))
    check_vjp(script(runs_model), (model, rng.standard_normal((4, 2, 3))))
    check_vjp(script(runs_cell_from), (model.cell, rng.standard_normal((3, 2, 3)),
                                       rng.standard_normal((2, 4))))


def test_method_attributes_are_read_per_call():
    rng = np.random.default_rng(2)
    model, xs = Model(_cell(rng, 3, 4), _dense(rng, 4, 2)), rng.standard_normal((3, 2, 3))
    f = script(runs_model)
    f(model, xs)
    model.cell.Wh = model.cell.Wh * 2.0
    model.head = _dense(rng, 4, 5)  # another shape: specialized again
    assert_same(f(model, xs), runs_model(model, xs))


# -- lists and tuples of objects ------------------------------------------------------------------
def through_list(layers: List[Dense], x: Tensor) -> Tensor:
    for layer in layers:
        x = layer.forward(x)
    return x + layers[0].b.sum() * len(layers)


def through_tuple(pair: Tuple[Dense, Dense], x: Tensor) -> Tensor:
    first, second = pair
    return second.forward(first.forward(x)) * pair[-1].b[0]


def through_stack(stack: Stack, x: Tensor) -> Tensor:
    y = stack.forward(x)
    for k, layer in enumerate(reversed(stack.layers[1:])):
        y = y + layer.forward(x) * (k + 1)
    return y


def helper_over(layers: List[Dense], x: Tensor) -> Tensor:
    for layer in layers:
        x = layer.forward(x)
    return x * len(layers)


def passes_lists(stack: Stack, layers: List[Dense], x: Tensor) -> Tensor:
    return helper_over(stack.layers, x) + helper_over(layers[1:], x).sum()


def zipped(layers: List[Dense], xs: List[Tensor]) -> Tensor:
    total = xs[0] * 0.0
    for layer, x in zip(layers, xs):
        total = total + layer.forward(x)
    return total


def _layers(rng, dtype="float64"):
    """Layers of different shapes (3 -> 4 -> 2 -> 2): each item's attributes are its own."""
    return [_dense(rng, 3, 4, dtype), _dense(rng, 4, 2, dtype), _dense(rng, 2, 2, dtype)]


@pytest.mark.parametrize("dtype", ["float32", "float64"])
def test_lists_of_objects_compile_like_python(dtype):
    rng = np.random.default_rng(3)
    layers, x = _layers(rng, dtype), rng.standard_normal((2, 3)).astype(dtype)
    assert_same_at(script(through_list)(layers, x), through_list(layers, x))
    pair = (_dense(rng, 3, 3, dtype), _dense(rng, 3, 2, dtype))
    assert_same_at(script(through_tuple)(pair, x), through_tuple(pair, x))
    stack = Stack([_dense(rng, 3, 3, dtype) for _ in range(3)])
    assert_same_at(script(through_stack)(stack, x), through_stack(stack, x))
    assert_same_at(script(passes_lists)(stack, stack.layers, x),
                   passes_lists(stack, stack.layers, x))
    xs = [rng.standard_normal((2, 3)).astype(dtype) for _ in range(3)]
    same = [_dense(rng, 3, 3, dtype) for _ in range(3)]
    assert_same_at(script(zipped)(same, xs), zipped(same, xs))


def test_list_gradients_match_finite_differences():
    rng = np.random.default_rng(4)
    x = rng.standard_normal((2, 3))
    check_vjp(script(through_list), (_layers(rng), x))
    check_vjp(script(through_tuple), ((_dense(rng, 3, 3), _dense(rng, 3, 2)), x))
    stack = Stack([_dense(rng, 3, 3) for _ in range(3)])
    check_vjp(script(through_stack), (stack, x))
    check_vjp(script(passes_lists), (stack, [_dense(rng, 3, 3) for _ in range(3)], x))


def test_list_gradients_are_lists_of_objects():
    rng = np.random.default_rng(5)
    layers, x = _layers(rng), rng.standard_normal((2, 3))
    _, backward = S.vjp(script(through_list), layers, x)
    g, gx = backward(np.ones((2, 2)))
    assert type(g) is list and len(g) == 3 and all(type(item) is Dense for item in g)
    assert [item.W.shape for item in g] == [(3, 4), (4, 2), (2, 2)] and gx.shape == x.shape
    pair = (_dense(rng, 3, 3), _dense(rng, 3, 2))
    _, backward = S.vjp(script(through_tuple), pair, x)
    g = backward(np.ones((2, 2)))[0]
    assert type(g) is tuple and type(g[1]) is Dense and g[1].b.shape == (2,)
    stack = Stack([_dense(rng, 3, 3) for _ in range(3)])
    _, backward = S.vjp(script(through_stack), stack, x)
    g = backward(np.ones((2, 3)))[0]
    assert type(g) is Stack and type(g.layers) is list and g.layers[2].W.shape == (3, 3)


def first_only(layers: List[Dense], x: Tensor) -> Tensor:
    return layers[0].forward(x).sum()


def test_items_not_read_get_blank_gradients():
    rng = np.random.default_rng(6)
    layers, x = [_dense(rng, 3, 3), _dense(rng, 3, 3)], rng.standard_normal((2, 3))
    check_vjp(script(first_only), (layers, x))  # an unset attribute must have zero derivative
    g = S.grad(script(first_only))(layers, x)
    assert len(g) == 2 and hasattr(g[0], "W") and not hasattr(g[1], "W")


def only_counts(layers: List[Dense], x: Tensor) -> Tensor:
    return x * len(layers)


def test_another_length_compiles_again():
    rng = np.random.default_rng(7)
    x = rng.standard_normal((2, 3))
    f = script(through_list)
    square = [_dense(rng, 3, 3) for _ in range(4)]
    for n in (2, 3, 2, 4):
        assert_same(f(square[:n], x), through_list(square[:n], x))
    assert_same(f(tuple(square[:3]), x), through_list(square[:3], x))  # a tuple now
    counts = script(only_counts)  # reads no attribute: the length is still checked
    for n in (1, 3):
        assert_same(counts(square[:n], x), x * n)
    stack = Stack(square[:2])
    g = script(through_stack)
    assert_same(g(stack, x), through_stack(stack, x))
    stack.layers.append(square[2])  # the attribute's list grew in place
    assert_same(g(stack, x), through_stack(stack, x))


# -- grad -----------------------------------------------------------------------------------------
def loss(model: Model, xs: Tensor, target: Tensor) -> Tensor:
    return ((model.forward(xs) - target) ** 2).sum()


def list_loss(layers: List[Dense], x: Tensor) -> Tensor:
    return (through_list(layers, x) ** 2).sum()


def test_grad_gives_objects_as_value_and_grad_does():
    rng = np.random.default_rng(8)
    model = Model(_cell(rng, 3, 4), _dense(rng, 4, 2))
    xs, target = rng.standard_normal((3, 2, 3)), rng.standard_normal((2, 2))
    f = script(loss)
    g = S.grad(f)(model, xs, target)
    _, want = S.value_and_grad(f)(model, xs, target)
    assert type(g) is Model and type(g.cell) is RNNCell
    for got, expected in ((g.cell.Wx, want.cell.Wx), (g.head.b, want.head.b)):
        assert_same(got, expected)
    g_model, g_xs = S.grad(f, argnums=(0, 1))(model, xs, target)
    assert_same(g_model.head.W, want.head.W) and g_xs.shape == xs.shape
    layers, x = _layers(rng), rng.standard_normal((2, 3))
    g = S.grad(script(list_loss))(layers, x)
    eps, moved = 1e-6, copy.deepcopy(layers)
    moved[1].W[0, 1] += eps
    fd = (list_loss(moved, x) - list_loss(layers, x)) / eps
    np.testing.assert_allclose(g[1].W[0, 1], fd, rtol=1e-4)


def test_grad_of_grad_is_refused():
    rng = np.random.default_rng(9)
    with pytest.raises(ScriptError, match="cannot be differentiated again"):
        S.grad(S.grad(script(list_loss)))(_layers(rng), rng.standard_normal((2, 3)))


def test_grad_needs_a_scalar():
    rng = np.random.default_rng(10)
    with pytest.raises(ScriptError, match="grad needs a function with one scalar output"):
        S.grad(script(through_list))(_layers(rng), rng.standard_normal((2, 3)))


# -- refusals -------------------------------------------------------------------------------------
class Caching(Dense):
    def forward(self, x, scale: float = 1.0):
        self.cache = x
        return x * scale


def assigns_in_method(layer: Caching, x: Tensor) -> Tensor:
    return layer.forward(x)


def list_as_value(layers: List[Dense], x: Tensor) -> Tensor:
    return layers


def list_method(layers: List[Dense], x: Tensor) -> Tensor:
    layers.append(layers[0])
    return x


def out_of_range(layers: List[Dense], x: Tensor) -> Tensor:
    return layers[5].forward(x)


class WithClassMethod(Dense):
    @classmethod
    def make(cls, x):
        return x


def class_method(layer: WithClassMethod, x: Tensor) -> Tensor:
    return layer.make(x)


class Mixed:
    def __init__(self, layer):
        self.items = [layer, np.ones(2)]


def mixed_list(m: Mixed, x: Tensor) -> Tensor:
    return m.items[1] + x


def helper_one(layer: Dense, x: Tensor) -> Tensor:
    return layer.forward(x)


def passes_list_for_one(layers: List[Dense], x: Tensor) -> Tensor:
    return helper_one(layers, x)


def passes_one_for_list(layer: Dense, x: Tensor) -> Tensor:
    return helper_over(layer, x)


_D = Dense(np.eye(2), np.zeros(2))


def _caching(**attributes):
    layer = Caching(np.eye(2), np.zeros(2))
    vars(layer).update(attributes)
    return layer


@pytest.mark.parametrize("fn, arg, match, line", [
    (assigns_in_method, _caching(cache=_D),  # its layout: assigned before the call only
     r"cannot assign 'self.cache': it holds a Dense object", "self.cache = x"),
    (list_as_value, [_D], r"'layers' is a list of Dense objects: scripted code iterates",
     "return layers"),
    (list_method, [_D], r"'layers' is a list of Dense objects: it has no attribute 'append'",
     "layers.append(layers[0])"),
    (out_of_range, [_D, _D], r"index 5 out of range: 'layers' has 2 items",
     "return layers[5].forward(x)"),
    (class_method, WithClassMethod(np.eye(2), np.zeros(2)),
     r"calling the class method 'make' of 'layer'", "return layer.make(x)"),
    (mixed_list, Mixed(_D), r"'m.items' is a list mixing plain objects and other values",
     "return m.items[1] + x"),
    (passes_list_for_one, [_D], r"helper_one\(\) argument 'layer' is annotated with a plain class",
     "return helper_one(layers, x)"),
    (passes_one_for_list, _D, r"helper_over\(\) argument 'layers' is annotated with a list",
     "return helper_over(layer, x)"),
])
def test_refusals_point_at_the_line(fn, arg, match, line):
    with pytest.raises(ScriptError, match=match) as info:
        script(fn)(arg, np.ones((1, 2)))
    assert line in str(info.value)


def test_a_non_list_for_a_list_parameter():
    with pytest.raises(SignatureError, match="annotated with a list or tuple of a plain class"):
        script(through_list)(_D, np.ones((1, 2)))
    with pytest.raises(SignatureError, match="annotated with a list or tuple of a plain class"):
        script(through_list)([_D, np.eye(2)], np.ones((1, 2)))


# -- a method taking *args: a layer's __call__ forwarding to its forward ----------------------
class Forwarding:
    """PaddlePaddle's test/rnn/rnn_numpy.py LayerMixin: ``__call__(self, *args)`` calls
    ``self.forward(*args)``."""

    def __init__(self, W):
        self.W = W

    def __call__(self, *args):
        return self.forward(*args)

    def forward(self, x, h):
        return np.tanh(x @ self.W + h)


def calls_through_varargs(layer: Forwarding, xs: Tensor, h: Tensor):
    for t in range(xs.shape[0]):
        h = layer(xs[t], h)
    return h


@pytest.mark.parametrize("dtype", ["float32", "float64"])
def test_a_method_taking_varargs(dtype):
    r = np.random.default_rng(9)
    layer = Forwarding((0.3 * r.standard_normal((3, 3))).astype(dtype))
    xs, h = r.standard_normal((4, 2, 3)).astype(dtype), r.standard_normal((2, 3)).astype(dtype)
    assert_same_at(script(calls_through_varargs)(layer, xs, h),
                   calls_through_varargs(layer, xs, h), dtype)
