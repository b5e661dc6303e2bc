"""numpy functions written in the language (``script.frontend.numpy_shims``) and
``np.argmax``/``np.argmin``'s ``keepdims``: numpy's values, dtypes and result types, and
gradients that match finite differences."""

import numpy as np
import pytest

from script import ScriptError, Tensor, script
from tests.gradcheck import check_vjp


def gates(z: Tensor) -> Tensor:
    i, f, o, g = np.hsplit(z, 4)  # an LSTM's four gates side by side
    return i * f + o * np.tanh(g)


def rows_split(x: Tensor) -> Tensor:
    return np.vsplit(x, 3)[1]


def vector_split(v: Tensor) -> Tensor:
    return np.hsplit(v, 2)[0]


def nonzero_count(x: Tensor):
    return np.count_nonzero(x), np.count_nonzero(x > 0.5, axis=1)


def peak_to_peak(x: Tensor) -> Tensor:
    return np.ptp(x, axis=0) + np.ptp(x)


def appended(x: Tensor):
    return np.append(x, x[0]), np.append(x, x * 2.0, axis=0)


def broadcast(v: Tensor) -> Tensor:
    return np.broadcast_to(v, (3, 8)) * np.arange(24.0).reshape(3, 8)


def best_scores(x: Tensor) -> Tensor:
    return np.take_along_axis(x, np.argmax(x, axis=1, keepdims=True), axis=1)


def sorted_along(x: Tensor, y: Tensor, axis: int) -> Tensor:
    return np.take_along_axis(x, np.argsort(y, axis=axis), axis=axis)


def flat_pick(x: Tensor) -> Tensor:
    return np.take_along_axis(x, np.array([5, -1, 0]), axis=None)


def steps(x: Tensor) -> Tensor:
    return np.heaviside(x, 0.5) + np.heaviside(x, x)


def nan_ignoring(x: Tensor, y: Tensor) -> Tensor:
    return np.fmax(x, y) - np.fmin(x, 0.25)


def flat_dot(x: Tensor) -> Tensor:
    return np.vdot(x, x[::-1])


def kept_axes(x: Tensor):
    return x.argmax(-1, keepdims=True), np.argmin(x, axis=0, keepdims=True), \
        np.argmax(x, 1, keepdims=False)


def _cases(dtype):
    rng = np.random.default_rng(0)
    x = rng.standard_normal((3, 8)).astype(dtype)
    x[0, 1] = x[2, 3] = 0.0
    y = rng.standard_normal((3, 8)).astype(dtype)
    with_nan = y.copy()
    with_nan[1, 2] = np.nan
    return [(gates, (x,)), (rows_split, (x,)), (vector_split, (x[0],)), (nonzero_count, (x,)),
            (peak_to_peak, (x,)), (appended, (x,)), (broadcast, (x[0],)),
            (best_scores, (x,)), (sorted_along, (x, y, 1)), (sorted_along, (x, y, 0)),
            (sorted_along, (x, y, -1)), (flat_pick, (x,)), (steps, (x,)),
            (nan_ignoring, (x, y)), (nan_ignoring, (x, with_nan)), (nan_ignoring, (with_nan, x)),
            (flat_dot, (x,)),
            (kept_axes, (x,))]


def _same(got, want, name):
    if isinstance(want, tuple):
        assert isinstance(got, tuple) and len(got) == len(want), name
        for g, w in zip(got, want):
            _same(g, w, name)
        return
    assert type(got) is type(want), (name, type(got), type(want))
    assert np.asarray(got).dtype == np.asarray(want).dtype, name
    np.testing.assert_allclose(got, want, rtol=1e-6, err_msg=name)


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_values_dtypes_and_types_are_numpys(dtype):
    for fn, args in _cases(dtype):
        _same(script(fn)(*args), fn(*args), fn.__name__)


@pytest.mark.parametrize("fn", [gates, rows_split, peak_to_peak, appended, broadcast,
                                best_scores, sorted_along, flat_pick, nan_ignoring, flat_dot])
def test_gradients_match_finite_differences(fn):
    for case, args in _cases(np.float64):
        if case is fn and not any(np.isnan(a).any() for a in args if isinstance(a, np.ndarray)):
            check_vjp(script(fn), args)


