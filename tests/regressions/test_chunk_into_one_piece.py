"""`ops.chunk(x, 1, axis)[0]` is x itself; the compiled code returned the 1-tuple instead.

The graph is right (`tensor::chunk` with one output), but the generated Python assigned the eager
op's 1-tuple result to the single output, so the function returned `(x,)` and the next op saw a
tuple (or numpy turned it into an array of shape (1, ...)).
"""

import numpy as np

from script import Tensor, ops, script


def chunk_one(x: Tensor) -> Tensor:
    return ops.chunk(x, 1, 1)[0] + 1.0


def split_one(x: Tensor) -> Tensor:
    (only,) = np.split(x, 1, axis=0)
    return only


def test_chunk_into_one_piece_is_the_tensor():
    x = np.arange(6.0).reshape(2, 3)
    got = script(chunk_one)(x)
    assert isinstance(got, np.ndarray) and got.shape == (2, 3)
    np.testing.assert_array_equal(got, x + 1.0)


def test_split_into_one_piece_is_the_tensor():
    x = np.arange(6.0).reshape(2, 3)
    got = script(split_one)(x)
    assert isinstance(got, np.ndarray)
    np.testing.assert_array_equal(got, x)
