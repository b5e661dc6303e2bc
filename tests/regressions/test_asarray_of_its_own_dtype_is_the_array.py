"""``np.asarray(a, dtype=<a's dtype>)`` and ``np.float64(a)`` of a float64 array return ``a``
itself in numpy: a write through one name shows through the other. The compiled code cast (a
copy) whenever the dtype was not known when the function compiled, so ``keep += 1.0`` left
``cur`` alone. Now it is ``a`` itself where the dtypes agree (decided when specializing): such a
write is refused, or followed, as for any two names of one array."""

import numpy as np
import pytest

from script import ScriptError, Tensor, script


def asarray_then_update(x: Tensor) -> Tensor:
    cur = x * 2.0
    keep = np.asarray(cur, dtype=np.float64)
    keep += 1.0
    return cur


def in_a_step(x: Tensor) -> Tensor:
    total = np.zeros(3)
    for t in range(x.shape[0]):
        cur = x[t] * 2.0
        keep = np.asarray(cur, dtype=np.float64)
        cur[1] = 9.0
        total = total + keep
    return total


def scalar_type_of_an_array(x: Tensor) -> Tensor:
    cur = x * 2.0
    keep = np.float64(cur)
    keep[0] = 99.0
    return cur


def cast_then_update(x: Tensor) -> Tensor:
    cur = x * 2.0
    keep = np.asarray(cur, dtype=np.float32)
    keep += 1.0
    return keep


@pytest.mark.parametrize("fn", [asarray_then_update, in_a_step, scalar_type_of_an_array])
def test_numpys_value_or_a_refusal(fn):
    x = np.arange(12.0).reshape(4, 3)
    want = fn(x.copy())
    try:
        got = script(fn)(x.copy())
    except ScriptError:
        return
    np.testing.assert_array_equal(got, want)


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_a_cast_to_another_dtype_is_a_new_array(dtype):
    x = np.arange(12.0, dtype=dtype).reshape(4, 3)
    got, want = script(cast_then_update)(x), cast_then_update(x)
    assert got.dtype == want.dtype
    np.testing.assert_array_equal(got, want)
