"""Gradients of arguments that are containers of containers: a list of layers each a dict of
weights (picoGPT's and most numpy MLPs' layout), dicts of dicts, lists of lists or tuples.

Each case compares ``vjp``'s gradients (optimized and unoptimized backward) with central finite
differences of the plain function, and the gradient comes back in the argument's structure.
"""

from __future__ import annotations

from typing import Dict, List, Tuple

import numpy as np
import pytest

from script import ScriptError, Tensor, grad, script, value_and_grad, vjp
from tests.passes.autodiff.test_dicts import assert_gradients_match

rng = np.random.default_rng(7)


def arr(*shape):
    return rng.standard_normal(shape)


def mlp(layers: List[Dict[str, Tensor]], x: Tensor) -> Tensor:
    for layer in layers:
        x = np.tanh(x @ layer["W"] + layer["b"])
    return x


def mlp_loss(layers: List[Dict[str, Tensor]], x: Tensor) -> Tensor:
    return np.sum(mlp(layers, x) ** 2)


def gpt_like(params: Dict[str, Dict[str, Tensor]], x: Tensor) -> Tensor:
    mean = x.mean(axis=-1, keepdims=True)
    h = (x - mean) * params["ln_1"]["g"] + params["ln_1"]["b"]
    h = h @ params["mlp"]["w"] + params["mlp"]["b"]
    return np.maximum(h, 0.0)


def pairs(layers: List[Tuple[Tensor, Tensor]], x: Tensor) -> Tensor:
    for W, b in layers:
        x = np.tanh(x @ W + b)
    return x


def lists(layers: List[List[Tensor]], x: Tensor) -> Tensor:
    out = x
    for k in range(len(layers)):
        out = np.tanh(out @ layers[k][0]) * layers[k][1]
    return out


def dict_of_lists(p: Dict[str, List[Tensor]], x: Tensor) -> Tensor:
    for W in p["Ws"]:
        x = np.tanh(x @ W)
    return x + p["bias"][0]


def int_tokens(p: Dict[str, Dict[str, Tensor]], tokens: Tensor) -> Tensor:
    h = p["emb"]["table"][tokens]
    return np.tanh(h @ p["out"]["W"])


def two_layer_mlp() -> list:
    return [{"W": arr(4, 5), "b": arr(5)}, {"W": arr(5, 3), "b": arr(3)}]


CASES = {
    "list of dicts": (mlp, lambda: (two_layer_mlp(), arr(2, 4))),
    "dict of dicts": (gpt_like, lambda: ({"ln_1": {"g": arr(4), "b": arr(4)},
                                          "mlp": {"w": arr(4, 6), "b": arr(6)}}, arr(3, 4))),
    "list of tuples": (pairs, lambda: ([(arr(4, 5), arr(5)), (arr(5, 2), arr(2))], arr(3, 4))),
    "list of lists": (lists, lambda: ([[arr(4, 5), arr(5)], [arr(5, 3), arr(3)]], arr(2, 4))),
    "dict of lists": (dict_of_lists, lambda: ({"Ws": [arr(4, 5), arr(5, 5)], "bias": [arr(5)]},
                                              arr(2, 4))),
}


@pytest.mark.parametrize("name", CASES)
def test_a_container_of_containers_gets_its_gradient_in_its_structure(name):
    fn, make = CASES[name]
    args = make()
    np.testing.assert_allclose(script(fn)(*args), fn(*args), rtol=1e-12)
    grads = assert_gradients_match(fn, args)
    assert type(grads[0]) is type(args[0])
    if isinstance(args[0], dict):
        assert list(grads[0]) == list(args[0])


def test_grad_and_value_and_grad_of_a_list_of_dicts():
    layers, x = two_layer_mlp(), arr(2, 4)
    value, (g_layers, g_x) = value_and_grad(mlp_loss, (0, 1))(layers, x)
    assert value == pytest.approx(mlp_loss(layers, x), rel=1e-12)
    assert [sorted(d) for d in g_layers] == [["W", "b"], ["W", "b"]]
    assert [d["W"].shape for d in g_layers] == [(4, 5), (5, 3)]
    only = grad(mlp_loss)(layers, x)  # argnums=0: the layers alone
    for got, want in zip(only, g_layers):
        np.testing.assert_allclose(got["W"], want["W"], rtol=1e-12)
    assert g_x.shape == x.shape


