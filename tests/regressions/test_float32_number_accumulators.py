"""Number accumulators over float32 values: in numpy ``0.0 + np.float32(...)`` is float32 (a
Python float is weak), so ``acc = 0.0; acc += np.sum(x)`` stays float32, and so does whatever it
scales (``x * acc``). The compiler gets this right for a plain name summing values of a dtype
known at compile time (the loop's first iteration gives the carried number its dtype), including
an item read back from a list the function builds (``l = [x]; acc += np.sum(l[0])``: the list's
items have x's type), but not yet for a list of accumulators (``accs = [0.0, 0.0];
accs[0] += np.sum(x)``): the list's numbers become 0-d float64 tensors (as ``np.asarray(0.0)``),
so the item and ``x * accs[0]`` come out float64.

Found by the program fuzzer (``number-accumulator`` with ``float32-accumulator``, pending)."""

import numpy as np
import pytest

from script import Tensor, script


def summed_into_a_name(x: Tensor) -> Tensor:
    acc = 0.0
    for i in range(2):
        acc += np.sum(x)
    return x * acc


def summed_into_a_list(x: Tensor) -> Tensor:
    accs = [0.0, 0.0]
    for i in range(2):
        accs[0] += np.sum(x)
    return x * accs[0]


def summed_from_a_list_item(x: Tensor) -> Tensor:
    l = [x]
    acc = 0.0
    for i in range(2):
        acc += np.sum(l[0])
    return x * acc


def _same(fn):
    x = np.linspace(-1.0, 1.0, 3).astype(np.float32)
    got, want = script(fn)(x), fn(x)
    np.testing.assert_allclose(got, want, rtol=1e-6)
    assert want.dtype == np.float32 and got.dtype == want.dtype


def test_a_number_accumulator_in_a_name_takes_numpys_dtype():
    _same(summed_into_a_name)


@pytest.mark.xfail(strict=True, reason="list items that start as numbers are 0-d float64 "
                   "tensors, not the dtype numpy's first update gives them")
def test_a_number_accumulator_in_a_list_takes_numpys_dtype():
    _same(summed_into_a_list)


def test_a_number_accumulator_of_a_list_item_takes_numpys_dtype():
    _same(summed_from_a_list_item)
