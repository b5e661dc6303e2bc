"""Accumulators that start as numbers (``loss = 0`` then ``loss += np.sum(...)`` in a loop): the
variable becomes a tensor as in numpy, with numpy's dtype (the first iteration adds a weak Python
number), and its gradient flows."""

import numpy as np
import pytest

from script import ScriptError, Tensor, script
from tests.gradcheck import check_vjp


def squared_loss(xs: Tensor, ys: Tensor):
    loss = 0
    for t in range(xs.shape[0]):
        loss += np.sum((xs[t] - ys[t]) ** 2)
    return loss


def nested_total(xs: Tensor, epochs: int):
    total = 0.0
    for _ in range(epochs):
        for t in range(xs.shape[0]):
            total = total + xs[t] * 0.5
    return total


def while_accumulator(xs: Tensor):
    acc = 1
    t = 0
    while t < xs.shape[0]:
        acc *= np.tanh(xs[t])
        t += 1
    return acc


def min_char_rnn_loss(ps: Tensor, targets: Tensor):
    # the loss of min-char-rnn.py (Andrej Karpathy, BSD licence): `loss = 0` then
    # `loss += -np.log(ps[t][targets[t], 0])`
    loss = 0
    for t in range(len(targets)):
        loss += -np.log(ps[t][targets[t], 0])
    return loss


CASES = [
    (squared_loss, lambda r, dt: (r.random((5, 3)).astype(dt), r.random((5, 3)).astype(dt))),
    (nested_total, lambda r, dt: (r.random((4, 3)).astype(dt), 2)),
    (while_accumulator, lambda r, dt: (r.random((3, 2)).astype(dt),)),
    (min_char_rnn_loss, lambda r, dt: (r.random((6, 4, 1)).astype(dt) + 0.1,
                                       r.integers(0, 4, 6))),
]


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("fn,make", CASES, ids=[c[0].__name__ for c in CASES])
def test_compiled_equals_numpy(fn, make, dtype):
    args = make(np.random.default_rng(0), dtype)
    got, want = script(fn)(*args), fn(*args)
    assert np.asarray(got).dtype == np.asarray(want).dtype
    assert np.shape(got) == np.shape(want)
    np.testing.assert_allclose(got, want, rtol=1e-6 if dtype == np.float64 else 1e-5)


@pytest.mark.parametrize("fn,make", CASES[:3], ids=[c[0].__name__ for c in CASES[:3]])
def test_gradients_equal_finite_differences(fn, make):
    check_vjp(script(fn), make(np.random.default_rng(1), np.float64))


def test_no_iteration_leaves_the_number_as_a_zero_tensor():
    x = np.ones((0, 3), np.float32)
    assert float(script(squared_loss)(x, x)) == 0.0


def test_annotated_number_stays_a_number():
    def annotated(xs: Tensor):
        loss: float = 0.0
        for t in range(xs.shape[0]):
            loss += np.sum(xs[t])
        return loss

    with pytest.raises(ScriptError, match="annotated as float"):
        script(annotated)(np.ones((2, 2)))


def optional_bias(x: Tensor, b: Tensor, use_bias: bool):
    total = 0
    if use_bias:
        total = total + b.sum()
    return x * 2.0 + total


@pytest.mark.parametrize("use_bias", [True, False])
def test_a_number_on_one_path_and_a_tensor_on_the_other(use_bias):
    x, b = np.ones(3), np.arange(3.0)
    np.testing.assert_allclose(script(optional_bias)(x, b, use_bias),
                               optional_bias(x, b, use_bias))


def conditional_sum(x: Tensor, n: int):
    s = x.sum() if n > 0 else 0.0
    return s * 2.0


@pytest.mark.parametrize("n", [0, 1])
def test_a_conditional_expression_of_a_number_and_a_tensor(n):
    x = np.arange(3.0)
    np.testing.assert_allclose(script(conditional_sum)(x, n), conditional_sum(x, n))
