"""Lists of plain objects indexed by a loop's variable (``self.layers[i]`` in ``for i in
range(len(self.layers))``, ``layers[len(layers) - 1 - i]``, ``layers[i - 1]`` in ``enumerate``)
and ``zip`` of a list of objects with a shorter list (stopping at the shorter, as Python's zip):
compiled equals plain Python in float32 and float64, gradients equal finite differences, a
run-time index is a ScriptError at the user's line, and a constant index out of range is too."""

from typing import List

import numpy as np
import pytest

from script import ScriptError, Tensor, script
from tests.gradcheck import check_vjp
from tests.helpers import assert_same_at


class Dense:
    def __init__(self, W, b):
        self.W = W
        self.b = b

    def forward(self, x):
        return np.tanh(x @ self.W + self.b)


def _dense(rng, n_in, n_out, dtype="float64"):
    return Dense(rng.standard_normal((n_in, n_out)).astype(dtype) * 0.5,
                 rng.standard_normal(n_out).astype(dtype))


def _layers(rng, dtype="float64"):
    """Layers of different shapes (3 -> 4 -> 2 -> 2): each item's attributes are its own."""
    return [_dense(rng, 3, 4, dtype), _dense(rng, 4, 2, dtype), _dense(rng, 2, 2, dtype)]


# -- indexing by a loop's variable ----------------------------------------------------------------
def by_range(layers: List[Dense], x: Tensor) -> Tensor:
    for i in range(len(layers)):
        x = layers[i].forward(x)
    return x


def by_previous(layers: List[Dense], x: Tensor) -> Tensor:
    for i, layer in enumerate(layers):
        y = layer.forward(x)
        if i > 0:
            y = y + layers[i - 1].b.sum()
        x = y
    return x + layers[-1].b


def square_backwards(layers: List[Dense], x: Tensor) -> Tensor:
    n = len(layers)
    for i in range(n):
        j = n - 1 - i
        x = layers[j].forward(x) * (i + 1)
    for i in reversed(range(len(layers))):
        x = x + layers[i].b
    for i in range(len(layers) - 1, -1, -1):
        x = x @ layers[i].W
    return x


def listed(layers: List[Dense], x: Tensor) -> Tensor:
    outs = [layers[i].forward(x) for i in range(len(layers))]
    return outs[0] + outs[-1] * 2.0


def nested(layers: List[Dense], xs: Tensor) -> Tensor:
    h = xs[0] * 0.0
    for t in range(xs.shape[0]):
        x = xs[t]
        for i in range(len(layers)):
            x = layers[i].forward(x + h)
        h = x
    return h


class Block:
    def __init__(self, cells):
        self.cells = cells


def nested_lists(blocks: List[Block], x: Tensor) -> Tensor:
    for i in range(len(blocks)):
        for j in range(len(blocks[i].cells)):
            x = blocks[i].cells[j].forward(x) + blocks[i].cells[-1 - j].b
    return x


@pytest.mark.parametrize("dtype", ["float32", "float64"])
def test_indexing_by_loop_variable_compiles_like_python(dtype):
    rng = np.random.default_rng(0)
    x = rng.standard_normal((2, 3)).astype(dtype)
    layers = _layers(rng, dtype)
    assert_same_at(script(by_range)(layers, x), by_range(layers, x))
    assert_same_at(script(by_previous)(layers, x), by_previous(layers, x))
    square = [_dense(rng, 3, 3, dtype) for _ in range(3)]
    for f in (square_backwards, listed):
        assert_same_at(script(f)(square, x), f(square, x))
    xs = rng.standard_normal((4, 2, 3)).astype(dtype)
    assert_same_at(script(nested)(square, xs), nested(square, xs))
    blocks = [Block(square[:2]), Block(square[1:])]
    assert_same_at(script(nested_lists)(blocks, x), nested_lists(blocks, x))


def test_indexing_by_loop_variable_gradients_match_finite_differences():
    rng = np.random.default_rng(1)
    x = rng.standard_normal((2, 3))
    check_vjp(script(by_range), (_layers(rng), x))
    check_vjp(script(by_previous), (_layers(rng), x))
    square = [_dense(rng, 3, 3) for _ in range(3)]
    check_vjp(script(square_backwards), (square, x))
    check_vjp(script(nested), (square, rng.standard_normal((3, 2, 3))))
    blocks = [Block([_dense(rng, 3, 3) for _ in range(n)]) for n in (2, 3)]
    check_vjp(script(nested_lists), (blocks, x))


