"""``b = a; b *= 0.5`` where ``a`` is numpy's scalar (a reduction's result, an item picked with
ints, a ufunc of a 0-d value): ``*=`` makes a new scalar and rebinds ``b`` alone. The compiled
code rebound every name of the value, so ``a`` changed too (``np.sum(x)`` returned 7.5 for 15),
and a running total started from such a scalar (``total = a; total += a`` in a loop) or one held
by a list was refused as a write that would change ``a``. An array of rank >= 1 still changes
under every name (numpy's in-place update), and what the compiled code cannot follow is still
refused; where the rank is known only when the function is specialized, the rank decides."""

import numpy as np
import pytest

from script import ScriptError, Tensor, script


def halved_sum(x: Tensor):
    a = np.sum(x)
    b = a
    b *= 0.5
    return a, b


def mean_plus_one(x: Tensor):
    a = x.mean()
    b = a
    b += 1.0
    return a, b


def scaled_dot(x: Tensor):
    v = x[0]
    a = np.dot(v, v)
    b = a
    b *= 2.0
    return a, b


def ufunc_of_0d(x: Tensor):
    a = np.exp(np.zeros(()))
    b = a
    b += np.sum(x)
    return a, b


def item_then_update(x: Tensor):
    h = np.tanh(x)
    a = h[0, 1]
    b = a
    b += 1.0
    a += 2.0
    return h, a, b


def running_total(x: Tensor):
    a = np.sum(x)
    total = a
    for _ in range(3):
        total += a
    return a, total


def held_by_a_list(x: Tensor):
    a = np.sum(x)
    kept = [a]
    a += 1.0
    return kept[0], a


def rank_decided_late(x: Tensor, per_column: bool):
    if per_column:
        a = np.sum(x, axis=0)
    else:
        a = np.sum(x)
    b = a
    b *= 2.0
    return a, b


def zero_d_array(x: Tensor):
    a = np.zeros(())
    b = a
    b += np.sum(x)  # an array: numpy writes into it, and a sees it
    return float(a), float(b)


def _same(got, want):
    assert len(got) == len(want)
    for g, w in zip(got, want):
        np.testing.assert_allclose(np.asarray(g), np.asarray(w), rtol=1e-6)
        assert np.ndim(g) == np.ndim(w)


def inner_product(x: Tensor):
    v = x.reshape(-1)
    a = np.inner(v, v)  # numpy's scalar (np.tensordot's would be a 0-d array)
    b = a
    b *= 2.0
    return a, b


def _total(x):
    return np.sum(x)


def helper_sum(x: Tensor):
    a = _total(x)  # the helper's result: numpy's scalar
    b = a
    b += 1.0
    return a, b


@pytest.mark.parametrize("fn", [halved_sum, mean_plus_one, scaled_dot, ufunc_of_0d,
                                item_then_update, running_total, held_by_a_list, zero_d_array,
                                helper_sum, inner_product])
@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_scalar_updates_rebind_one_name(fn, dtype):
    x = np.arange(6, dtype=dtype).reshape(2, 3) / 7
    _same(script(fn)(x.copy()), fn(x.copy()))


@pytest.mark.parametrize("per_column", [True, False])
def test_the_rank_decides_when_known_late(per_column):
    x = np.arange(6, dtype=np.float32).reshape(2, 3)
    _same(script(rank_decided_late)(x, per_column), rank_decided_late(x, per_column))


def halved_column_sums(x: Tensor):
    a = np.sum(x, axis=0)
    b = a
    b *= 0.5  # an array: a changes too
    return a, b


def test_an_array_still_changes_under_every_name():
    x = np.arange(6, dtype=np.float32).reshape(2, 3)
    got = script(halved_column_sums)(x)
    _same(got, halved_column_sums(x))
    np.testing.assert_array_equal(got[0], [1.5, 2.5, 3.5])


def running_array_total(x: Tensor):
    a = np.sum(x, axis=0)
    total = a
    for _ in range(3):
        total += a  # numpy: a is total, doubled each step
    return a, total


def row_view_update(x: Tensor):
    h = np.tanh(x)
    a = h[0]
    a += 1.0  # numpy: changes h's first row
    return h, a


@pytest.mark.parametrize("fn", [running_array_total, row_view_update])
def test_array_aliases_the_compiled_code_cannot_follow_stay_refused(fn):
    x = np.arange(6, dtype=np.float32).reshape(2, 3)
    with pytest.raises(ScriptError, match="would also change"):
        script(fn)(x)


def updated_twice_then_written(x: Tensor, per_column: bool):
    h = np.sum(x, axis=0) if per_column else np.sum(x)
    a = h
    h += 1.0
    h *= 2.0  # an array: a is h throughout; a scalar: a keeps the sum
    if per_column:
        h[0] = 7.0
    return a, h


@pytest.mark.parametrize("per_column", [True, False])
def test_updates_after_an_update_follow_the_rank(per_column):
    x = np.arange(6, dtype=np.float64).reshape(2, 3)
    _same(script(updated_twice_then_written)(x, per_column),
          updated_twice_then_written(x, per_column))


def copied_argument(x: Tensor):
    a = x.copy()  # an argument is an array, so its copy is one, 0-d or not
    b = a
    b += 1.0
    return a, b


def tensordot_result(x: Tensor):
    a = np.tensordot(x, x, 1)  # numpy gives a 0-d array here, not a scalar
    b = a
    b *= 2.0
    return a, b


def asarray_of_a_sum(x: Tensor):
    a = np.asarray(np.sum(x))  # a new 0-d array
    b = a
    b += 1.0
    return a, b


def _accumulator(x):
    return np.zeros(())


