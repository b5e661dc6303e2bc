"""numpy's own results where compiled code once differed: a row picked by an integer array's
item is a view in numpy, so the compiled code must not compute into it (it wrote into the
caller's array); fused kernels round each multiply and add as numpy does (no FMA: a product
that overflows stays inf, an exact cancellation stays 0); ``abs`` of a Python number is a
Python number."""

from typing import List

import numpy as np
import pytest

from script import ArgumentShapeError, ScriptError, Tensor, script
from tests.gradcheck import check_vjp
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


def signed_zeros(a: Tensor, b: Tensor, lo: Tensor, hi: Tensor):
    # each result times 1.0 so that it comes from a fused kernel, not from numpy itself
    return (np.minimum(a, b) * 1.0, np.maximum(a, b) * 1.0, np.sign(a) * 1.0,
            np.tanh(a) * 2.0, np.clip(a, 0.0, 1.0) * 1.0, np.clip(a, -1.0, -0.0) * 1.0,
            np.clip(a, lo, hi) * 1.0, np.clip(a, None, hi) * 1.0, np.maximum(a, 0.0) * 1.0)


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_signed_zeros_and_nans_follow_numpy(dtype):
    """numpy's minimum/maximum take the second operand where the two are equal (-0.0 and 0.0),
    clip by two numbers keeps x there and clip by an array takes the bound, sign(-0.0) is 0.0
    and tanh(-0.0) is -0.0; a nan on either side is the result."""
    vals = np.array([-0.0, 0.0, 1.0, -1.0, np.nan, np.inf, -np.inf, 2.5], dtype)
    a, b = (np.ascontiguousarray(v) for v in np.meshgrid(vals, vals))
    a, b = a.ravel(), b.ravel()
    got = script(signed_zeros)(a, b, b, b[::-1].copy())
    want = signed_zeros(a, b, b, b[::-1].copy())
    for k, (g, w) in enumerate(zip(got, want)):
        assert g.dtype == w.dtype
        np.testing.assert_array_equal(np.signbit(g), np.signbit(w), err_msg=str(k))
        tol = 1e-6 if k == 3 and dtype == np.float32 else 0  # float32 tanh: within 4e-7
        np.testing.assert_allclose(g, w, rtol=tol, atol=0, err_msg=str(k))


def scale_in_place(x: Tensor, y: Tensor):
    x = x.copy()
    x *= y
    return x


def test_in_place_update_keeps_the_targets_shape():
    """``x *= y`` writes into ``x``: numpy raises where ``x * y`` has a larger shape."""
    f = script(scale_in_place)
    x = np.ones(3)
    assert_same(f(x, np.full((3,), 2.0)), scale_in_place(x, np.full((3,), 2.0)))
    assert_same(f(np.ones((2, 3)), np.arange(3.0)), scale_in_place(np.ones((2, 3)), np.arange(3.0)))
    for y in (np.ones((2, 3)), np.ones((1, 3))):
        with pytest.raises(ValueError):
            scale_in_place(x, y)
        with pytest.raises(ValueError):
            f(x, y)


def halves(x: Tensor):
    return np.split(x, 2)


def split_at_indices(x: Tensor, d: int):
    a, b = np.split(x, indices_or_sections=(d, 2 * d), axis=-1)[:-1]  # mamba.np's in_proj
    pieces = np.split(x, [1, 3])
    return a * np.tanh(b), pieces, len(pieces), np.split(ary=x, indices_or_sections=(2, 100),
                                                         axis=1)


def gated_half(x: Tensor, d: int):
    return split_at_indices(x, d)[0]


def chained(x: Tensor, n: int):
    return 0 < x.sum() < 10, 0 <= n < 3, -1 < x.min() <= x.max() < 10


@pytest.mark.parametrize("d", [3, 2])
def test_np_split_at_a_tuple_or_list_of_indices(d):
    x = np.random.default_rng(0).standard_normal((4, 6))
    assert_same(script(split_at_indices)(x, d), split_at_indices(x, d))
    check_vjp(gated_half, (x, d), argnums=(0,))


def test_np_split_gives_a_list_and_a_chain_of_array_comparisons_an_np_bool():
    x = np.arange(4.0)
    got = script(halves)(x)
    assert type(got) is list
    assert_same(got, halves(x))
    for arg in (x, -x, x * 10):
        got, want = script(chained)(arg, 1), chained(arg, 1)
        assert [type(v) for v in got] == [type(v) for v in want]
        assert got == want


