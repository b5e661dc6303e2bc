"""A tuple returned early from inside a ``while`` loop: until a step returns, the loop carries
placeholders for the tuple's items, and the ``if`` of the step that may return passes a tuple of
them on. The checks of a verified run (``RNNSCRIPT_VERIFY``, on in the tests) took that tuple's
items for values and raised a TypeMismatch ("item 0: a NoneType where a tensor was expected");
the program's values were right. Found by the program fuzzer."""

from typing import Tuple

import numpy as np
import pytest

from script import Tensor, script


def early_tuple(x: Tensor, n: int) -> Tuple[Tensor, float, Tensor]:
    w = 0
    while w < 3:
        w += 1
        if w > n:
            return x * 2.0, 1.0, x - 0.5
    a = np.zeros((2,), dtype=np.float32)
    a += x
    return a * 1.0, 0.5, a


@pytest.mark.parametrize("n", [0, 1, 5])
def test_a_tuple_returned_early_from_a_loop(n):
    x = np.array([0.1, -0.4], np.float32)
    want, got = early_tuple(x.copy(), n), script(early_tuple)(x.copy(), n)
    assert [type(g) for g in got] == [type(w) for w in want]
    for w, g in zip(want, got):
        np.testing.assert_allclose(g, w, rtol=1e-6)
