"""Sums of products outside loops: ``products.matmul_sum`` (one job for ``A1 @ B1 + A2 @ B2``)
and the ``matmul-sums`` rewrite that makes compiled code call it."""

from __future__ import annotations

import numpy as np
import pytest

from fuser.cpu import products, stepgemm
from script import Tensor, ops, script
from tests.gradcheck import check_vjp
from tests.helpers import rand, rng


def _layouts(r, dtype, m, n, depths, transposed):
    operands = []
    for i, k in enumerate(depths):
        a = r.standard_normal((m, k)).astype(dtype)
        b = r.standard_normal((k, n)).astype(dtype)
        if transposed and i % 2:  # x @ w.T: B a transposed view, its slabs packed
            b = np.ascontiguousarray(b.T).T
        if transposed and not i % 2:  # a weight gradient's dG.T as A
            a = np.ascontiguousarray(a.T).T
        operands += [a, b]
    return operands


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("m,n,depths", [(64, 256, (128, 256)), (7, 33, (5, 300, 17)),
                                        (1, 1, (1, 1)), (130, 700, (64, 9))])
@pytest.mark.parametrize("threads", [1, 2, 3])
@pytest.mark.parametrize("transposed", [False, True])
def test_matmul_sum_equals_numpy(monkeypatch, dtype, m, n, depths, threads, transposed):
    monkeypatch.setattr(products, "threads", lambda: threads)
    monkeypatch.setattr(products, "POOL_MIN_PRODUCT", 0)  # shared even when small
    operands = _layouts(rng(sum(depths)), dtype, m, n, depths, transposed)
    want = sum(a.astype(np.float64) @ b.astype(np.float64)
               for a, b in zip(operands[::2], operands[1::2]))
    got = products.matmul_sum(*operands)
    assert got.dtype == dtype and got.shape == (m, n)
    tol = 1e-5 if dtype == np.float32 else 1e-12
    np.testing.assert_allclose(got, want, rtol=tol, atol=tol * np.sqrt(sum(depths)))


def test_matmul_sum_into_a_given_array_and_what_it_leaves_to_numpy():
    r = rng(1)
    x, w, h, u = (r.standard_normal(s).astype(np.float32)
                  for s in ((8, 5), (5, 6), (8, 7), (7, 6)))
    out = np.full((8, 6), np.nan, np.float32)
    assert products.matmul_sum(x, w, h, u, out=out) is out
    np.testing.assert_allclose(out, x @ w + h @ u, rtol=1e-5, atol=1e-5)
    wide = r.standard_normal((7, 1)).astype(np.float32)  # a (8, 1) product: numpy broadcasts
    np.testing.assert_allclose(products.matmul_sum(x, w, h, wide), x @ w + h @ wide, rtol=1e-5)
    mixed = products.matmul_sum(x, w, h.astype(np.float64), u.astype(np.float64))
    assert mixed.dtype == np.float64
    with pytest.raises(ValueError):  # numpy's own error for mismatched sizes
        products.matmul_sum(x, u, h, u)


def test_a_negative_block_adds_the_product_to_c():
    r = rng(2)
    a, b = r.standard_normal((9, 40)).astype(np.float32), r.standard_normal((40, 35))
    b = b.astype(np.float32)
    c = r.standard_normal((9, 35)).astype(np.float32)
    want = c + a @ b
    counter = np.zeros(1, np.int64)
    stepgemm.kernel(False)(9, 35, 40, a.ctypes.data, 40, 1, b.ctypes.data, 35, 1, c.ctypes.data,
                           35, -16, None, counter.ctypes.data, 35)
    np.testing.assert_allclose(c, want, rtol=1e-5, atol=1e-5)


# -- the rewrite ---------------------------------------------------------------------------------
def cell(x: Tensor, h: Tensor, wx: Tensor, wh: Tensor, b: Tensor) -> Tensor:
    return np.tanh(np.dot(x, wx) + np.dot(h, wh) + b)


def three(x: Tensor, h: Tensor, c: Tensor, wx: Tensor, wh: Tensor, wc: Tensor) -> Tensor:
    return x @ wx + h @ wh + c @ wc


def read_twice(x: Tensor, h: Tensor, wx: Tensor, wh: Tensor) -> tuple[Tensor, Tensor]:
    p = x @ wx
    return p + h @ wh, p


def chained(x: Tensor, w: Tensor, v: Tensor, u: Tensor) -> Tensor:
    y = np.tanh(x @ w)
    return y @ v + x @ u  # its gradient for x is a sum of products too


def in_a_loop(xs: Tensor, h: Tensor, wx: Tensor, wh: Tensor) -> Tensor:
    for t in range(xs.shape[0]):
        h = np.tanh(xs[t] @ wx + h @ wh)
    return h


def _kinds(f, *args):
    return [n.kind for n in script(f).graph_for(*args).walk()]


@pytest.fixture
def small_products(monkeypatch):
    """Every float product outside loops through the kernel (float64 too), so small tests see
    the rewrite."""
    monkeypatch.setattr(products, "OUTSIDE_MIN_PRODUCT", 1)
    monkeypatch.setattr(products, "OUTSIDE_DTYPES", ("float32", "float64"))


@pytest.mark.parametrize("dtype", ["float32", "float64"])
def test_a_cell_sum_of_products_is_one_product(small_products, dtype):
    r = rng(3)
    args = tuple(rand(r, s, dtype) for s in ((6, 5), (6, 7), (5, 8), (7, 8), (8,)))
    kinds = _kinds(cell, *args)
    assert kinds.count("tensor::matmul_sum") == 1 and "tensor::matmul" not in kinds
    got = script(cell)(*args)
    tol = 1e-5 if dtype == "float32" else 1e-12
    np.testing.assert_allclose(got, cell(*args), rtol=tol, atol=tol)
    assert got.dtype == np.dtype(dtype)


