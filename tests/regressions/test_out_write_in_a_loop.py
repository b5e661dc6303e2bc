"""``np.tanh(z, out=z)`` in a loop, into an array made before the loop, writes into that array
at every step. The loop carried only the names its body assigns or indexes into (``z = ...``,
``z[t] = ...``, ``z += ...``, ``z.fill(...)``), not an ``out=`` target, so the compiled loop
dropped the writes and returned the array as it was before the loop: a wrong value, silently."""

import numpy as np
import pytest

from script import Tensor, script


def tanh_in_place(h: Tensor, n: int) -> Tensor:
    z = h.copy()
    for t in range(n):
        np.tanh(z, out=z)
    return z


def add_into(h: Tensor, n: int) -> Tensor:
    z = np.zeros((3, 4), dtype=h.dtype)
    for t in range(n):
        np.add(z, h, out=z)
    return z


def rows_out(h: Tensor, n: int) -> Tensor:
    z = np.zeros((n, 4), dtype=h.dtype)
    for t in range(n):
        np.tanh(h * t, out=z[t])
    return z


def product_into(W: Tensor, x: Tensor, n: int) -> Tensor:
    hs = np.zeros((n, W.shape[0]), dtype=W.dtype)
    for t in range(n):
        np.dot(W, x * (t + 1), out=hs[t])
    return hs


def while_loop(h: Tensor, n: int) -> Tensor:
    z = h.copy()
    t = 0
    while t < n:
        np.multiply(z, 0.5, out=z)
        t += 1
    return z


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("fn", [tanh_in_place, add_into, rows_out, while_loop])
def test_out_writes_in_a_loop_reach_the_array(fn, dtype):
    h = np.linspace(-1.0, 2.0, 4).astype(dtype)
    for n in (0, 1, 3):
        want = fn(h, n)
        got = script(fn)(h, n)
        assert got.dtype == want.dtype
        np.testing.assert_allclose(got, want, rtol=1e-6)


def test_a_product_written_into_each_row():
    rng = np.random.default_rng(0)
    W, x = rng.standard_normal((3, 4)), rng.standard_normal(4)
    np.testing.assert_allclose(script(product_into)(W, x, 5), product_into(W, x, 5), rtol=1e-12)
