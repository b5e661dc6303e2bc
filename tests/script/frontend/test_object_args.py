"""Plain Python objects as arguments (``p: Params``): the attributes read are specialized per
call, a changed shape or layout compiles again, gradients come back as objects of the same class
and equal finite differences, and what is not supported is a ScriptError at the user's line."""

import copy

import numpy as np
import pytest

import script as S
from script import ScriptError, SignatureError, Tensor, script
from script.frontend.compiler import compile_function
from tests.gradcheck import check_vjp
from tests.helpers import assert_same


class Param:
    """The "LSTM from scratch" tutorials' parameter: a value and its gradient."""

    def __init__(self, value):
        self.v = value
        self.d = np.zeros_like(value)


class Parameters:
    def __init__(self, rng, n_in, n_hidden):
        z = n_in + n_hidden
        self.W_f = Param(rng.standard_normal((n_hidden, z)))
        self.b_f = Param(rng.standard_normal((n_hidden, 1)))
        self.W_v = Param(rng.standard_normal((n_in, n_hidden)))
        self.scale = 0.5
        self.steps = 2


class Layer:
    def __init__(self, U, W):
        self.U = U
        self.W = W


def sigmoid_step(p: Parameters, z: Tensor) -> Tensor:
    f = 1 / (1 + np.exp(-(np.dot(p.W_f.v, z) + p.b_f.v)))
    for _ in range(p.steps):
        f = f * p.scale
    return np.dot(p.W_v.v, f)


def rnn(layer: Layer, xs: Tensor, h: Tensor) -> Tensor:
    for t in range(xs.shape[0]):
        h = np.tanh(layer.U @ xs[t] + layer.W @ h)
    return h


def check(fn, *args):
    got = script(fn)(*copy.deepcopy(args))
    assert_same(got, fn(*copy.deepcopy(args)))
    return got


def params(n_in=3, n_hidden=4, seed=0):
    return Parameters(np.random.default_rng(seed), n_in, n_hidden)


def test_nested_attributes_compile_like_python():
    z = np.random.default_rng(1).standard_normal((7, 1))
    check(sigmoid_step, params(), z)


def test_a_layer_object_in_a_loop():
    rng = np.random.default_rng(2)
    layer = Layer(rng.standard_normal((4, 3)), rng.standard_normal((4, 4)))
    check(rnn, layer, rng.standard_normal((5, 3)), np.zeros(4))


def test_changed_attribute_shapes_specialize_again():
    f = script(sigmoid_step)
    rng = np.random.default_rng(3)
    p, z = params(3, 4), rng.standard_normal((7, 1))
    assert_same(f(p, z), sigmoid_step(p, z))
    p = params(5, 2, seed=4)
    z = rng.standard_normal((7, 1))
    assert_same(f(p, z), sigmoid_step(p, z))
    assert f.compiled_signatures == 2
    p.W_v.v = p.W_v.v.astype(np.float32)  # a dtype is part of the key too
    assert_same(f(p, z), sigmoid_step(p, z))
    assert f.compiled_signatures == 3


def test_number_attributes_are_read_per_call():
    f = script(sigmoid_step)
    p, z = params(), np.random.default_rng(5).standard_normal((7, 1))
    f(p, z)
    p.steps, p.scale = 4, 2.0
    assert_same(f(p, z), sigmoid_step(p, z))


def test_an_other_layout_compiles_again():
    def pick(h: Layer, x: Tensor) -> Tensor:
        return h.U * x
    f = script(pick)
    assert_same(f(Layer(np.ones(2), None), np.full(2, 3.0)), np.full(2, 3.0))
    assert_same(f(Layer(2, None), np.full(2, 3.0)), np.full(2, 6.0))  # an int now: recompiled
    assert_same(f(Layer(np.full(2, 2.0), None), np.ones(2)), np.full(2, 2.0))


def with_bias(h: Layer, x: Tensor) -> Tensor:
    y = h.U @ x
    if h.W is not None:
        y = y + h.W
    return y


def test_layouts_passed_in_turn_compile_once_each(monkeypatch):
    import script.runtime.function as function
    compiled = []
    monkeypatch.setattr(function, "compile_function",
                        lambda *a, **k: compiled.append(1) or compile_function(*a, **k))
    rng = np.random.default_rng(15)
    plain = Layer(rng.standard_normal((2, 3)), None)
    biased = Layer(rng.standard_normal((2, 3)), rng.standard_normal(2))
    f = script(with_bias)
    for _ in range(3):
        for layer in (plain, biased):
            x = rng.standard_normal(3)
            assert_same(f(layer, x), with_bias(layer, x))
    assert len(compiled) == 2 and f.compiled_signatures == 1


