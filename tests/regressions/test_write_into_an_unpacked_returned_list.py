"""``o, s = forward(x)`` where ``forward`` returns ``[o, s]``, two arrays it made, then
``o[rows, y] -= 1.`` (Denny Britz's ``bptt``) was refused as a write into "an array read from a
container": the unpacked list is a literal nothing else uses, so its items are the arrays the
callee made, which the caller may write into."""

from typing import List

import numpy as np

from script import Tensor, script


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
