"""Shapes kept through containers: the items of a list or dict argument the function never
changes keep their own dtype and shape (the call signature holds each item's), so a cell written
over a weight list or dict types, hoists and fuses like one written over separate arguments.
A container the function changes keeps the element type: its items may change."""

from typing import Dict, List

import numpy as np
import pytest

from script import Tensor, script
from tests.gradcheck import check_vjp


def sigmoid(x):
    return 1.0 / (1.0 + np.exp(-x))


def gru_separate(xs: Tensor, h: Tensor, W_z: Tensor, U_z: Tensor, b_z: Tensor, W_h: Tensor,
                 U_h: Tensor, b_h: Tensor):
    for t in range(xs.shape[0]):
        z = sigmoid(xs[t] @ W_z + h @ U_z + b_z)
        hh = np.tanh(xs[t] @ W_h + h @ U_h + b_h)
        h = (1 - z) * h + z * hh
    return h


def gru_dict(xs: Tensor, h: Tensor, p: Dict[str, Tensor]):
    for t in range(xs.shape[0]):
        z = sigmoid(xs[t] @ p["W_z"] + h @ p["U_z"] + p["b_z"])
        hh = np.tanh(xs[t] @ p["W_h"] + h @ p["U_h"] + p["b_h"])
        h = (1 - z) * h + z * hh
    return h


def gru_list(xs: Tensor, h: Tensor, params: List[Tensor]):
    W_z, U_z, b_z, W_h, U_h, b_h = params
    for t in range(xs.shape[0]):
        z = sigmoid(xs[t] @ W_z + h @ U_z + b_z)
        hh = np.tanh(xs[t] @ params[3] + h @ params[-2] + b_h)
        h = (1 - z) * h + z * hh
    return h


def gru_dict_and_norm(xs: Tensor, h: Tensor, p: Dict[str, Tensor]):
    h = gru_dict(xs, h, p)
    norm = 0.0
    for k in p.keys():  # (hipsternet's loops over a model's keys)
        norm += np.sum(p[k] ** 2)
    return h, norm


def rescaled(p: Dict[str, Tensor], x: Tensor):
    # changes its dict: the items keep the element type (a later read may see the new item)
    y = x @ p["w"]
    p["w"] = p["w"] * 2.0
    return y + x @ p["w"]


def picked(ws: List[Tensor], x: Tensor, k: int):
    return x @ ws[k]  # an index known only at run time: the joined element type


NAMES = ["W_z", "U_z", "b_z", "W_h", "U_h", "b_h"]


def weights(dtype, d=3, hidden=4, seed=0):
    r = np.random.default_rng(seed)
    shapes = {"W": (d, hidden), "U": (hidden, hidden), "b": (hidden,)}
    return {n: (r.standard_normal(shapes[n[0]]) * 0.5).astype(dtype) for n in NAMES}


def calls(dtype):
    r = np.random.default_rng(1)
    xs, h = r.standard_normal((5, 2, 3)).astype(dtype), r.standard_normal((2, 4)).astype(dtype)
    p = weights(dtype)
    return [(gru_separate, (xs, h, *p.values())), (gru_dict, (xs, h, p)),
            (gru_list, (xs, h, list(p.values())))]


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_compiled_equals_numpy(dtype):
    for fn, args in calls(dtype):
        got = script(fn)(*args)
        assert got.dtype == dtype
        np.testing.assert_allclose(got, fn(*args), rtol=1e-5, atol=1e-6)


def _loop_body(graph):
    loop = next(n for n in graph.block if n.kind == "prim::Loop")
    return [n.kind for n in loop.blocks[0]]


def test_a_cell_over_a_list_or_dict_compiles_like_one_over_arguments():
    (_, sep), (_, by_dict), (_, by_list) = calls(np.float32)
    want = _loop_body(script(gru_separate).graph_for(*sep))
    assert "prim::FusionGroup" in want
    for fn, args in [(gru_dict, by_dict), (gru_list, by_list)]:
        graph = script(fn).graph_for(*args)
        assert _loop_body(graph) == want, str(graph)  # reads hoisted, the same groups


