"""``x += y`` on an array argument changes the caller's array in numpy (an optimizer step written
as ``W -= lr * dW`` updates the caller's weights); the compiled function only rebound ``x``, so the
caller's array silently stayed as it was. It is now a ScriptError at the line, as writes into an
argument through an index are; an array the function made itself (a local, a loop carry started from
a number) still follows numpy."""

import numpy as np
import pytest

from script import ScriptError, Tensor, script


def sgd_step(w: Tensor, dw: Tensor) -> Tensor:
    w -= 0.1 * dw
    return w


def accumulate_into_argument(x: Tensor, y: Tensor) -> Tensor:
    for _ in range(3):
        x += y
    return x


def local_accumulator(x: Tensor, y: Tensor) -> Tensor:
    h = x * 1.0
    total = 0
    for _ in range(3):
        h += y
        total += np.sum(h)
    return h * total


@pytest.mark.parametrize("fn, op", [(sgd_step, "w -= ..."), (accumulate_into_argument, "x += ...")])
def test_an_augmented_update_of_an_argument_is_refused_at_its_line(fn, op):
    with pytest.raises(ScriptError, match=r"in-place update of the argument .*" + op.replace(
            "+", r"\+").replace(".", r"\.")):
        script(fn)(np.ones(3), np.ones(3))


def test_a_local_array_and_a_number_accumulator_follow_numpy():
    x, y = np.arange(3.0), np.ones(3)
    np.testing.assert_allclose(script(local_accumulator)(x, y), local_accumulator(x, y))


def sgd(params, grads):  # deep-learning-from-scratch's SGD.update
    for key in params.keys():
        params[key] -= 0.1 * grads[key]


def sgd_then_norm(params, grads):
    for key in params.keys():
        params[key] -= 0.1 * grads[key]
    return sum(np.sum(params[key] ** 2) for key in params.keys())


def test_sgd_updates_the_caller_s_arrays_themselves():
    """``params[key] -= ...`` of an array the caller's dict holds is numpy's in-place update
    (the model's layers hold the same arrays): the caller's arrays change."""
    params, grads = {"W": np.ones(2), "b": np.zeros(3)}, {"W": np.ones(2), "b": np.ones(3)}
    held = dict(params)
    script(sgd)(params, grads)
    for key in params:
        assert params[key] is held[key]
    np.testing.assert_allclose(params["W"], [0.9, 0.9])
    np.testing.assert_allclose(params["b"], [-0.1, -0.1, -0.1])


def test_an_update_of_a_dict_items_array_read_again_names_the_read_and_the_write():
    """The arrays are updated in one loop and read in another (at keys the compiler cannot tell
    apart from the written one): refused at the write, naming the read's line."""
    with pytest.raises(ScriptError, match=r"writing into an item of 'params' in place, and "
                                          r"reading another one \(line \d+\)") as info:
        script(sgd_then_norm)({"W": np.ones(2)}, {"W": np.ones(2)})
    assert "params[key] -= 0.1 * grads[key]" in str(info.value)
