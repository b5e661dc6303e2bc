"""numpy's scalar types as values (``dt = np.float32``, passed to a helper, compared with
``x.dtype``) are their dtype names, as ``x.dtype`` is; and ``np.eye``. Compiled equals plain
numpy."""

import numpy as np
import pytest

from script import Tensor, script
from tests.helpers import assert_same


def cast_to(x, dtype):
    return x.astype(dtype)


def cast_all(x, *dtypes):
    return [x.astype(d) for d in dtypes]


def dtypes(x: Tensor):
    dt = np.float32
    return (cast_to(x, np.float32), cast_to(x, dt), x.astype(dt), x.dtype == np.float32,
            x.dtype == np.float64, np.zeros(2, dtype=dt), cast_all(x, np.float64, np.int64))


def eyes(x: Tensor, n: int):
    return (np.eye(3), np.eye(n, 4, k=1), np.eye(2, dtype=np.float32), np.eye(3, k=-1) @ x,
            np.eye(n, dtype=int), np.eye(n)[np.array([0, 2, 1])])


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_scalar_types_as_values(dtype):
    x = np.linspace(-1, 1, 6).reshape(2, 3).astype(dtype)
    assert_same(script(dtypes)(x), dtypes(x))


def test_eye():
    x = np.random.default_rng(0).standard_normal((3, 2))
    assert_same(script(eyes)(x, 3), eyes(x, 3))
    assert_same(script(eyes)(x, 4), eyes(x, 4))
