"""In a loop the native loop compiler takes (unrolling off), an elementwise op no fusion group
took whose operand is a folded constant array (``np.full((3,), 3.0) - 4.0`` added into a buffer
row, ``a[i] += ...``) got a kernel of its own with the array written into the code as if it were
a number: compilation crashed with an internal ``TypeError`` ("only 0-dimensional arrays can be
converted to Python scalars"). A constant array is now read like any other input. Found by the
program fuzzer (``in-place-write``)."""

import numpy as np

import passes
from script import Tensor, script


def buffer_of_constant_rows(x: Tensor) -> Tensor:
    a = np.zeros((2, 3), dtype=np.float64)
    for i in range(2):
        a[i] += np.full((3,), 3.0) - 4.0
    return x + a.mean(axis=0)


def test_a_constant_array_in_a_native_loop_is_read_as_an_array():
    x = np.linspace(-1.0, 1.0, 3)
    want = buffer_of_constant_rows(x)
    for disabled in ("unroll", None):
        f = script(buffer_of_constant_rows)
        if disabled:
            with passes.disable(disabled):
                got = f(x)
        else:
            got = f(x)
        np.testing.assert_allclose(got, want, rtol=1e-12)
