"""``loss = toy_loss(pred, label)`` then ``loss += toy_loss(...)`` (a toy loss summed over an LSTM's steps) was
refused as "an in-place update of an array a called function returns (it may be one of its
arguments)" even though the called function made that array; so was a write into a helper's
fresh result. What a called function makes is the caller's to update; what it passes through
from its arguments is still followed to them (and refused for an argument)."""

import numpy as np
import pytest

from script import ScriptError, Tensor, script


def toy_loss(pred: Tensor, label: float) -> Tensor:
    return (pred[0] - label) ** 2


def fresh(x: Tensor) -> Tensor:
    return np.zeros_like(x) + x


def passed_through(x: Tensor) -> Tensor:
    return x


def summed_loss(preds: Tensor, labels: Tensor) -> Tensor:
    loss = toy_loss(preds[0], float(labels[0]))
    for k in range(1, preds.shape[0]):
        loss += toy_loss(preds[k], float(labels[k]))
    return loss


def written_fresh(x: Tensor) -> Tensor:
    y = fresh(x)
    y[0] = 5.0
    y += 1.0
    return y


def written_argument(x: Tensor) -> Tensor:
    y = passed_through(x)
    y[0] = 5.0
    return y


def test_updates_of_what_a_helper_made():
    rng = np.random.default_rng(0)
    preds, labels = rng.standard_normal((4, 3)), rng.standard_normal(4)
    np.testing.assert_allclose(script(summed_loss)(preds, labels), summed_loss(preds, labels),
                               rtol=1e-12)
    x = rng.standard_normal(3)
    np.testing.assert_allclose(script(written_fresh)(x), written_fresh(x.copy()), rtol=1e-12)


def test_a_write_into_an_argument_through_a_helper_is_still_refused():
    with pytest.raises(ScriptError, match="in-place write to the argument"):
        script(written_argument)(np.ones(3))
