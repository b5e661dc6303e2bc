"""``accs = [0.0, 0.0]`` then ``accs[0] += np.sum(x)`` with a float32 ``x``: in numpy the item
becomes ``0.0 + np.float32(...)``, a float32 scalar (a Python float is weak), and so does
whatever it scales (``x * accs[0]`` stays float32). The compiler makes the list's numbers 0-d
float64 tensors (as ``np.asarray(0.0)``), so the item and ``x * accs[0]`` came out float64.
A number accumulator in a plain name (``acc = 0.0``) takes numpy's dtype; one in a list does not
yet. Found by the program fuzzer (``number-accumulator`` writing lists of accumulators)."""

import numpy as np
import pytest

from script import Tensor, script


def summed_into_a_list(x: Tensor) -> Tensor:
    accs = [0.0, 0.0]
    for i in range(2):
        accs[0] += np.sum(x)
    return x * accs[0]


def summed_into_a_name(x: Tensor) -> Tensor:
    acc = 0.0
    for i in range(2):
        acc += np.sum(x)
    return x * acc


def test_a_number_accumulator_in_a_name_takes_numpys_dtype():
    x = np.ones(3, np.float32)
    got, want = script(summed_into_a_name)(x), summed_into_a_name(x)
    assert want.dtype == np.float32 and got.dtype == want.dtype
    np.testing.assert_allclose(got, want, rtol=1e-6)


@pytest.mark.xfail(strict=True, reason="list items that start as numbers are 0-d float64 "
                   "tensors, not the dtype numpy's first update gives them")
def test_a_number_accumulator_in_a_list_takes_numpys_dtype():
    x = np.ones(3, np.float32)
    got, want = script(summed_into_a_list)(x), summed_into_a_list(x)
    np.testing.assert_allclose(got, want, rtol=1e-6)
    assert want.dtype == np.float32 and got.dtype == want.dtype
