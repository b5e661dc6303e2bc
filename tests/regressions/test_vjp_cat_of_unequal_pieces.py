"""The gradient of `np.concatenate` of pieces of different sizes must be well-typed IR.

The backward splits the cotangent back into the pieces; the list of pieces was typed like the
first piece (`Double(1, 1)` for a `Double(2, 1)` piece), so a `prim::ListIndex` of it contradicted
its inferred type and the verifier rejected the backward graph.
"""

import numpy as np

from script import Tensor, script, vjp


def cat_unequal(a: Tensor, b: Tensor) -> Tensor:
    return np.tanh(np.concatenate([a, b], axis=0))


def test_vjp_of_cat_of_unequal_pieces():
    a, b = np.full((1, 1), 0.5), np.linspace(-1.0, 1.0, 2).reshape(2, 1)
    out, backward = vjp(script(cat_unequal), a, b)
    ga, gb = backward(np.ones_like(out))
    np.testing.assert_allclose(ga, 1 - np.tanh(a) ** 2)
    np.testing.assert_allclose(gb, 1 - np.tanh(b) ** 2)
