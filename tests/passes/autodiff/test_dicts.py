"""Gradients through dicts of tensors, dict and list arguments, and list outputs.

Every case compares the gradients ``vjp`` returns (optimized and unoptimized backward) with
central finite differences (float64) of the plain function (``python_fn``) over every element of
every float array argument, wherever it sits (a tuple, a list, a dict). Constructs the backward
cannot follow must be refused with a ``ScriptError`` at the user's line, never a zero.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from typing import Any, Dict, List, Tuple

import numpy as np
import pytest

from script import ScriptError, Tensor, script, value_and_grad, vjp
from script.runtime.autodiff import compile_gradient, run_vjp
from tests.helpers import line_of


# -- a finite-difference check for nested tuples, lists and dicts ---------------------------------
def float_leaves(tree: Any, path: tuple = ()) -> Iterator[tuple[tuple, np.ndarray]]:
    """(path, array) for every float array in a nest of tuples, lists and dicts."""
    if isinstance(tree, dict):
        for k, v in tree.items():
            yield from float_leaves(v, path + (k,))
    elif isinstance(tree, (tuple, list)):
        for k, v in enumerate(tree):
            yield from float_leaves(v, path + (k,))
    elif isinstance(tree, np.ndarray) and tree.dtype.kind == "f":
        yield path, tree


def get(tree: Any, path: tuple) -> Any:
    for k in path:
        tree = tree[k]
    return tree


def fresh(tree: Any, path: tuple = (), value: Any = None) -> Any:
    """A copy of the containers of ``tree`` (a function may write into a dict argument), with
    the leaf at ``path`` replaced by ``value`` when given."""
    if path == () and value is not None:
        return value
    head, rest = (path[0], path[1:]) if path else (None, ())
    if isinstance(tree, dict):
        return {k: fresh(v, rest, value) if k == head else fresh(v) for k, v in tree.items()}
    if isinstance(tree, (tuple, list)):
        items = [fresh(v, rest, value) if k == head else fresh(v) for k, v in enumerate(tree)]
        return items if isinstance(tree, list) else tuple(items)
    return tree


def random_like(tree: Any, rng: np.random.Generator) -> Any:
    if isinstance(tree, dict):
        return {k: random_like(v, rng) for k, v in tree.items()}
    if isinstance(tree, (tuple, list)):
        items = [random_like(v, rng) for v in tree]
        return items if isinstance(tree, list) else tuple(items)
    return rng.standard_normal(np.shape(tree))


def inner(ct: Any, out: Any) -> float:
    return sum(float(np.sum(c * get(out, path))) for path, c in float_leaves(ct))


def assert_gradients_match(fn: Callable[..., Any], args: tuple, *, eps: float = 1e-6,
                           rtol: float = 1e-6, atol: float = 1e-8, seed: int = 0) -> Any:
    """Assert every float array argument's ``vjp`` gradient equals finite differences."""
    f = script(fn)
    out = f.python_fn(*fresh(args))
    ct = random_like(out, np.random.default_rng(seed))
    found = {}
    for optimize in (True, False):
        _, backward = run_vjp(compile_gradient(f, fresh(args), optimize=optimize), fresh(args))
        found[optimize] = backward(fresh(ct))
    leaves = list(float_leaves(args))
    assert leaves
    for path, x in leaves:
        want = np.zeros_like(x)
        for idx in np.ndindex(x.shape):
            up, down = x.copy(), x.copy()
            up[idx] += eps
            down[idx] -= eps
            want[idx] = (inner(ct, f.python_fn(*fresh(args, path, up)))
                         - inner(ct, f.python_fn(*fresh(args, path, down)))) / (2 * eps)
        for optimize, grads in found.items():
            got = get(grads, path)
            assert got is not None, f"argument {path}: no gradient"
            np.testing.assert_allclose(got, want, rtol=rtol, atol=atol,
                                       err_msg=f"argument {path} (optimized={optimize})")
    return found[True]


def assert_refused_at(fn: Callable[..., Any], args: tuple, text: str, match: str) -> None:
    with pytest.raises(ScriptError, match=match) as info:
        vjp(script(fn), *args)
    assert info.value.line == line_of(fn, text), str(info.value)


