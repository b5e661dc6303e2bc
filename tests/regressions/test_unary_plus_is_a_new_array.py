"""numpy's ``+a`` (``np.positive``) is a new array; the compiled code took it for ``a`` itself, so
``keep = +cur; cur += 1.0`` changed ``keep`` too."""

import numpy as np

from script import Tensor, script


def kept(x: Tensor) -> Tensor:
    cur = x * 2.0
    keep = +cur
    cur += 1.0
    return keep + cur * 0.0


def plus_of_a_number(x: Tensor, n: int) -> Tensor:
    return x * +n


def test_a_copy_kept_across_an_update():
    x = np.arange(3.0)
    np.testing.assert_array_equal(script(kept)(x), kept(x))


def test_plus_of_a_number_stays_a_number():
    x = np.arange(3.0, dtype=np.float32)
    got = script(plus_of_a_number)(x, 2)
    assert got.dtype == np.float32
    np.testing.assert_array_equal(got, plus_of_a_number(x, 2))
