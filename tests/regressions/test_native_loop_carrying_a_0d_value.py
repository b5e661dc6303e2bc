"""A loop the native loop compiler takes whose first carried value is 0-d (``acc = 0`` then
``acc += np.sum(x)``, with unrolling off so the loop stays a loop) crashed compilation with an
internal ``IndexError``: the row split read the batch size as the first carried array's
``shape[0]``. A 0-d carry has no rows to split. Found by the program fuzzer
(``number-accumulator``)."""

import numpy as np

import passes
from script import Tensor, script


def summed(x: Tensor) -> Tensor:
    acc = 0
    for i in range(3):
        acc += np.sum(x)
    return acc


def scaled(x: Tensor) -> Tensor:
    acc = 0.0
    for i in range(3):
        acc = acc + np.sum(x * x)
    return x * acc


def test_a_loop_carrying_a_0d_accumulator_compiles():
    x = np.linspace(-1.0, 1.0, 4).astype(np.float32)
    for fn in (summed, scaled):
        for disabled in ("unroll", None):
            f = script(fn)
            if disabled:
                with passes.disable(disabled):
                    got = f(x)
            else:
                got = f(x)
            want = fn(x)
            assert np.asarray(got).dtype == np.asarray(want).dtype
            np.testing.assert_allclose(got, want, rtol=1e-6)