def scalar_casts(x: Tensor, f: float):
    a = x[0].astype(np.float32)
    b = x.sum().astype(np.int8)
    return a + 0.1, b * 100, np.clip(f, 0.0, 1.0), np.clip(x[1], 0.0, 1.0), \
        np.tanh(np.array(0.5)) * 2.0, np.where(x > 1.0, x, 0.0)[0] * 1.0, \
        np.where(x[0] > 1.0, x[0] * 2.0, -x[0])  # np.where's 0-d result is an array


def test_numpy_scalars_keep_numpys_types_through_casts_and_ufuncs():
    """``x[0].astype(np.float32)`` is a ``np.float32`` (then float32 arithmetic), an int8
    cast wraps, ``np.clip`` of a Python float is a ``np.float64``, a fused ``np.where`` of
    items is a 0-d array."""
    x = np.array([1.5, 2.0, 0.25])
    with np.errstate(over="ignore"):
        got, want = script(scalar_casts)(x, 2.5), scalar_casts(x, 2.5)
    assert [type(v) for v in got] == [type(v) for v in want]
    assert_same(got, want)


def add_half(x: Tensor, flag: bool):
    x = x.copy()
    if flag:
        x += 1.5
    return x


def divide_rows(x: Tensor, flag: bool):
    x = x.copy()
    x[0] /= 2
    return x


def halve_floats(y: Tensor, flag: bool):
    y = y.copy()
    if y.dtype == np.float64:
        y *= 0.5
    return y


@pytest.mark.parametrize("fn", [add_half, divide_rows])
def test_an_in_place_update_that_changes_the_kind_raises_as_numpy_does(fn):
    ints = np.arange(6).reshape(2, 3)
    with pytest.raises(TypeError):  # numpy: UFuncTypeError (same_kind casting)
        fn(ints, True)
    with pytest.raises(TypeError, match="same_kind"):
        script(fn)(ints, True)
    floats = np.ones((2, 3), np.float32)
    got = script(fn)(floats, True)
    assert got.dtype == np.float32
    assert_same(got, fn(floats, True))



def halve_first_of_last_axis(y: Tensor):
    y = y.copy()
    y[..., 0] /= 2  # of a vector: a 0-d view, updated in place (not a scalar, as y[0] is)
    return y


def halve_first_item(y: Tensor):
    y = y.copy()
    y[0] /= 2  # of a vector: a numpy scalar, replaced (the new value cast as an item)
    return y


@pytest.mark.parametrize("shape", [(4,), (2, 3)])
def test_an_ellipsis_index_updates_a_view_even_of_one_item(shape):
    ints = np.arange(int(np.prod(shape))).reshape(shape)
    with pytest.raises(TypeError):
        halve_first_of_last_axis(ints)
    with pytest.raises(TypeError, match="same_kind"):
        script(halve_first_of_last_axis)(ints)
    floats = ints.astype(np.float32)
    assert_same(script(halve_first_of_last_axis)(floats), halve_first_of_last_axis(floats))
    if len(shape) == 1:
        assert_same(script(halve_first_item)(ints), halve_first_item(ints))

def item_plus_half(xs: List[Tensor], k: int):
    y = xs[k].copy()
    y += 1.5
    return y


def test_an_update_of_an_array_whose_dtype_is_known_only_when_it_runs_is_checked_then():
    xs = [np.arange(3.0), np.arange(3)]  # the item's dtype: float64 or int64, by k
    with pytest.raises(TypeError):
        item_plus_half(xs, 1)
    with pytest.raises(TypeError, match="same_kind"):
        script(item_plus_half)(xs, 1)
    assert_same(script(item_plus_half)(xs, 0), item_plus_half(xs, 0))


def test_an_update_that_would_change_the_kind_raises_only_when_it_runs():
    ints = np.arange(6).reshape(2, 3)
    assert_same(script(add_half)(ints, False), add_half(ints, False))  # the branch never runs
    assert_same(script(halve_floats)(ints, True), halve_floats(ints, True))
    floats = np.arange(6.0).reshape(2, 3)
    assert_same(script(halve_floats)(floats, True), halve_floats(floats, True))


def mismatched(a: Tensor, b: Tensor):
    return a @ b


def test_shape_errors_are_value_errors_as_numpys():
    import script as rs
    with pytest.raises(ValueError):
        mismatched(np.ones((2, 3)), np.ones((2, 3)))
    with pytest.raises(ValueError, match="cannot be accepted") as info:
        script(mismatched)(np.ones((2, 3)), np.ones((2, 3)))
    assert isinstance(info.value, rs.SignatureError)


