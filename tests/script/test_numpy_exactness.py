"""numpy's own results where compiled code once differed: a row picked by an integer array's
item is a view in numpy, so the compiled code must not compute into it (it wrote into the
caller's array); fused kernels round each multiply and add as numpy does (no FMA: a product
that overflows stays inf, an exact cancellation stays 0); ``abs`` of a Python number is a
Python number."""

import numpy as np
import pytest

from script import Tensor, script
from tests.helpers import assert_same


def row_of_argmax(x: Tensor):
    return x[np.argmax(x.sum(axis=1))] * 2


def rows_of_items(x: Tensor, idx: Tensor):
    out = []
    for t in idx:
        out.append(x[t] * 2)
    return out, np.take(x, idx[0], axis=0) + 1, x[:, idx[0]] * 3


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_a_row_picked_by_an_array_item_is_not_written(dtype):
    x = np.arange(6, dtype=dtype).reshape(2, 3)
    before = x.copy()
    assert_same(script(row_of_argmax)(x), row_of_argmax(x.copy()))
    idx = np.array([1, -1, 1])
    assert_same(script(rows_of_items)(x, idx), rows_of_items(x.copy(), idx))
    np.testing.assert_array_equal(x, before)


def multiply_add(a: Tensor, b: Tensor, c: Tensor):
    return a * b + c, np.sign(a * a - c)


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_fused_arithmetic_rounds_each_op(dtype):
    big = np.finfo(dtype).max
    a = np.array([big, 0.1, big, 3.0], dtype)
    b = np.array([-2.5, 0.1, big, 2.0], dtype)
    c = np.array([big, 0.0, -np.inf, 1.0], dtype)
    c[1] = a[1] * a[1]
    with np.errstate(all="ignore"):
        assert_same(script(multiply_add)(a, b, c), multiply_add(a, b, c))


def absolute(x: Tensor, n: int, f: float, flag: bool):
    return abs(x), abs(n) * 10**18, abs(f), abs(flag), abs(x.sum())


def test_abs_of_a_python_number_is_pythons():
    x = np.array([-1.5, 2.0])
    got = script(absolute)(x, -10, -2.5, True)
    assert_same(got, absolute(x, -10, -2.5, True))
    assert type(got[1]) is int and type(got[2]) is float and type(got[3]) is int


def writes_into_results(x: Tensor):
    y = np.clip(x, 0.0, 1.0)
    y[0] = 5.0  # np.clip's result is a new array: the write does not reach x
    z = np.sign(x)
    z += 2
    return y, z, x


def test_writes_into_new_arrays_of_clip_and_sign():
    x = np.array([-1.5, 0.5, 2.0])
    assert_same(script(writes_into_results)(x.copy()), writes_into_results(x.copy()))
