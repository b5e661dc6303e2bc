"""The gradient of ``max`` over an array whose dtype is known only at run time (stacked from a
list of float64 and float32 arrays) cast the equality mask to dtype None, and compiling the
backward failed with an internal ShapeError. Found by the gradient fuzzer."""

import numpy as np

from script import Tensor, script
from tests.gradcheck import check_vjp


def max_of_mixed(x: Tensor) -> Tensor:
    items = [x * 2.0, (x * 3.0).astype(np.float32)]
    return np.stack(items, axis=0).max(axis=0)


def test_vjp_of_max_over_mixed_dtypes():
    x = np.array([0.5, -1.0, 2.0])
    # max is linear away from ties: a wide step keeps float32 rounding out of the differences
    check_vjp(script(max_of_mixed), (x,), eps=1e-2, rtol=1e-4, atol=1e-4)
