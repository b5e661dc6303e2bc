"""Sums of products outside loops compute as one ``np.einsum`` (``script.runtime.contractions``)
with numpy's results; what is not such a sum keeps numpy's two calls."""

import numpy as np
import pytest

from script import Tensor, script


def scores(hs: Tensor, h: Tensor) -> Tensor:  # an attention step's scores: (N, T, H) x (N, H)
    return np.sum(hs * h.reshape(h.shape[0], 1, h.shape[1]), axis=2)


def weighted(hs: Tensor, a: Tensor) -> Tensor:  # the context: (N, T, H) x (N, T) over T
    return (hs * a[:, :, None]).sum(axis=1)


def rows_by_columns(x: Tensor, y: Tensor) -> Tensor:  # several axes, the second operand 2-D
    return np.sum(x * y, axis=(0, 2))


def product_kept(x: Tensor, y: Tensor) -> Tensor:  # the product has another reader
    p = x * y
    return np.sum(p, axis=1) + p[:, 0]


def keepdims(x: Tensor, y: Tensor) -> Tensor:
    return np.sum(x * y, axis=1, keepdims=True)


def everything(x: Tensor, y: Tensor) -> Tensor:  # numpy returns a number: left alone
    return np.sum(x * y)


CASES = [
    (scores, [(64, 30, 256), (64, 256)], True),
    (weighted, [(64, 30, 256), (64, 30)], True),
    (rows_by_columns, [(8, 40, 32), (40, 32)], True),
    (product_kept, [(64, 128), (64, 128)], False),
    (keepdims, [(64, 128), (64, 128)], False),
    (everything, [(64, 128), (64, 128)], False),
]


@pytest.mark.parametrize("dtype", ["float32", "float64"])
@pytest.mark.parametrize("fn,shapes,einsum", CASES, ids=[c[0].__name__ for c in CASES])
def test_sums_of_products(fn, shapes, einsum, dtype):
    rng = np.random.default_rng(3)
    args = [rng.standard_normal(s).astype(dtype) for s in shapes]
    compiled = script(fn)
    got, want = compiled(*args), fn(*args)
    tol = 1e-5 if dtype == "float32" else 1e-12
    np.testing.assert_allclose(got, want, rtol=tol, atol=tol)
    assert np.asarray(got).dtype == np.asarray(want).dtype
    assert type(got) is type(want)
    assert ("np.einsum" in compiled.code_for(*args)) == einsum


def test_small_products_stay_numpys():
    small = (np.ones((2, 3, 4), np.float32), np.ones((2, 4), np.float32))
    assert "np.einsum" not in script(scores).code_for(*small)


def test_a_sum_of_products_in_a_gradient_equals_numpys():
    from script import vjp
    rng = np.random.default_rng(4)
    hs, h = rng.standard_normal((16, 30, 64)), rng.standard_normal((16, 64))
    out, back = vjp(script(scores), hs, h)
    np.testing.assert_allclose(out, scores(hs, h), rtol=1e-12, atol=1e-12)
    ct = rng.standard_normal(out.shape)
    dhs, dh = back(ct)
    np.testing.assert_allclose(dhs, ct[:, :, None] * h[:, None, :], rtol=1e-12, atol=1e-12)
    np.testing.assert_allclose(dh, np.einsum("nt,ntd->nd", ct, hs), rtol=1e-10, atol=1e-12)
