"""Gradients refused on code ported from public numpy LSTMs (Karpathy's batched LSTM, the
"Coursera-style" LSTM, a GRU with a ``cache`` dict):

- ``np.zeros(W.shape)`` / ``np.ones(W.shape)`` made an array whose rank the types did not know
  (``W.shape`` is a list of ints), so the backward of what used it was refused; the shape of a
  tensor whose shape is known now gives the new array that shape;
- a dict holding arrays of different ranks (``cache = {'x': x, 'b': b}``, a 2-D and a 1-D
  array) read at a constant key gave the join of all its values (no rank); each constant key
  now reads what was stored under it, also in the types the backward is built from.

A dict kept in a tuple is still refused, now with a message that says so."""

import numpy as np
import pytest

from script import Tensor, script
from script.errors import ScriptError
from tests.gradcheck import check_vjp


def zeros_of_a_shape(W: Tensor):
    z = np.zeros(W.shape)
    return np.sum((z + 1.0) * W) + np.sum(np.ones(W.shape) * W * W)


def _forward(x: Tensor, b: Tensor):
    cache = {}
    cache['x'] = x
    cache['b'] = b
    return np.tanh(x + b), cache


def through_a_returned_cache(x: Tensor, b: Tensor):
    y, cache = _forward(x, b)
    return np.sum(cache['x'] * 2.0) + np.sum(y * cache['b'])


def through_a_cache_literal(x: Tensor, b: Tensor):
    cache = {'x': x, 'b': b}
    return np.sum(cache['x'] * cache['b'])


def a_dict_kept_in_a_tuple(x: Tensor, b: Tensor):
    params = {'x': x, 'b': b}
    caches = []
    for t in range(2):
        caches.append((x * float(t), params))
    return np.sum(caches[1][1]['x'] * caches[0][0])


def test_np_zeros_of_a_shape_is_differentiated_through():
    W = np.random.default_rng(0).standard_normal((3, 4))
    np.testing.assert_allclose(script(zeros_of_a_shape)(W), zeros_of_a_shape(W), rtol=1e-12)
    check_vjp(script(zeros_of_a_shape), (W,))


@pytest.mark.parametrize("fn", [through_a_returned_cache, through_a_cache_literal])
def test_a_dict_of_arrays_of_different_ranks_is_differentiated_through(fn):
    rng = np.random.default_rng(1)
    x, b = rng.standard_normal((2, 3)), rng.standard_normal(3)
    np.testing.assert_allclose(script(fn)(x, b), fn(x, b), rtol=1e-12)
    check_vjp(script(fn), (x, b))


def test_a_dict_kept_in_a_tuple_is_refused_by_name():
    rng = np.random.default_rng(2)
    x, b = rng.standard_normal((2, 3)), rng.standard_normal(3)
    with pytest.raises(ScriptError, match="a tuple holding a dict of tensors"):
        check_vjp(script(a_dict_kept_in_a_tuple), (x, b))
