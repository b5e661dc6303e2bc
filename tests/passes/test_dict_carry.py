"""Dict items carried (``passes.dict_carry``): a loop keeping its steps in a dict keyed by the
step (``hs[t] = f(hs[t - 1])``) reads the previous step's item as a carried value, with the plain
function's results and gradients; a read Python would raise ``KeyError`` on still raises it."""

from __future__ import annotations

from typing import List

import numpy as np
import pytest

from script import Tensor, script
from tests.gradcheck import check_vjp
from tests.helpers import assert_same, assert_same_at


def steps_in_a_dict(xs: List[Tensor], h0: Tensor, W: Tensor, U: Tensor) -> Tensor:
    hs = {}
    hs[-1] = np.copy(h0)
    total = np.zeros_like(h0)
    for t in range(len(xs)):
        hs[t] = np.tanh(np.dot(W, xs[t]) + np.dot(U, hs[t - 1]))
        total = total + hs[t] * hs[t - 1]
    return total + hs[len(xs) - 1]


def steps_from_one(xs: List[Tensor], h0: Tensor, W: Tensor, U: Tensor) -> Tensor:
    hs = {}
    hs[0] = h0 * 1.0
    for t in range(len(xs)):
        hs[t + 1] = np.tanh(np.dot(W, xs[t]) + np.dot(U, hs[t]))
    return hs[len(xs)] + hs[0]


def first_key_missing(xs: List[Tensor], h0: Tensor, W: Tensor, U: Tensor) -> Tensor:
    hs = {}
    hs[0] = h0 * 1.0
    for t in range(len(xs)):
        hs[t] = np.tanh(np.dot(W, xs[t]) + np.dot(U, hs[t - 1]))
    return hs[0]


def first_key_at_run_time(xs: List[Tensor], h0: Tensor, W: Tensor, U: Tensor, k: int) -> Tensor:
    hs = {}
    hs[-1] = h0 * 1.0
    hs[k] = h0 * 2.0
    for t in range(len(xs)):
        hs[t] = np.tanh(np.dot(W, xs[t]) + np.dot(U, hs[t - 1]))
    return hs[len(xs) - 1]


def args(T: int, dtype: str, seed: int = 0) -> tuple:
    rng = np.random.default_rng(seed)

    def f(*s):
        return (rng.standard_normal(s) * 0.5).astype(dtype)
    return [f(4, 1) for _ in range(T)], f(3, 1), f(3, 4), f(3, 3)


def loop_reads(f, *a) -> list[str]:
    """The dict reads left in the bodies of ``f``'s loops for ``a``."""
    return [n.kind for loop in f.graph_for(*a).walk() if loop.kind == "prim::Loop"
            for n in loop.blocks[0].walk() if n.kind == "prim::DictGetItem"]


@pytest.mark.parametrize("dtype", ["float32", "float64"])
@pytest.mark.parametrize("fn", [steps_in_a_dict, steps_from_one], ids=lambda f: f.__name__)
def test_the_previous_steps_item_is_carried_with_the_plain_results(fn, dtype):
    for T in (0, 1, 5):
        a = args(T, dtype)
        f = script(fn)
        assert_same_at(f(*a), fn(*a))
        assert not loop_reads(f, *a)


@pytest.mark.parametrize("fn", [steps_in_a_dict, steps_from_one], ids=lambda f: f.__name__)
def test_gradients_through_carried_dict_items_match_finite_differences(fn):
    check_vjp(fn, args(4, "float64"))


def test_a_first_key_nothing_stored_raises_key_error_as_python():
    f = script(first_key_missing)
    a = args(3, "float64")
    with pytest.raises(KeyError):
        first_key_missing(*a)
    with pytest.raises(KeyError):
        f(*a)
    assert loop_reads(f, *a)
    assert_same(f(*args(0, "float64")), first_key_missing(*args(0, "float64")))


@pytest.mark.parametrize("k", [-1, 0, 7])
def test_a_first_key_a_run_time_store_may_overwrite_reads_the_dict(k):
    a = (*args(4, "float64"), k)
    f = script(first_key_at_run_time)
    assert_same(f(*a), first_key_at_run_time(*a))
    assert loop_reads(f, *a)
