"""Int arguments that size arrays (and bool arguments that decide an ``if``) are part of the call
signature by value: the specialization compiles them in (static shapes, the branch taken), a new
value compiles a new specialization, and an int that only counts loop trips or enters arithmetic
stays keyed by its type, unless it equals an array argument's axis or a list argument's length:
then it is compiled in too."""

from typing import Final, List, Tuple

import numpy as np
import pytest

from script import Module, Parameter, Tensor, freeze, script, vjp
from script.frontend.signature import call_key
from tests.gradcheck import check_vjp


def harvest(x: Tensor, n: int, W: Tensor) -> Tensor:
    states = np.zeros((x.shape[0], n))
    for t in range(1, x.shape[0]):
        states[t, :] = np.tanh(W @ states[t - 1] + x[t, 0])
    return states


def steps(h: Tensor, W: Tensor, T: int) -> Tensor:
    for _ in range(T):
        h = np.tanh(W @ h)
    return h * T


def _sized(n: int) -> Tensor:
    return np.ones(2 * n + 1)


def through_callee(x: Tensor, n: int) -> Tensor:
    return _sized(n) * x[0]


def tiled(x: Tensor, shape: Tuple[int, int], reps: int) -> Tensor:
    return np.reshape(x, shape)[:, :1] + np.tile(np.arange(reps), 2)


def sequence(x: Tensor, seq_length: int, hidden: int) -> Tensor:
    hs = np.zeros((seq_length, hidden))
    h = np.zeros(hidden)
    for t in range(seq_length):
        h = np.tanh(h + x[t])
        hs[t] = h
    return hs


def _weights(n, seed=0):
    rng = np.random.default_rng(seed)
    return rng.standard_normal((7, 1)), 0.3 * rng.standard_normal((n, n))


def _tensor_types(graph):
    return [v.type for n in graph.walk() for v in n.outputs if v.type.__class__.__name__ ==
            "TensorType"]


def test_an_int_that_sizes_an_array_gives_a_static_shape():
    f = script(harvest)
    x, W = _weights(4)
    graph = f.graph_for(x, 4, W)
    assert all(t.shape is not None and None not in t.shape for t in _tensor_types(graph))
    assert any(t.shape == (7, 4) for t in _tensor_types(graph))
    assert f.definition.static_ints == (1,)


def test_each_value_compiles_once_and_runs_right():
    f = script(harvest)
    for n in (3, 5, 3, 5):
        x, W = _weights(n, seed=n)
        np.testing.assert_allclose(f(x, n, W), harvest(x, n, W), rtol=1e-12)
    assert f.compiled_signatures == 2


def test_a_trip_count_does_not_specialize():
    f = script(steps)
    h, W = np.ones(4), 0.4 * np.eye(4)
    for T in (1, 2, 5, 9):
        np.testing.assert_allclose(f(h, W, T), steps(h, W, T), rtol=1e-12)
    assert f.compiled_signatures == 1
    assert f.definition.static_ints == ()


def scan(x: Tensor, h: Tensor, W: Tensor, n: int) -> Tensor:
    for t in range(n):
        h = np.tanh(x[t] + h @ W)
    return h


def scan_list(xs: List[Tensor], h: Tensor, n: int) -> Tensor:
    for t in range(n):
        h = np.tanh(xs[t] * h + 0.5)
    return h


def _loops(graph):
    return [node for node in graph.walk() if node.kind == "prim::Loop"]


def test_a_trip_count_equal_to_an_axis_is_compiled_in():
    f = script(scan)
    rng = np.random.default_rng(1)
    x, h, W = rng.standard_normal((6, 3, 4)), rng.standard_normal((3, 4)), \
        0.4 * rng.standard_normal((4, 4))
    assert f.definition.static_ints == () and f.definition.trip_ints == (3,)
    for n in (6, 2, 0, 6, 5, 3, 4):  # 6, 3 and 4 are axes of the arguments: compiled in
        np.testing.assert_allclose(f(x, h, W, n), scan(x, h, W, n), rtol=1e-12)
    assert f.compiled_signatures == 4  # 6, 3, 4, and one for every other value
    assert not f.graph_for(x, h, W, 6).inputs[3].uses  # 6 compiled in (the loop unrolled)
    assert call_key((x, h, W, 6), (), (3,)) != call_key((x, h, W, 2), (), (3,))
    assert call_key((x, h, W, 2), (), (3,)) == call_key((x, h, W, 5), (), (3,))
    loop, = _loops(f.graph_for(x, h, W, 2))
    assert loop.inputs[0] is f.graph_for(x, h, W, 2).inputs[3]  # the count is read per call
    with pytest.raises(IndexError):  # a count past the sequence fails as numpy's read does
        f(x[:5], h, W, 6)


def test_a_trip_count_equal_to_a_list_length_is_compiled_in():
    f = script(scan_list)
    xs, h = [np.full(3, 0.1 * k) for k in range(5)], np.ones(3)
    for n in (5, 1, 5, 2):
        np.testing.assert_allclose(f(xs, h, n), scan_list(xs, h, n), rtol=1e-12)
    assert f.compiled_signatures == 2
    assert not f.graph_for(xs, h, 5).inputs[2].uses
    assert f.graph_for(xs, h, 2).inputs[2].uses


def test_gradients_of_a_trip_count_compiled_in():
    rng = np.random.default_rng(2)
    x, h, W = rng.standard_normal((5, 2, 3)), rng.standard_normal((2, 3)), \
        0.4 * rng.standard_normal((3, 3))
    f = script(scan)
    for n in (5, 4):  # compiled in, read per call
        check_vjp(f, (x, h, W, n), argnums=(0, 1, 2))


