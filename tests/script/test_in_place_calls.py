"""``np.add.at`` / ``np.subtract.at`` (unbuffered: repeated indices add up) and ``np.copyto``
as statements: the values, dtypes and gradients numpy's give, the refusals of what numpy would
change outside the function."""

import numpy as np
import pytest

from script import ScriptError, Tensor, script
from tests.gradcheck import check_vjp


def embedding_backward(dout: Tensor, x: Tensor, V: int) -> Tensor:  # cs231n's
    N, T, D = dout.shape
    dW = np.zeros((V, D), dtype=dout.dtype)
    np.add.at(dW, x, dout)
    return dW


def pairs(o: Tensor, rows: Tensor, cols: Tensor) -> Tensor:
    d = np.zeros_like(o)
    np.add.at(d, (rows, cols), 1.0)
    d2 = d * 2.0
    np.subtract.at(d2, (rows, cols), o[rows, cols])
    return d2


def columns(W: Tensor, idx: Tensor, v: Tensor) -> Tensor:
    g = W * 1.0
    np.add.at(g, (slice(None), idx), v)
    return g


def counts(idx: Tensor, n: int) -> Tensor:
    c = np.zeros(n, dtype=np.int64)
    np.add.at(c, idx, 1)
    return c


def basic_index(W: Tensor, v: Tensor) -> Tensor:
    g = np.zeros_like(W)
    np.add.at(g, 1, v)
    np.add.at(g, (slice(0, 2), 0), 3.0)
    return g


def through_another_name(W: Tensor, idx: Tensor, v: Tensor) -> Tensor:
    g = np.zeros_like(W)
    h = g
    np.add.at(g, idx, v)
    return h


def broadcast_values(W: Tensor, idx: Tensor, v: Tensor) -> Tensor:
    g = np.zeros_like(W)
    np.add.at(g, idx, v)  # one row added at every index
    return g * W


def wider_values(W: Tensor, idx: Tensor, v: Tensor) -> Tensor:
    g = np.zeros_like(W)
    np.add.at(g, [1, 1, 2], v.astype(np.float64))  # a list; float64 values into W's dtype
    return g


def in_a_loop(W: Tensor, xs: Tensor, douts: Tensor) -> Tensor:
    dW = np.zeros_like(W)
    for t in range(xs.shape[0]):
        np.add.at(dW, xs[t], douts[t])
    return dW


def copied(h: Tensor, n: int) -> Tensor:
    z = np.zeros_like(h)
    for t in range(n):
        np.copyto(z, h * t)
    return z


def _cases(dtype):
    rng = np.random.default_rng(0)

    def r(*shape):
        return rng.standard_normal(shape).astype(dtype)

    rows, cols = np.array([0, 1, 1, 2]), np.array([4, 4, 4, 0])
    W, i3 = r(5, 4), np.array([1, 1, 3])
    return [(embedding_backward, (r(2, 3, 4), np.array([[0, 2, 2], [1, 0, 4]]), 6)),
            (pairs, (r(3, 5), rows, cols)),
            (columns, (r(4, 5), np.array([0, 0, 2]), r(4, 3))),
            (counts, (np.array([1, 1, 3, 0, 1]), 5)),
            (basic_index, (W, r(4))),
            (through_another_name, (W, i3, r(3, 4))),
            (broadcast_values, (W, i3, r(4))),
            (wider_values, (W, i3, r(3, 4))),
            (in_a_loop, (W, np.array([[0, 1, 1], [4, 4, 4]]), r(2, 3, 4))),
            (copied, (r(4), 3))]


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_values_and_dtypes_are_numpys(dtype):
    for fn, args in _cases(dtype):
        want = fn(*args)
        got = script(fn)(*args)
        assert got.dtype == want.dtype, fn.__name__
        np.testing.assert_allclose(got, want, rtol=1e-6, err_msg=fn.__name__)


@pytest.mark.parametrize("fn", [embedding_backward, pairs, columns, through_another_name,
                                broadcast_values, in_a_loop])
def test_gradients_match_finite_differences(fn):
    args = dict((f.__name__, a) for f, a in _cases(np.float64))[fn.__name__]
    check_vjp(script(fn), args)


def into_an_argument(W: Tensor, idx: Tensor, v: Tensor) -> Tensor:
    np.add.at(W, idx, v)
    return W


def multiplied(W: Tensor, idx: Tensor) -> Tensor:
    g = np.ones_like(W)
    np.multiply.at(g, idx, 2.0)
    return g


