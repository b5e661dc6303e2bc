"""Lists of number accumulators whose stored dtype the types do not give. ``accs = [0, 0]`` then
``accs[k] += ...`` in a loop: numpy keeps each ``0`` a Python int until a store replaces it, and
``0 + np.float32(s)`` is float32 (a Python number is weak). The compiled function made the
numbers 0-d int64 arrays wherever shape propagation could not settle their dtype, and numpy
promotes ``np.full((), 0) + np.float32(s)`` to float64:

- items accumulating arrays of one dtype but not 0-d (``accs[0] += x * k``);
- items accumulating different dtypes (a float32 sum in one, a float64 sum in the other);
- a list returned in a tuple (``return y, hs``), which made it look shared, so its items'
  dtype was not known to what it was stacked into (found by the program fuzzer, seed 1726
  ``[pipeline]``).

Such numbers now stay Python numbers at run time; the first two shapes of the list are also
settled statically, and a list returned in a tuple keeps its item types."""

from typing import List, Tuple

import numpy as np
import pytest

from script import Tensor, script
from tests.gradcheck import check_vjp


def array_accumulators(x: Tensor) -> Tuple[Tensor, Tensor]:
    accs = [0, 0]
    for k in range(3):
        accs[0] += x * float(k)
        accs[1] += np.tanh(x)
    return accs[0], accs[1]


def accumulators_of_two_dtypes(x: Tensor, y: Tensor) -> Tuple[Tensor, Tensor]:
    accs = [0, 0]
    for k in range(3):
        accs[0] += np.sum(x) * float(k)
        accs[1] += np.sum(y)
    return accs[0], accs[1]


def arrays_of_two_dtypes(x: Tensor, y: Tensor) -> Tuple[Tensor, Tensor, Tensor]:
    accs = [0, 0, 0]
    for k in range(3):
        accs[0] += x * float(k)
        accs[1] += y
    return accs[0], accs[1], np.reshape(accs[2], (1,))


def stacked_from_a_returned_list(x: Tensor) -> Tuple[Tensor, List[Tensor]]:
    hs: List[Tensor] = []
    for i in range(3):
        x = 0.5 * x + 0.25
        if i >= 1:
            hs.append(x)
    stacked = np.stack(hs, axis=1)
    accs = [0, 0]
    for k in range(2):
        accs[0] += np.sum(stacked * x.max())
        accs[1] += np.sum(x + 3.0)
    return x * (accs[0] + accs[1]), hs


def _same(fn, *args):
    want, got = fn(*args), script(fn)(*args)
    for w, g in zip(want, got):
        w, g = (w, g) if not isinstance(w, list) else (np.stack(w), np.stack(g))
        assert np.asarray(g).dtype == np.asarray(w).dtype
        np.testing.assert_allclose(g, w, rtol=1e-6)


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_array_accumulators_take_the_arrays_dtype(dtype):
    _same(array_accumulators, np.linspace(-1.0, 1.0, 3).astype(dtype))


def test_accumulators_of_two_dtypes_each_take_their_own():
    x, y = np.linspace(-1.0, 1.0, 3).astype(np.float32), np.linspace(0.0, 1.0, 2)
    _same(accumulators_of_two_dtypes, x, y)
    _same(arrays_of_two_dtypes, x, y)


def test_a_list_returned_in_a_tuple_keeps_its_item_types():
    _same(stacked_from_a_returned_list, np.linspace(-1.0, 1.0, 4).astype(np.float32))


def test_gradients_of_number_accumulators():
    rng = np.random.default_rng(0)
    x, y = rng.standard_normal(3), rng.standard_normal(2)
    check_vjp(script(array_accumulators), (x,))
    check_vjp(script(accumulators_of_two_dtypes), (x, y))
