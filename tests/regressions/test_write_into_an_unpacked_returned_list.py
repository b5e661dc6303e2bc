"""``o, s = forward(x)`` where ``forward`` returns ``[o, s]``, two arrays it made, then
``o[rows, y] -= 1.`` (Denny Britz's ``bptt``) was refused as a write into "an array read from a
container": the unpacked list is a literal nothing else uses, so its items are the arrays the
callee made, which the caller may write into."""

from typing import List

import numpy as np
import pytest

from script import ScriptError, Tensor, script


def forward(x: Tensor, W: Tensor):
    o = np.tanh(x.dot(W))
    s = np.zeros((3, 3))
    s[0] = o[0]
    return [o, s]


def first_output_corrected(x: Tensor, W: Tensor, y: List[int]) -> Tensor:
    o, s = forward(x, W)
    total = np.sum(s)
    delta_o = o
    delta_o[np.arange(len(y)), y] -= 1.
    return delta_o * total


def test_the_callers_write_into_an_unpacked_item_is_followed():
    rng = np.random.default_rng(0)
    args = (rng.standard_normal((3, 3)), rng.standard_normal((3, 3)), [0, 2, 1])
    np.testing.assert_allclose(script(first_output_corrected)(*args),
                               first_output_corrected(*args), rtol=1e-12)


def bptt_like(x: Tensor, W: Tensor, y: List[int]) -> Tensor:
    o, s = forward(x, W)
    delta_o = o
    delta_o[np.arange(len(y)), y] -= 1.
    return delta_o * np.sum(s)  # s is read after the write into o


def same_array_twice(x: Tensor) -> Tensor:
    a = x * 2.0
    p, q = pair_of(a)
    p[0] = 7.0
    return q


def pair_of(a: Tensor):
    return [a, a]


def test_items_made_by_different_ops_are_different_arrays():
    """Denny Britz's ``bptt`` writes into ``o`` while ``s`` (the other item of the returned
    list) is still read: the list's items share a storage class, but the callee made them with
    different ops, so they are different arrays; the same array twice is still followed."""
    rng = np.random.default_rng(1)
    args = (rng.standard_normal((3, 3)), rng.standard_normal((3, 3)), [2, 0, 1])
    np.testing.assert_allclose(script(bptt_like)(*args), bptt_like(*args), rtol=1e-12)
    with pytest.raises(ScriptError, match="would also change 'q'"):
        script(same_array_twice)(rng.standard_normal(3))