def no_axis(x: Tensor):
    return np.argmax(x, keepdims=True)


def test_what_is_refused():
    with pytest.raises(ScriptError, match="keepdims=True without an axis"):
        script(no_axis)(np.ones((2, 3)))
    with pytest.raises(Exception, match="does not split into 4 equal sections"):
        script(gates)(np.ones((2, 6)))


def heaviside_of_numbers(x: float, y: float):
    return np.heaviside(x, y), np.fmax(x, y)


def test_edges_are_numpys():
    x = np.array([np.inf, -np.inf, -1.0, 0.0, np.nan])
    _same(script(steps)(x), steps(x), "steps")
    assert not np.signbit(script(steps)(x)[2])
    ints = np.array([-2, 0, 3])
    _same(script(steps)(ints), steps(ints), "integer steps")
    _same(script(heaviside_of_numbers)(0.0, 0.5), heaviside_of_numbers(0.0, 0.5), "numbers")
    _same(script(heaviside_of_numbers)(1.0, float("nan")),
          heaviside_of_numbers(1.0, float("nan")), "nan")


def split_at(x: Tensor):
    return np.hsplit(x, [1, 3])


def broadcast_picks(x: Tensor, i: Tensor) -> Tensor:
    return np.take_along_axis(x, i, axis=1)


def not_a_broadcast(x: Tensor) -> Tensor:
    return np.broadcast_to(x, (2, 3))


def test_splits_broadcasts_and_their_errors():
    x = np.arange(10.0).reshape(2, 5)
    for got, want in zip(script(split_at)(x), split_at(x)):
        np.testing.assert_array_equal(got, want)
    for got, want in zip(script(split_at)(x[0]), split_at(x[0])):
        np.testing.assert_array_equal(got, want)
    with pytest.raises(ValueError, match="vsplit only works on arrays of 2"):
        script(rows_split)(np.ones(6))
    x = np.arange(12.0).reshape(3, 4)
    i = np.array([[0, 3, -1]])  # broadcast over the rows, a negative index from the end
    _same(script(broadcast_picks)(x, i), broadcast_picks(x, i), "broadcast indices")
    with pytest.raises(IndexError):
        script(broadcast_picks)(x, np.array([[4]]))
    with pytest.raises(ValueError):
        script(not_a_broadcast)(np.ones((2, 1, 3)))


def argmax(x, axis, keepdims=False):  # a program's own function of numpy's name
    return x * 2.0


def own_argmax(x: Tensor):
    return argmax(x, 0, keepdims=True)


def test_only_numpys_argmax_keeps_dims():
    x = np.array([1.0, 3.0, 2.0])
    _same(script(own_argmax)(x), own_argmax(x), "own argmax")


def convolved(a: Tensor, v: Tensor, mode: str) -> Tensor:
    return np.convolve(a, v, mode=mode)


def causal_taps(x: Tensor, w: Tensor) -> Tensor:  # a depthwise causal conv's one channel
    return np.convolve(x, w[::-1], mode="full")[:x.shape[0]]


@pytest.mark.parametrize("dtype", [np.float32, np.float64, np.int64])
def test_convolve_is_numpys(dtype):
    rng = np.random.default_rng(3)
    for n, m in [(7, 3), (7, 4), (3, 7), (4, 4), (1, 1), (6, 2)]:
        a = (rng.standard_normal(n) * 4).astype(dtype)
        v = (rng.standard_normal(m) * 4).astype(dtype)
        for mode in ("full", "same", "valid"):
            _same(script(convolved)(a, v, mode), convolved(a, v, mode), f"{n} {m} {mode}")
    with pytest.raises(ValueError):
        script(convolved)(np.ones(3, dtype), np.ones(0, dtype), "full")


def test_convolve_gradients():
    rng = np.random.default_rng(4)
    check_vjp(script(causal_taps), (rng.standard_normal(6), rng.standard_normal(3)))


def later_write(a: Tensor) -> Tensor:
    g = a.copy()
    w = np.broadcast_to(g, (2, 4, 3))
    g[0, 0] = 100.0  # numpy shows it through w, a view of g
    return w