rng = np.random.default_rng(0)


# -- dicts made in the function -------------------------------------------------------------------
def written_then_read(h: Tensor) -> Tensor:
    hs: Dict[int, Tensor] = {}
    hs[0] = h * 3.0
    return hs[0].sum()


def str_keys(x: Tensor, y: Tensor) -> Tensor:
    d: Dict[str, Tensor] = {"a": x * 2.0}
    d["b"] = np.tanh(y) * d["a"]
    return d["b"] * d["a"] + d["a"]


def overwritten(x: Tensor, y: Tensor) -> Tensor:
    d: Dict[int, Tensor] = {0: x * 2.0}
    first = d[0]
    d[0] = np.sin(y) * first
    d[1] = d[0] * x
    d[0] = y * 5.0
    return first * d[0] + d[1]


def recurrence(x: Tensor, h0: Tensor, w: Tensor) -> Tensor:
    hs: Dict[int, Tensor] = {}
    hs[-1] = h0 * 1.0
    for t in range(x.shape[0]):
        hs[t] = np.tanh(x[t] + hs[t - 1] @ w)
    return hs[0] * hs[x.shape[0] - 1] + hs[-1]


def read_in_later_loop(x: Tensor, w: Tensor) -> Tensor:
    ys: Dict[int, Tensor] = {}
    for t in range(4):
        ys[t] = np.tanh(x * float(t + 1)) @ w
    total = ys[0] * 0.0
    for t in range(4):
        total = total + ys[3 - t] * ys[t]
    return total


def conditional_writes(x: Tensor, w: Tensor) -> Tensor:
    d: Dict[int, Tensor] = {0: x * 1.0}
    for t in range(5):
        if t % 2 == 0:
            d[0] = np.tanh(d[0] @ w)
        else:
            d[1] = d[0] * 2.0
    return d[0] + d[1]


def fresh_dict_per_step(x: Tensor, w: Tensor) -> Tensor:
    h = x * 1.0
    for _ in range(3):
        d: Dict[str, Tensor] = {"h": h}
        d["z"] = np.tanh(d["h"] @ w)
        h = d["z"] + d["h"]
    return h


def shapes_differ_by_key(x: Tensor, w: Tensor, v: Tensor) -> Tensor:
    d: Dict[int, Tensor] = {}
    d[0] = x * 1.0
    d[1] = np.tanh(w @ d[0])
    d[2] = v @ d[1]
    return d[2] * d[0][0]


def dict_output(x: Tensor, w: Tensor) -> Dict[int, Tensor]:
    hs: Dict[int, Tensor] = {0: x * 1.0}
    for t in range(1, 4):
        hs[t] = np.tanh(hs[t - 1] @ w)
    return hs


def dict_and_tensor_output(x: Tensor) -> Tuple[Dict[str, Tensor], Tensor]:
    d: Dict[str, Tensor] = {"s": np.sin(x)}
    d["c"] = np.cos(x) * d["s"]
    return d, x * 2.0


CASES = [
    (written_then_read, lambda: (rng.standard_normal(2),)),
    (str_keys, lambda: (rng.standard_normal(3), rng.standard_normal(3))),
    (overwritten, lambda: (rng.standard_normal(3), rng.standard_normal(3))),
    (recurrence, lambda: (rng.standard_normal((5, 3)), rng.standard_normal(3),
                          rng.standard_normal((3, 3)) * 0.5)),
    (read_in_later_loop, lambda: (rng.standard_normal((2, 3)), rng.standard_normal((3, 3)))),
    (conditional_writes, lambda: (rng.standard_normal(3), rng.standard_normal((3, 3)))),
    (fresh_dict_per_step, lambda: (rng.standard_normal(3), rng.standard_normal((3, 3)))),
    (shapes_differ_by_key, lambda: (rng.standard_normal((4, 1)), rng.standard_normal((5, 4)),
                                    rng.standard_normal((3, 5)))),
    (dict_output, lambda: (rng.standard_normal(3), rng.standard_normal((3, 3)) * 0.5)),
    (dict_and_tensor_output, lambda: (rng.standard_normal(3),)),
]


