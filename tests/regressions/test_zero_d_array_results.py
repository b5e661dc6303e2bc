"""A function returning numpy's 0-d array (``np.zeros(())`` updated with ``+=``, an argument's
copy updated in place, ``np.asarray`` of a sum) gave back numpy's scalar: the generated code
computes the update as an operation (``0.0 + s``), which numpy gives as a scalar. A call now
gives back the array where numpy's result is one, and numpy's scalar where it is one."""

import numpy as np
import pytest

from script import Tensor, script


def zeros_0d(x: Tensor):
    return np.zeros(())


def updated_copy(x: Tensor):
    z = x.copy()
    z *= 3.0
    return z


def array_literal(x: Tensor):
    return np.array(2.0)


def sum_of(x: Tensor):
    return np.sum(x)


def accumulated_0d_array(x: Tensor):
    z = np.zeros(())
    z += np.sum(x)
    return z


def argument_copy(x: Tensor):
    return x.copy()


def scaled(x: Tensor):
    return x * 2.0


def argument(x: Tensor):
    return x


def asarray_of_sum(x: Tensor):
    return np.asarray(np.sum(x))


def pair(x: Tensor):
    z = np.zeros(())
    for i in range(3):
        z += x[i]
    return z, np.sum(x), x.copy()


def item_of_an_updated_0d_array(x: Tensor):
    z = np.zeros(())
    z += np.sum(x)
    return z[()]


def loss_from_a_number(p: Tensor):
    loss = 0
    h = p * 1.0
    for t in range(p.shape[0]):
        loss += -np.log(p[t])
    return loss, h


@pytest.mark.parametrize("fn", [item_of_an_updated_0d_array, zeros_0d, updated_copy,
                                array_literal, sum_of,
                                accumulated_0d_array, argument_copy, scaled, argument,
                                asarray_of_sum], ids=lambda f: f.__name__)
@pytest.mark.parametrize("shape", [(), (3,)])
def test_array_or_scalar_as_numpy_gives(fn, shape):
    x = np.linspace(1.0, 2.0, int(np.prod(shape))).reshape(shape)
    want, got = fn(x.copy()), script(fn)(x.copy())
    assert type(got) is type(want)
    np.testing.assert_array_equal(got, want)


def test_items_of_a_returned_tuple():
    x = np.arange(3.0)
    want, got = pair(x.copy()), script(pair)(x.copy())
    assert [type(g) for g in got] == [type(w) for w in want] == [np.ndarray, np.float64,
                                                                  np.ndarray]
    for w, g in zip(want, got):
        np.testing.assert_array_equal(g, w)


def test_a_loss_summed_from_a_number_is_numpys_scalar():
    p = np.linspace(0.2, 0.8, 4)
    want, got = loss_from_a_number(p), script(loss_from_a_number)(p)
    assert [type(g) for g in got] == [type(w) for w in want] == [np.float64, np.ndarray]
    np.testing.assert_allclose(got[0], want[0], rtol=1e-12)
