"""Gradients through a value of Optional type (``y: Optional[Tensor] = None``, set in a branch,
read after ``if y is not None``).

Optional values were not differentiable, so the contribution through ``y`` was silently dropped
(a wrong gradient, no error).
"""

from typing import Optional

import numpy as np
import pytest

from script import Tensor, script, vjp


def maybe_scaled(x: Tensor, flag: bool) -> Tensor:
    y: Optional[Tensor] = None
    if flag:
        y = x * 2.0
    out = x
    if y is not None:
        out = out * y
    return out


def maybe_scaled_known_shape(x: Tensor, flag: bool, w: Tensor) -> Tensor:
    y: Optional[Tensor] = None
    if flag:
        y = np.tanh(x)
    out = x * w
    if y is not None:
        out = out * y
    return out


@pytest.mark.parametrize("flag", [True, False])
def test_gradient_through_an_optional_tensor(flag):
    x = np.linspace(-1.0, 1.0, 6).reshape(2, 3)
    out, backward = vjp(script(maybe_scaled), x, flag)
    gx, gflag = backward(np.ones_like(out))
    np.testing.assert_allclose(gx, 4 * x if flag else np.ones_like(x))
    assert gflag is None


@pytest.mark.parametrize("flag", [True, False])
def test_gradient_through_an_optional_tensor_with_a_weight(flag):
    x = np.linspace(-1.0, 1.0, 6).reshape(2, 3)
    w = np.full((2, 3), 3.0)
    out, backward = vjp(script(maybe_scaled_known_shape), x, flag, w)
    gx, _, gw = backward(np.ones_like(out))
    t = np.tanh(x)
    np.testing.assert_allclose(gx, w * (t + x * (1 - t ** 2)) if flag else w)
    np.testing.assert_allclose(gw, x * t if flag else x)