@pytest.mark.parametrize("fn, make", CASES, ids=[fn.__name__ for fn, _ in CASES])
def test_gradients_through_dict_values_match_finite_differences(fn, make):
    args = make()
    np.testing.assert_allclose(script(fn)(*fresh(args)) if not fn.__name__.startswith("dict")
                               else 0.0, fn(*fresh(args)) if not fn.__name__.startswith("dict")
                               else 0.0)
    assert_gradients_match(fn, args)


def test_the_gradient_of_a_dict_value_is_not_zero():
    (grad,) = vjp(script(written_then_read), np.ones(2))[1](np.array(1.0))
    np.testing.assert_allclose(grad, [3.0, 3.0])


# -- dict and list arguments ----------------------------------------------------------------------
def dict_of_weights(params: Dict[str, Tensor], x: Tensor) -> Tensor:
    h = np.tanh(params["Wxh"] @ x + params["bh"])
    return (params["Why"] @ h).sum()


def written_argument(params: Dict[str, Tensor], x: Tensor) -> Tensor:
    params["h"] = np.tanh(params["W"] @ x)
    params["W"] = params["W"] * 2.0
    return (params["W"] @ params["h"]).sum()


def list_of_weights(ws: List[Tensor], x: Tensor) -> Tensor:
    return (np.tanh(ws[0] @ x) * ws[1]).sum()


def weights(hidden: int = 3, inputs: int = 2) -> Dict[str, np.ndarray]:
    return {"Wxh": rng.standard_normal((hidden, inputs)), "bh": rng.standard_normal(hidden),
            "Why": rng.standard_normal((2, hidden)), "unused": rng.standard_normal(4)}


def test_a_dict_argument_gets_a_dict_of_gradients_with_its_keys():
    params, x = weights(), rng.standard_normal(2)
    grads = assert_gradients_match(dict_of_weights, (params, x))
    assert isinstance(grads[0], dict) and list(grads[0]) == list(params)
    np.testing.assert_array_equal(grads[0]["unused"], np.zeros(4))


def test_value_and_grad_of_a_dict_argument():
    params, x = weights(), rng.standard_normal(2)
    value, grads = value_and_grad(script(dict_of_weights), argnums=(0, 1))(params, x)
    np.testing.assert_allclose(value, dict_of_weights(params, x))
    _, backward = vjp(script(dict_of_weights), params, x)
    want = backward(np.array(1.0))
    assert set(grads[0]) == set(params)
    for k in params:
        np.testing.assert_allclose(grads[0][k], want[0][k])
    np.testing.assert_allclose(grads[1], want[1])


def test_a_dict_argument_written_by_the_function():
    params = {"W": rng.standard_normal((3, 3)), "h": np.zeros((3, 1))}
    grads = assert_gradients_match(written_argument, (params, rng.standard_normal((3, 1))))
    np.testing.assert_array_equal(grads[0]["h"], np.zeros((3, 1)))  # overwritten, never read


def test_a_list_argument_gets_a_list_of_gradients():
    ws = [rng.standard_normal((3, 2)), rng.standard_normal(3)]
    grads = assert_gradients_match(list_of_weights, (ws, rng.standard_normal(2)))
    assert isinstance(grads[0], list) and len(grads[0]) == 2


# -- min-char-rnn ---------------------------------------------------------------------------------
VOCAB = 5


def min_char_rnn_loss_arrays(inputs: List[int], targets: List[int], hprev: Tensor, Wxh: Tensor,
                             Whh: Tensor, Why: Tensor, bh: Tensor, by: Tensor) -> Tensor:
    xs: Dict[int, Tensor] = {}
    hs: Dict[int, Tensor] = {}
    ys: Dict[int, Tensor] = {}
    ps: Dict[int, Tensor] = {}
    hs[-1] = hprev * 1.0
    loss = np.zeros(())
    for t in range(len(inputs)):
        xs[t] = (np.arange(VOCAB) == inputs[t]).astype(np.float64).reshape(VOCAB, 1)
        hs[t] = np.tanh(np.dot(Wxh, xs[t]) + np.dot(Whh, hs[t - 1]) + bh)
        ys[t] = np.dot(Why, hs[t]) + by
        ps[t] = np.exp(ys[t]) / np.sum(np.exp(ys[t]))
        loss += -np.log(ps[t][targets[t], 0])
    return loss