def test_another_length_unrolls_again():
    rng = np.random.default_rng(2)
    square, x = [_dense(rng, 3, 3) for _ in range(4)], rng.standard_normal((2, 3))
    f = script(square_backwards)
    for n in (2, 4, 1, 3):
        assert_same_at(f(square[:n], x), square_backwards(square[:n], x))


# -- a multi-layer numpy RNN ----------------------------------------------------------------------
# In the style of the "RNN from scratch in numpy" tutorials' stacked RNNs (a list of layer objects
# holding weight arrays as attributes, forward and backward passes indexing `self.layers[i]` in
# range loops, the backward pass walking the layers in reverse with cached activations).
class RNNLayer:
    def __init__(self, Wx, Wh, b):
        self.Wx, self.Wh, self.b = Wx, Wh, b

    def step(self, x, h_prev):
        return np.tanh(x @ self.Wx + h_prev @ self.Wh + self.b)

    def step_backward(self, dh, x, h_prev, h):
        da = dh * (1.0 - h * h)
        return da @ self.Wx.T, da @ self.Wh.T, x.T @ da, h_prev.T @ da, da.sum(axis=0)


class StackedRNN:
    def __init__(self, layers):
        self.layers = layers

    def forward(self, xs):
        hs = [np.zeros((xs.shape[1], self.layers[i].Wh.shape[0]), dtype=xs.dtype)
              for i in range(len(self.layers))]
        for t in range(xs.shape[0]):
            x = xs[t]
            for i in range(len(self.layers)):
                hs[i] = self.layers[i].step(x, hs[i])
                x = hs[i]
        return hs[-1]

    def last_step_backward(self, x0, dh_top):
        """One time step's backward through the stack from zero states: the layers walked in
        reverse, each input being the layer below's output."""
        inputs, outputs = [x0], []
        for i in range(len(self.layers)):
            h0 = np.zeros((x0.shape[0], self.layers[i].Wh.shape[0]), dtype=x0.dtype)
            outputs.append(self.layers[i].step(inputs[i], h0))
            inputs.append(outputs[i])
        dh, total = dh_top, 0.0
        for i in range(len(self.layers) - 1, -1, -1):
            h0 = np.zeros((x0.shape[0], self.layers[i].Wh.shape[0]), dtype=x0.dtype)
            dh, _, dWx, _, db = self.layers[i].step_backward(dh, inputs[i], h0, outputs[i])
            total = total + (dWx * dWx).sum() + db.sum()
        return dh, total


def rnn_loss(model: StackedRNN, xs: Tensor, target: Tensor) -> Tensor:
    return ((model.forward(xs) - target) ** 2).sum()


def rnn_backward(model: StackedRNN, x0: Tensor, dh: Tensor):
    return model.last_step_backward(x0, dh)


def _rnn(rng, sizes, dtype="float64"):
    return StackedRNN([RNNLayer(rng.standard_normal((n_in, n_out)).astype(dtype) * 0.4,
                                rng.standard_normal((n_out, n_out)).astype(dtype) * 0.4,
                                rng.standard_normal(n_out).astype(dtype) * 0.1)
                       for n_in, n_out in zip(sizes, sizes[1:])])


@pytest.mark.parametrize("dtype", ["float32", "float64"])
def test_stacked_rnn_compiles_like_python(dtype):
    rng = np.random.default_rng(3)
    model = _rnn(rng, (3, 5, 4, 2), dtype)
    xs = rng.standard_normal((6, 2, 3)).astype(dtype)
    target = rng.standard_normal((2, 2)).astype(dtype)
    assert_same_at(script(rnn_loss)(model, xs, target), rnn_loss(model, xs, target))
    x0, dh = xs[0], rng.standard_normal((2, 2)).astype(dtype)
    assert_same_at(script(rnn_backward)(model, x0, dh), rnn_backward(model, x0, dh))


def test_stacked_rnn_gradients_match_finite_differences():
    rng = np.random.default_rng(4)
    model = _rnn(rng, (3, 4, 4, 2))
    check_vjp(script(rnn_loss), (model, rng.standard_normal((4, 2, 3)),
                                 rng.standard_normal((2, 2))))
    check_vjp(script(rnn_backward), (model, rng.standard_normal((2, 3)),
                                     rng.standard_normal((2, 2))))


