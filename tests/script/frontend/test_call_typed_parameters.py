"""Unannotated parameters typed by the calls (``script.runtime.call_types``): d2l's
``rnn(inputs, state, params)`` takes its state as a tuple and its weights as a list without
annotations; an int, a string, a dict passed the same way. A later call passing another type
widens the type (an int, then a float) or is refused where no type holds both."""

import numpy as np
import pytest

from script import ScriptError, SignatureError, script
from tests.gradcheck import check_vjp


def rnn(inputs, state, params):
    """d2l.ai's ``rnn`` (the function-style RNN from scratch), without annotations."""
    W_xh, W_hh, b_h, W_hq, b_q = params
    H, = state
    outputs = []
    for X in inputs:
        H = np.tanh(np.dot(X, W_xh) + np.dot(H, W_hh) + b_h)
        Y = np.dot(H, W_hq) + b_q
        outputs.append(Y)
    return np.concatenate(outputs, axis=0), (H,)


def scaled(x, n, opts, mode):
    y = x * n * opts["scale"]
    return np.tanh(y) if mode == "tanh" else y


class Net:
    def __init__(self, params):
        self.params = params

    def __call__(self, X, state):
        return rnn(X, state, self.params)


def _rnn_args(rng, T=4, B=2, V=5, H=3):
    params = [rng.standard_normal(s) * 0.5 for s in ((V, H), (H, H), (H,), (H, V), (V,))]
    return rng.standard_normal((T, B, V)), (np.zeros((B, H)),), params


def test_a_tuple_state_and_a_list_of_weights_without_annotations():
    args = _rnn_args(np.random.default_rng(0))
    f = script(rnn)
    (got, (h,)), (want, (want_h,)) = f(*args), rnn(*args)
    np.testing.assert_allclose(got, want, rtol=1e-13)
    np.testing.assert_allclose(h, want_h, rtol=1e-13)
    check_vjp(f, args)
    net = Net(args[2])
    np.testing.assert_allclose(script(net.__call__)(args[0], args[1])[0], want, rtol=1e-13)


def test_numbers_strings_and_dicts_and_a_widening_call():
    x = np.linspace(-1, 1, 4)
    f = script(scaled)
    for n, mode in [(3, "tanh"), (2.5, "tanh"), (3, "id")]:  # the int, then a float: floats
        np.testing.assert_allclose(f(x, n, {"scale": 0.5}, mode), scaled(x, n, {"scale": 0.5},
                                                                         mode), rtol=1e-15)
    with pytest.raises(SignatureError, match="argument 'n'"):
        f(x, x, {"scale": 0.5}, "tanh")  # a number, then an array: no type holds both


def with_state(x, state=None):
    if state is None:
        state = (x, x)
    h, c = state
    return h * c + x


def test_a_none_default_then_a_tuple_widens_to_an_optional_tuple():
    x = np.arange(3.0)
    f = script(with_state)
    for args in [(x,), (x, (x, 2 * x)), (x, None), (x,)]:
        np.testing.assert_array_equal(f(*args), with_state(*args))


def test_the_compiling_calls_arguments_are_not_kept():
    import gc
    import weakref
    args = _rnn_args(np.random.default_rng(2))
    f = script(rnn)
    f(*args)
    refs = [weakref.ref(args[1][0]), weakref.ref(args[2][0])]
    del args
    gc.collect()
    assert all(r() is None for r in refs)


class Layer:
    def __init__(self, scale):
        self.W = np.eye(3) * scale

    def forward(self, x):
        return np.tanh(x @ self.W)


def drive(layer, X):  # numpy-ml's test drivers: `def run(L1, X): ... L1.forward(X[:, :, t])`
    return [layer.forward(X[t]) for t in range(X.shape[0])]


def stack(layers, X):
    h = X[0]
    for layer in layers:
        h = layer.forward(h)
    return h


def test_a_plain_object_passed_to_an_unannotated_parameter_is_an_object_argument():
    X = np.random.default_rng(3).standard_normal((4, 2, 3))
    f = script(drive)
    for scale in (1.0, 0.5):
        for got, want in zip(f(Layer(scale), X), drive(Layer(scale), X)):
            np.testing.assert_allclose(got, want, rtol=1e-15)
    g = script(stack)
    layers = [Layer(1.0), Layer(0.5)]
    np.testing.assert_allclose(g(layers, X), stack(layers, X), rtol=1e-15)
    check_vjp(script(stack), (layers, X), argnums=(1,))
    with pytest.raises(SignatureError, match="argument 'layer'"):
        f(X, X)  # an array where the compiling call passed an object
    assert script(drive).graph_for(Layer(2.0), X) is not None  # the first call there too


def predict(x, P, F=1, Q=0, u=0, B=1, alpha=1.):  # filterpy's kalman predict (MIT)
    if np.isscalar(F):
        F = np.array(F)
    x = np.dot(F, x) + np.dot(B, u)
    P = (alpha * alpha) * np.dot(np.dot(F, P), F.T) + Q
    return x, P


def test_an_array_for_a_parameter_whose_default_is_a_number():
    x, P, F, Q = np.ones((2, 1)), np.eye(2), np.eye(2) * 2, np.eye(2) * 0.1
    for got, want in zip(script(predict)(x, P, F, Q), predict(x, P, F, Q)):
        np.testing.assert_array_equal(got, want)
    for got, want in zip(script(predict)(x, P), predict(x, P)):  # the defaults' reading
        np.testing.assert_array_equal(got, want)


def filtered_step(x, u):
    try:
        y = np.linalg.inv(x) + u
    except np.linalg.LinAlgError:
        y = 1.0 / x + u
    return y


def batch_filter(x, zs, us=None):  # filterpy's batch_filter: us=None, then [0.] * n
    if us is None:
        us = [0.] * len(zs)
    for z, u in zip(zs, us):
        x = filtered_step(x + z, u)
    return x


def test_the_refusal_past_a_none_default_is_the_one_reported():
    with pytest.raises(ScriptError, match="try/except is not supported"):
        script(batch_filter)(np.eye(2) * 2.0, [np.eye(2)] * 3)
