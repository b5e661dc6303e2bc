"""``**kwargs`` in functions the compiled code calls (read by name, passed on) and ``**`` of a
dict literal in calls: compiled equals plain numpy, gradients equal finite differences; a
function compiled for one set of keyword names and called with another compiles again; what
stays unsupported is a ScriptError at the user's line."""

from typing import Dict

import numpy as np
import pytest

from script import ScriptError, Tensor, script
from tests.gradcheck import check_vjp
from tests.helpers import assert_same

# as d2l's framework aliases write them
reshape = lambda x, *args, **kwargs: x.reshape(*args, **kwargs)  # noqa: E731
reduce_sum = lambda x, *args, **kwargs: x.sum(*args, **kwargs)  # noqa: E731


def affine(x, W, scale=1.0, **kwargs):
    out = x @ W * scale
    if "shift" in kwargs:
        out = out + kwargs["shift"]
    return np.tanh(out) * kwargs.get("gain", 1.0) + len(kwargs)


def passes_on(x, W, **options):
    return affine(x, W, **options)


def layer(x: Tensor, W: Tensor) -> Tensor:
    a = affine(x, W)
    b = affine(x, W, scale=0.5, shift=x[:, :1], gain=2.0)
    c = passes_on(x, W, gain=3.0)
    d = affine(x, W, **{"shift": 1.0, "scale": 2.0})
    return a + b + c + d


def aliases(Y: Tensor) -> Tensor:
    return reduce_sum(reshape(Y, (-1, 2)), axis=0, keepdims=True) + reduce_sum(Y)


class Layer:
    def __init__(self, W):
        self.W = W

    def __call__(self, x, **kwargs):
        return affine(x, self.W, **kwargs)


def method(obj: Layer, x: Tensor) -> Tensor:
    return obj(x, gain=0.5) + obj(x)


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_kwargs_read_by_name_and_passed_on(dtype):
    rng = np.random.default_rng(0)
    x, W = rng.standard_normal((3, 4)).astype(dtype), rng.standard_normal((4, 4)).astype(dtype)
    assert_same(script(layer)(x, W), layer(x, W), rtol=1e-5)
    assert_same(script(aliases)(x), aliases(x), rtol=1e-5)
    assert_same(script(method)(Layer(W), x), method(Layer(W), x), rtol=1e-5)


def test_kwargs_gradients():
    rng = np.random.default_rng(1)
    x, W = rng.standard_normal((3, 4)), rng.standard_normal((4, 4)) * 0.5
    check_vjp(script(layer), (x, W))
    check_vjp(script(method), (Layer(W), x))


def reads_missing(x: Tensor) -> Tensor:
    return affine_missing(x, scale=2.0)


def affine_missing(x, **kwargs):
    return x * kwargs["scale"] + kwargs["shift"]


def stores_kwargs(x: Tensor):
    return keeps(x, a=1.0)


def keeps(x, **kwargs):
    return [kwargs, x]


def spreads_runtime_dict(x: Tensor, opts: Dict[str, float]) -> Tensor:
    return affine(x, x, **opts)


def takes_kwargs(x: Tensor, **kwargs) -> Tensor:
    return x


@pytest.mark.parametrize("fn, args, message", [
    (reads_missing, (np.ones(2),), "KeyError: 'shift'"),
    (stores_kwargs, (np.ones(2),), "using \\*\\*kwargs as a value"),
    (spreads_runtime_dict, (np.ones((2, 2)), {"scale": 1.0}), "known only when the code runs"),
    (takes_kwargs, (np.ones(2),), "not supported in the function scripted itself"),
])
def test_what_stays_unsupported_is_a_script_error(fn, args, message):
    with pytest.raises(ScriptError, match=message):
        script(fn)(*args)


def generator_forward(x, model, **kwargs):  # NeuralTalk's LSTMGenerator.forward(Xi, model, ...)
    ids = []  # an empty literal typed from its use: the function is compiled again for it
    ids.append(kwargs.get("k", 1))
    return np.tanh(model["W"] @ x) * kwargs.get("scale", 1.0) * len(ids) + ids[0]


def calls_generator(x: Tensor, model: Dict[str, Tensor]) -> Tensor:
    return generator_forward(x, model, scale=2.0, k=3) + generator_forward(x, model)


@pytest.mark.parametrize("dtype", ["float32", "float64"])
def test_a_callee_with_kwargs_types_its_parameters_from_the_call(dtype):
    """A dict passed to an unannotated parameter of a function taking ``**kwargs`` is a dict
    there (it was typed as an array); an empty literal retyped inside it keeps the call's
    keyword names (its second compilation refused ``**kwargs``)."""
    rng = np.random.default_rng(3)
    x = rng.standard_normal(3).astype(dtype)
    model = {"W": rng.standard_normal((3, 3)).astype(dtype)}
    assert_same(script(calls_generator)(x, model), calls_generator(x, model))
