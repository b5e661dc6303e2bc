"""``y += v`` with a float32 array ``y`` and a float64 ``v`` gave a float64 ``y``: numpy adds
into ``y`` itself, which stays float32 (an LSTM that accumulates float64 products into
float32 parameter diffs, ``diffs[i] += np.outer(...)``). The result of an augmented assignment to
an array keeps the array's dtype; a 0-d value may be a numpy scalar, which ``+=`` replaces, and
promotes as before."""

from typing import List

import numpy as np

from script import Tensor, script
from tests.gradcheck import check_vjp


def name_update(x: Tensor, v: Tensor) -> Tensor:
    y = x * 1
    y += v
    y *= v
    return y


def item_update(x: Tensor, v: Tensor) -> List[Tensor]:
    items = [x * 1, x * 2]
    items[1] += v
    return items


def scalar_update(x: Tensor, v: Tensor) -> Tensor:
    total = np.sum(x)
    total += np.sum(v)
    return total


def test_in_place_results_keep_the_dtype():
    x, v = np.ones(3, np.float32), np.full(3, 0.1)
    for fn in (name_update, item_update, scalar_update):
        got, want = script(fn)(x, v), fn(x, v)
        for g, w in zip(got if isinstance(got, list) else [got],
                        want if isinstance(want, list) else [want]):
            assert np.asarray(g).dtype == np.asarray(w).dtype, fn.__name__
            np.testing.assert_allclose(g, w, rtol=1e-6)


def test_gradient_through_the_cast():
    rng = np.random.default_rng(0)
    check_vjp(script(name_update), (rng.standard_normal(3), rng.standard_normal(3)))
