"""A fusion group that reads a reduction of another member's input was placed before that
reduction: ``a = x + x; b = -x; c = a * b; d = b * tanh(mean(a))`` fused ``{a, b, c}`` with
``{tanh, d}`` (vertical fusion checks for a path from the producer group to the consumer group
only, and here the consumer's member ``a`` reaches the producer's ``tanh`` through ``mean``).
The verifier reports ``mean`` "used before it is defined"; without it the generated code raised
UnboundLocalError. Found by the long program fuzzing run (the second program below, as
generated).
"""

from __future__ import annotations

import numpy as np
import pytest

from script import Tensor, ops, script


def reduction_between_fused_ops(x: Tensor) -> Tensor:
    a = x + x
    b = -x
    c = a * b
    d = b * np.tanh(a.mean())
    return c.mean() + d.max()


def generated(x0: Tensor, f: float, b: bool, i: int):
    x0 = x0 + ops.chunk(x0, 1, 0)[0]
    p1 = ((x0 + x0), (-x0))
    u2, u3 = p1
    t4 = np.where(p1[0] > u3, p1[0], u3)
    u3 = u3 * np.tanh(np.log(1.0 + (np.ones((2, 1), dtype=np.float64) * u2.mean()).mean(axis=0)
                             * (np.ones((2, 1), dtype=np.float64) * u2.mean()).mean(axis=0)))
    g6, g7 = ops.chunk((np.where((np.ones((1, 6, 2), dtype=np.float64) * u3.max())
                                 > (np.ones((1, 6, 2), dtype=np.float64) * x0.max()),
                                 (np.ones((1, 6, 2), dtype=np.float64) * u3.max()),
                                 np.zeros((1, 6, 2), dtype=np.float64)) if b
                        else (np.ones((1, 6, 2, 1), dtype=np.float64) * t4.mean()).sum(axis=3)),
                       2, 1)
    return max(4, i), ((np.ones((4,), dtype=np.float64) * g7.mean()) if 0.0 < f
                       else (np.ones((4, 2), dtype=np.float64) * g6.sum())[:, -1])


@pytest.mark.parametrize("shape", [(1,), (3,), (2, 2)])
def test_reduction_between_fused_ops(shape):
    x = np.random.default_rng(0).standard_normal(shape)
    np.testing.assert_allclose(script(reduction_between_fused_ops)(x),
                               reduction_between_fused_ops(x), rtol=1e-12)


def test_generated_program():
    args = (np.array([0.7]), 1.0, True, 2)
    got, want = script(generated)(*args), generated(*args)
    assert got[0] == want[0]
    np.testing.assert_allclose(got[1], want[1], rtol=1e-12)
