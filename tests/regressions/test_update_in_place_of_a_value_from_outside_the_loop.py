"""``[(w * 0.5) * float(k + 1) for k in range(3)]`` with unrolling off returned three times the
same array, holding ``w * 0.5 * 1 * 2 * 3``: the loop-invariant ``w * 0.5`` is hoisted out of
the loop, and the product in the loop was then done in place (``v *= k + 1``) because nothing
after it in the step read the old value; but the next step reads it again. A write in a loop
into an array from outside that loop must not be done in place. Found by the program fuzzer
(``append-to-comprehension``)."""

from typing import List

import numpy as np

import passes
from script import Tensor, script


def scaled_copies(w: Tensor) -> List[Tensor]:
    return [(w * 0.5) * float(k + 1) for k in range(3)]


def clipped_copies(w: Tensor, n: int) -> List[Tensor]:
    out = []
    base = w * 2.0
    for k in range(n):
        base[:] = np.clip(base, -1.0, 1.0)
        out.append(base + float(k))
    return out


def rows_written(h: Tensor, n: int) -> List[Tensor]:
    base = h * 1.0
    out = []
    for k in range(n):
        y = base.copy()
        y[0] = float(k)
        out.append(y * 1.0)
    return out


def test_a_product_in_a_loop_does_not_store_into_its_hoisted_operand():
    w = np.array([-0.4, 0.3, 1.1], np.float32)
    for disabled in ("unroll", None):
        f = script(scaled_copies)
        if disabled:
            with passes.disable(disabled):
                got = f(w)
        else:
            got = f(w)
        want = scaled_copies(w)
        assert len(got) == len(want)
        for g, x in zip(got, want):
            np.testing.assert_allclose(g, x, rtol=1e-6)


def test_writes_in_a_loop_into_arrays_from_outside_it_equal_numpy():
    w = np.linspace(-2.0, 2.0, 6).reshape(2, 3)
    for fn in (clipped_copies, rows_written):
        with passes.disable("unroll"):
            got = script(fn)(w, 3)
        want = fn(w, 3)
        for g, x in zip(got, want):
            np.testing.assert_allclose(g, x)