def min_char_rnn_loss(inputs: List[int], targets: List[int], hprev: Tensor,
                      params: Dict[str, Tensor]) -> Tensor:
    Wxh, Whh, Why = params["Wxh"], params["Whh"], params["Why"]
    bh, by = params["bh"], params["by"]
    return min_char_rnn_loss_arrays(inputs, targets, hprev, Wxh, Whh, Why, bh, by)


def min_char_rnn_backward(inputs, targets, hprev, p):
    """The gist's own hand-written backward pass (its ``lossFun``), for comparison."""
    xs, hs, ps = {}, {-1: hprev}, {}
    for t in range(len(inputs)):
        xs[t] = np.zeros((VOCAB, 1))
        xs[t][inputs[t]] = 1
        hs[t] = np.tanh(p["Wxh"] @ xs[t] + p["Whh"] @ hs[t - 1] + p["bh"])
        ys = p["Why"] @ hs[t] + p["by"]
        ps[t] = np.exp(ys) / np.sum(np.exp(ys))
    d = {k: np.zeros_like(v) for k, v in p.items()}
    dhnext = np.zeros_like(hs[0])
    for t in reversed(range(len(inputs))):
        dy = np.copy(ps[t])
        dy[targets[t]] -= 1
        d["Why"] += dy @ hs[t].T
        d["by"] += dy
        dh = p["Why"].T @ dy + dhnext
        dhraw = (1 - hs[t] * hs[t]) * dh
        d["bh"] += dhraw
        d["Wxh"] += dhraw @ xs[t].T
        d["Whh"] += dhraw @ hs[t - 1].T
        dhnext = p["Whh"].T @ dhraw
    return d, dhnext


def char_rnn_inputs(hidden: int = 4, steps: int = 6):
    r = np.random.default_rng(3)
    inputs = [int(i) for i in r.integers(0, VOCAB, steps)]
    targets = inputs[1:] + [int(r.integers(0, VOCAB))]
    params = {"Wxh": r.standard_normal((hidden, VOCAB)) * 0.5,
              "Whh": r.standard_normal((hidden, hidden)) * 0.5,
              "Why": r.standard_normal((VOCAB, hidden)) * 0.5,
              "bh": r.standard_normal((hidden, 1)) * 0.1,
              "by": r.standard_normal((VOCAB, 1)) * 0.1}
    return inputs, targets, r.standard_normal((hidden, 1)), params


def test_min_char_rnn_loss_gradients_match_finite_differences():
    """The forward and loss of Andrej Karpathy's min-char-rnn ("Minimal character-level
    language model with a Vanilla RNN, in Python/numpy", gist d4dee566867f8291f086, BSD
    License): its ``lossFun`` keeps its steps in dicts ``xs, hs, ys, ps`` keyed by the step
    (``hs[-1]`` the previous hidden state, ``hs[t - 1]`` read at step ``t``). Ported with the
    dicts annotated, ``hprev * 1.0`` for ``np.copy``, a one-hot built by comparison instead of
    written into a zero array, and the weights passed in (as a dict, then as arrays)."""
    inputs, targets, hprev, params = char_rnn_inputs()
    np.testing.assert_allclose(script(min_char_rnn_loss)(inputs, targets, hprev, params),
                               min_char_rnn_loss(inputs, targets, hprev, params))
    assert_gradients_match(min_char_rnn_loss, (inputs, targets, hprev, params))
    _, backward = vjp(script(min_char_rnn_loss), inputs, targets, hprev, params)
    grads = backward(np.array(1.0))
    want, dhprev = min_char_rnn_backward(inputs, targets, hprev, params)
    for k in params:
        np.testing.assert_allclose(grads[3][k], want[k], rtol=1e-10, atol=1e-12)
    np.testing.assert_allclose(grads[2], dhprev, rtol=1e-10, atol=1e-12)
    arrays = (inputs, targets, hprev, *(params[k] for k in ("Wxh", "Whh", "Why", "bh", "by")))
    assert_gradients_match(min_char_rnn_loss_arrays, arrays)