# -- zip with a shorter list ----------------------------------------------------------------------
def zip_objects_first(layers: List[Dense], xs: List[Tensor]) -> Tensor:
    total = xs[0] * 0.0
    for layer, x in zip(layers, xs):
        total = total + layer.forward(x)
    return total


def zip_objects_second(xs: List[Tensor], layers: List[Dense]) -> Tensor:
    total = xs[0] * 0.0
    for k, (x, layer) in enumerate(zip(xs, layers)):
        total = total + layer.forward(x) * (k + 1)
    return total


def zip_three(layers: List[Dense], xs: List[Tensor], scales: List[float]) -> Tensor:
    total = xs[0] * 0.0
    for layer, x, s in zip(layers, xs, scales):
        total = total + layer.forward(x) * s
    return total


def zip_fixed(layers: List[Dense], x: Tensor) -> Tensor:
    for layer, s in zip(layers, range(2)):
        x = layer.forward(x) * (s + 1)
    return x


def zip_two_lists(layers: List[Dense], others: List[Dense], x: Tensor) -> Tensor:
    for a, b in zip(layers, others):
        x = a.forward(x) + b.forward(x)
    return x


@pytest.mark.parametrize("dtype", ["float32", "float64"])
def test_zip_stops_at_the_shorter_like_python(dtype):
    rng = np.random.default_rng(5)
    layers = [_dense(rng, 3, 3, dtype) for _ in range(3)]
    f, g, h = script(zip_objects_first), script(zip_objects_second), script(zip_three)
    for n in (1, 2, 3, 5):  # shorter, as long and longer than the objects
        xs = [rng.standard_normal((2, 3)).astype(dtype) for _ in range(n)]
        assert_same_at(f(layers, xs), zip_objects_first(layers, xs))
        assert_same_at(g(xs, layers), zip_objects_second(xs, layers))
        for m in (1, 2, 4):
            scales = [0.5 * (k + 1) for k in range(m)]
            assert_same_at(h(layers, xs, scales), zip_three(layers, xs, scales))
    x = rng.standard_normal((2, 3)).astype(dtype)
    assert_same_at(script(zip_fixed)(layers, x), zip_fixed(layers, x))
    assert_same_at(script(zip_two_lists)(layers, layers[:2], x),
                   zip_two_lists(layers, layers[:2], x))


def test_zip_with_a_shorter_list_gradients_match_finite_differences():
    rng = np.random.default_rng(6)
    layers = [_dense(rng, 3, 3) for _ in range(3)]
    xs = [rng.standard_normal((2, 3)) for _ in range(2)]
    check_vjp(script(zip_objects_first), (layers, xs))
    check_vjp(script(zip_objects_second), (xs, layers))
    check_vjp(script(zip_three), (layers, xs + xs, [0.5, 2.0]))


# -- refusals and errors --------------------------------------------------------------------------
def runtime_index(layers: List[Dense], x: Tensor, k: int) -> Tensor:
    return layers[k].forward(x)


def runtime_count(layers: List[Dense], x: Tensor, n: int) -> Tensor:
    for i in range(n):
        x = layers[i].forward(x)
    return x


def past_the_end(layers: List[Dense], x: Tensor, k: int) -> Tensor:
    for i in range(len(layers)):
        x = layers[i + 1].forward(x)
    return x


@pytest.mark.parametrize("fn, match, line", [
    (runtime_index, r"'layers' \(a list of Dense objects\) is indexed with 'k', an int known "
                    r"only when the function runs.*for i in range\(len\(layers\)\)",
     "return layers[k].forward(x)"),
    (runtime_count, r"is indexed with 'i', an int known only when the function runs",
     "x = layers[i].forward(x)"),
    (past_the_end, r"index 2 out of range: 'layers' has 2 items",
     "x = layers[i + 1].forward(x)"),
])
def test_refusals_point_at_the_line(fn, match, line):
    d = Dense(np.eye(2), np.zeros(2))
    with pytest.raises(ScriptError, match=match) as info:
        script(fn)([d, d], np.ones((1, 2)), 1)
    assert line in str(info.value)

