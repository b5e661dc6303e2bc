"""Dicts of functions known when compiling (``script.frontend.function_tables``): a constant
key picks the function, a run-time key the call among them (Python's KeyError for a key not in
the table), ``in`` reads the keys; values and gradients as plain Python gives them."""

from typing import Dict

import numpy as np
import pytest

from script import ScriptError, Tensor, script
from tests.gradcheck import check_vjp
from tests.helpers import assert_same, line_of


def sigmoid(x):
    return 1 / (1 + np.exp(-x))


def relu(x):
    return np.maximum(x, 0)


ACTIVATIONS = {"tanh": np.tanh, "sigmoid": sigmoid, "relu": relu}


def constant_key(x: Tensor):
    return ACTIVATIONS["sigmoid"](x)


def run_time_key(x: Tensor, W: Tensor, name: str = "tanh"):
    act = ACTIVATIONS[name]
    return act(x @ W)


def local_table(x: Tensor, name: str):
    acts = {"tanh": np.tanh, "sigmoid": sigmoid}
    if name not in acts:
        raise ValueError("unknown activation")
    return acts[name](x)


def softmax(x, axis=-1):
    e = np.exp(x - x.max(axis=axis, keepdims=True))
    return e / e.sum(axis=axis, keepdims=True)


NORMALIZERS = {"softmax": softmax, "tanh": np.tanh}


def normalized(x: Tensor, name: str = "softmax"):
    return NORMALIZERS[name](x, axis=0)


def membership(name: str):
    return name in ACTIVATIONS, name not in ACTIVATIONS.keys()


def missing_constant_key(x: Tensor):
    return ACTIVATIONS["softmax"](x)


# wiseodd/hipsternet, hipsternet/regularization.py and hipsternet/loss.py (Unlicense): as
# written, with annotations
def l2_reg(W: Tensor, lam: float = 1e-3):
    return .5 * lam * np.sum(W * W)


def l1_reg(W: Tensor, lam: float = 1e-3):
    return lam * np.sum(np.abs(W))


def regularization(model, reg_type='l2', lam=1e-3):
    reg_types = dict(
        l1=l1_reg,
        l2=l2_reg
    )

    if reg_type not in reg_types.keys():
        raise Exception('Regularization type must be either "l2" or "l1"!')

    reg_loss = np.sum([reg_types[reg_type](model[k], lam)
                       for k in model.keys()
                       if k.startswith('W')])

    return reg_loss


def total_regularization(model: Dict[str, Tensor], reg_type: str):
    return regularization(model) + regularization(model, reg_type, lam=0.5)


rng = np.random.default_rng(0)


def test_a_constant_key_calls_its_function():
    x = rng.standard_normal((2, 3))
    assert_same(script(constant_key)(x), constant_key(x))


def test_a_run_time_key_calls_the_function_under_it():
    x, W = rng.standard_normal((2, 3)), rng.standard_normal((3, 3))
    f = script(run_time_key)
    for name in ACTIVATIONS:
        assert_same(f(x, W, name), run_time_key(x, W, name))
        check_vjp(lambda x, W, name=name: f(x, W, name), (x, W))
    with pytest.raises(KeyError, match="'softmax'"):
        run_time_key(x, W, "softmax")
    with pytest.raises(KeyError, match="'softmax'"):
        f(x, W, "softmax")


def test_a_local_table_and_membership():
    x = rng.standard_normal(4)
    f = script(local_table)
    for name in ("tanh", "sigmoid"):
        assert_same(f(x, name), local_table(x, name))
    with pytest.raises(ValueError, match="unknown activation"):
        f(x, "relu")
    for name in ("relu", "gelu"):
        assert script(membership)(name) == membership(name)


def test_hipsternet_regularization():
    model = {"W1": rng.standard_normal((3, 2)), "W2": rng.standard_normal((2, 2)),
             "b1": rng.standard_normal(2)}
    f = script(total_regularization)
    for reg_type in ("l1", "l2"):
        assert_same(f(model, reg_type), total_regularization(model, reg_type))
    with pytest.raises(Exception, match="must be either"):
        f(model, "l3")


def test_a_function_the_call_cannot_reach_need_not_compile():
    x = rng.standard_normal((3, 2))
    assert_same(script(normalized)(x), normalized(x))
    with pytest.raises(TypeError, match="unexpected keyword argument 'axis'"):
        normalized(x, "tanh")
    with pytest.raises(ScriptError, match=r"NORMALIZERS\['tanh'\]\(\) got an unexpected "
                       "keyword argument 'axis'"):
        script(normalized)(x, "tanh")


def test_a_constant_key_not_in_the_table_is_refused_at_its_line():
    with pytest.raises(ScriptError, match="KeyError: 'softmax' is not a key") as info:
        script(missing_constant_key)(np.ones(2))
    assert info.value.line == line_of(missing_constant_key, 'ACTIVATIONS["softmax"]')


INT_TABLE = {1: np.tanh, 2: sigmoid}


def by_int_key(x: Tensor, k: int):
    return INT_TABLE[k](x)


def test_a_changed_global_table_compiles_again():
    x = rng.standard_normal(3)
    f = script(by_int_key)
    assert_same(f(x, 1), np.tanh(x))
    with pytest.raises(KeyError, match="3"):
        f(x, 3)
    INT_TABLE[3] = relu
    INT_TABLE[1] = sigmoid
    try:
        assert_same(f(x, 3), relu(x))
        assert_same(f(x, 1), sigmoid(x))
    finally:
        del INT_TABLE[3]
        INT_TABLE[1] = np.tanh
    assert_same(f(x, 1), np.tanh(x))


def lambdas_in_a_table(x: Tensor, W: Tensor, name: str):
    acts = {"linear": lambda z: z @ W, "sigmoid": lambda z: 1 / (1 + np.exp(-z)),
            "tanh": np.tanh}
    act = acts[name]
    return act(x) + acts["linear"](x)


def test_lambdas_of_a_table_literal_are_its_functions():
    # Apache TVM's lstm_python: str2act = {"sigmoid": lambda x: ..., "tanh": np.tanh}
    x, W = rng.standard_normal((2, 3)), rng.standard_normal((3, 3))
    f = script(lambdas_in_a_table)
    for name in ("linear", "sigmoid", "tanh"):
        assert_same(f(x, W, name), lambdas_in_a_table(x, W, name))
        check_vjp(lambda x, W, name=name: f(x, W, name), (x, W))


def lambda_by_a_constant_key(x: Tensor):
    acts = {"double": lambda z: z * 2.0, "tanh": np.tanh}
    g = acts["double"]
    return g(x) + acts["tanh"](x)


def test_a_lambda_of_a_table_bound_by_a_constant_key():
    x = rng.standard_normal(3)
    assert_same(script(lambda_by_a_constant_key)(x), lambda_by_a_constant_key(x))