def test_in_place_changes_between_calls_are_seen():
    f = script(rnn)
    rng = np.random.default_rng(6)
    layer = Layer(rng.standard_normal((4, 3)), rng.standard_normal((4, 4)))
    xs = rng.standard_normal((3, 3))
    f(layer, xs, np.zeros(4))
    layer.U -= 0.1  # an optimizer step
    layer.W = layer.W * 2  # a rebinding
    assert_same(f(layer, xs, np.zeros(4)), rnn(layer, xs, np.zeros(4)))


def test_keyword_arguments_and_aliases():
    def aliased(h: Layer, x: Tensor) -> Tensor:
        layer = h
        return layer.U @ x + h.W
    rng = np.random.default_rng(7)
    h = Layer(rng.standard_normal((2, 3)), rng.standard_normal(2))
    x = rng.standard_normal(3)
    assert_same(script(aliased)(x=x, h=h), aliased(h, x))


def affine(w: Param, x: Tensor) -> Tensor:
    return w.v.T @ x


def two_layers(p: Parameters, q: Parameters, z: Tensor) -> Tensor:
    return affine(p.W_v, sigmoid_step(q, z)) + affine(q.W_v, sigmoid_step(p, z))


scripted_affine = script(affine)


def calls_scripted(p: Parameters, x: Tensor) -> Tensor:
    return scripted_affine(p.W_v, x)


def test_a_scripted_helper_takes_objects_too():
    p, x = params(), np.random.default_rng(16).standard_normal((3, 2))
    check(calls_scripted, p, x)
    check_vjp(script(calls_scripted), (p, x))


def test_helpers_take_objects_and_the_objects_they_hold():
    rng = np.random.default_rng(12)
    check(two_layers, params(seed=1), params(seed=2), rng.standard_normal((7, 1)))
    f = script(two_layers)
    f(params(seed=1), params(seed=2), rng.standard_normal((7, 1)))
    names = [v.name for v in f.graph.inputs]
    assert names.count("p.W_v.v") == 1 and "q.W_f.v" in names  # one input per attribute read
    check_vjp(f, (params(seed=1), params(seed=2), rng.standard_normal((7, 1))))


def unannotated_step(p, z):
    return sigmoid_step(p, z)


def test_example_inputs_make_an_unannotated_parameter_an_object():
    from script.frontend.infer_types import infer_annotations
    p, z = params(), np.random.default_rng(14).standard_normal((7, 1))
    f = script(unannotated_step, example_inputs=[(p, z)])
    assert_same(f(p, z), sigmoid_step(p, z))
    check_vjp(f, (p, z))
    assert infer_annotations(unannotated_step, [(p, z)]).startswith(
        "def unannotated_step(p: Parameters, z: Tensor)")
    with pytest.raises(ScriptError, match="a Parameters object in example 0 and a ndarray"):
        script(unannotated_step, example_inputs=[(p, z), (z, z)])(p, z)


# -- gradients ------------------------------------------------------------------------------------
def loss(p: Parameters, z: Tensor) -> Tensor:
    return (sigmoid_step(p, z) ** 2).sum()


def test_vjp_gives_an_object_of_the_same_class():
    p, z = params(), np.random.default_rng(8).standard_normal((7, 1))
    _, backward = S.vjp(script(loss), p, z)
    gp, gz = backward(np.ones(()))
    assert type(gp) is Parameters and type(gp.W_f) is Param
    assert gp.W_f.v.shape == p.W_f.v.shape and gz.shape == z.shape
    assert gp.steps is None and gp.scale is None  # not differentiable (an int, a Python float)
    assert not hasattr(gp.W_f, "d")  # not read: not set


def test_object_gradients_equal_finite_differences():
    check_vjp(script(loss), (params(), np.random.default_rng(9).standard_normal((7, 1))))
    rng = np.random.default_rng(10)
    layer = Layer(rng.standard_normal((4, 3)), rng.standard_normal((4, 4)))
    check_vjp(script(rnn), (layer, rng.standard_normal((3, 3)), rng.standard_normal(4)))


def test_argnums_and_value_and_grad():
    p, z = params(), np.random.default_rng(11).standard_normal((7, 1))
    f = script(loss)
    check_vjp(f, (p, z), argnums=(0,))
    _, backward = S.vjp(f, p, z, argnums=1)
    assert backward(np.ones(()))[0] is None
    value, g = S.value_and_grad(f)(p, z)
    _, backward = S.vjp(f, p, z)
    assert_same(g.W_f.v, backward(np.ones(()))[0].W_f.v)
    assert_same(value, loss(p, z))


class Stack:
    def __init__(self, rng):
        self.Ws = [rng.standard_normal((3, 3)), rng.standard_normal((3, 3))]
        self.bias = {"out": rng.standard_normal(3)}
        self.pair = (rng.standard_normal(3), 2)


