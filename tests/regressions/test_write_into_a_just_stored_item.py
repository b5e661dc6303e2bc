"""min-char-rnn's one-hot, ``xs[t] = np.zeros((vocab_size, 1)); xs[t][inputs[t]] = 1``, was
refused ("an in-place write into xs[t] ... is not supported"). A write into a dict or list item
right after that item was stored as a new array (nothing used the container in between, nothing
else holds the array) writes the array and stores it again; anything else is still refused."""

from typing import Dict, List

import numpy as np
import pytest

from script import ScriptError, Tensor, script
from tests.gradcheck import check_vjp


def one_hots(inputs: List[int], W: Tensor, vocab_size: int) -> Tensor:
    xs = {}
    total = np.zeros((W.shape[0], 1))
    for t in range(len(inputs)):
        xs[t] = np.zeros((vocab_size, 1))
        xs[t][inputs[t]] = 1
        total = total + np.dot(W, xs[t])
    return total


def list_items(x: Tensor) -> List[Tensor]:
    out = [x * 1.0, x * 2.0]
    out[1] = np.zeros_like(x)
    out[1][0] = 5.0
    return out


def read_between(x: Tensor) -> Tensor:
    d: Dict[int, Tensor] = {}
    d[0] = np.zeros_like(x)
    y = d[0]
    d[0][0] = 5.0
    return y


def test_written_after_being_stored():
    rng = np.random.default_rng(0)
    args = ([1, 3, 0, 3], rng.standard_normal((2, 4)), 4)
    np.testing.assert_allclose(script(one_hots)(*args), one_hots(*args), rtol=1e-12)
    check_vjp(script(one_hots), args)
    x = rng.standard_normal(3)
    for got, want in zip(script(list_items)(x), list_items(x)):
        np.testing.assert_array_equal(got, want)


def test_a_read_in_between_is_still_refused():
    with pytest.raises(ScriptError, match="in-place write into d"):
        script(read_between)(np.ones(3))
