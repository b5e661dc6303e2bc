"""``vjp``'s backward wrote into the cotangent the caller passed. The gradient of ``dW[i] += v``
with ``i`` read from an int array (a 0-d index) reads the cotangent's row ``i``
(``tensor::take_last``), which for a 0-d index was numpy's ``g[i]``, a view; the backward then
scaled that row in place (``* 2.0``), so the caller's cotangent changed, and calling ``backward``
again with the same array gave 2, 4, 8. ``a[rows, cols]`` with 0-d rows and cols (and its
gradient's read) were views the same way. Reads at integer indices now always make an array of
their own."""

import numpy as np
import pytest

from script import ScriptError, Tensor, ops, script, vjp


def row_update(idx: Tensor, W: Tensor) -> Tensor:
    dW = np.zeros_like(W)
    dW[idx[0]] += W[idx[0]] * 2.0
    return dW


def pair_update(rows: Tensor, cols: Tensor, W: Tensor) -> Tensor:
    dW = np.zeros_like(W)
    dW[rows[0], cols[0]] += W[rows[0], cols[0]] * 3.0
    return dW


def pair_read_then_scaled(rows: Tensor, cols: Tensor, W: Tensor) -> Tensor:
    v = W[rows[0], cols[0]]
    v *= 2.0
    return v + W[0, 0]


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_a_row_update_at_a_0d_index(dtype):
    W = np.arange(6.0, dtype=dtype).reshape(3, 2)
    out, backward = vjp(script(row_update), np.array([1]), W)
    np.testing.assert_array_equal(out, row_update(np.array([1]), W))
    ct = np.ones_like(W)
    grads = [backward(ct)[1] for _ in range(3)]
    np.testing.assert_array_equal(ct, np.ones_like(W))
    for g in grads:
        np.testing.assert_array_equal(g, [[0, 0], [2, 2], [0, 0]])


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_a_pair_update_at_0d_indices(dtype):
    W = np.arange(24.0, dtype=dtype).reshape(3, 2, 4)
    rows, cols = np.array([2]), np.array([1])
    out, backward = vjp(script(pair_update), rows, cols, W)
    np.testing.assert_array_equal(out, pair_update(rows, cols, W))
    ct = np.ones_like(W)
    grads = [backward(ct)[2] for _ in range(3)]
    np.testing.assert_array_equal(ct, np.ones_like(W))
    want = np.zeros_like(W)
    want[2, 1] = 3.0
    for g in grads:
        np.testing.assert_array_equal(g, want)


def test_a_pair_read_at_0d_indices_is_its_own_array():
    W = np.arange(24.0).reshape(3, 2, 4)
    r = ops.index_pairs(W, np.array(2), np.array(1))
    assert not np.shares_memory(r, W)


def test_a_write_into_a_pair_read_is_numpys_or_refused():
    # numpy's W[rows[0], cols[0]] is a view: v *= 2.0 changes W
    W, want_W = np.arange(24.0).reshape(3, 2, 4), np.arange(24.0).reshape(3, 2, 4)
    want = pair_read_then_scaled(np.array([2]), np.array([1]), want_W)
    try:
        got = script(pair_read_then_scaled)(np.array([2]), np.array([1]), W)
    except ScriptError:
        return
    np.testing.assert_array_equal(got, want)
    np.testing.assert_array_equal(W, want_W)
