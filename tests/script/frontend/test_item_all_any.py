"""``x.item()``, ``np.all`` / ``np.any`` and their methods compute what numpy computes: Python
numbers of numpy's kind from ``.item()`` (a float, an int or a bool by the dtype), bool arrays
from ``all`` / ``any``; no gradient flows through ``.item()`` (refused at the user's line), and an
``.item()`` compiled as a float for an argument found to hold integers is refused with the
spelling to write instead."""

import numpy as np
import pytest

from script import ScriptError, SignatureError, Tensor, script, vjp
from tests.gradcheck import check_vjp
from tests.helpers import assert_same


def numbers_of(x: Tensor, p: Tensor):
    loss = (x * x).sum().item()
    k = np.argmax(p).item()
    positive = (x[0, 0] > 0).item()
    return loss * 0.5, k + 1, positive, x[:1, :1].item(), p.max().item() > 0.5


def running_total(xs: Tensor):
    total = 0.0
    for t in range(xs.shape[0]):
        total += np.sum(np.tanh(xs[t])).item()
    return total


@pytest.mark.parametrize("dtype", ["float32", "float64"])
def test_item_gives_numpys_python_numbers(dtype):
    rng = np.random.default_rng(0)
    x = rng.standard_normal((2, 3)).astype(dtype)
    p = np.array([0.1, 0.7, 0.2], dtype)
    got, want = script(numbers_of)(x, p), numbers_of(x, p)
    assert [type(v) for v in got] == [type(v) for v in want] == [float, int, bool, float, bool]
    assert_same(got, want)
    xs = rng.standard_normal((5, 4)).astype(dtype)
    got = script(running_total)(xs)
    assert type(got) is float and got == pytest.approx(running_total(xs), rel=1e-6)


def item_of(x: Tensor):
    return x.item() + 1


def test_item_of_a_bigger_array_raises_numpys_error():
    with pytest.raises(ValueError, match="size 1"):
        item_of(np.ones(3))
    with pytest.raises(ValueError, match="size 1"):
        script(item_of)(np.ones(3))


def test_item_of_an_argument_found_to_hold_integers_names_the_spelling():
    f = script(item_of)
    assert f(np.ones((1, 1))) == 2.0
    with pytest.raises(SignatureError, match=r"compiled as a Python float; write int\(\.\.\.\)") \
            as info:
        f(np.ones((1, 1), np.int64))
    assert "test_item_all_any.py" in str(info.value)


def int_of(x: Tensor):
    return int(x) + 1


def test_int_of_an_integer_argument_is_the_way():
    assert script(int_of)(np.array(4)) == 5


def scaled_by_item(x: Tensor, y: Tensor):
    return x * y.sum().item()


def test_no_gradient_flows_through_item():
    x, y = np.ones(3), np.ones(2)
    with pytest.raises(ScriptError, match=r"Python number made from an array \(`\.item\(\)`\)") \
            as info:
        vjp(script(scaled_by_item), x, y)
    assert "y.sum().item()" in str(info.value)


def item_as_condition(x: Tensor):
    if x.sum().item() > 0:
        return np.tanh(x) * 2
    return x * x


@pytest.mark.parametrize("sign", [1.0, -1.0])
def test_item_off_the_gradient_path_differentiates(sign):
    x = sign * np.array([0.3, 0.5, 0.2])
    assert_same(script(item_as_condition)(x), item_as_condition(x))
    check_vjp(script(item_as_condition), (x,))


def truths(x: Tensor, m: Tensor):
    finite = np.all(np.isfinite(x))
    rows = (x > 0.5).any(axis=1)
    return finite, rows, x.all(), np.any(m, axis=0, keepdims=True), bool((x > -9).all()), \
        m.all(axis=(0, 1))


@pytest.mark.parametrize("dtype", ["float32", "float64"])
def test_all_and_any_are_numpys(dtype):
    x = np.array([[0.0, 0.7, 0.2], [0.9, np.inf, 1.0]], dtype)
    m = np.array([[[1, 0], [1, 1]], [[0, 0], [1, 1]]])
    got, want = script(truths)(x, m), truths(x, m)
    assert_same(got, want)
    assert type(got[4]) is bool