def test_int_arrays_in_a_nested_argument_have_no_gradient():
    p = {"emb": {"table": arr(6, 4)}, "out": {"W": arr(4, 3)}}
    tokens = np.array([1, 5, 0])
    assert_gradients_match(int_tokens, (p, tokens))
    _, backward = vjp(script(int_tokens), p, tokens)
    g_p, g_tokens = backward(np.ones((3, 3)))
    assert g_tokens is None and g_p["emb"]["table"][[2, 3, 4]].sum() == 0.0


def set_first_bias(layers: List[Dict[str, Tensor]], x: Tensor) -> Tensor:
    layers[0]["b"] = x[0]
    return mlp(layers, x)


def read_at_argument(layers: List[Dict[str, Tensor]], x: Tensor, k: int) -> Tensor:
    layer = layers[k]
    return np.tanh(x @ layer["W"] + layer["b"])


def test_a_nested_argument_the_function_changes_is_refused():
    with pytest.raises(ScriptError, match="dict"):
        vjp(script(set_first_bias), two_layer_mlp(), arr(2, 4))


def test_a_nested_argument_read_at_an_argument_index_is_right_or_refused():
    layers, x = two_layer_mlp(), arr(2, 4)
    try:
        out, backward = vjp(script(read_at_argument), layers, x, 1)
    except ScriptError as e:
        assert "index not known when compiling" in str(e)
        assert e.line == read_at_argument.__code__.co_firstlineno + 1
        return
    np.testing.assert_allclose(out, read_at_argument(layers, x, 1), rtol=1e-12)
    assert_gradients_match(read_at_argument, (layers, x, 1))


def optional_bias(layers: List[Dict[str, Tensor]], x: Tensor) -> Tensor:
    for layer in layers:
        x = x @ layer["W"]
        if "b" in layer:  # folds per layer once the loop is unrolled
            x = np.tanh(x + layer["b"])
    return x


def test_layers_with_different_keys_tested_with_in():
    layers = [{"W": arr(3, 4), "b": arr(4)}, {"W": arr(4, 2)}]
    args = (layers, arr(2, 3))
    np.testing.assert_allclose(script(optional_bias)(*args), optional_bias(*args), rtol=1e-12)
    grads = assert_gradients_match(optional_bias, args)
    assert [sorted(d) for d in grads[0]] == [["W", "b"], ["W"]]


def test_too_many_layers_to_unroll_is_refused_at_the_loop():
    layers = [{"W": 0.5 * arr(3, 3), "b": arr(3)} for _ in range(17)]
    x = arr(2, 3)
    np.testing.assert_allclose(script(mlp)(layers, x), mlp(layers, x), rtol=1e-12)
    with pytest.raises(ScriptError, match="at most 16 trips") as info:
        vjp(script(mlp), layers, x)
    assert info.value.line == mlp.__code__.co_firstlineno + 1  # for layer in layers


def test_a_nested_argument_forward_fuses_like_separate_arguments():
    layers, x = two_layer_mlp(), arr(2, 4)
    graph = script(mlp).graph_for(layers, x)
    kinds = [n.kind for n in graph.walk()]
    assert "prim::DictGetItem" not in kinds and "prim::Loop" not in kinds
    assert kinds.count("prim::FusionGroup") == 2


def written_through_another_argument(layers: List[Dict[str, Tensor]], d: Dict[str, Tensor],
                                     x: Tensor) -> Tensor:
    d["W"] = d["W"] * 2.0  # layers[0] is d: numpy reads the new W through layers too
    return np.sum(x @ layers[0]["W"] + layers[0]["b"])


def test_a_container_changed_through_another_argument_is_not_flattened():
    d = {"W": arr(3, 3), "b": arr(3)}
    x = arr(2, 3)

    def fresh():
        e = {k: v.copy() for k, v in d.items()}
        return [e], e, x
    np.testing.assert_allclose(script(written_through_another_argument)(*fresh()),
                               written_through_another_argument(*fresh()), rtol=1e-12)
    with pytest.raises(ScriptError, match="cannot differentiate"):  # as before: refused
        vjp(script(written_through_another_argument), *fresh())


def test_a_nested_argument_left_out_of_argnums_has_no_gradient():
    layers, x = two_layer_mlp(), arr(2, 4)
    _, backward = vjp(script(mlp_loss), layers, x, argnums=1)
    g_layers, g_x = backward(1.0)
    assert g_layers is None and g_x.shape == x.shape