def test_what_numpy_would_change_outside_is_refused():
    W, idx = np.ones((3, 2)), np.array([1, 1])
    with pytest.raises(ScriptError, match="in-place write to the argument 'W'"):
        script(into_an_argument)(W, idx, np.ones(2))
    with pytest.raises(ScriptError, match=r"np.multiply.at\(\)"):
        script(multiplied)(W, idx)


def copy_into_the_argument(h: Tensor, v: Tensor) -> Tensor:
    np.copyto(h, v * 2.0)
    return v


class Grads:
    def __init__(self):
        self.grads = [np.zeros(3), np.zeros(2)]


def store_gradients(layer: Grads, v: Tensor) -> Tensor:
    np.copyto(layer.grads[0], v * 2.0)  # Deep Learning from Scratch 2's self.grads[0][...] = dW
    return v


def test_copyto_is_a_whole_write():
    with pytest.raises(ScriptError, match="in-place write to the argument 'h'"):
        script(copy_into_the_argument)(np.zeros(3), np.arange(3.0))
    layer, v = Grads(), np.arange(3.0)
    held = layer.grads[0]
    script(store_gradients)(layer, v)
    assert layer.grads[0] is held
    np.testing.assert_array_equal(held, v * 2.0)


def tiny_adds(a: Tensor, idx: Tensor, v: Tensor) -> Tensor:
    g = a.copy()
    np.add.at(g, idx, v)
    return g


def test_each_item_is_added_in_turn_as_numpys():
    """numpy adds item by item into the array's dtype: float32 1.0 plus 1e-8 eight times stays
    1.0, float32 values into a float64 array add in float64, an untouched -0.0 stays -0.0."""
    idx = np.zeros(8, np.int64)
    for a, v in [(np.array([1.0, -0.0], np.float32), np.full(8, 1e-8, np.float32)),
                 (np.array([1.0, -0.0]), np.full(8, 1e-8, np.float32)),
                 (np.array([1.0, -0.0]), np.full(8, 0.1))]:
        got, want = script(tiny_adds)(a, idx, v), tiny_adds(a, idx, v)
        assert got.dtype == want.dtype
        np.testing.assert_array_equal(got, want)
        assert np.signbit(got[1]) == np.signbit(want[1])


def subtract_from_bools(a: Tensor, idx: Tensor) -> Tensor:
    g = a.copy()
    np.subtract.at(g, idx, 1)
    return g


def test_bools_follow_numpy():
    a, idx = np.array([True, False]), np.array([0, 1])
    np.testing.assert_array_equal(script(subtract_from_bools)(a, idx), subtract_from_bools(a, idx))


def copy_into_ints(a: Tensor, b: Tensor) -> Tensor:
    z = np.zeros_like(a)
    np.copyto(z, b)
    return z


def test_copyto_casts_as_numpy_allows():
    with pytest.raises(TypeError):
        copy_into_ints(np.zeros(3, np.int64), np.array([1.5, 2.0, 3.0]))
    with pytest.raises(TypeError, match="same_kind"):
        script(copy_into_ints)(np.zeros(3, np.int64), np.array([1.5, 2.0, 3.0]))
    got = script(copy_into_ints)(np.zeros(3, np.float32), np.array([1.5, 2.0, 3.0]))
    assert got.dtype == np.float32
    np.testing.assert_array_equal(got, [1.5, 2.0, 3.0])


def copy_a_number(a: Tensor, n: int) -> Tensor:
    z = np.zeros_like(a)
    np.copyto(z, n)
    return z


def test_copyto_of_a_python_int_is_numpys():
    got = script(copy_a_number)(np.zeros(3, np.uint8), 5)
    assert got.dtype == np.uint8 and list(got) == [5, 5, 5]
    with pytest.raises(OverflowError):
        script(copy_a_number)(np.zeros(3, np.int8), 1000)


def arrays_around_a_slice(a: Tensor, i: Tensor, v: Tensor) -> Tensor:
    g = a.copy()
    np.add.at(g, (i, slice(None), i), v)
    return g


def test_an_index_it_cannot_add_at_unbuffered_is_refused():
    """Not taken as the buffered ``g[i, :, i] += v``, which would add a repeat once."""
    with pytest.raises(ScriptError, match=r"np.add.at\(\) at"):
        script(arrays_around_a_slice)(np.zeros((3, 2, 3)), np.array([1, 1]), np.ones((2, 2)))