def helper_made(x: Tensor):
    a = _accumulator(x)
    b = a
    b += 1.0
    return a, b


def other_name_updated_after(x: Tensor):
    a = np.sum(x, axis=0)
    b = a
    b += 1.0
    a += 1.0  # one array: both names see both updates
    c = a
    c *= 2.0
    return a, b, c


def gradient_through_both_names(x: Tensor):
    a = np.max(x * x, axis=-1)
    b = a
    b += 1.0
    a *= 2.0
    return np.sum(a * b)


@pytest.mark.parametrize("fn, shape", [
    (fn, shape) for fn in (copied_argument, tensordot_result, asarray_of_a_sum, helper_made,
                           other_name_updated_after, gradient_through_both_names)
    for shape in ((3,), (2, 3), ())
    if shape or fn in (copied_argument, asarray_of_a_sum, helper_made)])
def test_arrays_that_are_not_made_as_such_still_change_under_every_name(fn, shape):
    x = np.array(np.arange(float(np.prod(shape))).reshape(shape) / 3 + 0.5)
    try:
        want = fn(x.copy())
    except (ValueError, IndexError):  # (np.tensordot of a 0-d or 2-D x: numpy refuses it)
        return
    got = script(fn)(x.copy())
    got, want = (got, want) if isinstance(want, tuple) else ((got,), (want,))
    for g, w in zip(got, want):
        np.testing.assert_allclose(np.asarray(g), np.asarray(w), rtol=1e-12)


def test_the_gradient_follows_both_names():
    from script import vjp
    x = np.random.default_rng(0).standard_normal((2, 3))
    out, back = vjp(gradient_through_both_names, x)
    (grad,) = back(1.0)
    eps, want = 1e-6, np.zeros_like(x)
    for i in np.ndindex(x.shape):
        up, down = x.copy(), x.copy()
        up[i] += eps
        down[i] -= eps
        want[i] = (gradient_through_both_names(up) - gradient_through_both_names(down)) / (2 * eps)
    np.testing.assert_allclose(out, gradient_through_both_names(x.copy()))
    np.testing.assert_allclose(grad, want, rtol=1e-6, atol=1e-8)


def item_view(x: Tensor):
    h = np.tanh(x)
    a = h[1, ...]  # a 0-d view of h
    a += 1.0
    return h, a


def reshaped_view(x: Tensor):
    h = np.tanh(x)
    a = h.reshape(())
    b = a
    b += 1.0
    return h, b


@pytest.mark.parametrize("fn, shape", [(item_view, (3,)), (reshaped_view, (1, 1))])
def test_0d_views_stay_refused(fn, shape):
    with pytest.raises(ScriptError, match="would also change"):
        script(fn)(np.ones(shape))


class Accumulator:
    def __init__(self, total):
        self.total = total

    def add(self, x):
        self.total += np.sum(x)


def add_twice(acc: Accumulator, x: Tensor):
    acc.add(x)
    acc.add(x)
    return acc.total


def test_a_method_updating_a_scalar_attribute_twice_raises_instead_of_dropping_the_update():
    # the second call's += met numpy's scalar the first one stored, which it cannot update in
    # place: the update was dropped (4.0 for numpy's 7.0); now it raises
    x = np.arange(3.0)
    with pytest.raises(TypeError, match="numpy's scalar"):
        script(add_twice)(Accumulator(1.0), x)
    acc = Accumulator(np.zeros(()))  # a 0-d array is updated in place, as numpy does
    assert script(add_twice)(acc, x) == add_twice(Accumulator(np.zeros(())), x) == 6.0


def loss_from_a_number(x: Tensor, reg: float):
    loss = 0.5 * reg
    for i in range(x.shape[0]):
        loss += np.sum(x[i] ** 2)
    return loss


def copy_then_alias(x: Tensor):
    e = np.sum(x).copy()  # numpy's scalar's copy: a scalar
    b = e
    b -= 2.0
    return e, b


def asarray_then_update(x: Tensor):
    a = np.sum(x, axis=0)
    b = np.asarray(a)  # a itself where a has axes, a new 0-d array where it is a scalar
    b += 1.0
    return a, b


@pytest.mark.parametrize("shape", [(3,), (2, 3)])
def test_accumulators_copies_and_asarray(shape):
    x = np.arange(float(np.prod(shape))).reshape(shape)
    assert script(loss_from_a_number)(x, 0.1) == loss_from_a_number(x, 0.1)
    _same(script(copy_then_alias)(x), copy_then_alias(x))
    got, want = script(asarray_then_update)(x.copy()), asarray_then_update(x.copy())
    for g, w in zip(got, want):
        np.testing.assert_array_equal(np.asarray(g), np.asarray(w))


def add_twice_inline(acc: Accumulator, x: Tensor):
    acc.total += np.sum(x)  # a number plus numpy's scalar: a scalar, stored in the attribute
    acc.total += np.sum(x)  # (was refused as an in-place update of the attribute's array)
    return acc.total


def add_columns_twice(acc: Accumulator, x: Tensor):
    acc.total += np.sum(x, axis=0)
    acc.total += np.sum(x, axis=0)  # an array's update in place: still refused
    return acc.total


def test_a_scalar_attribute_updated_twice_in_the_function_itself():
    x = np.arange(6.0).reshape(2, 3)
    acc, want = Accumulator(1.0), add_twice_inline(Accumulator(1.0), x)
    assert script(add_twice_inline)(acc, x) == want == 31.0
    assert acc.total == 31.0
    with pytest.raises(ScriptError, match="updates the array"):
        script(add_columns_twice)(Accumulator(1.0), x)
