"""A number that a loop turns into a tensor (``loss = 0.0`` before ``loss += x[n]``) takes the
dtype numpy's first update gives it (float32 for float32 terms: the Python number is weak). When
the update ran under an ``if`` (or after a ``continue``), the branch that hands the number on
unchanged hid that dtype, and the accumulator became float64: numpy gave float32. Now the dtype
comes from the branches that make a tensor, or else from what the step first makes of the
number (``loss * 0.5`` in a second ``if`` reads the first one's result). A branch that sets the
number again (``else: loss = 0.0``) keeps its own dtype: where the loop ends there, numpy goes on
with the Python number (``loss + 16777217.0`` is exact; ``total + 3000000000`` of int32 terms
does not overflow)."""

import numpy as np
import pytest

import script
from script import Tensor


def masked_sum(x: Tensor):
    loss = 0.0
    for n in range(x.shape[0]):
        if x[n] > 0.5:
            loss += x[n]
    return loss


def skipped_labels(p: Tensor, labels: Tensor):
    loss = 0
    count = 0
    for n in range(p.shape[0]):
        if labels[n] == -1:
            continue
        loss += -np.log(p[n, labels[n]])
        count += 1
    return loss / count


def nested(x: Tensor):
    total = 0.0
    for n in range(x.shape[0]):
        if x[n, 0] > 0:
            if x[n, 1] > 0:
                total += x[n] * 2.0
            else:
                total += x[n]
    return total


def halved(x: Tensor):
    loss = 0.0
    for n in range(x.shape[0]):
        if x[n] > 0.5:
            loss += x[n]
        if loss > 1.0:
            loss = loss * 0.5
    return loss


def _check(got, want):
    assert np.asarray(got).dtype == np.asarray(want).dtype
    np.testing.assert_allclose(got, want, rtol=1e-6)


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_a_masked_sum(dtype):
    x = np.array([0.25, 0.75, 1.5, 0.1], dtype)
    _check(script.script(masked_sum)(x), masked_sum(x))


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_a_loss_that_skips_ignored_labels(dtype):
    p = np.random.default_rng(0).uniform(0.1, 1.0, (5, 3)).astype(dtype)
    labels = np.array([0, -1, 2, 1, -1])
    _check(script.script(skipped_labels)(p, labels), skipped_labels(p, labels))


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_updates_under_nested_ifs(dtype):
    x = np.random.default_rng(1).standard_normal((6, 3)).astype(dtype)
    x[0] = [1.0, 1.0, 1.0]
    _check(script.script(nested)(x), nested(x))


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_a_number_scaled_in_a_second_if(dtype):
    x = np.array([0.25, 0.75, 1.5, 0.1, -0.8, 3.0, 0.9], dtype)
    _check(script.script(halved)(x), halved(x))


def ends_on_a_reset(x: Tensor):
    loss = 0.0
    for n in range(x.shape[0]):
        if x[n] > 0.5:
            loss += x[n]
        else:
            loss = 0.0
    return loss + 16777217.0


def int_total_ends_on_a_reset(x: Tensor):
    total = 0
    for n in range(x.shape[0]):
        if x[n] > 0:
            total += x[n]
        else:
            total = 0
    return total + 3000000000


def test_a_loop_that_ends_on_a_reset_goes_on_with_the_number():
    x = np.array([0.75, 1.5, 0.1], np.float32)
    assert float(script.script(ends_on_a_reset)(x)) == ends_on_a_reset(x) == 16777217.0
    i = np.array([3, 4, -1], np.int32)
    assert int(script.script(int_total_ends_on_a_reset)(i)) == int_total_ends_on_a_reset(i)


def test_the_gradient_of_a_masked_sum():
    x = np.array([0.25, 0.75, 1.5, 0.1])
    value, grad = script.value_and_grad(masked_sum)(x)
    np.testing.assert_allclose(value, 2.25)
    np.testing.assert_array_equal(grad, [0.0, 1.0, 1.0, 0.0])
