"""``zip`` and ``enumerate`` as values (passed to a function, assigned, iterated later) are the
lists of their tuples: the same items as Python's iterators, values and gradients included."""

from typing import List, Optional

import numpy as np
import pytest

from script import Tensor, script
from tests.gradcheck import check_vjp
from tests.helpers import assert_same


def weighted(pairs):
    s = 0.0
    for a, b in pairs:
        s = s + a * b
    return s


def dot_of_lists(a: List[float], b: List[float]):
    return weighted(zip(a, b))


def chained(h: Tensor, ws: List[Tensor]):
    steps = zip(ws, ws[1:])
    numbered = enumerate(ws)
    for w, v in steps:
        h = np.tanh(h * w + v)
    for k, w in numbered:
        h = h + k * w
    return h, len(list(zip(ws, ws)))


def test_zip_passed_to_a_helper():
    assert script(dot_of_lists)([1.0, 2.0], [3.0, 4.5]) == dot_of_lists([1.0, 2.0], [3.0, 4.5])


@pytest.mark.parametrize("dtype", ["float32", "float64"])
def test_zip_and_enumerate_assigned_then_iterated(dtype):
    rng = np.random.default_rng(0)
    h = rng.standard_normal(3).astype(dtype)
    ws = [rng.standard_normal(3).astype(dtype) for _ in range(3)]
    assert_same(script(chained)(h, ws), chained(h, ws))


def zipped_steps(h: Tensor, ws: List[Tensor]):
    steps = zip(ws, ws)
    for w, v in steps:
        h = np.tanh(h * w + v)
    return h


def numbered_steps(h: Tensor, ws: List[Tensor]):
    for k, w in enumerate(ws):
        h = h + k * w
    numbered = enumerate(ws)
    for k, w in numbered:
        h = h + k * w
    return h


def zipped_in_the_loop(h: Tensor, ws: List[Tensor]):
    for w, v in zip(ws, ws):
        h = np.tanh(h * w + v)
    return h


@pytest.mark.parametrize("fn", [zipped_steps, numbered_steps, zipped_in_the_loop])
def test_gradients_through_zip_values(fn):
    """A zip or enumerate kept as a list of tuples is differentiated as one list per field
    (``passes.autodiff.tuple_lists``), as a zip iterated in the loop itself is."""
    rng = np.random.default_rng(1)
    args = (rng.standard_normal(3), [rng.standard_normal(3) for _ in range(3)])
    check_vjp(script(fn), args)


def control_inputs(x: Tensor, Bs: Optional[List[float]] = None,
                   us: Optional[List[float]] = None):
    """filterpy's ``batch_filter``: defaults made only where ``us`` is None."""
    if us is None:
        us = [0.0] * x.shape[0]
        Bs = [0.0] * x.shape[0]
    out = x * 1.0
    for i, (B, u) in enumerate(zip(Bs, us)):
        out[i] = out[i] + B * u
    return out


def test_an_optional_list_is_iterated_after_pythons_none_check():
    x = np.arange(3.0)
    f = script(control_inputs)
    assert_same(f(x), control_inputs(x))
    assert_same(f(x, [1.0, 2.0, 3.0], [0.5, 0.5, 2.0]),
                control_inputs(x, [1.0, 2.0, 3.0], [0.5, 0.5, 2.0]))
    with pytest.raises(TypeError, match="'NoneType' object is not iterable"):
        control_inputs(x, None, [1.0, 1.0, 1.0])
    with pytest.raises(TypeError, match="'NoneType' object is not iterable"):
        f(x, None, [1.0, 1.0, 1.0])
