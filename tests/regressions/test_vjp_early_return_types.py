"""The backward graph of a function with an early `return` must be well-typed IR.

Its `prim::If` got a branch result typed plain `Tensor` for an output typed `Double(1, 4)` (a
cotangent can be typed less precisely than its forward value), and the verifier (run after every
pass in the test suite) rejected the backward graph.
"""

import numpy as np
import pytest

from script import Tensor, script, vjp


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
