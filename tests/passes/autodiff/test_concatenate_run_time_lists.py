"""The gradient of ``np.concatenate`` of a list whose length (a loop over ``range(n)``, a
``while``, conditional appends) or items' sizes along the axis are only known at run time: the
backward cuts the incoming gradient at the sizes the items had when the concatenation ran.

Each case: the compiled result equals the plain Python function (float32 and float64), and the
gradients equal central finite differences (float64) for several lengths, one included.
"""

from __future__ import annotations

from typing import List

import numpy as np
import pytest

from script import Tensor, script, vjp
from script.errors import ScriptError
from tests.gradcheck import check_vjp


def rows(x: Tensor, W: Tensor, n: int) -> Tensor:
    xs = []
    for i in range(n):
        xs.append(np.tanh(x[i] @ W))
    return np.concatenate(xs, axis=0)


def growing_rows(x: Tensor, W: Tensor, n: int) -> Tensor:
    xs = []
    for i in range(n):
        xs.append(np.tanh(x[: i + 1] @ W))  # item i has i + 1 rows
    return np.concatenate(xs, axis=0)


def growing_columns(x: Tensor, W: Tensor, n: int) -> Tensor:
    xs = []
    for i in range(n):
        xs.append(np.tanh(x[:, : i + 1] * W[0, 0]))
    return np.concatenate(xs, axis=-1)


def conditional_appends(x: Tensor, W: Tensor, n: int) -> Tensor:
    xs = [x[0] @ W]
    for i in range(n):
        if i % 2 == 0:
            xs.append(np.tanh(x[i] @ W))
    return np.concatenate(xs, axis=1)


def appended_after(x: Tensor, W: Tensor, n: int) -> Tensor:
    xs = []
    for i in range(n):
        xs.append(np.tanh(x[i] @ W))
    y = np.concatenate(xs, axis=0)
    xs.append(y * 2.0)  # not a piece of y
    return y.sum() + xs[-1].sum() * 3.0 + xs[0].sum()


def joined_every_step(x: Tensor, W: Tensor, n: int) -> Tensor:
    xs = []
    total = np.zeros((1, W.shape[1]))
    for i in range(n):
        xs.append(np.tanh(x[i] @ W))
        total = total + np.concatenate(xs, axis=0).sum(axis=0, keepdims=True)
    return total


def while_appends(x: Tensor, W: Tensor, n: int) -> Tensor:
    xs = []
    i = 0
    while i < n:
        xs.append(np.tanh(x[i] @ W))
        i += 1
    return np.concatenate(xs, axis=0)


def over_a_list_argument(items: List[Tensor], W: Tensor) -> Tensor:
    xs = []
    for i in range(len(items)):
        xs.append(np.tanh(items[i] @ W))
    return np.concatenate(xs, axis=0)


CASES = [rows, growing_rows, growing_columns, conditional_appends, appended_after,
         joined_every_step, while_appends]


def _args(fn, rng: np.random.Generator):
    x = rng.standard_normal((2, 4) if fn is growing_columns else
                            (4, 3) if fn is growing_rows else (4, 2, 3))
    return x, rng.standard_normal((3, 3))


@pytest.mark.parametrize("fn", CASES, ids=lambda f: f.__name__)
def test_compiled_equals_python(fn):
    compiled = script(fn)
    for n in (1, 2, 4):
        for dtype in ("float32", "float64"):
            x, W = (a.astype(dtype) for a in _args(fn, np.random.default_rng(n)))
            got, want = compiled(x, W, n), fn(x, W, n)
            assert np.asarray(got).dtype == np.asarray(want).dtype
            np.testing.assert_allclose(got, want, rtol=1e-5 if dtype == "float32" else 1e-12)


@pytest.mark.parametrize("fn", CASES, ids=lambda f: f.__name__)
@pytest.mark.parametrize("n", [1, 3])
def test_gradients_match_finite_differences(fn, n):
    check_vjp(script(fn), (*_args(fn, np.random.default_rng(n)), n))


def test_items_of_a_list_argument_of_differing_sizes():
    rng = np.random.default_rng(0)
    W = rng.standard_normal((3, 3))
    for sizes in ((2,), (1, 3, 2)):
        items = [rng.standard_normal((k, 3)) for k in sizes]
        np.testing.assert_allclose(script(over_a_list_argument)(items, W),
                                   over_a_list_argument(items, W), rtol=1e-12)
        check_vjp(script(over_a_list_argument), (items, W))


def rebuilt_in_a_loop(x: Tensor, W: Tensor, n: int) -> Tensor:
    xs = []
    for i in range(n):
        xs = xs + [np.tanh(x[i] @ W)]  # a new list each step: its items cannot be followed
    return np.concatenate(xs, axis=0)


def test_a_list_rebuilt_in_a_loop_is_refused_at_the_concatenation():
    x, W = _args(rows, np.random.default_rng(0))
    with pytest.raises(ScriptError, match="cannot differentiate np.concatenate of a list made "
                       "by a loop: build the list with a literal or appends") as err:
        vjp(script(rebuilt_in_a_loop), x, W, 1)  # (2, an axis, would be compiled in)
    assert "return np.concatenate(xs, axis=0)" in str(err.value)


def joined_again(W: Tensor, x: Tensor, a: Tensor) -> Tensor:
    # the clockwork RNN's `np.concatenate([H_0 for _ in range(B)], axis=1)` (pranv/clockwork_rnn)
    # joined again with another array: the second join's list holds items of two shapes
    hs = []
    for t in range(3):
        hs.append(np.tanh(x * t))
    H = np.concatenate(hs, axis=1)
    return W @ np.concatenate([H, a], axis=0)


def test_a_join_of_a_joined_list_and_another_array_differentiates():
    # the second join was typed from the item type assumed for its list, (1, 3), after the
    # assumption was dropped: an internal compiler error
    rng = np.random.default_rng(5)
    args = (rng.standard_normal((2, 3)), rng.standard_normal((2, 1)), rng.standard_normal((1, 3)))
    np.testing.assert_allclose(script(joined_again)(*args), joined_again(*args), rtol=1e-12)
    check_vjp(script(joined_again), args)


def along(a: Tensor, b: Tensor, axis: int) -> Tensor:
    return np.concatenate((np.tanh(a), np.tanh(b)), axis=axis)


def test_a_concatenation_along_an_axis_argument_is_refused_at_its_line():
    # (an internal compiler error before: the backward read the axis as a constant)
    a, b = np.ones((2, 3)), np.ones((2, 3))
    np.testing.assert_allclose(script(along)(a, b, 1), along(a, b, 1))
    with pytest.raises(ScriptError, match="np.concatenate along an axis known only when it "
                       "runs") as err:
        vjp(script(along), a, b, 1)
    assert "return np.concatenate((np.tanh(a), np.tanh(b)), axis=axis)" in str(err.value)