def pick_along(x: Tensor, i: Tensor, axis: int) -> Tensor:
    return np.take_along_axis(x, i, axis=axis)


def test_second_review_edges():
    with pytest.raises(ScriptError, match="would also change 'w'"):
        script(later_write)(np.ones((4, 3)))
    b = np.array([True, False, True])
    _same(script(nan_ignoring)(b, ~b), nan_ignoring(b, ~b), "bools")
    got = script(steps)(np.array([0.0]))
    assert got.dtype == steps(np.array([0.0])).dtype
    x = np.arange(6.0).reshape(2, 3)
    with pytest.raises(ValueError, match="same number of dimensions"):
        script(pick_along)(x, np.array([0, 1]), 1)
    with pytest.raises(ValueError, match="out of bounds"):
        script(pick_along)(x, np.zeros((2, 1), np.int64), 2)


def convolved_with_numbers(a: Tensor):
    return np.convolve(a, 2.0), np.convolve(a, [1.0, 2.0, 3.0])


def test_convolve_takes_numbers_and_lists():
    a = np.arange(4.0)
    _same(script(convolved_with_numbers)(a), convolved_with_numbers(a), "numbers and lists")


# -- shape juggling, padding, running products, nan-aware sums, weighted means, statistics -----
def moved(x: Tensor):
    return np.moveaxis(x, 0, -1), np.moveaxis(x, [0, 1], [2, 0]), np.moveaxis(x, -1, 0)


def padded(x: Tensor):
    return (np.pad(x, 1), np.pad(x, ((1, 0), (2, 3), (0, 1)), constant_values=2.5),
            np.pad(x, (2, 1), mode="edge"), np.pad(x[0], [(1, 2)]), np.pad(x, 0))


def running_products(x: Tensor):
    return np.cumprod(x, axis=1), np.cumprod(x), np.cumprod(x > 0.5, axis=0), \
        np.cumprod(x, axis=-1, dtype=np.float64)


def nan_aware(x: Tensor):
    y = np.where(x > 0.8, np.nan, np.where(x < 0.1, np.inf, np.where(x < 0.2, -np.inf, x)))
    return (np.nan_to_num(y), np.nansum(y), np.nansum(y, axis=1), np.nanmean(y, axis=0),
            np.nan_to_num(y, nan=-1.0, posinf=9.0, neginf=-9.0), np.nansum(x, keepdims=True))


def weighted(x: Tensor, w: Tensor):
    return (np.average(x), np.average(x, axis=1), np.average(x, axis=2, weights=w),
            np.average(x, axis=0, weights=x + 1.0), np.average(x, weights=x + 1.0),
            np.average(x, axis=-1, weights=w, keepdims=True))


def uneven_splits(x: Tensor):
    return (np.array_split(x, 3, axis=2)[0], np.array_split(x, 3, axis=2)[2],
            np.array_split(x, [1], axis=0)[1], np.array_split(x, [1, -1, 2], axis=2)[2],
            np.array_split(x, 4, axis=1)[3])


def products_of_blocks(x: Tensor):
    return np.kron(x[0], x[1]), np.kron(x[0, 0], x[1, 1]), np.kron(x[0, 0], x[1])


def statistics(x: Tensor):
    return (np.cov(x[0]), np.cov(x[0], rowvar=False), np.corrcoef(x[0]), np.cov(x[0, 0]),
            np.cov(x[0], bias=True), np.cov(x[0, 0], x[1, 0]), np.corrcoef(x[0, 0], x[1, 1]),
            np.cov(x[0], ddof=0))


def _more(dtype):
    rng = np.random.default_rng(1)
    x = rng.random((2, 3, 4)).astype(dtype)
    return [(moved, (x,)), (padded, (x,)), (running_products, (x,)), (nan_aware, (x,)),
            (weighted, (x, rng.random(4).astype(dtype))), (uneven_splits, (x,)),
            (products_of_blocks, (x,)), (statistics, (x,))]


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_more_functions_are_numpys(dtype):
    for fn, args in _more(dtype):
        with np.errstate(invalid="ignore"):
            _same(script(fn)(*args), fn(*args), fn.__name__)