def stack_steps(x: Tensor):
    ys = []
    for i in range(x.shape[1]):
        ys.append(x[:, i] * 2.0)
    return np.stack(ys, axis=1)


def concatenate_steps(x: Tensor):
    outs = []
    for t in range(x.shape[1]):
        outs.append(x[:, t:t + 1])
    return np.concatenate(outs, axis=1)


@pytest.mark.parametrize("fn", [stack_steps, concatenate_steps])
def test_joining_the_empty_list_of_a_loop_of_no_trips_is_a_value_error(fn):
    # the loop unrolls to nothing once the shapes are known: the passes find the empty join
    from script import vjp
    x = np.zeros((2, 0, 3))
    with pytest.raises(ValueError, match="need at least one"):
        fn(x)
    with pytest.raises(ArgumentShapeError, match="need at least one"):
        script(fn)(x)
    with pytest.raises(ArgumentShapeError, match="need at least one"):
        vjp(script(fn), x)
    y = np.arange(12.0).reshape(2, 2, 3)
    assert_same(script(fn)(y), fn(y))


def stack_unless_empty(xs: List[Tensor], n: int):
    ys = []
    for t in range(n):
        ys.append(xs[t] * 2.0)
    if len(ys) == 0:  # the join is never reached with no items
        return np.zeros(3)
    return np.stack(ys).sum(0)


def test_a_join_of_no_items_in_a_branch_not_taken_compiles():
    # n = 0 is the list's length: compiled in, the loop unrolls to nothing and the branch
    # holding the join is ruled out by the types, not refused
    for xs, n in (([], 0), ([np.ones(3)], 1), ([np.ones(3), np.ones(3)], 1)):
        assert_same(script(stack_unless_empty)(xs, n), stack_unless_empty(xs, n))


def split_at_appended(x: Tensor):
    idx = [1]
    idx.append(3)
    return np.split(x, idx)


def split_at_a_list_changed_in_the_loop(x: Tensor):
    idx = [1]
    total = np.zeros(3)
    for t in range(3):
        total[t] = np.sum(np.split(x, idx)[0])
        idx[0] += 1  # the next trip splits elsewhere
    return total


@pytest.mark.parametrize("fn", [split_at_appended, split_at_a_list_changed_in_the_loop])
def test_np_split_at_a_list_changed_before_it_is_refused(fn):
    with pytest.raises(ScriptError, match="list of indices built or changed before the split"):
        script(fn)(np.arange(24.0).reshape(4, 6))


def value_classes(x: Tensor, f: float):
    return (np.isnan(x), np.isinf(x), np.isfinite(x * 2.0), np.isnan(f), np.isinf(x[1]),
            np.where(np.isnan(x), 0.0, x))


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_isnan_isinf_isfinite(dtype):
    x = np.array([np.nan, np.inf, -np.inf, 1.0, -0.0], dtype)
    got, want = script(value_classes)(x, float("nan")), value_classes(x, float("nan"))
    assert [type(v) for v in got] == [type(v) for v in want]
    assert_same(got, want)


def refuses_three_rows(x: Tensor):
    if x.shape[0] == 3:
        raise ValueError("three rows")
    return x @ np.ones((4, 4))  # never runs for three rows: its shapes are never checked


def raises_in_a_loop(x: Tensor, n: int):
    for _ in range(n):
        if x.shape[1] != 4:
            raise ValueError("four columns")
        x = x @ np.ones((4, 4))
    return x


@pytest.mark.parametrize("fn,args", [(refuses_three_rows, (np.ones((3, 3)),)),
                                     (raises_in_a_loop, (np.ones((2, 3)), 20))])
def test_code_after_a_raise_that_always_runs_is_not_type_checked(fn, args):
    with pytest.raises(ValueError, match="three rows|four columns"):
        fn(*args)
    with pytest.raises(ValueError, match="three rows|four columns") as err:
        script(fn)(*args)
    assert not isinstance(err.value, ArgumentShapeError)  # Python's own error, not a shape one
    assert_same(script(fn)(np.ones((2, 4)), *args[1:]), fn(np.ones((2, 4)), *args[1:]))


def add_a_row(y: Tensor, v: Tensor):
    y = y.copy()
    y[..., 0] += v
    return y


def test_an_update_that_changes_the_kind_and_the_shape_raises_numpys_type_error_first():
    ints, v = np.arange(4), np.ones(2)
    with pytest.raises(TypeError):
        add_a_row(ints, v)
    with pytest.raises(TypeError, match="same_kind"):
        script(add_a_row)(ints, v)
