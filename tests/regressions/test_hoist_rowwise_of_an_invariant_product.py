"""``hoist-rowwise`` took an elementwise op whose operands are all loop-invariant for a sequence
of rows: a matmul of it inside a loop (left there when LICM is off, or when LICM cannot move it)
was rewritten into ``select(M @ W, 0, i)``, so each step read one row of the product instead of
the product. With the verifier on this was a type error (``Float(4, 3)`` against ``Float(3)``);
without it, a wrong answer. Found by the program fuzzer."""

from typing import List

import numpy as np

import passes
from script import Tensor, ops, script


def invariant_product_in_a_comprehension(x: Tensor, w: Tensor, xs: List[Tensor]) -> List[Tensor]:
    m = x.max()
    return [(np.ones((4, 4)) * m) @ w for v in xs]


def invariant_softmax_in_a_loop(x: Tensor, w: Tensor) -> List[Tensor]:
    out: List[Tensor] = []
    for _ in range(4):
        out.append(ops.softmax((x * 2.0) @ w, -1))
    return out


def _check(fn, *args):
    want = fn(*args)
    with passes.disable("licm"):
        got = script(fn)(*args)
    assert len(got) == len(want)
    for g, e in zip(got, want, strict=True):
        assert g.shape == e.shape
        np.testing.assert_allclose(g, e, rtol=1e-12)


def test_an_invariant_product_in_a_comprehension_is_not_taken_for_rows():
    rng = np.random.default_rng(0)
    _check(invariant_product_in_a_comprehension, rng.random(2), rng.random((4, 3)),
           [rng.random(3) for _ in range(3)])


def test_a_softmax_of_an_invariant_product_in_a_loop_is_not_taken_for_rows():
    rng = np.random.default_rng(1)
    _check(invariant_softmax_in_a_loop, rng.random((4, 4)), rng.random((4, 3)))
