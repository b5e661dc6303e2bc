"""Python builtins and truth values in scripted code compute what plain Python computes: strings
and containers (lists, dicts, tuples: true when not empty) as conditions and in ``or``/``and``,
``sum``, ``list`` and ``dict``; float32 and float64 values equal, gradients equal finite
differences, and bad uses are ScriptErrors at the user's line."""

from typing import Dict, List, Tuple

import numpy as np
import pytest

from script import ScriptError, Tensor, script
from tests.gradcheck import check_vjp
from tests.helpers import assert_same, assert_same_at


# -- strings as truth values -------------------------------------------------------------------
def name_or_default(name: str, x: Tensor):
    label = name or "default"
    scale = 2.0 if name and x.sum() > 1.0 else 0.5
    return label, x * scale


@pytest.mark.parametrize("dtype", ["float32", "float64"])
@pytest.mark.parametrize("name", ["", "a"])
def test_string_truth_value_is_pythons(name, dtype):
    for x in (np.arange(3, dtype=dtype), -np.arange(3, dtype=dtype)):
        (label, y), (want_label, want_y) = script(name_or_default)(name, x), \
            name_or_default(name, x)
        assert label == want_label
        assert_same(y, want_y)


def containers_as_conditions(x: Tensor, ids: List[int], scores: Dict[str, Tensor]):
    last = ids[-1] if ids else 0  # NeuralTalk's beam search: b[1][-1] if b[1] else 0
    y = x[last]
    if scores:
        y = y + scores["a"].sum()
    if not ids:
        y = y * 2.0
    pair = (1, 2)
    while ids and pair:
        y = y - ids.pop()
    return y


@pytest.mark.parametrize("dtype", ["float32", "float64"])
def test_containers_are_true_when_not_empty(dtype):
    x = np.arange(3, dtype=dtype)
    for ids, scores in (([2], {}), ([], {"a": x}), ([], {}), ([1, 0], {"a": x})):
        assert_same(script(containers_as_conditions)(x, list(ids), dict(scores)),
                    containers_as_conditions(x, list(ids), dict(scores)))


def string_times(name: str):
    return name or 1.0


def test_string_or_number_needs_one_type():
    with pytest.raises(ScriptError, match="the operands of 'or' have types str and float") as info:
        script(string_times)("")
    assert "return name or 1.0" in str(info.value)


def same(got, want, dtype):
    """``assert_same_at`` with the tolerances of ``dtype``, for containers holding strings and
    dicts too (keys in order)."""
    if isinstance(want, dict):
        assert isinstance(got, dict) and list(got) == list(want), (got, want)
        got, want = list(got.values()), list(want.values())
    if isinstance(want, (tuple, list)):
        assert type(got) is type(want) and len(got) == len(want), (got, want)
        for g, w in zip(got, want):
            same(g, w, dtype)
    elif isinstance(want, str):
        assert got == want, (got, want)
    else:
        assert_same_at(got, want, dtype)


# -- sum ---------------------------------------------------------------------------------------
def sums(xs: List[Tensor], pair: Tuple[Tensor, Tensor], x: Tensor):
    return (sum(xs), sum(xs, x), sum(pair), sum(v * v for v in xs), sum(xs, start=x * 2.0),
            sum([float(v.sum()) for v in xs]), sum([1.0, 2.5]), sum(range(4)),
            sum((x[0], x[1])))


def sum_of_products(xs: List[Tensor], pair: Tuple[Tensor, Tensor], x: Tensor) -> Tensor:
    return sum(np.tanh(v) * x for v in xs) + sum(pair, x * x) * sum([w for w in xs])


def _pieces(dtype: str, n: int = 3):
    r = np.random.default_rng(0)
    x = r.standard_normal((2, 3)).astype(dtype)
    xs = [r.standard_normal((2, 3)).astype(dtype) for _ in range(n)]
    return xs, (x * 0.5, r.standard_normal(3).astype(dtype)), x


@pytest.mark.parametrize("dtype", ["float32", "float64"])
def test_sum_is_pythons(dtype):
    args = _pieces(dtype)
    same(script(sums)(*args), sums(*args), dtype)
    same(script(sum_of_products)(*args), sum_of_products(*args), dtype)


def test_sum_gradients_match_finite_differences():
    check_vjp(script(sum_of_products), _pieces("float64"))


def sum_of_strings(names: List[str]):
    return sum(names)


def test_sum_of_a_bad_iterable_is_refused_at_the_call():
    with pytest.raises(ScriptError, match="unsupported operand types for \\+") as info:
        script(sum_of_strings)(["a", "b"])
    assert "return sum(names)" in str(info.value)


# -- list ----------------------------------------------------------------------------------------
def lists(xs: List[Tensor], pair: Tuple[Tensor, Tensor], x: Tensor):
    copy = list(xs)
    copy.append(x)  # a new list: xs keeps its length
    return (copy, len(xs), list(pair), list(range(len(xs))), list(), list(v * 2.0 for v in xs),
            list({"a": 1, "b": 2}))


def list_gradient(xs: List[Tensor], pair: Tuple[Tensor, Tensor], x: Tensor) -> Tensor:
    copy = list(xs)
    copy.append(x * 3.0)
    firsts = list(pair)
    return np.stack(copy).sum(axis=0) * firsts[0]


