"""Gradients of a tuple argument unpacked inside an If branch (or a loop body's branch).

The backward of an If returned contributions only for outer *tensors*; an outer tuple (an LSTM's
``(h0, c0)`` state unpacked in the ``else`` of ``if state is None``) got zero gradients.
"""

from typing import Optional, Tuple

import numpy as np

from script import Tensor, script, vjp


def unpack_in_branch(x: Tensor, state: Tuple[Tensor, Tensor], flag: bool) -> Tensor:
    if flag:
        h, c = state
    else:
        h, c = x, x
    return x * h + c


def unpack_in_loop_branch(x: Tensor, state: Tuple[Tensor, Tensor], flag: bool) -> Tensor:
    acc = x
    for _ in range(3):
        if flag:
            h, c = state
        else:
            h, c = x, x
        acc = acc * h + c
    return acc


def optional_state(x: Tensor, state: Optional[Tuple[Tensor, Tensor]] = None) -> Tensor:
    if state is None:
        h, c = x, x
    else:
        h, c = state
    return x * h + c


X = np.linspace(-1.0, 1.0, 6).reshape(2, 3)
H, C = np.full((2, 3), 2.0), np.full((2, 3), 3.0)


def test_gradient_of_a_tuple_unpacked_in_a_branch():
    out, backward = vjp(script(unpack_in_branch), X, (H, C), True)
    gx, (gh, gc), _ = backward(np.ones_like(out))
    np.testing.assert_allclose(gx, H)
    np.testing.assert_allclose(gh, X)
    np.testing.assert_allclose(gc, np.ones_like(X))


def test_gradient_of_a_tuple_unpacked_in_a_branch_not_taken():
    out, backward = vjp(script(unpack_in_branch), X, (H, C), False)
    gx, (gh, gc), _ = backward(np.ones_like(out))
    np.testing.assert_allclose(gx, 2 * X + 1)
    np.testing.assert_allclose(gh, np.zeros_like(X))
    np.testing.assert_allclose(gc, np.zeros_like(X))


def test_gradient_of_a_tuple_unpacked_in_a_loop_body_branch():
    out, backward = vjp(script(unpack_in_loop_branch), X, (H, C), True)
    gx, (gh, gc), _ = backward(np.ones_like(out))
    # acc3 = ((x h + c) h + c) h + c
    np.testing.assert_allclose(gx, H ** 3)
    np.testing.assert_allclose(gh, 3 * X * H ** 2 + 2 * C * H + C)
    np.testing.assert_allclose(gc, H ** 2 + H + 1)


def test_gradient_of_an_optional_tuple_argument():
    out, backward = vjp(script(optional_state), X, (H, C))
    gx, (gh, gc) = backward(np.ones_like(out))
    np.testing.assert_allclose(gx, H)
    np.testing.assert_allclose(gh, X)
    np.testing.assert_allclose(gc, np.ones_like(X))