def test_three_products_are_one(small_products):
    r = rng(4)
    args = tuple(rand(r, s) for s in ((4, 3), (4, 5), (4, 6), (3, 9), (5, 9), (6, 9)))
    kinds = _kinds(three, *args)
    assert kinds.count("tensor::matmul_sum") == 1 and "tensor::matmul" not in kinds
    np.testing.assert_allclose(script(three)(*args), three(*args), rtol=1e-12)


def test_what_stays_products(small_products):
    r = rng(5)
    x, h, wx, wh = (rand(r, s) for s in ((4, 3), (4, 5), (3, 6), (5, 6)))
    kinds = _kinds(read_twice, x, h, wx, wh)  # p is also returned: it must exist on its own
    assert "tensor::matmul_sum" not in kinds
    for got, want in zip(script(read_twice)(x, h, wx, wh), read_twice(x, h, wx, wh)):
        np.testing.assert_allclose(got, want, rtol=1e-12)
    xs = rand(r, (3, 4, 3))
    assert "tensor::matmul_sum" not in _kinds(in_a_loop, xs, rand(r, (4, 6)), wx, rand(r, (6, 6)))


def test_small_products_stay_numpy():
    r = rng(6)
    args = tuple(rand(r, s) for s in ((6, 5), (6, 7), (5, 8), (7, 8), (8,)))
    assert "tensor::matmul_sum" not in _kinds(cell, *args)


def test_gradients_through_sums_of_products(small_products):
    r = rng(7)
    check_vjp(cell, tuple(rand(r, s) for s in ((3, 4), (3, 5), (4, 6), (5, 6), (6,))))
    check_vjp(chained, tuple(rand(r, s) for s in ((3, 4), (4, 5), (5, 6), (4, 6))))


def test_the_cell_at_the_size_that_takes_the_kernel():
    """No patched threshold: a (64, 128) x (128, 1024) + (64, 256) x (256, 1024) cell."""
    r = rng(8)
    args = tuple(rand(r, s, "float32") for s in ((64, 128), (64, 256), (128, 1024),
                                                 (256, 1024), (1024,)))
    assert "tensor::matmul_sum" in _kinds(cell, *args)
    want = cell(*(a.astype(np.float64) for a in args))  # float32 sums of 384 terms differ
    np.testing.assert_allclose(script(cell)(*args), want, rtol=1e-4, atol=1e-4)


def written_as_op(x: Tensor, w: Tensor, h: Tensor, u: Tensor) -> Tensor:
    return np.tanh(ops.matmul_sum(x, w, h, u))


def test_the_ops_own_gradient():
    """``ops.matmul_sum`` in a program (no rewrite involved) is differentiated pair by pair."""
    r = rng(9)
    args = tuple(rand(r, s) for s in ((3, 4), (4, 5), (3, 2), (2, 5)))
    np.testing.assert_allclose(script(written_as_op)(*args), np.tanh(args[0] @ args[1]
                                                                     + args[2] @ args[3]))
    check_vjp(written_as_op, args)


def test_a_layout_seen_before_reuses_its_plan_and_checks_each_calls_arrays(monkeypatch):
    """A product's job is planned once per layout of its operands (shapes, strides, dtypes);
    every call still checks its own output (shape, dtype, writeable, apart from the operands)
    and puts in its own arrays' addresses."""
    monkeypatch.setattr(products, "POOL_MIN_PRODUCT", 0)
    r = rng(2)
    x, w, h, u = (r.standard_normal(s).astype(np.float32)
                  for s in ((8, 5), (5, 6), (8, 7), (7, 6)))
    for _ in range(3):  # the same layout, new data each time
        x, h = x + 1, h - 1
        np.testing.assert_allclose(products.matmul_sum(x, w, h, u), x @ w + h @ u, rtol=1e-5,
                                   atol=1e-5)
        np.testing.assert_allclose(products.matmul(x, w), x @ w, rtol=1e-5, atol=1e-5)
    big = r.standard_normal((6, 9)).astype(np.float32)
    wt = big[:, 1:6].T  # the same shape, other strides: a plan of its own
    np.testing.assert_allclose(products.matmul(x, wt), x @ wt, rtol=1e-5, atol=1e-5)
    np.testing.assert_allclose(products.matmul_sum(x, wt, h, u), x @ wt + h @ u, rtol=1e-5,
                               atol=1e-5)
    both = np.zeros((8, 12), np.float32)
    out = both[:, :6]  # not contiguous: numpy's
    products.matmul_sum(x, w, h, u, out=out)
    np.testing.assert_allclose(out, x @ w + h @ u, rtol=1e-5, atol=1e-5)
    square = r.standard_normal((6, 6)).astype(np.float32)
    a = r.standard_normal((6, 6)).astype(np.float32)
    want = a @ square + a @ square
    products.matmul_sum(a, square, a, square, out=a)  # the output is an operand: numpy's
    np.testing.assert_allclose(a, want, rtol=1e-5, atol=1e-5)
    frozen = np.empty((8, 6), np.float32)
    frozen.flags.writeable = False
    with pytest.raises(ValueError):  # numpy's own error for a read-only output
        products.matmul_sum(x, w, h, u, out=frozen)
