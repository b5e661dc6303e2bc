"""Gradients through lists of weights (``List[Tensor]`` arguments) read by index, in loops,
branches and helpers: they equal central finite differences, and reads the compiler does not
take are refused with a clear error."""

from __future__ import annotations

import re
from pathlib import Path
from typing import List

import numpy as np
import pytest

from script import Tensor, script, vjp
from script.errors import ScriptError
from tests.gradcheck import check_vjp
from tests.helpers import assert_same, rand, rng
from tests.programs.layers import mlp


def first_and_last(x: Tensor, ws: List[Tensor]) -> Tensor:
    return x @ ws[-1] + x @ ws[0]


def read_backwards(x: Tensor, ws: List[Tensor]) -> Tensor:
    n = len(ws)
    for i in range(n):
        x = x * ws[n - 1 - i]
    return x


def nested_counters(x: Tensor, ws: List[Tensor]) -> Tensor:
    for layer in range(2):
        for j in range(2):
            x = np.tanh(x * ws[2 * layer + j])
    return x


def read_in_branch(x: Tensor, ws: List[Tensor], flag: bool) -> Tensor:
    for i in range(len(ws)):
        if flag:
            x = x * ws[i]
        else:
            x = x + ws[len(ws) - 1 - i]
    return x


def layer(x: Tensor, ws: List[Tensor], i: int) -> Tensor:
    return np.tanh(x @ ws[i])


def through_a_helper(x: Tensor, ws: List[Tensor]) -> Tensor:
    for i in range(len(ws)):
        x = layer(x, ws, i)
    return x


def weights_and_biases(x: Tensor, ws: List[Tensor], bs: List[Tensor]) -> Tensor:
    for i in range(len(ws)):
        x = np.tanh(x @ ws[i] + bs[i])
    return x


def layers_inside_time(xs: Tensor, ws: List[Tensor]) -> Tensor:
    h = xs[0]
    for t in range(xs.shape[0]):
        for i in range(len(ws)):
            h = np.tanh(xs[t] @ ws[i] + h)
    return h


def for_each_item(x: Tensor, ws: List[Tensor]) -> Tensor:
    for i, w in enumerate(ws):
        x = x * w + ws[i]
    return x


def returns_the_list(x: Tensor, ws: List[Tensor]) -> List[Tensor]:
    return ws


def nested_lists(x: Tensor, ws: List[List[Tensor]]) -> Tensor:
    for i in range(len(ws)):
        for j in range(len(ws[i])):
            x = np.tanh(x @ ws[i][j])
    return x


def while_over_list(x: Tensor, ws: List[Tensor]) -> Tensor:
    i = 0
    while i < len(ws):
        x = x @ ws[i]
        i += 1
    return x


LIST_CASES = [
    (mlp, lambda r: (rand(r, (2, 3)), [rand(r, (3, 4)), rand(r, (4, 4)), rand(r, (4, 2))])),
    (mlp, lambda r: (rand(r, (2, 3)), [rand(r, (3, 4))])),
    (first_and_last, lambda r: (rand(r, (2, 3)), [rand(r, (3, 4)), rand(r, (3, 5)),
                                                 rand(r, (3, 4))])),
    (read_backwards, lambda r: (rand(r, (2, 3)), [rand(r, (3,)), rand(r, (2, 3)),
                                                 rand(r, (1, 3))])),
    (nested_counters, lambda r: (rand(r, (2, 3)), [rand(r, (3,)), rand(r, (2, 3)), rand(r, (1, 3)),
                                                  rand(r, (3,))])),
    (read_in_branch, lambda r: (rand(r, (2, 3)), [rand(r, (3,)), rand(r, (2, 3))], True)),
    (read_in_branch, lambda r: (rand(r, (2, 3)), [rand(r, (3,)), rand(r, (2, 3))], False)),
    (through_a_helper, lambda r: (rand(r, (2, 3)), [rand(r, (3, 3)), rand(r, (3, 2))])),
    (weights_and_biases, lambda r: (rand(r, (2, 3)), [rand(r, (3, 4)), rand(r, (4, 2))],
                                    [rand(r, (4,)), rand(r, (2,))])),
    (layers_inside_time, lambda r: (rand(r, (4, 2, 3)), [rand(r, (3, 3)), rand(r, (3, 3))])),
    (for_each_item, lambda r: (rand(r, (2, 3)), [rand(r, (3,)), rand(r, (2, 3))])),
    # a list of lists: given to the graph as its arrays (passes.autodiff.nested_inputs)
    (nested_lists, lambda r: (rand(r, (2, 3)), [[rand(r, (3, 3))], [rand(r, (3, 2))]])),
]


@pytest.mark.parametrize("fn, make", LIST_CASES,
                         ids=[f"{fn.__name__}-{k}" for k, (fn, _) in enumerate(LIST_CASES)])
def test_list_argument_gradients_match_finite_differences(fn, make):
    check_vjp(fn, make(rng(3)))


def test_lists_of_other_lengths_in_consecutive_calls():
    r = rng(1)
    f = script(mlp)
    x = rand(r, (2, 3))
    for ws in ([rand(r, (3, 4)), rand(r, (4, 2))], [rand(r, (3, 3))],
               [rand(r, (3, 4)), rand(r, (4, 4)), rand(r, (4, 2))],
               [rand(r, (3, 5)), rand(r, (5, 2))]):
        out, backward = vjp(f, x, ws)
        assert_same(out, mlp(x, ws), rtol=1e-12, atol=1e-12)
        _, dws = backward(np.ones_like(out))
        assert isinstance(dws, list) and [g.shape for g in dws] == [w.shape for w in ws]
        assert all(np.abs(g).sum() > 0 for g in dws)


def test_empty_list_of_weights():
    x = rand(rng(), (2, 3))
    out, backward = vjp(script(mlp), x, [])
    assert_same(out, x, rtol=1e-12, atol=1e-12)
    dx, dws = backward(np.full_like(x, 2.0))
    assert_same(dx, np.full_like(x, 2.0), rtol=1e-12, atol=1e-12)
    assert dws is None  # nothing flows into an empty list


def test_returned_list_passes_its_cotangent_through():
    r = rng(2)
    x, ws = rand(r, (2, 3)), [rand(r, (3, 3)), rand(r, (4,))]
    out, backward = vjp(script(returns_the_list), x, ws)
    assert isinstance(out, list) and all(a is b or np.array_equal(a, b) for a, b in zip(out, ws))
    cts = [np.full((3, 3), 2.0), np.full(4, 3.0)]
    dx, dws = backward(cts)
    assert_same(dx, np.zeros_like(x), rtol=1e-12, atol=1e-12)
    assert [g.tolist() for g in dws] == [c.tolist() for c in cts]


@pytest.mark.parametrize("fn, args", [
    (mlp, lambda r: (rand(r, (2, 3)), [0.3 * rand(r, (3, 3)) for _ in range(20)])),  # > 16 trips
    (while_over_list, lambda r: (rand(r, (2, 3)), [rand(r, (3, 4)), rand(r, (4, 2))])),
], ids=["long", "while"])
def test_unsupported_list_reads_are_refused_clearly(fn, args):
    a = args(rng(4))
    fn(*a)  # eager runs
    assert_same(script(fn)(*a), fn(*a), rtol=1e-12, atol=1e-12)  # and so does the compiled one
    where = re.escape(Path(fn.__code__.co_filename).name)  # the file the function is in
    with pytest.raises(ScriptError, match=where + r":\d+:\d+: cannot differentiate"):
        vjp(script(fn), *a)