# -- what is refused ------------------------------------------------------------------------------
def values_summed(x: Tensor) -> Tensor:
    d: Dict[str, Tensor] = {"a": x * 2.0}
    total = x * 0.0
    for v in d.values():
        total = total + v
    return total


def get_with_default(x: Tensor) -> Tensor:
    d: Dict[str, Tensor] = {"a": x * 2.0}
    return d.get("b", x)


def dict_chosen_by_if(x: Tensor, k: float) -> Tensor:
    a: Dict[str, Tensor] = {"v": x * 2.0}
    b: Dict[str, Tensor] = {"v": x * 3.0}
    if k > 0.0:
        d = a
    else:
        d = b
    return d["v"]


def dict_of_tuples(x: Tensor) -> Tensor:
    d: Dict[str, Tuple[Tensor, Tensor]] = {"a": (x * 2.0, x * 3.0)}
    a, b = d["a"]
    return a * b


def dict_of_lists(x: Tensor) -> Tensor:
    d: Dict[str, List[Tensor]] = {"a": [x * 2.0]}
    d["a"].append(x * 3.0)
    return np.stack(d["a"]).sum(axis=0)


@pytest.mark.parametrize("fn, args, text, match", [
    (values_summed, (np.ones(2),), "d.values()", r"d\.values\(\)"),
    (get_with_default, (np.ones(2),), "d.get(", r"d\.get"),
    (dict_chosen_by_if, (np.ones(2), 1.0), "if k > 0.0", "the result of an if"),
])
def test_what_a_dict_gradient_cannot_follow_is_refused_at_its_line(fn, args, text, match):
    assert_refused_at(fn, args, text, match)


def test_a_dict_literal_of_tuples_read_at_its_keys_is_differentiated():
    # {"a": (...)}["a"] is the tuple itself (canonicalize), so no dict is left to follow
    assert_gradients_match(dict_of_tuples, (rng.standard_normal(3),))
    assert_gradients_match(dict_of_lists, (rng.standard_normal(3),))  # d["a"] is the list


# -- list outputs ---------------------------------------------------------------------------------
def list_literal(x: Tensor) -> List[Tensor]:
    return [np.tanh(x), x * 2.0]


def appended_in_a_loop(x: Tensor, w: Tensor) -> List[Tensor]:
    outs = [x * 1.0]
    h = x * 1.0
    for _ in range(3):
        h = np.tanh(h @ w)
        outs.append(h)
    return outs


def length_from_an_argument(x: Tensor, w: Tensor, n: int) -> List[Tensor]:
    outs: List[Tensor] = []
    h = x * 1.0
    for t in range(n):
        h = np.tanh(h @ w + x)
        outs.append(h * float(t + 1))
    return outs


def length_from_a_while_loop(x: Tensor, w: Tensor) -> List[Tensor]:
    outs: List[Tensor] = []
    h = x * 1.0
    t = 0
    while t < 3:
        h = np.tanh(h @ w)
        outs.append(h)
        t += 1
    return outs


def tuple_holding_a_list(x: Tensor, w: Tensor) -> Tuple[List[Tensor], Tensor]:
    outs: List[Tensor] = []
    h = x * 1.0
    for _ in range(3):
        h = np.tanh(h @ w)
        outs.append(h)
    return outs, h * 3.0


def appended_under_an_if(x: Tensor, k: Tensor) -> List[Tensor]:
    outs: List[Tensor] = []
    for t in range(20):
        if k[t] > 0.0:
            outs.append(np.sin(x) * float(t))
    return outs


def list_read_and_returned(x: Tensor) -> Tuple[List[Tensor], Tensor]:
    items = [np.sin(x), x * x]
    return items, items[0] * items[1]


