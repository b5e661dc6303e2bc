"""Number accumulators over float32 values: in numpy ``0.0 + np.float32(...)`` is float32 (a
Python float is weak), so ``acc = 0.0; acc += np.sum(x)`` stays float32, and so does whatever it
scales (``x * acc``). The loop's first iteration gives a carried number its dtype; the items of a
list the function builds have the type of what is stored into them, so an item read back
(``l = [x]; acc += np.sum(l[0])``) has x's dtype; and the numbers of a list of accumulators
(``accs = [0.0, 0.0]; accs[0] += np.sum(x)``) take the dtype of the 0-d arrays stored over them,
where each number is exact in it (an untouched ``accs[1]`` then scales a float32 array to float32,
as the Python float does).

Found by the program fuzzer (``number-accumulator`` with ``float32-accumulator``)."""

import numpy as np

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


def untouched_item_of_a_list(x: Tensor) -> Tensor:
    accs = [0.0, 0.0]
    for i in range(2):
        accs[0] += np.sum(x)
    return x * accs[1] + accs[0]


def inexact_number_in_a_list(x: Tensor) -> Tensor:
    accs = [0.1, 0.0]
    for i in range(2):
        accs[1] += np.sum(x)
    return x.astype(np.float64) * accs[0] + accs[1]


def _same(fn, dtype=np.float32):
    x = np.linspace(-1.0, 1.0, 3).astype(np.float32)
    got, want = script(fn)(x), fn(x)
    np.testing.assert_allclose(got, want, rtol=1e-6)
    assert want.dtype == dtype and got.dtype == want.dtype


def test_a_number_accumulator_in_a_name_takes_numpys_dtype():
    _same(summed_into_a_name)


def test_a_number_accumulator_in_a_list_takes_numpys_dtype():
    _same(summed_into_a_list)


def test_a_number_accumulator_of_a_list_item_takes_numpys_dtype():
    _same(summed_from_a_list_item)


def test_an_untouched_number_of_an_accumulator_list_scales_as_numpys():
    _same(untouched_item_of_a_list)


def test_a_number_not_exact_in_the_accumulators_dtype_keeps_its_value():
    # numpy multiplies the float64 array by 0.1 itself; a float32 0.1 would change the result
    _same(inexact_number_in_a_list, np.float64)