@pytest.mark.parametrize("dtype", ["float32", "float64"])
def test_list_is_pythons(dtype):
    args = _pieces(dtype)
    same(script(lists)(*args), lists(*args), dtype)
    same(script(list_gradient)(*args), list_gradient(*args), dtype)


def test_list_gradients_match_finite_differences():
    check_vjp(script(list_gradient), _pieces("float64"))


def list_of_a_number(x: Tensor):
    return list(2.0)


def test_list_of_a_number_is_refused_at_the_call():
    with pytest.raises(ScriptError, match="float") as info:
        script(list_of_a_number)(np.ones(2))
    assert "return list(2.0)" in str(info.value)


def tuples(pair: Tuple[Tensor, Tensor], x: Tensor):
    return tuple(pair), tuple([x, x * 2.0]), tuple(), tuple((x,))


def tuple_of_a_comprehension(x: Tensor):
    return tuple([x * k for k in range(2)])


@pytest.mark.parametrize("dtype", ["float32", "float64"])
def test_tuple_is_pythons(dtype):
    xs, pair, x = _pieces(dtype)
    same(script(tuples)(pair, x), tuples(pair, x), dtype)


def test_tuple_of_a_list_of_run_time_length_is_refused_at_the_call():
    with pytest.raises(ScriptError, match="tuple's length is part of its type") as info:
        script(tuple_of_a_comprehension)(np.ones(2))
    assert "return tuple([x * k for k in range(2)])" in str(info.value)


# -- dict ----------------------------------------------------------------------------------------
def dicts(w: Tensor, v: Tensor):
    d = dict(a=w, b=v)
    e = dict(d)
    e["c"] = w * 2.0  # a new dict: d keeps its keys
    return d, e, dict(e, z=v), dict(zip(["p", "q"], [w, v])), dict(), len(d)


def dict_gradient(w: Tensor, v: Tensor) -> Tensor:
    d = dict(a=w, b=v * v)
    e = dict(d, c=np.tanh(w))
    e["a"] = e["a"] * 3.0
    return d["a"] * e["b"] + e["a"] * e["c"]


@pytest.mark.parametrize("dtype", ["float32", "float64"])
def test_dict_is_pythons(dtype):
    r = np.random.default_rng(1)
    w, v = r.standard_normal((2, 3)).astype(dtype), r.standard_normal((2, 3)).astype(dtype)
    same(script(dicts)(w, v), dicts(w, v), dtype)
    same(script(dict_gradient)(w, v), dict_gradient(w, v), dtype)


def test_dict_gradients_match_finite_differences():
    r = np.random.default_rng(2)
    check_vjp(script(dict_gradient), (r.standard_normal((2, 3)), r.standard_normal((2, 3))))


def dict_of_a_list(xs: List[Tensor]):
    return dict(xs)


def test_dict_of_a_list_of_arrays_is_refused_at_the_call():
    with pytest.raises(ScriptError, match="dict\\(\\) of a Tensor\\[\\] is not supported") as info:
        script(dict_of_a_list)([np.ones(2)])
    assert "return dict(xs)" in str(info.value)


# -- an int passed for a float parameter of a helper ---------------------------------------------
def penalty(w: Tensor, lam=1e-3):
    return lam * np.sum(w * w)


def penalties(w: Tensor) -> Tensor:
    return penalty(w, lam=0) + penalty(w, 2) + penalty(w, True) + penalty(w)


@pytest.mark.parametrize("dtype", ["float32", "float64"])
def test_an_int_for_a_float_parameter_of_a_helper_is_taken_as_python_takes_it(dtype):
    """hipsternet calls ``cross_entropy(model, y_pred, y, lam=0)`` where ``lam=1e-3``."""
    w = np.arange(3.0).astype(dtype)
    assert_same_at(script(penalties)(w), penalties(w))


# -- string equality -------------------------------------------------------------------------------
def by_mode(x: Tensor, mode: str, other: str):
    h = x[0] * 0.0
    for t in range(x.shape[0]):
        if mode == "train":
            h = np.tanh(x[t] + h)
        else:
            h = np.tanh(x[t] - h)
    return h, mode == other, "eval" != mode


@pytest.mark.parametrize("mode, other", [("train", "train"), ("eval", "x"), ("train", "eval")])
def test_strings_compare_as_in_python_and_a_compared_argument_decides_the_branch(mode, other):
    x = np.random.default_rng(0).standard_normal((30, 3))
    f = script(by_mode)
    got, want = f(x, mode, other), by_mode(x, mode, other)
    assert_same(got[0], want[0])
    assert got[1:] == want[1:]
    assert "runs natively" in f.explain(x, mode, other)  # the if decided when compiling


def reshaped_by_a_list(X: Tensor, axis: int):
    left = np.prod(X.shape[:axis])  # a numpy integer beside an int in a list literal
    return np.reshape(X, [left, -1]), [left, 2]


def test_a_list_literal_of_an_integer_array_item_and_ints_holds_ints():
    X = np.arange(16.0).reshape(1, 2, 8)
    got, want = script(reshaped_by_a_list)(X, 2), reshaped_by_a_list(X, 2)
    np.testing.assert_array_equal(got[0], want[0])
    assert got[1] == want[1] == [2, 2] and type(got[1][0]) is int
