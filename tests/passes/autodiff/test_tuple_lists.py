"""Gradients through lists of tuples made in the function: a forward that keeps each step's
values as a tuple in a list and a hand-written backward that reads them back at the step's
index (hipsternet's and CS231n's caches), differentiated as one list per field of the tuples
(``passes.autodiff.tuple_lists``). Every case against central finite differences (float64)."""

from __future__ import annotations

import numpy as np
import pytest

from script import Tensor, script
from tests.gradcheck import check_vjp


def cached_rnn(xs: Tensor, W: Tensor):
    h = np.zeros((xs.shape[1], W.shape[0]))
    caches = []
    for t in range(xs.shape[0]):
        hprev = h
        h = np.tanh(xs[t] @ W + hprev @ W)
        caches.append((hprev, h))
    dW = np.zeros_like(W)
    for t in reversed(range(xs.shape[0])):
        hprev, hh = caches[t]
        dW += hprev.T @ (1 - hh * hh)
    return h.sum(), dW


def three_fields(xs: Tensor, W: Tensor, steps: int):
    h = np.zeros((xs.shape[1], W.shape[1]))
    caches = []
    for t in range(steps):  # a trip count known when the code runs
        a = xs[t] @ W
        h = np.tanh(a + h)
        caches.append((a, t, h))
    total = caches[-1][2].sum() * 0.5
    for t in range(len(caches)):
        c = caches[t]
        total = total + (c[0] * c[2]).sum() * c[1]
    return total


def unpacked_whole(x: Tensor, W: Tensor):
    pairs = [(x, x @ W)]
    pairs.append((x * 2, np.tanh(x @ W)))
    (a, b), (c, d) = pairs
    return (a * b).sum() + (c * d).sum()


def nested_tuples(xs: Tensor, W: Tensor):
    h = xs[0]
    steps = []
    for t in range(xs.shape[0]):
        z = xs[t] @ W
        h = np.tanh(z) * h
        steps.append(((z, h), t))
    out = 0.0
    for t in range(xs.shape[0]):
        (z, hh), k = steps[t]
        out = out + (z * hh).sum() * (k + 1)
    return out


def kept_in_a_dict(x: Tensor, W: Tensor):
    caches = [(x, x @ W)]
    keep = {"caches": caches}  # not split: read at constant keys and indices
    a, b = keep["caches"][0]
    return (a * b).sum()


@pytest.mark.parametrize("T", [1, 3, 40])
def test_a_per_step_cache_read_back_at_the_step(T):
    rng = np.random.default_rng(T)
    args = (rng.standard_normal((T, 2, 4)) * 0.5, rng.standard_normal((4, 4)) * 0.5)
    f = script(cached_rnn)
    for got, want in zip(f(*args), cached_rnn(*args)):
        np.testing.assert_allclose(got, want, rtol=1e-12)
    check_vjp(f, args)


def test_fields_of_other_types_reads_at_negative_and_constant_indices():
    rng = np.random.default_rng(1)
    xs, W = rng.standard_normal((5, 2, 3)), rng.standard_normal((3, 3)) * 0.5
    f = script(three_fields)
    for steps in (1, 5):
        np.testing.assert_allclose(f(xs, W, steps), three_fields(xs, W, steps), rtol=1e-12)
        check_vjp(f, (xs, W, steps))


def test_a_list_of_tuples_unpacked_whole_and_of_nested_tuples():
    rng = np.random.default_rng(2)
    x, W = rng.standard_normal((2, 3)), rng.standard_normal((3, 3))
    check_vjp(script(unpacked_whole), (x, W))
    xs = rng.standard_normal((4, 2, 3))
    np.testing.assert_allclose(script(nested_tuples)(xs, W), nested_tuples(xs, W), rtol=1e-12)
    check_vjp(script(nested_tuples), (xs, W))


def test_a_list_of_tuples_kept_in_a_dict_read_at_constant_keys():
    rng = np.random.default_rng(3)
    check_vjp(script(kept_in_a_dict), (rng.standard_normal((2, 3)), rng.standard_normal((3, 3))))
