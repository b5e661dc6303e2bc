"""The backward graph of a function with an early `return` must be well-typed IR.

Its `prim::If` got a branch result typed plain `Tensor` for an output typed `Double(1, 4)` (a
cotangent can be typed less precisely than its forward value), and the verifier (run after every
pass in the test suite) rejected the backward graph.
"""

import numpy as np
import pytest

from script import Tensor, script, vjp
from tests.gradcheck import check_vjp


def early_return(x: Tensor, s: float) -> Tensor:
    if s > 3.0:
        return x * x
    return x


@pytest.mark.parametrize("s", [1.0, 5.0])
def test_vjp_of_an_early_return(s):
    x = np.linspace(-1.0, 1.0, 4).reshape(1, 4)
    out, backward = vjp(script(early_return), x, s)
    (gx, _) = backward(np.ones_like(out))
    np.testing.assert_allclose(gx, 2 * x if s > 3.0 else np.ones_like(x))


def early_return_in_loop(x: Tensor, s: float) -> Tensor:
    for i in range(1, 3):
        if float(i) > s:
            return np.sin(x)
        x = -x
    return x


@pytest.mark.parametrize("s", [0.0, 1.5, 5.0])
def test_vjp_of_an_early_return_inside_a_loop(s):
    """The reverse loop's carried cotangents are widened to plain `Tensor` after its body was
    built; the body's nodes (and its If outputs) kept the narrower `Double(3)` they were typed
    with, so the backward failed verification."""
    x = np.array([0.1, 0.2, 0.3])
    check_vjp(script(early_return_in_loop), (x, s))