def test_a_loop_over_the_keys_keeps_the_items_shapes():
    (_, sep), (_, by_dict), (_, _) = calls(np.float64)
    f = script(gru_dict_and_norm)
    got, want = f(*by_dict), gru_dict_and_norm(*by_dict)
    np.testing.assert_allclose(got[0], want[0], rtol=1e-12)
    np.testing.assert_allclose(got[1], want[1], rtol=1e-12)
    graph = f.graph_for(*by_dict)
    assert _loop_body(graph) == _loop_body(script(gru_separate).graph_for(*sep)), str(graph)


def test_gradients_equal_finite_differences():
    (_, sep), (_, _), (_, by_list) = calls(np.float64)
    check_vjp(script(gru_list), by_list)
    check_vjp(script(gru_separate), sep)


def test_a_changed_container_keeps_its_element_type():
    r = np.random.default_rng(2)
    x = r.standard_normal((2, 3))
    p = {"w": r.standard_normal((3, 3))}
    want = rescaled(dict(p), x)
    np.testing.assert_allclose(script(rescaled)(dict(p), x), want)
    ws = [r.standard_normal((3, 3)), r.standard_normal((3, 5))]
    for k in (0, 1):
        np.testing.assert_allclose(script(picked)(ws, x, k), picked(ws, x, k))


def test_items_of_another_shape_compile_another_specialization():
    (_, (xs, h, p)), = calls(np.float64)[1:2]
    f = script(gru_dict)
    f(xs, h, p)
    wide = weights(np.float64, hidden=6, seed=3)
    h6 = np.zeros((2, 6))
    np.testing.assert_allclose(f(xs, h6, wide), gru_dict(xs, h6, wide))


def last_two(xs: Tensor, w: Tensor):
    hs = []
    h = np.zeros((xs.shape[1], w.shape[1]), dtype=xs.dtype)
    for t in range(xs.shape[0]):
        h = np.tanh(xs[t] @ w + h)
        hs.append(h)
    return hs[-1] * 2.0 + hs[-2]


def test_items_read_back_from_a_list_keep_their_dtype_and_shape():
    r = np.random.default_rng(4)
    xs, w = r.random((40, 2, 3)).astype(np.float32), r.random((3, 3)).astype(np.float32)
    f = script(last_two)
    got = f(xs, w)
    assert got.dtype == np.float32
    np.testing.assert_allclose(got, last_two(xs, w), rtol=1e-6)
    reads = [n for n in f.graph_for(xs, w).walk() if n.kind == "prim::ListIndex"]
    assert reads and all(str(n.output.type) == "Float(2, 3)" for n in reads)


# -- a list joined with another: [x, h] + [ones] ------------------------------------------------
def concat_with_bias(weights, states: List[Tensor]):
    """The states side by side with a column of ones (a list version of autograd's helper)."""
    joined = np.hstack(states + [np.ones((states[0].shape[0], 1))])
    return np.dot(joined, weights)


def rnn_over_joined_lists(xs: Tensor, W: Tensor, h: Tensor):
    for x in xs:
        h = np.tanh(concat_with_bias(W, [x, h]))
    return h


def test_a_list_joined_with_another_keeps_its_items_shapes():
    r = np.random.default_rng(5)
    xs, W, h = r.standard_normal((40, 2, 3)), 0.3 * r.standard_normal((8, 4)), \
        r.standard_normal((2, 4))
    f = script(rnn_over_joined_lists)
    np.testing.assert_allclose(f(xs, W, h), rnn_over_joined_lists(xs, W, h), rtol=1e-12)
    report = f.explain(xs, W, h)
    assert "Double(2, 8) @ Double(8, 4)" in report and "runs natively" in report, report
    check_vjp(rnn_over_joined_lists, (xs[:4], W, h))