def test_an_int_that_sizes_an_array_in_a_callee_through_arithmetic():
    f = script(through_callee)
    x = np.arange(3.0) + 1
    for n in (2, 4):
        got = f(x, n)
        np.testing.assert_allclose(got, through_callee(x, n))
        assert f.graph_for(x, n).outputs[0].type.shape == (2 * n + 1,)
    assert f.compiled_signatures == 2


def test_a_tuple_shape_and_tile_reps():
    f = script(tiled)
    x = np.arange(6.0)
    for shape, reps in (((2, 3), 3), ((3, 2), 1), ((6, 1), 1), ((2, 3), 3)):
        np.testing.assert_allclose(f(x, shape, reps), tiled(x, shape, reps))
        out = f.graph_for(x, shape, reps).outputs[0].type
        assert out.shape == (shape[0], 2 * reps)
    assert f.compiled_signatures == 3


def test_a_trip_count_that_also_sizes_an_array_specializes():
    # the array it sizes would key the call by its shape if it were passed in: the int does too
    f = script(sequence)
    x = np.random.default_rng(1).standard_normal((9, 3))
    for T in (4, 6, 4):
        np.testing.assert_allclose(f(x, T, 3), sequence(x, T, 3), rtol=1e-12)
        assert f.graph_for(x, T, 3).outputs[0].type.shape == (T, 3)
    assert f.compiled_signatures == 2


def test_other_int_values_stay_correct():
    f = script(harvest)
    x, W = _weights(3)
    for n in (np.int64(3), np.int32(3), 3):
        np.testing.assert_allclose(f(x, n, W), harvest(x, 3, W), rtol=1e-12)
        assert f.graph_for(x, n, W).outputs[0].type.shape == (7, 3)
    assert call_key((x, 3, W), (1,)) != call_key((x, True, W), (1,))


def test_gradients_for_each_value():
    f = script(harvest)
    for n in (2, 3):
        x, W = _weights(n, seed=n)
        out, backward = vjp(f, x, n, W)
        np.testing.assert_allclose(out, harvest(x, n, W), rtol=1e-12)
        g = np.ones_like(out)
        dW = backward(g)[2]
        eps = 1e-6
        E = np.zeros_like(W)
        E[0, 1] = eps
        fd = (np.sum(harvest(x, n, W + E)) - np.sum(harvest(x, n, W - E))) / (2 * eps)
        assert dW.shape == (n, n)
        np.testing.assert_allclose(dW[0, 1], fd, rtol=1e-5)


class Reservoir(Module):
    hidden: Final[int]

    def __init__(self, hidden: int):
        super().__init__()
        self.hidden = hidden
        self.W = Parameter(0.3 * np.random.default_rng(2).standard_normal((hidden, hidden)))

    def forward(self, x: Tensor, width: int) -> Tensor:
        out = np.zeros((x.shape[0], width))
        h = np.zeros(self.hidden)
        for t in range(x.shape[0]):
            h = np.tanh(self.W @ h + x[t])
            out[t] = h[:width]
        return out


def _reservoir_eager(m, x, width):
    out = np.zeros((x.shape[0], width))
    h = np.zeros(m.hidden)
    for t in range(x.shape[0]):
        h = np.tanh(m.W.data @ h + x[t])
        out[t] = h[:width]
    return out


@pytest.mark.parametrize("frozen", [False, True])
def test_module_methods_and_freeze(frozen):
    m = Reservoir(5)
    compiled = script(m)
    compiled = freeze(compiled) if frozen else compiled
    x = np.random.default_rng(3).standard_normal((4, 5))
    for width in (2, 3, 2):
        np.testing.assert_allclose(compiled(x, width), _reservoir_eager(m, x, width), rtol=1e-12)
        assert compiled.forward.graph_for(x, width).outputs[0].type.shape == (4, width)


def teacher(x: Tensor, W: Tensor, forcing: bool, scale: bool) -> Tensor:
    h = np.zeros(W.shape[0])
    for t in range(x.shape[0]):
        if forcing and not scale:
            h = np.tanh(W @ h + x[t])
        else:
            h = np.tanh(W @ h) + x[t] * scale
    return h


def test_a_bool_that_decides_an_if_specializes_and_its_branch_folds():
    f = script(teacher)
    rng = np.random.default_rng(4)
    x, W = rng.standard_normal((5, 3)), 0.5 * rng.standard_normal((3, 3))
    assert f.definition.static_ints == (2, 3)
    for forcing, scale in ((True, False), (False, False), (True, True), (True, False)):
        np.testing.assert_allclose(f(x, W, forcing, scale), teacher(x, W, forcing, scale),
                                   rtol=1e-12)
        assert not any(n.kind == "prim::If" for n in f.graph_for(x, W, forcing, scale).walk())
    assert f.compiled_signatures == 3


def scaled(x: Tensor, flag: bool, n: int) -> Tensor:
    return x * flag + n


def test_a_bool_or_int_only_in_arithmetic_stays_keyed_by_type():
    f = script(scaled)
    x = np.arange(3.0)
    for flag, n in ((True, 1), (False, 2), (True, 3)):
        np.testing.assert_allclose(f(x, flag, n), scaled(x, flag, n))
    assert f.compiled_signatures == 1
    assert f.definition.static_ints == ()