LIST_CASES = [
    (list_literal, lambda: (rng.standard_normal(3),)),
    (appended_in_a_loop, lambda: (rng.standard_normal(3), rng.standard_normal((3, 3)))),
    (length_from_an_argument, lambda: (rng.standard_normal(3), rng.standard_normal((3, 3)) * 0.5,
                                       4)),
    (length_from_a_while_loop, lambda: (rng.standard_normal(3), rng.standard_normal((3, 3)))),
    (tuple_holding_a_list, lambda: (rng.standard_normal(3), rng.standard_normal((3, 3)))),
    (list_read_and_returned, lambda: (rng.standard_normal(3),)),
    (appended_under_an_if, lambda: (rng.standard_normal(3), np.where(np.arange(20) % 7 == 3,
                                                                      1.0, -1.0))),
]


@pytest.mark.parametrize("fn, make", LIST_CASES, ids=[fn.__name__ for fn, _ in LIST_CASES])
def test_every_cotangent_of_a_list_output_is_used(fn, make):
    assert_gradients_match(fn, make())


def test_a_list_output_takes_none_for_zero_cotangents():
    x = rng.standard_normal(3)
    _, backward = vjp(script(list_literal), x)
    (dx,) = backward([None, np.ones(3)])
    np.testing.assert_allclose(dx, np.full(3, 2.0))
    (dx,) = backward([np.ones(3), None])
    np.testing.assert_allclose(dx, 1.0 - np.tanh(x) ** 2)


def returned_list_overwritten(x: Tensor) -> List[Tensor]:
    items = [x * 2.0, x * 3.0]
    items[0] = x * 5.0
    return items


def test_a_returned_list_changed_in_place_is_right_or_refused_at_its_line():
    args = (rng.standard_normal(2),)
    try:
        assert_gradients_match(returned_list_overwritten, args)
    except ScriptError as e:
        assert e.line == line_of(returned_list_overwritten, "items[0] = x * 5.0"), str(e)


def test_grad_of_a_function_of_a_dict_argument_is_not_misread():
    from script.runtime.gradients import grad
    params = {1: np.ones(2), 0: np.full(2, 3.0)}  # key order differs from key values

    def first(d: Dict[int, Tensor]) -> Tensor:
        return (d[0] * d[0]).sum()

    got = grad(script(first))(params)
    assert list(got) == [1, 0]
    np.testing.assert_array_equal(got[0], [6.0, 6.0])
    np.testing.assert_array_equal(got[1], [0.0, 0.0])
    with pytest.raises(ScriptError, match="dict or list argument"):
        grad(grad(script(first)))(params)


def summed_over_keys(params: Dict[str, Tensor], x: Tensor) -> Tensor:
    total = x * 0.0
    for k in params:
        total = total + np.tanh(params[k] * x)
    return total


def test_a_dict_argument_read_at_every_key_in_a_loop():
    params = {"a": rng.standard_normal(3), "b": rng.standard_normal(3)}
    assert_gradients_match(summed_over_keys, (params, rng.standard_normal(3)))


def test_value_and_grad_refuses_a_list_output():
    with pytest.raises(ScriptError, match="one scalar output"):
        value_and_grad(script(list_literal))(np.ones(()))


def while_with_a_counted_key(x: Tensor, w: Tensor) -> Tensor:
    hs: Dict[int, Tensor] = {0: x * 1.0}
    t = 0
    while t < 4:
        hs[t + 1] = np.tanh(hs[t] @ w)
        t += 1
    return hs[t] + hs[1]


def stops_early(x: Tensor, w: Tensor) -> Tensor:
    hs: Dict[int, Tensor] = {-1: x * 1.0}
    last = 0
    for t in range(10):
        hs[t] = np.tanh(hs[t - 1] @ w)
        last = t
        if t == 5:
            break
    return hs[last] * hs[2]


def key_from_data(x: Tensor, order: List[int]) -> Tensor:
    d: Dict[int, Tensor] = {}
    for i in range(len(order)):
        d[order[i]] = x * float(i + 1)
    return d[0] * d[1]


@pytest.mark.parametrize("fn, make", [
    (while_with_a_counted_key, lambda: (rng.standard_normal(3), rng.standard_normal((3, 3)))),
    (stops_early, lambda: (rng.standard_normal(3), rng.standard_normal((3, 3)))),
    (key_from_data, lambda: (rng.standard_normal(3), [1, 0, 1])),
], ids=["while", "break", "data_keys"])
def test_dict_keys_computed_at_run_time(fn, make):
    assert_gradients_match(fn, make())
