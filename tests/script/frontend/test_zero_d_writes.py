"""Writes into a 0-d array (``y[...] = v``, ``y[()] = v``, ``y.fill(v)``, ``y[...] += v``)
compute what numpy computes: the value in ``y``'s dtype, seen through every name of ``y``;
gradients equal finite differences; what numpy refuses raises numpy's ValueError, and an index
a 0-d array cannot take is a ScriptError at the user's line."""

import numpy as np
import pytest

from script import ScriptError, Tensor, script
from tests.gradcheck import check_vjp
from tests.helpers import assert_same


def total(x: Tensor):
    y = np.zeros((), dtype=x.dtype)
    y[...] = x.sum()
    return y


def best_row(x: Tensor):
    best = np.zeros((), dtype=x.dtype)
    for i in range(x.shape[0]):
        s = x[i].sum()
        if s > best:
            best[...] = s
    return best * 2


def updated(x: Tensor):
    y = np.zeros((), dtype=x.dtype)
    y[...] += x.sum()
    y[...] *= 2
    return y


def filled(x: Tensor):
    acc = np.empty((), dtype=x.dtype)
    acc.fill(0)
    for i in range(x.shape[0]):
        acc += x[i, 0]
    alias = acc
    acc.fill(acc * 3)
    return alias, acc


def element(x: Tensor):
    y = np.zeros((), dtype=np.int64)
    seen = y
    y[()] = x[0, 0] * 1.7
    return seen


def broadcast_one(x: Tensor):
    y = np.zeros((), dtype=np.int64)
    y[...] = x[:1, :1] * 1.7
    return y


CASES = [total, best_row, updated, filled, element, broadcast_one]


@pytest.mark.parametrize("fn", CASES, ids=lambda f: f.__name__)
@pytest.mark.parametrize("dtype", ["float32", "float64"])
def test_writes_into_0d_arrays_are_numpys(fn, dtype):
    x = (np.arange(6).reshape(2, 3) - 1.5).astype(dtype)
    assert_same(script(fn)(x), fn(x))


@pytest.mark.parametrize("fn", [total, best_row, updated, filled], ids=lambda f: f.__name__)
def test_gradients_through_0d_writes(fn):
    check_vjp(script(fn), (np.random.default_rng(0).standard_normal((3, 2)),))


def element_of_array(x: Tensor):
    y = np.zeros((), dtype=np.int64)
    y[()] = x[:1, :1]
    return y


def fill_with_array(x: Tensor):
    y = np.zeros(())
    y.fill(x[:1])
    return y


def broadcast_too_many(x: Tensor):
    y = np.zeros(())
    y[...] = x
    return y


@pytest.mark.parametrize("fn", [element_of_array, fill_with_array, broadcast_too_many],
                         ids=lambda f: f.__name__)
def test_what_numpy_refuses_raises_valueerror(fn):
    x = np.ones((2, 3))
    with pytest.raises(ValueError):
        fn(x)
    with pytest.raises(ValueError):
        script(fn)(x)


def sliced(x: Tensor):
    y = np.zeros(())
    y[:] = x.sum()
    return y


def test_a_slice_of_a_0d_array_is_refused_at_its_line():
    with pytest.raises(IndexError):
        sliced(np.ones(2))
    with pytest.raises(ScriptError, match=r"too many indices") as info:
        script(sliced)(np.ones(2))
    assert "y[:] = x.sum()" in str(info.value)


def fill_a_sum(x: Tensor):
    s = x.sum()
    s.fill(0.0)
    return s * 2


def write_a_sum(x: Tensor):
    s = x.sum()
    s[...] = 0.0
    return s


def fill_a_picked_item(x: Tensor):
    y = np.zeros(())
    z = y[()]
    z.fill(4.0)
    return y, z


def fill_a_known_sum(x: Tensor):
    s = np.zeros((2, 2)).sum()
    s.fill(1.0)
    return s


@pytest.mark.parametrize("fn", [fill_a_sum, write_a_sum], ids=lambda f: f.__name__)
def test_a_0d_value_numpy_holds_as_a_scalar_is_not_written(fn):
    """numpy's fill of a scalar changes nothing and its item write raises: refused (at the line
    where the compiler knows the value is 0-d, as a full reduction's is, else when it runs),
    never the value changed."""
    with pytest.raises((ScriptError, TypeError), match="numpy may hold as a scalar"):
        script(fn)(np.ones((2, 3)))


@pytest.mark.parametrize("fn", [fill_a_picked_item, fill_a_known_sum], ids=lambda f: f.__name__)
def test_a_write_into_a_scalar_is_refused_at_its_line(fn):
    with pytest.raises(ScriptError) as info:
        script(fn)(np.ones(2))
    assert ".fill(" in str(info.value)


def two_ellipses(x: Tensor):
    y = np.zeros(())
    y[..., ...] = 1.0
    return y


def fill_with_rows(x: Tensor):
    y = np.zeros((2, 3))
    y.fill(x[:2])
    return y


def test_more_refusals_as_numpys():
    with pytest.raises(ScriptError, match="too many indices for a 0-d array"):
        script(two_ellipses)(np.ones(2))
    with pytest.raises(ValueError):
        fill_with_rows(np.ones(3))
    with pytest.raises(ValueError, match="setting an array element with a sequence"):
        script(fill_with_rows)(np.ones(3))


def best_of_rows(x: Tensor):
    best = np.array(x[0].sum())
    for i in range(1, x.shape[0]):
        s = x[i].sum()
        if s > best:
            best[...] = s
    return best


def cast_then_write(x: Tensor):
    y = np.zeros(()).astype(x.dtype).copy()
    y[...] = x.sum()
    return y


def float32_accumulator(x: Tensor):
    acc = np.zeros((), dtype=np.float32)
    for i in range(x.shape[0]):
        acc += x[i].sum()
    return acc


@pytest.mark.parametrize("fn", [best_of_rows, cast_then_write, float32_accumulator],
                         ids=lambda f: f.__name__)
def test_0d_arrays_made_other_ways_are_written_as_numpy_writes_them(fn):
    x = np.random.default_rng(2).standard_normal((3, 2))
    assert_same(script(fn)(x), fn(x))


def refilled_then_replaced(x: Tensor):
    acc = np.zeros(())
    out = np.zeros(x.shape[0])
    for i in range(x.shape[0]):
        acc.fill(1.0)
        out[i] = acc
        acc = x[i].sum()
    return out


def test_a_write_into_what_a_later_step_replaces_with_a_scalar_is_refused():
    with pytest.raises(ScriptError, match="a later step of the loop") as info:
        script(refilled_then_replaced)(np.ones((3, 2)))
    assert "acc.fill(1.0)" in str(info.value)
