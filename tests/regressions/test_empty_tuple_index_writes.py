"""``h[()] = v`` and ``h[()] += v``: on an array with axes ``h[()]`` is the whole array, and the
write broadcasts ``v`` as ``h[...] = v`` does; only a 0-d ``h`` takes a single element
(numpy's ValueError otherwise). The compiled code required one element at every rank, so
``h[()] += 5.0`` of a vector raised "setting an array element with a sequence" where numpy
adds 5 to each element."""

import numpy as np
import pytest

from script import Tensor, script


def add_whole(x: Tensor):
    h = x.copy()
    h[()] += 5.0
    return h


def set_whole(x: Tensor, v: Tensor):
    h = x.copy()
    h[()] = v
    return h


def update_whole(x: Tensor, v: Tensor):
    h = x.copy()
    h[()] *= v
    return h


def fill_whole(x: Tensor, v: Tensor):
    h = x.copy()
    h.fill(v)
    return h


def _outcome(fn, *args):
    try:
        return fn(*[a.copy() for a in args])
    except ValueError as exc:
        return exc


@pytest.mark.parametrize("shape", [(), (3,), (2, 3)])
@pytest.mark.parametrize("value_shape", [(), (1,), (3,), (1, 3), (2, 3)])
@pytest.mark.parametrize("fn", [set_whole, update_whole, fill_whole], ids=lambda f: f.__name__)
def test_whole_writes_follow_numpy(fn, shape, value_shape):
    x = np.linspace(-1.0, 1.0, int(np.prod(shape))).reshape(shape)
    v = np.arange(1.0, 1.0 + np.prod(value_shape)).reshape(value_shape)
    want, got = _outcome(fn, x, v), _outcome(script(fn), x, v)
    if isinstance(want, Exception):
        assert isinstance(got, ValueError), got
    else:
        assert not isinstance(got, Exception), got
        np.testing.assert_array_equal(got, want)


@pytest.mark.parametrize("shape", [(), (3,), (2, 3)])
def test_augmented_whole_write(shape):
    x = np.linspace(-1.0, 1.0, int(np.prod(shape))).reshape(shape)
    np.testing.assert_array_equal(script(add_whole)(x.copy()), add_whole(x.copy()))