def stacked(s: Stack, x: Tensor) -> Tensor:
    h = x
    for W in s.Ws:
        h = np.tanh(W @ h)
    return h + s.bias["out"] * s.pair[0] * s.pair[1]


def test_containers_held_by_an_object():
    rng = np.random.default_rng(13)
    s, x = Stack(rng), rng.standard_normal(3)
    check(stacked, s, x)
    check_vjp(script(stacked), (s, x))  # the list's and the dict's arrays
    _, backward = S.vjp(script(stacked), s, x)
    g = backward(np.ones(3))[0]
    eps, e0 = 1e-6, np.eye(3)[0]
    plus, minus = copy.deepcopy(s), copy.deepcopy(s)
    plus.pair, minus.pair = (s.pair[0] + eps * e0, 2), (s.pair[0] - eps * e0, 2)
    fd = (stacked(plus, x).sum() - stacked(minus, x).sum()) / (2 * eps)
    np.testing.assert_allclose(g.pair[0][0], fd, rtol=1e-6)  # the tuple's array
    assert g.pair[1] is None


def test_grad_gives_the_object_gradient():
    p, z = params(), np.random.default_rng(17).standard_normal((7, 1))
    g = S.grad(script(loss))(p, z)
    _, want = S.value_and_grad(script(loss))(p, z)
    assert type(g) is Parameters
    assert_same(g.W_f.v, want.W_f.v)
    with pytest.raises(ScriptError, match="cannot be differentiated again"):
        S.grad(S.grad(script(loss)))(p, z)


# -- refusals -------------------------------------------------------------------------------------
def assigns(h: Layer, x: Tensor) -> Tensor:
    h.U = h
    return x


def updates(h: Layer, x: Tensor) -> Tensor:
    h.U += x  # into the caller's array, which the function then reads (as updated)
    return h.U * x


def passes_on(h: Layer, x: Tensor) -> Tensor:
    return rnn(x, x, x)


def method_value(h: Layer, x: Tensor) -> Tensor:
    norm = h.norm
    return norm() + x


def calls_it(h: "Layer", x: Tensor) -> Tensor:  # a string annotation
    return h(x)


def missing(h: Layer, x: Tensor) -> Tensor:
    return h.V + x


def object_value(h: Layer, x: Tensor) -> Tensor:
    return h.U + x


def unannotated(h, x: Tensor) -> Tensor:
    return h.U + x


class WithMethod(Layer):
    def norm(self):
        return self.U


@pytest.mark.parametrize("fn, obj, match", [
    (assigns, Layer(np.ones(2), None), r"cannot assign the object argument 'h' to 'h.U'"),
    (passes_on, Layer(np.ones(2), None), r"argument 'layer' is annotated with a plain class"),
    (method_value, WithMethod(np.ones(2), None), r"the method 'h.norm' can only be called"),
    (calls_it, Layer(np.ones(2), None), r"calling the object argument 'h' \(its class has no "
                                        "__call__"),
    (missing, Layer(np.ones(2), None), r"'h' \(Layer object\) has no attribute 'V'"),
    (object_value, Layer(Layer(1, 2), None), r"'h.U' is a Layer object"),
    (unannotated, np.ones(2), r"annotate it with the object's class"),
])
def test_refusals_point_at_the_line(fn, obj, match):
    with pytest.raises(ScriptError, match=match) as info:
        script(fn)(obj, np.ones(2))
    assert __file__.rsplit("/", 1)[-1] in str(info.value)


def test_a_read_after_an_update_of_the_caller_s_array_sees_it():
    plain, compiled = Layer(np.ones(2), None), Layer(np.ones(2), None)
    held = compiled.U
    for _ in range(2):
        np.testing.assert_array_equal(script(updates)(compiled, np.full(2, 2.0)),
                                      updates(plain, np.full(2, 2.0)))
        assert compiled.U is held
        np.testing.assert_array_equal(compiled.U, plain.U)


def test_an_object_passed_to_an_unannotated_parameter_is_an_object_argument():
    layer = Layer(np.arange(2.0), None)
    np.testing.assert_array_equal(script(unannotated)(layer, np.ones(2)),
                                  unannotated(layer, np.ones(2)))


def test_a_non_object_for_an_object_parameter():
    with pytest.raises(SignatureError, match="annotated with a plain class.*got an array"):
        script(object_value)(np.ones(2), np.ones(2))


def test_the_graph_needs_a_call():
    with pytest.raises(ScriptError, match="compiles for the objects a call passes"):
        script(object_value).graph  # noqa: B018
    f = script(object_value)
    assert "h.U" in str(f.graph_for(Layer(np.ones(2), None), np.ones(2)))
