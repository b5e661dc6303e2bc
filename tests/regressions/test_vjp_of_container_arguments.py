"""A ``Dict[str, Tensor]`` argument got ``None`` from ``vjp``: weights kept in a dict could not
be trained and nothing said so. Its gradient is now a dict with the argument's keys (zeros for
entries the output does not read); a ``List[Tensor]`` argument's is a list."""

from typing import Dict, List

import numpy as np

from script import Tensor, script, value_and_grad, vjp


def dict_weights(params: Dict[str, Tensor], x: Tensor) -> Tensor:
    return (np.tanh(params["W"] @ x) * params["b"]).sum()


def list_weights(ws: List[Tensor], x: Tensor) -> Tensor:
    return (np.tanh(ws[0] @ x) * ws[1]).sum()


def test_a_dict_argument_gets_a_dict_of_gradients():
    w, b, x = np.array([[1.0, 2.0], [0.5, -1.0]]), np.array([0.3, -0.7]), np.array([0.2, 0.1])
    params = {"W": w, "b": b, "unused": np.ones(3)}
    grads, dx = vjp(script(dict_weights), params, x)[1](np.array(1.0))
    d = 1.0 - np.tanh(w @ x) ** 2
    assert list(grads) == ["W", "b", "unused"]
    np.testing.assert_allclose(grads["W"], np.outer(d * b, x))
    np.testing.assert_allclose(grads["b"], np.tanh(w @ x))
    np.testing.assert_array_equal(grads["unused"], np.zeros(3))
    np.testing.assert_allclose(dx, w.T @ (d * b))
    _, grads = value_and_grad(script(dict_weights))(params, x)
    np.testing.assert_allclose(grads["W"], np.outer(d * b, x))


def test_a_list_argument_gets_a_list_of_gradients():
    w, b, x = np.array([[1.0, 2.0], [0.5, -1.0]]), np.array([0.3, -0.7]), np.array([0.2, 0.1])
    (dw, db), _ = vjp(script(list_weights), [w, b], x)[1](np.array(1.0))
    np.testing.assert_allclose(dw, np.outer((1.0 - np.tanh(w @ x) ** 2) * b, x))
    np.testing.assert_allclose(db, np.tanh(w @ x))