@pytest.mark.parametrize("fn", [moved, padded, running_products, weighted, uneven_splits,
                                products_of_blocks, statistics])
def test_more_gradients_match_finite_differences(fn):
    for case, args in _more(np.float64):
        if case is fn:
            check_vjp(script(fn), args)


def padded_by(x: Tensor, mode: str) -> Tensor:
    return np.pad(x, 1, mode=mode)


def padded_badly(x: Tensor) -> Tensor:
    return np.pad(x, ((1, 1), (1, 1), (1, 1)))


def averaged_against(x: Tensor, w: Tensor) -> Tensor:
    return np.average(x, weights=w)


def averaged_along(x: Tensor, w: Tensor) -> Tensor:
    return np.average(x, axis=1, weights=w)


def moved_twice(x: Tensor) -> Tensor:
    return np.moveaxis(x, [0, 0], [1, 2])


def test_what_numpy_raises_is_raised():
    x = np.ones((3, 4))
    for fn, args in ((padded_by, (x, "reflect")), (padded_badly, (x,)),
                     (averaged_against, (x, np.ones(4))), (averaged_along, (x, np.ones(3))),
                     (averaged_along, (x, np.ones((3, 4, 1)))),
                     (moved_twice, (np.ones((2, 3, 4)),))):
        with pytest.raises((ValueError, TypeError, ScriptError)):
            script(fn)(*args)
    # a weight array of the array's shape but another one's values: numpy's errors
    with pytest.raises((TypeError, ScriptError)):
        script(averaged_against)(x, np.ones((1, 4)))


# -- the review's edges: numpy's values, dtypes and errors -------------------------------------
def pad_pairs_list(x: Tensor):
    return np.pad(x, [(1, 1), (0, 2)])


def cov_of_one_row(m: Tensor):
    return np.cov(m, rowvar=False), np.corrcoef(m, rowvar=False), np.cov(m, ddof=2)


def nan_to_num_of_bools(x: Tensor):
    return np.nan_to_num(x)


def cumprod_of_0d(x: Tensor):
    return np.cumprod(np.sum(x), axis=0)


def nanmean_f16(x: Tensor):
    return np.nanmean(x)


def kron_of_0d(a: Tensor, b: Tensor):
    return np.kron(a, b)


def average_of_zero_weights(x: Tensor, w: Tensor):
    return np.average(x, weights=w)


def pad_ints_with(x: Tensor, value: float):
    return np.pad(x, 1, constant_values=value)


def test_the_review_s_edges_are_numpys():
    rng = np.random.default_rng(3)
    with np.errstate(divide="ignore", invalid="ignore"), pytest.warns(RuntimeWarning):
        want = cov_of_one_row(rng.random((1, 4)))
    with np.errstate(divide="ignore", invalid="ignore"):
        for fn, args in ((pad_pairs_list, (rng.random((2, 3)),)),
                         (cov_of_one_row, (rng.random((1, 4)),)),
                         (nan_to_num_of_bools, (np.array([True, False]),)),
                         (cumprod_of_0d, (rng.random(3),)),
                         (nanmean_f16, (np.full(2049, 1.005, dtype=np.float16),)),
                         (kron_of_0d, (np.array(2.0), np.array(3.0)))):
            got, want = script(fn)(*args), fn(*args)
            for g, w in zip(got if isinstance(got, tuple) else (got,),
                            want if isinstance(want, tuple) else (want,)):
                assert np.asarray(g).dtype == np.asarray(w).dtype, fn.__name__
                assert np.shape(g) == np.shape(w), fn.__name__
                np.testing.assert_allclose(g, w, rtol=1e-12, err_msg=fn.__name__)
    with pytest.raises(ZeroDivisionError):
        script(average_of_zero_weights)(np.ones(3), np.array([1.0, -1.0, 0.0]))
    with pytest.raises(ValueError):
        script(pad_ints_with)(np.arange(3), np.nan)
    with pytest.raises(OverflowError):
        script(pad_ints_with)(np.arange(3), np.inf)
    np.testing.assert_array_equal(script(pad_ints_with)(np.arange(3), 2.7),
                                  pad_ints_with(np.arange(3), 2.7))
